"""Reports: results.json, report.md (the tables), PNG plots, a self-contained report.html, and
one page per cell under `episodes/` (the drill-down, see `polar.evals.pages`).

The HTML embeds its plots as base64 PNGs, so one file can be mailed or attached to an issue;
its links to the episode pages are relative, so the folder can be moved or committed whole.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any

from polar.evals.metrics import Results, Row
from polar.evals.pages import EPISODES_DIR, write_episode_pages
from polar.files import atomic_write
from polar.statistics import Estimate

SUCCESS_PLOT = "success_by_harness.png"
CURVE_PLOT = "success_vs_env_steps.png"

INFORMATION_LEGEND = (
    "**observes** is what an agent reads, its skills included: `none` (random play), `view` (the "
    "harness's own observation: MiniGrid's 7x7 egocentric view), `full` (the whole grid or "
    "symbolic state; the shipped `goto` skill reads the full grid, so every agent calling it "
    "is `full`), `privileged` (hand-written domain logic over the full state: the symbolic "
    "planner is a scripted reference, an upper bound, not a method under test). Where it "
    "differs, the decision maker's own input is shown as \"(decides from ...)\". Agents of "
    "different information are never ranked against each other without that label: a gap "
    "between them mixes method and information."
)
STATISTICS_NOTE = (
    "Intervals are 95% percentile bootstrap over seeds x episodes: seeds (one training run "
    "each, a planner model trained once per seed included, or one block of evaluation episodes "
    "for agents that do not train in the suite or play one model trained beforehand) are "
    "redrawn, then episodes within each drawn "
    "seed, so seed-to-seed variance counts where the suite trains. A success interval "
    "is never narrower than the Wilson interval of the same episodes pooled: the bootstrap "
    "collapses to a point when every episode has the same outcome (20/20 would read [100, 100])."
)


def _steps(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.2f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return str(n)


def pct(s: Estimate) -> str:
    """A success rate with its interval, or "unknown" when no episode could be judged."""
    if s.n == 0:
        return "unknown"
    return f"{100 * s.value:.0f}% [{100 * s.lo:.0f}, {100 * s.hi:.0f}]"


DISAGREE_MARK = "⚠ no return"


def _success_cell(success: Estimate, unrewarded: int) -> str:
    """The success column; marked where successes came with no return on a harness whose
    reward marks success (see `disagreements`)."""
    return pct(success) + (f" {DISAGREE_MARK} ({unrewarded})" if unrewarded else "")


def disagreements(rows: list[Row] | list[dict[str, Any]]) -> list[str]:
    """One sentence per row whose success and return disagree: episodes judged successful with
    a return <= 0 on a harness whose reward marks success (MiniGrid: a terminal reward > 0
    exactly on success). Such a success was not the environment's: read docs/evals.md#success."""
    out = []
    for r in rows:
        d = r if isinstance(r, dict) else r.model_dump()
        if k := d.get("unrewarded_successes", 0):
            out.append(f"Success and return disagree: {d['agent']} on {d['harness']}: {k} of "
                       f"{d['episodes']} episodes judged successful with a return <= 0, on a harness "
                       "whose reward marks success; the environment did not reward them (see "
                       "docs/evals.md#success).")
    return out


def _calls(n: int, cached: int) -> str:
    return f"{n} ({cached} cached)" if cached else str(n)


def _failures(row: Row) -> str:
    return _failure_counts(row.failures)


def _failure_counts(failures: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in failures.items()) or "-"


def observes(label: str, decides_from: str) -> str:
    return label if decides_from == label else f"{label} (decides from {decides_from})"


def _seed_of(slug: str) -> str:
    return slug.rsplit("seed-", 1)[-1]


def episode_page(slug: str) -> str:
    """The relative path of a cell's episode page."""
    return f"{EPISODES_DIR}/{slug}.html"


TABLE_HEADER = [
    "agent", "observes", "harness", "seeds", "success [95% CI]", "mean return [95% CI]",
    "IQM return [95% CI]", "ep. length", "train env steps", "eval env steps", "LLM calls", "tokens",
    "$", "wall s", "failures",
]


def table_rows(results: Results) -> list[list[str]]:
    out = []
    for r in results.rows:
        out.append([
            r.agent, observes(r.observes, r.decides_from), r.harness, str(r.seeds),
            _success_cell(r.success, r.unrewarded_successes),
            r.mean_return.fmt(), r.iqm_return.fmt(), f"{r.mean_length:.1f}", _steps(r.train_env_steps),
            _steps(r.eval_env_steps), _calls(r.llm_calls, r.llm_cached), str(r.tokens), f"{r.cost_usd:.4f}",
            f"{r.wall_s:.1f}", _failures(r),
        ])
    return out


TOTALS_HEADER = ["agent", "observes", "role", "success (all harnesses)", "skills' pretraining",
                 "task training", "tuning", "train env steps charged", "eval env steps", "LLM calls",
                 "tokens", "LLM latency s", "$", "wall s"]


def totals_rows(results: Results) -> list[list[str]]:
    return [[t.agent, observes(t.observes, t.decides_from), t.role, pct(t.success),
             _steps(t.ledger.pretrain_env_steps), _steps(t.ledger.task_train_env_steps),
             _steps(t.ledger.tuning_env_steps), _steps(t.train_env_steps), _steps(t.eval_env_steps),
             _calls(t.llm_calls, t.llm_cached), str(t.tokens), f"{t.llm_latency_s:.1f}", f"{t.cost_usd:.4f}",
             f"{t.wall_s:.1f}"]
            for t in results.totals]


AGGREGATE_HEADER = ["observes", "agent", "tasks", "IQM of per-seed success [95% CI]", "(seed, task) scores"]


def aggregate_rows(results: Results) -> list[list[str]]:
    """Grouped by information (most first), so a reader compares within a group."""
    order = ("privileged", "full", "view", "none")
    totals = sorted(results.totals, key=lambda t: order.index(t.observes) if t.observes in order else 9)
    return [[observes(t.observes, t.decides_from), t.agent, str(len(t.tasks)), pct(t.aggregate_iqm),
             str(t.aggregate_iqm.n)] for t in totals if t.aggregate_iqm.n]


def domain_tables(results: Results) -> list[tuple[str, list[str], list[list[str]]]]:
    """The worlds' own scores (Row.domain_metrics): per harness and table, (title, header,
    rows), a row per metric and a column per agent; empty where no row has any."""
    out = []
    for h in results.harnesses:
        rows = [r for r in results.rows if r.harness == h and r.domain_metrics]
        tables: dict[str, dict[str, dict[str, str]]] = {}  # table -> metric -> agent -> value
        for r in rows:
            for m in r.domain_metrics:
                tables.setdefault(m.table, {}).setdefault(m.name, {})[r.agent] = m.estimate.fmt(1)
        agents = [r.agent for r in rows]
        for title, metrics in tables.items():
            out.append((f"{title} on {h}", ["metric", *agents],
                        [[name, *(vals.get(a, "-") for a in agents)] for name, vals in metrics.items()]))
    return out


def one_seed_note(results: Results) -> str:
    """A sentence for the aggregate and comparison tables when some agent has one seed per
    task: their intervals redraw seeds within a task, so one seed gives them zero width."""
    single = sorted(t.agent for t in results.totals if t.aggregate_iqm.n and t.aggregate_iqm.n == len(t.tasks))
    if not single:
        return ""
    return (f"{', '.join(single)}: one seed per task, so the intervals below that redraw seeds have "
            "zero width (no seed-to-seed spread to redraw, not certainty); the per-harness table's "
            "intervals over episodes are the ones to read.")


POI_HEADER = ["A", "B", "information", "tasks", "P(A > B) [95% CI]"]


def poi_rows(results: Results) -> list[list[str]]:
    out = []
    for c in results.comparisons:
        p = c.probability_of_improvement
        info = "same" if c.same_information else f"differs: {c.a_observes} vs {c.b_observes}"
        out.append([c.a, c.b, info, str(len(c.tasks)), p.fmt() if p is not None else "n/a"])
    return out


PAIRED_HEADER = ["A", "B", "harness", "paired episodes", "A success", "B success",
                 "A - B [95% CI]", "only A / only B", "McNemar p", "information"]


def paired_rows(results: Results) -> list[list[str]]:
    out = []
    for c in results.comparisons:
        info = "same" if c.same_information else f"differs: {c.a_observes} vs {c.b_observes}"
        for p in c.paired:
            d = p.difference
            out.append([c.a, c.b, p.harness, str(p.pairs), f"{100 * p.a_success:.0f}%", f"{100 * p.b_success:.0f}%",
                        f"{100 * d.value:+.0f} [{100 * d.lo:+.0f}, {100 * d.hi:+.0f}] pp",
                        f"{p.a_only} / {p.b_only}", f"{p.p_value:.3g}", info])
    return out


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


BRIEF_HEADER = ["agent", "observes", "harness", "seeds", "success [95% CI]", "train env steps",
                "eval env steps", "LLM calls", "tokens", "failures"]


def brief_markdown(stored: dict[str, Any]) -> str:
    """The headline of a stored results.json, read as it was written (a file from before a
    field existed still renders; `observes` is shown where every row has it): one line on
    the episodes, the table of success and cost per agent and harness, the totals per agent,
    and the cells not run. What the README shows of a suite."""
    rows = stored["rows"]
    info = all("observes" in r for r in rows)
    header = [h for h in BRIEF_HEADER if info or h != "observes"]
    table = []
    for r in rows:
        seen = [observes(r["observes"], r.get("decides_from", r["observes"]))] if info else []
        table.append([r["agent"], *seen, r["harness"], str(r["seeds"]),
                      _success_cell(Estimate(**r["success"]), r.get("unrewarded_successes", 0)),
                      _steps(r["train_env_steps"]), _steps(r["eval_env_steps"]),
                      _calls(r["llm_calls"], r.get("llm_cached", 0)), str(r["tokens"]),
                      _failure_counts(r["failures"])])
    missing = stored.get("missing_cells") or []

    def not_run(agent: str) -> str:  # a total over fewer cells than the others' is marked
        n = sum(c.split("/", 1)[0] == agent for c in missing)
        return f" (over fewer tasks or seeds: {n} of its cells not run)" if n else ""

    totals = "; ".join(f"{t['agent']} {pct(Estimate(**t['success']))} for {_steps(t['train_env_steps'])} "
                       f"train env steps charged{not_run(t['agent'])}" for t in stored["totals"])
    parts = [f"{stored['episodes_per_cell']} evaluation episodes per agent x harness x seed"
             f"{_own_counts(stored)}; "
             f"results of {stored['created']}.", "", _md_table(header, table), "",
             f"Totals over all harnesses: {totals}."]
    parts += [f"\n**{line}**" for line in disagreements(rows)]
    for title, header, drows in _stored_domain_tables(stored):  # a world's own scores (Crafter's)
        parts += ["", f"{title} (95% CI over seeds x episodes):", "", _md_table(header, drows)]
    if missing:
        parts += ["", f"**Incomplete**: {len(missing)} cell(s) not run: {', '.join(missing[:20])}."]
    return "\n".join(parts)


def _stored_domain_tables(stored: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """`domain_tables` of a stored results.json (rows from before the field have none)."""
    if not any(r.get("domain_metrics") for r in stored["rows"]):
        return []
    return domain_tables(Results.model_validate(stored))


def _md_episode_links(results: Results) -> list[str]:
    lines = []
    for r in results.rows:
        links = " ".join(f"[seed {_seed_of(s)}]({episode_page(s)})" for s in r.cells)
        lines.append(f"- {r.agent} on {r.harness}: {links}")
    return lines


def _skills_lines(results: Results) -> list[str]:
    return [f"- `{ref}`: {', '.join(hs) or 'no record'}" for ref, hs in results.skills_trained_on.items()]


def _own_counts(results: Results | dict[str, Any]) -> str:
    """', 5 for smollm2-view': the agents that play their own number of episodes per cell."""
    own = results.get("episodes_by_agent", {}) if isinstance(results, dict) else results.episodes_by_agent
    return "".join(f", {n} for {a}" for a, n in own.items())


def _reuse(results: Results) -> str:
    """Which cells this report's run computed and which it took from an earlier run."""
    if not results.ran and not results.reused:
        return ""
    return (f" Cells: {len(results.ran)} run now, {len(results.reused)} reused from an earlier run "
            "(unchanged suite, agent inputs and harness files).")


def _only_some(results: Results) -> list[str]:
    """The agents limited to some harnesses (their `harnesses:`): '-' on the others, not planned."""
    if not results.agent_harnesses:
        return []
    rows = [[a] + [("played" if h in hs else "-") for h in results.harnesses]
            for a, hs in results.agent_harnesses.items()]
    return ["Agents that play some harnesses only (their `harnesses:`); '-': no cell planned there.", "",
            _md_table(["agent", *results.harnesses], rows), ""]


def markdown(results: Results, plots: list[str]) -> str:
    parts = [f"# Eval report: {results.suite}", ""]
    if results.description:
        parts += [results.description.strip(), ""]
    unknown = (" Success is \"unknown\" where the harness reports none and declares no success "
               "rule: compare returns there." if any(r.success.n == 0 for r in results.rows) else "")
    parts += [
        f"Seeds {results.seeds}, {results.episodes_per_cell} episodes per agent x harness x seed"
        f"{_own_counts(results)} (episode i of seed s starts from env seed {results.eval_seed} + 1000 s + i, the same for "
        f"every agent); generated {results.created}. {STATISTICS_NOTE}{unknown}{_reuse(results)}", "",
        INFORMATION_LEGEND, "",
        _md_table(TABLE_HEADER, table_rows(results)), "",
        *_only_some(results),
        *[f"**{line}**\n" for line in disagreements(results.rows)],
        "## Cost ledger per agent", "",
        "Training env steps split by what they paid for: the skills' pretraining, training on "
        "the suite's tasks, hyper-parameter tuning sweeps; each distinct run or skill counted once.", "",
        _md_table(TOTALS_HEADER, totals_rows(results)), "",
    ]
    for title, header, rows in domain_tables(results):
        parts += [f"## {title}", "", "The world's own scores (declared by its domain), with 95% intervals "
                  "over seeds x episodes.", "", _md_table(header, rows), ""]
    if agg := aggregate_rows(results):
        parts += ["## Aggregate across tasks", "",
                  "IQM of the per-seed success rates over every (seed, task), with a stratified "
                  "bootstrap interval (seeds redrawn within each task). Grouped by information: "
                  "compare agents within a group.", ""]
        if note := one_seed_note(results):
            parts += [f"**{note}**", ""]
        parts += [_md_table(AGGREGATE_HEADER, agg), ""]
    if results.comparisons:
        parts += ["## Comparisons", "",
                  "Probability of improvement: the chance that a random seed of A has a higher "
                  "success rate than a random seed of B on a task, averaged over the tasks both ran.", "",
                  _md_table(POI_HEADER, poi_rows(results)), "",
                  "Paired on the same episode seeds: the exact McNemar test on the episodes only "
                  "one of the two solved, and the success difference with its interval over seeds.", "",
                  _md_table(PAIRED_HEADER, paired_rows(results)), ""]
    if results.skills_trained_on:
        parts += ["## Where the skills were trained", "", *_skills_lines(results), ""]
    if results.missing_cells:
        parts += [f"**Incomplete**: {len(results.missing_cells)} cell(s) not run yet: "
                  + ", ".join(results.missing_cells[:20]), ""]
    for p in plots:
        parts += [f"![{p}]({p})", ""]
    parts += ["## Episodes", "", *_md_episode_links(results), ""]
    return "\n".join(parts)


def _plot_success(results: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agents, harnesses = results.agents, results.harnesses
    width = 0.8 / max(1, len(agents))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(harnesses) + 2), 4.0), dpi=100)
    rows = {(r.agent, r.harness): r for r in results.rows}
    info = {t.agent: t.observes for t in results.totals}
    for i, a in enumerate(agents):
        xs, ys, lo, hi = [], [], [], []
        for j, h in enumerate(harnesses):
            r = rows.get((a, h))
            if r is None or r.success.n == 0:  # unknown success: not a bar of height 0
                continue
            xs.append(j + (i - (len(agents) - 1) / 2) * width)
            ys.append(r.success.value)
            lo.append(r.success.value - r.success.lo)
            hi.append(r.success.hi - r.success.value)
        ax.bar(xs, ys, width=width * 0.95, yerr=[lo, hi], capsize=3, label=f"{a} [{info.get(a, '?')}]")
    ax.set_xticks(range(len(harnesses)), harnesses, rotation=15, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (95% CI over seeds)")
    ax.set_title(f"{results.suite}: success per agent and harness [observes]")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_curves(results: Results, path: Path) -> None:
    """Per harness: learning curves (band: 95% CI over seeds) and every other agent as a point
    at the training env steps charged to it, on one log-scaled cost axis (symlog: 0 stays)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hs = results.harnesses
    cols = min(3, len(hs))
    nrows = math.ceil(len(hs) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.4 * cols, 3.5 * nrows), dpi=100, squeeze=False)
    colors = {a: f"C{i % 10}" for i, a in enumerate(results.agents)}
    info = {t.agent: t.observes for t in results.totals}
    for k, h in enumerate(hs):
        ax = axes[k // cols][k % cols]
        for c in results.curves:
            if c.harness != h:
                continue
            ax.plot(c.env_steps, c.success, marker="o", ms=3, color=colors[c.agent],
                    label=f"{c.agent} [{info.get(c.agent, '?')}]")
            ax.fill_between(c.env_steps, c.lo, c.hi, color=colors[c.agent], alpha=0.2)
        curve_agents = {c.agent for c in results.curves if c.harness == h}
        for r in results.rows:
            if r.harness != h or r.agent in curve_agents or r.success.n == 0:
                continue
            s = r.success
            ax.errorbar([r.train_env_steps], [s.value], yerr=[[s.value - s.lo], [s.hi - s.value]],
                        fmt="s", capsize=4, color=colors[r.agent], label=f"{r.agent} [{r.observes}]")
        ax.set_xscale("symlog", linthresh=1000, linscale=0.3)
        ax.set_xlim(left=0)
        ax.set_title(h, fontsize=10)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("training env steps charged (log scale)", fontsize=8)
        ax.set_ylabel("success rate")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for k in range(len(hs), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _html_table(header: list[str], rows: list[list[str]], raw_last: bool = False) -> str:
    """A table; with `raw_last` the last column is HTML already (links)."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in header)

    def cells(r: list[str]) -> str:
        body = [html.escape(c) for c in (r[:-1] if raw_last else r)]
        return "".join(f"<td>{c}</td>" for c in body + ([r[-1]] if raw_last else []))

    trs = "".join(f"<tr>{cells(r)}</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _html_md(text: str) -> str:
    """The legend's `code` and **bold** as HTML (nothing else of markdown is used)."""
    import re

    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f2f2f2}
img{max-width:100%;border:1px solid #eee;margin:1em 0}pre{background:#f7f7f7;padding:6px;overflow-x:auto}
.note{color:#555;font-size:13px;max-width:70em}"""


def html_report(results: Results, plots: dict[str, bytes]) -> str:
    imgs = "".join(
        f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(data).decode()}"><figcaption>{html.escape(name)}</figcaption></figure>'
        for name, data in plots.items()
    )
    missing = ""
    if results.missing_cells:
        missing = f"<p><b>Incomplete:</b> {len(results.missing_cells)} cell(s) not run yet.</p>"
    links = {(r.agent, r.harness): " ".join(f'<a href="{html.escape(episode_page(s))}">{html.escape(_seed_of(s))}</a>'
                                             for s in r.cells) for r in results.rows}
    main = [row + [links[(r.agent, r.harness)]] for row, r in zip(table_rows(results), results.rows, strict=True)]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Eval report: {html.escape(results.suite)}</title><style>{CSS}</style></head><body>",
        f"<h1>Eval report: {html.escape(results.suite)}</h1><p>{html.escape(results.description)}</p>",
        f"<p>Seeds {results.seeds}, {results.episodes_per_cell} episodes per cell"
        f"{html.escape(_own_counts(results))} (episode i of seed s "
        f"starts from env seed {results.eval_seed} + 1000 s + i for every agent); generated "
        f"{html.escape(results.created)}.{html.escape(_reuse(results))}</p>"
        f"<p class='note'>{html.escape(STATISTICS_NOTE)}</p>",
        f"<p class='note'>{_html_md(INFORMATION_LEGEND)}</p>{missing}",
        _html_table([*TABLE_HEADER, "episodes (by seed)"], main, raw_last=True),
        *[f"<p style='color:#b00'><b>{html.escape(line)}</b></p>" for line in disagreements(results.rows)],
        "<h2>Cost ledger per agent</h2>", _html_table(TOTALS_HEADER, totals_rows(results)),
    ]
    for title, header, rows in domain_tables(results):
        parts += [f"<h2>{html.escape(title)}</h2>", _html_table(header, rows)]
    if agg := aggregate_rows(results):
        note = one_seed_note(results)
        parts += ["<h2>Aggregate across tasks</h2><p class='note'>IQM of per-seed success rates over "
                  "(seed, task), stratified bootstrap over seeds within tasks; grouped by information."
                  f"{' <b>' + html.escape(note) + '</b>' if note else ''}</p>",
                  _html_table(AGGREGATE_HEADER, agg)]
    if results.comparisons:
        parts += ["<h2>Probability of improvement</h2>", _html_table(POI_HEADER, poi_rows(results)),
                  "<details><summary><b>Paired comparisons on the same episode seeds</b> (exact McNemar, "
                  "difference with its interval over seeds)</summary>",
                  _html_table(PAIRED_HEADER, paired_rows(results)), "</details>"]
    if results.skills_trained_on:
        parts += ["<h2>Where the skills were trained</h2><ul>"
                  + "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(', '.join(v) or 'no record')}</li>"
                            for k, v in results.skills_trained_on.items()) + "</ul>"]
    parts += [f"<h2>Plots</h2>{imgs}</body></html>"]
    return "".join(parts)


def render_report(results: Results, out_dir: str | Path) -> dict[str, Path]:
    """Write results.json, report.md, the PNG plots, report.html and the episode pages of the
    cells found under `out_dir/cells/`; return their paths."""

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    _plot_success(results, out / SUCCESS_PLOT)
    paths["success_plot"] = out / SUCCESS_PLOT
    plot_names = [SUCCESS_PLOT]
    _plot_curves(results, out / CURVE_PLOT)
    paths["curve_plot"] = out / CURVE_PLOT
    plot_names.append(CURVE_PLOT)
    atomic_write(out / "results.json", json.dumps(results.model_dump(mode="json"), indent=1))
    paths["results"] = out / "results.json"
    atomic_write(out / "report.md", markdown(results, plot_names))
    paths["markdown"] = out / "report.md"
    pngs = {n: (out / n).read_bytes() for n in plot_names}
    atomic_write(out / "report.html", html_report(results, pngs))
    paths["html"] = out / "report.html"
    pages = write_episode_pages(results, out)
    if pages:
        paths["episodes"] = out / EPISODES_DIR
    return paths


def load_results(path: str | Path) -> Results:
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    return Results.model_validate_json(p.read_text())
