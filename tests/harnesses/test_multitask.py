"""Several harnesses as one env: tasks in turn per reset, labels in info, spaces checked."""

from __future__ import annotations

import pytest

from polar.errors import ConfigError
from polar.harnesses.multitask import MultiTaskEnv
from polar.harnesses.registry import make_harness

TASKS = [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "label": "five"},
         {"id": "minigrid:MiniGrid-Empty-6x6-v0", "label": "six"},
         {"id": "minigrid:MiniGrid-Empty-8x8-v0", "label": "eight"}]


def test_tasks_in_turn_from_the_seeded_offset() -> None:
    env = MultiTaskEnv(TASKS)
    try:
        _, info = env.reset(seed=4)  # 4 mod 3: the second task first
        seen = [info["task"]]
        for _ in range(4):
            seen.append(env.reset(seed=None)[1]["task"])
        assert seen == ["six", "eight", "five", "six", "eight"]
        _, _, _, _, info = env.step(2)  # forward, in the current task
        assert info["task"] == "eight"
        assert env.harnesses[2].spec.id == "minigrid:MiniGrid-Empty-8x8-v0"
        assert env.observation_space == env.harnesses[0].observation_space
    finally:
        env.close()


def test_through_the_registry_as_a_gym_entry_point() -> None:
    h = make_harness("gym:polar.harnesses.multitask:MultiTaskEnv", tasks=TASKS[:2])
    try:
        _, info = h.reset(seed=1)
        assert info["task"] == "six"
    finally:
        h.close()


def test_different_spaces_are_refused_naming_the_task() -> None:
    full = [{**t, "kwargs": {"full_grid": True}} for t in TASKS[:2]]  # 5x5 and 6x6 grids
    with pytest.raises(ConfigError, match="six has spaces"):
        MultiTaskEnv(full)
    with pytest.raises(ConfigError, match="empty"):
        MultiTaskEnv([])
