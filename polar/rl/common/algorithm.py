"""The seam between the trainer and an RL algorithm.

An algorithm is one package under `polar/rl/` (`ppo/`, `sac/`, `dqn/`) whose `__init__`
defines `SPEC`, an `AlgorithmSpec`: its config section (the `<name>:` block of a run config),
its policy class and its `Algorithm` class, named as `"module:Class"` so that reading a
config imports no torch. `polar.rl.registry` lists the packages, one line each.

The trainer drives any `Algorithm` the same way, once per iteration:

    batch = algo.collect(source, env_steps)        # experience, serial or from Ray workers
    env_steps += batch.num_transitions
    metrics, n = algo.update(batch, before, env_steps, updates)
    updates += n

and saves `algo.state_dict()` (optimisers, targets, counters) and `algo.buffer_state()`
(a replay buffer, if any) into its checkpoints.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from polar.config import StrictModel

if TYPE_CHECKING:
    import numpy as np

    from polar.rl.common.batches import EpisodeStats
    from polar.rl.common.rollout import Collector
    from polar.rl.common.timer import PhaseTimer
    from polar.rl.common.workers import WorkerPool
    from polar.rl.config import TrainConfig
    from polar.rl.policy import Policy


def import_object(path: str) -> Any:
    """`"module:name"` -> the object."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class AlgorithmSpec:
    """What the registry knows of one algorithm."""

    name: str  # the `algo:` value, and the name of its config section
    config: type[StrictModel]  # that section's model
    algorithm: str  # "module:Class" of its `Algorithm` (imported on first use)
    policy: str  # "module:Class" of its `Policy` subclass
    recurrent: bool = False  # whether it trains `network.lstm` policies
    # Checks across the whole run config (e.g. minibatches against envs); raise ValueError.
    check: Callable[[Any], None] | None = None

    def algorithm_class(self) -> type[Algorithm]:
        return import_object(self.algorithm)

    def policy_class(self) -> type[Policy]:
        return import_object(self.policy)


class Batch(Protocol):
    """What `Algorithm.collect` returns: anything that counts its transitions and carries the
    statistics of the episodes that ended while it was collected."""

    @property
    def num_transitions(self) -> int: ...

    @property
    def stats(self) -> EpisodeStats: ...


class Update(NamedTuple):
    metrics: dict[str, float] | None  # one metrics row, or None (nothing to log this iteration)
    updates: int  # gradient updates done (the trainer's `updates` counter moves by this much)


@dataclass
class Experience:
    """Where an algorithm's experience comes from: the serial collector (`workers: 0`) or the
    pool of Ray rollout workers. A collect function is called as
    `fn(policy, collector, rng, *args)` in this process or inside each worker (with the
    worker's own policy copy, collector and generator), and is named by module and function
    so that a worker can import it."""

    policy: Policy
    collector: Collector | None
    pool: WorkerPool | None
    rng: np.random.Generator  # the trainer's generator (serial runs)
    weights: Callable[[], Any]  # the current weights, put in Ray's object store

    def renewed(self) -> list[int]:
        """The worker slots whose actor was replaced since the last call: their envs began
        afresh, so episodes that were running there ended unfinished."""
        if self.pool is None or not self.pool.renewed:
            return []
        out = sorted(self.pool.renewed)
        self.pool.renewed.clear()
        return out

    @property
    def workers(self) -> int:
        return 0 if self.pool is None else len(self.pool.actors)

    def collect(self, fn: Callable[..., Any], *args: Any,
                pad: Callable[[Any], Any] | None = None) -> list[Any]:
        """One batch per worker that is up (one batch when serial). A worker slot with no live
        actor (lost with its node, not yet replaced) gives no batch, or with `pad`
        `pad(another worker's batch)`: one of the same shape holding no transitions, for
        replay buffers, which keep a column per env of every configured worker."""
        if self.pool is not None:
            got = self.pool.collect(self.weights(), f"{fn.__module__}:{fn.__name__}", *args)
            if pad is None:
                return [b for b in got if b is not None]
            some = next(b for b in got if b is not None)
            return [pad(some) if b is None else b for b in got]
        assert self.collector is not None
        return [fn(self.policy, self.collector, self.rng, *args)]


class Algorithm(Protocol):
    """One algorithm as the trainer drives it (see the module docstring)."""

    def __init__(self, policy: Policy, cfg: TrainConfig, timer: PhaseTimer) -> None: ...

    def collect(self, source: Experience, env_steps: int) -> Batch:
        """One iteration's experience; `env_steps` counts the transitions before it."""
        ...

    def update(self, batch: Batch, before: int, env_steps: int, updates: int) -> Update:
        """Learn from `batch` (env steps went from `before` to `env_steps` with it; `updates`
        gradient updates were done before)."""
        ...

    def lr(self, updates: int) -> float:
        """The learning rate logged after `updates` updates."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Optimisers, targets and counters: what an exact resume needs besides the policy."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def buffer_state(self) -> dict[str, Any] | None:
        """A replay buffer's `{"meta", "arrays"}` for the checkpoint, or None."""
        ...

    def load_buffer_state(self, state: dict[str, Any]) -> None: ...
