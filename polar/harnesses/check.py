"""`polar harness check`: Gymnasium's env checker on the adapter plus seeded random rollouts."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import check_env

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


def _fingerprint(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _fingerprint(v) for k, v in obs.items()}
    if isinstance(obs, np.ndarray):
        return obs.tobytes() + str(obs.dtype).encode()
    return obs


def _rollout(harness_id: str, seed: int, max_steps: int) -> tuple[list[Any], list[float], int]:
    """A seeded random rollout; returns a trace of (obs, reward, flags), returns and episodes."""
    h = make_harness(harness_id)
    try:
        space = h.action_space
        space.seed(seed)
        trace: list[Any] = []
        returns: list[float] = []
        obs, _ = h.reset(seed=seed)
        trace.append(_fingerprint(obs))
        ep_ret = 0.0
        for _ in range(max_steps):
            obs, r, term, trunc, _info = h.step(space.sample())
            ep_ret += r
            trace.append((_fingerprint(obs), r, term, trunc))
            if term or trunc:
                returns.append(ep_ret)
                ep_ret = 0.0
                obs, _ = h.reset()
                trace.append(_fingerprint(obs))
        return trace, returns, len(returns)
    finally:
        h.close()


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
    a, returns, episodes = _rollout(harness_id, seed, steps)
    b, _, _ = _rollout(harness_id, seed, steps)
    report.episodes, report.steps, report.returns = episodes, steps, returns
    if a != b:
        report.passed = False
        report.problems.append(f"two rollouts with seed {seed} differ: seeding is not deterministic")
    return report
