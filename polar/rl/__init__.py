"""Polar's RL engine: PPO and SAC in plain torch, Ray rollout workers, exact-resume checkpoints.

Entry points: `polar train` (polar/commands/train.py), `polar.rl.trainer.Trainer`, and the policy
export API in `polar.rl.policy` (`Policy`, `make_policy`, `load_policy`) that the skill
library uses; per-algorithm policies are `polar.rl.ppo.ppo_policy.PPOPolicy` and
`polar.rl.sac.sac_policy.SACPolicy`. Nothing heavy is imported here, so `import polar.rl`
stays cheap.
"""
