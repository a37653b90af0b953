"""Hyperparameters and run configs for `polar train`, as strict models (unknown keys are errors).

One YAML file (a recipe under `skills/recipes/`) holds everything a run needs, like
rl-baselines3-zoo: which harness, which algorithm, its hyperparameters, the network and the
rollout layout. Every field has a default that works for small classic-control tasks.

Each algorithm owns its section (`ppo:`, `sac:`, ...: `polar/rl/<algo>/config.py`); the
sections of `TrainConfig` are made from the registry (`polar.rl.registry`), so a new
algorithm adds its section without touching this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PositiveInt, create_model, field_validator, model_validator

from polar.config import StrictModel
from polar.errors import ConfigError
from polar.rl.registry import algorithm_spec, algorithm_specs, known_algo


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


class _RunConfig(StrictModel):
    """A training run. `harness` is one id for every worker, or one id per worker; `algo`
    names the algorithm (a key of `polar.rl.registry.ALGORITHMS`) whose section is used."""

    algo: str = "ppo"
    harness: str | list[str]
    harness_kwargs: dict[str, Any] = Field(default_factory=dict)
    steps: int = Field(100_000, ge=1)  # env steps (transitions) in total
    seed: int = Field(0, ge=0)
    workers: int = Field(0, ge=0)  # 0: in-process vector env; N: N Ray actors
    address: str | None = None  # Ray cluster address; RAY_ADDRESS is honoured too
    object_store_mb: int = Field(200, ge=50)
    torch_threads: int = Field(1, ge=1)  # small nets: one thread beats two on a busy 2-core box
    # The learner's device (updates, optimisers, targets); rollouts act on the CPU. auto: cuda
    # where a GPU is visible and the policy reads pixel images, else cpu (polar/rl/common/device.py).
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # Flush subnormal floats to zero on the training thread, as TensorFlow's CPU runtime does:
    # Adam's moments of a dead ReLU unit decay through the subnormal range, where x86
    # arithmetic is far slower (an SAC Pendulum update: 0.79x the time; docs/training.md).
    flush_denormal: bool = True
    normalize_obs: bool = False
    # Kind of each observation key (vector, image, index_grid, ...), over what the harness
    # declares; undeclared uint8 HxWxC Boxes are images (see polar/rl/common/observations.py).
    observation_kinds: dict[str, str] = Field(default_factory=dict)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
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

    @field_validator("algo")
    @classmethod
    def _known_algo(cls, v: str) -> str:
        return known_algo(v)

    @model_validator(mode="after")
    def _check(self) -> _RunConfig:
        spec = algorithm_spec(self.algo)
        if self.network.lstm and not spec.recurrent:
            trained_by = " or ".join(s.name.upper() for s in algorithm_specs() if s.recurrent)
            raise ValueError(f"network.lstm: recurrent policies are trained by {trained_by}, not {self.algo}")
        if spec.check is not None:
            spec.check(self)
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

    def section(self) -> Any:
        """The hyperparameters of the algorithm this run trains (`cfg.ppo` for PPO...)."""
        return getattr(self, self.algo)


def _with_sections() -> type[_RunConfig]:
    """`_RunConfig` plus one field per registered algorithm, its section (default: its defaults)."""
    sections: dict[str, Any] = {s.name: (s.config, Field(default_factory=s.config)) for s in algorithm_specs()}
    clash = set(sections) & set(_RunConfig.model_fields)
    if clash:
        raise ConfigError(f"polar.rl.registry: algorithm name(s) {sorted(clash)} clash with run config fields")
    return create_model("TrainConfig", __base__=_RunConfig, __module__=__name__, **sections)


if TYPE_CHECKING:
    TrainConfig = _RunConfig
else:
    TrainConfig = _with_sections()
