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


class PixelSideEnv(gym.Env):
    """A 16x16 RGB image of dim noise (20..60) with a bright 4x4 patch (250) in its left or
    right half; action 0 = left, 1 = right; reward 1 when right, one step per episode.
    Only a pixel encoder can solve it: read as symbolic ids clamped to a vocabulary of 16,
    patch and noise are all id 15."""

    observation_space = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.side = int(self.np_random.integers(2))
        img = self.np_random.integers(20, 61, (16, 16, 3)).astype(np.uint8)
        r = int(self.np_random.integers(0, 12))
        c = int(self.np_random.integers(0, 4)) + 8 * self.side
        img[r:r + 4, c:c + 4] = 250
        return img, {}

    def step(self, action):
        ok = int(action) == self.side
        return np.zeros((16, 16, 3), np.uint8), float(ok), True, False, {"success": ok}


class PointGoalEnv(gym.Env):
    """A point in [-1, 1]^2 moved by actions in [-1, 1]^2 (x 0.15 per step) towards a goal;
    goal-conditioned Dict observations like Gymnasium-Robotics'; sparse reward
    -(distance > 0.1); 20 steps per episode, never terminated (a continuing goal task)."""

    observation_space = gym.spaces.Dict({
        "observation": gym.spaces.Box(-1, 1, (2,), np.float32),
        "achieved_goal": gym.spaces.Box(-1, 1, (2,), np.float32),
        "desired_goal": gym.spaces.Box(-1, 1, (2,), np.float32),
    })
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.15 * np.asarray(action, np.float32), -1, 1).astype(np.float32)
        self.t += 1
        d = float(np.linalg.norm(self.pos - self.goal))
        info = {"success": d <= 0.1} if self.t >= 20 else {}
        return self._obs(), -float(d > 0.1), False, self.t >= 20, info


gym.register("PolarPixelSide-v0", entry_point=PixelSideEnv)
gym.register("PolarPointGoal-v0", entry_point=PointGoalEnv)


class CueEnv(gym.Env):
    """A memory task: the first observation shows a cue (0 or 1), the next `delay` ones are
    blank, the last one says "answer now"; answering the cue there earns 1. A policy without
    memory gets 0.5 at best."""

    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, delay: int = 3) -> None:
        self.delay = delay
        self.t = 0
        self.cue = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(2))
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        obs = np.zeros(3, np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        elif self.t == self.delay + 1:
            obs[2] = 1.0
        return obs

    def step(self, action):
        answer = self.t == self.delay + 1
        self.t += 1
        reward = float(answer and int(action) == self.cue)
        return self._obs(), reward, answer, False, {"success": bool(reward)} if answer else {}
