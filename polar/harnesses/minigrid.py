"""`minigrid:<EnvId>`: MiniGrid and BabyAI grid worlds, with text views and symbolic state."""

from __future__ import annotations

import heapq
import string
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401 - registers the MiniGrid and BabyAI env ids
import numpy as np
from minigrid.core.constants import IDX_TO_COLOR, IDX_TO_OBJECT
from minigrid.minigrid_env import MiniGridEnv

from polar.harnesses.base import Harness, HarnessSpec, StepResult, SymbolicObject, SymbolicState
from polar.harnesses.gym import _first_paragraph, make_gym_env
from polar.harnesses.missions import PORTABLE, parse_mission
from polar.harnesses.spaces import space_to_spec

MISSION_CHARSET = string.ascii_letters + string.digits + " ,.'-_"
DIRECTIONS = ("east", "south", "west", "north")  # MiniGrid's agent_dir 0..3
DIR_VECTORS = ((1, 0), (0, 1), (-1, 0), (0, -1))
_STATE_NAMES = ("open", "closed", "locked")
_CODES = {"unseen": "??", "empty": " .", "wall": "##", "floor": " _", "goal": "GG", "lava": "~~"}
PREDICATE_VOCABULARY = [
    "carrying(TYPE,COLOR)", "facing(TYPE,COLOR)", "next_to(TYPE,COLOR)", "at(goal)",
    "open(door,COLOR)", "closed(door,COLOR)", "locked(door,COLOR)",
    "adjacent(TYPE,COLOR,TYPE,COLOR)", "reachable(TYPE,COLOR)", "reachable(goal)",
    "behind(TYPE,COLOR,OBSTACLE_TYPE,OBSTACLE_COLOR)", "front_clear",
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


def _obj_state(obj: Any) -> str | None:
    if obj.type != "door":
        return None
    return "open" if obj.is_open else ("locked" if obj.is_locked else "closed")


class MiniGridHarness(Harness):
    """`rgb: true` (a harness kwarg) shows the agent's view as pixels (MiniGrid's
    RGBImgPartialObsWrapper, `tile_size` px per cell) instead of the symbolic index grid."""

    def __init__(self, env_id: str, description: str | None = None, rgb: bool = False, tile_size: int = 8,
                 **kwargs: Any) -> None:
        self.env = make_gym_env(env_id, **kwargs)
        if rgb:
            from minigrid.wrappers import RGBImgPartialObsWrapper

            self.env = RGBImgPartialObsWrapper(self.env, tile_size=tile_size)
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
                f"MiniGrid grid world {env_id}. {doc} The agent sees a {img.shape[0]}x{img.shape[1]} "
                "egocentric view (walls block sight); "
                + ("the image is RGB pixels. " if rgb else
                   "the image channels are object type, colour and state indices. ")
                + "Reward 1 - 0.9 * steps / max_steps on success, else 0."
            ),
            observation_space=space_to_spec(self._observation_space),
            action_space=space_to_spec(self.env.action_space),
            action_meanings=[a.name for a in u.actions],
            reward_range=(0.0, 1.0),
            max_steps=int(u.max_steps),
            reports_success=True,
            predicate_vocabulary=PREDICATE_VOCABULARY,
            # How a policy reads `image`: symbolic ids per cell, or pixels (polar/rl/observations.py).
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
            self.env.action_space.seed(seed)
            self._seeded = True
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
        ax, ay = int(u.agent_pos[0]), int(u.agent_pos[1])
        preds: set[str] = set()
        carrying = None
        if u.carrying is not None:
            carrying = {"type": u.carrying.type, "color": u.carrying.color}
            preds.add(f"carrying({u.carrying.type},{u.carrying.color})")
        dx, dy = DIR_VECTORS[u.agent_dir]
        front = by_pos.get((ax + dx, ay + dy))
        if front is not None:
            preds.add("facing(goal)" if front.type == "goal" else f"facing({front.type},{front.color})")
        fx, fy = ax + dx, ay + dy
        if 0 <= fx < u.width and 0 <= fy < u.height and u.grid.get(fx, fy) is None:
            preds.add("front_clear")
        here = by_pos.get((ax, ay))
        if here is not None and here.type == "goal":
            preds.add("at(goal)")
        for vx, vy in DIR_VECTORS:
            nb = by_pos.get((ax + vx, ay + vy))
            if nb is not None and nb.type != "goal":
                preds.add(f"next_to({nb.type},{nb.color})")
        for o in objects:
            if o.type == "door":
                preds.add(f"{o.state}(door,{o.color})")
            if o.type in PORTABLE:
                x, y = o.pos  # type: ignore[misc]
                for vx, vy in DIR_VECTORS:
                    nb = by_pos.get((x + vx, y + vy))
                    if nb is not None and nb.type in PORTABLE:
                        preds.add(f"adjacent({o.type},{o.color},{nb.type},{nb.color})")
        preds |= self._reachable(by_pos, (ax, ay))
        mission = str(u.mission)
        return SymbolicState(
            predicates=sorted(preds),
            goal=parse_mission(mission) or [],
            objects=objects,
            agent={"pos": [ax, ay], "dir": DIRECTIONS[u.agent_dir], "carrying": carrying},
            mission=mission,
        )

    def _reachable(self, by_pos: dict[tuple[int, int], SymbolicObject], start: tuple[int, int]) -> set[str]:
        """`reachable(T,C)` for objects the agent can walk next to (onto, for the goal) now;
        otherwise `behind(T,C,OT,OC)`: OT,OC is the first obstacle (a closed or locked door,
        or an object in the way) on a shortest path to it. Lava is never entered."""
        u = self._grid
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
                if not (0 <= n[0] < u.width and 0 <= n[1] < u.height):
                    continue
                cell = u.grid.get(*n)
                if cell is not None and cell.type in ("wall", "lava"):
                    continue
                obj = by_pos.get(n)
                blocks = obj is not None and (
                    (obj.type == "door" and obj.state != "open") or obj.type in PORTABLE
                )
                nd = d + 1 + (_OBSTACLE_COST if blocks else 0)
                if nd < dist.get(n, 1 << 30):
                    dist[n] = nd
                    first[n] = first[c] if (first[c] is not None or not blocks) else obj
                    heapq.heappush(heap, (nd, n))
        out: set[str] = set()
        for pos, obj in by_pos.items():
            approach = [pos] if obj.type == "goal" else []
            approach += [(pos[0] + vx, pos[1] + vy) for vx, vy in DIR_VECTORS]
            options = [(first[q] is not None, dist[q], q) for q in approach if q in dist and q != pos or
                       (q == pos and obj.type == "goal" and q in dist)]
            if not options:
                continue
            blocked, _, q = min(options, key=lambda t: (t[0], t[1]))
            name = "goal" if obj.type == "goal" else f"{obj.type},{obj.color}"
            if not blocked:
                out.add(f"reachable({name})")
            elif (ob := first[q]) is not None and ob is not obj:
                out.add(f"behind({name},{ob.type},{ob.color})")
        return out

    def render_text(self, obs: dict[str, Any]) -> str:
        """The agent's egocentric view as a grid (agent `^^` at the bottom centre, facing up)
        plus a list of visible objects with their offsets, then the mission."""
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

