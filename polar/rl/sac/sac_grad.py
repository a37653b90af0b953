"""SAC's gradients written out by hand for the common policy, instead of autograd's.

For a `SACPolicy` over a parameter-free encoder (vector observations: Pendulum, MuJoCo), the
losses of `sac.SAC.update` and their gradients are a few dozen tensor ops each:
- critic: each critic's forward (ReLUs in place) and backward to its weights, written into
  their `.grad` in place;
- actor: the actor's forward, the tanh-squashed sample, both critics' forward on it, then
  each sample's gradient back through the critic `min` picked for it (the other's gradient
  is zero), to the action only (the critics are frozen: no weight-gradient matmuls), then
  the actor's backward through the squash, the log-std head and the trunk.
The maths is autograd's: the reparameterised sample consumes the same random numbers, the
log-prob's correction has the same softplus form, the ReLU's gradient is `threshold_backward`
(zero where the output is zero), and `min` sends the gradient to the critic it picked. The
float sums differ in order only; `tests/rl/sac/test_sac_grad.py` checks every gradient against
autograd's and a short training run against the plain path.

What it saves against autograd: the graph and its engine; the critics' weight gradients in
the actor step; half the rows of the critics' input gradients there (the picked critic's
only); the batched matmul of the twin ensemble, slower on this CPU than one plain matmul
per critic; and, with `sample_and_pass`, one of the actor's two forwards per update.
`benchmarks/sac_floor_bench.py` times it against autograd on one trained state.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from polar.rl.common.distributions import LOG_STD_MAX, LOG_STD_MIN
from polar.rl.common.networks import tanh
from polar.rl.sac.sac_policy import SACPolicy

_LOG_STD_SCALE = 0.5 * (LOG_STD_MAX - LOG_STD_MIN)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)

Layers = list[tuple[torch.Tensor, torch.Tensor]]


class ActorPass(NamedTuple):
    """The actor's forward on a batch and its reparameterised sample: what its backward needs."""

    hs: list[torch.Tensor]  # each trunk layer's input, then the trunk's output
    y: torch.Tensor  # the action, tanh(u)
    logp: torch.Tensor
    t: torch.Tensor  # tanh of the raw log-std head
    std: torch.Tensor
    noise: torch.Tensor


def supported(policy: SACPolicy) -> bool:
    """Whether `SACGrad` covers this policy: both encoders without parameters (no CNN or
    grid embedding), which is every policy over vector observations, and hidden layers."""
    return (not policy.actor_enc.has_parameters and not policy.q.enc.has_parameters
            and len(policy.network_cfg.hidden) > 0)


def _relu_grad_(grad: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """ReLU's backward from its output, in place, as autograd computes it (zero where out == 0)."""
    return torch.ops.aten.threshold_backward.grad_input(grad, out, 0, grad_input=grad)


def _grads(params: list[torch.Tensor]) -> list[torch.Tensor]:
    """The parameters' `.grad` tensors, allocated on first use and then written in place."""
    for p in params:
        if p.grad is None:
            p.grad = torch.empty_like(p)
    return [p.grad for p in params]  # type: ignore[misc]


class SACGrad:
    """SAC's sample, critic gradient and actor gradient for one policy (`supported`).

    Each critic runs on its own slice of the ensemble's weights (views, current while the
    optimizer and the Polyak average update them in place): a plain matmul beats a batched
    one on this CPU, and one critic's activations stay in cache for its backward."""

    def __init__(self, policy: SACPolicy, target_q: nn.Module) -> None:
        self.policy = policy
        self.relu = policy.network_cfg.activation == "relu"
        linears = [m for m in policy.actor_trunk if isinstance(m, nn.Linear)]
        self.trunk: Layers = [(m.weight, m.bias) for m in linears]
        self.heads = policy.actor_head, policy.actor_log_std
        self.actor_params = [p for m in (*linears, *self.heads) for p in (m.weight, m.bias)]
        self.q_params = list(policy.q.parameters())
        self.q = self._members(policy.q)
        self.target = self._members(target_q)
        self._q_grads: list[torch.Tensor] = []
        self._q_grad_views: list[Layers] = []

    @staticmethod
    def _members(q: nn.Module) -> list[Layers]:
        """Per critic, each layer's (weight [in, out], bias [1, out]): views of the ensemble's."""
        layers = [(layer.weight.detach(), layer.bias.detach()) for layer in q.layers]
        return [[(w[m], b[m]) for w, b in layers] for m in range(len(layers[0][0]))]

    # -- forward ----------------------------------------------------------------------------

    def _actor(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
        """Each trunk layer's input and the last output ([B, features] each), the mean and
        the raw log-std head ([B, A] each)."""
        hs = [x]
        for weight, bias in self.trunk:
            pre = torch.addmm(bias, hs[-1], weight.t())
            hs.append(pre.relu_() if self.relu else tanh(pre))
        head, log_std = self.heads
        return hs, torch.addmm(head.bias, hs[-1], head.weight.t()), torch.addmm(log_std.bias, hs[-1], log_std.weight.t())

    def _pass(self, x: torch.Tensor) -> ActorPass:
        """The actor on [B, features] and `tanh_gaussian_sample(mean, squash_log_std(raw))`."""
        hs, mean, raw = self._actor(x)
        t = torch.tanh(raw)
        log_std = (t + 1).mul_(_LOG_STD_SCALE).add_(LOG_STD_MIN)
        std = log_std.exp()
        noise = torch.randn_like(mean)
        u = torch.addcmul(mean, std, noise)
        # log N(u) - sum log(1 - tanh(u)^2), the correction in its softplus form (as
        # distributions.py): -0.5 noise^2 - log_std - log(2 pi)/2 - 2 (log 2 - u - softplus(-2u))
        terms = noise.square().mul_(-0.5).sub_(log_std).add_(u, alpha=2.0)
        terms += torch.nn.functional.softplus(u * -2.0).mul_(2.0)
        logp = terms.sum(-1) - mean.shape[-1] * (_HALF_LOG_2PI + 2 * math.log(2))
        return ActorPass(hs, torch.tanh(u), logp, t, std, noise)

    @staticmethod
    def _critic(layers: Layers, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """One critic on [B, in]: each layer's input ([B, features], ReLUs in place) and Q [B, 1]."""
        hs = [x]
        for weight, bias in layers[:-1]:
            hs.append(torch.addmm(bias, hs[-1], weight).relu_())
        weight, bias = layers[-1]
        return hs, torch.addmm(bias, hs[-1], weight)

    @torch.no_grad()
    def sample(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`policy.sample` of encoded observations: (action in [-1, 1], log pi)."""
        p = self._pass(x)
        return p.y, p.logp

    @torch.no_grad()
    def sample_and_pass(self, next_x: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, ActorPass]:
        """`sample(next_x)` and the actor's pass on `x` for `actor`, as one forward on both
        batches: the same weights (the actor steps after both), the same noise draws in the
        same order, half the ops."""
        p, n = self._pass(torch.cat([next_x, x])), len(next_x)
        first = ActorPass([h[n:] for h in p.hs], *(v[n:] for v in p[1:]))
        return p.y[:n], p.logp[:n], first

    @torch.no_grad()
    def target_q(self, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """The target critics' Q [2, B] (`SAC.target_q`)."""
        xa = torch.cat([x, action], -1)
        return torch.cat([self._critic(layers, xa)[1] for layers in self.target], 1).t()

    # -- backward ---------------------------------------------------------------------------

    def _q_grad_slices(self) -> list[Layers]:
        """Per critic, each layer's (weight, bias) `.grad` slices, written in place."""
        grads = _grads(self.q_params)
        if len(grads) != len(self._q_grads) or any(a is not b for a, b in zip(grads, self._q_grads, strict=True)):
            self._q_grads = grads
            pairs = list(zip(grads[::2], grads[1::2], strict=True))
            self._q_grad_views = [[(w[m], b[m]) for w, b in pairs] for m in range(len(self.q))]
        return self._q_grad_views

    @torch.no_grad()
    def critic(self, x: torch.Tensor, actions: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sets `.grad` of both critics' weights for 0.5 sum_i mean (Q_i(s, a) - target)^2;
        returns (that loss, Q [2, B])."""
        xa = torch.cat([x, actions], -1)
        target = target.unsqueeze(1)
        qs = []
        for layers, grads in zip(self.q, self._q_grad_slices(), strict=True):
            hs, q = self._critic(layers, xa)
            qs.append(q)
            grad = (q - target).div_(len(q))  # dL/dQ [B, 1]
            for i in reversed(range(len(layers))):
                torch.mm(hs[i].t(), grad, out=grads[i][0])
                torch.sum(grad, 0, keepdim=True, out=grads[i][1])
                if i > 0:  # the last layer's input gradient is an outer product (one output)
                    grad = grad * layers[i][0].t() if i == len(layers) - 1 else grad.mm(layers[i][0].t())
                    _relu_grad_(grad, hs[i])
        q = torch.cat(qs, 1).t()
        return 0.5 * (q - target.t()).square().mean(1).sum(), q

    @staticmethod
    def _input_grad(layers: Layers, hs: list[torch.Tensor], dq: float) -> torch.Tensor:
        """d(dq * Q)/d(input) [k, in] of one critic from its hidden outputs `hs` ([k, h] each):
        the weights' gradients are not needed (the actor step keeps the critics frozen)."""
        grad = torch.ops.aten.threshold_backward(layers[-1][0].t() * dq, hs[-1], 0)  # [1, h] -> [k, h]
        for i in reversed(range(1, len(layers) - 1)):
            grad = _relu_grad_(grad.mm(layers[i][0].t()), hs[i - 1])
        return grad.mm(layers[0][0].t())

    @torch.no_grad()
    def actor(self, x: torch.Tensor, alpha: torch.Tensor, forward: ActorPass | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Sets `.grad` of the actor's weights for mean(alpha log pi(a|s) - min_i Q_i(s, a)),
        a ~ pi(s) reparameterised, the critics frozen; returns (that loss, log pi [B]).
        `forward`: the actor's pass on `x` already made with the current weights."""
        hs, y, logp, t, std, noise = forward if forward is not None else self._pass(x)
        xy = torch.cat([x, y], -1)
        critics = [self._critic(layers, xy) for layers in self.q]
        q_min, picked = torch.cat([q for _, q in critics], 1).min(1)
        n = len(q_min)
        loss = (alpha * logp - q_min).mean()
        # dL/dQ_i is -1/n where `min` picked critic i, else 0: each row goes back through the
        # critic it picked only, to the action
        dy = torch.empty_like(y)
        for i, (layers, (chs, _)) in enumerate(zip(self.q, critics, strict=True)):
            rows = (picked == i).nonzero().squeeze(1)
            dx = self._input_grad(layers, [h.index_select(0, rows) for h in chs[1:]], -1.0 / n)
            dy.index_copy_(0, rows, dx[:, x.shape[-1]:])
        # y = tanh(u), u = mean + std * noise; d log pi/du = 2 y (the correction's), d log
        # pi/d log_std = -1 directly; log_std = squash(raw)
        a_n = alpha / n
        du = torch.addcmul(dy.mul_(1 - y * y), y, a_n * 2)
        draw = (du * std * noise - a_n).mul_((1 - t * t).mul_(_LOG_STD_SCALE))
        grads = _grads(self.actor_params)
        (head, log_std), h = self.heads, hs[-1]
        torch.mm(du.t(), h, out=grads[-4])
        torch.sum(du, 0, out=grads[-3])
        torch.mm(draw.t(), h, out=grads[-2])
        torch.sum(draw, 0, out=grads[-1])
        grad = torch.addmm(du.mm(head.weight), draw, log_std.weight)
        for i in reversed(range(len(self.trunk))):
            out = hs[i + 1]
            grad = _relu_grad_(grad, out) if self.relu else grad.mul_(1 - out * out)
            torch.mm(grad.t(), hs[i], out=grads[2 * i])
            torch.sum(grad, 0, out=grads[2 * i + 1])
            if i > 0:
                grad = grad.mm(self.trunk[i][0])
        return loss, logp
