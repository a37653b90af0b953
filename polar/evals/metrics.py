"""From cell results to the figures a report shows: one row per agent x harness.

The cost ledger charges training env steps without double counting: each cell's
`Preparation.info["charges"]` maps a cost key to env steps (a pure-RL training run is
`train:<agent>:<harness>:<seed>`, a pretrained skill is `skill:<name>@<version>`), and a row or an
agent total sums each distinct key once. So a skill library shared by every cell of a planner
agent is charged once, while pure RL pays for every (harness, seed) it trained on.

Success rates rest on the episodes whose success could be told (`EpisodeRecord.success` is
not None). On a harness that reports no success and declares no success rule, no episode
can be judged: the rate is "unknown" (n = 0) and the report shows returns only.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from polar.evals.cells import CellResult
from polar.evals.suite import Suite
from polar.statistics import Estimate, iqm_estimate, mean_estimate, success_rate, wilson_interval

RESULTS_FORMAT = "polar.evals.results/1"
# A failed episode whose harness ended it without success and without any other cause
# (e.g. MiniGrid lava): the agent simply did not solve the task.
UNSOLVED = "ended-unsolved"


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    agent_kind: str
    harness: str
    harness_id: str
    seeds: int
    episodes: int
    success: Estimate  # over judged episodes; n = 0: success unknown on this harness
    mean_return: Estimate
    iqm_return: Estimate
    mean_length: float
    train_env_steps: int  # distinct training charges behind this row
    eval_env_steps: int
    llm_calls: int  # every model call, replayed ones included (what a live run makes)
    llm_cached: int  # of which served by the replay cache
    tokens: int
    cost_usd: float  # replayed calls count at their recorded price: a replayed suite reports
    wall_s: float  # the same ledger as the live run. Wall: preparation (training) + episodes.
    failures: dict[str, int]


class CurveSeries(BaseModel):
    """Success vs training env steps for one agent on one harness, pooled over seeds."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    harness: str
    env_steps: list[int]
    success: list[float]
    lo: list[float]
    hi: list[float]
    episodes: list[int]


class AgentTotal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    agent_kind: str
    train_env_steps: int
    eval_env_steps: int
    llm_calls: int
    llm_cached: int
    tokens: int
    cost_usd: float
    wall_s: float
    success: Estimate


class Results(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = RESULTS_FORMAT
    suite: str
    description: str = ""
    created: str
    seeds: list[int]
    episodes_per_cell: int
    agents: list[str]
    harnesses: list[str]
    rows: list[Row]
    totals: list[AgentTotal]
    curves: list[CurveSeries] = Field(default_factory=list)
    cells: int
    missing_cells: list[str] = Field(default_factory=list)
    ran: list[str] = Field(default_factory=list)  # cells run by the invocation that made this
    reused: list[str] = Field(default_factory=list)  # cells loaded from a previous run


def charges_of(res: CellResult) -> dict[str, int]:
    charges = res.prep.info.get("charges")
    if isinstance(charges, dict):
        return {str(k): int(v) for k, v in charges.items()}
    # A preparation that reported a bare figure is charged once per cell.
    if res.prep.train_env_steps:
        return {f"train:{res.cell.agent}:{res.cell.harness}:{res.cell.seed}": res.prep.train_env_steps}
    return {}


def llm_call_counts(eps: list[Any]) -> tuple[int, int]:
    """(all calls, cached calls) from the decision records; EpisodeRecord.llm_calls (live calls
    only) for records without per-call detail."""
    total = cached = 0
    for e in eps:
        calls = [c for d in e.decisions for c in d.llm_calls]
        if calls:
            total += len(calls)
            cached += sum(c.cached for c in calls)
        else:
            total += e.llm_calls
    return total, cached


def judged_success(eps: list[Any]) -> Estimate:
    """The success rate over the episodes whose success could be told; n = 0 when none could."""
    return success_rate([e.success for e in eps if e.success is not None])


def failure_counts(cells: list[CellResult]) -> dict[str, int]:
    """Failed episodes by cause (also the causes of episodes whose success is unknown)."""
    c: Counter[str] = Counter()
    for res in cells:
        for ep in res.episodes:
            if ep.success is False:
                c[ep.failure_cause or UNSOLVED] += 1
            elif ep.success is None and ep.failure_cause:
                c[ep.failure_cause] += 1
    return dict(sorted(c.items()))


def _row(suite: Suite, agent: str, harness: str, cells: list[CellResult]) -> Row:
    eps = [e for r in cells for e in r.episodes]
    returns = [e.episode_return for e in eps]
    charges: dict[str, int] = {}
    for r in cells:
        charges.update(charges_of(r))
    calls, cached = llm_call_counts(eps)
    return Row(
        agent=agent, agent_kind=cells[0].agent_kind, harness=harness, harness_id=cells[0].harness_id,
        seeds=len(cells), episodes=len(eps),
        success=judged_success(eps),
        mean_return=mean_estimate(returns, n_boot=suite.bootstrap, seed=0),
        iqm_return=iqm_estimate(returns, n_boot=suite.bootstrap, seed=0),
        mean_length=float(np.mean([e.env_steps for e in eps])) if eps else float("nan"),
        train_env_steps=sum(charges.values()),
        eval_env_steps=sum(e.env_steps for e in eps),
        llm_calls=calls, llm_cached=cached,
        tokens=sum(e.prompt_tokens + e.completion_tokens for e in eps),
        cost_usd=sum(e.cost_usd for e in eps),
        wall_s=sum(r.wall_s for r in cells),
        failures=failure_counts(cells),
    )


def _curve(agent: str, harness: str, cells: list[CellResult]) -> CurveSeries | None:
    """Pool each curve point over seeds (same step count); Wilson band over pooled episodes."""
    by_step: dict[int, list[int]] = {}
    for r in cells:
        for p in r.prep.curve:
            if p.successes is None:  # success unknown on this harness: no curve of it
                continue
            s = by_step.setdefault(p.env_steps, [0, 0])
            s[0] += p.successes
            s[1] += p.episodes
    if not by_step:
        return None
    steps = sorted(by_step)
    succ, lo, hi, n = [], [], [], []
    for st in steps:
        k, m = by_step[st]
        a, b = wilson_interval(k, m)
        succ.append(k / m if m else float("nan"))
        lo.append(a)
        hi.append(b)
        n.append(m)
    return CurveSeries(agent=agent, harness=harness, env_steps=steps, success=succ, lo=lo, hi=hi, episodes=n)


def compute_results(suite: Suite, cells: list[CellResult]) -> Results:
    by_key: dict[tuple[str, str], list[CellResult]] = {}
    for r in cells:
        by_key.setdefault((r.cell.agent, r.cell.harness), []).append(r)
    rows, curves = [], []
    for a in suite.agents:
        for h in suite.harnesses:
            group = by_key.get((a.name, h.label))
            if not group:
                continue
            rows.append(_row(suite, a.name, h.label, group))
            if (c := _curve(a.name, h.label, group)) is not None:
                curves.append(c)
    totals = []
    for a in suite.agents:
        group = [r for r in cells if r.cell.agent == a.name]
        if not group:
            continue
        charges: dict[str, int] = {}
        for r in group:
            charges.update(charges_of(r))
        eps = [e for r in group for e in r.episodes]
        calls, cached = llm_call_counts(eps)
        totals.append(AgentTotal(
            agent=a.name, agent_kind=group[0].agent_kind, train_env_steps=sum(charges.values()),
            eval_env_steps=sum(e.env_steps for e in eps), llm_calls=calls, llm_cached=cached,
            tokens=sum(e.prompt_tokens + e.completion_tokens for e in eps),
            cost_usd=sum(e.cost_usd for e in eps), wall_s=sum(r.wall_s for r in group),
            success=judged_success(eps),
        ))
    present = {r.cell.slug for r in cells}
    missing = [c.slug for c in suite.cells() if c.slug not in present]
    return Results(
        suite=suite.name, description=suite.description,
        created=datetime.now(UTC).isoformat(timespec="seconds"), seeds=list(suite.seeds),
        episodes_per_cell=suite.episodes, agents=[a.name for a in suite.agents],
        harnesses=[h.label for h in suite.harnesses], rows=rows, totals=totals, curves=curves,
        cells=len(cells), missing_cells=missing,
    )
