"""PPO behind the trainer's seam (`polar.rl.common.algorithm.Algorithm`): one rollout of
`num_steps` per env, then one update, the learning rate annealed over the run."""

from __future__ import annotations

import math
from typing import Any

from polar.rl.common.algorithm import Experience, Update
from polar.rl.common.batches import RolloutBatch
from polar.rl.common.timer import PhaseTimer
from polar.rl.config import TrainConfig
from polar.rl.ppo import collect
from polar.rl.ppo.ppo import PPO
from polar.rl.ppo.ppo_policy import PPOPolicy
from polar.rl.ppo.ppo_recurrent import RecurrentPPO


class PPOAlgorithm:
    def __init__(self, policy: PPOPolicy, cfg: TrainConfig, timer: PhaseTimer) -> None:
        self.cfg, self.c = cfg, cfg.ppo
        self.ppo = (RecurrentPPO if policy.recurrent else PPO)(policy, cfg.ppo)

    def collect(self, source: Experience, env_steps: int) -> RolloutBatch:
        return RolloutBatch.concat(source.collect(collect.collect, self.c.num_steps))

    def update(self, batch: RolloutBatch, before: int, env_steps: int, updates: int) -> Update:
        self.ppo.set_lr(self.lr(updates))
        return Update(self.ppo.update(batch), 1)

    def _num_updates(self) -> int:
        per = self.c.num_envs * self.c.num_steps * max(1, self.cfg.workers)
        return max(1, math.ceil(self.cfg.steps / per))

    def lr(self, updates: int) -> float:
        if not self.c.anneal_lr:
            return self.c.learning_rate
        # The schedule position is the update counter, restored on resume.
        return self.c.learning_rate * max(0.0, 1.0 - updates / self._num_updates())

    def state_dict(self) -> dict[str, Any]:
        return self.ppo.optimizer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ppo.optimizer.load_state_dict(state)

    def buffer_state(self) -> dict[str, Any] | None:
        return None

    def load_buffer_state(self, state: dict[str, Any]) -> None:
        raise ValueError("ppo: a checkpoint holds a replay buffer, but PPO keeps none")
