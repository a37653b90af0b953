"""Hyperparameters and run configs for `polar train`, as strict models (unknown keys are errors).

One YAML file (a recipe under `skills/recipes/`) holds everything a run needs, like
rl-baselines3-zoo: which harness, which algorithm, its hyperparameters, the network and the
rollout layout. Every field has a default that works for small classic-control tasks.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from polar.config import StrictModel


class NetworkConfig(StrictModel):
    """Encoder + MLP sizes; the same config rebuilds the network from a checkpoint."""

    hidden: list[PositiveInt] = Field(default_factory=lambda: [64, 64])
    activation: Literal["tanh", "relu"] = "tanh"
    # PPO: one encoder+trunk for actor and critic (MiniGrid), or two separate ones (CleanRL).
    shared: bool = False
    # MiniGrid-style index grids (uint8 HxWx3): an embedding per channel, then a small CNN.
    grid_vocab: int = Field(16, ge=2)
    grid_embed: int = Field(8, ge=1)
    # Pixel images: a Nature-CNN, then a ReLU layer of this many features.
    image_features: int = Field(512, ge=1)
    # PPO Gaussian head: initial log standard deviation (state-independent, learned).
    log_std_init: float = 0.0
    # Recurrent PPO: an LSTM of this many units between the encoder and the trunk (memory over
    # a partial view, e.g. MiniGrid's 7x7); 0: feedforward. PPO only.
    lstm: int = Field(0, ge=0)


class PPOConfig(StrictModel):
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
    # over vector observations: polar/rl/ppo_grad.py; the same maths in fewer tensor ops);
    # false: autograd.
    analytic_grad: bool = True


class HERConfig(StrictModel):
    """Hindsight experience replay over a goal-conditioned Dict observation (`observation`,
    `achieved_goal`, `desired_goal`, as Gymnasium-Robotics' goal envs return it)."""

    k: int = Field(4, ge=1)  # relabelled : real transitions = k : 1
    strategy: Literal["future", "final"] = "future"
    goal_key: str = "desired_goal"
    achieved_key: str = "achieved_goal"
    # The reward of (achieved goal, goal): sparse = -(distance > threshold); sparse01 =
    # (distance <= threshold); dense = -distance; or "module:function" (vectorised).
    reward: str = "sparse"
    threshold: float = Field(0.05, gt=0)


class SACConfig(StrictModel):
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
    # polar/rl/sac_grad.py; the same maths without autograd's graph); false: autograd always
    analytic_grad: bool = True
    save_buffer: bool = True  # the replay buffer goes into checkpoints (exact resume, bigger files)
    buffer_float: Literal["float32", "float16"] = "float32"  # storage of float observations and actions
    her: HERConfig | None = None


class TrainConfig(StrictModel):
    """A training run. `harness` is one id for every worker, or one id per worker."""

    algo: Literal["ppo", "sac"] = "ppo"
    harness: str | list[str]
    harness_kwargs: dict[str, Any] = Field(default_factory=dict)
    steps: int = Field(100_000, ge=1)  # env steps (transitions) in total
    seed: int = Field(0, ge=0)
    workers: int = Field(0, ge=0)  # 0: in-process vector env; N: N Ray actors
    address: str | None = None  # Ray cluster address; RAY_ADDRESS is honoured too
    object_store_mb: int = Field(200, ge=50)
    torch_threads: int = Field(1, ge=1)  # small nets: one thread beats two on a busy 2-core box
    # Flush subnormal floats to zero on the training thread, as TensorFlow's CPU runtime does:
    # Adam's moments of a dead ReLU unit decay through the subnormal range, where x86
    # arithmetic is far slower (an SAC Pendulum update: 0.79x the time; docs/training.md).
    flush_denormal: bool = True
    normalize_obs: bool = False
    # Kind of each observation key (vector, image, index_grid, ...), over what the harness
    # declares; undeclared uint8 HxWxC Boxes are images (see polar/rl/observations.py).
    observation_kinds: dict[str, str] = Field(default_factory=dict)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    ppo: PPOConfig = Field(default_factory=PPOConfig)
    sac: SACConfig = Field(default_factory=SACConfig)
    eval_every: int = Field(0, ge=0)  # env steps between evaluations; 0: only at the end
    eval_episodes: int = Field(10, ge=1)
    eval_seed: int = Field(1_000_000, ge=0)  # evaluation seeds are eval_seed + i, disjoint from training
    eval_deterministic: bool = True  # evaluate the mode of the policy (false: sample actions)
    checkpoint_every: int = Field(0, ge=0)  # env steps between checkpoints; 0: only at the end
    out: str = "runs/train"
    progress: bool = True

    @field_validator("harness_kwargs")
    @classmethod
    def _step_limits(cls, v: dict[str, Any]) -> dict[str, Any]:
        from polar.harnesses.registry import check_step_kwargs

        return check_step_kwargs(v)

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.network.lstm:
            if self.algo != "ppo":
                raise ValueError(f"network.lstm: recurrent policies are trained by PPO, not {self.algo}")
            envs = self.ppo.num_envs * max(1, self.workers)
            if envs < self.ppo.num_minibatches:
                raise ValueError(f"ppo.num_minibatches: {self.ppo.num_minibatches} minibatches of whole env "
                                 f"sequences need at least as many envs (num_envs x workers = {envs})")
        if isinstance(self.harness, list):
            if not self.harness:
                raise ValueError("harness: the list of harness ids is empty")
            if self.workers == 0 and len(self.harness) > 1:
                raise ValueError("harness: a list of several ids needs workers >= 1 (one id per worker)")
            if self.workers > 0 and len(self.harness) not in (1, self.workers):
                raise ValueError(
                    f"harness: {len(self.harness)} ids for {self.workers} workers; give one id or one per worker"
                )
        return self

    def harness_for(self, worker: int) -> str:
        if isinstance(self.harness, str):
            return self.harness
        return self.harness[worker % len(self.harness)]
