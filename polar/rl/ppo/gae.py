"""Generalised advantage estimation with Gymnasium's terminated/truncated semantics."""

from __future__ import annotations

import numpy as np


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    dones: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns, all arrays [T, N].

    `next_values[t]` is the value of the *real* observation after step t: V(s_{t+1}) inside
    an episode, V(final observation) where the episode was truncated (time limit), anything
    where it terminated. Only `terminated` zeroes the bootstrap (both flags true counts as
    terminated); `dones` (terminated or truncated) stops the GAE recursion, so no advantage
    leaks across an episode boundary. The rollout's last step bootstraps from V(last obs)
    through the same `next_values`, so a rollout ending mid-episode needs no special case.
    """
    T = rewards.shape[0]
    adv = np.zeros_like(rewards, dtype=np.float32)
    not_term = 1.0 - terminated.astype(np.float32)
    cont = gamma * lam * (1.0 - dones.astype(np.float32))
    deltas = rewards + gamma * not_term * next_values - values
    last = np.zeros(rewards.shape[1:], dtype=np.float32)
    for t in range(T - 1, -1, -1):
        last = deltas[t] + cont[t] * last
        adv[t] = last
    return adv, adv + values
