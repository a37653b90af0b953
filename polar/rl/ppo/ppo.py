"""PPO (Schulman et al. 2017) with CleanRL's details: GAE, clipped surrogate objective,
optionally clipped value loss, per-minibatch advantage normalisation, global grad-norm
clipping, Adam (eps 1e-5).

`PPO.update` with `ppo_loss` and autograd is the algorithm as the paper writes it. Two fast
paths, each with that plain fallback and a test that both agree:
- `PPOGrad` (polar/rl/ppo/ppo_grad.py, `PPOConfig.analytic_grad`): the loss's gradient written
  out by hand for an MLP actor-critic over vector observations;
- `FusedAdam` (polar/rl/common/optim.py, `PPOConfig.fused_adam`): the same gradient clipping and Adam
  step as `clip_grad_norm_` + `optimizer.step()`, calling torch's fused kernels directly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from polar.rl.common.batches import PPOSamples, RolloutBatch
from polar.rl.common.optim import FusedAdam
from polar.rl.ppo.config import PPOConfig
from polar.rl.ppo.gae import compute_gae
from polar.rl.ppo.ppo_grad import PPOGrad, supported
from polar.rl.ppo.ppo_policy import PPOPolicy


class PPO:
    def __init__(self, policy: PPOPolicy, cfg: PPOConfig) -> None:
        self.policy = policy
        self.cfg = cfg
        self.params = list(policy.parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=cfg.learning_rate, eps=1e-5, fused=True)
        # The fast paths are CPU code; a learner on a GPU takes autograd and Adam's fused step.
        cpu = policy.device.type == "cpu"
        self._fast = FusedAdam(self.optimizer, self.params) if cfg.fused_adam and cpu else None
        self._grad = PPOGrad(policy, cfg) if cfg.analytic_grad and supported(policy) and cpu else None

    def set_lr(self, lr: float) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = lr

    def samples(self, batch: RolloutBatch) -> PPOSamples:
        """The valid transitions of a rollout, flattened, with GAE advantages and returns.
        Observations are normalised with the statistics they were collected with."""
        cfg, policy = self.cfg, self.policy
        adv, ret = compute_gae(batch.rewards.numpy(), batch.values.numpy(), batch.next_values.numpy(),
                               batch.terminated.numpy(), batch.dones.numpy(), cfg.gamma, cfg.gae_lambda)
        keep = batch.valid.reshape(-1).nonzero().squeeze(-1)  # reset pseudo-steps never reach the loss

        def flat(x: torch.Tensor) -> torch.Tensor:
            return x.reshape(-1, *x.shape[2:])[keep].to(policy.device)

        # prepare: the raw env observations as the rollout's policy.step read them (integer
        # vectors as floats, Discrete ids from 0), then normalised
        return PPOSamples(policy.prepare({k: flat(v) for k, v in batch.obs.items()}),
                          flat(batch.actions), flat(batch.logp), flat(batch.values),
                          flat(torch.from_numpy(adv)), flat(torch.from_numpy(ret)))

    def update(self, batch: RolloutBatch) -> dict[str, float]:
        cfg, policy = self.cfg, self.policy
        data = self.samples(batch)
        mb_size = max(1, data.size // cfg.num_minibatches)
        norm_adv = cfg.norm_adv and mb_size > 1
        if norm_adv and mb_size >= data.size:  # one minibatch, the same every epoch: normalise once
            data, norm_adv = data._replace(advantages=normalized(data.advantages)), False
        # Per-step statistics stay tensors (no sync per gradient step), reduced at the end.
        stats: dict[str, list[torch.Tensor]] = {k: [] for k in ("pg_loss", "v_loss", "entropy")}
        log_ratios: list[torch.Tensor] = []  # [minibatch] per gradient step
        first_ratio_dev = None
        for _epoch in range(cfg.update_epochs):
            epoch_start = len(log_ratios)
            for mb in minibatches(data, mb_size):
                adv = normalized(mb.advantages) if norm_adv else mb.advantages
                if self._grad is not None:  # sets the gradients itself
                    pg_loss, v_loss, entropy, log_ratio, ratio = self._grad(
                        policy.actor_enc(mb.obs), mb.actions, mb.logp, mb.values, adv, mb.returns)
                    self._step(None)
                else:
                    logp, entropy, value = policy.evaluate_actions(mb.obs, mb.actions)
                    loss, pg_loss, v_loss, entropy, log_ratio, ratio = ppo_loss(
                        cfg, logp, entropy, value, mb.logp, mb.values, adv, mb.returns, torch.mean)
                    self._step(loss)
                if first_ratio_dev is None:  # 0 to float rounding unless the stored log-probs are wrong
                    first_ratio_dev = float((ratio.detach() - 1).abs().max())
                log_ratios.append(log_ratio.detach())
                stats["pg_loss"].append(pg_loss.detach())
                stats["v_loss"].append(v_loss.detach())
                stats["entropy"].append(entropy.detach())
            if cfg.target_kl is not None and float(approx_kl(torch.stack(log_ratios[epoch_start:])).mean()) > cfg.target_kl:
                break
        with torch.no_grad():
            lr_ = torch.stack(log_ratios)  # [steps, minibatch]
            stats["approx_kl"] = [approx_kl(lr_)]
            stats["clipfrac"] = [((lr_.exp() - 1).abs() > cfg.clip_coef).float().mean(1)]
        return self._summary(batch, stats, data.returns, data.values, first_ratio_dev, data.size)

    def _summary(self, batch: RolloutBatch, stats: dict[str, list[torch.Tensor]], returns: torch.Tensor,
                 values: torch.Tensor, first_ratio_dev: float | None, size: int) -> dict[str, float]:
        """Move the normaliser (only now, after the update) and reduce the statistics."""
        policy = self.policy
        if policy.norms:
            valid = batch.valid.reshape(-1)
            policy.update_normalizer(policy.to_tensors({k: v.reshape(-1, *v.shape[2:])[valid]
                                                        for k, v in batch.obs.items()}))
        out = {k: float(torch.cat([x.reshape(-1) for x in v]).mean()) for k, v in stats.items()}
        y, pred = returns.cpu().numpy(), values.cpu().numpy()
        var_y = float(np.var(y))
        out["explained_variance"] = float("nan") if var_y == 0 else 1 - float(np.var(y - pred)) / var_y
        out["first_ratio_dev"] = first_ratio_dev or 0.0
        out["transitions"] = float(size)
        return out

    def _step(self, loss: torch.Tensor | None) -> None:
        """Backward (unless the gradients were set: `loss` None), global grad-norm clipping, Adam."""
        if loss is not None:
            for p in self.params:
                p.grad = None
            loss.backward()
        if self._fast is not None:
            self._fast.step(clip_grad_norm=self.cfg.max_grad_norm)
        else:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm, foreach=True)
            self.optimizer.step()


def ppo_loss(cfg: PPOConfig, logp: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor,
             old_logp: torch.Tensor, old_values: torch.Tensor, adv: torch.Tensor, returns: torch.Tensor,
             mean: Callable[[torch.Tensor], torch.Tensor]):
    """PPO's loss of one minibatch: (loss, policy loss, value loss, mean entropy, log-ratio,
    ratio). `mean` averages over the minibatch (recurrent PPO: over its valid steps only)."""
    log_ratio = logp - old_logp
    ratio = log_ratio.exp()
    # The clipped surrogate objective, as a loss: the max of the negated terms.
    pg_loss = mean(torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)))
    if cfg.clip_vloss:
        v_clipped = old_values + (value - old_values).clamp(-cfg.clip_coef, cfg.clip_coef)
        v_loss = 0.5 * mean(torch.max((value - returns).pow(2), (v_clipped - returns).pow(2)))
    else:
        v_loss = 0.5 * mean((value - returns).pow(2))
    loss = pg_loss + cfg.vf_coef * v_loss
    entropy = mean(entropy)
    if cfg.ent_coef:
        loss = loss - cfg.ent_coef * entropy
    return loss, pg_loss, v_loss, entropy, log_ratio, ratio


def approx_kl(log_ratios: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(old || new) per gradient step, from log-ratios [steps, minibatch]."""
    return ((log_ratios.exp() - 1) - log_ratios).mean(1)


def normalized(adv: torch.Tensor) -> torch.Tensor:
    return (adv - adv.mean()) / (adv.std() + 1e-8)


def minibatches(data: PPOSamples, size: int):
    """Shuffled minibatches of `size`; one minibatch holding everything is yielded as is
    (the mean over a batch does not depend on its order)."""
    n = data.size
    if size >= n:
        yield data
        return
    perm = torch.randperm(n)
    for start in range(0, n - size + 1, size):
        yield data.take(perm[start:start + size])
