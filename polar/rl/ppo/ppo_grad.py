"""PPO's gradient written out by hand for the common policy, instead of autograd's.

For a feedforward actor-critic whose trunks are one `EnsembleMLP` over a parameter-free
encoder (`PPOPolicy.fused`: vector observations), the loss of `ppo.ppo_loss` and its gradient
with respect to every parameter are a few dozen tensor ops: the forward keeps each layer's
output, the backward walks back through the heads and the trunk's layers. At the network
sizes PPO runs on a CPU (two layers of 64), a gradient step costs its number of ops more than
its arithmetic: this takes about 60 where autograd's forward and backward take about 100
(a categorical actor, counted with torch.profiler), and builds no graph. The maths is the
same; the float sums differ in order only (`tests/rl/ppo/test_ppo_grad.py` checks the gradients against autograd's
and a whole training run against the plain path).

Conventions kept from autograd, so both paths agree where the loss is not smooth: the
gradient of `clamp` flows at its bounds (inclusive), and `torch.max` of two equal terms
splits its gradient between them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch.nn import functional as F

from polar.rl.common.networks import tanh
from polar.rl.ppo.config import PPOConfig
from polar.rl.ppo.ppo_policy import PPOPolicy


class LossTerms(NamedTuple):
    """What PPO's update logs of one minibatch, as `ppo_loss` returns them (detached)."""

    pg_loss: torch.Tensor
    v_loss: torch.Tensor
    entropy: torch.Tensor
    log_ratio: torch.Tensor
    ratio: torch.Tensor


def supported(policy: PPOPolicy) -> bool:
    """Whether `PPOGrad` covers this policy: one `EnsembleMLP` over a parameter-free encoder
    (no shared trunk, no LSTM, no CNN), a categorical or Gaussian actor."""
    return policy.fused


class PPOGrad:
    """PPO's loss and its gradient for one policy (`supported`), built once per `PPO`."""

    def __init__(self, policy: PPOPolicy, cfg: PPOConfig) -> None:
        self.policy, self.cfg = policy, cfg
        trunk = policy.ac_trunk
        self.members = trunk.members
        self.layers = [(layer.weight, layer.bias) for layer in trunk.layers]
        self.relu = policy.network_cfg.activation == "relu"
        self.head, self.critic = policy.actor_head, policy.critic_head

    @torch.no_grad()
    def __call__(self, features: torch.Tensor, actions: torch.Tensor, old_logp: torch.Tensor,
                 old_values: torch.Tensor, adv: torch.Tensor, returns: torch.Tensor) -> LossTerms:
        """PPO's loss of one minibatch (`ppo.ppo_loss` with a plain mean) from the encoded
        observations (`policy.actor_enc`: parameter-free); sets `.grad` of every parameter."""
        cfg, policy, relu = self.cfg, self.policy, self.relu
        # Forward, keeping each layer's input and output: [members, B, features] each.
        hs = [features.expand(self.members, -1, -1)]
        for weight, bias in self.layers:
            pre = torch.baddbmm(bias, hs[-1], weight)
            hs.append(torch.relu(pre) if relu else tanh(pre))
        ha, hc = hs[-1].unbind(0)
        (wa, ba), (wc, bc) = (self.head.weight, self.head.bias), (self.critic.weight, self.critic.bias)
        out = F.linear(ha, wa, ba)
        value = F.linear(hc, wc, bc).squeeze(-1)
        n = out.shape[0]

        # The actor's log-prob and mean entropy (categorical logits or a Gaussian mean).
        if policy.discrete:
            logp_all = torch.log_softmax(out, -1)
            index = actions.long().unsqueeze(-1)
            logp = logp_all.gather(-1, index).squeeze(-1)
            probs = logp_all.exp()
            entropy_rows = (probs * logp_all).sum(-1).neg_()
            entropy = entropy_rows.mean()
        else:
            log_std = policy.log_std
            std = log_std.exp()
            z = (actions - out) / std
            logp = (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
            entropy = (log_std + 0.5 * (1 + math.log(2 * math.pi))).sum(-1)  # the same for every row

        # The clipped surrogate: d pg_loss / d ratio is -adv / n where the unclipped term is the
        # max. A tie splits it in halves, the clipped half flowing inside the clip range only;
        # inside, the halves sum to -adv / n, and outside, a tie means adv = 0: `>=` is exact.
        log_ratio = logp - old_logp
        ratio = log_ratio.exp()
        neg_adv = -adv
        s1, s2 = neg_adv * ratio, neg_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
        pg_loss = torch.max(s1, s2).mean()
        g_logp = torch.where(s1 >= s2, neg_adv, 0.0).mul_(ratio).div_(n)  # d exp(x) = exp(x) dx

        diff = value - returns
        if cfg.clip_vloss:
            delta = value - old_values
            d2 = old_values + delta.clamp(-cfg.clip_coef, cfg.clip_coef) - returns
            sq1, sq2 = diff.pow(2), d2.pow(2)
            v_loss = 0.5 * torch.max(sq1, sq2).mean()
            d2 = d2 * ((delta >= -cfg.clip_coef) & (delta <= cfg.clip_coef))
            g_value = torch.where(sq1 > sq2, diff, torch.where(sq1 < sq2, d2, 0.5 * (diff + d2)))  # ties: halves
        else:
            v_loss = 0.5 * diff.pow(2).mean()
            g_value = diff
        g_value = g_value * (cfg.vf_coef / n)

        if policy.discrete:
            # d logp / d logits = onehot(action) - probs; d entropy / d logits = -probs (logp_all + H)
            g_logp = g_logp.unsqueeze(-1)
            g_out = probs * g_logp.neg()
            g_out.scatter_add_(-1, index, g_logp)
            if cfg.ent_coef:
                g_out += (cfg.ent_coef / n) * probs * (logp_all + entropy_rows.unsqueeze(-1))
        else:
            g_out = g_logp.unsqueeze(-1) * z / std
            g_log_std = (g_logp.unsqueeze(-1) * (z.pow(2) - 1)).sum(0)
            policy.log_std.grad = g_log_std - cfg.ent_coef if cfg.ent_coef else g_log_std

        # The heads, then the trunk's layers from the last to the first.
        wa.grad, ba.grad = g_out.t() @ ha, g_out.sum(0)
        g_value = g_value.unsqueeze(-1)
        wc.grad, bc.grad = g_value.t() @ hc, g_value.sum(0)
        g_h = torch.stack([g_out @ wa, g_value * wc])
        for i in range(len(self.layers) - 1, -1, -1):
            (weight, bias), h = self.layers[i], hs[i + 1]
            g_z = torch.ops.aten.threshold_backward(g_h, h, 0) if relu else torch.ops.aten.tanh_backward(g_h, h)
            weight.grad = torch.bmm(hs[i].transpose(1, 2), g_z)
            bias.grad = g_z.sum(1, keepdim=True)
            if i:
                g_h = torch.bmm(g_z, weight.transpose(1, 2))
        return LossTerms(pg_loss, v_loss, entropy, log_ratio, ratio)
