"""Prompt iteration: run one suite once per prompt-template variant, side by side.

Each variant sets the user template of every planner agent in the suite (`template:` in the
agent) and runs into `<out>/<variant>/`, so variants resume independently and the LLM
client's replay cache makes calls whose prompt did not change free. The comparison table
reports per variant: success with its interval, LLM calls, tokens, dollars, and the mean
model latency per call and planner time per decision, measured from the episode records.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from polar.errors import ConfigError
from polar.evals.cells import load_cell
from polar.evals.metrics import failure_counts, judged_success, llm_call_counts
from polar.evals.report import pct, render_report
from polar.evals.runner import run_suite
from polar.evals.suite import PlannerAgentConfig, Suite, load_suite
from polar.statistics import Estimate

if TYPE_CHECKING:
    from rich.console import Console

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


class VariantRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: str
    template: str
    agent: str
    episodes: int
    success: Estimate
    llm_calls: int  # every call, replayed ones included
    cached_calls: int  # of which served by the replay cache
    tokens: int
    cost_usd: float  # at recorded prices, replayed calls included (what a live run costs)
    live_cost_usd: float  # what this invocation paid: calls that reached the model
    mean_latency_s: float  # per model call (cache hits included, they cost ~0)
    mean_planner_s: float  # per decision, model latency included
    failures: dict[str, int]
    cells_run: int = 0  # cells this invocation ran
    cells_reused: int = 0  # cells taken from an earlier run (nothing they depend on changed)


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


def _rows(variant: str, template: str, cells: list[Any], reused: set[str]) -> list[VariantRow]:
    rows = []
    by_agent: dict[str, list[Any]] = {}
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
    base = load_suite(suite)
    out = Path(out_dir) if out_dir is not None else Path("runs") / "evals" / f"{base.name}-prompts"
    rows: list[VariantRow] = []
    for name, template in variants.items():
        s = with_template(base, template)
        results = run_suite(s, out / name, workers=workers, progress=progress and not quiet, fresh=fresh)
        render_report(results, out / name)
        cells = [c for c in (load_cell(out / name, s, cell) for cell in s.cells()) if c is not None]
        rows += _rows(name, template, cells, set(results.reused))
    out.mkdir(parents=True, exist_ok=True)
    (out / "prompts.json").write_text(json.dumps([r.model_dump(mode="json") for r in rows], indent=1))
    (out / "prompts.md").write_text(prompts_markdown(base.name, rows))
    if not quiet:
        from rich.console import Console

        console = console or Console()
        _print(rows, console)
        console.print(f"per-variant reports under {out}/<variant>/report.html; table: {out / 'prompts.md'}")
    return rows


HEADER = ["variant", "template", "agent", "success [95% CI]", "LLM calls (cached)", "tokens", "$", "$ paid now",
          "latency s/call", "planner s/decision", "failures", "cells run (reused)"]


def _cells(r: VariantRow) -> list[str]:
    return [r.variant, r.template, r.agent, pct(r.success),
            f"{r.llm_calls} ({r.cached_calls})", str(r.tokens), f"{r.cost_usd:.4f}", f"{r.live_cost_usd:.4f}",
            f"{r.mean_latency_s:.3f}", f"{r.mean_planner_s:.3f}",
            ", ".join(f"{k} {v}" for k, v in r.failures.items()) or "-",
            f"{r.cells_run} ({r.cells_reused})"]


def prompts_markdown(suite: str, rows: list[VariantRow]) -> str:
    lines = [f"# Prompt variants on {suite}", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _print(rows: list[VariantRow], console: Console) -> None:
    from rich.table import Table

    t = Table(title="prompt variants side by side")
    for h in HEADER:
        t.add_column(h, overflow="fold")
    for r in rows:
        t.add_row(*_cells(r))
    console.print(t)
