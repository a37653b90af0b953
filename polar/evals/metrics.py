"""From cell results to the figures a report shows: one row per agent x harness.

The cost ledger charges training env steps without double counting: each cell's
`Preparation.info["charges"]` maps a cost key to env steps (a pure-RL training run is
`train:<agent>:<harness>:<seed>`, a pretrained skill is `skill:<name>@<version>`, a tuning
sweep `tune:<sweep>`), and a row or an agent total sums each distinct key once. So a skill
library shared by every cell of a planner agent is charged once, while pure RL pays for every
(harness, seed) it trained on. The ledger keeps the three kinds apart: skills' pretraining,
training on the suite's tasks, tuning sweeps; LLM tokens and latency come from the episodes.

Intervals are over seeds: a seed (run) is one training of the agent, so its episodes are not
independent draws; `polar.statistics.seed_estimate` redraws seeds, then episodes within them.

Success rates rest on the episodes whose success could be told (`EpisodeRecord.success` is
not None). On a harness that reports no success and declares no success rule, no episode
can be judged: the rate is "unknown" (n = 0) and the report shows returns only.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from polar.errors import ConfigError
from polar.evals.agents import Information
from polar.evals.cells import CellResult
from polar.evals.paired import Comparison, compare_agents
from polar.evals.planner_agent import PlannerProfiles
from polar.evals.suite import Suite
from polar.statistics import Estimate, aggregate_iqm, seed_estimate, success_estimate, success_rate

RESULTS_FORMAT = "polar.evals.results/2"
# A failed episode whose harness ended it without success and without any other cause
# (e.g. MiniGrid lava): the agent simply did not solve the task.
UNSOLVED = "ended-unsolved"
EPISODE_STATS_KEY = "episode_stats"  # EpisodeRecord.extra: the harness's `episode_stats()` at the end


class Ledger(BaseModel):
    """Training env steps split by what they paid for (each distinct charge counted once)."""

    model_config = ConfigDict(extra="forbid")

    pretrain_env_steps: int = 0  # the skills' pretraining (`skill:` charges)
    task_train_env_steps: int = 0  # training on the suite's tasks (`train:`, `checkpoint:`)
    tuning_env_steps: int = 0  # hyper-parameter sweeps (`tune:`)

    @property
    def total(self) -> int:
        return self.pretrain_env_steps + self.task_train_env_steps + self.tuning_env_steps


CHARGE_KINDS = {"skill": "pretrain_env_steps", "tune": "tuning_env_steps"}  # else task training


def ledger(charges: dict[str, int]) -> Ledger:
    split = {"pretrain_env_steps": 0, "task_train_env_steps": 0, "tuning_env_steps": 0}
    for key, steps in charges.items():
        split[CHARGE_KINDS.get(key.split(":", 1)[0], "task_train_env_steps")] += steps
    return Ledger(**split)


class DomainMetric(BaseModel):
    """A figure a world scores itself by (polar.domains.registry `episode_metrics`), computed
    from its episodes' stats: Crafter's score, its BALROG progression, each achievement's rate.
    The report shows one table per `table`, a row per `name`, a column per agent."""

    model_config = ConfigDict(extra="forbid")

    table: str
    name: str
    estimate: Estimate


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    agent_kind: str
    observes: str  # none | view | full | privileged: what the agent reads, its skills included
    decides_from: str  # what its policy / controller / planner reads itself
    role: str  # e.g. "pure RL (PPO)", "scripted reference (...)"
    harness: str
    harness_id: str
    seeds: int
    episodes: int
    # Intervals over seeds x episodes (two-level bootstrap): seeds are redrawn, then episodes.
    success: Estimate  # over judged episodes; n = 0: success unknown on this harness
    success_pooled: Estimate  # Wilson over all episodes, seeds pooled (ignores seed variance)
    seed_success: dict[int, float]  # success rate per seed (run): the scores behind the aggregate
    mean_return: Estimate
    iqm_return: Estimate
    mean_length: float
    train_env_steps: int  # distinct training charges behind this row (the ledger's total)
    ledger: Ledger
    eval_env_steps: int
    llm_calls: int  # every model call, replayed ones included (what a live run makes)
    llm_cached: int  # of which served by the replay cache
    tokens: int
    cost_usd: float  # replayed calls count at their recorded price: a replayed suite reports
    llm_latency_s: float  # the same ledger as the live run. Latency: summed over calls.
    wall_s: float  # preparation (training) + episodes
    failures: dict[str, int]
    cells: list[str] = Field(default_factory=list)  # cell slugs: <agent>/<harness>/seed-<s>
    # Episodes judged successful with a return <= 0 on a harness whose reward marks success
    # (HarnessSpec.reward_marks_success): success and return disagree; the report flags it.
    unrewarded_successes: int = 0
    domain_metrics: list[DomainMetric] = Field(default_factory=list)  # the world's own scores, if any


class CurveSeries(BaseModel):
    """Success vs training env steps for one agent on one harness; intervals over seeds."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    harness: str
    env_steps: list[int]
    success: list[float]
    lo: list[float]
    hi: list[float]
    episodes: list[int]
    seeds: list[int]  # seeds (runs) measured at each point


class AgentTotal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    agent_kind: str
    observes: str
    decides_from: str
    role: str
    train_env_steps: int
    ledger: Ledger
    eval_env_steps: int
    llm_calls: int
    llm_cached: int
    tokens: int
    cost_usd: float
    llm_latency_s: float
    wall_s: float
    success: Estimate  # over seeds x episodes of every harness (tasks weighted by episodes)
    # IQM over (seed, task) success rates with a stratified-bootstrap interval (runs redrawn
    # within each task); `n` counts the (seed, task) scores. Tasks: the harnesses it ran on.
    aggregate_iqm: Estimate
    tasks: list[str]


class Results(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = RESULTS_FORMAT
    suite: str
    description: str = ""
    created: str
    seeds: list[int]
    episodes_per_cell: int
    episodes_by_agent: dict[str, int] = Field(default_factory=dict)  # agents with their own count
    agent_harnesses: dict[str, list[str]] = Field(default_factory=dict)  # agents that play some harnesses only
    eval_seed: int = 0  # episode i of seed s starts from env seed eval_seed + 1000 s + i
    agents: list[str]
    harnesses: list[str]
    rows: list[Row]
    totals: list[AgentTotal]
    curves: list[CurveSeries] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    skills_trained_on: dict[str, list[str]] = Field(default_factory=dict)  # skill ref -> harnesses
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


def unrewarded_successes(cells: list[CellResult]) -> int:
    """Successes with no return on a harness whose reward marks success: the success came
    from somewhere the environment disagrees with (a goal test it does not reward)."""
    return sum(1 for r in cells if r.reward_marks_success
               for e in r.episodes if e.success and e.episode_return <= 0)


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


def _seed_groups(cells: list[CellResult]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for r in cells:
        out.setdefault(r.cell.seed, []).extend(r.episodes)
    return out


def seed_success(cells: list[CellResult]) -> dict[int, float]:
    """Success rate per seed (run), over the episodes whose success is known."""
    out = {}
    for s, eps in sorted(_seed_groups(cells).items()):
        known = [bool(e.success) for e in eps if e.success is not None]
        if known:
            out[s] = sum(known) / len(known)
    return out


def _charges(cells: list[CellResult]) -> dict[str, int]:
    charges: dict[str, int] = {}
    for r in cells:
        charges.update(charges_of(r))
    return charges


def sweep_env_steps(file: str, agent: str) -> int:
    """The env steps of every trial in a sweep's score file (`best.json`)."""
    try:
        trials = json.loads(Path(file).expanduser().read_text())["trials"]
        return sum(int(t["env_steps"]) for t in trials)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"agent {agent}: tuned_by: {file}: not a sweep's score file with each "
                          f"trial's env_steps ({e})") from e


def external_tuning(suite: Suite, agent: str, harness: str | None = None) -> dict[str, int]:
    """`tune:<file>` charges of the sweeps an agent's `tuned_by` names (those that tuned
    `harness`, or all of them)."""
    tuned_by = getattr(suite.agent(agent), "tuned_by", None) or {}
    return {f"tune:{file}": sweep_env_steps(str(suite.path_of(file)), agent) for file, labels in tuned_by.items()
            if harness is None or harness in labels}


def _llm_latency(eps: list[Any]) -> float:
    return float(sum(c.latency_s for e in eps for d in e.decisions for c in d.llm_calls))


def domain_metrics(harness_id: str, cells: list[CellResult], n_boot: int) -> list[DomainMetric]:
    """The scores the harness's domain declares, from each seed's episodes' stats (none where
    the domain declares none or no episode recorded stats)."""
    from polar.domains.registry import episode_metrics

    compute = episode_metrics(harness_id)
    stats = [[e.extra[EPISODE_STATS_KEY] for e in g if EPISODE_STATS_KEY in e.extra]
             for g in _seed_groups(cells).values()]
    if compute is None or not any(stats):
        return []
    return [DomainMetric.model_validate(m) for m in compute(stats, n_boot=n_boot)]


def _row(suite: Suite, agent: str, info: Information, harness: str, cells: list[CellResult]) -> Row:
    eps = [e for r in cells for e in r.episodes]
    groups = _seed_groups(cells)
    succ = [[float(e.success) for e in g if e.success is not None] for g in groups.values()]
    rets = [[e.episode_return for e in g] for g in groups.values()]
    split = ledger(_charges(cells) | external_tuning(suite, agent, harness))
    calls, cached = llm_call_counts(eps)
    nb = suite.bootstrap
    return Row(
        agent=agent, agent_kind=cells[0].agent_kind, observes=info.observes, decides_from=info.decides_from,
        role=info.role, harness=harness, harness_id=cells[0].harness_id, seeds=len(groups), episodes=len(eps),
        success=success_estimate(succ, n_boot=nb), success_pooled=judged_success(eps), seed_success=seed_success(cells),
        mean_return=seed_estimate(rets, "mean", n_boot=nb), iqm_return=seed_estimate(rets, "iqm", n_boot=nb),
        mean_length=float(np.mean([e.env_steps for e in eps])) if eps else float("nan"),
        train_env_steps=split.total, ledger=split,
        eval_env_steps=sum(e.env_steps for e in eps),
        llm_calls=calls, llm_cached=cached,
        tokens=sum(e.prompt_tokens + e.completion_tokens for e in eps),
        cost_usd=sum(e.cost_usd for e in eps), llm_latency_s=_llm_latency(eps),
        wall_s=sum(r.wall_s for r in cells),
        failures=failure_counts(cells), cells=[r.cell.slug for r in cells],
        unrewarded_successes=unrewarded_successes(cells),
        domain_metrics=domain_metrics(cells[0].harness_id, cells, nb),
    )


def _curve(agent: str, harness: str, cells: list[CellResult], n_boot: int) -> CurveSeries | None:
    """Each point: success over the seeds measured at that step count, interval over seeds x
    episodes (a seed's k successes of m episodes are its m outcomes)."""
    by_step: dict[int, list[list[float]]] = {}
    for r in cells:
        for p in r.prep.curve:
            if p.successes is None:  # success unknown on this harness: no curve of it
                continue
            by_step.setdefault(p.env_steps, []).append([1.0] * p.successes + [0.0] * (p.episodes - p.successes))
    if not by_step:
        return None
    steps = sorted(by_step)
    est = [success_estimate(by_step[st], n_boot=n_boot) for st in steps]
    return CurveSeries(agent=agent, harness=harness, env_steps=steps, success=[e.value for e in est],
                       lo=[e.lo for e in est], hi=[e.hi for e in est], episodes=[e.n for e in est],
                       seeds=[len(by_step[st]) for st in steps])


def _total(suite: Suite, agent: str, info: Information, group: list[CellResult],
           rows: list[Row]) -> AgentTotal:
    split = ledger(_charges(group) | external_tuning(suite, agent))
    eps = [e for r in group for e in r.episodes]
    calls, cached = llm_call_counts(eps)
    scored = [r for r in rows if r.seed_success]
    # all harnesses' episodes of a seed together: tasks weigh by their episodes
    succ = [[float(e.success) for e in g if e.success is not None] for g in _seed_groups(group).values()]
    return AgentTotal(
        agent=agent, agent_kind=group[0].agent_kind, observes=info.observes, decides_from=info.decides_from,
        role=info.role, train_env_steps=split.total, ledger=split,
        eval_env_steps=sum(e.env_steps for e in eps), llm_calls=calls, llm_cached=cached,
        tokens=sum(e.prompt_tokens + e.completion_tokens for e in eps),
        cost_usd=sum(e.cost_usd for e in eps), llm_latency_s=_llm_latency(eps),
        wall_s=sum(r.wall_s for r in group), success=success_estimate(succ, n_boot=suite.bootstrap),
        aggregate_iqm=(aggregate_iqm([list(r.seed_success.values()) for r in scored], n_boot=suite.bootstrap)
                       if scored else Estimate(value=float("nan"), lo=float("nan"), hi=float("nan"), n=0)),
        tasks=[r.harness for r in scored],
    )


def skills_trained_on(cells: list[CellResult]) -> dict[str, list[str]]:
    """Skill ref -> the harnesses its pretraining ran on (from the skills' provenance)."""
    out: dict[str, list[str]] = {}
    for r in cells:
        for s in r.prep.info.get("skills", []):
            if isinstance(s, dict) and "skill" in s:
                out[str(s["skill"])] = [str(h) for h in s.get("trained_on", [])]
    return dict(sorted(out.items()))


def compute_results(suite: Suite, cells: list[CellResult], profiles: PlannerProfiles | None = None) -> Results:
    """The report's figures from the finished cells (`profiles`: the run's planner profiles,
    resolved once, where the caller has them)."""
    from polar.evals.cells import agent_information

    by_key: dict[tuple[str, str], list[CellResult]] = {}
    for r in cells:
        by_key.setdefault((r.cell.agent, r.cell.harness), []).append(r)
    info = {a.name: agent_information(a, profiles) for a in suite.agents}
    rows, curves, totals = [], [], []
    for a in suite.agents:
        agent_rows = []
        for h in suite.harnesses:
            group = by_key.get((a.name, h.label))
            if not group:
                continue
            agent_rows.append(_row(suite, a.name, info[a.name], h.label, group))
            if (c := _curve(a.name, h.label, group, suite.bootstrap)) is not None:
                curves.append(c)
        rows += agent_rows
        group = [r for r in cells if r.cell.agent == a.name]
        if group:
            totals.append(_total(suite, a.name, info[a.name], group, agent_rows))
    names = [t.agent for t in totals]
    labels = [h.label for h in suite.harnesses]
    scores = {(r.agent, r.harness): r.seed_success for r in rows}
    observes = {n: info[n].observes for n in names}
    comparisons = [compare_agents(x, y, observes, labels, by_key, scores, suite.bootstrap)
                   for i, x in enumerate(names) for y in names[i + 1:]]
    present = {r.cell.slug for r in cells}
    missing = [c.slug for c in suite.cells() if c.slug not in present]
    return Results(
        suite=suite.name, description=suite.description,
        created=datetime.now(UTC).isoformat(timespec="seconds"), seeds=list(suite.seeds),
        episodes_per_cell=suite.episodes, eval_seed=suite.eval_seed,
        episodes_by_agent={a.name: a.episodes for a in suite.agents if a.episodes not in (None, suite.episodes)},
        agent_harnesses={a.name: [h.label for h in suite.harnesses_of(a)] for a in suite.agents if a.harnesses},
        agents=[a.name for a in suite.agents],
        harnesses=labels, rows=rows, totals=totals, curves=curves, comparisons=comparisons,
        skills_trained_on=skills_trained_on(cells), cells=len(cells), missing_cells=missing,
    )
