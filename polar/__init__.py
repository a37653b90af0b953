"""Polar: agentic reinforcement learning — planners over RL skills and sandboxed policy code."""

__version__ = "0.1.0"
