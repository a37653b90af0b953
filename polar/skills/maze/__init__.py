"""Skills for the maze: (PointMaze) harnesses: `reach` (see reach.py)."""
