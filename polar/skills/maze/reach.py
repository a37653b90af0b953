"""The `reach(row, col)` PointMaze skill: its policy input, its termination, its training env.

The policy reads a goal-conditioned dict (what HER relabels) in a frame that carries no
absolute position, so one policy serves every maze layout:

- `observation` float32 [4 + PATCH * PATCH]: velocity / MAX_SPEED, the ball's offset from its
  cell's centre (in cells), and the walls around its cell (PATCH x PATCH, rows north to
  south, columns west to east; 1 = wall or outside the map);
- `achieved_goal`, `desired_goal` float32 [2]: the ball's and the target's (x, y) relative to
  the centre of the *target's* cell. The origin is fixed for a whole training episode (the
  cell of that episode's goal), so a goal relabelled from later in the episode (HER) is in
  the same frame; when the skill runs, the target is a cell centre, so `desired_goal` is 0
  and `achieved_goal` is where the ball is relative to it.

Targets: `reach(row=r, col=c)` goes to the centre of cell (r, c) and ends when the ball is in
that cell (`at_cell(r,c)`); `reach()` without arguments goes to the harness's goal point and
ends with `at(goal)` (within 0.45 of it, the harness's own success).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from polar.errors import ConfigError, HarnessError
from polar.harnesses.maze import SUCCESS_RADIUS, MazeHarness
from polar.harnesses.maze_map import MazeMap

PATCH = 5  # walls seen around the ball's cell (odd): two cells each way
MAX_SPEED = 5.0  # PointMaze clips each velocity component to +-5
OBS_DIM = 4 + PATCH * PATCH
THRESHOLD = SUCCESS_RADIUS  # the training reward's radius, the harness's goal radius


def observation_space() -> gym.spaces.Dict:
    goal = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    return gym.spaces.Dict({
        "achieved_goal": goal,
        "desired_goal": goal,
        "observation": gym.spaces.Box(-1.0, 1.0, (OBS_DIM,), np.float32),
    })


def local_view(maze: MazeMap, x: float, y: float, vx: float, vy: float) -> np.ndarray:
    """The goal-free part of the policy input (see the module docstring)."""
    r, c = maze.xy_to_cell(x, y)
    cx, cy = maze.cell_to_xy((r, c))
    half = PATCH // 2
    walls = [0.0 if maze.is_free((r + dr, c + dc)) else 1.0
             for dr in range(-half, half + 1) for dc in range(-half, half + 1)]
    head = [vx / MAX_SPEED, vy / MAX_SPEED, (x - cx) / maze.scale, (y - cy) / maze.scale]
    return np.clip(np.array(head + walls, dtype=np.float32), -1.0, 1.0)


def features(maze: MazeMap, obs: dict[str, Any], target: tuple[float, float],
             origin: tuple[float, float] | None = None) -> dict[str, np.ndarray]:
    """The policy input for reaching point `target` from observation `obs` (a PointMaze dict).
    `origin` defaults to the centre of the target's cell."""
    x, y, vx, vy = (float(v) for v in np.asarray(obs["observation"])[:4])
    if origin is None:
        origin = maze.cell_to_xy(maze.xy_to_cell(*target))
    ox, oy = origin
    return {
        "achieved_goal": np.array([x - ox, y - oy], dtype=np.float32),
        "desired_goal": np.array([target[0] - ox, target[1] - oy], dtype=np.float32),
        "observation": local_view(maze, x, y, vx, vy),
    }


def goal_reward(achieved: np.ndarray, desired: np.ndarray) -> np.ndarray:
    """The training reward (vectorised, for HER): 0 within THRESHOLD of the goal, else -1."""
    d = np.linalg.norm(np.asarray(achieved, np.float32) - np.asarray(desired, np.float32), axis=-1)
    return -(d > THRESHOLD).astype(np.float32)


def scripted_action(obs: dict[str, Any], target: tuple[float, float], kp: float = 10.0,
                    kd: float = 1.0) -> np.ndarray:
    """A PD controller towards `target` (privileged, no learning): the reference a trained
    `reach` is compared with. It ignores walls, so it only works along straight corridors."""
    x, y, vx, vy = (float(v) for v in np.asarray(obs["observation"])[:4])
    return np.clip([kp * (target[0] - x) - kd * vx, kp * (target[1] - y) - kd * vy], -1, 1).astype(np.float32)


# ---- the skill library's hooks (named in the manifest) -------------------------------------


def check_args(args: dict[str, Any]) -> tuple[int, int] | None:
    """{"row": r, "col": c} -> (r, c); {} -> None (the harness's goal)."""
    unknown = set(args) - {"row", "col"}
    if unknown:
        raise ConfigError(f"reach args: unknown key(s) {sorted(unknown)}; expected row and col, or nothing")
    if ("row" in args) != ("col" in args):
        raise ConfigError("reach args: give both row and col (a cell), or neither (the goal)")
    if not args:
        return None
    return int(args["row"]), int(args["col"])


def _maze_harness(harness: Any) -> MazeHarness:
    if not isinstance(harness, MazeHarness):
        hid = getattr(getattr(harness, "spec", None), "id", type(harness).__name__)
        raise HarnessError(f"reach needs a maze: harness (PointMaze); got {hid!r}")
    return harness


def target_of(harness: MazeHarness, obs: dict[str, Any], cell: tuple[int, int] | None) -> tuple[float, float]:
    """The point reach(cell) aims at: the cell's centre, or the goal point."""
    if cell is None:
        g = np.asarray(obs["desired_goal"])
        return float(g[0]), float(g[1])
    if not harness.maze.is_free(cell):
        raise ConfigError(f"reach args: cell {list(cell)} is a wall or outside the "
                          f"{harness.maze.height}x{harness.maze.width} maze")
    return harness.maze.cell_to_xy(cell)


def hook_features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, np.ndarray]:
    """The manifest's feature hook (the runner passes `harness=`: the map is read from it)."""
    h = _maze_harness(harness)
    return features(h.maze, obs, target_of(h, obs, check_args(args)))


def hook_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """The manifest's termination check: `at_cell(row,col)`, or `at(goal)` without a cell."""
    if state is None:
        return False
    cell = check_args(args)
    want = "at(goal)" if cell is None else f"at_cell({cell[0]},{cell[1]})"
    return want in state.predicates
