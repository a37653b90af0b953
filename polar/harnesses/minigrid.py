"""`minigrid:<EnvId>`: MiniGrid and BabyAI grid worlds, with text views and symbolic state."""

from __future__ import annotations

import contextlib
import heapq
import io
import itertools
import string
from collections import Counter
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401 - registers the MiniGrid and BabyAI env ids
import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT
from minigrid.envs import GoToDoorEnv, GoToObjectEnv
from minigrid.minigrid_env import MiniGridEnv

from polar.errors import ConfigError
from polar.harnesses import minigrid_obs
from polar.harnesses.base import Harness, HarnessSpec, StepResult, SymbolicObject, SymbolicState
from polar.harnesses.gym import _first_paragraph, make_gym_env
from polar.harnesses.missions import PORTABLE, parse_mission
from polar.harnesses.spaces import HARNESS_SAMPLER, sampler_seed, space_to_spec

MISSION_CHARSET = string.ascii_letters + string.digits + " ,.'-_"
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
# The envs that reward only the `done` action taken next to the target (their own `step`):
# reaching the target is not yet success there, declaring it is.
DONE_TO_SUCCEED = (GoToDoorEnv, GoToObjectEnv)


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


def _obj_state(obj: Any) -> str | None:
    if obj.type != "door":
        return None
    return "open" if obj.is_open else ("locked" if obj.is_locked else "closed")


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
    (`polar.harnesses.minigrid_memory`) with the cells it has seen."""
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


class MiniGridHarness(Harness):
    """`full_grid: true` (a harness kwarg) shows the whole grid (MiniGrid's FullyObsWrapper:
    object, colour, state per cell, the agent as an object whose state is its direction)
    instead of the agent's 7x7 egocentric view: the `full` observation of pure-RL controls.
    `odometry: true` adds the agent's own pose to each observation (`agent_pos`, and
    `agent_dir`, the same as `direction`): odometry a robot has, and what the agent's memory
    of what it has seen needs to place the view on a map (`capability("memory_reader")`,
    `polar/harnesses/minigrid_memory.py`, docs/memory.md); no grid is read for it.
    `rgb: true` shows the agent's view as pixels (MiniGrid's RGBImgPartialObsWrapper,
    `tile_size` px per cell) instead of the symbolic index grid. `fast_obs: false` keeps
    MiniGrid's own observation encoding (the default one-pass encoding gives the same arrays,
    `polar/harnesses/minigrid_obs.py`)."""

    def __init__(self, env_id: str, description: str | None = None, full_grid: bool = False, rgb: bool = False,
                 tile_size: int = 8, fast_obs: bool = True, odometry: bool = False, **kwargs: Any) -> None:
        if full_grid and rgb:
            raise ConfigError(f"{env_id}: full_grid and rgb together are not offered (pick one)")
        self.env = make_gym_env(env_id, **kwargs)
        if fast_obs:  # the same observations, encoded in one pass (polar/harnesses/minigrid_obs.py)
            minigrid_obs.install(self.env.unwrapped)
        if full_grid:
            from minigrid.wrappers import FullyObsWrapper

            self.env = (minigrid_obs.FastFullyObsWrapper if fast_obs else FullyObsWrapper)(self.env)
        if rgb:
            from minigrid.wrappers import RGBImgPartialObsWrapper

            self.env = RGBImgPartialObsWrapper(self.env, tile_size=tile_size)
        self.full_grid = full_grid
        self.odometry = odometry
        self._reads_view = odometry and not (full_grid or rgb)  # the memory reads the index view
        u = self.env.unwrapped
        if not isinstance(u, MiniGridEnv):
            raise TypeError(f"{env_id} is not a MiniGrid environment")
        self._seeded = False
        img = self.env.observation_space["image"]
        self._observation_space = gym.spaces.Dict({
            "image": img,
            "direction": gym.spaces.Discrete(4),
            "mission": gym.spaces.Text(max_length=512, charset=MISSION_CHARSET),
            **({"agent_pos": gym.spaces.MultiDiscrete([u.width, u.height]), "agent_dir": gym.spaces.Discrete(4)}
               if odometry else {}),
        })
        doc = _first_paragraph(type(u).__doc__)
        self.spec = HarnessSpec(
            id=f"minigrid:{env_id}",
            description=description or (
                f"MiniGrid grid world {env_id}. {doc} "
                + (f"The agent sees the whole {img.shape[0]}x{img.shape[1]} grid (itself as an object "
                   "whose state is its direction); " if full_grid else
                   f"The agent sees a {img.shape[0]}x{img.shape[1]} egocentric view (walls block sight); ")
                + ("the image is RGB pixels. " if rgb else
                   "the image channels are object type, colour and state indices. ")
                + ("agent_pos (x right, y down) and agent_dir (0 east .. 3 north) are the agent's own pose "
                   "(odometry). " if odometry else "")
                + "Reward 1 - 0.9 * steps / max_steps on success, else 0."
            ),
            observation_space=space_to_spec(self._observation_space),
            action_space=space_to_spec(self.env.action_space),
            action_meanings=[a.name for a in u.actions],
            reward_range=(0.0, 1.0),
            # BabyAI's generated levels set their step limit per mission, at reset (0 before):
            # no fixed limit then, the env truncates its own episodes.
            max_steps=int(u.max_steps) or None,
            reports_success=True,  # info["success"]: the episode ended with a positive reward
            reward_marks_success=True,
            done_action="done" if isinstance(u, DONE_TO_SUCCEED) else None,
            predicate_vocabulary=PREDICATE_VOCABULARY,
            # How a policy reads `image`: symbolic ids per cell, or pixels (polar/rl/observations.py).
            extra={"observation_kinds": {"image": "image" if rgb else "index_grid"}},
        )

    @property
    def _grid(self) -> MiniGridEnv:
        return self.env.unwrapped

    def capabilities(self) -> set[str]:
        return {"grid", "memory_reader"} if self._reads_view else {"grid"}

    def capability(self, name: str) -> Any:
        """`"grid"`: the underlying MiniGridEnv (full grid, agent pose, carried object), for
        skills that read more than the agent's partial view. `"memory_reader"` (with
        `odometry`): how one observation reads into world cells, for the agent's memory; a
        function of the observation alone, it reads no simulator state."""
        if name == "memory_reader" and self._reads_view:
            from polar.harnesses.minigrid_memory import READER

            return READER
        return self._grid if name == "grid" else super().capability(name)

    @property
    def observation_space(self) -> gym.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.env.action_space

    def _obs(self, obs: dict[str, Any]) -> dict[str, Any]:
        out = {"image": obs["image"], "direction": int(obs["direction"]), "mission": str(obs["mission"])}
        if self.odometry:  # the agent's own pose, as odometry gives it
            u = self._grid
            out["agent_pos"] = np.array([int(u.agent_pos[0]), int(u.agent_pos[1])], dtype=np.int64)
            out["agent_dir"] = int(u.agent_dir)
        return out

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None and not self._seeded:
            self.env.action_space.seed(sampler_seed(seed, HARNESS_SAMPLER))  # not the game's stream
            self._seeded = True
        with contextlib.redirect_stdout(io.StringIO()):  # BabyAI's level generator prints its retries
            obs, info = self.env.reset(seed=seed, options=options)
        return self._obs(obs), info

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["success"] = bool(terminated and reward > 0)
        return self._obs(obs), float(reward), terminated, truncated, info

    def close(self) -> None:
        self.env.close()

    # --- planner views -------------------------------------------------------------------

    def symbolic_state(self) -> SymbolicState:
        u = self._grid
        objects: list[SymbolicObject] = []
        for j in range(u.height):
            for i in range(u.width):
                obj = u.grid.get(i, j)
                if obj is None or obj.type in ("wall", "empty", "floor"):
                    continue
                objects.append(SymbolicObject(type=obj.type, color=obj.color, pos=(i, j), state=_obj_state(obj)))
        carrying = None if u.carrying is None else (u.carrying.type, u.carrying.color)

        def empty(cell: tuple[int, int]) -> bool:
            return 0 <= cell[0] < u.width and 0 <= cell[1] < u.height and u.grid.get(*cell) is None

        return grid_state(objects, self._walkable, empty, (int(u.agent_pos[0]), int(u.agent_pos[1])),
                          int(u.agent_dir), carrying, str(u.mission))

    def _walkable(self, cell: tuple[int, int]) -> bool:
        u = self._grid
        if not (0 <= cell[0] < u.width and 0 <= cell[1] < u.height):
            return False
        obj = u.grid.get(*cell)
        return obj is None or obj.type not in ("wall", "lava")

    def render_text(self, obs: dict[str, Any]) -> str:
        """The agent's egocentric view as a grid (agent `^^` at the bottom centre, facing up)
        plus a list of visible objects with their offsets, then the mission. With `full_grid`,
        the whole grid (x to the right, y down) with the agent as an arrow."""
        if self.full_grid:
            return self._render_full(obs)
        img = np.asarray(obs["image"])
        w, h = img.shape[0], img.shape[1]
        ax, ay = w // 2, h - 1
        rows, seen = [], []
        for j in range(h):
            cells = []
            for i in range(w):
                if (i, j) == (ax, ay):
                    cells.append("^^")
                    continue
                o, c, s = (int(v) for v in img[i, j])
                cells.append(_cell_code(o, c, s))
                name = IDX_TO_OBJECT[o]
                if name in ("key", "ball", "box", "door", "goal", "lava"):
                    ahead, right = ay - j, i - ax
                    where = [f"{ahead} ahead"] if ahead else []
                    if right:
                        where.append(f"{abs(right)} {'right' if right > 0 else 'left'}")
                    label = name if name in ("goal", "lava") else f"{IDX_TO_COLOR[c]} {name}"
                    if name == "door":
                        label += f" ({_STATE_NAMES[s]})"
                    seen.append(f"{label}: {', '.join(where) or 'here'}")
            rows.append(" ".join(cells))
        u = self._grid
        carrying = f"{u.carrying.color} {u.carrying.type}" if u.carrying else "nothing"
        lines = [
            "View (you are ^^ facing up; ## wall, . empty, K key, A ball, B box, D door, "
            "d open door, L locked door, GG goal, ~~ lava; second letter = colour initial):",
            *rows,
            "Visible: " + ("; ".join(seen) if seen else "nothing"),
            f"Facing: {DIRECTIONS[int(obs['direction'])]}. Carrying: {carrying}.",
            f"Mission: {obs['mission']}",
        ]
        return "\n".join(lines)

    def _render_full(self, obs: dict[str, Any]) -> str:
        img = np.asarray(obs["image"])
        arrows = (">>", "vv", "<<", "^^")
        rows = [" ".join(arrows[int(img[i, j, 2]) % 4] if IDX_TO_OBJECT[int(img[i, j, 0])] == "agent"
                         else _cell_code(*(int(v) for v in img[i, j])) for i in range(img.shape[0]))
                for j in range(img.shape[1])]
        u = self._grid
        carrying = f"{u.carrying.color} {u.carrying.type}" if u.carrying else "nothing"
        return "\n".join([
            "Grid (x right, y down; you are the arrow; ## wall, . empty, K key, A ball, B box, "
            "D door, d open door, L locked door, GG goal, ~~ lava; second letter = colour initial):",
            *rows, f"Carrying: {carrying}.", f"Mission: {obs['mission']}",
        ])

