"""SAC's collection into the replay buffer: one code path for serial runs and Ray workers."""

from __future__ import annotations

import numpy as np
import torch

from polar.rl.common.batches import Transitions
from polar.rl.common.rollout import Collector
from polar.rl.sac.sac_numpy import rollout_actions
from polar.rl.sac.sac_policy import SACPolicy


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


def collect(policy: SACPolicy, collector: Collector, rng: np.random.Generator, num_steps: int,
            warmup: bool) -> Transitions:
    """`collect_sac` as `polar.rl.common.algorithm.Experience` calls it: during the warm-up,
    uniform actions from the generator of the process that collects."""
    return collect_sac(policy, collector, num_steps, rng if warmup else None)
