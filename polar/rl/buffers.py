"""SAC's replay buffer: preallocated numpy arrays, dict observations, the real next obs."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from polar.rl.networks import obs_leaves


class ReplayBuffer:
    def __init__(self, obs_space: gym.Space, act_dim: int, capacity: int, seed: int) -> None:
        self.capacity = capacity
        self.obs: dict[str, np.ndarray] = {}
        self.next_obs: dict[str, np.ndarray] = {}
        leaves = obs_leaves(obs_space)
        for k, s in leaves.items():
            key = "obs" if not isinstance(obs_space, gym.spaces.Dict) else k
            shape = () if isinstance(s, gym.spaces.Discrete) else s.shape
            self.obs[key] = np.zeros((capacity, *shape), dtype=s.dtype)
            self.next_obs[key] = np.zeros((capacity, *shape), dtype=s.dtype)
        self.actions = np.zeros((capacity, act_dim), dtype=np.float32)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.pos = 0
        self.size = 0
        self.rng = np.random.default_rng(seed)

    def add(self, batch: dict[str, Any]) -> None:
        """Add a flat batch of valid transitions (from `collect_sac`)."""
        n = len(batch["rewards"])
        idx = (self.pos + np.arange(n)) % self.capacity
        for k in self.obs:
            self.obs[k][idx] = batch["obs"][k]
            self.next_obs[k][idx] = batch["next_obs"][k]
        self.actions[idx] = batch["actions"]
        self.rewards[idx] = batch["rewards"]
        self.terminated[idx] = batch["terminated"]
        self.pos = int((self.pos + n) % self.capacity)
        self.size = int(min(self.size + n, self.capacity))

    def sample(self, batch_size: int) -> dict[str, Any]:
        idx = self.rng.integers(0, self.size, batch_size)
        return {
            "obs": {k: v[idx] for k, v in self.obs.items()},
            "next_obs": {k: v[idx] for k, v in self.next_obs.items()},
            "actions": self.actions[idx], "rewards": self.rewards[idx],
            "terminated": self.terminated[idx],
        }

    def state(self) -> dict[str, Any]:
        """Everything needed to restore the buffer exactly (arrays trimmed to `size`)."""
        n = self.size
        out: dict[str, Any] = {"pos": self.pos, "size": n, "rng": self.rng.bit_generator.state}
        arrays = {f"obs.{k}": v[:n] for k, v in self.obs.items()}
        arrays |= {f"next_obs.{k}": v[:n] for k, v in self.next_obs.items()}
        arrays |= {"actions": self.actions[:n], "rewards": self.rewards[:n], "terminated": self.terminated[:n]}
        out["arrays"] = arrays
        return out

    def load_state(self, state: dict[str, Any]) -> None:
        n = int(state["size"])
        arr = state["arrays"]
        for k in self.obs:
            self.obs[k][:n] = arr[f"obs.{k}"]
            self.next_obs[k][:n] = arr[f"next_obs.{k}"]
        self.actions[:n], self.rewards[:n], self.terminated[:n] = arr["actions"], arr["rewards"], arr["terminated"]
        self.pos, self.size = int(state["pos"]), n
        self.rng.bit_generator.state = state["rng"]
