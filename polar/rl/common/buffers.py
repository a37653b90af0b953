"""The replay buffer (SAC, DQN): one column per env, dict observations, compact storage, hindsight
goal relabelling (HER), and an exact save/restore through checkpoints.

Layout: arrays [rows, columns, ...] where column c holds env c's transitions in the order
they happened (a ring of `rows` per column), so an episode is a run of consecutive rows —
what HER's `future` strategy needs. Observations keep their space's dtype (uint8 images stay
uint8); float leaves and actions are stored as float32, or float16 with
`buffer_float: float16` (about 3 significant digits; values beyond +-65504 are refused).
`terminated` is one byte. `bytes_per_transition` states the figure for a given space.

HER (Andrychowicz et al. 2017), `future` strategy: a sampled transition is relabelled with
probability k / (k + 1); its new goal is the achieved goal of a transition drawn uniformly
from the same episode at or after it (the running episode counts with what it has so far),
and its reward is recomputed by the reward function from (achieved goal of its next
observation, new goal). `final` uses the episode's last achieved goal. Stored `terminated`
flags are kept (right for continuing goal tasks such as PointMaze).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from polar.errors import ConfigError
from polar.rl.common.batches import ReplaySample, Transitions
from polar.rl.common.her import HERConfig, RewardFn, goal_reward_fn
from polar.rl.common.observations import obs_leaves

FLOAT16_MAX = float(np.finfo(np.float16).max)


class ReplayBuffer:
    def __init__(self, obs_space: gym.Space, act_dim: int, capacity: int, columns: int, seed: int,
                 her: HERConfig | None = None, float_dtype: str = "float32") -> None:
        self.columns = columns
        self.rows = max(1, -(-capacity // columns))  # ceil: at least `capacity` transitions
        self.float_dtype = np.dtype(float_dtype)
        leaves = obs_leaves(obs_space)
        self.obs: dict[str, np.ndarray] = {}
        self.next_obs: dict[str, np.ndarray] = {}
        for key, sub in leaves.items():
            shape = () if isinstance(sub, gym.spaces.Discrete) else sub.shape
            dtype = self.float_dtype if np.issubdtype(sub.dtype, np.floating) else sub.dtype
            self.obs[key] = np.zeros((self.rows, columns, *shape), dtype=dtype)
            self.next_obs[key] = np.zeros((self.rows, columns, *shape), dtype=dtype)
        self.actions = np.zeros((self.rows, columns, act_dim), dtype=self.float_dtype)
        self.rewards = np.zeros((self.rows, columns), dtype=np.float32)
        self.terminated = np.zeros((self.rows, columns), dtype=bool)
        self.count = np.zeros(columns, dtype=np.int64)  # transitions ever added, per column
        self.her = her
        self.reward_fn: RewardFn | None = None
        if her is not None:
            for key in (her.goal_key, her.achieved_key):
                if key not in leaves:
                    raise ConfigError(f"sac.her: observation key {key!r} not found (keys: {', '.join(leaves)}); "
                                      "HER needs a goal-conditioned Dict observation")
            self.reward_fn = goal_reward_fn(her)
            # Absolute (per column) index one past the last transition of each stored
            # transition's episode; -1 while that episode is still running.
            self.episode_end = np.full((self.rows, columns), -1, dtype=np.int64)
            self.episode_start = np.zeros(columns, dtype=np.int64)  # of each column's running episode
        self.rng = np.random.default_rng(seed)

    @property
    def size(self) -> int:
        return int(np.minimum(self.count, self.rows).sum())

    @property
    def capacity(self) -> int:
        return self.rows * self.columns

    def bytes_per_transition(self) -> int:
        arrays = [*self.obs.values(), *self.next_obs.values(), self.actions, self.rewards, self.terminated]
        if self.her is not None:
            arrays.append(self.episode_end)
        return int(sum(a.itemsize * int(np.prod(a.shape[2:])) for a in arrays))

    # ---- adding -----------------------------------------------------------------------

    def add(self, tr: Transitions) -> None:
        """Store the valid transitions of a batch [T, N] (N == columns), step by step."""
        if tr.rewards.shape[1] != self.columns:
            raise ValueError(f"replay buffer: a batch of {tr.rewards.shape[1]} envs for {self.columns} columns")
        for t in range(tr.rewards.shape[0]):
            cols = np.flatnonzero(tr.valid[t])
            rows = self.count[cols] % self.rows
            for k in self.obs:
                self.obs[k][rows, cols] = self._fit(k, tr.obs[k][t, cols])
                self.next_obs[k][rows, cols] = self._fit(k, tr.next_obs[k][t, cols])
            self.actions[rows, cols] = tr.actions[t, cols]
            self.rewards[rows, cols] = tr.rewards[t, cols]
            self.terminated[rows, cols] = tr.terminated[t, cols]
            self.count[cols] += 1
            if self.her is not None:
                self.episode_end[rows, cols] = -1
                for c in np.flatnonzero((tr.terminated[t] | tr.truncated[t]) & tr.valid[t]):
                    self._close_episode(int(c))

    def _fit(self, key: str, x: np.ndarray) -> np.ndarray:
        big = (float(np.abs(x).max()) if self.float_dtype == np.float16 and np.issubdtype(x.dtype, np.floating)
               and x.size else 0.0)
        if big > FLOAT16_MAX:
            raise ValueError(f"replay buffer: observation {key!r} holds {big:.4g}, beyond float16's range; "
                             "use buffer_float: float32")
        return x

    def end_episodes(self, columns: range | list[int]) -> None:
        """End the running episode of these columns where it stands (their env is gone: a
        Ray worker replaced), so HER never draws a goal across into the next env's episode."""
        if self.her is None:
            return
        for c in columns:
            if self.count[c] > self.episode_start[c]:
                self._close_episode(int(c))

    def _close_episode(self, c: int) -> None:
        end = int(self.count[c])
        first = max(int(self.episode_start[c]), end - self.rows)  # still stored
        self.episode_end[np.arange(first, end) % self.rows, c] = end
        self.episode_start[c] = end

    # ---- sampling ---------------------------------------------------------------------

    def sample(self, batch_size: int) -> ReplaySample:
        """A uniform minibatch (vectorised: no Python loop over its transitions)."""
        sizes = np.minimum(self.count, self.rows)
        total = int(sizes.sum())
        if total == 0:
            raise ValueError("replay buffer: sampling from an empty buffer")
        k = self.rng.integers(0, total, batch_size)
        if (sizes == sizes[0]).all():
            rows, cols = k // self.columns, k % self.columns
        else:
            cum = np.cumsum(sizes)
            cols = np.searchsorted(cum, k, side="right")
            rows = k - (cum[cols] - sizes[cols])
        obs = {key: v[rows, cols] for key, v in self.obs.items()}
        next_obs = {key: v[rows, cols] for key, v in self.next_obs.items()}
        rewards = self.rewards[rows, cols]
        if self.her is not None:
            rewards = self._relabel(rows, cols, obs, next_obs, rewards)
        return ReplaySample(
            {key: _tensor(v) for key, v in obs.items()}, _tensor(self.actions[rows, cols]),
            torch.from_numpy(rewards), {key: _tensor(v) for key, v in next_obs.items()},
            torch.from_numpy(self.terminated[rows, cols].astype(np.float32)),
        )

    def _relabel(self, rows: np.ndarray, cols: np.ndarray, obs: dict[str, np.ndarray],
                 next_obs: dict[str, np.ndarray], rewards: np.ndarray) -> np.ndarray:
        her = self.her
        assert her is not None and self.reward_fn is not None
        relabel = self.rng.random(len(rows)) < her.k / (her.k + 1)
        count = self.count[cols]
        t_abs = count - 1 - ((count - 1 - rows) % self.rows)  # absolute index of each sample
        end = self.episode_end[rows, cols]
        end = np.where(end < 0, count, end)
        if her.strategy == "future":
            future = t_abs + (self.rng.random(len(rows)) * (end - t_abs)).astype(np.int64)
        else:  # final
            future = end - 1
        goals = self.next_obs[her.achieved_key][future % self.rows, cols]
        idx = np.flatnonzero(relabel)
        obs[her.goal_key][idx] = goals[idx]
        next_obs[her.goal_key][idx] = goals[idx]
        rewards = rewards.copy()
        rewards[idx] = self.reward_fn(next_obs[her.achieved_key][idx], goals[idx])
        return rewards

    # ---- checkpoints ------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything needed to restore the buffer exactly: `meta` (small) and `arrays`
        (trimmed to the rows in use)."""
        n = int(min(self.count.max(), self.rows))
        arrays = {f"obs.{k}": v[:n] for k, v in self.obs.items()}
        arrays |= {f"next_obs.{k}": v[:n] for k, v in self.next_obs.items()}
        arrays |= {"actions": self.actions[:n], "rewards": self.rewards[:n], "terminated": self.terminated[:n],
                   "count": self.count}
        if self.her is not None:
            arrays |= {"episode_end": self.episode_end[:n], "episode_start": self.episode_start}
        meta = {"rows": self.rows, "columns": self.columns, "float_dtype": self.float_dtype.name,
                "her": self.her is not None, "rng": self.rng.bit_generator.state}
        return {"meta": meta, "arrays": arrays}

    def load_state(self, state: dict[str, Any]) -> None:
        meta, arr = state["meta"], state["arrays"]
        mine = (self.rows, self.columns, self.float_dtype.name, self.her is not None)
        saved = (meta["rows"], meta["columns"], meta["float_dtype"], meta["her"])
        if mine != saved:
            raise ValueError(f"replay buffer: the checkpoint's layout (rows, columns, dtype, her) {saved} "
                             f"differs from this run's {mine}")
        n = int(arr["actions"].shape[0])
        for k in self.obs:
            self.obs[k][:n] = arr[f"obs.{k}"]
            self.next_obs[k][:n] = arr[f"next_obs.{k}"]
        self.actions[:n], self.rewards[:n], self.terminated[:n] = arr["actions"], arr["rewards"], arr["terminated"]
        self.count[:] = arr["count"]
        if self.her is not None:
            self.episode_end[:n] = arr["episode_end"]
            self.episode_start[:] = arr["episode_start"]
        self.rng.bit_generator.state = meta["rng"]


def _tensor(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x.astype(np.float32) if x.dtype == np.float16 else x)
