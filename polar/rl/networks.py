"""Observation encoders and MLP trunks, built from a gymnasium space alone.

- Box vectors: flattened (optionally normalised) floats.
- Index grids (uint8 HxWxC, MiniGrid's `image`: object/colour/state ids): an embedding per
  channel, then a small CNN. Embeddings beat feeding raw ids as magnitudes.
- Discrete / MultiDiscrete: one-hot; MultiBinary: floats.
- Dict: every supported key encoded and concatenated (sorted keys); text-like keys
  (MiniGrid's `mission`) are ignored. A `goal` / parameter vector in the dict is just another
  key, so one network serves a parameterised skill.

Observations travel as `dict[str, array]`; a non-dict space uses the single key "obs".
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from polar.rl.config import NetworkConfig

SINGLE_KEY = "obs"
_SUPPORTED = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def obs_leaves(space: gym.Space) -> dict[str, gym.Space]:
    """The encodable parts of an observation space, by key (unsupported dict keys dropped)."""
    if isinstance(space, gym.spaces.Dict):
        leaves = {k: s for k, s in sorted(space.spaces.items()) if isinstance(s, _SUPPORTED)}
        if not leaves:
            raise ValueError("observation space: a Dict with no Box/Discrete/MultiDiscrete/MultiBinary key")
        return leaves
    if isinstance(space, _SUPPORTED):
        return {SINGLE_KEY: space}
    raise ValueError(f"observation space: unsupported type {type(space).__name__}")


def encodable_space(space: gym.Space) -> gym.Space:
    """`space` without the keys the encoder ignores (so a vector env can batch it)."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict(obs_leaves(space))
    return space


def is_grid(space: gym.Space) -> bool:
    return (
        isinstance(space, gym.spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[-1] <= 4
    )


def is_float_box(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and not is_grid(space)


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def mlp(in_dim: int, hidden: list[int], activation: str, ortho: bool) -> tuple[nn.Sequential, int]:
    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
    layers: list[nn.Module] = []
    for h in hidden:
        lin = nn.Linear(in_dim, h)
        layers += [layer_init(lin) if ortho else lin, act()]
        in_dim = h
    return nn.Sequential(*layers), in_dim


class GridEncoder(nn.Module):
    """Per-channel embeddings of an index grid, then a small CNN (rl-starter-files shape)."""

    def __init__(self, shape: tuple[int, ...], vocab: int, embed: int) -> None:
        super().__init__()
        h, w, c = shape
        self.vocab = vocab
        self.embed = nn.Embedding(vocab * c, embed)
        self.register_buffer("offsets", torch.arange(c) * vocab, persistent=False)
        pool = nn.MaxPool2d(2) if min(h, w) >= 5 else nn.Identity()
        self.cnn = nn.Sequential(
            nn.Conv2d(c * embed, 16, 2), nn.ReLU(), pool,
            nn.Conv2d(16, 32, 2), nn.ReLU(),
            nn.Conv2d(32, 64, 2), nn.ReLU(), nn.Flatten(),
        )
        with torch.no_grad():
            self.out_dim = int(self.cnn(torch.zeros(1, c * embed, h, w)).shape[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = x.long().clamp(0, self.vocab - 1) + self.offsets  # [B, H, W, C]
        e = self.embed(idx).flatten(3)  # [B, H, W, C*E]
        return self.cnn(e.permute(0, 3, 1, 2))


class ObsEncoder(nn.Module):
    """Encodes a prepared observation dict (see `prepare_obs`) into one feature vector."""

    def __init__(self, space: gym.Space, cfg: NetworkConfig) -> None:
        super().__init__()
        self.leaves = obs_leaves(space)
        self.grids = nn.ModuleDict()
        self.out_dim = 0
        for key, sub in self.leaves.items():
            if is_grid(sub):
                enc = GridEncoder(sub.shape, cfg.grid_vocab, cfg.grid_embed)
                self.grids[_mkey(key)] = enc
                self.out_dim += enc.out_dim
            else:
                self.out_dim += flat_dim(sub)
        # One float vector (CartPole, Pendulum...): the features are the input itself. This
        # runs on every rollout and gradient step, so skip the per-leaf dispatch below.
        only = next(iter(self.leaves.items())) if len(self.leaves) == 1 else None
        self._vector_key = (only[0] if only is not None and is_float_box(only[1]) and len(only[1].shape) == 1
                            else None)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self._vector_key is not None:
            x = obs[self._vector_key]
            return x if x.dtype == torch.float32 and x.dim() == 2 else x.reshape(x.shape[0], -1).float()
        parts = []
        for key, sub in self.leaves.items():
            x = obs[key]
            if is_grid(sub):
                parts.append(self.grids[_mkey(key)](x))
            elif isinstance(sub, gym.spaces.Discrete):
                parts.append(nn.functional.one_hot(x.long(), int(sub.n)).float())
            elif isinstance(sub, gym.spaces.MultiDiscrete):
                parts += [nn.functional.one_hot(x[..., i].long(), int(n)).float()
                          for i, n in enumerate(sub.nvec.reshape(-1))]
            else:
                parts.append(x.reshape(x.shape[0], -1).float())
        return parts[0] if len(parts) == 1 else torch.cat(parts, -1)


def flat_dim(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(space.nvec.sum())
    return int(np.prod(space.shape))


def _mkey(key: str) -> str:
    return key.replace(".", "_") or "_"


def obs_batch_size(obs: Any, space: gym.Space) -> int | None:
    """Leading batch size of `obs`, or None when it is a single observation of `space`."""
    leaves = obs_leaves(space)
    key, sub = next(iter(leaves.items()))
    x = np.asarray(obs[key] if isinstance(space, gym.spaces.Dict) else obs)
    single_ndim = 0 if isinstance(sub, gym.spaces.Discrete) else len(sub.shape)
    return None if x.ndim == single_ndim else int(x.shape[0])


def canonical_obs(obs: Any, space: gym.Space) -> dict[str, np.ndarray]:
    """An env observation as the dict of arrays the encoder reads ("obs" for non-dict spaces)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: np.asarray(obs[k]) for k in obs_leaves(space)}
    return {SINGLE_KEY: np.asarray(obs)}


def prepare_obs(obs: Any, space: gym.Space) -> dict[str, torch.Tensor]:
    """Env observation (batched) -> dict of tensors."""
    return prepare_obs_dict(canonical_obs(obs, space), space)


def prepare_obs_dict(obs: dict[str, np.ndarray], space: gym.Space) -> dict[str, torch.Tensor]:
    """Canonical obs dict (batched) -> tensors; Discrete ids shifted to start at 0."""
    out = {}
    for key, sub in obs_leaves(space).items():
        t = torch.as_tensor(obs[key])
        if isinstance(sub, gym.spaces.Discrete) and int(sub.start):
            t = t - int(sub.start)
        elif is_float_box(sub) or isinstance(sub, gym.spaces.MultiBinary):
            t = t.float()
        out[key] = t
    return out
