"""PPO's rollouts: T vector steps of a `Collector` with the current policy, one code path for
serial runs and Ray workers."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from polar.rl.common.batches import RolloutBatch
from polar.rl.common.rollout import Collector
from polar.rl.ppo.ppo_numpy import NumpyStep
from polar.rl.ppo.ppo_policy import PPOPolicy


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


def collect(policy: PPOPolicy, collector: Collector, rng: Any, num_steps: int) -> RolloutBatch:
    """`collect_ppo` as `polar.rl.common.algorithm.Experience` calls it (PPO draws no extra
    random numbers: the policy samples from torch's generator)."""
    return collect_ppo(policy, collector, num_steps)
