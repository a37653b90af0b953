"""The policy export API: what the skill library stores and runs.

Stable API (other parts of Polar call exactly this):

    from polar.rl.policy import Policy, load_policy

    policy = load_policy("runs/cartpole")          # a run dir (or a dir with policy.* files)
    a = policy.act(obs, deterministic=True)        # one obs -> one action; a batch -> a batch
    v = policy.value(obs)                          # state value (PPO: V(s); SAC: min Q(s, mean a))
    tensors, config = policy.to_state()            # flat dict[str, Tensor] + JSON-able dict
    same = Policy.from_state(tensors, config)      # rebuilds the network and loads weights
    policy.save(dir); Policy.load(dir)             # dir/policy.safetensors + dir/policy.json

`tensors` is a flat dict of contiguous CPU tensors (safetensors-ready, no pickle); `config`
holds the algorithm, the observation and action spaces as `SpaceSpec` dicts, the network
sizes and whether observations are normalised. The observation normaliser's statistics are
tensors like the weights and are frozen outside training. Observations are what the env
returns: a Dict observation may carry extra keys (e.g. MiniGrid's `mission` text), which are
ignored; a `goal` / parameter key in the dict is an input like any other.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn import functional as F

from polar.errors import PolarError
from polar.harnesses.spaces import space_to_spec, spec_to_space
from polar.rl.config import NetworkConfig
from polar.rl.distributions import (
    categorical_entropy,
    categorical_log_prob,
    categorical_logp_entropy,
    categorical_sample,
    gaussian_entropy,
    gaussian_log_prob,
    squash_log_std,
    tanh_gaussian_sample,
)
from polar.rl.networks import (
    ObsEncoder,
    _mkey,
    encodable_space,
    is_float_box,
    layer_init,
    mlp,
    obs_batch_size,
    obs_leaves,
    prepare_obs,
    prepare_obs_dict,
)
from polar.rl.normalize import RunningNorm

FORMAT = "polar.rl.policy/1"
WEIGHTS_FILE, CONFIG_FILE = "policy.safetensors", "policy.json"


class PolicyLoadError(PolarError):
    """A saved policy is missing, unreadable or does not match its config."""


class EnsembleLinear(nn.Module):
    """E independent linear layers applied in one batched matmul (twin Q in one pass)."""

    def __init__(self, members: int, in_dim: int, out_dim: int) -> None:
        super().__init__()
        bound = 1 / math.sqrt(in_dim)  # nn.Linear's default init
        self.weight = nn.Parameter(torch.empty(members, in_dim, out_dim).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(members, 1, out_dim).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [E, B, in] -> [E, B, out]
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleMLP(nn.Module):
    """Two same-shaped MLP trunks (PPO's actor and critic) evaluated together: half the
    kernel launches of two separate nets, the same maths (independent weights)."""

    def __init__(self, in_dim: int, hidden: list[int], activation: str, members: int = 2) -> None:
        super().__init__()
        dims = [in_dim, *hidden]
        self.layers = nn.ModuleList(EnsembleLinear(members, i, o) for i, o in zip(dims[:-1], dims[1:], strict=True))
        for layer in self.layers:  # orthogonal sqrt(2), zero bias, per member (CleanRL)
            for m in range(members):
                nn.init.orthogonal_(layer.weight.data[m].T, math.sqrt(2))
            nn.init.zeros_(layer.bias)
        self.act = torch.tanh if activation == "tanh" else torch.relu
        self.members = members

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, in] -> [members, B, out]
        h = x.expand(self.members, -1, -1)
        # baddbmm on the parameters directly: this runs ~20 times per PPO update step and
        # rollout step, where nn.Module call overhead is a visible share of the time.
        for layer in self.layers:
            h = self.act(torch.baddbmm(layer.bias, h, layer.weight))
        return h


class TwinQ(nn.Module):
    """Two Q networks over (obs features, action in [-1, 1]); parameter-free vector encoders
    make them fully independent; a grid CNN encoder is shared by both (as in DrQ)."""

    def __init__(self, space: gym.Space, act_dim: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.enc = ObsEncoder(space, cfg)
        dims = [self.enc.out_dim + act_dim, *cfg.hidden, 1]
        self.layers = nn.ModuleList(EnsembleLinear(2, i, o) for i, o in zip(dims[:-1], dims[1:], strict=True))

    def forward(self, obs: dict[str, torch.Tensor], action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.enc(obs), action], -1).expand(2, -1, -1)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x.squeeze(-1)  # [2, B]


class Policy(nn.Module):
    """Actor (+ critic) for PPO or SAC over any supported observation space."""

    def __init__(
        self,
        algo: str,
        observation_space: gym.Space,
        action_space: gym.Space,
        network: NetworkConfig | None = None,
        normalize_obs: bool = False,
    ) -> None:
        super().__init__()
        if algo not in ("ppo", "sac"):
            raise PolicyLoadError(f"algo: {algo!r} is not 'ppo' or 'sac'")
        self.algo = algo
        self.network_cfg = network or NetworkConfig()
        self.observation_space = encodable_space(observation_space)
        self.action_space = action_space
        self.normalize_obs = normalize_obs
        cfg = self.network_cfg
        self.norms = nn.ModuleDict()
        if normalize_obs:
            for key, sub in obs_leaves(self.observation_space).items():
                if is_float_box(sub):
                    self.norms[_mkey(key)] = RunningNorm(sub.shape)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        if not self.discrete and not isinstance(action_space, gym.spaces.Box):
            raise PolicyLoadError(f"action space: {type(action_space).__name__} is not Discrete or Box")
        if algo == "sac" and self.discrete:
            raise PolicyLoadError("algo: SAC needs a continuous (Box) action space; use PPO")
        if not self.discrete:
            low, high = action_space.low.astype(np.float32), action_space.high.astype(np.float32)
            if algo == "sac" and not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise PolicyLoadError("action space: SAC needs finite action bounds")
            self.register_buffer("act_low", torch.as_tensor(low).flatten(), persistent=False)
            self.register_buffer("act_high", torch.as_tensor(high).flatten(), persistent=False)
        act_dim = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.act_dim = act_dim
        ortho = algo == "ppo"
        self.actor_enc = ObsEncoder(self.observation_space, cfg)
        self.actor_trunk, h = mlp(self.actor_enc.out_dim, cfg.hidden, cfg.activation, ortho)
        # Separate actor and critic over a parameter-free encoder: one fused ensemble trunk.
        self.fused = algo == "ppo" and not cfg.shared and not self.actor_enc.grids and bool(cfg.hidden)
        if self.fused:
            del self.actor_trunk
            self.ac_trunk = EnsembleMLP(self.actor_enc.out_dim, cfg.hidden, cfg.activation)
        if algo == "ppo":
            self.actor_head = layer_init(nn.Linear(h, act_dim), std=0.01)
            if not self.discrete:
                self.log_std = nn.Parameter(torch.full((act_dim,), cfg.log_std_init))
            if not cfg.shared and not self.fused:
                self.critic_enc = ObsEncoder(self.observation_space, cfg)
                self.critic_trunk, h = mlp(self.critic_enc.out_dim, cfg.hidden, cfg.activation, ortho)
            self.critic_head = layer_init(nn.Linear(h, 1), std=1.0)
        else:
            self.actor_head = nn.Linear(h, act_dim)
            self.actor_log_std = nn.Linear(h, act_dim)
            self.q = TwinQ(self.observation_space, act_dim, cfg)

    # ---- tensors in, tensors out (used by the algorithms) ----------------------------

    def normalize(self, obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if not self.norms:
            return obs
        return {k: self.norms[_mkey(k)](v) if _mkey(k) in self.norms else v for k, v in obs.items()}

    def update_normalizer(self, obs: dict[str, torch.Tensor]) -> None:
        for k, v in obs.items():
            if _mkey(k) in self.norms:
                self.norms[_mkey(k)].update(v)

    def _actor_hidden(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.actor_trunk(self.actor_enc(obs))

    def _ppo_forward(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor head output, V(s)) for normalised obs."""
        if self.fused:
            # unbind, not h[0] / h[1]: its backward is one stack instead of two zero-filled
            # select_backward buffers plus their sum.
            ha, hc = self.ac_trunk(self.actor_enc(obs)).unbind(0)
            return (F.linear(ha, self.actor_head.weight, self.actor_head.bias),
                    F.linear(hc, self.critic_head.weight, self.critic_head.bias).squeeze(-1))
        ha = self._actor_hidden(obs)
        if self.network_cfg.shared:
            return self.actor_head(ha), self.critic_head(ha).squeeze(-1)
        hc = self.critic_trunk(self.critic_enc(obs))
        return self.actor_head(ha), self.critic_head(hc).squeeze(-1)

    def ppo_value(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """V(s) for normalised obs."""
        if self.fused or self.network_cfg.shared:
            return self._ppo_forward(obs)[1]
        return self.critic_head(self.critic_trunk(self.critic_enc(obs))).squeeze(-1)

    def ppo_step(self, obs: dict[str, torch.Tensor], deterministic: bool = False):
        """(action, log-prob, value). Continuous actions are the *unclipped* Gaussian sample:
        its log-prob is the one stored; clipping to the bounds happens at the env boundary."""
        head, value = self._ppo_forward(obs)
        if self.discrete:
            a = categorical_sample(head, deterministic)
            return a, categorical_log_prob(head, a), value
        log_std = self.log_std.expand_as(head)
        a = head if deterministic else head + log_std.exp() * torch.randn_like(head)
        return a, gaussian_log_prob(a, head, log_std), value

    def ppo_evaluate(self, obs: dict[str, torch.Tensor], actions: torch.Tensor):
        """(log-prob, entropy, value) of stored actions."""
        head, value = self._ppo_forward(obs)
        if self.discrete:
            logp, ent = categorical_logp_entropy(head, actions)
            return logp, ent, value
        log_std = self.log_std.expand_as(head)
        return gaussian_log_prob(actions, head, log_std), gaussian_entropy(log_std), value

    def ppo_logp_value(self, obs: dict[str, torch.Tensor], actions: torch.Tensor):
        """(log-prob, value, head output) of stored actions, without the entropy: PPO's update
        with `ent_coef == 0` keeps the entropy out of the autograd graph and computes it for
        logging from the detached head (see `ppo_entropy`)."""
        head, value = self._ppo_forward(obs)
        if self.discrete:
            return categorical_log_prob(head, actions), value, head
        return gaussian_log_prob(actions, head, self.log_std.expand_as(head)), value, head

    def ppo_entropy(self, head: torch.Tensor) -> torch.Tensor:
        """Per-sample entropy from the head output of `ppo_logp_value`."""
        if self.discrete:
            return categorical_entropy(head)
        return gaussian_entropy(self.log_std.expand_as(head))

    def sac_sample(self, obs: dict[str, torch.Tensor], deterministic: bool = False):
        """(action in [-1, 1], log pi) from the tanh-squashed Gaussian."""
        h = self._actor_hidden(obs)
        return tanh_gaussian_sample(self.actor_head(h), squash_log_std(self.actor_log_std(h)), deterministic)

    def scale_action(self, a: torch.Tensor) -> torch.Tensor:
        """SAC: [-1, 1] -> [low, high]."""
        return self.act_low + (a + 1) * 0.5 * (self.act_high - self.act_low)

    def unscale_action(self, a: torch.Tensor) -> torch.Tensor:
        return 2 * (a - self.act_low) / (self.act_high - self.act_low) - 1

    def env_action(self, a: torch.Tensor) -> np.ndarray:
        """An algorithm's action tensor -> what the env receives."""
        if self.discrete:
            start = int(self.action_space.start)
            return (a + start).numpy() if start else a.numpy()
        if self.algo == "sac":
            a = self.scale_action(a)
        else:
            a = torch.maximum(torch.minimum(a, self.act_high), self.act_low)
        return a.reshape(a.shape[0], *self.action_space.shape).numpy().astype(self.action_space.dtype)

    def prepare(self, obs: Any) -> dict[str, torch.Tensor]:
        """Batched env observation -> normalised tensors."""
        return self.normalize(prepare_obs(obs, self.observation_space))

    def prepare_dict(self, obs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """Batched canonical obs dict (see networks.canonical_obs) -> normalised tensors."""
        return self.normalize(prepare_obs_dict(obs, self.observation_space))

    # ---- the public API --------------------------------------------------------------

    @torch.inference_mode()
    def act(self, obs: Any, deterministic: bool = True) -> Any:
        """Action(s) for one observation (returns one action) or a batch (returns a batch)."""
        n = obs_batch_size(obs, self.observation_space)
        batch = obs if n is not None else _add_batch(obs, self.observation_space)
        t = self.prepare(batch)
        if self.algo == "ppo":
            a, _, _ = self.ppo_step(t, deterministic)
        else:
            a, _ = self.sac_sample(t, deterministic)
        out = self.env_action(a)
        if n is not None:
            return out
        return int(out[0]) if self.discrete else out[0]

    @torch.inference_mode()
    def value(self, obs: Any) -> Any:
        """State value: PPO's critic V(s); SAC's min(Q1, Q2)(s, deterministic action)."""
        n = obs_batch_size(obs, self.observation_space)
        batch = obs if n is not None else _add_batch(obs, self.observation_space)
        t = self.prepare(batch)
        if self.algo == "ppo":
            v = self.ppo_value(t)
        else:
            a, _ = self.sac_sample(t, deterministic=True)
            v = self.q(t, a).min(0).values
        return float(v[0]) if n is None else v.numpy()

    def config(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "algo": self.algo,
            "observation_space": space_spec_json(self.observation_space),
            "action_space": space_spec_json(self.action_space),
            "network": self.network_cfg.model_dump(mode="json"),
            "normalize_obs": self.normalize_obs,
        }

    def to_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {k: v.detach().cpu().contiguous().clone() for k, v in self.state_dict().items()}
        return tensors, self.config()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Policy:
        if config.get("format") != FORMAT:
            raise PolicyLoadError(f"format: expected {FORMAT!r}, got {config.get('format')!r}")
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                obs_space = spec_to_space(config["observation_space"])
                act_space = spec_to_space(config["action_space"])
            return cls(
                config["algo"],
                obs_space,
                act_space,
                NetworkConfig.model_validate(config["network"]),
                bool(config.get("normalize_obs", False)),
            )
        except KeyError as err:
            raise PolicyLoadError(f"policy config: missing key {err.args[0]!r}") from None

    @classmethod
    def from_state(cls, tensors: dict[str, torch.Tensor], config: dict[str, Any]) -> Policy:
        policy = cls.from_config(config)
        missing, unexpected = policy.load_state_dict(tensors, strict=False)
        if missing or unexpected:
            raise PolicyLoadError(f"weights do not match the config: missing {missing}, unexpected {unexpected}")
        return policy.eval()

    def save(self, directory: str | Path) -> None:
        """Write policy.safetensors + policy.json (each atomically: tmp file, then rename)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tensors, config = self.to_state()
        tmp = d / (WEIGHTS_FILE + ".tmp")
        save_file(tensors, str(tmp))
        tmp.replace(d / WEIGHTS_FILE)
        tmp = d / (CONFIG_FILE + ".tmp")
        tmp.write_text(json.dumps(config, indent=1))
        tmp.replace(d / CONFIG_FILE)

    @classmethod
    def load(cls, directory: str | Path) -> Policy:
        d = Path(directory)
        if not (d / WEIGHTS_FILE).exists() or not (d / CONFIG_FILE).exists():
            raise PolicyLoadError(f"{d}: no {WEIGHTS_FILE} + {CONFIG_FILE} here")
        try:
            config = json.loads((d / CONFIG_FILE).read_text())
            tensors = load_file(str(d / WEIGHTS_FILE))
        except (OSError, ValueError) as err:
            raise PolicyLoadError(f"{d}: cannot read the saved policy: {err}") from None
        return cls.from_state(tensors, config)


def load_policy(run_dir: str | Path) -> Policy:
    """The final policy of a training run (`polar train --out DIR`), or a saved policy dir."""
    d = Path(run_dir)
    for candidate in (d, d / "policy", d / "checkpoint"):
        if (candidate / WEIGHTS_FILE).exists():
            return Policy.load(candidate)
    raise PolicyLoadError(f"{d}: no saved policy found (looked for {WEIGHTS_FILE} in it, policy/, checkpoint/)")


def space_spec_json(space: gym.Space) -> dict[str, Any]:
    """`SpaceSpec` as a JSON-able dict (infinite Box bounds are "inf"/"-inf" strings)."""
    return space_to_spec(space).model_dump(mode="json", exclude_none=True)


def _add_batch(obs: Any, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: np.asarray(obs[k])[None] for k in obs_leaves(space)}
    return np.asarray(obs)[None]
