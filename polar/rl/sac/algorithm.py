"""SAC behind the trainer's seam (`polar.rl.common.algorithm.Algorithm`): collect a vector
step (a chunk of `worker_steps` per Ray worker), store it in the replay buffer, then
`gradient_steps` updates per vector step once `learning_starts` env steps are in."""

from __future__ import annotations

from typing import Any

import torch

from polar.rl.common.algorithm import Experience, Update
from polar.rl.common.batches import Transitions
from polar.rl.common.buffers import ReplayBuffer
from polar.rl.common.timer import PhaseTimer
from polar.rl.config import TrainConfig
from polar.rl.sac import collect
from polar.rl.sac.sac import SAC
from polar.rl.sac.sac_policy import SACPolicy


class SACAlgorithm:
    def __init__(self, policy: SACPolicy, cfg: TrainConfig, timer: PhaseTimer) -> None:
        self.c = c = cfg.sac
        self.timer = timer
        self.num_envs = c.num_envs
        self.sac = SAC(policy, c, timer)
        self.replay = ReplayBuffer(policy.observation_space, policy.act_dim, min(c.buffer_size, cfg.steps),
                                   c.num_envs * max(1, cfg.workers), cfg.seed, c.her, c.buffer_float)

    def collect(self, source: Experience, env_steps: int) -> Transitions:
        warmup = env_steps < self.c.learning_starts
        with self.timer("env"):
            # Workers return chunks; updates follow at the same ratio per env step as serial.
            steps = self.c.worker_steps if source.workers else 1
            batch = Transitions.concat(source.collect(collect.collect, steps, warmup, pad=Transitions.empty_like))
        for w in source.renewed():  # a replaced worker's envs: their stored episodes end here
            self.replay.end_episodes(range(w * self.num_envs, (w + 1) * self.num_envs))
        return batch

    def update(self, batch: Transitions, before: int, env_steps: int, updates: int) -> Update:
        c = self.c
        with self.timer("replay_add"):
            self.replay.add(batch)
        if env_steps < c.learning_starts:
            return Update(None, 0)
        grad_steps = c.gradient_steps * max(1, batch.num_transitions // self.num_envs)
        acc: list[dict[str, torch.Tensor]] = []
        for _ in range(grad_steps):
            with self.timer("replay_sample"):
                sample = self.replay.sample(c.batch_size)
            acc.append(self.sac.update(sample))
        # One metrics row per ~1000 env steps keeps metrics.jsonl small.
        if before // 1000 != env_steps // 1000:
            keys = dict.fromkeys(k for m in acc for k in m)
            return Update({k: float(torch.stack([m[k] for m in acc if k in m]).mean()) for k in keys}, grad_steps)
        return Update(None, grad_steps)

    def lr(self, updates: int) -> float:
        return self.c.policy_lr

    def state_dict(self) -> dict[str, Any]:
        return self.sac.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sac.load_state_dict(state)

    def buffer_state(self) -> dict[str, Any] | None:
        return self.replay.state() if self.c.save_buffer else None

    def load_buffer_state(self, state: dict[str, Any]) -> None:
        self.replay.load_state(state)
