"""SAC's hyperparameters: the `sac:` section of a run config."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from polar.config import StrictModel
from polar.rl.common.her import HERConfig


class SACConfig(StrictModel):
    """The `sac:` section of a run config."""

    num_envs: int = Field(1, ge=1)
    buffer_size: int = Field(1_000_000, ge=1)
    gamma: float = Field(0.99, ge=0, le=1)
    tau: float = Field(0.005, gt=0, le=1)
    batch_size: int = Field(256, ge=1)
    learning_starts: int = Field(5000, ge=0)
    policy_lr: float = Field(3e-4, gt=0)
    q_lr: float = Field(1e-3, gt=0)
    policy_frequency: int = Field(2, ge=1)  # delayed actor updates (CleanRL), TD3-style
    target_network_frequency: int = Field(1, ge=1)
    alpha: float = Field(0.2, gt=0)
    autotune: bool = True
    gradient_steps: int = Field(1, ge=1)  # per env step (per vector step)
    worker_steps: int = Field(16, ge=1)  # vector steps per Ray worker call
    fused_adam: bool = True  # Adam through torch's fused kernel called directly (identical results)
    # The gradients written out by hand where the policy allows (vector observations:
    # polar/rl/sac/sac_grad.py; the same maths without autograd's graph); false: autograd always
    analytic_grad: bool = True
    save_buffer: bool = True  # the replay buffer goes into checkpoints (exact resume, bigger files)
    buffer_float: Literal["float32", "float16"] = "float32"  # storage of float observations and actions
    her: HERConfig | None = None
