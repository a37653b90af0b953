"""DQN's hyperparameters: the `dqn:` section of a run config. Names and defaults follow
Stable-Baselines3's DQN; steps are env steps (transitions), as there."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from polar.config import StrictModel


class DQNConfig(StrictModel):
    """The `dqn:` section of a run config."""

    num_envs: int = Field(1, ge=1)  # envs per collection (per worker when workers > 0)
    buffer_size: int = Field(1_000_000, ge=1)
    learning_starts: int = Field(100, ge=0)  # env steps of uniform random actions before any update
    batch_size: int = Field(32, ge=1)
    learning_rate: float = Field(1e-4, gt=0)
    gamma: float = Field(0.99, ge=0, le=1)
    # Target network: moved towards the online one by tau every `target_update_interval` env
    # steps (tau 1: a copy, the DQN paper's hard update).
    tau: float = Field(1.0, gt=0, le=1)
    target_update_interval: int = Field(10_000, ge=1)
    train_freq: int = Field(4, ge=1)  # vector steps collected between two rounds of updates
    gradient_steps: int = Field(1, ge=1)  # updates per round
    # Epsilon-greedy: linear from the initial to the final epsilon over this fraction of the run.
    exploration_fraction: float = Field(0.1, ge=0, le=1)
    exploration_initial_eps: float = Field(1.0, ge=0, le=1)
    exploration_final_eps: float = Field(0.05, ge=0, le=1)
    max_grad_norm: float = Field(10.0, gt=0)
    double: bool = True  # double DQN: the online network picks a', the target network scores it
    # The fast paths (identical results): Adam through torch's fused kernel called directly, and
    # the greedy action of a rollout step in numpy for an MLP over vector observations.
    fast: bool = True
    save_buffer: bool = True  # the replay buffer goes into checkpoints (exact resume, bigger files)
    buffer_float: Literal["float32", "float16"] = "float32"  # storage of float observations

    @model_validator(mode="after")
    def _eps(self) -> DQNConfig:
        if self.exploration_final_eps > self.exploration_initial_eps:
            raise ValueError(f"exploration_final_eps: {self.exploration_final_eps} is above "
                             f"exploration_initial_eps ({self.exploration_initial_eps}); epsilon only decays")
        return self

    def epsilon(self, env_steps: int, total: int) -> float:
        """The exploration rate after `env_steps` of a run of `total`: uniform random actions
        before `learning_starts`, then Stable-Baselines3's linear schedule."""
        if env_steps < self.learning_starts:
            return 1.0
        decay = self.exploration_fraction * total
        if decay <= 0 or env_steps >= decay:
            return self.exploration_final_eps
        frac = env_steps / decay
        return self.exploration_initial_eps + frac * (self.exploration_final_eps - self.exploration_initial_eps)
