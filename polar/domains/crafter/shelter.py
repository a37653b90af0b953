"""`shelter`: a scripted skill that walls the player in for the night and sleeps until it is no
longer dark (the `dark` predicate: dusk to early morning) and energy is full, then opens the
door. Scripted, not learnt (like `hunt_cow`).

Why a two-cell tunnel: Crafter's player faces a cell only by moving towards it, and a move
towards a free cell walks onto it; so a free neighbouring cell can be faced (and a stone placed
on it) only by arriving from the opposite side. A one-cell enclosure can therefore never be
closed from inside. Two cells in a line, P then Q, entered from E (E -> P -> Q in direction e),
can: arriving at Q faces the cell beyond it, B (placed if open), and stepping back to P faces E
(placed: the door). The four side cells of P and Q must already be walls, so sites are sought
where the world gives them: a tunnel dug into stone (digging needs a wood pickaxe and gives the
stone the closing needs), or a corridor between trees, water or stone.

Zombies walk only on grass, sand and path and hit from an orthogonally neighbouring cell;
creatures spawn at least 6 cells from the player. So a player whose walkable region (cells
4-connected to it over grass, sand and path) does not reach the view's border is safe from
both: `view.enclosed`, the harness's `sheltered` predicate.

Everything is read from the observation (the 9x7 view, facing, inventory, vitals, daylight);
the policy keeps no state: each step it re-plans the cheapest site from where the player stands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polar.domains.crafter import view
from polar.domains.crafter.moves import DIRS, MOVES, WALK, Cell, action, explore_act, free_paths
from polar.domains.crafter.state import DARK, MAX_VITAL

# Cells a zombie cannot enter and that stay put (lava too, but a misstep into it kills: not used)
WALLS = ("none", "water", "stone", "tree", "coal", "iron", "diamond", "table", "furnace")
PLACE_STONE_ON = ("grass", "sand", "path", "water", "lava")  # Crafter's place.stone.where


def _mat(sem: np.ndarray, c: Cell) -> str:
    if not (0 <= c[0] < sem.shape[0] and 0 <= c[1] < sem.shape[1]):
        return "outside"
    return view.MATERIALS[int(sem[c][0])]


def _obj(sem: np.ndarray, c: Cell) -> str:
    return view.OBJECTS[int(sem[c][1])]


def _add(c: Cell, d: Cell, k: int = 1) -> Cell:
    return c[0] + k * d[0], c[1] + k * d[1]


def _site_actions(sem: np.ndarray, at: str, facing: Cell, e: Cell, cells: dict[str, str]) -> list[str] | None:
    """The actions that finish the site from the player at `at` (E, P or Q) facing `facing`;
    None when they cannot from there. `cells`: P's and Q's kind ('free' or 'dig'), B's
    ('wall' or 'fill')."""
    move, back = MOVES[DIRS.index(e)], MOVES[DIRS.index((-e[0], -e[1]))]
    out: list[str] = []

    def enter(kind: str) -> None:  # into the next cell along e, facing e on arrival
        nonlocal facing
        if kind == "dig":
            if facing != e:
                out.append(move)  # the cell is stone: a move only turns the player
            out.append("do")
        out.append(move)
        facing = e

    if at == "E":
        enter(cells["P"])
        at = "P"
    if at == "P":
        if facing == (-e[0], -e[1]) and cells["B"] == "wall" and cells["Q"] == "free":
            return ["place_stone"]  # back from Q: the door
        enter(cells["Q"])
        at = "Q"
    if facing != e and cells["B"] == "fill":
        return None  # facing B would walk onto it
    if facing == e and cells["B"] == "fill":
        out.append("place_stone")
    return [*out, back, "place_stone"]


def _site(sem: np.ndarray, E: Cell, e: Cell, pickaxe: bool) -> dict[str, str] | None:
    """P, Q and B's kinds for the tunnel E -> P -> Q along e, or None when it is no site: the
    side cells of P and Q must be walls, P and Q free ground (or stone, with a pickaxe), B a
    wall or a cell a stone can be placed on."""
    P, Q, B = _add(E, e), _add(E, e, 2), _add(E, e, 3)
    u = (e[1], e[0])
    if any(_mat(sem, _add(c, u, s)) not in WALLS for c in (P, Q) for s in (1, -1)):
        return None
    kinds = {}
    for name, c in (("P", P), ("Q", Q)):
        mat, obj = _mat(sem, c), _obj(sem, c)
        if mat in WALK and obj in ("none", "player"):
            kinds[name] = "free"
        elif mat == "stone" and pickaxe:
            kinds[name] = "dig"
        else:
            return None
    mat = _mat(sem, B)
    if mat in WALLS:
        kinds["B"] = "wall"
    elif mat in PLACE_STONE_ON and _obj(sem, B) == "none":
        kinds["B"] = "fill"
    else:
        return None
    return kinds


def plan(sem: np.ndarray, facing: int, stone: int, pickaxe: bool) -> tuple[int, str] | None:
    """(cost, first action) of the cheapest site in view from where the player stands, or None."""
    paths = free_paths(sem)
    here, face = view.CENTRE, DIRS[facing]
    best: tuple[int, str] | None = None
    w, h = sem.shape[:2]
    for x in range(w):
        for y in range(h):
            for e in DIRS:
                E = (x, y)
                if _mat(sem, E) not in WALK:
                    continue
                kinds = _site(sem, E, e, pickaxe)
                if kinds is None:
                    continue
                # stones: the door and an open B; digging P and Q gives one each
                need = 1 + (kinds["B"] == "fill") - (kinds["P"] == "dig") - (kinds["Q"] == "dig")
                if stone < need:
                    continue
                P, Q = _add(E, e), _add(E, e, 2)
                if here in (E, P, Q):
                    at = "EPQ"[(E, P, Q).index(here)]
                    acts = _site_actions(sem, at, face, e, kinds)
                    cost = None if acts is None else (len(acts), acts[0])
                elif E in paths and _obj(sem, E) == "none":
                    dist, first, last = paths[E]
                    acts = _site_actions(sem, "E", last or face, e, kinds)
                    cost = None if acts is None or first is None else (dist + len(acts), MOVES[DIRS.index(first)])
                else:
                    cost = None
                if cost is not None and (best is None or cost[0] < best[0]):
                    best = cost
    return best


def features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, Any]:
    """The shelter's input: the view, facing, the stone and pickaxe held, energy, daylight, sleep."""
    inv = np.asarray(obs["inventory"])
    return {"semantic": np.asarray(obs["semantic"]), "facing": int(obs["facing"]),
            "stone": int(inv[view.ITEMS.index("stone")]),
            "pickaxe": bool(inv[view.ITEMS.index("wood_pickaxe")] > 0),
            "energy": int(np.asarray(obs["vitals"])[view.VITALS.index("energy")]),
            "dark": float(np.asarray(obs["daylight"]).reshape(-1)[0]) < DARK,
            "sleeping": bool(int(obs["sleeping"]))}


def _door(sem: np.ndarray, facing: int) -> str:
    """Inside, morning: dig out through the faced stone (the door placed last), else turn to a
    stone neighbour with walkable ground beyond it (a move towards stone only turns)."""
    c = view.CENTRE
    ahead = _add(c, DIRS[facing])
    if _mat(sem, ahead) == "stone" and _mat(sem, _add(ahead, DIRS[facing])) in WALK:
        return "do"
    region = view.walkable_region(sem)
    for i, d in enumerate(DIRS):
        n = _add(c, d)
        if _mat(sem, n) == "stone" and _mat(sem, _add(n, d)) in WALK and _add(n, d) not in region:
            return MOVES[i]
    return "do" if _mat(sem, ahead) == "stone" else "noop"


def act(x: dict[str, Any], args: dict[str, Any]) -> int:
    """One step of `shelter`: sealed in, sleep while it is dark (and until energy is full), then
    open the door; outside, work towards the cheapest site in view, else towards stone."""
    sem, facing = x["semantic"], int(x["facing"])
    if view.enclosed(sem):
        if x["dark"] or x["sleeping"] or x["energy"] < MAX_VITAL:
            return action("sleep")
        return action(_door(sem, facing))
    best = plan(sem, facing, int(x["stone"]), bool(x["pickaxe"]))
    if best is None:
        step = _towards_stone(sem, facing)
        return action(step) if step is not None else explore_act(x, args)
    ahead = _add(view.CENTRE, DIRS[facing])
    if best[1] == "place_stone" and _obj(sem, ahead) != "none":
        return action("do")  # a creature stands where the stone goes: hit it (a zombie leaves)
    return action(best[1])


def _towards_stone(sem: np.ndarray, facing: int) -> str | None:
    """No site in view: the first move to the free cell next to the nearest stone (where tunnels
    can be dug), or digging into it from there; None when no stone is in view."""
    paths = free_paths(sem)
    stones = [(x, y) for x in range(sem.shape[0]) for y in range(sem.shape[1]) if _mat(sem, (x, y)) == "stone"]
    best = None
    for s in stones:
        for i, d in enumerate(DIRS):
            stand = _add(s, (-d[0], -d[1]))
            if stand in paths and (best is None or paths[stand][0] < best[0]):
                best = (paths[stand][0], paths[stand][1], i)
    if best is None:
        return None
    dist, first, i = best
    if dist == 0:  # beside it: face it (a move towards stone turns) and dig in
        return "do" if facing == i else MOVES[i]
    return MOVES[DIRS.index(first)]
