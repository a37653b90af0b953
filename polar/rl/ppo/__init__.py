"""PPO (`algo: ppo`): the clipped-surrogate update (`ppo.py`) with its fast paths
(`ppo_grad.py`, `ppo_numpy.py`), recurrent PPO (`ppo_recurrent.py`), the actor-critic policy
(`ppo_policy.py`), rollouts with GAE (`collect.py`, `gae.py`) and the trainer's seam
(`algorithm.py`). Importing this package imports only its config."""

from polar.rl.common.algorithm import AlgorithmSpec
from polar.rl.ppo.config import PPOConfig, check_run

SPEC = AlgorithmSpec(
    name="ppo", config=PPOConfig, algorithm="polar.rl.ppo.algorithm:PPOAlgorithm",
    policy="polar.rl.ppo.ppo_policy:PPOPolicy", recurrent=True, check=check_run,
)
