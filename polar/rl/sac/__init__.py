"""SAC (`algo: sac`): the update (`sac.py`) with its fast paths (`sac_grad.py`,
`sac_numpy.py`), the squashed-Gaussian actor and twin critics (`sac_policy.py`), collection
into the shared replay buffer (`collect.py`, `polar/rl/common/buffers.py`, HER included) and
the trainer's seam (`algorithm.py`). Importing this package imports only its config."""

from polar.rl.common.algorithm import AlgorithmSpec
from polar.rl.sac.config import SACConfig

SPEC = AlgorithmSpec(
    name="sac", config=SACConfig, algorithm="polar.rl.sac.algorithm:SACAlgorithm",
    policy="polar.rl.sac.sac_policy:SACPolicy",
)
