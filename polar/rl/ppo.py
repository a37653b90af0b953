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
        self._adam: tuple[list[torch.Tensor], ...] | None = None
        self._fast_adam = True

    def _adam_step(self) -> None:
        """`optimizer.step()`, minus its per-call Python (profiler hooks, state lookup, grouping:
        ~60% of the step's cost at CartPole sizes). It calls the same fused kernel with the same
        state tensors, so results and `optimizer.state_dict()` are identical; anything but one
        plain fused-Adam group, or a missing gradient, takes the ordinary path."""
        if self._adam is None or not self._fast_adam:
            self.optimizer.step()  # creates the state on the very first step
            group = self.optimizer.param_groups[0]
            plain = (len(self.optimizer.param_groups) == 1 and group["fused"] and not group["amsgrad"]
                     and not group["maximize"] and not group["capturable"] and not group["differentiable"]
                     and not group.get("decoupled_weight_decay", False))
            states = [self.optimizer.state.get(p, {}) for p in self.params]
            if self._fast_adam and plain and all("exp_avg" in s for s in states):
                self._adam = ([s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                              [s["step"] for s in states])
            return
        grads = [p.grad for p in self.params]
        if any(g is None for g in grads):
            self.optimizer.step()
            return
        group = self.optimizer.param_groups[0]
        exp_avgs, exp_avg_sqs, steps = self._adam
        beta1, beta2 = group["betas"]
        torch._foreach_add_(steps, 1)
        try:
            torch._fused_adam_(self.params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                               lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                               eps=group["eps"], maximize=False, grad_scale=None, found_inf=None)
        except (TypeError, RuntimeError):  # a torch whose private kernel signature changed
            torch._foreach_sub_(steps, 1)
            self._fast_adam = False
            self.optimizer.step()

    def set_lr(self, lr: float) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    def update(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg, policy = self.cfg, self.policy
        self._adam = None  # re-read the optimizer state (a resume may have replaced it)
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
        whole = mb_size >= n  # one minibatch = the whole batch: the order is irrelevant, no gathers
        if whole and cfg.norm_adv and n > 1:
            # The same minibatch every epoch: normalise its advantages once, not per step.
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        # With no entropy bonus the entropy stays out of the autograd graph (its gradient
        # would be multiplied by 0); it is still logged, from the detached head outputs.
        ent_in_loss = cfg.ent_coef != 0
        # Per-step statistics stay tensors (no sync per gradient step) and are reduced in one
        # batched op per epoch: log-ratios for approx KL / clip fraction, heads for entropy.
        pg_losses: list[torch.Tensor] = []
        v_losses: list[torch.Tensor] = []
        ents: list[torch.Tensor] = []
        heads: list[torch.Tensor] = []
        kls: list[torch.Tensor] = []
        clipfracs: list[torch.Tensor] = []
        first_ratio_dev = None
        for _epoch in range(cfg.update_epochs):
            perm = torch.randperm(n) if not whole else None
            log_ratios: list[torch.Tensor] = []
            for start in range(0, n - mb_size + 1, mb_size):
                if perm is None:
                    mb_obs, mb_act, mb_old_logp, mb_old_v, mb_ret, mb_adv = (
                        obs, actions, old_logp, old_values, returns, advantages)
                else:
                    mb = perm[start:start + mb_size]
                    mb_obs = {k: v[mb] for k, v in obs.items()}
                    mb_act, mb_old_logp, mb_old_v, mb_ret, mb_adv = (
                        actions[mb], old_logp[mb], old_values[mb], returns[mb], advantages[mb])
                if ent_in_loss:
                    new_logp, entropy, new_value = policy.ppo_evaluate(mb_obs, mb_act)
                else:
                    new_logp, new_value, head = policy.ppo_logp_value(mb_obs, mb_act)
                    heads.append(head.detach())
                log_ratio = new_logp - mb_old_logp
                ratio = log_ratio.exp()
                if first_ratio_dev is None:
                    first_ratio_dev = float((ratio.detach() - 1).abs().max())
                log_ratios.append(log_ratio.detach())
                if not whole and cfg.norm_adv and mb_adv.numel() > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                neg_adv = -mb_adv
                pg_loss = torch.max(neg_adv * ratio,
                                    neg_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
                if cfg.clip_vloss:
                    v_clipped = mb_old_v + (new_value - mb_old_v).clamp(-cfg.clip_coef, cfg.clip_coef)
                    v_loss = 0.5 * torch.max((new_value - mb_ret).pow(2), (v_clipped - mb_ret).pow(2)).mean()
                else:
                    v_loss = 0.5 * (new_value - mb_ret).pow(2).mean()
                if ent_in_loss:
                    ent = entropy.mean()
                    loss = pg_loss - cfg.ent_coef * ent + cfg.vf_coef * v_loss
                    ents.append(ent.detach())
                else:
                    loss = pg_loss + cfg.vf_coef * v_loss
                for p in self.params:  # zero_grad(set_to_none=True) without its profiler hooks
                    p.grad = None
                loss.backward()
                clip_grad_norm(self.params, cfg.max_grad_norm)
                self._adam_step()
                pg_losses.append(pg_loss.detach())
                v_losses.append(v_loss.detach())
            with torch.no_grad():
                lr_ = torch.stack(log_ratios)  # [steps, mb]
                r_ = lr_.exp()
                epoch_kl = ((r_ - 1) - lr_).mean(1)
                kls.append(epoch_kl)
                clipfracs.append(((r_ - 1).abs() > cfg.clip_coef).float().mean(1))
            if cfg.target_kl is not None and float(epoch_kl.mean()) > cfg.target_kl:
                break
        with torch.no_grad():
            if not ent_in_loss:
                ents = [policy.ppo_entropy(torch.stack(heads)).mean(1)]  # [steps, mb] -> per step
            logged = {"pg_loss": torch.stack(pg_losses), "v_loss": torch.stack(v_losses), "entropy": torch.cat([e.reshape(-1) for e in ents]),
                      "approx_kl": torch.cat(kls), "clipfrac": torch.cat(clipfracs)}
        # Normaliser statistics move only now, after the update (see the comment above).
        policy.update_normalizer(raw_obs)
        y, pred = returns.numpy(), old_values.numpy()
        var_y = float(np.var(y))
        out = {k: float(v.mean()) for k, v in logged.items()}
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
