"""`maze:<PointMazeId>`: Gymnasium-Robotics' PointMaze (MuJoCo, CPU) with a map a planner reads.

A force-actuated ball (2-D action in [-1, 1]^2, +x east, +y north) rolls through a maze of
unit cells towards a goal point. The observation is the package's goal-conditioned dict,
unchanged (skills trained with HER read it): `observation` = [x, y, vx, vy],
`achieved_goal` = [x, y], `desired_goal` = the goal's [x, y]. The goal counts as reached
within 0.45 of it (the package's rule); `info["success"]` says so at every step.

Ids: any registered PointMaze id (`maze:PointMaze_UMaze-v3`, `maze:PointMaze_Medium-v3`,
`maze:PointMaze_Large-v3`, the `...Dense-v3` variants), or `maze:custom` with a `maze_map`
(strings such as `"1 0 0 g 1"`, see polar.domains.maze.maze_map). Keyword arguments beyond the
package's (`reward_type`, `continuing_task`, `reset_target`, `maze_map`, `max_episode_steps`):

- `continuing_task` (default False here, True in the package): reaching the goal
  *terminates* the episode, so an episode is one task for a planner;
- `position_noise` (default: the package's 0.25 cell): the uniform jitter added to the start
  and goal points around their cell centres; 0 puts them on the centres;
- `goal_distance` (an int or [lo, hi]): on reset, start in a random start cell and put the
  goal in a cell that is lo..hi moves away along the maze (a waypoint for skills).

Reset options (`harness.reset(options=...)`): `reset_cell` and/or `goal_cell` as [row, col],
which override the random choice (Gymnasium-Robotics' own options).
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

import gymnasium as gym
import numpy as np

from polar.domains.maze.maze_map import Cell, MazeMap
from polar.errors import ConfigError, HarnessError
from polar.harnesses.base import HarnessSpec, SymbolicObject, SymbolicState
from polar.harnesses.gym import GymHarness
from polar.harnesses.spaces import space_to_spec

CUSTOM = "custom"
SUCCESS_RADIUS = 0.45  # PointMaze's goal radius (maze_v4.py)
MISSION = "go to the goal"
PREDICATE_VOCABULARY = ["at_cell(ROW,COL)", "goal_cell(ROW,COL)", "at(goal)", "adjacent(ROW,COL,ROW,COL)"]
_OPTIONS = ("reset_cell", "goal_cell")


def _register() -> None:
    # gymnasium_robotics prints an unrelated notice (about Adroit envs) to stderr on import
    with contextlib.redirect_stderr(io.StringIO()):
        import gymnasium_robotics
    gym.register_envs(gymnasium_robotics)


def point_maze_ids() -> list[str]:
    """Every registered PointMaze env id (without the `maze:` prefix)."""
    _register()
    return sorted(i for i in gym.registry if i.startswith("PointMaze_"))


def check_id(harness_id: str, env_id: str) -> None:
    """Raise UnknownHarness unless `env_id` is `custom` or a registered PointMaze id."""
    from polar.harnesses.registry import UnknownHarness

    if env_id != CUSTOM and env_id not in point_maze_ids():
        raise UnknownHarness(f"unknown maze {harness_id!r}: use maze:custom (with maze_map) or one of "
                             + ", ".join(f"maze:{i}" for i in point_maze_ids()))


def _default_steps(maze: MazeMap) -> int:
    """`maze:custom`'s step limit: 20 steps per free cell, at least 300 (UMaze's limit)."""
    return max(300, 20 * len(maze.free_cells))


class MazeHarness(GymHarness):
    """A PointMaze env (a GymHarness: same stepping, seeding and spaces) plus the maze map."""

    def __init__(  # not GymHarness.__init__: the env is made here, with the map
        self,
        env_id: str,
        description: str | None = None,
        maze_map: list[Any] | None = None,
        max_episode_steps: int | None = None,
        continuing_task: bool = False,
        position_noise: float | None = None,
        goal_distance: int | list[int] | None = None,
        **kwargs: Any,
    ) -> None:
        _register()
        hid = f"maze:{env_id}"
        if env_id == CUSTOM:
            if maze_map is None:
                raise ConfigError(f"{hid}: give the maze as kwargs maze_map (a list of rows like '1 0 g 1')")
            base = "PointMaze_UMaze-v3"
        elif env_id.startswith("PointMaze_") and env_id in gym.registry:
            base = env_id
        else:
            raise HarnessError(f"unknown maze {hid!r}: use maze:custom (with maze_map) or one of "
                               + ", ".join(f"maze:{i}" for i in point_maze_ids()))
        if maze_map is not None:
            self.maze = MazeMap.parse(maze_map, source=f"{hid}: maze_map")
            kwargs["maze_map"] = self.maze.to_package()
            if max_episode_steps is None and env_id == CUSTOM:
                max_episode_steps = _default_steps(self.maze)
        else:
            self.maze = MazeMap.parse(gym.spec(base).kwargs["maze_map"], source=hid)
        for cell in self.maze.goal_cells:  # else the package's reset loops forever
            if not set(self.maze.start_cells) - {cell}:
                raise ConfigError(f"{hid}: maze_map needs a start cell other than goal cell {cell}")
        if max_episode_steps is not None:
            kwargs["max_episode_steps"] = int(max_episode_steps)
        try:
            self.env = gym.make(base, continuing_task=continuing_task, **kwargs)
        except (gym.error.Error, TypeError) as err:
            raise HarnessError(f"{hid}: bad keyword arguments: {err}") from None
        u = self.env.unwrapped
        with contextlib.suppress(OSError):  # the package leaves its generated MJCF file in /tmp
            os.unlink(u.tmp_xml_file_path)
        if position_noise is not None:
            u.position_noise_range = float(position_noise)
        self._goal_distance = _distance_range(goal_distance, hid)
        self._rng = np.random.default_rng()
        self._seeded = False
        limit = self.env.spec.max_episode_steps if self.env.spec else None
        self.spec = HarnessSpec(
            id=hid,
            description=description or _describe(self.maze, continuing_task, u.reward_type),
            observation_space=space_to_spec(self.env.observation_space),
            action_space=space_to_spec(self.env.action_space),
            reward_range=(0.0, 1.0),
            max_steps=limit,
            reports_success=True,
            predicate_vocabulary=PREDICATE_VOCABULARY,
            extra={"maze": {"rows": list(self.maze.rows), "scale": self.maze.scale,
                            "success_radius": SUCCESS_RADIUS}},
        )

    def capabilities(self) -> set[str]:
        return {"maze"}

    def capability(self, name: str) -> Any:
        """`"maze"`: the MazeMap (cells, walls, cell <-> xy), for skills such as `reach`."""
        if name == "maze":
            return self.maze
        raise HarnessError(f"harness {self.spec.id!r} has no capability {name!r} (it offers: maze)")

    @property
    def point_env(self) -> Any:
        """The package's unwrapped PointMazeEnv (MuJoCo model and data), for skills and tests."""
        return self.env.unwrapped

    # --- episode --------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        opts = self._reset_options(options)
        try:
            return super().reset(seed=seed, options=opts)
        except AssertionError as err:  # the package asserts on cells it cannot use
            raise HarnessError(f"{self.spec.id}: reset options {options}: {err}") from None

    def _reset_options(self, options: dict[str, Any] | None) -> dict[str, Any] | None:
        opts = dict(options or {})
        unknown = set(opts) - set(_OPTIONS)
        if unknown:
            raise HarnessError(f"{self.spec.id}: unknown reset option(s) {sorted(unknown)}; known: {list(_OPTIONS)}")
        for key in _OPTIONS:
            if opts.get(key) is not None:
                cell = _as_cell(opts[key], f"{self.spec.id}: reset option {key}")
                if not self.maze.is_free(cell):
                    raise HarnessError(f"{self.spec.id}: reset option {key}={list(cell)} is a wall or "
                                       f"outside the {self.maze.height}x{self.maze.width} maze")
                opts[key] = np.array(cell)
        if self._goal_distance is not None and opts.get("goal_cell") is None:
            start, goal = self._waypoint(opts.get("reset_cell"))
            opts["reset_cell"], opts["goal_cell"] = np.array(start), np.array(goal)
        return opts or None

    def _waypoint(self, start: Any) -> tuple[Cell, Cell]:
        """A start cell and a goal cell `goal_distance` moves apart, drawn from the harness RNG."""
        assert self._goal_distance is not None
        lo, hi = self._goal_distance
        starts = [tuple(start)] if start is not None else list(self.maze.start_cells)
        for _ in range(100):
            s = starts[int(self._rng.integers(len(starts)))]
            dist = self.maze.distances(s)
            goals = sorted(c for c, d in dist.items() if lo <= d <= hi)
            if goals:
                return s, goals[int(self._rng.integers(len(goals)))]
        raise HarnessError(f"{self.spec.id}: no goal cell {lo}..{hi} moves from the start cells")

    # --- state ----------------------------------------------------------------------------

    def position(self) -> tuple[float, float]:
        q = self.point_env.data.qpos
        return float(q[0]), float(q[1])

    def goal_position(self) -> tuple[float, float]:
        g = self.point_env.goal
        return float(g[0]), float(g[1])

    def place_ball(self, x: float, y: float, vx: float = 0.0, vy: float = 0.0) -> dict[str, np.ndarray]:
        """Put the ball at (x, y) with velocity (vx, vy) (scripted situations, tests);
        returns the observation there."""
        pe = self.point_env.point_env
        pe.set_state(np.array([x, y], dtype=np.float64), np.array([vx, vy], dtype=np.float64))
        return self.observation()

    def observation(self) -> dict[str, np.ndarray]:
        """The current observation, as reset/step return it."""
        q, v = self.point_env.data.qpos, self.point_env.data.qvel
        return {"observation": np.concatenate([q, v]).astype(np.float64),
                "achieved_goal": np.array(q[:2], dtype=np.float64),
                "desired_goal": np.array(self.point_env.goal, dtype=np.float64)}

    def symbolic_state(self) -> SymbolicState:
        x, y = self.position()
        gx, gy = self.goal_position()
        cell, goal = self.maze.xy_to_cell(x, y), self.maze.xy_to_cell(gx, gy)
        preds = {f"at_cell({cell[0]},{cell[1]})", f"goal_cell({goal[0]},{goal[1]})"}
        if np.hypot(x - gx, y - gy) <= SUCCESS_RADIUS:
            preds.add("at(goal)")
        preds |= {f"adjacent({a[0]},{a[1]},{b[0]},{b[1]})" for a, b in self.maze.adjacency}
        v = self.point_env.data.qvel
        return SymbolicState(
            predicates=sorted(preds),
            goal=["at(goal)"],
            objects=[SymbolicObject(type="goal", pos=goal)],
            agent={"cell": list(cell), "xy": [round(x, 4), round(y, 4)],
                   "velocity": [round(float(v[0]), 4), round(float(v[1]), 4)]},
            mission=MISSION,
        )

    def render_text(self, obs: dict[str, Any]) -> str:
        """The maze with the agent (A) and the goal (G), then both positions and the free
        moves from the agent's cell; read from `obs` alone."""
        return render_maze_text(self.maze, obs)


def render_maze_text(maze: MazeMap, obs: dict[str, Any]) -> str:
    x, y, vx, vy = (float(v) for v in np.asarray(obs["observation"])[:4])
    gx, gy = (float(v) for v in np.asarray(obs["desired_goal"])[:2])
    cell, goal = maze.xy_to_cell(x, y), maze.xy_to_cell(gx, gy)
    moves = ", ".join(f"{name} ({n[0]},{n[1]})" for name, n in maze.neighbours(cell)) or "none"
    dist = float(np.hypot(x - gx, y - gy))
    return "\n".join([
        f"Maze {maze.height}x{maze.width} (row, column; row 0 at the top; # wall, . free, "
        "A you, G goal, * you on the goal):",
        maze.render(agent=cell, goal=goal),
        f"You: cell ({cell[0]},{cell[1]}), x={x:.2f} y={y:.2f}, velocity ({vx:.2f}, {vy:.2f}). "
        f"Free neighbouring cells: {moves}.",
        f"Goal: cell ({goal[0]},{goal[1]}), x={gx:.2f} y={gy:.2f}; distance {dist:.2f} "
        f"(reached within {SUCCESS_RADIUS}).",
    ])


def _describe(maze: MazeMap, continuing: bool, reward_type: str) -> str:
    end = ("The goal moves elsewhere when reached (continuing task); the episode ends at the step limit."
           if continuing else "The episode ends (terminated, success) when the ball is within "
           f"{SUCCESS_RADIUS} of the goal, or at the step limit (truncated).")
    return (
        f"PointMaze (MuJoCo): a ball pushed by a 2-D force through a {maze.height}x{maze.width} "
        f"maze of unit cells with {len(maze.free_cells)} free cells. Action [fx, fy] in [-1, 1]: "
        "+x is east (right, column + 1), +y is north (up, row - 1); speed is capped at 5 "
        "units/s, 100 steps per second of simulation. Observation: observation = [x, y, vx, vy], "
        "achieved_goal = [x, y], desired_goal = the goal's [x, y]; cell (row, col) has its centre "
        f"at x = col + 0.5 - {maze.width / 2:g}, y = {maze.height / 2:g} - row - 0.5. "
        + (f"Reward 1 within {SUCCESS_RADIUS} of the goal, else 0 (sparse). " if reward_type == "sparse"
           else "Reward exp(-distance to the goal) (dense). ") + f"{end} "
        "Predicates: at_cell(r,c) the ball's cell, goal_cell(r,c), at(goal), adjacent(r1,c1,r2,c2) "
        "for free cells sharing a side."
    )


def _as_cell(v: Any, what: str) -> Cell:
    try:
        r, c = (int(a) for a in v)
    except (TypeError, ValueError):
        raise HarnessError(f"{what}: expected [row, col], got {v!r}") from None
    return r, c


def _distance_range(v: Any, what: str) -> tuple[int, int] | None:
    if v is None:
        return None
    lo, hi = (v, v) if isinstance(v, int) else (tuple(v) if isinstance(v, (list, tuple)) and len(v) == 2 else (None, None))
    if not isinstance(lo, int) or not isinstance(hi, int) or not 1 <= lo <= hi:
        raise ConfigError(f"{what}: goal_distance must be a number of moves >= 1 or [lo, hi], got {v!r}")
    return lo, hi
