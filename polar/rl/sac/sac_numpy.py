"""A SAC actor's rollout step in numpy.

SAC collects one env step between gradient steps, so its rollout samples actions for one
observation (or one per env) at a time. At that size `SACPolicy.sample` is a dozen torch
ops, each costing its dispatch (several microseconds); the same sample in numpy, on views of
the actor's weights (current while the optimizer updates them in place), costs a fraction of
that. The noise comes from torch's generator, as `sample` draws it, so a seed gives the same
actions. Policies with an encoder that has parameters (a CNN, a grid embedding) and batches
above `numpy_forward.MAX_BATCH` take `sample`. `tests/rl/sac/test_sac_numpy.py` checks both paths agree.
"""

from __future__ import annotations

import numpy as np
import torch

from polar.rl.common.distributions import LOG_STD_MAX, LOG_STD_MIN
from polar.rl.common.numpy_forward import MAX_BATCH, mlp_numpy
from polar.rl.sac.sac_policy import SACPolicy


def rollout_actions(policy: SACPolicy, obs: dict[str, torch.Tensor]) -> torch.Tensor:
    """`policy.sample(obs)[0]` (normalised observations; actions in [-1, 1])."""
    features = policy.actor_enc(obs)
    if policy.actor_enc.has_parameters or features.shape[0] > MAX_BATCH:
        return policy.sample(obs)[0]
    h = mlp_numpy(features.numpy(), policy.actor_trunk, policy.network_cfg.activation == "relu")
    head, raw_head = policy.actor_head, policy.actor_log_std
    mean = h @ head.weight.detach().numpy().T + head.bias.detach().numpy()
    raw = h @ raw_head.weight.detach().numpy().T + raw_head.bias.detach().numpy()
    log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (np.tanh(raw) + 1)
    u = mean + np.exp(log_std) * torch.randn(mean.shape).numpy()
    return torch.from_numpy(np.tanh(u))
