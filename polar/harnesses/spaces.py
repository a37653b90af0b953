"""Gymnasium spaces <-> plain-data descriptions a planner (or another process) can read."""

from __future__ import annotations

import zlib
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from pydantic import BaseModel, ConfigDict


class SpaceSpec(BaseModel):
    """A serialisable description of a gymnasium space.

    Box bounds are a scalar when uniform (so an image space stays small) or a nested list.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["discrete", "box", "multi_discrete", "multi_binary", "dict", "tuple", "text"]
    n: int | None = None
    start: int | None = None
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    low: Any = None
    high: Any = None
    nvec: list[int] | None = None
    spaces: dict[str, SpaceSpec] | list[SpaceSpec] | None = None
    max_length: int | None = None


def _num(v: float) -> float | str:
    return v if np.isfinite(v) else ("inf" if v > 0 else "-inf")


def _bound(a: np.ndarray) -> Any:
    """Box bounds as JSON: a scalar when uniform, else nested lists; infinities as strings."""
    a = np.asarray(a, dtype=np.float64)
    flat = a.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return _num(flat[0].item())
    return np.vectorize(_num, otypes=[object])(a).tolist()


def _unbound(v: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    arr = np.vectorize(float, otypes=[np.float64])(np.asarray(v, dtype=object))
    return np.broadcast_to(arr, shape).astype(dtype)


def space_to_spec(space: gym.Space) -> SpaceSpec:
    if isinstance(space, gym.spaces.Discrete):
        return SpaceSpec(type="discrete", n=int(space.n), start=int(space.start))
    if isinstance(space, gym.spaces.Box):
        return SpaceSpec(
            type="box",
            shape=tuple(space.shape),
            dtype=space.dtype.name,
            low=_bound(space.low),
            high=_bound(space.high),
        )
    if isinstance(space, gym.spaces.MultiDiscrete):
        return SpaceSpec(type="multi_discrete", nvec=[int(x) for x in space.nvec.reshape(-1)],
                         shape=tuple(space.shape))
    if isinstance(space, gym.spaces.MultiBinary):
        return SpaceSpec(type="multi_binary", shape=tuple(space.shape))
    if isinstance(space, gym.spaces.Dict):
        return SpaceSpec(type="dict", spaces={k: space_to_spec(s) for k, s in space.spaces.items()})
    if isinstance(space, gym.spaces.Tuple):
        return SpaceSpec(type="tuple", spaces=[space_to_spec(s) for s in space.spaces])
    if isinstance(space, gym.spaces.Text):
        return SpaceSpec(type="text", max_length=int(space.max_length))
    raise TypeError(f"unsupported space type {type(space).__name__}")


def spec_to_space(spec: SpaceSpec | dict) -> gym.Space:
    if isinstance(spec, dict):
        spec = SpaceSpec.model_validate(spec)
    t = spec.type
    if t == "discrete":
        return gym.spaces.Discrete(spec.n, start=spec.start or 0)
    if t == "box":
        dtype = np.dtype(spec.dtype or "float32")
        shape = tuple(spec.shape or ())
        return gym.spaces.Box(_unbound(spec.low, shape, dtype), _unbound(spec.high, shape, dtype),
                              shape=shape, dtype=dtype)
    if t == "multi_discrete":
        return gym.spaces.MultiDiscrete(np.asarray(spec.nvec).reshape(spec.shape or (-1,)))
    if t == "multi_binary":
        shape = tuple(spec.shape or ())
        return gym.spaces.MultiBinary(shape[0] if len(shape) == 1 else list(shape))
    if t == "dict":
        assert isinstance(spec.spaces, dict)
        return gym.spaces.Dict({k: spec_to_space(s) for k, s in spec.spaces.items()})
    if t == "tuple":
        assert isinstance(spec.spaces, list)
        return gym.spaces.Tuple([spec_to_space(s) for s in spec.spaces])
    if t == "text":
        return gym.spaces.Text(max_length=spec.max_length or 1024)
    raise ValueError(f"unknown space type {t!r}")


def _text_bound(v: Any) -> str:
    """A bound as a planner reads it: 4 significant digits (4.8, not float32's
    4.800000190734863) and infinities unquoted (-inf, not '-inf')."""
    if isinstance(v, list):
        return "[" + ", ".join(_text_bound(x) for x in v) + "]"
    if isinstance(v, str):
        return v
    return f"{float(v):.4g}"


def describe_space(spec: SpaceSpec) -> str:
    """A one-line human/planner reading of a space."""
    t = spec.type
    if t == "discrete":
        start = spec.start or 0
        return f"Discrete({spec.n}) — integers {start}..{start + (spec.n or 0) - 1}"
    if t == "box":
        return (f"Box(shape={list(spec.shape or ())}, dtype={spec.dtype}, low={_text_bound(spec.low)}, "
                f"high={_text_bound(spec.high)})")
    if t == "multi_discrete":
        return f"MultiDiscrete({spec.nvec})"
    if t == "multi_binary":
        return f"MultiBinary({list(spec.shape or ())})"
    if t == "dict":
        assert isinstance(spec.spaces, dict)
        return "Dict(" + ", ".join(f"{k}: {describe_space(s)}" for k, s in spec.spaces.items()) + ")"
    if t == "tuple":
        assert isinstance(spec.spaces, list)
        return "Tuple(" + ", ".join(describe_space(s) for s in spec.spaces) + ")"
    return f"Text(max_length={spec.max_length})"


# Purposes of the action samplers seeded per episode: one stream each (see sampler_seed)
HARNESS_SAMPLER = "polar.harnesses.action_space"  # an adapter's own action_space, on its first seeded reset
CHECK_SAMPLER = "polar.harnesses.check"  # `polar harness check`'s random rollouts


def sampler_seed(env_seed: int, purpose: str) -> int:
    """The seed of an action sampler (a random baseline, `harness check`) for the episode on
    `env_seed`: derived from it, but from a stream of its own per `purpose`.

    Seeding `space.seed(env_seed)` hands the sampler the very stream a game draws its secret
    from when it does `np.random.default_rng(seed)` (gymnasium's spaces seed the same PCG64 from
    the same SeedSequence): a Discrete(16) guess then equals a secret drawn by
    `rng.integers(16)`, and "random" wins every episode. `SeedSequence([env_seed, purpose])`
    is a different stream, the same on every run (the purpose hashes with crc32, not `hash`).
    """
    if env_seed < 0:
        raise ValueError(f"env_seed: {env_seed} is negative (seeds are >= 0)")
    key = zlib.crc32(purpose.encode())
    return int(np.random.SeedSequence([env_seed, key]).generate_state(1, np.uint64)[0])


def space_mismatch(given: SpaceSpec, accepted: SpaceSpec, where: str = "") -> str | None:
    """Why a value of space `given` may not fit where `accepted` is expected, or None when it
    fits: a harness's observation handed to a policy (`given` = the harness's), or a policy's
    action handed to a harness (`given` = the policy's).

    The rule is what a consumer can read without crashing: the same kind of space; Box and
    MultiBinary shapes equal (bounds are not compared: a policy clips its own actions, and a
    harness's bounds are often loose); a Discrete or MultiDiscrete range inside the accepted
    one (a policy with 3 of MiniGrid's 7 actions fits); a Dict holding every accepted key (a
    policy ignores extra keys such as MiniGrid's `mission`), each fitting; Tuples fitting
    item by item."""
    at = f" at {where}" if where else ""
    if given.type != accepted.type:
        return f"{describe_space(given)} where {describe_space(accepted)} is expected{at}"
    t = given.type
    if t in ("box", "multi_binary") and tuple(given.shape or ()) != tuple(accepted.shape or ()):
        return f"shape {list(given.shape or ())} where shape {list(accepted.shape or ())} is expected{at}"
    if t == "discrete":
        lo, hi = given.start or 0, (given.start or 0) + (given.n or 0)
        a_lo, a_hi = accepted.start or 0, (accepted.start or 0) + (accepted.n or 0)
        if lo < a_lo or hi > a_hi:
            return f"{describe_space(given)} where {describe_space(accepted)} is expected{at}"
    if t == "multi_discrete":
        g, a = list(given.nvec or []), list(accepted.nvec or [])
        if len(g) != len(a) or any(x > y for x, y in zip(g, a, strict=True)):
            return f"{describe_space(given)} where {describe_space(accepted)} is expected{at}"
    if t == "dict":
        assert isinstance(given.spaces, dict) and isinstance(accepted.spaces, dict)
        for key, sub in accepted.spaces.items():
            if key not in given.spaces:
                return f"no key {key!r}{at} (it has {', '.join(given.spaces) or 'none'})"
            if (why := space_mismatch(given.spaces[key], sub, f"{where}.{key}" if where else key)) is not None:
                return why
    if t == "tuple":
        assert isinstance(given.spaces, list) and isinstance(accepted.spaces, list)
        if len(given.spaces) != len(accepted.spaces):
            return f"a tuple of {len(given.spaces)} where {len(accepted.spaces)} are expected{at}"
        for i, (g_sub, a_sub) in enumerate(zip(given.spaces, accepted.spaces, strict=True)):
            if (why := space_mismatch(g_sub, a_sub, f"{where}[{i}]")) is not None:
                return why
    return None
