"""A feedforward PPO policy's rollout step in numpy.

A rollout step runs the policy on a handful of observations (one per env). At that size a
torch op costs its dispatch, several microseconds, and `PPOPolicy.step` is some twenty of
them; a numpy op costs about one. For a `PPOPolicy.fused` policy (one `EnsembleMLP` over a
parameter-free encoder: vector observations), `NumpyStep` computes what `step` computes (the
action, its log-prob, V(s)) with numpy on views of the parameters: no copies, and current
while the optimizer updates the weights in place. The noise is drawn from torch's generator,
as `step` draws it, so a seed gives the same actions. Batches above `MAX_BATCH` (where the
ops' arithmetic outweighs their dispatch) and other policies take `step`.
`tests/rl/ppo/test_ppo_numpy.py` checks both paths against each other.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from polar.rl.common.numpy_forward import MAX_BATCH
from polar.rl.ppo.ppo_policy import PPOPolicy


class NumpyStep:
    """`policy.step` for normalised observations, in numpy where `supported(policy)`."""

    def __init__(self, policy: PPOPolicy) -> None:
        self.policy = policy
        self.relu = policy.network_cfg.activation == "relu"

        def view(t: torch.Tensor) -> np.ndarray:
            return t.detach().numpy()

        self.layers = [(view(layer.weight), view(layer.bias)) for layer in policy.ac_trunk.layers]
        self.actor = view(policy.actor_head.weight).T, view(policy.actor_head.bias)
        self.critic = view(policy.critic_head.weight).T, view(policy.critic_head.bias)
        self.log_std = None if policy.discrete else view(policy.log_std)

    @staticmethod
    def supported(policy: PPOPolicy) -> bool:
        return policy.fused

    def __call__(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action, its log-prob, V(s)) as tensors, as `PPOPolicy.step(obs)` returns them."""
        features = self.policy.actor_enc(obs)
        n = features.shape[0]
        if n > MAX_BATCH:
            return self.policy.step(obs)
        h = features.numpy()
        for weight, bias in self.layers:  # [n, in] @ [2, in, out] -> [2, n, out]
            z = np.matmul(h, weight)
            z += bias
            h = np.maximum(z, 0, out=z) if self.relu else np.tanh(z, out=z)
        (wa, ba), (wc, bc) = self.actor, self.critic
        out = h[0] @ wa + ba
        value = (h[1] @ wc + bc)[:, 0]
        if self.log_std is None:  # categorical: Gumbel-max, as distributions.categorical_sample
            m = out.max(-1, keepdims=True)
            logp_all = out - (m + np.log(np.exp(out - m).sum(-1, keepdims=True)))
            noise = torch.empty(out.shape).exponential_().numpy()
            action = (logp_all - np.log(noise)).argmax(-1)
            logp = np.take_along_axis(logp_all, action[:, None], -1)[:, 0]
        else:  # the unclipped Gaussian sample and its log-prob, as PPOPolicy._sample
            std = np.exp(self.log_std)
            action = out + std * torch.randn(out.shape).numpy()
            logp = (-0.5 * ((action - out) / std) ** 2 - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        return torch.from_numpy(action), torch.from_numpy(logp), torch.from_numpy(value)
