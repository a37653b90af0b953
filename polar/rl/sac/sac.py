"""SAC (Haarnoja et al. 2018): twin Q with Polyak targets, automatic entropy tuning, a
tanh-squashed Gaussian actor. One update:

1. critic: y = r + gamma (1 - terminated) (min Q'(s', a') - alpha log pi(a'|s')) with a' from
   the current actor on the real next observation; one Adam step on both critics;
2. actor: alpha log pi(a|s) - min Q(s, a), a ~ pi(s), through the *updated* critic, whose
   weights are frozen meanwhile (no weight-gradient matmuls for parameters not updated);
3. temperature: log alpha towards the target entropy -dim(A), from the detached log pi;
4. Polyak averaging of the targets (tau per gradient step).
Alpha is detached in both losses. Both critics (and both targets) are one ensemble: each
layer is one batched matmul for the two.

Where the policy allows (vector observations), the gradients are written out by hand
(`SACGrad`, polar/rl/sac/sac_grad.py; `SACConfig.analytic_grad`): the same maths without
autograd's graph. Every other policy takes autograd.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from polar.rl.common.batches import ReplaySample
from polar.rl.common.optim import FusedAdam
from polar.rl.common.timer import PhaseTimer
from polar.rl.sac.config import SACConfig
from polar.rl.sac.sac_grad import SACGrad, supported
from polar.rl.sac.sac_policy import SACPolicy


class SAC:
    def __init__(self, policy: SACPolicy, cfg: SACConfig, timer: PhaseTimer | None = None) -> None:
        self.policy = policy
        self.cfg = cfg
        self.target_q = copy.deepcopy(policy.q).requires_grad_(False)
        self.q_params = list(policy.q.parameters())
        self.target_params = list(self.target_q.parameters())
        self.actor_params = policy.actor_parameters()
        self.q_optimizer = torch.optim.Adam(self.q_params, lr=cfg.q_lr, fused=True)
        self.actor_optimizer = torch.optim.Adam(self.actor_params, lr=cfg.policy_lr, fused=True)
        self.target_entropy = -float(policy.act_dim)
        self.log_alpha = torch.tensor(float(torch.tensor(cfg.alpha).log()), requires_grad=cfg.autotune,
                                      device=policy.device)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=cfg.q_lr, fused=True) if cfg.autotune else None
        # The fast path (see polar/rl/common/optim.py): the same Adam steps, less Python per step.
        # The fast paths are CPU code; a learner on a GPU takes autograd and Adam's fused step.
        cpu = policy.device.type == "cpu"
        self._steps = {id(opt): (FusedAdam(opt, opt.param_groups[0]["params"]) if cfg.fused_adam and cpu else None)
                       for opt in (self.q_optimizer, self.actor_optimizer, self.alpha_optimizer) if opt is not None}
        self._grad = SACGrad(policy, self.target_q) if cfg.analytic_grad and supported(policy) and cpu else None
        self.updates = 0
        self.timer = timer or PhaseTimer()

    def update(self, batch: ReplaySample) -> dict[str, torch.Tensor]:
        """One gradient step. Returns detached scalar tensors (no sync per step)."""
        cfg, policy, timer, fast = self.cfg, self.policy, self.timer, self._grad
        if policy.device.type != "cpu":
            batch = batch.to(policy.device)
        obs, next_obs = policy.prepare(batch.obs), policy.prepare(batch.next_obs)
        if fast is not None:  # parameter-free encoders: the features stand for the observations
            x, next_x = policy.actor_enc(obs), policy.actor_enc(next_obs)
        alpha = self.log_alpha.detach().exp()
        actor_due, first = self.updates % cfg.policy_frequency == 0, None
        with timer("target_actor"), torch.no_grad():  # a' from the current policy on the real next obs
            if fast is None:
                next_a, next_logp = policy.sample(next_obs)
            elif actor_due:  # and the actor's pass on obs for its first step, in one forward
                next_a, next_logp, first = fast.sample_and_pass(next_x, x)
            else:
                next_a, next_logp = fast.sample(next_x)
        with timer("critic"):
            with torch.no_grad():
                target_q = fast.target_q(next_x, next_a) if fast is not None else self.target_q(next_obs, next_a)
                target = batch.rewards + cfg.gamma * (1.0 - batch.terminated) * (target_q.min(0).values - alpha * next_logp)
            if fast is not None:
                q_loss, q = fast.critic(x, batch.actions, target)
                self._step(self.q_optimizer)
            else:
                q = policy.q(obs, batch.actions)  # [2, B]
                q_loss = 0.5 * (q - target).pow(2).mean(1).sum()
                self._minimize(q_loss, self.q_optimizer)
        out = {"q_loss": q_loss.detach(), "q_mean": q.detach().mean()}
        if actor_due:
            for k in range(cfg.policy_frequency):  # CleanRL's delayed updates: k at once
                with timer("actor"):
                    if fast is not None:
                        actor_loss, logp_pi = fast.actor(x, alpha, first if k == 0 else None)
                        self._step(self.actor_optimizer)
                    else:
                        actor_loss, logp_pi = self._actor_loss(obs, alpha)
                        self._minimize(actor_loss, self.actor_optimizer)
                out |= {"actor_loss": actor_loss.detach(), "entropy": -logp_pi.detach().mean()}
                if self.alpha_optimizer is not None:
                    with timer("alpha"):
                        self._alpha_step(logp_pi.detach(), written_out=fast is not None)
                        alpha = self.log_alpha.detach().exp()
        if self.updates % cfg.target_network_frequency == 0:
            with timer("target"), torch.no_grad():
                torch._foreach_lerp_(self.target_params, self.q_params, cfg.tau)
        self.updates += 1
        out["alpha"] = alpha
        return out

    def _actor_loss(self, obs: dict[str, torch.Tensor], alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """alpha log pi(a|s) - min Q(s, a) through autograd, the critics frozen; (loss, log pi)."""
        a_pi, logp_pi = self.policy.sample(obs)
        for p in self.q_params:
            p.requires_grad_(False)
        q_pi = self.policy.q(obs, a_pi).min(0).values
        for p in self.q_params:
            p.requires_grad_(True)
        return (alpha * logp_pi - q_pi).mean(), logp_pi

    def _alpha_step(self, logp_pi: torch.Tensor, written_out: bool) -> None:
        """One step of log alpha on -(alpha (log pi + target entropy)).mean(): its gradient
        written out (one scalar) on the fast path, through autograd on the plain one."""
        assert self.alpha_optimizer is not None
        if written_out:
            self.log_alpha.grad = -(self.log_alpha.detach().exp() * (logp_pi.mean() + self.target_entropy))
            self._step(self.alpha_optimizer)
        else:
            self._minimize(-(self.log_alpha.exp() * (logp_pi + self.target_entropy)).mean(), self.alpha_optimizer)

    def _minimize(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer) -> None:
        for p in optimizer.param_groups[0]["params"]:
            p.grad = None
        loss.backward()
        self._step(optimizer)

    def _step(self, optimizer: torch.optim.Optimizer) -> None:
        """One Adam step on the gradients set (by autograd or `SACGrad`)."""
        fast = self._steps[id(optimizer)]
        if fast is not None:
            fast.step()
        else:
            optimizer.step()

    def state_dict(self) -> dict[str, Any]:
        return {
            "target_q": self.target_q.state_dict(),
            "q_optimizer": self.q_optimizer.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "alpha_optimizer": self.alpha_optimizer.state_dict() if self.alpha_optimizer else None,
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.target_q.load_state_dict(state["target_q"])
        self.q_optimizer.load_state_dict(state["q_optimizer"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        if self.alpha_optimizer is not None and state["alpha_optimizer"] is not None:
            self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
        self.updates = int(state["updates"])
