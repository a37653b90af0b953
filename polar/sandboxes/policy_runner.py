"""Run policy code (`act(obs) -> action`) step by step against a harness, in a sandbox.

The planner's `PolicyCode` decision lands here: the code gets each observation as plain
data (arrays become nested lists), its answer is checked against the harness's action
space before the harness sees it, and every failure (a timeout, a crash, an action outside
the space, the step cap) ends the run with an outcome the planner can read and react to.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from polar.harnesses.base import Harness
from polar.harnesses.spaces import describe_space, space_to_spec
from polar.sandboxes.base import Sandbox, SandboxError, SandboxOutputError, to_plain
from polar.sandboxes.profiles import SandboxProfile


@dataclass
class PolicyOutcome:
    steps: int
    total_return: float
    success: bool | None  # info["success"] at the end when the harness reports it
    terminated: bool
    truncated: bool
    stopped_by: str  # "terminated", "truncated", "step_limit" or "error"
    error_type: str | None = None
    error: str | None = None
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def feedback(self) -> str:
        """One line a planner reads to decide what to do next."""
        head = f"policy code ran {self.steps} steps, return {self.total_return:g}"
        if self.error_type:
            return f"{head}; stopped by {self.error_type}: {self.error}"
        success = "" if self.success is None else f", success={self.success}"
        return f"{head}; ended by {self.stopped_by}{success}"


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value)  # plain data from the worker: safe to serialise here
    return text if len(text) <= limit else text[:limit] + "..."


def coerce_action(value: Any, space: gym.Space) -> Any:
    """Turn the code's plain-data answer into an action of `space`, or raise
    SandboxOutputError saying why it does not fit."""
    where = f"the action space {describe_space(space_to_spec(space))}"
    try:
        action = _coerce(value, space)
        ok = space.contains(action)
    except (TypeError, ValueError, OverflowError) as err:
        raise SandboxOutputError(f"the action {_short(value)} does not fit {where}: {err}") from None
    if not ok:
        raise SandboxOutputError(f"the action {_short(value)} is outside {where}")
    return action


def _coerce(value: Any, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Discrete):
        if type(value) is not int:
            raise TypeError(f"expected an integer, got {type(value).__name__}")
        return np.int64(value)
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        arr = np.asarray(value, dtype=space.dtype)
        if arr.shape != space.shape:
            raise ValueError(f"expected shape {list(space.shape)}, got {list(arr.shape)}")
        return arr
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(value, dict) or set(value) != set(space.spaces):
            raise ValueError(f"expected a dict with keys {sorted(space.spaces)}")
        return {k: _coerce(value[k], s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(value, list) or len(value) != len(space.spaces):
            raise ValueError(f"expected a list of {len(space.spaces)} items")
        return tuple(_coerce(v, s) for v, s in zip(value, space.spaces, strict=True))
    if isinstance(space, gym.spaces.Text):
        if type(value) is not str:
            raise TypeError("expected a string")
        return value
    raise TypeError(f"unsupported action space {type(space).__name__}")


def run_policy(
    source: str,
    harness: Harness,
    *,
    profile: SandboxProfile | None = None,
    entrypoint: str = "act",
    max_steps: int | None = None,
    seed: int | None = None,
    sandbox: Sandbox | None = None,
    obs: Any = None,
) -> PolicyOutcome:
    """`entrypoint(obs)` driving `harness` until the episode ends or the step cap; never
    raises for the code's faults. With `obs` (the current observation) it continues the
    running episode, as the agent loop does; without, it resets the harness with `seed`.

    `profile` (see `profiles.resolve_sandbox`) says which backend runs the code and with
    which limits (default: `SandboxProfile()`, the process backend with default limits).
    The step cap is the smaller of `max_steps` and the limits' `max_env_steps`. Pass
    `sandbox` to reuse a started one (e.g. from a pool): its own limits apply, and it is
    left open for the caller."""
    profile = profile or SandboxProfile()
    limits = sandbox.limits if sandbox is not None else profile.limits
    cap = min(max_steps or limits.max_env_steps, limits.max_env_steps)
    space = harness.action_space
    own = sandbox is None
    box = sandbox or profile.make()
    t0 = time.perf_counter()
    steps, total, success = 0, 0.0, None
    terminated = truncated = False
    try:
        names = box.load(source)
        if entrypoint not in names:
            raise SandboxOutputError(f"the code defines no function named {entrypoint!r} "
                                     f"(it defines: {', '.join(names) or 'nothing'})")
        info: dict[str, Any] = {}
        if obs is None:
            obs, info = harness.reset(seed=seed)
        while steps < cap:
            action = coerce_action(box.call(entrypoint, to_plain(obs)), space)
            obs, reward, terminated, truncated, info = harness.step(action)
            steps += 1
            total += float(reward)
            if terminated or truncated:
                break
        if "success" in info:
            success = bool(info["success"])
        stopped = "terminated" if terminated else "truncated" if truncated else "step_limit"
        return PolicyOutcome(steps, total, success, terminated, truncated, stopped,
                             wall_s=time.perf_counter() - t0)
    except SandboxError as err:
        return PolicyOutcome(steps, total, success, terminated, truncated, "error",
                             type(err).__name__, str(err), time.perf_counter() - t0)
    finally:
        if own:
            box.close()
