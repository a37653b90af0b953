"""The agent's own memory of what it has seen (docs/memory.md).

The domain says how one observation reads into world cells (a *reader*, offered by the
harness as `capability("memory_reader")`, see `polar.harnesses.sighting`); the memory keeps
an allocentric map of every cell ever seen, with what it held and the step it was last seen,
and knows nothing of the others. `MemoryHarness` wraps a harness so that everything the agent
reads goes through the memory: its symbolic state (the planner's predicates, the skills'
termination tests, the primitives' effects) is the reader's predicates over the memory, the
text view is the remembered map, and the simulator's hidden state (`capability("grid")`) is
not offered. Memory skills read the map through `capability("memory")`.
"""

from __future__ import annotations

from typing import Any

from polar.errors import HarnessError
from polar.harnesses.base import Harness, HarnessWrapper, StepResult, SymbolicState
from polar.harnesses.sighting import Cell, Code, MemoryReader, Sighting

HIDDEN = frozenset({"grid"})  # capabilities that expose the simulator's hidden state


class Memory:
    """An allocentric map of what the agent has seen: cell -> what it held when last seen, and
    when (the step). A cell never seen is not in `cells`: unknown, not empty."""

    def __init__(self) -> None:
        self.cells: dict[Cell, Code] = {}
        self.seen_at: dict[Cell, int] = {}
        self.pose: Cell = (0, 0)
        self.heading = 0
        self.carrying: Code | None = None
        self.step = 0

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def observe(self, sighting: Sighting, step: int, empty: Code) -> None:
        """Write what one observation shows over what was remembered. The agent's own cell is
        not in its view: it stands there, so a cell never seen becomes `empty`."""
        self.step = step
        self.pose, self.heading, self.carrying = sighting.pose, sighting.heading, sighting.carrying
        for cell, code in sighting.cells.items():
            self.cells[cell] = code
            self.seen_at[cell] = step
        if self.pose not in self.cells:
            self.cells[self.pose] = empty
            self.seen_at[self.pose] = step

    def unknown(self, cell: Cell) -> bool:
        return cell not in self.cells


class MemoryHarness(HarnessWrapper):
    """A harness as the agent knows it from its own view: every observation is read into the
    memory; `symbolic_state` and `render_text` are the memory's; `capability("grid")` is
    refused (the memory skills never read it) and `capability("memory")` is the map."""

    def __init__(self, inner: Harness) -> None:
        super().__init__(inner)
        if "memory_reader" not in inner.capabilities():
            raise HarnessError(f"harness {inner.spec.id!r} offers no memory reader (capability 'memory_reader'): "
                               "the agent's memory cannot read its observations (MiniGrid: make it with "
                               "odometry: true, the agent's own pose in each observation)")
        self.reader: MemoryReader = inner.capability("memory_reader")
        self.memory = Memory()
        self.mission = ""

    def _observe(self, obs: Any, step: int) -> None:
        self.memory.observe(self.reader.read(obs), step, self.reader.empty)
        if isinstance(obs, dict) and isinstance(obs.get("mission"), str):
            self.mission = obs["mission"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.inner.reset(seed=seed, options=options)
        self.memory.clear()
        self._observe(obs, 0)
        return obs, info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.inner.step(action)
        self._observe(obs, self.memory.step + 1)
        return obs, reward, terminated, truncated, info

    def symbolic_state(self) -> SymbolicState | None:
        return self.reader.state(self.memory, self.mission)

    def render_text(self, obs: Any) -> str:
        return self.reader.describe(self.memory) + f"\nMission: {self.mission}"

    def capabilities(self) -> set[str]:
        return (self.inner.capabilities() - HIDDEN - {"memory_reader"}) | {"memory"}

    def capability(self, name: str) -> Any:
        if name == "memory":
            return self.memory
        if name in HIDDEN or name == "memory_reader":
            raise HarnessError(f"harness {self.spec.id!r} as the agent sees it (its memory) has no capability "
                               f"{name!r}: the simulator's hidden state is not read (it offers: "
                               f"{', '.join(sorted(self.capabilities()))})")
        return self.inner.capability(name)

