"""What the agent sees in Crafter: the 9x7 local view of the image, read as cells.

Crafter draws the 9 x 7 cells around the player (x right, y down; the player at view cell
(4, 3)) above two rows of inventory icons. `local_view` reads the same window from the
world's arrays: per cell the material (0 outside the world) and the object standing on it (0
none). It reads only that window, so no cell outside what the image shows reaches an agent.
`render_view` turns one observation into the text a planner reads.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

# Crafter's data.yaml lists, in its order (crafter.constants holds the same lists).
MATERIALS = ("none", "water", "grass", "stone", "path", "sand", "tree", "lava", "coal", "iron",
             "diamond", "table", "furnace")  # index 0: outside the world
OBJECTS = ("none", "player", "cow", "zombie", "skeleton", "arrow", "sapling", "ripe-plant", "fence")
ITEMS = ("sapling", "wood", "stone", "coal", "iron", "diamond", "wood_pickaxe", "stone_pickaxe",
         "iron_pickaxe", "wood_sword", "stone_sword", "iron_sword")
VITALS = ("health", "food", "drink", "energy")
FACING = ("left", "right", "up", "down")
_FACING_VECTORS = {(-1, 0): 0, (1, 0): 1, (0, -1): 2, (0, 1): 3}
WALK = ("grass", "sand", "path")  # what the player and zombies walk on (lava: the player only, to die)
VIEW = (9, 7)  # cells across, cells down: what the 64x64 image shows above the inventory
CENTRE = (VIEW[0] // 2, VIEW[1] // 2)  # the player's cell in the view
# Materials worth naming in the text (grass, sand and path are the walkable background).
_LANDMARKS = ("water", "stone", "tree", "lava", "coal", "iron", "diamond", "table", "furnace")
_MATERIAL_CODE = {"none": "  ", "water": "~~", "grass": "..", "stone": "St", "path": "__", "sand": "::",
                  "tree": "Tr", "lava": "!!", "coal": "Co", "iron": "Ir", "diamond": "Di", "table": "Tb",
                  "furnace": "Fu"}
_OBJECT_CODE = {"player": "@@", "cow": "Cw", "zombie": "Zo", "skeleton": "Sk", "arrow": "->",
                "sapling": "sp", "ripe-plant": "Pl", "fence": "##"}


def object_name(obj: Any) -> str:
    """The view's name of a Crafter object (a plant is `ripe-plant` once it can be eaten)."""
    name = type(obj).__name__.lower()
    if name == "plant":
        return "ripe-plant" if obj.ripe else "sapling"
    return name


def local_view(world: Any, centre: tuple[int, int]) -> np.ndarray:
    """(9, 7, 2) uint8, indexed [x, y]: the material id (MATERIALS) and the object id (OBJECTS)
    of each view cell around `centre`, read from the world's arrays within the window only."""
    out = np.zeros((*VIEW, 2), dtype=np.uint8)
    names = world._mat_names  # crafter's id -> material name (None: not generated)
    x0, y0 = centre[0] - CENTRE[0], centre[1] - CENTRE[1]
    w, h = world.area
    for i in range(VIEW[0]):
        x = x0 + i
        if not 0 <= x < w:
            continue
        for j in range(VIEW[1]):
            y = y0 + j
            if not 0 <= y < h:
                continue
            out[i, j, 0] = MATERIALS.index(names[int(world._mat_map[x, y])] or "none")
            k = int(world._obj_map[x, y])
            if k:
                out[i, j, 1] = OBJECTS.index(object_name(world._objects[k]))
    return out


def facing_index(facing: Any) -> int:
    return _FACING_VECTORS[(int(facing[0]), int(facing[1]))]


def _where(dx: int, dy: int) -> str:
    parts = []
    if dy:
        parts.append(f"{abs(dy)} {'down' if dy > 0 else 'up'}")
    if dx:
        parts.append(f"{abs(dx)} {'right' if dx > 0 else 'left'}")
    return ", ".join(parts) or "here"


def visible_things(semantic: np.ndarray) -> dict[str, list[tuple[int, int]]]:
    """Each landmark material and non-player object in view -> its offsets (dx right, dy down)
    from the player, nearest first."""
    found: dict[str, list[tuple[int, int]]] = {}
    for i in range(semantic.shape[0]):
        for j in range(semantic.shape[1]):
            dx, dy = i - CENTRE[0], j - CENTRE[1]
            mat, obj = MATERIALS[int(semantic[i, j, 0])], OBJECTS[int(semantic[i, j, 1])]
            if mat in _LANDMARKS:
                found.setdefault(mat, []).append((dx, dy))
            if obj not in ("none", "player"):
                found.setdefault(obj, []).append((dx, dy))
    return {k: sorted(v, key=lambda d: (abs(d[0]) + abs(d[1]), d)) for k, v in sorted(found.items())}


def facing_cell(semantic: np.ndarray, facing: int) -> tuple[str, str]:
    """(material, object) of the cell the player faces (what `do` acts on)."""
    dx, dy = [(-1, 0), (1, 0), (0, -1), (0, 1)][facing]
    cell = semantic[CENTRE[0] + dx, CENTRE[1] + dy]
    return MATERIALS[int(cell[0])], OBJECTS[int(cell[1])]


def render_view(obs: dict[str, Any]) -> str:
    """The planner's text of one observation: the view as a grid, what is where relative to the
    player, the cell faced, inventory, vitals and daylight. Reads `obs` alone."""
    sem = np.asarray(obs["semantic"])
    rows = []
    for j in range(sem.shape[1]):
        cells = []
        for i in range(sem.shape[0]):
            obj = OBJECTS[int(sem[i, j, 1])]
            cells.append(_OBJECT_CODE[obj] if obj != "none" else _MATERIAL_CODE[MATERIALS[int(sem[i, j, 0])]])
        rows.append(" ".join(cells))
    facing = int(obs["facing"])
    seen = [f"{name}: " + "; ".join(_where(dx, dy) for dx, dy in offsets[:3])
            + (f" (+{len(offsets) - 3} more)" if len(offsets) > 3 else "")
            for name, offsets in visible_things(sem).items()]
    mat, obj = facing_cell(sem, facing)
    inv = np.asarray(obs["inventory"])
    held = ", ".join(f"{name} {int(n)}" for name, n in zip(ITEMS, inv, strict=True) if n > 0) or "nothing"
    vit = np.asarray(obs["vitals"])
    daylight = float(np.asarray(obs["daylight"]).reshape(-1)[0])
    return "\n".join([
        "View, 9 wide x 7 high (you are @@ in the middle; .. grass, :: sand, __ path, ~~ water, St stone, "
        "Tr tree, !! lava, Co coal, Ir iron, Di diamond, Tb table, Fu furnace, Cw cow, Zo zombie, "
        "Sk skeleton, -> arrow, sp sapling, Pl ripe plant):",
        *rows,
        "Visible (offsets from you): " + ("; ".join(seen) if seen else "nothing but grass, sand and path"),
        f"Facing {FACING[facing]}: {obj if obj != 'none' else mat}."
        + (" You are asleep." if int(obs["sleeping"]) else ""),
        f"Inventory: {held}.",
        "Vitals (0-9): " + ", ".join(f"{n} {int(v)}" for n, v in zip(VITALS, vit, strict=True)) + ".",
        f"Daylight: {daylight:.2f} ({'day' if daylight >= 0.5 else 'night'}).",
    ])


def walkable_region(semantic: np.ndarray) -> set[tuple[int, int]]:
    """View cells 4-connected to the player's cell over grass, sand and path (objects ignored)."""
    w, h = semantic.shape[:2]
    seen, todo = {CENTRE}, deque([CENTRE])
    while todo:
        x, y = todo.popleft()
        for dx, dy in _FACING_VECTORS:
            n = (x + dx, y + dy)
            if n not in seen and 0 <= n[0] < w and 0 <= n[1] < h and MATERIALS[int(semantic[n][0])] in WALK:
                seen.add(n)
                todo.append(n)
    return seen


def enclosed(semantic: np.ndarray) -> bool:
    """The player's walkable region stays off the view's border and holds no zombie or skeleton.
    Zombies walk only on grass, sand and path and hit from a neighbouring cell; creatures spawn
    at least 6 cells from the player, and every cell off the 9x7 border is within 5: so nothing
    can reach an enclosed player (the harness's `sheltered`)."""
    w, h = semantic.shape[:2]
    region = walkable_region(semantic)
    foes = (OBJECTS.index("zombie"), OBJECTS.index("skeleton"))
    return all(0 < x < w - 1 and 0 < y < h - 1 for x, y in region) and \
        not any(int(semantic[c][1]) in foes for c in region)
