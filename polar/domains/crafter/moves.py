"""Moving about Crafter's 9x7 view, shared by the scripted skills (polar.domains.crafter.skills,
.shelter): the four moves, free cells, shortest free paths, walking on, walking up to a thing.

Crafter's player faces a cell by moving towards it: into it when it is free ground, else it
only turns. So walking up to a tree, water or a table and acting on it is a path to a cell
beside it, then one move towards it (a turn) when not already facing it, then `do`.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Any

import numpy as np

from polar.domains.crafter import view
from polar.harnesses.sighting import MemoryView

WALK = view.WALK  # what the player (safely) and zombies walk on
DIRS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # view.FACING order: left, right, up, down
MOVES = ("move_left", "move_right", "move_up", "move_down")
Cell = tuple[int, int]


def inside(sem: np.ndarray, c: Cell) -> bool:
    return 0 <= c[0] < sem.shape[0] and 0 <= c[1] < sem.shape[1]


def free(sem: np.ndarray, d: Cell, where: tuple[str, ...] = WALK) -> bool:
    """The neighbouring cell in direction `d` is ground of `where` with no object on it."""
    cx, cy = view.CENTRE
    mat, obj = sem[cx + d[0], cy + d[1]]
    return view.MATERIALS[int(mat)] in where and int(obj) == 0


def action(name: str) -> int:
    """Crafter's index of an action name."""
    import crafter

    return list(crafter.constants.actions).index(name)


def explore_act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """Walk on: straight ahead while the cell ahead is free ground, else to a free neighbour
    (never into lava or water). The choice among neighbours is drawn from a generator seeded by
    the view, so a run repeats exactly while still leaving dead ends."""
    sem, facing = x["semantic"], int(x["facing"])
    rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(sem.tobytes() + bytes([facing]),
                                                                digest_size=8).digest(), "little"))
    ahead = DIRS[facing]
    if free(sem, ahead) and rng.random() < 0.85:
        return action(MOVES[DIRS.index(ahead)])
    open_ = [d for d in DIRS if free(sem, d)]
    if not open_:  # walled in: dig or cut the cell ahead (stone needs a pickaxe; do is harmless)
        return action("do")
    return action(MOVES[DIRS.index(open_[int(rng.integers(len(open_)))])])


def free_paths(sem: np.ndarray, dig: tuple[str, ...] = ()) -> dict[Cell, tuple[int, Cell | None, Cell | None]]:
    """Breadth-first over free walkable cells from the player: cell -> (steps, first move, last move).
    `dig`: materials the way may also go through (a pickaxe digs stone to path), at a cost of 2
    (dig, then walk): a 0-1-2 breadth-first by rounds keeps it the cheapest way."""
    out: dict[Cell, tuple[int, Cell | None, Cell | None]] = {view.CENTRE: (0, None, None)}
    todo = deque([view.CENTRE])
    while todo:
        c = todo.popleft()
        dist, first, _ = out[c]
        for d in DIRS:
            n = (c[0] + d[0], c[1] + d[1])
            if not inside(sem, n) or int(sem[n][1]) != 0:
                continue
            mat = view.MATERIALS[int(sem[n][0])]
            cost = 1 if mat in WALK else 2 if mat in dig else 0
            if cost and (n not in out or out[n][0] > dist + cost):
                out[n] = (dist + cost, first or d, d)
                todo.append(n)
    return out


def approach_act(x: dict[str, Any], material: str, dig: tuple[str, ...] = ()) -> int:
    """Walk the shortest free way (over grass, sand and path, around creatures) to a cell beside
    the nearest `material` cell in view, face it (a move towards a cell that cannot be walked on
    only turns the player) and `do`; none in view or none reachable: walk on (explore). `dig`:
    materials the way may go through, dug on the way (`do` on the faced cell, then the move)."""
    sem, facing = x["semantic"], int(x["facing"])
    paths = free_paths(sem, dig)
    best = None
    for tx, ty in np.argwhere(sem[..., 0] == view.MATERIALS.index(material)):
        for i, (dx, dy) in enumerate(DIRS):  # stand at the cell - d, facing d
            stand = (int(tx) - dx, int(ty) - dy)
            if stand in paths and (best is None or paths[stand][0] < best[0]):
                best = (paths[stand][0], paths[stand][1], i)
    if best is None:
        return explore_act(x, {})
    dist, first, i = best
    if dist == 0:
        return action("do") if facing == i else action(MOVES[i])
    if dig and not free(sem, first) and DIRS[facing] == first:
        return action("do")  # the way's next cell is to be dug, and the player faces it
    return action(MOVES[DIRS.index(first)])


# --- walking through the agent's memory (polar.agent.memory, with odometry) ----------------


def _passable(memory: MemoryView, cell: Cell, in_view: set[Cell]) -> bool:
    """A remembered cell the player can walk on: grass, sand or path, with no object on it when
    it is in view now (a creature remembered out of view has likely moved on)."""
    code = memory.cells.get(cell)
    if code is None or view.MATERIALS[int(code[0])] not in view.WALK:
        return False
    return int(code[1]) == 0 or cell not in in_view


def walk_to_cells(memory: MemoryView, targets: list[Cell]) -> int | None:
    """The first move of the shortest walk through remembered cells to beside one of `targets`
    (world cells), or None when there are none or none can be reached that way."""
    if not targets:
        return None
    px, py = memory.pose
    in_view = {(px + i - view.CENTRE[0], py + j - view.CENTRE[1]) for i in range(view.VIEW[0]) for j in range(view.VIEW[1])}
    goals = {(t[0] + dx, t[1] + dy) for t in targets for dx, dy in DIRS} | set(targets)
    start = memory.pose
    parent: dict[Cell, Cell | None] = {start: None}
    queue = deque([start])
    while queue:
        c = queue.popleft()
        if c in goals and c != start:
            while parent[c] != start:
                c = parent[c]  # type: ignore[assignment]
            return _move(start, c)
        for dx, dy in DIRS:
            n = (c[0] + dx, c[1] + dy)
            if n not in parent and (_passable(memory, n, in_view) or (n in goals and n in targets)):
                parent[n] = c
                queue.append(n)
    return None


def _move(start: Cell, to: Cell) -> int:
    import crafter

    d = (to[0] - start[0], to[1] - start[1])
    return list(crafter.constants.actions).index(MOVES[DIRS.index(d)])


AREA = (64, 64)  # Crafter's world (crafter.Env's default area, the `crafter:` harness's)


def frontier(memory: MemoryView) -> list[Cell]:
    """Remembered walkable cells next to a cell of the world never seen: where the unknown begins."""
    out = []
    for (cx, cy), code in memory.cells.items():
        if view.MATERIALS[int(code[0])] not in view.WALK:
            continue
        for dx, dy in DIRS:
            n = (cx + dx, cy + dy)
            if 0 <= n[0] < AREA[0] and 0 <= n[1] < AREA[1] and n not in memory.cells:
                out.append((cx, cy))
                break
    return out
