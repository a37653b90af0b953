"""Harnesses: one interface over Gymnasium envs, grid worlds and out-of-process games."""

from polar.harnesses.base import Harness, HarnessEnv, HarnessSpec, SymbolicObject, SymbolicState
from polar.harnesses.registry import list_harnesses, make_env, make_harness

__all__ = [
    "Harness", "HarnessEnv", "HarnessSpec", "SymbolicObject", "SymbolicState",
    "list_harnesses", "make_env", "make_harness",
]
