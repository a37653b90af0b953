"""`_sub_info` splits a vector env's batched info dict into one sub-env's entries, nested dicts
included (gymnasium batches a nested info as a dict of arrays with its own `_key` mask)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from polar.rl.common.evaluate import _sub_info


class _NestedInfo(gym.Env):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, k: int) -> None:
        self.k = k

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def step(self, action):
        info = {"flat": self.k, "achievements": {"wood": self.k, "stone": 10 * self.k}}
        if self.k == 1:
            info["only_one"] = 7
        return 0, 0.0, True, False, info


def test_nested_and_masked_entries_come_back_per_sub_env() -> None:
    env = SyncVectorEnv([lambda k=k: _NestedInfo(k) for k in range(3)], autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.zeros(3, dtype=np.int64))
    env.close()
    fin = info.get("final_info", info)
    for i in range(3):
        sub = _sub_info(fin, i)
        assert sub["flat"] == i and sub["achievements"] == {"wood": i, "stone": 10 * i}
        assert ("only_one" in sub) == (i == 1)
