"""Run policy code (`act(obs) -> action`) step by step against a harness, in a sandbox.

The planner's `PolicyCode` decision lands here: the code gets each observation as plain
data (arrays become nested lists), its answer is checked against the harness's action
space before the harness sees it, and every failure (a timeout, a crash, an action outside
the space, the step cap) ends the run with an outcome the planner can read and react to.
"""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from polar.episode import FailureCause, Outcome
from polar.harnesses.base import Harness
from polar.harnesses.rollout import UNKNOWN, Rollout, judge, rollout
from polar.harnesses.spaces import describe_space, space_to_spec
from polar.sandboxes.base import Sandbox, SandboxError, SandboxOutputError, to_plain
from polar.sandboxes.profiles import SandboxProfile


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value)  # plain data from the worker: safe to serialise here
    return text if len(text) <= limit else text[:limit] + "..."


def coerce_action(value: Any, space: gym.Space) -> Any:
    """Turn the code's plain-data answer into an action of `space`, or raise
    SandboxOutputError saying why it does not fit. A continuous (float `Box`) action of the
    right shape is clipped to the space's bounds, as Gymnasium's `ClipAction` and the RL
    policies do: a controller's `k * error` may exceed the force limit. NaN or infinity
    never is."""
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
        if isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating):
            if not np.all(np.isfinite(arr)):
                raise ValueError("expected finite numbers")
            arr = np.clip(arr, space.low, space.high).astype(space.dtype)
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


class PolicyResult(NamedTuple):
    outcome: Outcome
    obs: Any  # the last observation (the start one when no step was taken)


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
) -> PolicyResult:
    """`entrypoint(obs)` driving `harness` until the episode ends or the step cap; never
    raises for the code's faults. With `obs` (the current observation) it continues the
    running episode, as the agent loop does; without, it resets the harness with `seed`.

    `profile` (see `profiles.resolve_sandbox`) says which backend runs the code and with
    which limits (default: `SandboxProfile()`, the process backend with default limits).
    The step cap is the smaller of `max_steps` and the limits' `max_env_steps`. Pass
    `sandbox` to reuse a started one (e.g. from a pool): its own limits apply, and it is
    left open for the caller. The outcome succeeds when the code ran without error and the
    episode did not end in a failure (see `polar.harnesses.rollout.judge`; success is judged
    on the steps this code ran)."""
    profile = profile or SandboxProfile()
    limits = sandbox.limits if sandbox is not None else profile.limits
    cap = min(max_steps or limits.max_env_steps, limits.max_env_steps)
    space = harness.action_space
    own = sandbox is None
    box = sandbox or profile.make()
    t0 = time.perf_counter()
    try:
        try:
            names = box.load(source)
            if entrypoint not in names:
                raise SandboxOutputError(f"the code defines no function named {entrypoint!r} "
                                         f"(it defines: {', '.join(names) or 'nothing'})")
        except SandboxError as err:
            return PolicyResult(_error_outcome(err, Rollout(obs=obs), t0), obs)
        if obs is None:
            obs, _ = harness.reset(seed=seed)
        r = rollout(harness, lambda o: coerce_action(box.call(entrypoint, to_plain(o)), space), obs,
                    max_steps=cap)
    finally:
        if own:
            box.close()
    if r.act_error is not None:
        if not isinstance(r.act_error, SandboxError):
            raise r.act_error
        return PolicyResult(_error_outcome(r.act_error, r, t0), r.obs)
    head = f"policy code ran {r.steps} steps, return {r.reward:g}"
    fields = dict(kind="code", steps=r.steps, reward=r.reward, terminated=r.terminated,
                  truncated=r.truncated, wall_s=time.perf_counter() - t0)
    if r.harness_error is not None:
        return PolicyResult(Outcome(**fields, success=False, cause=FailureCause.HARNESS_ERROR,
                                    harness_error=r.harness_error, stopped_by="error",
                                    reason=f"{head}; stopped by a harness error: {r.harness_error}"), r.obs)
    stopped = "terminated" if r.terminated else "truncated" if r.truncated else "step_limit"
    verdict = (judge(harness.spec, info=r.info, terminated=r.terminated, truncated=r.truncated,
                     episode_return=r.reward, state=harness.symbolic_state)
               if r.ended else UNKNOWN)
    said = "" if verdict.success is None else f", success={verdict.success}"
    ok = verdict.success is not False
    return PolicyResult(Outcome(**fields, success=ok, cause=None if ok else FailureCause.SKILL_FAILURE,
                                stopped_by=stopped, reason=f"{head}; ended by {stopped}{said}"), r.obs)


def _error_outcome(err: SandboxError, r: Rollout, t0: float) -> Outcome:
    return Outcome(kind="code", success=False, cause=FailureCause.SANDBOX_ERROR, steps=r.steps, reward=r.reward,
                   terminated=r.terminated, truncated=r.truncated, stopped_by="error",
                   error_type=type(err).__name__, wall_s=time.perf_counter() - t0,
                   reason=f"policy code ran {r.steps} steps, return {r.reward:g}; "
                          f"stopped by {type(err).__name__}: {err}")
