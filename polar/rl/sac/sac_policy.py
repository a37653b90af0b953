"""SAC's policy: a tanh-squashed Gaussian actor and twin Q critics (one batched ensemble).

Actions live in [-1, 1] inside the algorithm and the replay buffer; `env_action` rescales
them to the action space's bounds (Pendulum's are +-2).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from polar.rl.common.distributions import squash_log_std, tanh_gaussian_sample
from polar.rl.common.networks import ObsEncoder, TwinQ, mlp
from polar.rl.policy import Policy, PolicyLoadError


class SACPolicy(Policy):
    algo = "sac"

    def build(self) -> None:
        if self.discrete:
            raise PolicyLoadError("algo: SAC needs a continuous (Box) action space; use PPO")
        if not (torch.isfinite(self.act_low).all() and torch.isfinite(self.act_high).all()):
            raise PolicyLoadError("action space: SAC needs finite action bounds")
        cfg, space, kinds = self.network_cfg, self.observation_space, self.observation_kinds
        self.actor_enc = ObsEncoder(space, kinds, cfg)
        self.actor_trunk, h = mlp(self.actor_enc.out_dim, cfg.hidden, cfg.activation, ortho=False)
        self.actor_head = nn.Linear(h, self.act_dim)
        self.actor_log_std = nn.Linear(h, self.act_dim)
        self.q = TwinQ(space, kinds, self.act_dim, cfg)

    def actor_parameters(self) -> list[nn.Parameter]:
        return [p for name, p in self.named_parameters() if name.startswith("actor_")]

    def sample(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """(action in [-1, 1], log pi(action)) from the tanh-squashed Gaussian."""
        h = self.actor_trunk(self.actor_enc(obs))
        return tanh_gaussian_sample(self.actor_head(h), squash_log_std(self.actor_log_std(h)), deterministic)

    def act_tensor(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        return self.sample(obs, deterministic)[0]

    def value_tensor(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """min(Q1, Q2)(s, the deterministic action)."""
        return self.q(obs, self.sample(obs, deterministic=True)[0]).min(0).values

    def scale_action(self, a: torch.Tensor) -> torch.Tensor:
        """[-1, 1] -> [low, high]."""
        return self.act_low + (a + 1) * 0.5 * (self.act_high - self.act_low)

    def unscale_action(self, a: torch.Tensor) -> torch.Tensor:
        return 2 * (a - self.act_low) / (self.act_high - self.act_low) - 1

    def env_action(self, a: torch.Tensor) -> np.ndarray:
        a = self.scale_action(a)
        return a.reshape(a.shape[0], *self.action_space.shape).numpy().astype(self.action_space.dtype)
