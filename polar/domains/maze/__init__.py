"""PointMaze: the harness adapter (`harness`), the maze map (`maze_map`), the `reach` skill and
the maze planner (`planner`)."""

from polar.domains.registry import Domain

DOMAIN = Domain(
    name="maze",
    harness="polar.domains.maze.harness:MazeHarness",
    packages=("gymnasium", "gymnasium-robotics", "mujoco"),
    check_id="polar.domains.maze.harness:check_id",
    registered_ids="polar.domains.maze.harness:point_maze_ids",
    id_help="maze:<PointMazeId>",
    extra_listings=(("custom", "PointMaze over kwargs maze_map"),),
    hidden_entry_points=("gymnasium_robotics",),  # only PointMaze is adapted; the rest need their own
    planner_hints={"choose_planner": "polar.domains.maze.planner:choose_planner"},
    planners={"maze": "polar.domains.maze.planner:MazePlanner"},
    planner_options={"maze": {"max_repeats": (int, "give up when the same reach fails this many times in a row"),
                              "lookahead": (int, "cells ahead along the path per reach call"),
                              "skill": (str, "the skill that reaches a cell")}},
)
