"""Typed batches passed between collectors, buffers and the algorithms.

- `RolloutBatch`: T vector steps of N envs for PPO, tensors [T, N] (observations [T, N, ...]);
- `PPOSamples`: the valid transitions of a rollout, flattened, with advantages and returns;
- `Transitions`: T vector steps of N envs for a replay buffer, numpy arrays [T, N];
- `ReplaySample`: a minibatch drawn from a replay buffer, tensors [B].
Observations are `dict[str, tensor]` keyed by observation key (see `polar.rl.common.observations`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch


@dataclass
class EpisodeStats:
    """Returns, lengths and (where the env reports `info["success"]`) successes of the
    episodes that finished during a collection."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    successes: list[float] = field(default_factory=list)

    def extend(self, other: EpisodeStats) -> None:
        self.returns += other.returns
        self.lengths += other.lengths
        self.successes += other.successes

    @staticmethod
    def merged(stats: list[EpisodeStats]) -> EpisodeStats:
        out = EpisodeStats()
        for s in stats:
            out.extend(s)
        return out


class RolloutBatch(NamedTuple):
    """What PPO collects: every tensor is [T, N] (T steps of N envs)."""

    obs: dict[str, torch.Tensor]
    actions: torch.Tensor  # the policy's action: a category, or the *unclipped* Gaussian sample
    logp: torch.Tensor  # log-prob of `actions` under the collecting policy
    values: torch.Tensor  # V(s_t)
    rewards: torch.Tensor
    terminated: torch.Tensor  # bool; only this zeroes the bootstrap
    dones: torch.Tensor  # bool: terminated, truncated or a reset pseudo-step (ends GAE's recursion)
    valid: torch.Tensor  # bool: False on NEXT_STEP reset pseudo-steps (never trained on)
    next_values: torch.Tensor  # V(s_{t+1}); V(real final obs) where an episode was truncated
    stats: EpisodeStats
    starts: torch.Tensor | None = None  # bool: obs t is the first of its episode (recurrent PPO)
    memory: torch.Tensor | None = None  # a recurrent policy's memory [2, N, H] before step 0

    @property
    def num_transitions(self) -> int:
        return int(self.valid.sum())

    def to(self, device: torch.device) -> RolloutBatch:
        """Every tensor on `device` (the learner's; the statistics stay as they are)."""
        return _to_device(self, device)

    @staticmethod
    def concat(batches: list[RolloutBatch]) -> RolloutBatch:
        """Worker batches [T, N_w] -> one batch [T, sum N_w] (a memory [2, N_w, H]: [2, sum N_w, H])."""
        return _concat_envs(batches, lambda xs: torch.cat(xs, 1))


class PPOSamples(NamedTuple):
    """Valid rollout transitions, flattened to [M], ready for minibatches."""

    obs: dict[str, torch.Tensor]
    actions: torch.Tensor
    logp: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor

    @property
    def size(self) -> int:
        return int(self.logp.shape[0])

    def take(self, idx: torch.Tensor) -> PPOSamples:
        return PPOSamples({k: v[idx] for k, v in self.obs.items()},
                          *(getattr(self, name)[idx] for name in PPOSamples._fields[1:]))


class Transitions(NamedTuple):
    """What SAC collects for its replay buffer: arrays [T, N] (observations [T, N, ...]); the
    next observation is the real one (the final observation where an episode ended)."""

    obs: dict[str, np.ndarray]
    actions: np.ndarray  # in [-1, 1] (the policy's squashed action, before rescaling)
    rewards: np.ndarray
    next_obs: dict[str, np.ndarray]
    terminated: np.ndarray  # bool
    truncated: np.ndarray  # bool (and not terminated)
    valid: np.ndarray  # bool: False on NEXT_STEP reset pseudo-steps (never stored)
    stats: EpisodeStats

    @property
    def num_transitions(self) -> int:
        return int(self.valid.sum())

    def empty_like(self) -> Transitions:
        """A batch of this shape with no valid transition and no episode: the stand-in for a
        lost Ray worker's columns (the replay buffer stores none of it)."""
        return self._replace(valid=np.zeros_like(self.valid), terminated=np.zeros_like(self.terminated),
                             truncated=np.zeros_like(self.truncated), stats=EpisodeStats())

    @staticmethod
    def concat(batches: list[Transitions]) -> Transitions:
        """Worker batches [T, N_w] -> one batch [T, sum N_w]: each env stays one column."""
        return _concat_envs(batches, lambda xs: np.concatenate(xs, 1))


def _concat_envs(batches: list[Any], cat: Callable[[list[Any]], Any]) -> Any:
    """Concatenate same-typed batches field by field along the env axis (observation dicts
    key by key; episode statistics merged)."""
    if len(batches) == 1:
        return batches[0]
    fields = []
    for values in zip(*batches, strict=True):
        first = values[0]
        if isinstance(first, dict):
            fields.append({k: cat([v[k] for v in values]) for k in first})
        elif isinstance(first, EpisodeStats):
            fields.append(EpisodeStats.merged(list(values)))
        elif first is None:
            fields.append(None)
        else:
            fields.append(cat(list(values)))
    return type(batches[0])(*fields)


class ReplaySample(NamedTuple):
    """A replay minibatch as tensors [B] (observations raw: not yet normalised)."""

    obs: dict[str, torch.Tensor]
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: dict[str, torch.Tensor]
    terminated: torch.Tensor  # float 0/1

    def to(self, device: torch.device) -> ReplaySample:
        """Every tensor on `device` (the learner's)."""
        return _to_device(self, device)


def _to_device(batch: Any, device: torch.device) -> Any:
    """A batch NamedTuple with its tensors (and dicts of tensors) moved to `device`."""
    def move(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return x.to(device, non_blocking=True)
        if isinstance(x, dict):
            return {k: move(v) for k, v in x.items()}
        return x

    return type(batch)(*(move(x) for x in batch))
