"""Small scripted envs shared by the RL tests."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class CountingEnv(gym.Env):
    """obs = [episode id, t]; reward = t + 1; terminates at t == 4 on even episodes, and a
    TimeLimit-like truncation at t == 6 otherwise. Fully determined by the seed."""

    observation_space = gym.spaces.Box(-1e6, 1e6, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.episode = 0
        self.t = 0
        self.base = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.base = seed * 100
            self.episode = 0
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return np.array([self.base + self.episode, self.t], dtype=np.float32)

    def step(self, action):
        self.t += 1
        reward = float(self.t + int(action))
        term = self.episode % 2 == 0 and self.t == 4
        trunc = self.t == 6
        return self._obs(), reward, term, trunc, {"success": term}


class ForeverEnv(gym.Env):
    """Reward 1 forever; only a time limit ends episodes (tests truncation bootstrap)."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}
