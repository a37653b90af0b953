"""Action distributions: categorical, Gaussian (PPO) and tanh-squashed Gaussian (SAC)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


def squash_log_std(raw: torch.Tensor) -> torch.Tensor:
    """Map an unbounded head output into [LOG_STD_MIN, LOG_STD_MAX] (CleanRL/SpinningUp)."""
    return LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (torch.tanh(raw) + 1)


def tanh_gaussian_sample(
    mean: torch.Tensor, log_std: torch.Tensor, deterministic: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample y = tanh(u), u ~ N(mean, std); return (y in (-1, 1), log pi(y)).

    Change of variables: log pi(y) = log N(u) - sum log(1 - tanh(u)^2). The correction is
    computed from the pre-squash u in the softplus form
    log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), which stays finite when |tanh(u)| -> 1.
    """
    std = log_std.exp()
    u = mean if deterministic else mean + std * torch.randn_like(mean)
    normal_logp = (-0.5 * ((u - mean) / std).pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    correction = (2 * (math.log(2) - u - F.softplus(-2 * u))).sum(-1)
    return torch.tanh(u), normal_logp - correction


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    return (-0.5 * ((x - mean) / log_std.exp()).pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    return (log_std + 0.5 * (1 + math.log(2 * math.pi))).sum(-1)


def categorical_entropy(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, -1)
    return -(logp.exp() * logp).sum(-1)


def categorical_logp_entropy(logits: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Both from one log-softmax (PPO's update calls this per minibatch)."""
    logp = torch.log_softmax(logits, -1)
    return logp.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)


def categorical_sample(logits: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(action, its log-prob) of a categorical over `logits` [..., A]; deterministic: the
    argmax. Gumbel-max (the argmax after subtracting the log of Exp(1) noise) takes fewer ops
    per rollout step than torch.distributions.Categorical, and one log-softmax serves both."""
    logp = torch.log_softmax(logits, -1)
    a = logits.argmax(-1) if deterministic else (logp - torch.empty_like(logp).exponential_().log_()).argmax(-1)
    return a, logp.gather(-1, a.unsqueeze(-1)).squeeze(-1)
