"""Stepping vector envs into whole batches: in-process, or inside Ray actors.

`Collector` turns any Gymnasium 1.x vector env into a stream of *real* transitions
(obs, action, reward, real next obs, terminated, truncated), whatever its autoreset mode:
- SAME_STEP: a done sub-env's real final observation comes in `info["final_obs"]`;
- NEXT_STEP (Gymnasium's default): the step after a done is a reset pseudo-transition; it is
  marked `valid = False` and never reaches a PPO batch or a replay buffer.
Each algorithm's collect function (`polar/rl/<algo>/collect.py`) steps a `Collector` with its
policy: the single code path for serial runs and Ray workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from polar.rl.common.batches import EpisodeStats
from polar.rl.common.observations import canonical_obs, obs_leaves

if TYPE_CHECKING:
    import torch


class VectorStep(NamedTuple):
    """One vector step of real transitions, arrays [N]."""

    obs: dict[str, np.ndarray]
    next_obs: dict[str, np.ndarray]  # the real next obs (the final one where an episode ended)
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray  # and not terminated
    valid: np.ndarray  # False on a NEXT_STEP reset pseudo-step


class Collector:
    """Wraps a vector env; steps it and yields real transitions plus finished-episode stats."""

    def __init__(self, env: gym.vector.VectorEnv, seed: int) -> None:
        self.env = env
        self.n = env.num_envs
        self.space = env.single_observation_space
        self.keys = list(obs_leaves(self.space))
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
        if self.mode == AutoresetMode.DISABLED:
            raise ValueError("autoreset_mode: DISABLED vector envs are not supported; use SAME_STEP or NEXT_STEP")
        self.seed = seed
        self.obs: dict[str, np.ndarray] | None = None
        self.needs_reset = np.zeros(self.n, dtype=bool)
        self.starts = np.ones(self.n, dtype=bool)  # the current obs is the first of its episode
        self.memory: torch.Tensor | None = None  # a recurrent policy's memory of these envs
        self.ep_return = np.zeros(self.n, dtype=np.float64)
        self.ep_length = np.zeros(self.n, dtype=np.int64)
        self.stats = EpisodeStats()

    def current_obs(self) -> dict[str, np.ndarray]:
        if self.obs is None:
            # Seed each sub-env once, on its first reset (seed + i, distinct).
            obs, _ = self.env.reset(seed=self.seed)
            self.obs = canonical_obs(obs, self.space)
        return self.obs

    def step(self, actions: np.ndarray) -> VectorStep:
        """One vector step. Returns obs, real next obs, reward, terminated, truncated, valid."""
        obs = self.current_obs()
        nxt, reward, term, trunc, info = self.env.step(actions)
        nxt = canonical_obs(nxt, self.space)
        term, trunc = np.asarray(term, dtype=bool), np.asarray(trunc, dtype=bool)
        valid = ~self.needs_reset
        done = (term | trunc) & valid
        real_next = nxt
        success = _success(info, self.n)
        if self.mode == AutoresetMode.SAME_STEP and done.any():
            real_next = {k: v.copy() for k, v in nxt.items()}
            final_obs = info["final_obs"]
            for i in np.flatnonzero(done):
                fo = canonical_obs(_expand(final_obs[i]), self.space)
                for k in self.keys:
                    real_next[k][i] = fo[k][0]
            success = _success(info.get("final_info", {}), self.n)
        self.ep_return += np.where(valid, reward, 0.0)
        self.ep_length += valid
        for i in np.flatnonzero(done):
            self.stats.returns.append(float(self.ep_return[i]))
            self.stats.lengths.append(int(self.ep_length[i]))
            if success is not None and success[1][i]:
                self.stats.successes.append(float(success[0][i]))
        self.ep_return[done] = 0.0
        self.ep_length[done] = 0
        if self.mode == AutoresetMode.NEXT_STEP:
            self.needs_reset = done
            self.starts = ~valid  # the reset pseudo-step returned a first observation
        else:
            self.starts = done
        self.obs = nxt
        return VectorStep(obs, real_next, np.asarray(reward, dtype=np.float32),
                          term & valid, trunc & valid & ~term, valid)

    def pop_stats(self) -> EpisodeStats:
        s, self.stats = self.stats, EpisodeStats()
        return s


def _expand(single: Any) -> Any:
    if isinstance(single, dict):
        return {k: np.asarray(v)[None] for k, v in single.items()}
    return np.asarray(single)[None]


def _success(info: dict[str, Any], n: int) -> tuple[np.ndarray, np.ndarray] | None:
    if "success" not in info:
        return None
    mask = info.get("_success", np.ones(n, dtype=bool))
    return np.asarray(info["success"], dtype=np.float64), np.asarray(mask, dtype=bool)
