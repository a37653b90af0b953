"""DQN behind the trainer's seam (`polar.rl.common.algorithm.Algorithm`), on
Stable-Baselines3's schedule: collect `train_freq` vector steps epsilon-greedily into the
replay buffer, update the target network at every `target_update_interval` env steps passed
while collecting, then `gradient_steps` updates once `learning_starts` env steps are in."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from polar.rl.common.algorithm import Experience, Update
from polar.rl.common.batches import Transitions
from polar.rl.common.buffers import ReplayBuffer
from polar.rl.common.timer import PhaseTimer
from polar.rl.config import TrainConfig
from polar.rl.dqn import collect
from polar.rl.dqn.dqn import DQN
from polar.rl.dqn.dqn_policy import DQNPolicy


class DQNAlgorithm:
    def __init__(self, policy: DQNPolicy, cfg: TrainConfig, timer: PhaseTimer) -> None:
        self.c = c = cfg.dqn
        self.steps = cfg.steps
        self.timer = timer
        self.columns = c.num_envs * max(1, cfg.workers)
        self.dqn = DQN(policy, c)
        # Actions are stored as their index, one float column (exact for any Discrete size).
        self.replay = ReplayBuffer(policy.observation_space, 1, min(c.buffer_size, cfg.steps), self.columns,
                                   cfg.seed, None, c.buffer_float)

    def collect(self, source: Experience, env_steps: int) -> Transitions:
        # Step t of this collection starts after env_steps + t * (envs of all workers) transitions.
        eps = np.array([self.c.epsilon(env_steps + t * self.columns, self.steps) for t in range(self.c.train_freq)])
        with self.timer("env"):
            return Transitions.concat(source.collect(collect.collect, eps, self.c.fast, pad=Transitions.empty_like))

    def update(self, batch: Transitions, before: int, env_steps: int, updates: int) -> Update:
        c = self.c
        with self.timer("replay_add"):
            self.replay.add(batch)
        passed = env_steps // c.target_update_interval - before // c.target_update_interval
        if passed:
            self.dqn.sync_target(passed)
        if env_steps <= c.learning_starts:
            return Update(None, 0)
        acc: list[dict[str, torch.Tensor]] = []
        for _ in range(c.gradient_steps):
            with self.timer("replay_sample"):
                sample = self.replay.sample(c.batch_size)
            with self.timer("update"):
                acc.append(self.dqn.update(sample))
        if before // 1000 == env_steps // 1000:  # one metrics row per ~1000 env steps
            return Update(None, len(acc))
        metrics = {k: float(torch.stack([m[k] for m in acc]).mean()) for k in acc[0]}
        metrics["epsilon"] = c.epsilon(env_steps, self.steps)
        return Update(metrics, len(acc))

    def lr(self, updates: int) -> float:
        return self.c.learning_rate

    def state_dict(self) -> dict[str, Any]:
        return self.dqn.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dqn.load_state_dict(state)

    def buffer_state(self) -> dict[str, Any] | None:
        return self.replay.state() if self.c.save_buffer else None

    def load_buffer_state(self, state: dict[str, Any]) -> None:
        self.replay.load_state(state)
