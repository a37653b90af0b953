"""Several harnesses as one Gymnasium env: each episode plays the next task in turn.

`gym:polar.harnesses.multitask:MultiTaskEnv` with `tasks: [{id, kwargs, label}, ...]` is how one
policy trains over several tasks in a serial vector env (no Ray workers: on a 2-core machine a
suite's cells already hold the cores, and a multitask run inside a cell must not wait for
actors that cannot start). Sub-env i of a vector env starts at task (seed + i) mod n (the
first seeded reset picks the offset) and moves to the next task at every reset, so a batch
holds every task and each task gets the same number of episodes. `info["task"]` names the
task of the step. The tasks must share observation and action spaces (MiniGrid's 7x7 view
does; full grids of different sizes do not).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from polar.errors import ConfigError
from polar.harnesses.base import Harness, StepResult


class MultiTaskEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        from polar.harnesses.registry import make_harness

        if not tasks:
            raise ConfigError("tasks: the list is empty")
        self.labels = [str(t.get("label") or t["id"]) for t in tasks]
        self.harnesses: list[Harness] = [make_harness(t["id"], **dict(t.get("kwargs") or {})) for t in tasks]
        first = self.harnesses[0]
        for label, h in zip(self.labels[1:], self.harnesses[1:], strict=True):
            if h.observation_space != first.observation_space or h.action_space != first.action_space:
                raise ConfigError(
                    f"tasks: {label} has spaces {h.observation_space} / {h.action_space}, but {self.labels[0]} has "
                    f"{first.observation_space} / {first.action_space}; one policy needs the same spaces")
        self.observation_space = first.observation_space
        self.action_space = first.action_space
        kinds = first.spec.extra.get("observation_kinds")
        self.metadata = {"render_modes": [], **({"observation_kinds": kinds} if kinds else {})}
        self.task = -1  # index of the current task; the first reset picks it

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        n = len(self.harnesses)
        self.task = (seed % n) if (seed is not None and self.task < 0) else (self.task + 1) % n
        obs, info = self.harnesses[self.task].reset(seed=seed, options=options)
        return obs, {**info, "task": self.labels[self.task]}

    def step(self, action: Any) -> StepResult:
        obs, r, term, trunc, info = self.harnesses[self.task].step(action)
        return obs, r, term, trunc, {**info, "task": self.labels[self.task]}

    def close(self) -> None:
        for h in self.harnesses:
            h.close()
