"""Growing and eating a plant (`eat_plant`), from the agent's own record of what it saw.

Crafter's sapling (`crafter.objects.Plant`) ripens once it has grown more than 300 steps, and it
grows only on the steps it is updated: `crafter.Env.step` updates an object only while the
player is within 18 cells of it (L1 distance < 2 x the 9-cell view). A creature (zombie,
skeleton or cow) next to it destroys it; the player's `do` on an unripe one does nothing, on a
ripe one eats it (+4 food, `eat_plant`) and it starts again from 0.

So the agent can count a plant's growth itself, from its own pose (odometry) alone: a step on
which the player stands within 18 cells is a step of growth. `PlantRecord` keeps that count for
each plant the player has seen (the one it planted is seen from its first step), forgets a plant
whose cell is seen without it, and restarts a count that was due but is seen unripe (eaten).
The reader (`memory_reader.CrafterReader`) feeds it every observation and adds the predicates
`growing(sapling)` (a plant within 18 cells: it grows while the player stays) and
`remembers(ripe-plant)` (a plant counted ripe, or a ripe one in view).

Skills (scripted, not learnt): `plant_sapling` places a sapling on the grass the player faces
(stepping until it faces free grass); `eat_plant` walks through remembered cells to the nearest
plant counted ripe and eats it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polar.domains.crafter import view
from polar.domains.crafter.moves import DIRS, MOVES, action, explore_act, free_paths, walk_to_cells
from polar.harnesses.sighting import Cell, Code

RIPE_AFTER = 300  # crafter.objects.Plant.ripe: grown > 300
UPDATE_RANGE = 18  # crafter.Env.step: objects within L1 < 2 * max(view) of the player are updated
PLANTS = ("sapling", "ripe-plant")


def _l1(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


class PlantRecord:
    """Each plant seen this episode: world cell -> the steps it has grown, counted from the pose."""

    def __init__(self) -> None:
        self.grown: dict[Cell, int] = {}
        self.pose: Cell | None = None

    def clear(self) -> None:
        self.grown.clear()
        self.pose = None

    def observe(self, pose: Cell, cells: dict[Cell, Code], stepped: bool) -> None:
        """One observation: `cells` is the view placed on the world (cell -> (material, object));
        `stepped`: a step was taken (not a reset), so every plant in range grew by one."""
        self.pose = pose
        if stepped:
            for c in self.grown:
                if _l1(c, pose) < UPDATE_RANGE:
                    self.grown[c] += 1
        for c, (_, obj) in cells.items():
            name = view.OBJECTS[int(obj)]
            if name == "ripe-plant":
                self.grown[c] = max(self.grown.get(c, 0), RIPE_AFTER + 1)
            elif name == "sapling":
                if c not in self.grown or self.grown[c] > RIPE_AFTER + 1:
                    self.grown[c] = 0  # new, or counted ripe but seen unripe: eaten, growing again
            elif c in self.grown:
                del self.grown[c]  # its cell is in view without it: trampled or eaten by a creature

    def growing(self) -> list[Cell]:
        """Plants that grow while the player stays where it is."""
        return [c for c in self.grown if self.pose is not None and _l1(c, self.pose) < UPDATE_RANGE]

    def ripe(self) -> list[Cell]:
        """Plants counted ripe, the nearest first."""
        due = [c for c, g in self.grown.items() if g > RIPE_AFTER]
        return sorted(due, key=lambda c: _l1(c, self.pose) if self.pose is not None else 0)

    def predicates(self) -> list[str]:
        out = []
        if self.growing():
            out.append("growing(sapling)")
        if self.ripe():
            out.append("remembers(ripe-plant)")
        return out


# --- skills' policies ---------------------------------------------------------------------------


def features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, Any]:
    """The view, the facing, the agent's memory (a map of the cells seen) and its plant record
    (`capability("plants")`), when the agent keeps them; nothing else of the harness."""
    def offered(name: str) -> Any:
        return harness.capability(name) if harness is not None and name in harness.capabilities() else None

    pose = obs.get("pose")
    return {"semantic": np.asarray(obs["semantic"]), "facing": int(obs["facing"]), "memory": offered("memory"),
            "plants": offered("plants"), "pose": None if pose is None else tuple(int(v) for v in np.asarray(pose)[:2])}


def plant_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`plant_sapling`'s policy: facing free grass, place the sapling; else step onto a free
    neighbouring cell (which faces the cell beyond it), else walk on."""
    sem, facing = x["semantic"], int(x["facing"])
    mat, obj = view.facing_cell(sem, facing)
    if mat == "grass" and obj == "none":
        return action("place_plant")
    cx, cy = view.CENTRE
    for i, d in enumerate(DIRS):
        c = (cx + d[0], cy + d[1])
        if view.MATERIALS[int(sem[c][0])] in view.WALK and int(sem[c][1]) == 0:
            return action(MOVES[i])
    return explore_act(x, args)


def _approach_cells(x: dict[str, Any], targets: list[Cell]) -> int | None:
    """To beside the nearest of `targets` (view cells), facing it, then `do`; None if none reachable."""
    sem, facing = x["semantic"], int(x["facing"])
    paths = free_paths(sem)
    best = None
    for tx, ty in targets:
        for i, (dx, dy) in enumerate(DIRS):
            stand = (tx - dx, ty - dy)
            if stand in paths and (best is None or paths[stand][0] < best[0]):
                best = (paths[stand][0], paths[stand][1], i)
    if best is None:
        return None
    dist, first, i = best
    if dist == 0:
        return action("do") if facing == i else action(MOVES[i])
    return action(MOVES[DIRS.index(first)])


def eat_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """`eat_plant`'s policy: a ripe plant in view, or a plant in view the record counts ripe: go
    beside it, face it and eat it; else walk through remembered cells to the nearest plant
    counted ripe; else walk on."""
    sem = x["semantic"]
    record: PlantRecord | None = x.get("plants")
    due = set(record.ripe()) if record is not None else set()
    pose = x.get("pose")
    cx, cy = view.CENTRE
    targets = []
    for i, j in np.argwhere(np.isin(sem[..., 1], [view.OBJECTS.index(p) for p in PLANTS])):
        world = None if pose is None else (pose[0] + int(i) - cx, pose[1] + int(j) - cy)
        if view.OBJECTS[int(sem[i, j, 1])] == "ripe-plant" or world in due:
            targets.append((int(i), int(j)))
    if targets and (move := _approach_cells(x, targets)) is not None:
        return move
    if due and x.get("memory") is not None and (move := walk_to_cells(x["memory"], sorted(due))) is not None:
        return move
    return explore_act(x, args)


def eat_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """`eat_plant`'s termination: food rose on a step of this call, or (food full) the plant was
    eaten: the achievement holds and no plant is counted ripe any more."""
    if state is None or not info:  # before the call's first step
        return False
    preds = set(state.predicates)
    return "gained(food)" in preds or ("achieved(eat_plant)" in preds and "remembers(ripe-plant)" not in preds)


def plant_skills(common: dict[str, Any]) -> list[Any]:
    """`plant_sapling` and `eat_plant` (scripted): `common` is the scripted skills' kind and
    harnesses; their features are this module's (the plant record with the memory)."""
    from polar.skills.model import Skill

    here = "polar.domains.crafter.plant"
    base = {**common, "features": {"fn": f"{here}:features"}}
    return [
        Skill(**base, name="plant_sapling",
              description="Plant a sapling: place one on the free grass you face (stepping until you face "
                          "some). It grows while you stay within 18 cells and is ripe after 300 such steps; a "
                          "zombie or cow next to it destroys it. Scripted, not learnt (polar.domains.crafter.plant).",
              preconditions=["has(sapling)"], effects=["growing(sapling)", "achieved(place_plant)"],
              termination={"predicates": ["growing(sapling)"]},
              policy={"loader": f"{here}:plant_act", "config": {}}, step_budget=20),
        Skill(**base, name="eat_plant",
              description="Eat a ripe plant: walk to the nearest plant you counted ripe (or one in view) and "
                          "eat it (food rises by 4). Scripted, not learnt (polar.domains.crafter.plant).",
              preconditions=["remembers(ripe-plant)"], effects=["gained(food)", "achieved(eat_plant)"],
              termination={"check": f"{here}:eat_done"},
              policy={"loader": f"{here}:eat_act", "config": {}}, step_budget=100),
    ]
