"""DQN's loss and gradient written out by hand for a Q-network MLP over vector observations,
instead of autograd's (`DQNConfig.fast`).

One update is then a few dozen tensor ops: the online network's forward on the observations
and (double DQN) the next observations in one pass, keeping each layer's output; the target
network's forward on the next observations; the Huber loss of the taken actions' values; and
the backward of the taken actions' rows only, written into the parameters' `.grad`. The maths
is autograd's: the Huber gradient is the clamped error, the ReLU's gradient is zero where its
output is zero (`threshold_backward`), tanh's is 1 - y^2. The float sums differ in order only;
`tests/rl/dqn/test_dqn.py` checks the gradients against autograd's and a run against the plain
path. Policies with an encoder that has parameters (a CNN, a grid embedding) take autograd.
"""

from __future__ import annotations

import torch
from torch import nn

from polar.rl.common.batches import ReplaySample
from polar.rl.dqn.dqn_policy import DQNPolicy, QNetwork


def supported(policy: DQNPolicy) -> bool:
    return not policy.q.enc.has_parameters and policy.network_cfg.activation in ("relu", "tanh")


def _linears(q: QNetwork) -> list[nn.Linear]:
    return [m for m in q.trunk if isinstance(m, nn.Linear)] + [q.head]


class DQNGrad:
    def __init__(self, policy: DQNPolicy, target_q: QNetwork) -> None:
        self.policy = policy
        self.online, self.target = _linears(policy.q), _linears(target_q)
        self.relu = policy.network_cfg.activation == "relu"

    def _forward(self, layers: list[nn.Linear], x: torch.Tensor, keep: list[torch.Tensor] | None) -> torch.Tensor:
        h = x
        for lin in layers[:-1]:
            h = torch.addmm(lin.bias, h, lin.weight.t())
            h = h.relu_() if self.relu else h.tanh_()
            if keep is not None:
                keep.append(h)
        return torch.addmm(layers[-1].bias, h, layers[-1].weight.t())

    @torch.no_grad()
    def __call__(self, batch: ReplaySample, gamma: float, double: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Sets the online network's gradients of the Huber loss; returns (loss, Q(s, a))."""
        enc = self.policy.q.enc
        x = enc(self.policy.prepare(batch.obs))
        next_x = enc(self.policy.prepare(batch.next_obs))
        n = x.shape[0]
        acts: list[torch.Tensor] = []
        q_all = self._forward(self.online, torch.cat([x, next_x]) if double else x, acts)
        next_q_all = self._forward(self.target, next_x, None)
        if double:
            next_q = next_q_all.gather(1, q_all[n:].argmax(1, keepdim=True))[:, 0]
        else:
            next_q = next_q_all.max(1).values
        y = batch.rewards + gamma * (1.0 - batch.terminated) * next_q
        a = batch.actions[:, :1].long()
        q = q_all[:n].gather(1, a)[:, 0]
        err = q - y
        abs_err = err.abs()
        loss = torch.where(abs_err < 1.0, 0.5 * err * err, abs_err - 0.5).mean()
        # d loss / d Q(s, a): the clamped error over the batch, on the taken action's column only.
        g = torch.zeros_like(q_all[:n]).scatter_(1, a, (err.clamp(-1.0, 1.0) / n)[:, None])
        inputs = [x, *(h[:n] for h in acts)]
        for i in range(len(self.online) - 1, -1, -1):
            lin = self.online[i]
            lin.weight.grad = g.t() @ inputs[i]
            lin.bias.grad = g.sum(0)
            if i == 0:
                break
            g = g @ lin.weight
            out = inputs[i]
            g = torch.ops.aten.threshold_backward(g, out, 0) if self.relu else torch.ops.aten.tanh_backward(g, out)
        return loss, q
