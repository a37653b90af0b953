"""PPO's hyperparameters: the `ppo:` section of a run config."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from polar.config import StrictModel


class PPOConfig(StrictModel):
    """The `ppo:` section of a run config."""

    num_envs: int = Field(8, ge=1)  # envs per rollout (per worker when workers > 0)
    num_steps: int = Field(128, ge=1)  # steps per env per rollout
    learning_rate: float = Field(2.5e-4, gt=0)
    anneal_lr: bool = True
    gamma: float = Field(0.99, ge=0, le=1)
    gae_lambda: float = Field(0.95, ge=0, le=1)
    num_minibatches: int = Field(4, ge=1)
    update_epochs: int = Field(4, ge=1)
    clip_coef: float = Field(0.2, gt=0)
    clip_vloss: bool = True
    ent_coef: float = Field(0.0, ge=0)
    vf_coef: float = Field(0.5, ge=0)
    max_grad_norm: float = Field(0.5, gt=0)
    norm_adv: bool = True
    target_kl: float | None = None
    # Clip + Adam through torch's fused kernels called directly (identical results, less
    # Python per gradient step); false: clip_grad_norm_ + optimizer.step().
    fused_adam: bool = True
    # The loss's gradient written out by hand where the policy allows (an MLP actor-critic
    # over vector observations: polar/rl/ppo/ppo_grad.py; the same maths in fewer tensor ops);
    # false: autograd.
    analytic_grad: bool = True


def check_run(cfg: Any) -> None:
    """Checks of a whole run config (a `polar.rl.config.TrainConfig`) that PPO needs."""
    if cfg.network.lstm:
        envs = cfg.ppo.num_envs * max(1, cfg.workers)
        if envs < cfg.ppo.num_minibatches:
            raise ValueError(f"ppo.num_minibatches: {cfg.ppo.num_minibatches} minibatches of whole env "
                             f"sequences need at least as many envs (num_envs x workers = {envs})")
