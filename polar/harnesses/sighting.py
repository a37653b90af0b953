"""What one observation shows, placed on the world's map: the contract between a domain's
observation reader and the agent's memory (`polar.agent.memory`, docs/memory.md).

A harness whose observations can be read into cells offers a reader through
`capability("memory_reader")`: `read(obs) -> Sighting` (a function of the observation alone:
the agent's own view plus its pose, which the harness declares as odometry in its
observation), `empty` (the code of an empty cell), `state(memory, mission) -> SymbolicState` (the domain's predicates over what
the memory holds) and `describe(memory) -> str` (the memory as text for a planner).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from polar.harnesses.base import SymbolicState

Cell = tuple[int, int]
Code = tuple[int, ...]  # what a cell holds, in the domain's encoding (MiniGrid: object, colour, state)


class Sighting(NamedTuple):
    """One observation read into world coordinates. `cells` holds only the cells the view
    shows (an occluded cell is left out, so the memory keeps what it knew of it)."""

    pose: Cell
    heading: int
    cells: dict[Cell, Code]
    carrying: Code | None = None


class MemoryView(Protocol):
    """What a reader's `state` and `describe` (and the memory skills) read of the memory."""

    cells: dict[Cell, Code]  # every cell ever seen -> what it held when last seen
    seen_at: dict[Cell, int]  # cell -> the step it was last seen
    pose: Cell
    heading: int
    carrying: Code | None
    step: int


class MemoryReader(Protocol):
    empty: Code  # what a cell the agent stands on and never saw holds

    def read(self, obs: Any) -> Sighting: ...

    def state(self, memory: MemoryView, mission: str) -> SymbolicState: ...

    def describe(self, memory: MemoryView) -> str: ...
