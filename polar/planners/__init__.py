"""Planners: read a harness spec and the trajectory so far, decide what to do next."""
