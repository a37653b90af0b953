"""Harnesses: one interface over Gymnasium envs, grid worlds and out-of-process games."""

from polar.harnesses.base import Harness, HarnessEnv, HarnessSpec, SymbolicObject, SymbolicState
from polar.harnesses.registry import list_harnesses, make_harness, make_harness_env

__all__ = [
    "Harness", "HarnessEnv", "HarnessSpec", "SymbolicObject", "SymbolicState",
    "list_harnesses", "make_harness_env", "make_harness",
]
