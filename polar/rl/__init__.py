"""Polar's RL engine: PPO and SAC in plain torch, Ray rollout workers, exact-resume checkpoints.

Entry points: `polar train` (polar/rl/cli.py), `polar.rl.trainer.Trainer`, and the policy
export API in `polar.rl.policy` (`Policy`, `load_policy`) that the skill library uses.
Nothing heavy is imported here, so `import polar.rl` stays cheap.
"""
