"""What a policy reads from an observation: its parts (leaves), the kind of each, and tensors.

Observations travel as `dict[str, array]`; a non-dict space uses the single key "obs".
Dict keys the encoder cannot use (MiniGrid's `mission` text) are dropped.

Every leaf has a *kind*, which decides how the network reads it:
- `vector`: floats, flattened (optionally normalised by a running mean/std);
- `image`: pixels (HxWxC, C in 1..4; uint8 is scaled to [0, 1]), read by a CNN;
- `index_grid`: an HxWxC grid of small integer ids per channel (MiniGrid's symbolic
  `image`: object, colour, state), read through one embedding per channel, then a small CNN;
- `discrete` / `multi_discrete`: one-hot; `binary`: MultiBinary as floats.

The kind of a Box leaf is declared, not guessed from its dtype and shape: by the harness
spec (`spec.extra["observation_kinds"]`), by the gym env (`metadata["observation_kinds"]`),
or by the training recipe (`observation_kinds:`). An undeclared uint8 HxWxC Box is an
`image`; any other Box is a `vector`. Saved policies of format 1 predate declarations and
keep the rule they were trained with (`legacy_kinds`: uint8 HxWx<=4 Boxes are index grids).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import gymnasium as gym
import numpy as np
import torch

from polar.errors import ConfigError

SINGLE_KEY = "obs"
ObsKind = Literal["vector", "image", "index_grid", "discrete", "multi_discrete", "binary"]
BOX_KINDS = ("vector", "image", "index_grid")
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


def _is_hwc(space: gym.Space, max_channels: int) -> bool:
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3 and space.shape[-1] <= max_channels


def _fixed_kind(space: gym.Space) -> ObsKind | None:
    if isinstance(space, gym.spaces.Discrete):
        return "discrete"
    if isinstance(space, gym.spaces.MultiDiscrete):
        return "multi_discrete"
    if isinstance(space, gym.spaces.MultiBinary):
        return "binary"
    return None


def default_kind(space: gym.Space) -> ObsKind:
    """The kind of an undeclared leaf: uint8 HxWxC pixels are an image, other Boxes vectors."""
    fixed = _fixed_kind(space)
    if fixed is not None:
        return fixed
    return "image" if _is_hwc(space, 4) and space.dtype == np.uint8 else "vector"


def legacy_kinds(space: gym.Space) -> dict[str, ObsKind]:
    """Format-1 policies: every uint8 HxWx<=4 Box was read as an index grid."""
    return {k: _fixed_kind(s) or ("index_grid" if _is_hwc(s, 4) and s.dtype == np.uint8 else "vector")
            for k, s in obs_leaves(space).items()}


def resolve_kinds(space: gym.Space, declared: dict[str, str] | None = None,
                  source: str = "observation_kinds") -> dict[str, ObsKind]:
    """The kind of every leaf: the declared one where given, else `default_kind`.

    Declaring a key the space lacks, an unknown kind, or a kind the leaf cannot have (an
    image that is not HxWxC) is a `ConfigError` naming `source` and the key.
    """
    leaves = obs_leaves(space)
    declared = dict(declared or {})
    out: dict[str, ObsKind] = {}
    for key, sub in leaves.items():
        kind = declared.pop(key, None) or default_kind(sub)
        if kind not in get_args(ObsKind):
            raise ConfigError(f"{source}: {key}: unknown kind {kind!r} (one of {', '.join(get_args(ObsKind))})")
        fixed = _fixed_kind(sub)
        if fixed is not None and kind != fixed:
            raise ConfigError(f"{source}: {key}: a {type(sub).__name__} leaf is {fixed!r}, not {kind!r}")
        chw = isinstance(sub, gym.spaces.Box) and len(sub.shape) == 3 and sub.shape[0] <= 4
        if (kind == "image" and not (_is_hwc(sub, 4) or chw)) or (kind == "index_grid" and not _is_hwc(sub, 16)):
            layout = "HxWxC or CxHxW (C <= 4)" if kind == "image" else "HxWxC (C <= 16)"
            raise ConfigError(f"{source}: {key}: {kind!r} needs a Box of shape {layout}, "
                              f"got shape {getattr(sub, 'shape', None)}")
        out[key] = kind  # type: ignore[assignment]
    if declared:
        raise ConfigError(f"{source}: {', '.join(sorted(declared))}: no such observation key "
                          f"(keys: {', '.join(leaves)})")
    return out


def declared_kinds(env: gym.Env) -> dict[str, str]:
    """Observation kinds an env declares: its harness spec's `extra["observation_kinds"]`,
    else the gym env's `metadata["observation_kinds"]` (empty when neither says)."""
    harness = getattr(env, "harness", None)
    spec = getattr(harness, "spec", None)
    found = getattr(spec, "extra", {}).get("observation_kinds") if spec is not None else None
    if found is None:
        found = (env.metadata or {}).get("observation_kinds")
    return dict(found or {})


def obs_batch_size(obs: Any, space: gym.Space) -> int | None:
    """Leading batch size of `obs`, or None when it is a single observation of `space`."""
    leaves = obs_leaves(space)
    key, sub = next(iter(leaves.items()))
    x = np.asarray(obs[key] if isinstance(space, gym.spaces.Dict) else obs)
    single_ndim = 0 if isinstance(sub, gym.spaces.Discrete) else len(sub.shape)
    return None if x.ndim == single_ndim else int(x.shape[0])


def add_batch_dim(obs: Any, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: np.asarray(obs[k])[None] for k in obs_leaves(space)}
    return np.asarray(obs)[None]


def canonical_obs(obs: Any, space: gym.Space) -> dict[str, np.ndarray]:
    """An env observation as the dict of arrays the encoder reads ("obs" for non-dict spaces)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: np.asarray(obs[k]) for k in obs_leaves(space)}
    return {SINGLE_KEY: np.asarray(obs)}


def to_tensors(obs: dict[str, np.ndarray], space: gym.Space, kinds: dict[str, ObsKind]) -> dict[str, torch.Tensor]:
    """Canonical obs dict (batched) -> tensors: vectors and binaries as float32, Discrete ids
    shifted to start at 0; images and index grids keep their dtype (the encoder scales them)."""
    out = {}
    for key, sub in obs_leaves(space).items():
        t = torch.as_tensor(obs[key])
        kind = kinds[key]
        if kind == "discrete" and int(sub.start):
            t = t - int(sub.start)
        elif kind in ("vector", "binary") and t.dtype != torch.float32:
            t = t.float()
        out[key] = t
    return out
