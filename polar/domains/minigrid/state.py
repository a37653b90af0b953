"""MiniGrid's predicates over a grid world (`PREDICATE_VOCABULARY`), from the true grid (the
harness, `polar.domains.minigrid.harness`) or from the agent's memory of the cells it has seen
(`polar.domains.minigrid.memory_reader`): the same code over either."""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable

from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT

from polar.domains.minigrid.missions import PORTABLE, parse_mission
from polar.harnesses.base import SymbolicObject, SymbolicState

DIRECTIONS = ("east", "south", "west", "north")  # MiniGrid's agent_dir 0..3
DIR_VECTORS = ((1, 0), (0, 1), (-1, 0), (0, -1))
_STATE_NAMES = ("open", "closed", "locked")
_CODES = {"unseen": "??", "empty": " .", "wall": "##", "floor": " _", "goal": "GG", "lava": "~~"}
# An object is `TYPE,COLOR`; where a type and colour repeat in the world, each such object's
# predicates also appear with `TYPE,COLOR,X,Y` (its position), e.g. `locked(door,green,4,5)`.
PREDICATE_VOCABULARY = [
    "carrying(TYPE,COLOR)", "facing(TYPE,COLOR)", "next_to(TYPE,COLOR)", "at(goal)",
    "open(door,COLOR)", "closed(door,COLOR)", "locked(door,COLOR)",
    "adjacent(TYPE,COLOR,TYPE,COLOR)", "reachable(TYPE,COLOR)", "reachable(goal)",
    "behind(TYPE,COLOR,OBSTACLE_TYPE,OBSTACLE_COLOR)", "in_way(TYPE,COLOR)", "front_clear",
    "drop_cuts(TYPE,COLOR)", "front_free",
]
_OBSTACLE_COST = 100


def _cell_code(obj_idx: int, color_idx: int, state_idx: int) -> str:
    name = IDX_TO_OBJECT[obj_idx]
    if name in _CODES:
        return _CODES[name]
    if name == "agent":
        return "@@"
    letter = {"key": "K", "ball": "A", "box": "B", "door": "D"}.get(name, "?")
    if name == "door":
        letter = {"open": "d", "closed": "D", "locked": "L"}[_STATE_NAMES[state_idx]]
    return letter + IDX_TO_COLOR[color_idx][0].upper()


def _blocks(obj: SymbolicObject) -> bool:
    """Whether an object stops the agent from walking through its cell."""
    return (obj.type == "door" and obj.state != "open") or obj.type in PORTABLE


def _references(objects: list[SymbolicObject], carrying: tuple[str, str] | None) -> dict[int, list[str]]:
    """How predicates name each object (keyed by `id`): `type,color` (the goal: `goal`), and,
    where that type and colour repeat in the world (KeyCorridor's doors), also
    `type,color,x,y`, its position, so a planner can say which of them it means."""
    kinds = Counter((o.type, o.color) for o in objects)
    if carrying is not None:
        kinds[carrying] += 1
    refs: dict[int, list[str]] = {}
    for o in objects:
        if o.type == "goal":
            refs[id(o)] = ["goal"]
            continue
        refs[id(o)] = [f"{o.type},{o.color}"]
        if kinds[(o.type, o.color)] > 1:
            refs[id(o)].append(f"{o.type},{o.color},{o.pos[0]},{o.pos[1]}")  # type: ignore[index]
    return refs


Cell = tuple[int, int]


def grid_state(objects: list[SymbolicObject], walkable: Callable[[Cell], bool], empty: Callable[[Cell], bool],
               pos: Cell, direction: int, carrying: tuple[str, str] | None, mission: str) -> SymbolicState:
    """The predicates of `PREDICATE_VOCABULARY` over a grid world: its objects (not walls or
    floor), which cells can be walked on, which are empty, the agent's pose and carried
    object. The harness calls it with the true grid, the agent's memory
    (`polar.domains.minigrid.memory_reader`) with the cells it has seen."""
    by_pos = {o.pos: o for o in objects}
    refs = _references(objects, carrying)
    ax, ay = pos
    preds: set[str] = set()

    def add(name: str, *objs: SymbolicObject) -> None:
        """`name(...)` over every spelling of the objects' references (see `_references`)."""
        for combo in itertools.product(*(refs[id(o)] for o in objs)):
            preds.add(f"{name}({','.join(combo)})")

    if carrying is not None:
        preds.add(f"carrying({carrying[0]},{carrying[1]})")
    dx, dy = DIR_VECTORS[direction]
    fx, fy = ax + dx, ay + dy
    if (front := by_pos.get((fx, fy))) is not None:
        add("facing", front)
    here = by_pos.get((ax, ay))
    if here is not None and here.type == "goal":
        preds.add("at(goal)")
    for vx, vy in DIR_VECTORS:
        nb = by_pos.get((ax + vx, ay + vy))
        if nb is not None and nb.type != "goal":
            add("next_to", nb)
    for o in objects:
        if o.type == "door":
            add(o.state, o)  # type: ignore[arg-type]
        if o.type in PORTABLE:
            x, y = o.pos  # type: ignore[misc]
            for vx, vy in DIR_VECTORS:
                nb = by_pos.get((x + vx, y + vy))
                if nb is not None and nb.type in PORTABLE:
                    add("adjacent", o, nb)
    reach = reach_objects(by_pos, (ax, ay), walkable)
    for o, obstacle in reach:
        if obstacle is None:
            add("reachable", o)
        else:
            add("behind", o, obstacle)
            add("in_way", obstacle)
    if empty((fx, fy)):
        preds.add("front_clear")
        cut = _cut_off(by_pos, (ax, ay), (fx, fy), [o for o, ob in reach if ob is None], walkable)
        for o in cut:
            add("drop_cuts", o)
        if not cut:
            preds.add("front_free")
    return SymbolicState(
        predicates=sorted(preds),
        goal=parse_mission(mission) or [],
        objects=objects,
        agent={"pos": [ax, ay], "dir": DIRECTIONS[direction],
               "carrying": None if carrying is None else {"type": carrying[0], "color": carrying[1]}},
        mission=mission,
    )


def _approach(obj: SymbolicObject) -> list[Cell]:
    """The cells from which the agent reaches an object: next to it, or on it (the goal)."""
    x, y = obj.pos  # type: ignore[misc]
    return ([(x, y)] if obj.type == "goal" else []) + [(x + vx, y + vy) for vx, vy in DIR_VECTORS]


def reach_objects(by_pos: dict[Cell, SymbolicObject], start: Cell, walkable: Callable[[Cell], bool],
                  ) -> list[tuple[SymbolicObject, SymbolicObject | None]]:
    """Every object the agent can get to, mapped to None when it can walk next to it (onto
    it, for the goal) now, else to the first obstacle (a closed or locked door, or an
    object in the way) on a cheapest path to it. Lava is never entered."""
    # Dijkstra where entering an obstacle costs extra, so a path around objects is
    # preferred to one through them.
    first: dict[Cell, SymbolicObject | None] = {start: None}
    dist = {start: 0}
    heap = [(0, start)]
    while heap:
        d, c = heapq.heappop(heap)
        if d > dist[c]:
            continue
        for vx, vy in DIR_VECTORS:
            n = (c[0] + vx, c[1] + vy)
            if not walkable(n):
                continue
            obj = by_pos.get(n)
            blocks = obj is not None and _blocks(obj)
            nd = d + 1 + (_OBSTACLE_COST if blocks else 0)
            if nd < dist.get(n, 1 << 30):
                dist[n] = nd
                first[n] = first[c] if (first[c] is not None or not blocks) else obj
                heapq.heappush(heap, (nd, n))
    out: list[tuple[SymbolicObject, SymbolicObject | None]] = []
    for pos, obj in by_pos.items():
        options = [(first[q] is not None, dist[q], q) for q in _approach(obj)
                   if q in dist and (q != pos or obj.type == "goal")]
        if not options:
            continue
        blocked, _, q = min(options, key=lambda t: (t[0], t[1]))
        if not blocked:
            out.append((obj, None))
        elif (ob := first[q]) is not None and ob is not obj:
            out.append((obj, ob))
    return out


def _cut_off(by_pos: dict[Cell, SymbolicObject], start: Cell, filled: Cell, targets: list[SymbolicObject],
             walkable: Callable[[Cell], bool]) -> list[SymbolicObject]:
    """The objects of `targets` the agent could no longer reach with an object on `filled`."""
    seen, queue = {start}, [start]
    while queue:
        c = queue.pop()
        for vx, vy in DIR_VECTORS:
            n = (c[0] + vx, c[1] + vy)
            if n in seen or n == filled or not walkable(n):
                continue
            if (obj := by_pos.get(n)) is not None and _blocks(obj):
                continue
            seen.add(n)
            queue.append(n)
    return [o for o in targets if not any(q in seen for q in _approach(o))]
