"""`polar harness check`: Gymnasium's env checker on the adapter plus seeded random rollouts."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import check_env

from polar.errors import PolarError
from polar.harnesses.base import HarnessEnv
from polar.harnesses.registry import make_harness

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class CheckReport:
    harness_id: str
    passed: bool = True
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    episodes: int = 0
    steps: int = 0
    returns: list[float] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)  # "step N: cause" of each game failure


@dataclass
class _Rollout:
    trace: list[Any] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    stopped: str | None = None  # why the rollout ended early (the harness gave up)


def _fingerprint(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _fingerprint(v) for k, v in obs.items()}
    if isinstance(obs, np.ndarray):
        return obs.tobytes() + str(obs.dtype).encode()
    return obs


def _rollout(harness_id: str, seed: int, max_steps: int) -> _Rollout:
    """A seeded random rollout: a trace of (obs, reward, flags), episode returns, and every
    game failure the harness reported (`info["harness_error"]`) with its step."""
    out = _Rollout()
    h = make_harness(harness_id)
    try:
        space = h.action_space
        space.seed(seed)
        obs, _ = h.reset(seed=seed)
        out.trace.append(_fingerprint(obs))
        ep_ret = 0.0
        for t in range(max_steps):
            obs, r, term, trunc, info = h.step(space.sample())
            ep_ret += r
            out.trace.append((_fingerprint(obs), r, term, trunc))
            if info.get("harness_error"):
                out.crashes.append(f"step {t + 1}: {info['harness_error']}")
            if term or trunc:
                out.returns.append(ep_ret)
                ep_ret = 0.0
                obs, _ = h.reset()
                out.trace.append(_fingerprint(obs))
    except PolarError as err:  # e.g. the game failed more often in a row than max_restarts allows
        out.stopped = f"{type(err).__name__}: {err}"
    finally:
        h.close()
    return out


def check_harness(harness_id: str, seed: int = 0, steps: int = 500) -> CheckReport:
    report = CheckReport(harness_id)
    h = make_harness(harness_id)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(HarnessEnv(h), skip_render_check=True)
            except Exception as err:  # the checker raises AssertionError and others
                report.passed = False
                report.problems.append(f"env checker: {type(err).__name__}: {err}")
        report.warnings = sorted({_ANSI.sub("", str(w.message)) for w in caught})
    finally:
        h.close()
    a = _rollout(harness_id, seed, steps)
    report.episodes, report.steps, report.returns, report.crashes = len(a.returns), steps, a.returns, a.crashes
    if a.crashes:
        report.passed = False
        more = f" (and {len(a.crashes) - 1} more)" if len(a.crashes) > 1 else ""
        report.problems.append(f"the game crashed {len(a.crashes)} time(s) in {steps} random steps; "
                               f"first at {a.crashes[0]}{more}")
    if a.stopped:
        report.passed = False
        report.problems.append(f"the random rollout stopped: {a.stopped}")
        return report
    b = _rollout(harness_id, seed, steps)
    if a.trace != b.trace:
        report.passed = False
        why = ("the game crashed at different points" if a.crashes != b.crashes
               else "seeding is not deterministic")
        report.problems.append(f"two rollouts with seed {seed} differ: {why}")
    return report
