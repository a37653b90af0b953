import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.config import NetworkConfig
from polar.rl.policy import make_policy
from polar.rl.ppo.ppo_numpy import MAX_BATCH, NumpyStep


@pytest.mark.parametrize("env_id,activation", [("CartPole-v1", "tanh"), ("CartPole-v1", "relu"),
                                               ("Pendulum-v1", "tanh")])
def test_the_numpy_step_is_the_policys_step(env_id, activation):
    env = gym.make(env_id)
    torch.manual_seed(0)
    policy = make_policy("ppo", env.observation_space, env.action_space,
                         NetworkConfig(hidden=[32, 32], activation=activation, log_std_init=-0.5))
    with torch.no_grad():  # a confident actor: the sampled actions are not all alike
        policy.actor_head.weight.mul_(100)
    obs = policy.prepare({"obs": np.stack([env.observation_space.sample() for _ in range(16)])})
    step = NumpyStep(policy)
    assert NumpyStep.supported(policy)
    for seed in range(5):
        with torch.inference_mode():
            torch.manual_seed(seed)
            a, logp, value = step(obs)
            torch.manual_seed(seed)
            ta, tlogp, tvalue = policy.step(obs)
        if policy.discrete:
            assert torch.equal(a, ta)  # the same noise: the same actions
        torch.testing.assert_close(a, ta, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(logp, tlogp, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(value, tvalue, rtol=1e-5, atol=1e-6)
    assert len(set(a.reshape(-1).tolist())) > 1


def test_the_numpy_step_reads_weights_updated_in_place_and_leaves_big_batches_to_torch():
    env = gym.make("CartPole-v1")
    policy = make_policy("ppo", env.observation_space, env.action_space, NetworkConfig(hidden=[8]))
    step = NumpyStep(policy)
    obs = policy.prepare({"obs": np.ones((4, 4), np.float32)})
    with torch.no_grad():
        policy.critic_head.bias.add_(3.0)  # what Adam's in-place step does
    with torch.inference_mode():
        torch.testing.assert_close(step(obs)[2], policy.step(obs)[2])
    policy.step = lambda obs: "torch's step"
    big = policy.prepare({"obs": np.ones((MAX_BATCH + 1, 4), np.float32)})
    assert step(big) == "torch's step"


@pytest.mark.parametrize("net", [dict(shared=True), dict(lstm=16)])
def test_other_policies_step_in_torch(net):
    env = gym.make("CartPole-v1")
    assert not NumpyStep.supported(make_policy("ppo", env.observation_space, env.action_space,
                                               NetworkConfig(hidden=[8], **net)))
