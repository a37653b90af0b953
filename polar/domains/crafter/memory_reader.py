"""Crafter's observations read into the agent's own memory (`polar.agent.memory`, docs/memory.md).

With `odometry: true` the harness adds the player's own position (`pose`, world cell) to each
observation, declared in its observation space; `read(obs)` places the 9x7 semantic view on the
world's map around it: cell -> (material, object), a function of the observation alone. The
generic memory keeps every cell seen and the step it was last seen, so water (which never
moves) is remembered where it is, and a cow (which wanders) where it was last seen, and when.

The predicates under the memory are the harness's own (they already read the view alone and the
agent's own record) plus `remembers(THING)`: THING is in view or in a remembered cell. The
scripted skills that look for water or a cow (`explore`, `drink_up`, `hunt_cow`) walk to the
remembered one when none is in view (`walk_to_remembered`), through remembered cells only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polar.domains.crafter import view
from polar.domains.crafter.moves import walk_to_cells
from polar.domains.crafter.plant import PlantRecord
from polar.harnesses.base import SymbolicState
from polar.harnesses.sighting import Cell, Code, MemoryView, Sighting

REMEMBERED = ("water", "cow", "tree", "stone", "coal", "iron", "table", "furnace")  # remembers(THING)


def thing_of(code: Code) -> str:
    """The thing a remembered cell shows: its object if any, else its material."""
    mat, obj = int(code[0]), int(code[1])
    return view.OBJECTS[obj] if obj else view.MATERIALS[mat]


def remembered_cells(memory: MemoryView, thing: str) -> list[Cell]:
    """The remembered cells holding `thing`, the most recently seen first."""
    cells = [c for c, code in memory.cells.items() if thing_of(code) == thing]
    return sorted(cells, key=lambda c: -memory.seen_at.get(c, 0))


class CrafterReader:
    """The memory reader a `crafter:` harness with odometry offers (`capability("memory_reader")`).
    Bound to its harness: the predicates and the text are the harness's own, from the current
    observation (the agent's view), with what the memory adds."""

    empty: Code = (view.MATERIALS.index("grass"), 0)

    def __init__(self, harness: Any) -> None:
        self.harness = harness
        self._last: dict[str, Any] | None = None
        self.plants = PlantRecord()  # each seen plant's growth, counted from the pose (plant.py)

    def read(self, obs: Any) -> Sighting:
        if "pose" not in obs or "semantic" not in obs:
            raise ValueError("crafter memory reader: the observation has no 'pose' or 'semantic' "
                             "(make the harness with odometry: true and without pixels_only)")
        self._last = obs
        px, py = (int(v) for v in np.asarray(obs["pose"]).reshape(-1)[:2])
        sem = np.asarray(obs["semantic"])
        cells: dict[Cell, Code] = {}
        for i in range(sem.shape[0]):
            for j in range(sem.shape[1]):
                if int(sem[i, j, 0]) == 0:  # "none": outside the world's area, nothing to remember
                    continue
                obj = int(sem[i, j, 1])
                if (i, j) == view.CENTRE:
                    obj = 0  # the player itself: the cell holds its ground, not a thing to remember
                cells[(px + i - view.CENTRE[0], py + j - view.CENTRE[1])] = (int(sem[i, j, 0]), obj)
        stepped = int(getattr(self.harness, "steps", 1)) > 0  # 0: the observation of a reset
        if not stepped:
            self.plants.clear()
        self.plants.observe((px, py), cells, stepped)
        return Sighting(pose=(px, py), heading=int(obs["facing"]), cells=cells)

    def state(self, memory: MemoryView, mission: str) -> SymbolicState:
        state = self.harness.symbolic_state()
        seen = {thing_of(code) for code in memory.cells.values()}
        extra = [f"remembers({t})" for t in REMEMBERED if t in seen] + self.plants.predicates()
        return state.model_copy(update={"predicates": [*state.predicates, *extra]})

    def describe(self, memory: MemoryView) -> str:
        text = self.harness.render_text(self._last) if self._last is not None else ""
        lines = []
        px, py = memory.pose
        for thing in ("water", "cow"):
            cells = remembered_cells(memory, thing)
            if cells:
                c = min(cells, key=lambda c: abs(c[0] - px) + abs(c[1] - py)) if thing == "water" else cells[0]
                ago = memory.step - memory.seen_at[c]
                lines.append(f"{thing}: {c[0] - px:+d} x, {c[1] - py:+d} y, seen {ago} steps ago")
        return text + "\nRemembered (offsets from you): " + ("; ".join(lines) if lines else "no water or cow yet")


def walk_to_remembered(memory: MemoryView, thing: str) -> int | None:
    """Crafter's action index of the first move of the shortest walk through remembered cells
    to beside a remembered `thing` (water: the nearest; a cow: the most recently seen ones first),
    or None when none is remembered or none can be reached that way."""
    targets = remembered_cells(memory, thing)
    if thing != "water" and targets:  # a moving thing: only where it was seen last
        last = memory.seen_at[targets[0]]
        targets = [c for c in targets if memory.seen_at[c] == last]
    return walk_to_cells(memory, targets)
