"""The `goto(object, color)` MiniGrid skill: its observation features and its training env.

The skill sees the *full* grid (a planner knows the symbolic state anyway, and MiniGrid's
7x7 partial view would turn navigation into exploration), but through an egocentric,
rotated crop around the agent, so one small network serves every grid size:

- `grid`: uint8 [K, K, 4] crop centred on the agent, rotated so the agent faces "up" (row
  0 is ahead). Channels: MiniGrid object id, colour id, state id, and a target mask (1 where
  the cell holds an object matching the arguments). Cells outside the grid read as walls.
- `target`: float32 [TARGET_DIM]: one-hot object type, one-hot colour (+ "any colour"),
  the nearest matching object's offset in the agent's frame (ahead, right) scaled by
  `REL_SCALE` and clipped to [-1, 1], its Manhattan distance (scaled, clipped), a flag
  "target outside the crop" and a flag "no matching object exists".

Success (the skill's termination): facing a matching object in the cell ahead, or, for
`goal`, standing on a goal cell. The policy only uses MiniGrid's actions 0..2 (left, right,
forward), which are the same ids in every MiniGrid action space.
"""

from __future__ import annotations

import contextlib
import io
from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.constants import COLOR_NAMES, COLOR_TO_IDX, OBJECT_TO_IDX
from minigrid.core.world_object import Ball, Box, Key, WorldObj
from minigrid.minigrid_env import MiniGridEnv

from polar.errors import ConfigError

TARGET_TYPES: tuple[str, ...] = ("key", "door", "ball", "box", "goal")
COLORS: tuple[str, ...] = tuple(COLOR_NAMES)  # red green blue purple yellow grey
CROP = 9  # K: the crop's side (odd); the agent sits at its centre
REL_SCALE = 8.0  # offsets are divided by this, then clipped to [-1, 1]
NUM_ACTIONS = 3  # left, right, forward
TARGET_DIM = len(TARGET_TYPES) + len(COLORS) + 1 + 5
_WALL = (OBJECT_TO_IDX["wall"], COLOR_TO_IDX["grey"], 0)
_EMPTY = (OBJECT_TO_IDX["empty"], 0, 0)
_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # MiniGrid agent_dir 0..3: east south west north


def observation_space(crop: int = CROP) -> gym.spaces.Dict:
    return gym.spaces.Dict({
        "grid": gym.spaces.Box(0, 255, (crop, crop, 4), np.uint8),
        "target": gym.spaces.Box(-1.0, 1.0, (TARGET_DIM,), np.float32),
    })


def check_args(args: dict[str, Any]) -> tuple[str, str | None]:
    """Validate skill arguments {"object": ..., "color": ...}; returns (object, color|None)."""
    unknown = set(args) - {"object", "color"}
    if unknown:
        raise ConfigError(f"goto args: unknown key(s) {sorted(unknown)}; expected 'object' and optional 'color'")
    obj = args.get("object")
    if obj not in TARGET_TYPES:
        raise ConfigError(f"goto args: object={obj!r} is not one of {list(TARGET_TYPES)}")
    color = args.get("color")
    if color is not None and color not in COLORS:
        raise ConfigError(f"goto args: color={color!r} is not one of {list(COLORS)}")
    return obj, (None if obj == "goal" else color)


def _matches(o: WorldObj | None, obj: str, color: str | None) -> bool:
    return o is not None and o.type == obj and (color is None or o.color == color)


def _encode_grid(env: MiniGridEnv, obj: str, color: str | None, pad: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The whole grid as [W + 2 pad, H + 2 pad, 4] (walls outside) plus matching positions.

    Walks `grid.grid` directly: most cells are None, so this is several times faster than
    `Grid.encode()` on big grids (it runs every env step).
    """
    w, h = env.width, env.height
    out = np.empty((w + 2 * pad, h + 2 * pad, 4), np.uint8)
    out[..., :3] = _WALL
    out[..., 3] = 0
    out[pad:pad + w, pad:pad + h, :3] = _EMPTY
    targets = []
    for idx, o in enumerate(env.grid.grid):
        if o is None:
            continue
        x, y = idx % w, idx // w
        out[x + pad, y + pad, :3] = o.encode()
        if _matches(o, obj, color):
            out[x + pad, y + pad, 3] = 1
            targets.append((x, y))
    return out, targets


def _crop_offsets(crop: int) -> np.ndarray:
    """[4, K, K, 2] world offsets (dx, dy) of each crop cell, per agent direction."""
    r = crop // 2
    ahead = r - np.arange(crop)[:, None] * np.ones((1, crop), int)  # row i -> r - i cells ahead
    right = np.arange(crop)[None, :] - r + np.zeros((crop, 1), int)  # col j -> j - r to the right
    offs = np.empty((4, crop, crop, 2), int)
    for d, (fx, fy) in enumerate(_DIRS):
        rx, ry = -fy, fx  # the agent's right-hand side
        offs[d, ..., 0] = ahead * fx + right * rx
        offs[d, ..., 1] = ahead * fy + right * ry
    return offs


_OFFSETS = {CROP: _crop_offsets(CROP)}


def features(env: MiniGridEnv, obj: str, color: str | None, crop: int = CROP) -> dict[str, np.ndarray]:
    """The policy observation for goto(obj, color) in the current state of `env` (unwrapped)."""
    if crop not in _OFFSETS:
        _OFFSETS[crop] = _crop_offsets(crop)
    r = crop // 2
    full, targets = _encode_grid(env, obj, color, r)
    ax, ay = int(env.agent_pos[0]), int(env.agent_pos[1])
    d = int(env.agent_dir)
    offs = _OFFSETS[crop][d]
    grid = full[ax + r + offs[..., 0], ay + r + offs[..., 1]]  # [K, K, 4], row 0 = ahead
    vec = np.zeros(TARGET_DIM, np.float32)
    vec[TARGET_TYPES.index(obj)] = 1.0
    n = len(TARGET_TYPES)
    vec[n + (COLORS.index(color) if color is not None else len(COLORS))] = 1.0
    n += len(COLORS) + 1
    if targets:
        fx, fy = _DIRS[d]
        rel = [((tx - ax) * fx + (ty - ay) * fy, (tx - ax) * -fy + (ty - ay) * fx) for tx, ty in targets]
        ahead, right = min(rel, key=lambda p: (abs(p[0]) + abs(p[1]), p))
        vec[n] = np.clip(ahead / REL_SCALE, -1, 1)
        vec[n + 1] = np.clip(right / REL_SCALE, -1, 1)
        vec[n + 2] = min((abs(ahead) + abs(right)) / (2 * REL_SCALE), 1.0)
        vec[n + 3] = float(max(abs(ahead), abs(right)) > r)
    else:
        vec[n + 4] = 1.0
    return {"grid": grid, "target": vec}


def succeeded(env: MiniGridEnv, obj: str, color: str | None) -> bool:
    """goto's termination: facing a matching object, or standing on the goal."""
    if obj == "goal":
        return _matches(env.grid.get(*env.agent_pos), "goal", None)
    fx, fy = env.front_pos
    if not (0 <= fx < env.width and 0 <= fy < env.height):
        return False
    return _matches(env.grid.get(fx, fy), obj, color)


# ---- the training env ----------------------------------------------------------------------

_PASSABLE = ("goal", "floor")


def _passable(o: WorldObj | None) -> bool:
    return o is None or o.type in _PASSABLE or (o.type == "door" and o.is_open)


def walk_distances(env: MiniGridEnv) -> np.ndarray:
    """[W, H] int: moves from the agent to each cell using only passable cells (-1: unreachable)."""
    w, h = env.width, env.height
    dist = np.full((w, h), -1, int)
    start = (int(env.agent_pos[0]), int(env.agent_pos[1]))
    dist[start] = 0
    q = deque([start])
    while q:
        x, y = q.popleft()
        for dx, dy in _DIRS:
            nx, ny = x + dx, y + dy
            if 0 <= nx < w and 0 <= ny < h and dist[nx, ny] < 0 and _passable(env.grid.get(nx, ny)):
                dist[nx, ny] = dist[x, y] + 1
                q.append((nx, ny))
    return dist


def reachable(env: MiniGridEnv) -> np.ndarray:
    """[W, H] bool: cells the agent can walk to using only left/right/forward."""
    return walk_distances(env) >= 0


def target_distance(env: MiniGridEnv, dist: np.ndarray, pos: tuple[int, int], obj: str) -> int:
    """Moves to reach an object at `pos` (stand on a goal, stand next to anything else); -1: never."""
    x, y = pos
    if obj == "goal":
        return int(dist[x, y])
    near = [int(dist[x + dx, y + dy]) for dx, dy in _DIRS
            if 0 <= x + dx < env.width and 0 <= y + dy < env.height and dist[x + dx, y + dy] >= 0]
    return min(near) if near else -1


def _can_reach(env: MiniGridEnv, reach: np.ndarray, pos: tuple[int, int], obj: str) -> bool:
    return target_distance(env, np.where(reach, 0, -1), pos, obj) >= 0


class GotoEnv(gym.Env):
    """Goal-conditioned goto over MiniGrid layouts, for training the skill.

    Each reset picks a layout (a MiniGrid/BabyAI env id) at random, resets it, randomises
    it (doors opened, the key already carried, distractor objects, the agent moved), then
    samples a reachable target (object type, colour or "any colour") present in the grid:
    uniform over the types present, or (probability `p_far`) the farthest reachable object.
    Reward on success is MiniGrid's 1 - 0.9 * t / T; the episode terminates on success and
    is truncated at T = `steps_per_side` * (width + height). Stepping onto a goal that is not
    the target ends the episode as a failure (the base env terminates there).
    """

    metadata = {"render_modes": [], "observation_kinds": {"grid": "index_grid"}}  # symbolic ids, not pixels

    def __init__(
        self,
        layouts: list[str] | str = "MiniGrid-DoorKey-8x8-v0",
        crop: int = CROP,
        p_open_doors: float = 0.5,
        p_carry_key: float = 0.25,
        p_distractors: float = 0.5,
        max_distractors: int = 3,
        p_move_agent: float = 0.5,
        p_any_color: float = 0.3,
        p_far: float = 0.3,
        steps_per_side: int = 5,
    ) -> None:
        self.layouts = [layouts] if isinstance(layouts, str) else list(layouts)
        if not self.layouts:
            raise ConfigError("GotoEnv: layouts is empty")
        self.crop = crop
        self.p_open_doors, self.p_carry_key = p_open_doors, p_carry_key
        self.p_distractors, self.max_distractors = p_distractors, max_distractors
        self.p_move_agent, self.p_any_color, self.p_far = p_move_agent, p_any_color, p_far
        self.steps_per_side = steps_per_side
        self.observation_space = observation_space(crop)
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self._envs: dict[str, MiniGridEnv] = {}
        self.base: MiniGridEnv | None = None
        self.target: tuple[str, str | None] = ("key", None)
        self.t, self.limit = 0, 1

    def _base(self, layout: str) -> MiniGridEnv:
        if layout not in self._envs:
            import minigrid  # noqa: F401 - registers the env ids

            env = gym.make(layout).unwrapped
            if not isinstance(env, MiniGridEnv):
                raise ConfigError(f"GotoEnv: layout {layout!r} is not a MiniGrid env")
            env.max_steps = 10**9  # this wrapper owns the step limit
            self._envs[layout] = env
        return self._envs[layout]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        for _ in range(100):
            layout = self.layouts[int(rng.integers(len(self.layouts)))]
            base = self._base(layout)
            with contextlib.redirect_stdout(io.StringIO()):  # BabyAI prints rejected samples
                base.reset(seed=int(rng.integers(2**31)))
            self._randomise(base, rng)
            target = self._sample_target(base, rng)
            if target is not None:
                break
        else:
            raise RuntimeError(f"GotoEnv: no reachable target in 100 resets of {self.layouts}")
        self.base, self.target, self.t = base, target, 0
        self.limit = self.steps_per_side * (base.width + base.height)
        return self._obs(), {"layout": layout, "target": list(target)}

    def _randomise(self, env: MiniGridEnv, rng: np.random.Generator) -> None:
        cells = env.grid.grid
        if rng.random() < self.p_open_doors:
            for o in cells:
                if o is not None and o.type == "door":
                    o.is_open, o.is_locked = True, False
        if env.carrying is None and rng.random() < self.p_carry_key:
            keys = [i for i, o in enumerate(cells) if o is not None and o.type == "key"]
            if keys:
                i = keys[int(rng.integers(len(keys)))]
                env.carrying, cells[i] = cells[i], None
                env.carrying.cur_pos = np.array([-1, -1])
        if rng.random() < self.p_distractors:
            for _ in range(int(rng.integers(1, self.max_distractors + 1))):
                kind = (Key, Ball, Box)[int(rng.integers(3))]
                color = COLORS[int(rng.integers(len(COLORS)))]
                self._place(env, kind(color), rng)
        if rng.random() < self.p_move_agent:
            free = [i for i, o in enumerate(cells) if o is None]
            if free:
                i = free[int(rng.integers(len(free)))]
                env.agent_pos = (i % env.width, i // env.width)
                env.agent_dir = int(rng.integers(4))

    @staticmethod
    def _place(env: MiniGridEnv, obj: WorldObj, rng: np.random.Generator) -> None:
        ax, ay = int(env.agent_pos[0]), int(env.agent_pos[1])
        free = [i for i, o in enumerate(env.grid.grid) if o is None and (i % env.width, i // env.width) != (ax, ay)]
        if free:
            i = free[int(rng.integers(len(free)))]
            env.grid.set(i % env.width, i // env.width, obj)
            obj.init_pos = obj.cur_pos = np.array([i % env.width, i // env.width])

    def _sample_target(self, env: MiniGridEnv, rng: np.random.Generator) -> tuple[str, str | None] | None:
        dist = walk_distances(env)
        cands: list[tuple[int, WorldObj]] = []
        for idx, o in enumerate(env.grid.grid):
            if o is not None and o.type in TARGET_TYPES:
                d = target_distance(env, dist, (idx % env.width, idx // env.width), o.type)
                if d >= 0:
                    cands.append((d, o))
        if rng.random() < self.p_far and cands:
            # The farthest reachable object: long routes through doorways are rare otherwise.
            far = max(d for d, _ in cands)
            order = [o for d, o in cands if d == far] + [o for d, o in cands if d != far]
        else:
            # Uniform over types first, so goal/door are not drowned by distractor balls and boxes.
            by_type: dict[str, list[WorldObj]] = {}
            for _, o in cands:
                by_type.setdefault(o.type, []).append(o)
            types = sorted(by_type)
            rng.shuffle(types)
            order = [by_type[t][int(rng.integers(len(by_type[t])))] for t in types]
        for o in order:
            color = None if o.type == "goal" or rng.random() < self.p_any_color else o.color
            if not succeeded(env, o.type, color):
                return o.type, color
        return None

    def _obs(self) -> dict[str, np.ndarray]:
        assert self.base is not None
        return features(self.base, *self.target, crop=self.crop)

    def step(self, action: Any):
        assert self.base is not None, "call reset() first"
        a = int(action)
        if not 0 <= a < NUM_ACTIONS:
            raise ValueError(f"GotoEnv: action {a} is not in 0..{NUM_ACTIONS - 1} (left, right, forward)")
        _, _, base_done, _, _ = self.base.step(a)
        self.t += 1
        success = succeeded(self.base, *self.target)
        terminated = success or base_done
        truncated = not terminated and self.t >= self.limit
        reward = 1.0 - 0.9 * self.t / self.limit if success else 0.0
        info: dict[str, Any] = {}
        if terminated or truncated:
            info["success"] = success
        return self._obs(), reward, terminated, truncated, info


def make_goto_env(**kwargs: Any) -> GotoEnv:
    """Entry point for `gym.make("polar.skills.goto:PolarGoto-v0", layouts=[...])`."""
    return GotoEnv(**kwargs)


gym.register("PolarGoto-v0", entry_point="polar.skills.goto:make_goto_env", disable_env_checker=True)


# ---- the skill library's hooks (named in the manifest) ----------------------------------


def _grid_env(harness: Any) -> MiniGridEnv:
    env = getattr(harness, "grid_env", None)
    if not isinstance(env, MiniGridEnv):
        from polar.errors import HarnessError

        hid = getattr(getattr(harness, "spec", None), "id", type(harness).__name__)
        raise HarnessError(f"goto needs a MiniGrid harness (with .grid_env); got {hid!r}")
    return env


def _bound_args(args: dict[str, Any]) -> tuple[str, str | None]:
    """The library binds unset optionals to "any"; goto reads that as "any colour"."""
    return check_args({k: v for k, v in args.items() if v not in (None, "any")})


def hook_features(obs: Any, args: dict[str, Any], harness: Any = None, crop: int = CROP) -> dict[str, np.ndarray]:
    """The manifest's feature hook. goto reads the full grid, which a MiniGrid observation
    (a 7x7 partial view) does not hold, so the runner must pass `harness=`."""
    if harness is None:
        from polar.skills.model import SkillError

        raise SkillError("goto's feature hook needs the harness (harness=...): it reads the full "
                         "grid from harness.grid_env, which the partial-view observation lacks")
    return features(_grid_env(harness), *_bound_args(args), crop=crop)


def hook_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """The manifest's termination check, from the symbolic state's predicates: `at(goal)`
    for the goal (facing it is not enough), else `facing(object,color)` (any colour if unset)."""
    if state is None:
        return False
    obj, color = _bound_args(args)
    preds = set(state.predicates)
    if obj == "goal":
        return "at(goal)" in preds
    if color is not None:
        return f"facing({obj},{color})" in preds
    return any(f"facing({obj},{c})" in preds for c in COLORS)
