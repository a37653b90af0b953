"""The policy export API: what the skill library stores and runs.

Stable API (other parts of Polar call exactly this):

    from polar.rl.policy import Policy, load_policy, make_policy

    policy = make_policy("ppo", obs_space, act_space)  # a PPOPolicy (or "sac": a SACPolicy)
    policy = load_policy("runs/cartpole")          # a run dir (or a dir with policy.* files)
    policy.reset()                                 # before each episode (recurrent policies' memory)
    a = policy.act(obs, deterministic=True)        # one obs -> one action; a batch -> a batch
    v = policy.value(obs)                          # state value (PPO: V(s); SAC: min Q(s, mean a))
    tensors, config = policy.to_state()            # flat dict[str, Tensor] + JSON-able dict
    same = Policy.from_state(tensors, config)      # rebuilds the right class, loads the weights
    policy.save(dir); Policy.load(dir)             # dir/policy.safetensors + dir/policy.json

`Policy` is the base of each algorithm's policy (`PPOPolicy` in polar.rl.ppo.ppo_policy,
`SACPolicy` in polar.rl.sac.sac_policy, ...); `Policy.from_state` / `from_config` / `load` pick
the subclass from `config["algo"]` through `polar.rl.registry`, so `polar.rl.policy:Policy`
stays the loader skills name in manifests.
`tensors` is a flat dict of contiguous CPU tensors (safetensors-ready, no pickle); `config`
holds the algorithm, the observation and action spaces as `SpaceSpec` dicts, the kind of
each observation key, the network sizes and whether observations are normalised. The
normaliser's statistics are tensors like the weights and are frozen outside training.
Observations are what the env returns: a Dict observation may carry extra keys (e.g.
MiniGrid's `mission` text), which are ignored.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from polar.errors import PolarError
from polar.harnesses.spaces import space_to_spec, spec_to_space
from polar.rl.common.networks import module_key
from polar.rl.common.normalize import RunningNorm
from polar.rl.common.observations import (
    ObsKind,
    add_batch_dim,
    canonical_obs,
    encodable_space,
    legacy_kinds,
    obs_batch_size,
    obs_leaves,
    resolve_kinds,
    to_tensors,
)
from polar.rl.config import NetworkConfig
from polar.rl.registry import ALGORITHMS, algorithm_spec

FORMAT = "polar.rl.policy/2"
# Format 1 had no `observation_kinds`: its uint8 HxWx<=4 Boxes are index grids (legacy_kinds).
_FORMATS = ("polar.rl.policy/1", FORMAT)
WEIGHTS_FILE, CONFIG_FILE = "policy.safetensors", "policy.json"


class PolicyLoadError(PolarError):
    """A saved policy is missing, unreadable or does not match its config."""

def policy_class(algo: str) -> type[Policy]:
    """The `Policy` subclass that `algo` trains, from the registry (imported on first use)."""
    if algo not in ALGORITHMS:
        raise PolicyLoadError(f"algo: {algo!r} is not one of {', '.join(ALGORITHMS)}")
    return algorithm_spec(algo).policy_class()


def make_policy(algo: str, observation_space: gym.Space, action_space: gym.Space,
                network: NetworkConfig | None = None, normalize_obs: bool = False,
                observation_kinds: dict[str, str] | None = None) -> Policy:
    """A fresh policy of the class that `algo` trains."""
    return policy_class(algo)(observation_space, action_space, network, normalize_obs, observation_kinds)


class Policy(nn.Module):
    """What every algorithm's policy shares: spaces, observation kinds and normaliser, the
    action bounds, and the export API. Subclasses build their networks in `build` and
    implement `act_tensor` / `value_tensor` (normalised tensors in, algorithm actions out)
    and `env_action` (algorithm action -> what the env receives)."""

    # Where the weights are: the CPU, except the trainer's learner copy under `device: cuda`
    # (`to_device`); observations are moved here by `to_tensors`.
    device: torch.device = torch.device("cpu")

    algo: ClassVar[str]

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        network: NetworkConfig | None = None,
        normalize_obs: bool = False,
        observation_kinds: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.network_cfg = network or NetworkConfig()
        self.observation_space = encodable_space(observation_space)
        self.observation_kinds: dict[str, ObsKind] = resolve_kinds(self.observation_space, observation_kinds)
        self.action_space = action_space
        self.normalize_obs = normalize_obs
        self.norms = nn.ModuleDict()
        if normalize_obs:
            for key, sub in obs_leaves(self.observation_space).items():
                if self.observation_kinds[key] == "vector":
                    self.norms[module_key(key)] = RunningNorm(sub.shape)
        self.discrete = isinstance(action_space, gym.spaces.Discrete)
        if not self.discrete and not isinstance(action_space, gym.spaces.Box):
            raise PolicyLoadError(f"action space: {type(action_space).__name__} is not Discrete or Box")
        if not self.discrete:
            low, high = action_space.low.astype(np.float32), action_space.high.astype(np.float32)
            self.register_buffer("act_low", torch.as_tensor(low).flatten(), persistent=False)
            self.register_buffer("act_high", torch.as_tensor(high).flatten(), persistent=False)
        self.act_dim = int(action_space.n) if self.discrete else int(np.prod(action_space.shape))
        self.build()

    # ---- what subclasses implement ------------------------------------------------------

    @abstractmethod
    def build(self) -> None:
        """Create the networks (called once by `__init__`, after the shared attributes)."""

    @abstractmethod
    def act_tensor(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        """The algorithm's action for normalised observations (see `env_action`)."""

    @abstractmethod
    def value_tensor(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The state value of normalised observations, [B]."""

    @abstractmethod
    def env_action(self, a: torch.Tensor) -> np.ndarray:
        """An algorithm's action tensor [B, ...] -> what the env receives (numpy, [B, ...])."""

    @property
    def recurrent(self) -> bool:
        """Whether `act` remembers earlier observations (recurrent PPO); see `reset`."""
        return False

    def reset(self) -> None:
        """Forget what `act` remembers: call it before each episode. A no-op unless recurrent."""

    # ---- observations -------------------------------------------------------------------

    def normalize(self, obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if not self.norms:
            return obs
        return {k: self.norms[module_key(k)](v) if module_key(k) in self.norms else v for k, v in obs.items()}

    def update_normalizer(self, obs: dict[str, torch.Tensor]) -> None:
        for k, v in obs.items():
            if module_key(k) in self.norms:
                self.norms[module_key(k)].update(v)

    def to_tensors(self, obs: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Batched canonical obs dict (numpy or tensors) -> raw tensors (not normalised), on
        this policy's device."""
        t = to_tensors(obs, self.observation_space, self.observation_kinds)
        if self.device.type == "cpu":
            return t
        return {k: v.to(self.device, non_blocking=True) for k, v in t.items()}

    def to_device(self, device: torch.device | str) -> Policy:
        """Move the weights to `device` (the learner's copy on a GPU; see polar/rl/common/device.py)."""
        self.to(device)
        self.device = torch.device(device)
        return self

    def prepare(self, obs: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Batched canonical obs dict (see observations.canonical_obs) -> normalised tensors."""
        return self.normalize(self.to_tensors(obs))

    def _batch(self, obs: Any) -> tuple[dict[str, torch.Tensor], int | None]:
        n = obs_batch_size(obs, self.observation_space)
        batch = obs if n is not None else add_batch_dim(obs, self.observation_space)
        return self.prepare(canonical_obs(batch, self.observation_space)), n

    # ---- the public API -----------------------------------------------------------------

    @torch.inference_mode()
    def act(self, obs: Any, deterministic: bool = True) -> Any:
        """Action(s) for one env observation (returns one action) or a batch (a batch)."""
        t, n = self._batch(obs)
        out = self.env_action(self.act_tensor(t, deterministic))
        if n is not None:
            return out
        return int(out[0]) if self.discrete else out[0]

    @torch.inference_mode()
    def value(self, obs: Any) -> Any:
        """State value of one observation (a float) or a batch (an array)."""
        t, n = self._batch(obs)
        v = self.value_tensor(t)
        return float(v[0]) if n is None else v.numpy()

    def config(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "algo": self.algo,
            "observation_space": space_spec_json(self.observation_space),
            "observation_kinds": dict(self.observation_kinds),
            "action_space": space_spec_json(self.action_space),
            "network": self.network_cfg.model_dump(mode="json"),
            "normalize_obs": self.normalize_obs,
        }

    def to_state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        tensors = {k: v.detach().cpu().contiguous().clone() for k, v in self.state_dict().items()}
        return tensors, self.config()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Policy:
        """A fresh (untrained) policy of the class `config["algo"]` names."""
        if config.get("format") not in _FORMATS:
            raise PolicyLoadError(f"format: expected one of {_FORMATS}, got {config.get('format')!r}")
        try:
            target = policy_class(config["algo"])
            if cls is not Policy and not issubclass(target, cls):
                raise PolicyLoadError(f"algo: {config['algo']!r} is not a {cls.__name__}")
            with np.errstate(over="ignore", invalid="ignore"):
                obs_space = encodable_space(spec_to_space(config["observation_space"]))
                act_space = spec_to_space(config["action_space"])
            kinds = config.get("observation_kinds")
            if config["format"] == "polar.rl.policy/1":
                kinds = legacy_kinds(obs_space)
            return target(obs_space, act_space, NetworkConfig.model_validate(config["network"]),
                          bool(config.get("normalize_obs", False)), kinds)
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
