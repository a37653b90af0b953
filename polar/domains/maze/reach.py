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

from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np

from polar.domains.maze.harness import SUCCESS_RADIUS, MazeHarness
from polar.domains.maze.maze_map import MazeMap, random_maze
from polar.errors import ConfigError, HarnessError

PATCH = 3  # walls seen around the ball's cell (odd): its 8 neighbours, which every maze shares
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


@lru_cache(maxsize=64)
def _padded_walls(maze: MazeMap) -> np.ndarray:
    """[H + PATCH - 1, W + PATCH - 1] float32: 1 for walls and outside the map, 0 for free cells."""
    half = PATCH // 2
    grid = np.ones((maze.height + 2 * half, maze.width + 2 * half), np.float32)
    for r, c in maze.free_cells:
        grid[r + half, c + half] = 0.0
    return grid


def local_view(maze: MazeMap, x: float, y: float, vx: float, vy: float) -> np.ndarray:
    """The goal-free part of the policy input (see the module docstring)."""
    r, c = maze.xy_to_cell(x, y)
    cx, cy = maze.cell_to_xy((r, c))
    out = np.empty(OBS_DIM, np.float32)
    out[:4] = (vx / MAX_SPEED, vy / MAX_SPEED, (x - cx) / maze.scale, (y - cy) / maze.scale)
    walls = _padded_walls(maze)
    r = min(max(r, 0), maze.height - 1)  # the ball never leaves the map; be safe anyway
    c = min(max(c, 0), maze.width - 1)
    out[4:] = walls[r:r + PATCH, c:c + PATCH].reshape(-1)  # rows north to south
    return np.clip(out, -1.0, 1.0, out=out)


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


def maze_of(harness: Any) -> MazeMap:
    """The map a maze: harness declares as its `"maze"` capability (through wrappers too)."""
    capability = getattr(harness, "capability", None)
    maze = capability("maze") if callable(capability) else None
    if not isinstance(maze, MazeMap):
        hid = getattr(getattr(harness, "spec", None), "id", type(harness).__name__)
        raise HarnessError(f"reach needs a maze: harness (PointMaze); got {hid!r}")
    return maze


def target_of(maze: MazeMap, obs: dict[str, Any], cell: tuple[int, int] | None) -> tuple[float, float]:
    """The point reach(cell) aims at: the cell's centre, or the goal point."""
    if cell is None:
        g = np.asarray(obs["desired_goal"])
        return float(g[0]), float(g[1])
    if not maze.is_free(cell):
        raise ConfigError(f"reach args: cell {list(cell)} is a wall or outside the {maze.height}x{maze.width} maze")
    return maze.cell_to_xy(cell)


def hook_features(obs: Any, args: dict[str, Any], harness: Any = None) -> dict[str, np.ndarray]:
    """The manifest's feature hook (the runner passes `harness=`: the map is read from it)."""
    maze = maze_of(harness)
    return features(maze, obs, target_of(maze, obs, check_args(args)))


def hook_done(state: Any, args: dict[str, Any], obs: Any = None, info: Any = None) -> bool:
    """The manifest's termination check: `at_cell(row,col)`, or `at(goal)` without a cell."""
    if state is None:
        return False
    cell = check_args(args)
    want = "at(goal)" if cell is None else f"at_cell({cell[0]},{cell[1]})"
    return want in state.predicates


# ---- the training env ----------------------------------------------------------------------


class ReachEnv(gym.Env):
    """Goal-conditioned reach over PointMaze layouts, for training the skill with SAC + HER.

    Each reset picks a layout at random (a `maze:` id, a harness YAML name, a map as a list of
    rows, or one of `random_layouts` random mazes of `random_size` drawn at the first reset
    from the env's seed, see polar.domains.maze.maze_map.random_maze), starts the ball in a random start cell (with probability
    `p_moving_start` already rolling at up to `start_speed` in a random direction, as it is
    when a planner chains reach calls) and puts the goal in a cell `goal_distance` moves away
    along the maze. The task never terminates (HER keeps the stored `terminated` flags):
    reward 0 within THRESHOLD of the goal, -1 otherwise (`goal_reward`); the episode is
    truncated after `max_steps`; `info["success"]` says whether the ball is within THRESHOLD
    now, so the trainer's success rate is "at the goal when the episode ends".
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        layouts: list[Any] | str = (),  # type: ignore[assignment]
        random_layouts: int = 0,
        random_size: list[int] = (9, 9),  # type: ignore[assignment]
        openness: float = 0.2,
        goal_distance: int | list[int] = (1, 3),  # type: ignore[assignment]
        max_steps: int = 100,
        position_noise: float = 0.25,
        p_moving_start: float = 0.5,
        start_speed: float = 3.0,
    ) -> None:
        self.layouts: list[Any] = [layouts] if isinstance(layouts, str) else list(layouts)
        self.random_layouts, self.openness = int(random_layouts), float(openness)
        self.random_size = (int(random_size[0]), int(random_size[1]))
        if not self.layouts and not self.random_layouts:
            raise ConfigError("ReachEnv: give layouts (maze ids, YAML names or maps) and/or random_layouts")
        self.goal_distance = list(goal_distance) if isinstance(goal_distance, (list, tuple)) else goal_distance
        self.max_steps = int(max_steps)
        self.position_noise = float(position_noise)
        self.p_moving_start, self.start_speed = float(p_moving_start), float(start_speed)
        self._fixed = len(self.layouts)
        self.observation_space = observation_space()
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._harnesses: dict[int, MazeHarness] = {}
        self.harness: MazeHarness | None = None
        self.origin = (0.0, 0.0)
        self.t = 0

    def _harness(self, i: int) -> MazeHarness:
        if i not in self._harnesses:
            from polar.harnesses.registry import make_harness

            layout = self.layouts[i]
            kw: dict[str, Any] = {"continuing_task": True, "max_episode_steps": 10**9,
                                  "goal_distance": self.goal_distance, "position_noise": self.position_noise}
            h = (make_harness(layout, **kw) if isinstance(layout, str)
                 else make_harness("maze:custom", maze_map=layout, **kw))
            if not isinstance(h, MazeHarness):
                raise ConfigError(f"ReachEnv: layout {layout!r} is not a maze: harness")
            self._harnesses[i] = h
        return self._harnesses[i]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        if len(self.layouts) < self._fixed + self.random_layouts:  # the first reset draws them
            h, w = self.random_size
            self.layouts += [list(random_maze(rng, h, w, self.openness).rows)
                             for _ in range(self.random_layouts)]
        i = int(rng.integers(len(self.layouts)))
        h = self._harness(i)
        obs, _ = h.reset(seed=int(rng.integers(2**31)))
        if rng.random() < self.p_moving_start:
            angle, speed = rng.uniform(0, 2 * np.pi), rng.uniform(0, self.start_speed)
            x, y = h.position()
            obs = h.place_ball(x, y, speed * np.cos(angle), speed * np.sin(angle))
        self.harness, self.t = h, 0
        goal = h.goal_position()
        self.origin = h.maze.cell_to_xy(h.maze.xy_to_cell(*goal))
        return self._features(obs), {"layout": i}

    def _features(self, obs: dict[str, Any]) -> dict[str, np.ndarray]:
        assert self.harness is not None
        return features(self.harness.maze, obs, self.harness.goal_position(), self.origin)

    def step(self, action: Any):
        assert self.harness is not None, "call reset() first"
        obs, *_ = self.harness.step(np.asarray(action, dtype=np.float32))
        self.t += 1
        x = self._features(obs)
        reward = float(goal_reward(x["achieved_goal"], x["desired_goal"]))
        return x, reward, False, self.t >= self.max_steps, {"success": reward == 0.0}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any = None) -> np.ndarray:
        """GoalEnv's relabelling hook (same as `goal_reward`)."""
        return goal_reward(achieved_goal, desired_goal)

    def close(self) -> None:
        for h in self._harnesses.values():
            h.close()
        self._harnesses.clear()

