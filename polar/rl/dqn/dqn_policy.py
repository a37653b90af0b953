"""DQN's policy: a Q-network (observation encoder, MLP, one output per action) acting greedily.

Exploration is the algorithm's (epsilon-greedy in `collect.py`): `act` returns the greedy
action whether or not it is asked for a deterministic one, since a Q-network defines no other
distribution. The network is torch's default initialisation, as Stable-Baselines3's DQN.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from polar.rl.common.networks import ObsEncoder, mlp
from polar.rl.common.numpy_forward import MAX_BATCH, mlp_numpy
from polar.rl.common.observations import ObsKind
from polar.rl.config import NetworkConfig
from polar.rl.policy import Policy, PolicyLoadError


class QNetwork(nn.Module):
    def __init__(self, space: gym.Space, kinds: dict[str, ObsKind], act_dim: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.enc = ObsEncoder(space, kinds, cfg)
        self.trunk, h = mlp(self.enc.out_dim, cfg.hidden, cfg.activation, ortho=False)
        self.head = nn.Linear(h, act_dim)
        self.relu = cfg.activation == "relu"

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:  # [B, A]
        return self.head(self.trunk(self.enc(obs)))

    def greedy_numpy(self, obs: dict[str, torch.Tensor]) -> np.ndarray | None:
        """argmax Q(s, .) in numpy (views of the weights), or None where torch is the faster
        path: an encoder with parameters (a CNN, a grid embedding) or a large batch."""
        if self.enc.has_parameters:
            return None
        features = self.enc(obs)
        if features.shape[0] > MAX_BATCH:
            return None
        h = mlp_numpy(features.numpy(), self.trunk, self.relu)
        return (h @ self.head.weight.detach().numpy().T + self.head.bias.detach().numpy()).argmax(-1)


class DQNPolicy(Policy):
    algo = "dqn"

    def build(self) -> None:
        if not self.discrete:
            raise PolicyLoadError("algo: DQN needs a Discrete action space; use SAC or PPO")
        self.q = QNetwork(self.observation_space, self.observation_kinds, self.act_dim, self.network_cfg)

    def act_tensor(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        return self.q(obs).argmax(-1)

    def value_tensor(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """max_a Q(s, a)."""
        return self.q(obs).max(-1).values

    def env_action(self, a: torch.Tensor) -> np.ndarray:
        start = int(self.action_space.start)
        return (a + start).numpy() if start else a.numpy()
