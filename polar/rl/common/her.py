"""Hindsight experience replay's settings and goal rewards (the replay buffer relabels with them)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import Field

from polar.config import StrictModel
from polar.errors import ConfigError


class HERConfig(StrictModel):
    """Hindsight experience replay over a goal-conditioned Dict observation (`observation`,
    `achieved_goal`, `desired_goal`, as Gymnasium-Robotics' goal envs return it)."""

    k: int = Field(4, ge=1)  # relabelled : real transitions = k : 1
    strategy: Literal["future", "final"] = "future"
    goal_key: str = "desired_goal"
    achieved_key: str = "achieved_goal"
    # The reward of (achieved goal, goal): sparse = -(distance > threshold); sparse01 =
    # (distance <= threshold); dense = -distance; or "module:function" (vectorised).
    reward: str = "sparse"
    threshold: float = Field(0.05, gt=0)


RewardFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def goal_reward_fn(cfg: HERConfig) -> RewardFn:
    """The reward of (achieved goal [B, G], desired goal [B, G]) -> [B] that HER uses:
    `sparse`: -(distance > threshold) (0 on success, -1 otherwise; Fetch's convention);
    `sparse01`: 1 within the threshold, else 0 (PointMaze's sparse reward);
    `dense`: -distance; or `module:function` with the same signature."""
    eps = cfg.threshold

    def distance(ag: np.ndarray, dg: np.ndarray) -> np.ndarray:
        return np.linalg.norm(ag.astype(np.float32) - dg.astype(np.float32), axis=-1)

    builtin: dict[str, RewardFn] = {
        "sparse": lambda ag, dg: -(distance(ag, dg) > eps).astype(np.float32),
        "sparse01": lambda ag, dg: (distance(ag, dg) <= eps).astype(np.float32),
        "dense": lambda ag, dg: -distance(ag, dg),
    }
    if cfg.reward in builtin:
        return builtin[cfg.reward]
    module, _, name = cfg.reward.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:
        raise ConfigError(f"sac.her.reward: cannot import {cfg.reward!r} ({err}); use sparse, sparse01, "
                          "dense or module:function") from None
    if not callable(fn):
        raise ConfigError(f"sac.her.reward: {cfg.reward!r} is not callable")
    return fn
