"""SAC: twin Q with Polyak targets, automatic entropy tuning, tanh-squashed Gaussian actor."""

from __future__ import annotations

import copy
from typing import Any

import torch

from polar.rl.config import SACConfig
from polar.rl.policy import Policy


class SAC:
    def __init__(self, policy: Policy, cfg: SACConfig) -> None:
        self.policy = policy
        self.cfg = cfg
        self.target_q = copy.deepcopy(policy.q).requires_grad_(False)
        self.actor_params = [p for n, p in policy.named_parameters() if n.startswith("actor_")]
        self.q_params = list(policy.q.parameters())
        self.q_optimizer = torch.optim.Adam(self.q_params, lr=cfg.q_lr, fused=True)
        self.actor_optimizer = torch.optim.Adam(self.actor_params, lr=cfg.policy_lr, fused=True)
        self.target_entropy = -float(policy.act_dim)
        self.log_alpha = torch.tensor(float(torch.tensor(cfg.alpha).log()), requires_grad=cfg.autotune)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=cfg.q_lr) if cfg.autotune else None
        self.updates = 0

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg, policy = self.cfg, self.policy
        obs = policy.prepare_dict(batch["obs"])
        next_obs = policy.prepare_dict(batch["next_obs"])
        actions = torch.as_tensor(batch["actions"])
        rewards = torch.as_tensor(batch["rewards"])
        not_term = 1.0 - torch.as_tensor(batch["terminated"])
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            # a' from the current policy on the real next obs; only `terminated` masks it.
            next_a, next_logp = policy.sac_sample(next_obs)
            target_min = self.target_q(next_obs, next_a).min(0).values - alpha * next_logp
            target = rewards + cfg.gamma * not_term * target_min
        q = policy.q(obs, actions)  # [2, B]
        q_loss = (q - target).pow(2).mean(1).sum() * 0.5
        self.q_optimizer.zero_grad(set_to_none=True)
        q_loss.backward()
        self.q_optimizer.step()
        out = {"q_loss": float(q_loss.detach()), "q_mean": float(q.mean().detach())}
        if self.updates % cfg.policy_frequency == 0:
            for _ in range(cfg.policy_frequency):  # CleanRL: compensate the delay
                a, logp = policy.sac_sample(obs)
                # Freeze the critic while the actor's loss flows through it: no wasted
                # weight-gradient matmuls for parameters this step never updates.
                for p in self.q_params:
                    p.requires_grad_(False)
                q_pi = policy.q(obs, a).min(0).values
                for p in self.q_params:
                    p.requires_grad_(True)
                actor_loss = (alpha * logp - q_pi).mean()
                self.actor_optimizer.zero_grad(set_to_none=True)
                actor_loss.backward()
                self.actor_optimizer.step()
                out["actor_loss"] = float(actor_loss.detach())
                out["entropy"] = float(-logp.mean().detach())
                if self.alpha_optimizer is not None:
                    alpha_loss = -(self.log_alpha.exp() * (logp.detach() + self.target_entropy)).mean()
                    self.alpha_optimizer.zero_grad(set_to_none=True)
                    alpha_loss.backward()
                    self.alpha_optimizer.step()
                    alpha = self.log_alpha.detach().exp()
        if self.updates % cfg.target_network_frequency == 0:
            with torch.no_grad():
                torch._foreach_lerp_(list(self.target_q.parameters()), self.q_params, cfg.tau)
        self.updates += 1
        out["alpha"] = float(alpha)
        return out

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
