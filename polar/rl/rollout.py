"""Stepping vector envs into whole batches: in-process, or inside Ray actors.

`Collector` turns any Gymnasium 1.x vector env into a stream of *real* transitions
(obs, action, reward, real next obs, terminated, truncated), whatever its autoreset mode:
- SAME_STEP: a done sub-env's real final observation comes in `info["final_obs"]`;
- NEXT_STEP (Gymnasium's default): the step after a done is a reset pseudo-transition; it is
  marked `valid = False` and never reaches a PPO batch or a replay buffer.
`collect_ppo` / `collect_sac` are the single code path for serial runs and Ray workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from polar.rl.networks import canonical_obs, obs_leaves


def obs_keys(space: gym.Space) -> list[str]:
    return list(obs_leaves(space))


as_obs_dict = canonical_obs


@dataclass
class EpisodeStats:
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    successes: list[float] = field(default_factory=list)  # only where info["success"] exists

    def extend(self, other: EpisodeStats) -> None:
        self.returns += other.returns
        self.lengths += other.lengths
        self.successes += other.successes


class Collector:
    """Wraps a vector env; steps it and yields real transitions plus finished-episode stats."""

    def __init__(self, env: gym.vector.VectorEnv, seed: int) -> None:
        self.env = env
        self.n = env.num_envs
        self.space = env.single_observation_space
        self.keys = obs_keys(self.space)
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
        if self.mode == AutoresetMode.DISABLED:
            raise ValueError("autoreset_mode: DISABLED vector envs are not supported; use SAME_STEP or NEXT_STEP")
        self.seed = seed
        self.obs: dict[str, np.ndarray] | None = None
        self.needs_reset = np.zeros(self.n, dtype=bool)
        self.ep_return = np.zeros(self.n, dtype=np.float64)
        self.ep_length = np.zeros(self.n, dtype=np.int64)
        self.stats = EpisodeStats()

    def current_obs(self) -> dict[str, np.ndarray]:
        if self.obs is None:
            # Seed each sub-env once, on its first reset (seed + i, distinct).
            obs, _ = self.env.reset(seed=self.seed)
            self.obs = as_obs_dict(obs, self.space)
        return self.obs

    def step(self, actions: np.ndarray) -> dict[str, Any]:
        """One vector step. Returns obs, real next obs, reward, terminated, truncated, valid."""
        obs = self.current_obs()
        nxt, reward, term, trunc, info = self.env.step(actions)
        nxt = as_obs_dict(nxt, self.space)
        term, trunc = np.asarray(term, dtype=bool), np.asarray(trunc, dtype=bool)
        valid = ~self.needs_reset
        done = (term | trunc) & valid
        real_next = nxt
        success = _success(info, self.n)
        if self.mode == AutoresetMode.SAME_STEP and done.any():
            real_next = {k: v.copy() for k, v in nxt.items()}
            final_obs = info["final_obs"]
            for i in np.flatnonzero(done):
                fo = as_obs_dict(_expand(final_obs[i]), self.space)
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
        self.obs = nxt
        return {
            "obs": obs, "next_obs": real_next, "reward": np.asarray(reward, dtype=np.float32),
            "terminated": term & valid, "truncated": trunc & valid & ~term, "valid": valid,
        }

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


@torch.inference_mode()
def collect_ppo(policy: Any, collector: Collector, num_steps: int) -> dict[str, Any]:
    """T vector steps with the current policy -> arrays [T, N] ready for GAE and PPO."""
    T, n = num_steps, collector.n
    # Preallocated [T, N] arrays filled in place: no per-step lists, no stacking at the end.
    obs_buf: dict[str, np.ndarray] | None = None
    act_buf: np.ndarray | None = None
    logp, values, rewards = (np.empty((T, n), np.float32) for _ in range(3))
    term, trunc, valid = (np.empty((T, n), bool) for _ in range(3))
    boot = np.zeros((T, n), np.float32)
    for t in range(T):
        obs = collector.current_obs()
        if obs_buf is None:
            obs_buf = {k: np.empty((T, *v.shape), v.dtype) for k, v in obs.items()}
        for k, v in obs.items():
            obs_buf[k][t] = v
        action, lp, value = policy.ppo_step(policy.prepare_dict(obs))
        tr = collector.step(policy.env_action(action))
        a = action.numpy()
        if act_buf is None:
            act_buf = np.empty((T, *a.shape), a.dtype)
        act_buf[t] = a
        logp[t] = lp.numpy()
        values[t] = value.numpy()
        rewards[t] = tr["reward"]
        term[t] = tr["terminated"]
        trunc[t] = tr["truncated"]
        valid[t] = tr["valid"]
        # V(real final obs) where an episode was cut short: the truncation bootstrap.
        if trunc[t].any():
            idx = np.flatnonzero(trunc[t])
            sub = {k: v[idx] for k, v in tr["next_obs"].items()}
            boot[t, idx] = policy.ppo_value(policy.prepare_dict(sub)).numpy()
    last_value = policy.ppo_value(policy.prepare_dict(collector.current_obs())).numpy()
    dones = term | trunc | ~valid
    # next_values[t]: V(s_{t+1}) inside an episode, V(final obs) on truncation (0 on termination,
    # masked in GAE anyway); the last step bootstraps from V(current obs).
    next_values = np.concatenate([values[1:], last_value[None]], 0)
    next_values = np.where(dones, boot, next_values)
    return {
        "obs": obs_buf, "actions": act_buf, "logp": logp,
        "values": values, "rewards": rewards, "terminated": term,
        "dones": dones, "valid": valid, "next_values": next_values,
        "stats": collector.pop_stats(),
    }


@torch.inference_mode()
def collect_sac(policy: Any, collector: Collector, num_steps: int, rng: np.random.Generator | None) -> dict[str, Any]:
    """T vector steps -> the valid transitions, flattened. With `rng` the actions are uniform
    random in [-1, 1] (warm-up), drawn from that generator so runs stay reproducible."""
    out: list[dict[str, Any]] = []
    for _ in range(num_steps):
        obs = collector.current_obs()
        if rng is not None:
            a = torch.as_tensor(rng.uniform(-1, 1, (collector.n, policy.act_dim)).astype(np.float32))
        else:
            a, _ = policy.sac_sample(policy.prepare_dict(obs))
        tr = collector.step(policy.env_action(a))
        v = tr["valid"]
        out.append({
            "obs": {k: x[v] for k, x in obs.items()}, "next_obs": {k: x[v] for k, x in tr["next_obs"].items()},
            "actions": a.numpy()[v], "rewards": tr["reward"][v], "terminated": tr["terminated"][v],
        })
    return {
        "obs": {k: np.concatenate([o["obs"][k] for o in out]) for k in collector.keys},
        "next_obs": {k: np.concatenate([o["next_obs"][k] for o in out]) for k in collector.keys},
        "actions": np.concatenate([o["actions"] for o in out]),
        "rewards": np.concatenate([o["rewards"] for o in out]),
        "terminated": np.concatenate([o["terminated"] for o in out]),
        "stats": collector.pop_stats(),
    }
