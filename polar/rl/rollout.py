"""Stepping vector envs into whole batches: in-process, or inside Ray actors.

`Collector` turns any Gymnasium 1.x vector env into a stream of *real* transitions
(obs, action, reward, real next obs, terminated, truncated), whatever its autoreset mode:
- SAME_STEP: a done sub-env's real final observation comes in `info["final_obs"]`;
- NEXT_STEP (Gymnasium's default): the step after a done is a reset pseudo-transition; it is
  marked `valid = False` and never reaches a PPO batch or a replay buffer.
`collect_ppo` / `collect_sac` are the single code path for serial runs and Ray workers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from polar.rl.batches import EpisodeStats, RolloutBatch, Transitions
from polar.rl.observations import canonical_obs, obs_leaves
from polar.rl.ppo_numpy import NumpyStep
from polar.rl.ppo_policy import PPOPolicy
from polar.rl.sac_numpy import rollout_actions
from polar.rl.sac_policy import SACPolicy


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


def collect_ppo(policy: PPOPolicy, collector: Collector, num_steps: int) -> RolloutBatch:
    """T vector steps with the current policy -> a batch [T, N] ready for GAE and PPO. A
    recurrent policy carries its memory of these envs on the collector, from one rollout to the
    next; the batch holds the memory it started from and where episodes started."""
    T, n = num_steps, collector.n
    # Preallocated numpy arrays [T, N] filled in place (a numpy item write is several times
    # cheaper than a tensor one), handed over as tensors sharing their memory.
    first = collector.current_obs()
    obs_buf = {k: np.empty((T, *v.shape), v.dtype) for k, v in first.items()}
    act_buf: np.ndarray | None = None
    logp, values, rewards = (np.empty((T, n), np.float32) for _ in range(3))
    term, trunc, valid, starts = (np.empty((T, n), bool) for _ in range(4))
    boot = np.zeros((T, n), np.float32)
    recurrent = policy.recurrent
    if recurrent and collector.memory is None:
        collector.memory = policy.initial_memory(n)
    memory0 = collector.memory
    policy_step = NumpyStep(policy) if NumpyStep.supported(policy) else policy.step
    with torch.inference_mode():
        for t in range(T):
            obs = collector.current_obs()
            for k, v in obs.items():
                obs_buf[k][t] = v
            starts[t] = collector.starts
            if recurrent:
                action, lp, value, collector.memory = policy.step_recurrent(
                    policy.prepare(obs), collector.memory, torch.from_numpy(collector.starts))
            else:
                action, lp, value = policy_step(policy.prepare(obs))
            step = collector.step(policy.env_action(action))
            a = action.numpy()
            if act_buf is None:
                act_buf = np.empty((T, *a.shape), a.dtype)
            act_buf[t] = a
            logp[t], values[t] = lp.numpy(), value.numpy()
            rewards[t], term[t], trunc[t], valid[t] = step.reward, step.terminated, step.truncated, step.valid
            # V(real final obs) where an episode was cut short: the truncation bootstrap.
            if step.truncated.any():
                idx = np.flatnonzero(step.truncated)
                sub = policy.prepare({k: v[idx] for k, v in step.next_obs.items()})
                boot[t, idx] = (policy.value_recurrent(sub, collector.memory[:, idx], None) if recurrent
                                else policy.value_tensor(sub)).numpy()
        current = policy.prepare(collector.current_obs())
        last_value = (policy.value_recurrent(current, collector.memory, torch.from_numpy(collector.starts))
                      if recurrent else policy.value_tensor(current)).numpy()
    dones = term | trunc | ~valid
    # next_values[t]: V(s_{t+1}) inside an episode, V(final obs) on truncation (0 on
    # termination, masked in GAE anyway); the last step bootstraps from V(current obs).
    next_values = np.where(dones, boot, np.concatenate([values[1:], last_value[None]], 0))
    assert act_buf is not None
    tensors = [torch.from_numpy(x) for x in (act_buf, logp, values, rewards, term, dones, valid, next_values)]
    return RolloutBatch({k: torch.from_numpy(v) for k, v in obs_buf.items()}, *tensors, collector.pop_stats(),
                        torch.from_numpy(starts), memory0)


def collect_sac(policy: SACPolicy, collector: Collector, num_steps: int,
                rng: np.random.Generator | None = None) -> Transitions:
    """T vector steps -> transitions [T, N] for a replay buffer. With `rng` the actions are
    uniform in [-1, 1] (warm-up), drawn from that generator so runs stay reproducible."""
    T, n = num_steps, collector.n
    first = collector.current_obs()
    obs_buf = {k: np.empty((T, *v.shape), v.dtype) for k, v in first.items()}
    next_buf = {k: np.empty((T, *v.shape), v.dtype) for k, v in first.items()}
    actions = np.empty((T, n, policy.act_dim), np.float32)
    rewards = np.empty((T, n), np.float32)
    term, trunc, valid = (np.empty((T, n), bool) for _ in range(3))
    with torch.inference_mode():
        for t in range(T):
            obs = collector.current_obs()
            if rng is not None:
                a = torch.from_numpy(rng.uniform(-1, 1, (n, policy.act_dim)).astype(np.float32))
            else:
                a = rollout_actions(policy, policy.prepare(obs))
            step = collector.step(policy.env_action(a))
            for k in obs_buf:
                obs_buf[k][t] = obs[k]
                next_buf[k][t] = step.next_obs[k]
            actions[t] = a.numpy()
            rewards[t], term[t], trunc[t], valid[t] = step.reward, step.terminated, step.truncated, step.valid
    return Transitions(obs_buf, actions, rewards, next_buf, term, trunc, valid, collector.pop_stats())
