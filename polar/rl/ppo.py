"""PPO (clipped objective, GAE, value clipping, per-minibatch advantage normalisation), CleanRL-style."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from polar.rl.config import PPOConfig
from polar.rl.gae import compute_gae
from polar.rl.networks import prepare_obs_dict
from polar.rl.policy import Policy


class PPO:
    def __init__(self, policy: Policy, cfg: PPOConfig) -> None:
        self.policy = policy
        self.cfg = cfg
        self.params = list(policy.parameters())
        # fused: one kernel per parameter for the whole Adam step (measured ~2.5x faster on CPU
        # than foreach, which itself beats the default per-tensor loop).
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate, eps=1e-5, fused=True)

    def set_lr(self, lr: float) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg, policy = self.cfg, self.policy
        adv, ret = compute_gae(
            batch["rewards"], batch["values"], batch["next_values"], batch["terminated"],
            batch["dones"], cfg.gamma, cfg.gae_lambda,
        )
        valid = batch["valid"].reshape(-1)
        keep = np.flatnonzero(valid)  # NEXT_STEP reset pseudo-steps never reach the loss

        def flat_np(x: np.ndarray) -> np.ndarray:
            return x.reshape(-1, *x.shape[2:])[keep]

        def flat(x: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(flat_np(x))

        raw_obs = prepare_obs_dict({k: flat_np(v) for k, v in batch["obs"].items()}, policy.observation_space)
        # The normaliser has not moved since collection: identical inputs, ratio exactly 1.
        obs = policy.normalize(raw_obs)
        actions, old_logp = flat(batch["actions"]), flat(batch["logp"])
        old_values, advantages, returns = flat(batch["values"]), flat(adv), flat(ret)
        n = len(keep)
        mb_size = max(1, n // cfg.num_minibatches)
        # Per-minibatch statistics stay tensors until the end: no sync per gradient step.
        logged: dict[str, list[torch.Tensor]] = {k: [] for k in ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac")}
        first_ratio_dev = None
        for _epoch in range(cfg.update_epochs):
            # One minibatch = the whole batch: the order is irrelevant, skip the gathers.
            perm = torch.randperm(n) if mb_size < n else None
            epoch_kl: list[torch.Tensor] = []
            for start in range(0, n - mb_size + 1, mb_size):
                mb: Any = perm[start:start + mb_size] if perm is not None else slice(None)
                mb_obs = {k: v[mb] for k, v in obs.items()}
                new_logp, entropy, new_value = policy.ppo_evaluate(mb_obs, actions[mb])
                log_ratio = new_logp - old_logp[mb]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    if first_ratio_dev is None:
                        first_ratio_dev = float((ratio - 1).abs().max())
                    epoch_kl.append(((ratio - 1) - log_ratio).mean())
                    logged["clipfrac"].append(((ratio - 1).abs() > cfg.clip_coef).float().mean())
                mb_adv = advantages[mb]
                if cfg.norm_adv and mb_adv.numel() > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio,
                                    -mb_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
                if cfg.clip_vloss:
                    v_clipped = old_values[mb] + (new_value - old_values[mb]).clamp(-cfg.clip_coef, cfg.clip_coef)
                    v_loss = 0.5 * torch.max((new_value - returns[mb]).pow(2), (v_clipped - returns[mb]).pow(2)).mean()
                else:
                    v_loss = 0.5 * (new_value - returns[mb]).pow(2).mean()
                ent = entropy.mean()
                loss = pg_loss - cfg.ent_coef * ent + cfg.vf_coef * v_loss
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                clip_grad_norm(self.params, cfg.max_grad_norm)
                self.optimizer.step()
                logged["pg_loss"].append(pg_loss.detach())
                logged["v_loss"].append(v_loss.detach())
                logged["entropy"].append(ent.detach())
            logged["approx_kl"] += epoch_kl
            if cfg.target_kl is not None and float(torch.stack(epoch_kl).mean()) > cfg.target_kl:
                break
        # Normaliser statistics move only now, after the update (see the comment above).
        policy.update_normalizer(raw_obs)
        y, pred = returns.numpy(), old_values.numpy()
        var_y = float(np.var(y))
        out = {k: float(torch.stack(v).mean()) for k, v in logged.items()}
        out["explained_variance"] = float("nan") if var_y == 0 else 1 - float(np.var(y - pred)) / var_y
        out["first_ratio_dev"] = float(first_ratio_dev or 0.0)
        out["transitions"] = float(n)
        return out



def clip_grad_norm(params: list[torch.Tensor], max_norm: float) -> None:
    """`nn.utils.clip_grad_norm_` without its per-call checks (half its cost on CPU)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, torch.clamp(max_norm / (total + 1e-6), max=1.0))
