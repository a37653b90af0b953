"""DQN (`algo: dqn`): double DQN with a target network, an epsilon-greedy schedule and the
shared replay buffer (`polar/rl/common/buffers.py`). The update (`dqn.py`), the Q-network
policy (`dqn_policy.py`), epsilon-greedy collection (`collect.py`) and the trainer's seam
(`algorithm.py`). Importing this package imports only its config."""

from polar.rl.common.algorithm import AlgorithmSpec
from polar.rl.dqn.config import DQNConfig

SPEC = AlgorithmSpec(
    name="dqn", config=DQNConfig, algorithm="polar.rl.dqn.algorithm:DQNAlgorithm",
    policy="polar.rl.dqn.dqn_policy:DQNPolicy",
)
