"""`polar harness check`: Gymnasium's env checker on the adapter, then seeded random rollouts
that play whole episodes, run twice to check that the same seeds give the same game."""

from __future__ import annotations

import copy
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import check_env

from polar.errors import PolarError
from polar.harnesses.base import HarnessEnv
from polar.harnesses.registry import make_harness
from polar.harnesses.spaces import CHECK_SAMPLER, sampler_seed

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
DEFAULT_EPISODES = 3
NO_LIMIT_STEPS = 1000  # the step cap where the spec declares no step limit


@dataclass
class CheckReport:
    harness_id: str
    passed: bool = True
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    env_checker: bool = False  # gymnasium's check_env passed
    episodes_wanted: int = DEFAULT_EPISODES
    step_cap: int = 0  # the most steps one rollout may take
    step_limit: int | None = None  # the spec's per-episode limit (None: not declared)
    episodes: int = 0  # episodes that ended (terminated or truncated)
    steps: int = 0  # steps the rollout took
    terminated: int = 0
    truncated: int = 0
    seeds: list[int] = field(default_factory=list)  # the reset seed of each episode started
    returns: list[float] = field(default_factory=list)  # of the episodes that ended
    crashes: list[str] = field(default_factory=list)  # "step N: cause" of each game failure
    deterministic: bool | None = None  # the second rollout matched the first (None: not compared)


@dataclass
class _Rollout:
    trace: list[Any] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    steps: int = 0
    terminated: int = 0
    truncated: int = 0
    crashes: list[str] = field(default_factory=list)
    stopped: str | None = None  # why the rollout ended early (the harness gave up)


def _fingerprint(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _fingerprint(v) for k, v in obs.items()}
    if isinstance(obs, np.ndarray):
        return obs.tobytes() + str(obs.dtype).encode()
    return obs


def _rollout(harness_id: str, seed: int, episodes: int, max_steps: int,
             kwargs: dict[str, Any] | None = None) -> _Rollout:
    """Random episodes on seeds seed, seed+1, ... until `episodes` have ended or `max_steps`
    steps were taken: a trace of (obs, reward, flags), the returns, and every game failure the
    harness reported (`info["harness_error"]`) with its step. Each episode's actions come from
    `sampler_seed(its seed)`, a stream the game's own RNG (seeded with the same seed) never shares."""
    out = _Rollout()
    h = make_harness(harness_id, **(kwargs or {}))
    space = copy.deepcopy(h.action_space)  # a sampler of our own: the adapter seeds its space on reset

    def start() -> None:
        s = seed + len(out.seeds)
        out.seeds.append(s)
        space.seed(sampler_seed(s, CHECK_SAMPLER))
        obs, _ = h.reset(seed=s)
        out.trace.append(_fingerprint(obs))

    try:
        start()
        ep_ret = 0.0
        while out.steps < max_steps:
            obs, r, term, trunc, info = h.step(space.sample())
            out.steps += 1
            ep_ret += r
            out.trace.append((_fingerprint(obs), r, term, trunc))
            if info.get("harness_error"):
                out.crashes.append(f"step {out.steps}: {info['harness_error']}")
            if term or trunc:
                out.returns.append(ep_ret)
                out.terminated += bool(term)
                out.truncated += bool(trunc and not term)
                ep_ret = 0.0
                if len(out.returns) >= episodes:
                    break
                start()
    except PolarError as err:  # e.g. the game failed more often in a row than max_restarts allows
        out.stopped = f"{type(err).__name__}: {err}"
    finally:
        h.close()
    return out


def check_harness(harness_id: str, seed: int = 0, steps: int | None = None,
                  episodes: int = DEFAULT_EPISODES, kwargs: dict[str, Any] | None = None) -> CheckReport:
    """`steps`: the step cap of each rollout; default: enough for `episodes` whole episodes at
    the spec's step limit (`NO_LIMIT_STEPS` where it declares none). `kwargs`: the harness's
    keyword arguments (a suite's `kwargs:`, e.g. `odometry=True`)."""
    report = CheckReport(harness_id, episodes_wanted=episodes)
    h = make_harness(harness_id, **(kwargs or {}))
    try:
        report.step_limit = h.spec.max_steps
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(HarnessEnv(h), skip_render_check=True)
                report.env_checker = True
            except Exception as err:  # the checker raises AssertionError and others
                report.passed = False
                report.problems.append(f"env checker: {type(err).__name__}: {err}")
        report.warnings = sorted({_ANSI.sub("", str(w.message)) for w in caught})
    finally:
        h.close()
    if steps is None:
        steps = episodes * report.step_limit if report.step_limit else NO_LIMIT_STEPS
    report.step_cap = steps
    a = _rollout(harness_id, seed, episodes, steps, kwargs)
    report.episodes, report.steps, report.returns, report.crashes = len(a.returns), a.steps, a.returns, a.crashes
    report.terminated, report.truncated, report.seeds = a.terminated, a.truncated, a.seeds
    if a.crashes:
        report.passed = False
        more = f" (and {len(a.crashes) - 1} more)" if len(a.crashes) > 1 else ""
        report.problems.append(f"the game crashed {len(a.crashes)} time(s) in {a.steps} random steps; "
                               f"first at {a.crashes[0]}{more}")
    if a.stopped:
        report.passed = False
        report.problems.append(f"the random rollout stopped: {a.stopped}")
        return report
    b = _rollout(harness_id, seed, episodes, steps, kwargs)
    report.deterministic = a.trace == b.trace
    if not report.deterministic:
        report.passed = False
        why = ("the game crashed at different points" if a.crashes != b.crashes
               else "seeding is not deterministic")
        report.problems.append(f"two rollouts with seed {seed} differ: {why}")
    return report


def _seeds(seeds: list[int]) -> str:
    return ", ".join(map(str, seeds)) if len(seeds) <= 4 else f"{seeds[0]}..{seeds[-1]}"


def check_summary(r: CheckReport) -> list[str]:
    """What the check did, in words: the env checker, the episodes (how they ended, on which
    seeds, their returns) and whether the second run matched."""
    lines = [f"env checker: {'passed' if r.env_checker else 'failed'} (gymnasium's check_env on the adapter)"]
    limit = f"step limit {r.step_limit}" if r.step_limit else "no step limit declared"
    if r.episodes:
        mean = sum(r.returns) / len(r.returns)
        short = (f" (only {r.episodes} of {r.episodes_wanted} ended within the {r.step_cap}-step cap; "
                 "raise --steps)" if r.episodes < r.episodes_wanted else "")
        lines.append(f"random episodes: {r.episodes} played to the end{short} in {r.steps} steps on seeds "
                     f"{_seeds(r.seeds)}: {r.terminated} terminated, {r.truncated} truncated ({limit}); "
                     f"mean return {mean:.3f}, min {min(r.returns):.3f}, max {max(r.returns):.3f}")
    else:
        lines.append(f"random rollout: no episode finished in {r.steps} steps on seed {r.seeds[0] if r.seeds else '-'} "
                     f"({limit}; raise --steps to see returns)")
    if r.deterministic is not None:
        lines.append("determinism: a second run on the same seeds " + (
            f"matched at every step ({r.steps} steps)" if r.deterministic else "differed (see the problem above)"))
    return lines
