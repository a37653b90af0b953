"""Staging a collect skill's start in a Crafter world: the player moved near its target, the
tools Crafter requires in hand. Used by the training env (`collect_env.CollectEnv`) and by the
harness's `start` option (measuring a skill on held-out worlds from the starts it is meant for).
It reads the whole world, as a curriculum does; no agent sees it."""

from __future__ import annotations

from typing import Any

import numpy as np

from polar.domains.crafter import collect, view

WALKABLE = ("grass", "sand", "path")
STAGE_TRIES = 30
PICKAXES = ("wood_pickaxe", "stone_pickaxe", "iron_pickaxe")


def world_cells(world: Any, thing: str) -> np.ndarray:
    """[k, 2] world cells holding the material or object `thing`."""
    if thing in view.OBJECTS:
        return np.array([o.pos for o in world.objects if view.object_name(o) == thing], dtype=int).reshape(-1, 2)
    ids = [i for i, n in world._mat_names.items() if n == thing]
    return np.argwhere(np.isin(world._mat_map, ids))


def free_walkable(world: Any) -> np.ndarray:
    """[W, H] bool: cells the player may stand on with no object there."""
    ids = [i for i, n in world._mat_names.items() if n in WALKABLE]
    return np.isin(world._mat_map, ids) & (world._obj_map == 0)


def stage(env: Any, target: str, rng: np.random.Generator, p_visible: float = 0.6, far: int = 8) -> bool:
    """Move the player of a reset `env` (crafter.Env) to a start for `target` and give it the
    tools to collect it; False when this world offers no such start (the caller draws again)."""
    t = collect.TARGETS[target]
    world, player = env._world, env._player
    inv = player.inventory
    for tool in t.needs:  # the pickaxe Crafter requires, and the lower ones to dig with
        for p in PICKAXES[:PICKAXES.index(tool) + 1] if tool in PICKAXES else (tool,):
            inv[p] = max(inv[p], 1)
    if t.item in ("food", "drink"):
        inv[t.item] = int(rng.integers(2, 7))
    free = free_walkable(world)
    free[tuple(player.pos)] = True  # the player's own cell is free for it
    if t.item is None:  # a station: build one on a free cell
        spots = np.argwhere(free)
        if not len(spots):
            return False
        spot = spots[rng.integers(len(spots))]
        world[tuple(spot)] = t.thing
        free[tuple(spot)] = False
    cells = world_cells(world, t.thing)
    if not len(cells):
        return False
    visible = rng.random() < p_visible
    w, h = world.area
    for k in range(STAGE_TRIES):
        # in view where asked, and out to `far` after half the tries (ores lie inside stone)
        hx, hy = view.CENTRE if visible and k < STAGE_TRIES // 2 else (far, far)
        cx, cy = cells[rng.integers(len(cells))]
        x0, x1, y0, y1 = max(cx - hx, 0), min(cx + hx + 1, w), max(cy - hy, 0), min(cy + hy + 1, h)
        starts = np.argwhere(free[x0:x1, y0:y1]) + (x0, y0)
        starts = starts[(starts != (cx, cy)).any(axis=1)]
        if len(starts):
            pos = tuple(int(v) for v in starts[rng.integers(len(starts))])
            if pos != tuple(player.pos):
                world.move(player, pos)
            return True
    return False


# A fight's start: where each foe walks (Crafter's Zombie and Skeleton `is_free` rules), the
# swords the player may hold (none, wood, stone, iron) and how often, the health it starts with.
FOE_GROUND = {"zombie": ("grass", "sand", "path"), "skeleton": ("path",)}
SWORDS = (None, "wood_sword", "stone_sword", "iron_sword")
SWORD_ODDS = (0.4, 0.3, 0.2, 0.1)
FOE_DISTANCE = (2, 4)  # Manhattan distance of the staged foe, inside the 9x7 view


def stage_foe(env: Any, foe: str, rng: np.random.Generator) -> Any:
    """Move the player of a reset `env` (crafter.Env) to free ground of `foe`'s kind, put a new
    foe 2-4 cells away in view, and draw a sword (`SWORD_ODDS`) and a health of 4-9. Returns the
    new foe, or None when this world offers no such start (the caller draws again)."""
    import crafter

    world, player = env._world, env._player
    ids = [i for i, n in world._mat_names.items() if n in FOE_GROUND[foe]]
    free = np.isin(world._mat_map, ids) & (world._obj_map == 0)
    free[tuple(player.pos)] = bool(np.isin(world._mat_map[tuple(player.pos)], ids))
    cells = np.argwhere(free)
    if not len(cells):
        return None
    (hx, hy), (lo, hi) = view.CENTRE, FOE_DISTANCE
    offsets = [(dx, dy) for dx in range(-hx, hx + 1) for dy in range(-hy, hy + 1) if lo <= abs(dx) + abs(dy) <= hi]
    w, h = world.area
    for _ in range(STAGE_TRIES):
        px, py = (int(v) for v in cells[rng.integers(len(cells))])
        spots = [(px + dx, py + dy) for dx, dy in offsets
                 if 0 <= px + dx < w and 0 <= py + dy < h and free[px + dx, py + dy]]
        if not spots:
            continue
        if (px, py) != tuple(player.pos):
            world.move(player, (px, py))
        cls = crafter.objects.Zombie if foe == "zombie" else crafter.objects.Skeleton
        staged = cls(world, np.array(spots[rng.integers(len(spots))]), player)
        world.add(staged)
        sword = SWORDS[rng.choice(len(SWORDS), p=SWORD_ODDS)]
        for name in SWORDS[1:]:
            player.inventory[name] = int(name == sword)
        player.inventory["health"] = int(rng.integers(4, 10))
        return staged
    return None
