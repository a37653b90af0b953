"""Domain wings: everything one world (MiniGrid, PointMaze) brings to Polar, one folder each."""
