"""PointMaze: the harness adapter (`harness`), the maze map (`maze_map`), the `reach` skill and
the maze planner (`planner`)."""
