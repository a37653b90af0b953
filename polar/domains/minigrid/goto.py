"""The `goto(object, color, x, y)` MiniGrid skill: its observation features and its library
hooks (its training env is `goto_env.GotoEnv`).

The skill sees the *full* grid (a planner knows the symbolic state anyway, and MiniGrid's
7x7 partial view would turn navigation into exploration), but through an egocentric,
rotated crop around the agent, so one small network serves every grid size:

- `grid`: uint8 [K, K, 4] crop centred on the agent, rotated so the agent faces "up" (row
  0 is ahead). Channels: MiniGrid object id, colour id, state id, and a target mask (1 where
  the cell holds an object matching the arguments). Cells outside the grid read as walls.
  With a position (`x`, `y`: which of several same-coloured objects is meant, as the
  harness's predicates name them where colours repeat) only the object in that cell matches,
  so the same trained network serves both: it follows the mask and the offset.
- `target`: float32 [TARGET_DIM]: one-hot object type, one-hot colour (+ "any colour"),
  the nearest matching object's offset in the agent's frame (ahead, right) scaled by
  `REL_SCALE` and clipped to [-1, 1], its Manhattan distance (scaled, clipped), a flag
  "target outside the crop" and a flag "no matching object exists".

Success (the skill's termination): facing a matching object in the cell ahead (the one at
`x`, `y` when given), or, for `goal`, standing on a goal cell. The policy only uses MiniGrid's actions 0..2 (left, right,
forward), which are the same ids in every MiniGrid action space.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX
from minigrid.core.world_object import WorldObj
from minigrid.minigrid_env import MiniGridEnv

from polar.domains.minigrid.harness import DIR_VECTORS, DIRECTIONS
from polar.domains.minigrid.missions import COLORS as MINIGRID_COLORS
from polar.domains.minigrid.missions import OBJECT_TYPES
from polar.errors import ConfigError
from polar.predicates import ANY

TARGET_TYPES: tuple[str, ...] = OBJECT_TYPES
# The colour one-hot's layout, fixed by the trained network: MiniGrid's COLOR_NAMES (sorted).
COLORS: tuple[str, ...] = tuple(sorted(MINIGRID_COLORS))
CROP = 9  # K: the crop's side (odd); the agent sits at its centre
REL_SCALE = 8.0  # offsets are divided by this, then clipped to [-1, 1]
NUM_ACTIONS = 3  # left, right, forward
TARGET_DIM = len(TARGET_TYPES) + len(COLORS) + 1 + 5
_WALL = (OBJECT_TO_IDX["wall"], COLOR_TO_IDX["grey"], 0)
_EMPTY = (OBJECT_TO_IDX["empty"], 0, 0)


def observation_space(crop: int = CROP) -> gym.spaces.Dict:
    return gym.spaces.Dict({
        "grid": gym.spaces.Box(0, 255, (crop, crop, 4), np.uint8),
        "target": gym.spaces.Box(-1.0, 1.0, (TARGET_DIM,), np.float32),
    })


Cell = tuple[int, int]


def check_args(args: dict[str, Any]) -> tuple[str, str | None, Cell | None]:
    """Validate skill arguments {"object", "color", "x", "y"} (colour and position optional);
    returns (object, color|None, (x, y)|None)."""
    unknown = set(args) - {"object", "color", "x", "y"}
    if unknown:
        raise ConfigError(f"goto args: unknown key(s) {sorted(unknown)}; expected 'object' and optional "
                          "'color', 'x', 'y'")
    obj = args.get("object")
    if obj not in TARGET_TYPES:
        raise ConfigError(f"goto args: object={obj!r} is not one of {list(TARGET_TYPES)}")
    color = args.get("color")
    if color is not None and color not in COLORS:
        raise ConfigError(f"goto args: color={color!r} is not one of {list(COLORS)}")
    if ("x" in args) != ("y" in args):
        raise ConfigError("goto args: give both 'x' and 'y' (the object's cell) or neither")
    at = None
    if "x" in args:
        try:
            at = (int(args["x"]), int(args["y"]))
        except (TypeError, ValueError):
            raise ConfigError(f"goto args: x={args['x']!r}, y={args['y']!r} are not integers") from None
    return obj, (None if obj == "goal" else color), at


def _matches(o: WorldObj | None, obj: str, color: str | None) -> bool:
    return o is not None and o.type == obj and (color is None or o.color == color)


def _encode_grid(env: MiniGridEnv, obj: str, color: str | None, pad: int,
                 at: Cell | None = None) -> tuple[np.ndarray, list[Cell]]:
    """The whole grid as [W + 2 pad, H + 2 pad, 4] (walls outside) plus matching positions
    (only `at`, when given).

    Walks `grid.grid` directly rather than calling `Grid.encode()`: most cells are None, and
    this runs every env step.
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
        if _matches(o, obj, color) and (at is None or (x, y) == at):
            out[x + pad, y + pad, 3] = 1
            targets.append((x, y))
    return out, targets


def _crop_offsets(crop: int) -> np.ndarray:
    """[4, K, K, 2] world offsets (dx, dy) of each crop cell, per agent direction."""
    r = crop // 2
    ahead = r - np.arange(crop)[:, None] * np.ones((1, crop), int)  # row i -> r - i cells ahead
    right = np.arange(crop)[None, :] - r + np.zeros((crop, 1), int)  # col j -> j - r to the right
    offs = np.empty((4, crop, crop, 2), int)
    for d, (fx, fy) in enumerate(DIR_VECTORS):
        rx, ry = -fy, fx  # the agent's right-hand side
        offs[d, ..., 0] = ahead * fx + right * rx
        offs[d, ..., 1] = ahead * fy + right * ry
    return offs


_OFFSETS = {CROP: _crop_offsets(CROP)}


def features(env: MiniGridEnv, obj: str, color: str | None, crop: int = CROP,
             at: Cell | None = None) -> dict[str, np.ndarray]:
    """The policy observation for goto(obj, color[, at]) in the current state of `env` (unwrapped)."""
    if crop not in _OFFSETS:
        _OFFSETS[crop] = _crop_offsets(crop)
    r = crop // 2
    full, targets = _encode_grid(env, obj, color, r, at)
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
        fx, fy = DIR_VECTORS[d]
        rel = [((tx - ax) * fx + (ty - ay) * fy, (tx - ax) * -fy + (ty - ay) * fx) for tx, ty in targets]
        ahead, right = min(rel, key=lambda p: (abs(p[0]) + abs(p[1]), p))
        vec[n] = np.clip(ahead / REL_SCALE, -1, 1)
        vec[n + 1] = np.clip(right / REL_SCALE, -1, 1)
        vec[n + 2] = min((abs(ahead) + abs(right)) / (2 * REL_SCALE), 1.0)
        vec[n + 3] = float(max(abs(ahead), abs(right)) > r)
    else:
        vec[n + 4] = 1.0
    return {"grid": grid, "target": vec}


def succeeded(env: MiniGridEnv, obj: str, color: str | None, at: Cell | None = None) -> bool:
    """goto's termination: facing a matching object (the one at `at`), or standing on the goal."""
    cell = tuple(int(v) for v in (env.agent_pos if obj == "goal" else env.front_pos))
    if not (0 <= cell[0] < env.width and 0 <= cell[1] < env.height) or (at is not None and cell != at):
        return False
    return _matches(env.grid.get(*cell), obj, None if obj == "goal" else color)


# ---- the skill library's hooks (named in the manifest) ----------------------------------


def _bound_args(args: dict[str, Any]) -> tuple[str, str | None, Cell | None]:
    """The library binds unset optionals to "any"; goto reads that as "any colour / cell"."""
    return check_args({k: v for k, v in args.items() if v not in (None, ANY)})


def hook_features(obs: Any, args: dict[str, Any], harness: Any = None, crop: int = CROP) -> dict[str, np.ndarray]:
    """The manifest's feature hook. goto reads the full grid, which a MiniGrid observation (a
    7x7 partial view) does not hold: it asks the harness for its `"grid"` capability."""
    if harness is None:
        from polar.skills.model import SkillError

        raise SkillError("goto's feature hook needs the harness (harness=...): it reads the full "
                         "grid (the harness's 'grid' capability), which the partial-view observation lacks")
    obj, color, at = _bound_args(args)
    return features(harness.capability("grid"), obj, color, crop=crop, at=at)


def hook_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """The manifest's termination check, from the symbolic state: `at(goal)` for the goal
    (facing it is not enough), else `facing(object,color)` (any colour if unset), and, with
    `x`, `y`, the cell ahead (or under the agent, for the goal) is that one."""
    if state is None:
        return False
    obj, color, at = _bound_args(args)
    if at is not None:
        (ax, ay), (dx, dy) = state.agent["pos"], DIR_VECTORS[DIRECTIONS.index(state.agent["dir"])]
        cell = (ax, ay) if obj == "goal" else (ax + dx, ay + dy)
        if cell != at:
            return False
    preds = set(state.predicates)
    if obj == "goal":
        return "at(goal)" in preds
    if color is not None:
        return f"facing({obj},{color})" in preds
    return any(f"facing({obj},{c})" in preds for c in COLORS)
