"""DQN's epsilon-greedy collection into the replay buffer: one code path for serial runs and
Ray workers. Each env of each vector step acts at random with that step's epsilon (a uniform
action from the collecting process's generator), greedily otherwise; a step where every env
acts at random runs no network."""

from __future__ import annotations

import numpy as np
import torch

from polar.rl.common.batches import Transitions
from polar.rl.common.rollout import Collector
from polar.rl.dqn.dqn_policy import DQNPolicy


def collect(policy: DQNPolicy, collector: Collector, rng: np.random.Generator, eps: np.ndarray,
            numpy_act: bool = True) -> Transitions:
    """len(eps) vector steps, step t with exploration rate eps[t] -> transitions [T, N]
    (actions [T, N, 1]: the action index, as the replay buffer stores actions)."""
    T, n = len(eps), collector.n
    first = collector.current_obs()
    obs_buf = {k: np.empty((T, *v.shape), v.dtype) for k, v in first.items()}
    next_buf = {k: np.empty((T, *v.shape), v.dtype) for k, v in first.items()}
    actions = np.empty((T, n, 1), np.float32)
    rewards = np.empty((T, n), np.float32)
    term, trunc, valid = (np.empty((T, n), bool) for _ in range(3))
    with torch.inference_mode():
        for t in range(T):
            obs = collector.current_obs()
            explore = rng.random(n) < eps[t]
            a = rng.integers(0, policy.act_dim, n)
            if not explore.all():
                greedy = _greedy(policy, obs, numpy_act)
                a = np.where(explore, a, greedy)
            step = collector.step(policy.env_action(torch.from_numpy(a)))
            for k in obs_buf:
                obs_buf[k][t] = obs[k]
                next_buf[k][t] = step.next_obs[k]
            actions[t, :, 0] = a
            rewards[t], term[t], trunc[t], valid[t] = step.reward, step.terminated, step.truncated, step.valid
    return Transitions(obs_buf, actions, rewards, next_buf, term, trunc, valid, collector.pop_stats())


def _greedy(policy: DQNPolicy, obs: dict[str, np.ndarray], numpy_act: bool) -> np.ndarray:
    prepared = policy.prepare(obs)
    fast = policy.q.greedy_numpy(prepared) if numpy_act else None
    return fast if fast is not None else policy.q(prepared).argmax(-1).numpy()
