"""Compatibility path for the maze's `reach` skill, which lives in `polar.domains.maze.reach`:
committed manifests name its hooks as `polar.skills.maze.reach:...`."""
