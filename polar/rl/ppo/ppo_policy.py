"""PPO's actor-critic: a categorical or state-independent Gaussian actor and a value head.

Three layouts, chosen from the network config and the observation kinds:
- `shared: true`: one encoder + trunk, two heads (rl-starter-files' MiniGrid agent);
- separate actor and critic over a parameter-free encoder (vectors): both trunks as one
  `EnsembleMLP` (one batched matmul per layer, CleanRL's maths and init);
- separate actor and critic with their own CNN encoders (images, grids).

An observation key `action_mask` (MultiBinary, one bit per discrete action) masks the actor: an
action whose bit is 0 gets a logit of `MASKED_LOGIT`, so it is never sampled and its probability
is 0 in the loss (MaskablePPO; the HRL controller's options over the agent's memory,
`polar.agent.memory_options`). Such a policy takes the plain torch paths (never `fused`: the
numpy rollout step and the analytic gradient do not mask); the mask is also an input.

`network.lstm: H` makes the policy recurrent (recurrent PPO): one encoder, then an LSTM cell
of H units whose output both trunks read. Its memory is passed explicitly in training
(`step_recurrent` / `evaluate_sequence`, reset where an episode starts) and kept inside the
policy by `act` between `reset()` calls (one episode, or one batch of lockstep episodes).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch.nn import functional as F

from polar.rl.common.distributions import (
    categorical_logp_entropy,
    categorical_sample,
    gaussian_entropy,
    gaussian_log_prob,
)
from polar.rl.common.lstm import masked_lstm
from polar.rl.common.networks import EnsembleMLP, ObsEncoder, layer_init, mlp
from polar.rl.policy import Policy

MASK_KEY = "action_mask"
MASKED_LOGIT = -1e9  # finite: an all-zero mask leaves a uniform choice, never NaN


class PPOPolicy(Policy):
    algo = "ppo"

    def build(self) -> None:
        cfg, space, kinds = self.network_cfg, self.observation_space, self.observation_kinds
        self.actor_enc = ObsEncoder(space, kinds, cfg)
        features = self.actor_enc.out_dim
        self.lstm = torch.nn.LSTMCell(features, cfg.lstm) if cfg.lstm else None
        self._memory: torch.Tensor | None = None  # act()'s memory between reset() calls
        if cfg.lstm:
            features = cfg.lstm
        self.masked = self._action_mask(space)
        self.fused = (not cfg.shared and not cfg.lstm and not self.actor_enc.has_parameters and bool(cfg.hidden)
                      and not self.masked)
        if self.fused:
            self.ac_trunk = EnsembleMLP(features, cfg.hidden, cfg.activation)
            h = cfg.hidden[-1]
        else:
            self.actor_trunk, h = mlp(features, cfg.hidden, cfg.activation, ortho=True)
        self.actor_head = layer_init(torch.nn.Linear(h, self.act_dim), std=0.01)
        if not self.discrete:
            self.log_std = torch.nn.Parameter(torch.full((self.act_dim,), cfg.log_std_init))
        if not cfg.shared and not self.fused:
            if not cfg.lstm:  # a recurrent critic reads the actor's memory
                self.critic_enc = ObsEncoder(space, kinds, cfg)
            self.critic_trunk, _ = mlp(features, cfg.hidden, cfg.activation, ortho=True)
        self.critic_head = layer_init(torch.nn.Linear(h, 1), std=1.0)

    def _action_mask(self, space) -> bool:
        """Whether the observation carries an `action_mask` for this policy's actions."""
        sub = getattr(space, "spaces", {}).get(MASK_KEY)
        if sub is None:
            return False
        if not self.discrete or not isinstance(sub, gym.spaces.MultiBinary) or tuple(sub.shape) != (self.act_dim,):
            raise ValueError(f"observation {MASK_KEY!r}: expected MultiBinary({self.act_dim}) over a discrete "
                             f"action space, got {sub} over {self.action_space}")
        return True

    def _mask(self, head: torch.Tensor, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The actor's logits with the masked actions' set to MASKED_LOGIT (module docstring)."""
        if not self.masked:
            return head
        return head.masked_fill(obs[MASK_KEY].reshape(head.shape) < 0.5, MASKED_LOGIT)

    @property
    def recurrent(self) -> bool:
        return self.lstm is not None

    def forward(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor head output: logits or Gaussian mean, V(s)) for normalised observations."""
        if self.fused:
            # unbind, not h[0] / h[1]: its backward is one stack, not two zero-filled buffers.
            ha, hc = self.ac_trunk(self.actor_enc(obs)).unbind(0)
            return (F.linear(ha, self.actor_head.weight, self.actor_head.bias),
                    F.linear(hc, self.critic_head.weight, self.critic_head.bias).squeeze(-1))
        if self.lstm is not None:  # one step from act()'s memory, which this call advances
            x, self._memory = self._remember(obs, self._memory_for(obs), None)
            return self._heads(x)
        ha = self.actor_trunk(self.actor_enc(obs))
        hc = ha if self.network_cfg.shared else self.critic_trunk(self.critic_enc(obs))
        return self.actor_head(ha), self.critic_head(hc).squeeze(-1)

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor head output, V) from the LSTM's output."""
        ha = self.actor_trunk(x)
        hc = ha if self.network_cfg.shared else self.critic_trunk(x)
        return self.actor_head(ha), self.critic_head(hc).squeeze(-1)

    def _sample(self, head: torch.Tensor, deterministic: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(action, its log-prob). A continuous action is the *unclipped* Gaussian sample: its
        log-prob is the one stored; clipping happens at the env (`env_action`)."""
        if self.discrete:
            return categorical_sample(head, deterministic)
        log_std = self.log_std.expand_as(head)
        a = head if deterministic else head + log_std.exp() * torch.randn_like(head)
        return a, gaussian_log_prob(a, head, log_std)

    def _logp_entropy(self, head: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.discrete:
            return categorical_logp_entropy(head, actions)
        log_std = self.log_std.expand_as(head)
        return gaussian_log_prob(actions, head, log_std), gaussian_entropy(log_std)

    def step(self, obs: dict[str, torch.Tensor], deterministic: bool = False):
        """(action, its log-prob, V(s)) of a feedforward policy."""
        head, value = self(obs)
        return (*self._sample(self._mask(head, obs), deterministic), value)

    def evaluate_actions(self, obs: dict[str, torch.Tensor], actions: torch.Tensor):
        """(log-prob, entropy, V(s)) of stored actions: what PPO's loss reads."""
        head, value = self(obs)
        return (*self._logp_entropy(self._mask(head, obs), actions), value)

    # ---- recurrent PPO: the memory [2 (h, c), N, H] is passed in and returned -------------

    def initial_memory(self, n: int) -> torch.Tensor:
        assert self.lstm is not None
        return torch.zeros(2, n, self.lstm.hidden_size)

    def _memory_for(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        n = next(iter(obs.values())).shape[0]
        if self._memory is None or self._memory.shape[1] != n:
            self._memory = self.initial_memory(n)
        return self._memory

    def reset(self) -> None:
        """Forget act()'s memory: call it before each episode (or batch of episodes)."""
        self._memory = None

    def _remember(self, obs: dict[str, torch.Tensor], memory: torch.Tensor,
                  starts: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(LSTM output, new memory) for one step; memory is zeroed where an episode starts."""
        assert self.lstm is not None
        h, c = memory
        if starts is not None:
            keep = (~starts).unsqueeze(-1).to(h.dtype)
            h, c = h * keep, c * keep
        h, c = self.lstm(self.actor_enc(obs), (h, c))
        return h, torch.stack([h, c])

    def step_recurrent(self, obs: dict[str, torch.Tensor], memory: torch.Tensor, starts: torch.Tensor,
                       deterministic: bool = False):
        """(action, its log-prob, V(s), the memory after this step)."""
        x, memory = self._remember(obs, memory, starts)
        head, value = self._heads(x)
        return (*self._sample(self._mask(head, obs), deterministic), value, memory)

    def value_recurrent(self, obs: dict[str, torch.Tensor], memory: torch.Tensor,
                        starts: torch.Tensor | None) -> torch.Tensor:
        return self._heads(self._remember(obs, memory, starts)[0])[1]

    def evaluate_sequence(self, obs: dict[str, torch.Tensor], actions: torch.Tensor, memory: torch.Tensor,
                          starts: torch.Tensor):
        """(log-prob, entropy, V) [T, N] of stored actions, the LSTM re-run over the rollout from
        its first memory, reset where episodes start, as the rollout ran it. `obs` is [T * N, ...]."""
        assert self.lstm is not None
        T, N = starts.shape
        hs = masked_lstm(self.lstm, self.actor_enc(obs).reshape(T, N, -1), memory[0], memory[1], starts)
        head, value = self._heads(hs.reshape(T * N, -1))
        logp, entropy = self._logp_entropy(self._mask(head, obs), actions.reshape(T * N, *actions.shape[2:]))
        return logp.reshape(T, N), entropy.reshape(T, N), value.reshape(T, N)

    def act_tensor(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        return self.step(obs, deterministic)[0]

    def value_tensor(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.lstm is not None:  # V from act()'s memory, which this does not advance
            return self.value_recurrent(obs, self._memory_for(obs), None)
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
        return f"fused={self.fused}, recurrent={self.recurrent}"
