"""DQN (Mnih et al. 2015) with double Q-learning (van Hasselt et al. 2016). One update on a
replay minibatch:

    a'     = argmax_a Q(s', a)                   (the online network; plain DQN: the target's)
    y      = r + gamma (1 - terminated) Q_target(s', a')
    loss   = Huber(Q(s, a) - y)                  (smooth L1, as Stable-Baselines3)

then the global gradient norm clipped to `max_grad_norm` and one Adam step. `DQNConfig.fast`
takes two fast paths with this one as their fallback: the loss's gradient written out by hand
(`DQNGrad`, polar/rl/dqn/dqn_grad.py) for an MLP over vector observations, and `FusedAdam`. The target
network follows the online one (`sync_target`: a copy for tau 1, Polyak averaging otherwise)
on the schedule `DQNAlgorithm` keeps, in env steps.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch.nn import functional as F

from polar.rl.common.batches import ReplaySample
from polar.rl.common.optim import FusedAdam
from polar.rl.dqn.config import DQNConfig
from polar.rl.dqn.dqn_grad import DQNGrad, supported
from polar.rl.dqn.dqn_policy import DQNPolicy


class DQN:
    def __init__(self, policy: DQNPolicy, cfg: DQNConfig) -> None:
        self.policy = policy
        self.cfg = cfg
        self.target_q = copy.deepcopy(policy.q).requires_grad_(False)
        self.params = list(policy.q.parameters())
        self.target_params = list(self.target_q.parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=cfg.learning_rate, fused=True)
        # The fast path (polar/rl/common/optim.py): the same clip and Adam step, less Python per step.
        # The fast paths are CPU code; a learner on a GPU takes autograd and Adam's fused step.
        cpu = policy.device.type == "cpu"
        self._fast = FusedAdam(self.optimizer, self.params) if cfg.fast and cpu else None
        self._grad = DQNGrad(policy, self.target_q) if cfg.fast and supported(policy) and cpu else None
        self.updates = 0

    def update(self, batch: ReplaySample) -> dict[str, torch.Tensor]:
        """One gradient step. Returns detached scalar tensors (no sync per step)."""
        cfg, q_net = self.cfg, self.policy.q
        if self.policy.device.type != "cpu":
            batch = batch.to(self.policy.device)
        if self._grad is not None:
            loss, q = self._grad(batch, cfg.gamma, cfg.double)
            self._step()
            return {"q_loss": loss, "q_mean": q.mean()}
        obs, next_obs = self.policy.prepare(batch.obs), self.policy.prepare(batch.next_obs)
        actions = batch.actions[:, 0].long()
        with torch.no_grad():
            next_q_all = self.target_q(next_obs)
            if cfg.double:
                next_a = q_net(next_obs).argmax(-1)
                next_q = next_q_all.gather(1, next_a[:, None])[:, 0]
            else:
                next_q = next_q_all.max(-1).values
            target = batch.rewards + cfg.gamma * (1.0 - batch.terminated) * next_q
        q = q_net(obs).gather(1, actions[:, None])[:, 0]
        loss = F.smooth_l1_loss(q, target)
        for p in self.params:
            p.grad = None
        loss.backward()
        self._step()
        return {"q_loss": loss.detach(), "q_mean": q.detach().mean()}

    def _step(self) -> None:
        """Clip the gradients' global norm, then one Adam step."""
        if self._fast is not None:
            self._fast.step(self.cfg.max_grad_norm)
        else:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm)
            self.optimizer.step()
        self.updates += 1

    @torch.no_grad()
    def sync_target(self, times: int = 1) -> None:
        """`times` target updates in a row (the online network unchanged between them): one
        Polyak step of weight 1 - (1 - tau)^times; a copy when tau is 1."""
        weight = 1.0 - (1.0 - self.cfg.tau) ** times
        if weight >= 1.0:
            torch._foreach_copy_(self.target_params, self.params)
        else:
            torch._foreach_lerp_(self.target_params, self.params, weight)

    def state_dict(self) -> dict[str, Any]:
        return {"target_q": self.target_q.state_dict(), "optimizer": self.optimizer.state_dict(),
                "updates": self.updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.target_q.load_state_dict(state["target_q"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state["updates"])
