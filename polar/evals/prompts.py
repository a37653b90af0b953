"""Prompt iteration: run one suite once per prompt-template variant, and show what changed.

Each variant sets the user template of every planner agent in the suite (`template:` in the
agent) and runs into `<out>/<variant>/`, so variants resume independently (a variant whose
template file changed runs again, see `polar.evals.cells`) and the LLM client's replay cache
makes calls whose prompt did not change free. The comparison shows, per variant: success with
its interval, LLM calls, tokens, dollars, latency, failures and how many cells were reused;
per case (agent x harness x seed x episode) what each variant did; and a diff of the prompts
the variants render for the first case's start state. A template that does not load or
render is flagged on its variant and the other variants still run.

The terminal layout is vertical (one block per variant, one line per case and variant), so
it fits an 80-column terminal; `prompts.md` and `prompts.json` hold the same.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from polar.errors import ConfigError, PolarError
from polar.evals.cells import CellResult, load_cell
from polar.evals.metrics import failure_counts, judged_success, llm_call_counts
from polar.evals.report import pct, render_report
from polar.evals.runner import run_suite
from polar.evals.suite import PlannerAgentConfig, Suite, load_suite
from polar.statistics import Estimate

if TYPE_CHECKING:
    from rich.console import Console

    from polar.planners.base import PlannerContext

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
PLANNER_MODES = ("plan", "skill", "code", "auto")


class VariantRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: str
    template: str
    agent: str
    episodes: int = 0
    success: Estimate = Field(default_factory=lambda: Estimate(value=0.0, lo=0.0, hi=0.0, n=0))
    llm_calls: int = 0  # every call, replayed ones included
    cached_calls: int = 0  # of which served by the replay cache
    tokens: int = 0
    cost_usd: float = 0.0  # at recorded prices, replayed calls included (what a live run costs)
    live_cost_usd: float = 0.0  # what this invocation paid: calls that reached the model
    mean_latency_s: float = 0.0  # per model call (cache hits included, they cost ~0)
    mean_planner_s: float = 0.0  # per decision, model latency included
    failures: dict[str, int] = Field(default_factory=dict)
    cells_run: int = 0  # cells this invocation ran
    cells_reused: int = 0  # cells taken from an earlier run (nothing they depend on changed)
    error: str | None = None  # the variant could not run: its template is broken, ...


class CaseOutput(BaseModel):
    """What one variant did in one case (one episode of one cell)."""

    model_config = ConfigDict(extra="forbid")

    outcome: str  # "success", "unknown", or the failure cause
    steps: int
    decisions: list[str]  # each decision in one line


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str  # agent / harness / seed / episode index
    env_seed: int | None
    outputs: dict[str, CaseOutput]  # by variant


class PromptDiff(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case: str  # where the prompts were rendered (harness, env seed)
    base: str  # the variant diffed against
    variant: str
    diff: list[str] = Field(default_factory=list)  # unified diff lines; empty: identical
    error: str | None = None  # the variant's template did not render


class PromptComparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: str
    rows: list[VariantRow]
    cases: list[Case] = Field(default_factory=list)
    diffs: list[PromptDiff] = Field(default_factory=list)


def parse_variants(items: list[str]) -> dict[str, str]:
    """`["terse=prompts/terse.j2", "base=planner_skill"]` -> {name: template}."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, template = item.partition("=")
        if not sep or not name or not template:
            raise ConfigError(f"--variant {item!r}: expected NAME=TEMPLATE (e.g. terse=prompts/terse.j2)")
        if not _NAME.match(name):
            raise ConfigError(f"--variant {item!r}: the name may hold letters, digits, '_', '.', '-' only")
        if name in out:
            raise ConfigError(f"--variant: the name {name!r} is given twice")
        out[name] = template
    if not out:
        raise ConfigError("--variant: give at least one NAME=TEMPLATE")
    return out


def with_template(suite: Suite, template: str) -> Suite:
    """The suite with every planner agent's user template set to `template`."""
    agents = [a.model_copy(update={"template": template}) if isinstance(a, PlannerAgentConfig) else a
              for a in suite.agents]
    if not any(isinstance(a, PlannerAgentConfig) for a in agents):
        raise ConfigError(f"suite {suite.name}: no planner agent, so a prompt variant changes nothing")
    return suite.model_copy(update={"agents": agents})


# --- rendering the prompt of a live episode ------------------------------------------------

def render_prompt(template: str, context: PlannerContext, *, mode: str | None = None,
                  observation: str = "full", history_window: int = 12) -> str:
    """`template` (a name or a .j2 path) rendered on `context` exactly as the LLM planner
    renders its user template (`mode` default: the template's own, else auto)."""
    from polar.planners.fit import apply_observation_mode
    from polar.planners.llm import template_variables
    from polar.prompts.templates import load_template

    t = load_template(template)
    chosen = mode or (t.mode if t.mode in PLANNER_MODES else "auto")
    if chosen not in PLANNER_MODES:
        raise ConfigError(f"--mode: expected one of {', '.join(PLANNER_MODES)}, got {chosen!r}")
    variables = apply_observation_mode(template_variables(context, chosen, history_window), context.symbolic,
                                       observation)  # type: ignore[arg-type]
    return t.render(variables)


def live_prompt_context(harness_id: str, seed: int, *, task: str | None = None, skills: str | Path | None = None,
                        harness_kwargs: dict[str, Any] | None = None) -> PlannerContext:
    """The planner context of the first decision of a live episode on `harness_id` reset
    with `seed`, with the skills the library search path retrieves for the task."""
    from polar.agent.context import live_context
    from polar.harnesses.registry import make_harness
    from polar.skills.search_path import open_library

    with make_harness(harness_id, **(harness_kwargs or {})) as h:
        return live_context(h, seed, open_library(skills), task)


def _profile_settings(agent: PlannerAgentConfig) -> dict[str, Any]:
    """The mode, observation mode and history window an agent's LLM profile renders with."""
    from polar.planners.profile import LLMProfile, load_planner_profile

    profile = load_planner_profile(agent.planner)
    if not isinstance(profile, LLMProfile):
        return {}
    return {"mode": profile.mode, "observation": profile.observation, "history_window": profile.history_window}


# --- the comparison ------------------------------------------------------------------------

def _rows(variant: str, template: str, cells: list[CellResult], reused: set[str]) -> list[VariantRow]:
    rows = []
    by_agent: dict[str, list[CellResult]] = {}
    for c in cells:
        if c.agent_kind == "planner":
            by_agent.setdefault(c.cell.agent, []).append(c)
    for agent, group in by_agent.items():
        eps = [e for c in group for e in c.episodes]
        calls = [call for e in eps for d in e.decisions for call in d.llm_calls]
        decisions = [d for e in eps for d in e.decisions]
        n_calls, n_cached = llm_call_counts(eps)
        rows.append(VariantRow(
            variant=variant, template=template, agent=agent, episodes=len(eps),
            success=judged_success(eps),
            llm_calls=n_calls, cached_calls=n_cached,
            tokens=sum(e.prompt_tokens + e.completion_tokens for e in eps),
            cost_usd=sum(e.cost_usd for e in eps),
            live_cost_usd=sum(c.cost_usd for c in calls if not c.cached),
            mean_latency_s=sum(c.latency_s for c in calls) / len(calls) if calls else 0.0,
            mean_planner_s=sum(d.planner_s for d in decisions) / len(decisions) if decisions else 0.0,
            failures=failure_counts(group),
            cells_run=sum(c.cell.slug not in reused for c in group),
            cells_reused=sum(c.cell.slug in reused for c in group),
        ))
    return rows


def _decision_text(d: dict[str, Any]) -> str:
    kind = d.get("kind")
    if kind == "skill":
        return f"{d.get('skill')}(" + ", ".join(f"{k}={v}" for k, v in (d.get("args") or {}).items()) + ")"
    if kind == "finish":
        return f"finish(success={d.get('success')})"
    if kind == "plan":
        return f"plan of {len(d.get('steps') or [])} steps"
    if kind == "code":
        return f"policy code ({len(str(d.get('source', '')).splitlines())} lines)"
    return f"error: {str(d.get('error', ''))[:60]}"


def _case_outputs(variant: str, cells: list[CellResult], cases: dict[str, Case]) -> None:
    for c in cells:
        if c.agent_kind != "planner":
            continue
        for i, e in enumerate(c.episodes):
            label = f"{c.cell.agent} / {c.cell.harness} / seed {c.cell.seed} / #{i}"
            case = cases.setdefault(label, Case(label=label, env_seed=e.seed, outputs={}))
            outcome = "success" if e.success else "unknown" if e.success is None else str(e.failure_cause or "failed")
            case.outputs[variant] = CaseOutput(outcome=outcome, steps=e.env_steps,
                                               decisions=[_decision_text(d.decision) for d in e.decisions])


def _diffs(suite: Suite, variants: dict[str, str], broken: dict[str, str]) -> list[PromptDiff]:
    """Each variant's prompt against the first working variant's, for the first harness's first
    episode start state (rendered live, with the first planner agent's profile settings)."""
    working = [v for v in variants if v not in broken]
    agent = next(a for a in suite.agents if isinstance(a, PlannerAgentConfig))
    entry = suite.harnesses[0]
    env_seed = suite.episode_seed((agent.seeds or suite.seeds)[0], 0)
    where = f"{entry.label}, env seed {env_seed}"
    if not working:
        return []
    try:
        settings = _profile_settings(agent)
        context = live_prompt_context(entry.id, env_seed, task=entry.task, skills=agent.skills,
                                      harness_kwargs=entry.kwargs)
    except PolarError as err:
        return [PromptDiff(case=where, base=working[0], variant=v, error=f"{type(err).__name__}: {err}")
                for v in variants]
    rendered: dict[str, list[str]] = {}
    out: list[PromptDiff] = []
    for v, template in variants.items():
        if v in broken:
            out.append(PromptDiff(case=where, base=working[0], variant=v, error=broken[v]))
            continue
        try:
            rendered[v] = render_prompt(template, context, **settings).splitlines()
        except PolarError as err:
            out.append(PromptDiff(case=where, base=working[0], variant=v, error=f"{type(err).__name__}: {err}"))
    base = next((v for v in working if v in rendered), None)
    for v in rendered:
        if base is not None and v != base:
            diff = list(difflib.unified_diff(rendered[base], rendered[v], base, v, n=1, lineterm=""))
            out.append(PromptDiff(case=where, base=base, variant=v, diff=diff))
    return out


def _check_template(template: str) -> str | None:
    """Why a variant's template cannot be used, or None."""
    from polar.prompts.templates import load_template

    try:
        load_template(template)
    except PolarError as err:
        return f"{type(err).__name__}: {err}"
    return None


def compare_prompts(
    suite: Suite | str | Path,
    variants: dict[str, str],
    out_dir: str | Path | None = None,
    *,
    workers: int | None = None,
    progress: bool = True,
    console: Console | None = None,
    quiet: bool = False,
    fresh: bool = False,
) -> list[VariantRow]:
    """Run the suite once per variant (see the module docstring); returns one row per variant
    and planner agent (one row with `error` for a variant that could not run)."""
    base = load_suite(suite)
    out = Path(out_dir) if out_dir is not None else Path("runs") / "evals" / f"{base.name}-prompts"
    rows: list[VariantRow] = []
    cases: dict[str, Case] = {}
    broken: dict[str, str] = {}
    for name, template in variants.items():
        s = with_template(base, template)
        error = _check_template(template)
        if error is None:
            try:
                results = run_suite(s, out / name, workers=workers, progress=progress and not quiet, fresh=fresh)
            except PolarError as err:  # e.g. the template renders with a missing variable
                error = f"{type(err).__name__}: {err}"
        if error is not None:
            broken[name] = error
            rows.append(VariantRow(variant=name, template=template, agent="-", error=error))
            continue
        render_report(results, out / name)
        cells = [c for c in (load_cell(out / name, s, cell) for cell in s.cells()) if c is not None]
        rows += _rows(name, template, cells, set(results.reused))
        _case_outputs(name, cells, cases)
    comparison = PromptComparison(suite=base.name, rows=rows, cases=list(cases.values()),
                                  diffs=_diffs(base, variants, broken))
    out.mkdir(parents=True, exist_ok=True)
    (out / "prompts.json").write_text(comparison.model_dump_json(indent=1))
    (out / "prompts.md").write_text(prompts_markdown(comparison))
    if not quiet:
        from rich.console import Console

        console = console or Console()
        print_comparison(comparison, console)
        console.print(f"per-variant reports under {out}/<variant>/report.html; all of it: {out / 'prompts.md'}",
                      highlight=False)
    return rows


# --- output ----------------------------------------------------------------------------------

def _variant_lines(r: VariantRow) -> list[str]:
    if r.error:
        return [f"BROKEN: {r.error}"]
    fails = ", ".join(f"{k} {v}" for k, v in r.failures.items()) or "none"
    return [
        f"agent {r.agent}: success {pct(r.success)} over {r.episodes} episodes",
        f"LLM calls {r.llm_calls} ({r.cached_calls} cached), {r.tokens} tokens, ${r.cost_usd:.4f} "
        f"(${r.live_cost_usd:.4f} paid now)",
        f"latency {r.mean_latency_s:.3f} s/call, planner {r.mean_planner_s:.3f} s/decision",
        f"failures: {fails}",
        f"cells: {r.cells_run} run, {r.cells_reused} reused",
    ]


def _variant_width(c: PromptComparison) -> int:
    """The width of the variant names shown per case (the variants that ran)."""
    return max((len(r.variant) for r in c.rows if not r.error), default=1)


def _case_line(variant: str, o: CaseOutput | None, width: int) -> str:
    if o is None:
        return f"{variant:<{width}}  (not run)"
    steps = " -> ".join(o.decisions[:4]) + (f" ... ({len(o.decisions)} decisions)" if len(o.decisions) > 4 else "")
    return f"{variant:<{width}}  {o.outcome}, {o.steps} steps: {steps or 'no decision'}"


def print_comparison(c: PromptComparison, console: Console) -> None:
    """One block per variant, then one line per case and variant, then the prompt diffs."""
    from rich.rule import Rule

    width = _variant_width(c)
    console.print(Rule(f"prompt variants on {c.suite}"))
    for r in c.rows:
        console.print(f"[bold]{r.variant}[/] ({r.template})", highlight=False)
        for line in _variant_lines(r):
            console.print(f"  {line}", markup=False, highlight=False)
    if c.cases:
        console.print(Rule("per case: what each variant did"))
        for case in c.cases:
            console.print(f"{case.label} (env seed {case.env_seed})", markup=False, highlight=False)
            for r in c.rows:
                if not r.error:
                    console.print("  " + _case_line(r.variant, case.outputs.get(r.variant), width), markup=False,
                                  highlight=False)
    for d in c.diffs:
        console.print(Rule(f"prompt of {d.variant} vs {d.base} ({d.case})"))
        if d.error:
            console.print(f"  not rendered: {d.error}", markup=False, highlight=False)
        elif not d.diff:
            console.print("  identical", highlight=False)
        for line in d.diff[2:]:  # skip the ---/+++ header: the rule names both
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            console.print(line, style=style, markup=False, highlight=False)


def prompts_markdown(c: PromptComparison) -> str:
    lines = [f"# Prompt variants on {c.suite}", ""]
    for r in c.rows:
        lines += [f"## {r.variant} (`{r.template}`)", ""] + [f"- {line}" for line in _variant_lines(r)] + [""]
    if c.cases:
        lines += ["## Per case", ""]
        width = _variant_width(c)
        for case in c.cases:
            lines += [f"- {case.label} (env seed {case.env_seed})"]
            lines += [f"  - {_case_line(r.variant, case.outputs.get(r.variant), width)}" for r in c.rows if not r.error]
        lines.append("")
    for d in c.diffs:
        lines += [f"## Prompt of {d.variant} vs {d.base} ({d.case})", ""]
        lines += [f"Not rendered: {d.error}", ""] if d.error else ["```diff", *d.diff, "```", ""]
    return "\n".join(lines)
