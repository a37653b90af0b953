"""`minigrid:<EnvId>`: MiniGrid and BabyAI grid worlds, with text views and symbolic state."""

from __future__ import annotations

import contextlib
import heapq
import io
import itertools
import string
from collections import Counter
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


def _references(objects: list[SymbolicObject], carrying: Any) -> dict[int, list[str]]:
    """How predicates name each object (keyed by `id`): `type,color` (the goal: `goal`), and,
    where that type and colour repeat in the world (KeyCorridor's doors), also
    `type,color,x,y`, its position, so a planner can say which of them it means."""
    kinds = Counter((o.type, o.color) for o in objects)
    if carrying is not None:
        kinds[(carrying.type, carrying.color)] += 1
    refs: dict[int, list[str]] = {}
    for o in objects:
        if o.type == "goal":
            refs[id(o)] = ["goal"]
            continue
        refs[id(o)] = [f"{o.type},{o.color}"]
        if kinds[(o.type, o.color)] > 1:
            refs[id(o)].append(f"{o.type},{o.color},{o.pos[0]},{o.pos[1]}")  # type: ignore[index]
    return refs


class MiniGridHarness(Harness):
    """`full_grid: true` (a harness kwarg) shows the whole grid (MiniGrid's FullyObsWrapper:
    object, colour, state per cell, the agent as an object whose state is its direction)
    instead of the agent's 7x7 egocentric view: the `full` observation of pure-RL controls.
    `rgb: true` shows the agent's view as pixels (MiniGrid's RGBImgPartialObsWrapper,
    `tile_size` px per cell) instead of the symbolic index grid. `fast_obs: false` keeps
    MiniGrid's own observation encoding (the default one-pass encoding gives the same arrays,
    `polar/harnesses/minigrid_obs.py`)."""

    def __init__(self, env_id: str, description: str | None = None, full_grid: bool = False, rgb: bool = False,
                 tile_size: int = 8, fast_obs: bool = True, **kwargs: Any) -> None:
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
        u = self.env.unwrapped
        if not isinstance(u, MiniGridEnv):
            raise TypeError(f"{env_id} is not a MiniGrid environment")
        self._seeded = False
        img = self.env.observation_space["image"]
        self._observation_space = gym.spaces.Dict({
            "image": img,
            "direction": gym.spaces.Discrete(4),
            "mission": gym.spaces.Text(max_length=512, charset=MISSION_CHARSET),
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
            # How a policy reads `image`: symbolic ids per cell, or pixels (polar/rl/common/observations.py).
            extra={"observation_kinds": {"image": "image" if rgb else "index_grid"}},
        )

    @property
    def _grid(self) -> MiniGridEnv:
        return self.env.unwrapped

    def capabilities(self) -> set[str]:
        return {"grid"}

    def capability(self, name: str) -> Any:
        """`"grid"`: the underlying MiniGridEnv (full grid, agent pose, carried object), for
        skills that read more than the agent's partial view."""
        return self._grid if name == "grid" else super().capability(name)

    @property
    def observation_space(self) -> gym.Space:
        return self._observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.env.action_space

    def _obs(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {"image": obs["image"], "direction": int(obs["direction"]), "mission": str(obs["mission"])}

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
        by_pos: dict[tuple[int, int], SymbolicObject] = {}
        for j in range(u.height):
            for i in range(u.width):
                obj = u.grid.get(i, j)
                if obj is None or obj.type in ("wall", "empty", "floor"):
                    continue
                so = SymbolicObject(type=obj.type, color=obj.color, pos=(i, j), state=_obj_state(obj))
                objects.append(so)
                by_pos[(i, j)] = so
        refs = _references(objects, u.carrying)
        ax, ay = int(u.agent_pos[0]), int(u.agent_pos[1])
        preds: set[str] = set()

        def add(name: str, *objs: SymbolicObject) -> None:
            """`name(...)` over every spelling of the objects' references (see `_references`)."""
            for combo in itertools.product(*(refs[id(o)] for o in objs)):
                preds.add(f"{name}({','.join(combo)})")

        carrying = None
        if u.carrying is not None:
            carrying = {"type": u.carrying.type, "color": u.carrying.color}
            preds.add(f"carrying({u.carrying.type},{u.carrying.color})")
        dx, dy = DIR_VECTORS[u.agent_dir]
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
        reach = self._reach(by_pos, (ax, ay))
        for o, obstacle in reach:
            if obstacle is None:
                add("reachable", o)
            else:
                add("behind", o, obstacle)
                add("in_way", obstacle)
        if 0 <= fx < u.width and 0 <= fy < u.height and u.grid.get(fx, fy) is None:
            preds.add("front_clear")
            cut = self._cut_off(by_pos, (ax, ay), (fx, fy), [o for o, ob in reach if ob is None])
            for o in cut:
                add("drop_cuts", o)
            if not cut:
                preds.add("front_free")
        mission = str(u.mission)
        return SymbolicState(
            predicates=sorted(preds),
            goal=parse_mission(mission) or [],
            objects=objects,
            agent={"pos": [ax, ay], "dir": DIRECTIONS[u.agent_dir], "carrying": carrying},
            mission=mission,
        )

    def _walkable(self, cell: tuple[int, int]) -> bool:
        u = self._grid
        if not (0 <= cell[0] < u.width and 0 <= cell[1] < u.height):
            return False
        obj = u.grid.get(*cell)
        return obj is None or obj.type not in ("wall", "lava")

    @staticmethod
    def _approach(obj: SymbolicObject) -> list[tuple[int, int]]:
        """The cells from which the agent reaches an object: next to it, or on it (the goal)."""
        x, y = obj.pos  # type: ignore[misc]
        return ([(x, y)] if obj.type == "goal" else []) + [(x + vx, y + vy) for vx, vy in DIR_VECTORS]

    def _reach(self, by_pos: dict[tuple[int, int], SymbolicObject],
               start: tuple[int, int]) -> list[tuple[SymbolicObject, SymbolicObject | None]]:
        """Every object the agent can get to, mapped to None when it can walk next to it (onto
        it, for the goal) now, else to the first obstacle (a closed or locked door, or an
        object in the way) on a cheapest path to it. Lava is never entered."""
        # Dijkstra where entering an obstacle costs extra, so a path around objects is
        # preferred to one through them.
        first: dict[tuple[int, int], SymbolicObject | None] = {start: None}
        dist = {start: 0}
        heap = [(0, start)]
        while heap:
            d, c = heapq.heappop(heap)
            if d > dist[c]:
                continue
            for vx, vy in DIR_VECTORS:
                n = (c[0] + vx, c[1] + vy)
                if not self._walkable(n):
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
            options = [(first[q] is not None, dist[q], q) for q in self._approach(obj)
                       if q in dist and (q != pos or obj.type == "goal")]
            if not options:
                continue
            blocked, _, q = min(options, key=lambda t: (t[0], t[1]))
            if not blocked:
                out.append((obj, None))
            elif (ob := first[q]) is not None and ob is not obj:
                out.append((obj, ob))
        return out

    def _cut_off(self, by_pos: dict[tuple[int, int], SymbolicObject], start: tuple[int, int],
                 filled: tuple[int, int], targets: list[SymbolicObject]) -> list[SymbolicObject]:
        """The objects of `targets` the agent could no longer reach with an object on `filled`."""
        seen, queue = {start}, [start]
        while queue:
            c = queue.pop()
            for vx, vy in DIR_VECTORS:
                n = (c[0] + vx, c[1] + vy)
                if n in seen or n == filled or not self._walkable(n):
                    continue
                if (obj := by_pos.get(n)) is not None and _blocks(obj):
                    continue
                seen.add(n)
                queue.append(n)
        return [o for o in targets if not any(q in seen for q in self._approach(o))]

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

