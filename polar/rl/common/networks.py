"""Network builders shared by the PPO and SAC policies: observation encoders, MLP trunks, and
ensembles of same-shaped layers evaluated in one batched matmul.

Encoders by leaf kind (see `polar.rl.common.observations`): vectors are flattened floats;
`image` leaves go through a Nature-CNN (pixels scaled to [0, 1]); `index_grid` leaves
(MiniGrid's object/colour/state ids) through one embedding per channel and a small CNN —
embeddings beat feeding ids as magnitudes; discrete leaves are one-hot. A Dict is encoded
key by key (sorted) and concatenated, so a goal or parameter vector is one more input.
"""

from __future__ import annotations

import functools
import math
import os
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from polar.errors import ConfigError
from polar.rl.common.observations import ObsKind, obs_leaves
from polar.rl.config import NetworkConfig


def layer_init(layer: nn.Module, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


# Below this many elements torch.tanh is as fast (the rollout's per-step batches).
FAST_TANH_MIN = 4096
# numpy's tanh serves large tensors only where it beats torch's kernel by this factor or more.
NUMPY_TANH_MARGIN = 0.8
TANH_ENV = "POLAR_TANH"  # numpy | torch | auto (the default: measured once per process)


def _numpy_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.tanh(x.detach().numpy()))


class _Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = _numpy_tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)  # torch.tanh's own backward: grad * (1 - y^2)


def _numpy_path(x: torch.Tensor) -> torch.Tensor:
    return _Tanh.apply(x) if x.requires_grad and torch.is_grad_enabled() else _numpy_tanh(x)


@functools.cache
def numpy_tanh_pays() -> bool:
    """Whether large tensors take numpy's tanh: `POLAR_TANH` (numpy or torch) says, else a
    measurement on the first call. torch's CPU tanh is several times slower than numpy's on
    some AVX-512 machines and not on others (`benchmarks/tanh_bench.py`, forward + backward:
    0.67x on one, 1.4x on another), so the forward on a PPO update's trunk ([2, 256, 64]) is
    timed both ways, best of 5 x 10 calls (about 2 ms; the backward is torch's kernel either
    way). Its input comes from a generator of its own: the global RNG is untouched."""
    choice = os.environ.get(TANH_ENV, "auto")
    if choice not in ("numpy", "torch", "auto"):
        raise ConfigError(f"{TANH_ENV}={choice!r}: use numpy, torch or auto")
    if choice != "auto":
        return choice == "numpy"
    x = torch.randn(2, 256, 64, generator=torch.Generator().manual_seed(0))

    def best_of(fn: Any) -> float:
        times = []
        for _ in range(6):  # the first round warms up
            t = time.perf_counter()
            for _ in range(10):
                fn(x)
            times.append(time.perf_counter() - t)
        return min(times[1:])

    with torch.no_grad():
        return best_of(_numpy_tanh) < NUMPY_TANH_MARGIN * best_of(torch.tanh)


def tanh(x: torch.Tensor) -> torch.Tensor:
    """torch.tanh, with the values of large CPU float tensors from numpy's tanh where that is
    faster on this machine (`numpy_tanh_pays`); the gradient is torch's own. Small tensors
    (the rollout's) and any other device or dtype take torch.tanh."""
    if (x.numel() < FAST_TANH_MIN or x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64)
            or not numpy_tanh_pays()):
        return torch.tanh(x)
    return _numpy_path(x)


class Tanh(nn.Module):
    """`nn.Tanh` through `tanh` above (no parameters: state dicts are unchanged)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return tanh(x)


def mlp(in_dim: int, hidden: list[int], activation: str, ortho: bool) -> tuple[nn.Sequential, int]:
    """Linear + activation per hidden size; orthogonal sqrt(2) init when `ortho` (PPO)."""
    act = {"tanh": Tanh, "relu": nn.ReLU}[activation]
    layers: list[nn.Module] = []
    for h in hidden:
        lin = nn.Linear(in_dim, h)
        layers += [layer_init(lin) if ortho else lin, act()]
        in_dim = h
    return nn.Sequential(*layers), in_dim


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
    """Same-shaped MLP trunks (PPO's separate actor and critic) evaluated together: half the
    kernel launches of two separate nets, the same maths (independent weights)."""

    def __init__(self, in_dim: int, hidden: list[int], activation: str, members: int = 2) -> None:
        super().__init__()
        dims = [in_dim, *hidden]
        self.layers = nn.ModuleList(EnsembleLinear(members, i, o) for i, o in zip(dims[:-1], dims[1:], strict=True))
        for layer in self.layers:  # orthogonal sqrt(2), zero bias, per member (CleanRL)
            for m in range(members):
                nn.init.orthogonal_(layer.weight.data[m].T, math.sqrt(2))
            nn.init.zeros_(layer.bias)
        self.act = tanh if activation == "tanh" else torch.relu
        self.members = members

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, in] -> [members, B, out]
        h = x.expand(self.members, -1, -1)
        for layer in self.layers:  # baddbmm on the parameters: no nn.Module call per layer
            h = self.act(torch.baddbmm(layer.bias, h, layer.weight))
        return h


class TwinQ(nn.Module):
    """Two Q networks over (obs features, action in [-1, 1]) as one ensemble: every layer is
    one batched matmul for both. Parameter-free vector encoders make them independent; an
    image or grid encoder is shared by both (as in DrQ)."""

    def __init__(self, space: gym.Space, kinds: dict[str, ObsKind], act_dim: int, cfg: NetworkConfig) -> None:
        super().__init__()
        self.enc = ObsEncoder(space, kinds, cfg)
        dims = [self.enc.out_dim + act_dim, *cfg.hidden, 1]
        self.layers = nn.ModuleList(EnsembleLinear(2, i, o) for i, o in zip(dims[:-1], dims[1:], strict=True))

    def forward(self, obs: dict[str, torch.Tensor], action: torch.Tensor) -> torch.Tensor:
        return self.from_features(self.enc(obs), action)

    def from_features(self, features: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """[2, B] Q values of encoded observations."""
        x = torch.cat([features, action], -1).expand(2, -1, -1)
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = torch.baddbmm(layer.bias, x, layer.weight)
            if i < last:
                x = torch.relu(x)
        return x.squeeze(-1)


class _Embedding(torch.autograd.Function):
    """`F.embedding(idx, weight)` with its weight gradient as one `index_add_`: torch's CPU
    embedding backward is slow for a small table looked up at many positions (a batch of
    MiniGrid grids: 48 rows, up to 196k lookups); the encoder's forward + backward takes 0.86x
    the time (`benchmarks/grid_encoder_bench.py`). The same sums per row."""

    @staticmethod
    def forward(ctx, weight: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(idx)
        ctx.rows = weight.shape[0]
        return weight.index_select(0, idx.reshape(-1)).reshape(*idx.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        (idx,) = ctx.saved_tensors
        dim = grad.shape[-1]
        return grad.new_zeros(ctx.rows, dim).index_add_(0, idx.reshape(-1), grad.reshape(-1, dim)), None


class GridEncoder(nn.Module):
    """Per-channel embeddings of an index grid, then a small CNN (rl-starter-files shape)."""

    def __init__(self, shape: tuple[int, ...], vocab: int, embed: int) -> None:
        super().__init__()
        h, w, c = shape
        self.vocab = vocab
        self.embed = nn.Embedding(vocab * c, embed)
        self.register_buffer("offsets", torch.arange(c) * vocab, persistent=False)
        # pool only where three 2x2 convolutions still fit after it (7x7 views; not 5x5 or 6x6 full grids)
        pool = nn.MaxPool2d(2) if min(h, w) >= 7 else nn.Identity()
        self.cnn = nn.Sequential(
            nn.Conv2d(c * embed, 16, 2), nn.ReLU(), pool,
            nn.Conv2d(16, 32, 2), nn.ReLU(),
            nn.Conv2d(32, 64, 2), nn.ReLU(), nn.Flatten(),
        )
        with torch.no_grad():
            self.out_dim = int(self.cnn(torch.zeros(1, c * embed, h, w)).shape[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Ids beyond the vocabulary share its last entry (the grid's ids are declared small).
        idx = x.long().clamp(0, self.vocab - 1) + self.offsets  # [B, H, W, C]
        e = _Embedding.apply(self.embed.weight, idx).flatten(3)  # [B, H, W, C*E], as self.embed(idx)
        return self.cnn(e.permute(0, 3, 1, 2))


# (out channels, kernel, stride): Mnih et al. 2015 for images of 36 px and more; the same
# depth with 3x3 kernels for smaller ones (Nature's 8x8/4 would leave nothing of a 16 px image).
_NATURE = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
_SMALL = ((32, 3, 2), (64, 3, 2), (64, 3, 1))


class ImageEncoder(nn.Module):
    """Nature-CNN over pixels: uint8 scaled to [0, 1], three ReLU convolutions, then a ReLU
    linear layer of `features` units. Accepts HxWxC (gym's layout) or CxHxW."""

    def __init__(self, shape: tuple[int, ...], features: int) -> None:
        super().__init__()
        self.channels_last = shape[-1] <= 4
        c, h, w = (shape[2], shape[0], shape[1]) if self.channels_last else shape
        layers: list[nn.Module] = []
        size, in_ch = min(h, w), c
        for out_ch, k, s in _NATURE if size >= 36 else _SMALL:
            if size < k:
                break
            layers += [layer_init(nn.Conv2d(in_ch, out_ch, k, s)), nn.ReLU()]
            size, in_ch = (size - k) // s + 1, out_ch
        if not layers:
            raise ConfigError(f"observation: an image of {h}x{w} pixels is too small for a CNN (>= 3x3)")
        self.cnn = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            n = int(self.cnn(torch.zeros(1, c, h, w)).shape[1])
        self.head = nn.Sequential(layer_init(nn.Linear(n, features)), nn.ReLU())
        self.out_dim = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.float() * (1.0 / 255.0) if x.dtype == torch.uint8 else x.float()
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.head(self.cnn(x))


class ObsEncoder(nn.Module):
    """Encodes a prepared observation dict (see `observations.to_tensors`) into one vector."""

    def __init__(self, space: gym.Space, kinds: dict[str, ObsKind], cfg: NetworkConfig) -> None:
        super().__init__()
        self.leaves = obs_leaves(space)
        self.kinds = kinds
        self.grids = nn.ModuleDict()  # index grids (the name format-1 weights use)
        self.images = nn.ModuleDict()
        self.out_dim = 0
        for key, sub in self.leaves.items():
            if kinds[key] == "index_grid":
                enc: GridEncoder | ImageEncoder = GridEncoder(sub.shape, cfg.grid_vocab, cfg.grid_embed)
                self.grids[module_key(key)] = enc
            elif kinds[key] == "image":
                enc = ImageEncoder(sub.shape, cfg.image_features)
                self.images[module_key(key)] = enc
            else:
                self.out_dim += flat_dim(sub)
                continue
            self.out_dim += enc.out_dim
        # One float vector (CartPole, Pendulum...): the features are the input itself. This
        # runs on every rollout and gradient step, so skip the per-leaf dispatch below.
        only = next(iter(self.leaves)) if len(self.leaves) == 1 else None
        self._vector_key = only if only is not None and kinds[only] == "vector" else None

    @property
    def has_parameters(self) -> bool:
        return bool(self.grids) or bool(self.images)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self._vector_key is not None:
            x = obs[self._vector_key]
            return x if x.dim() == 2 else x.reshape(x.shape[0], -1)
        parts = []
        for key, sub in self.leaves.items():
            x = obs[key]
            kind = self.kinds[key]
            if kind == "index_grid":
                parts.append(self.grids[module_key(key)](x))
            elif kind == "image":
                parts.append(self.images[module_key(key)](x))
            elif kind == "discrete":
                parts.append(nn.functional.one_hot(x.long(), int(sub.n)).float())
            elif kind == "multi_discrete":
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


def module_key(key: str) -> str:
    """An observation key as a ModuleDict key (no dots, not empty)."""
    return key.replace(".", "_") or "_"
