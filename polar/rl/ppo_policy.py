"""PPO's actor-critic: a categorical or state-independent Gaussian actor and a value head.

Three layouts, chosen from the network config and the observation kinds:
- `shared: true`: one encoder + trunk, two heads (rl-starter-files' MiniGrid agent);
- separate actor and critic over a parameter-free encoder (vectors): both trunks as one
  `EnsembleMLP` (one batched matmul per layer, CleanRL's maths and init);
- separate actor and critic with their own CNN encoders (images, grids).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from polar.rl.distributions import (
    categorical_log_prob,
    categorical_logp_entropy,
    categorical_sample,
    gaussian_entropy,
    gaussian_log_prob,
)
from polar.rl.networks import EnsembleMLP, ObsEncoder, layer_init, mlp
from polar.rl.policy import Policy


class PPOPolicy(Policy):
    algo = "ppo"

    def build(self) -> None:
        cfg, space, kinds = self.network_cfg, self.observation_space, self.observation_kinds
        self.actor_enc = ObsEncoder(space, kinds, cfg)
        self.fused = not cfg.shared and not self.actor_enc.has_parameters and bool(cfg.hidden)
        if self.fused:
            self.ac_trunk = EnsembleMLP(self.actor_enc.out_dim, cfg.hidden, cfg.activation)
            h = cfg.hidden[-1]
        else:
            self.actor_trunk, h = mlp(self.actor_enc.out_dim, cfg.hidden, cfg.activation, ortho=True)
        self.actor_head = layer_init(torch.nn.Linear(h, self.act_dim), std=0.01)
        if not self.discrete:
            self.log_std = torch.nn.Parameter(torch.full((self.act_dim,), cfg.log_std_init))
        if not cfg.shared and not self.fused:
            self.critic_enc = ObsEncoder(space, kinds, cfg)
            self.critic_trunk, _ = mlp(self.critic_enc.out_dim, cfg.hidden, cfg.activation, ortho=True)
        self.critic_head = layer_init(torch.nn.Linear(h, 1), std=1.0)

    def forward(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor head output: logits or Gaussian mean, V(s)) for normalised observations."""
        if self.fused:
            # unbind, not h[0] / h[1]: its backward is one stack, not two zero-filled buffers.
            ha, hc = self.ac_trunk(self.actor_enc(obs)).unbind(0)
            return (F.linear(ha, self.actor_head.weight, self.actor_head.bias),
                    F.linear(hc, self.critic_head.weight, self.critic_head.bias).squeeze(-1))
        ha = self.actor_trunk(self.actor_enc(obs))
        hc = ha if self.network_cfg.shared else self.critic_trunk(self.critic_enc(obs))
        return self.actor_head(ha), self.critic_head(hc).squeeze(-1)

    def step(self, obs: dict[str, torch.Tensor], deterministic: bool = False):
        """(action, its log-prob, V(s)). A continuous action is the *unclipped* Gaussian
        sample: its log-prob is the one stored; clipping happens at the env (`env_action`)."""
        head, value = self(obs)
        if self.discrete:
            a = categorical_sample(head, deterministic)
            return a, categorical_log_prob(head, a), value
        log_std = self.log_std.expand_as(head)
        a = head if deterministic else head + log_std.exp() * torch.randn_like(head)
        return a, gaussian_log_prob(a, head, log_std), value

    def evaluate_actions(self, obs: dict[str, torch.Tensor], actions: torch.Tensor):
        """(log-prob, entropy, V(s)) of stored actions: what PPO's loss reads."""
        head, value = self(obs)
        if self.discrete:
            logp, entropy = categorical_logp_entropy(head, actions)
            return logp, entropy, value
        log_std = self.log_std.expand_as(head)
        return gaussian_log_prob(actions, head, log_std), gaussian_entropy(log_std), value

    def act_tensor(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        return self.step(obs, deterministic)[0]

    def value_tensor(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.fused or self.network_cfg.shared:
            return self(obs)[1]
        return self.critic_head(self.critic_trunk(self.critic_enc(obs))).squeeze(-1)

    def env_action(self, a: torch.Tensor) -> np.ndarray:
        if self.discrete:
            start = int(self.action_space.start)
            return (a + start).numpy() if start else a.numpy()
        a = torch.maximum(torch.minimum(a, self.act_high), self.act_low)
        return a.reshape(a.shape[0], *self.action_space.shape).numpy().astype(self.action_space.dtype)

    def extra_repr(self) -> str:
        return f"fused={self.fused}"
