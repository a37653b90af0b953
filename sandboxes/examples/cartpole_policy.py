# A policy for gym:CartPole-v1 as a planner would write it: plain data in, an action out.
def act(obs):
    x, x_dot, theta, theta_dot = obs
    return 1 if theta + 0.5 * theta_dot > 0 else 0
