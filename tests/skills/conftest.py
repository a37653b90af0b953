"""Shared helpers for the skill-library tests: real libraries in tmp folders, real policies."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from polar.rl.config import NetworkConfig
from polar.rl.policy import Policy, make_policy
from polar.skills.store import SkillLibrary

OBS_SPACE = gym.spaces.Dict({"x": gym.spaces.Box(-1.0, 1.0, (4,), np.float32)})


def tiny_policy(seed: int = 0, obs_space: gym.Space = OBS_SPACE, act_space: gym.Space | None = None) -> Policy:
    """An untrained PPO policy from the RL engine's own API (nothing is trained in tests)."""
    torch.manual_seed(seed)
    return make_policy("ppo", obs_space, act_space or gym.spaces.Discrete(3), NetworkConfig(hidden=[8]))


def manifest(name: str = "reach", **kw) -> dict:
    base = dict(
        name=name,
        description="Reach the target square; a test skill.",
        harnesses=["minigrid:*"],
        parameters={"color": ["red", "green"]},
        termination={"predicates": ["at(goal)"]},
        step_budget=16,
    )
    base.update(kw)
    return base


@pytest.fixture
def library(tmp_path: Path) -> SkillLibrary:
    return SkillLibrary(tmp_path / "skills")
