"""MiniGrid's observation reader for the agent's memory (docs/memory.md): how one 7x7
egocentric view, placed by the agent's own pose (the harness's `odometry`), reads into world
cells, and the predicates a planner reads over what the memory holds.

Nothing here reads the simulator: `read` is a function of the observation, `state` and
`describe` of the memory. The predicates are the harness's own (`grid_state`, the same code
over the remembered cells instead of the true grid), plus what only a memory can say:
`seen(X)` for every remembered object, and the unexplored frontier as a pseudo-object,
`reachable(frontier)` when a cell next to an unseen one can be walked to now, else
`behind(frontier,O)` and `in_way(O)` naming the first obstacle (a closed door) on the way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT, OBJECT_TO_IDX

from polar.domains.minigrid.obs import view_offsets
from polar.domains.minigrid.state import (
    _STATE_NAMES,
    DIR_VECTORS,
    DIRECTIONS,
    _cell_code,
    _references,
    grid_state,
    reach_objects,
)
from polar.harnesses.base import SymbolicObject, SymbolicState
from polar.harnesses.sighting import Cell, Code, MemoryView, Sighting

UNSEEN = (OBJECT_TO_IDX["unseen"], 0, 0)  # what the view shows where sight is blocked
EMPTY = (OBJECT_TO_IDX["empty"], 0, 0)
_NOT_OBJECTS = {"unseen", "empty", "wall", "floor", "agent"}
FRONTIER = "frontier"


def kind(code: Code) -> str:
    """The object type a cell's code names (`empty`, `wall`, `door`, ...)."""
    return IDX_TO_OBJECT[int(code[0])]


def walkable(memory: MemoryView, cell: Cell) -> bool:
    """A remembered cell the agent could stand on (a door or an object once out of the way):
    seen, and neither a wall nor lava. Unseen cells are not walkable: paths stay on the map."""
    code = memory.cells.get(cell)
    return code is not None and kind(code) not in ("wall", "lava", "unseen")


def passable(memory: MemoryView, cell: Cell) -> bool:
    """A remembered cell the agent can walk through now: empty floor, the goal or an open door."""
    code = memory.cells.get(cell)
    if code is None:
        return False
    name = kind(code)
    return name in ("empty", "floor", "goal") or (name == "door" and _STATE_NAMES[int(code[2])] == "open")


def frontier(memory: MemoryView) -> set[Cell]:
    """The unseen cells next to a remembered cell the agent could stand on: what is left to see."""
    out = set()
    for cell in memory.cells:
        if walkable(memory, cell):
            for dx, dy in DIR_VECTORS:
                n = (cell[0] + dx, cell[1] + dy)
                if n not in memory.cells:
                    out.add(n)
    return out


class MiniGridReader:
    """`read` / `state` / `describe` for MiniGrid's index-grid view (`polar.harnesses.sighting`)."""

    empty: Code = EMPTY

    def read(self, obs: Any) -> Sighting:
        image = np.asarray(obs["image"])
        n = image.shape[0]
        if "agent_pos" not in obs:
            raise KeyError("the observation holds no agent_pos: make the harness with odometry: true")
        ax, ay = (int(v) for v in obs["agent_pos"])
        heading = int(obs["agent_dir"] if "agent_dir" in obs else obs["direction"])
        me = (n // 2, n - 1)  # the agent's own cell in its view: what it carries, if anything
        cells: dict[Cell, Code] = {}
        carrying = None
        for k, (dx, dy) in enumerate(view_offsets(n, heading)):
            i, j = divmod(k, n)
            code = tuple(int(v) for v in image[i, j])
            if (i, j) == me:
                carrying = None if code == EMPTY else code
            elif code != UNSEEN:
                cells[(ax + dx, ay + dy)] = code
        return Sighting(pose=(ax, ay), heading=heading, cells=cells, carrying=carrying)

    def state(self, memory: MemoryView, mission: str) -> SymbolicState:
        objects = [SymbolicObject(type=kind(code), color=IDX_TO_COLOR[int(code[1])], pos=cell,
                                  state=_STATE_NAMES[int(code[2])] if kind(code) == "door" else None)
                   for cell, code in sorted(memory.cells.items(), key=lambda kv: (kv[0][1], kv[0][0]))
                   if kind(code) not in _NOT_OBJECTS]
        carrying = None if memory.carrying is None else (kind(memory.carrying), IDX_TO_COLOR[int(memory.carrying[1])])
        state = grid_state(objects, lambda c: walkable(memory, c),
                           lambda c: c in memory.cells and kind(memory.cells[c]) == "empty",
                           memory.pose, memory.heading, carrying, mission)
        preds = set(state.predicates)
        refs = _references(objects, carrying)
        for o in objects:
            preds.update(f"seen({r})" for r in refs[id(o)])
        preds.update(self._frontier_predicates(memory, objects, refs))
        return state.model_copy(update={"predicates": sorted(preds)})

    @staticmethod
    def _frontier_predicates(memory: MemoryView, objects: list[SymbolicObject],
                             refs: dict[int, list[str]]) -> set[str]:
        """`reachable(frontier)`, or `behind(frontier,O)` + `in_way(O)` for each first obstacle
        on the way to some unseen cell (see the module's docstring)."""
        by_pos = {o.pos: o for o in objects}
        unseen = [SymbolicObject(type=FRONTIER, pos=c) for c in sorted(frontier(memory))]
        found = reach_objects({**by_pos, **{o.pos: o for o in unseen}}, memory.pose, lambda c: walkable(memory, c))
        out: set[str] = set()
        for o, obstacle in found:
            if o.type != FRONTIER:
                continue
            if obstacle is None:
                out.add(f"reachable({FRONTIER})")
            else:
                for r in refs[id(obstacle)]:
                    out.update((f"behind({FRONTIER},{r})", f"in_way({r})"))
        return out

    def describe(self, memory: MemoryView) -> str:
        """The remembered map (x right, y down; `??` never seen), the agent as an arrow, and
        each remembered object with the step it was last seen."""
        if not memory.cells:
            return "Memory: nothing seen yet."
        xs = [c[0] for c in memory.cells] + [memory.pose[0]]
        ys = [c[1] for c in memory.cells] + [memory.pose[1]]
        arrows = (">>", "vv", "<<", "^^")
        rows = []
        for y in range(min(ys), max(ys) + 1):
            row = []
            for x in range(min(xs), max(xs) + 1):
                code = memory.cells.get((x, y))
                row.append(arrows[memory.heading] if (x, y) == memory.pose else
                           "??" if code is None else _cell_code(*code))
            rows.append(" ".join(row))
        seen = [f"{IDX_TO_COLOR[int(code[1])]} {kind(code)}"
                + (f" ({_STATE_NAMES[int(code[2])]})" if kind(code) == "door" else "")
                + f" at ({x},{y}), seen at step {memory.seen_at[(x, y)]}"
                for (x, y), code in sorted(memory.cells.items(), key=lambda kv: (kv[0][1], kv[0][0]))
                if kind(code) not in _NOT_OBJECTS]
        carried = "nothing" if memory.carrying is None else \
            f"{IDX_TO_COLOR[int(memory.carrying[1])]} {kind(memory.carrying)}"
        return "\n".join([
            f"Memory of what you have seen (x {min(xs)}..{max(xs)} right, y {min(ys)}..{max(ys)} down; you are the "
            "arrow; ?? never seen; ## wall, . empty, K key, A ball, B box, D door, d open door, L locked door, "
            "GG goal, ~~ lava; second letter = colour initial):",
            *rows,
            "Seen: " + ("; ".join(seen) if seen else "nothing"),
            f"You are at ({memory.pose[0]},{memory.pose[1]}) facing {DIRECTIONS[memory.heading]}, "
            f"carrying {carried}.",
        ])


READER = MiniGridReader()
