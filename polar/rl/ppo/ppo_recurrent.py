"""Recurrent PPO: PPO over an LSTM policy (`network.lstm`), as CleanRL's `ppo_atari_lstm`.

The rollout keeps each env's memory and records where episodes started and the memory it
began from (`RolloutBatch.starts` / `.memory`). The update's minibatches are whole env columns
of the rollout ([T, envs]): the LSTM is re-run over each column from that first memory, reset
where the rollout reset it, so the first epoch's log-probs equal the stored ones
(`first_ratio_dev` 0). Reset pseudo-steps stay in the sequence (the memory must pass through
them as it did) and are left out of every mean. The loss and the optimiser step are PPO's.
"""

from __future__ import annotations

import torch

from polar.rl.common.batches import RolloutBatch
from polar.rl.ppo.gae import compute_gae
from polar.rl.ppo.ppo import PPO, ppo_loss

STATS = ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac")


class RecurrentPPO(PPO):
    def update(self, batch: RolloutBatch) -> dict[str, float]:
        cfg, policy = self.cfg, self.policy
        if batch.memory is None or batch.starts is None:
            raise ValueError("recurrent PPO needs a rollout of a recurrent policy (its memory and episode starts)")
        T, N = batch.valid.shape
        adv_np, ret_np = compute_gae(batch.rewards.numpy(), batch.values.numpy(), batch.next_values.numpy(),
                                     batch.terminated.numpy(), batch.dones.numpy(), cfg.gamma, cfg.gae_lambda)
        advantages, returns = torch.from_numpy(adv_np).to(policy.device), torch.from_numpy(ret_np).to(policy.device)
        batch = batch.to(policy.device)
        obs = policy.prepare({k: v.reshape(T * N, *v.shape[2:]) for k, v in batch.obs.items()})
        obs = {k: v.reshape(T, N, *v.shape[1:]) for k, v in obs.items()}
        memory = batch.memory.clone()  # collected under inference mode; autograd needs a plain tensor
        envs = max(1, N // cfg.num_minibatches)
        stats: dict[str, list[torch.Tensor]] = {k: [] for k in STATS}
        first_ratio_dev = None
        for _epoch in range(cfg.update_epochs):
            perm = torch.randperm(N) if envs < N else torch.arange(N)
            kls = []
            for start in range(0, N - envs + 1, envs):
                idx = perm[start:start + envs]
                valid = batch.valid[:, idx]
                weights = valid.float() / valid.sum().clamp(min=1)

                def mean(x: torch.Tensor, w: torch.Tensor = weights) -> torch.Tensor:
                    return (x * w).sum()

                logp, entropy, value = policy.evaluate_sequence(
                    {k: v[:, idx].reshape(T * len(idx), *v.shape[2:]) for k, v in obs.items()},
                    batch.actions[:, idx], memory[:, idx], batch.starts[:, idx])
                adv = advantages[:, idx]
                if cfg.norm_adv and int(valid.sum()) > 1:
                    adv = masked_normalized(adv, valid)
                loss, pg_loss, v_loss, entropy, log_ratio, ratio = ppo_loss(
                    cfg, logp, entropy, value, batch.logp[:, idx], batch.values[:, idx], adv, returns[:, idx], mean)
                self._step(loss)
                with torch.no_grad():
                    dev = (ratio - 1).abs()[valid]
                    if first_ratio_dev is None and dev.numel():
                        first_ratio_dev = float(dev.max())
                    kl = mean((ratio - 1) - log_ratio)  # Schulman's k3 estimator of KL(old || new)
                    kls.append(kl)
                    stats["clipfrac"].append(mean(((ratio - 1).abs() > cfg.clip_coef).float()))
                stats["pg_loss"].append(pg_loss.detach())
                stats["v_loss"].append(v_loss.detach())
                stats["entropy"].append(entropy.detach())
            stats["approx_kl"] += kls
            if cfg.target_kl is not None and float(torch.stack(kls).mean()) > cfg.target_kl:
                break
        valid = batch.valid
        return self._summary(batch, stats, returns[valid], batch.values[valid], first_ratio_dev,
                             int(valid.sum()))


def masked_normalized(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(x - mean) / std over the entries where `mask` holds (torch.std's n - 1)."""
    n = mask.sum()
    m = (x * mask).sum() / n
    var = (((x - m) * mask).pow(2)).sum() / (n - 1)
    return (x - m) / (var.sqrt() + 1e-8)
