"""Reports: results.json, report.md (the tables), PNG plots and a self-contained report.html.

The HTML embeds its plots as base64 PNGs, so one file can be mailed or attached to an issue.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

from polar.evals.metrics import Results, Row
from polar.files import atomic_write
from polar.statistics import Estimate

SUCCESS_PLOT = "success_by_harness.png"
CURVE_PLOT = "success_vs_env_steps.png"


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


def _calls(n: int, cached: int) -> str:
    return f"{n} ({cached} cached)" if cached else str(n)


def _failures(row: Row) -> str:
    return ", ".join(f"{k} {v}" for k, v in row.failures.items()) or "-"


TABLE_HEADER = [
    "agent", "harness", "success [95% CI]", "mean return [95% CI]", "IQM return [95% CI]",
    "ep. length", "train env steps", "eval env steps", "LLM calls", "tokens", "$", "wall s",
    "failures",
]


def table_rows(results: Results) -> list[list[str]]:
    out = []
    for r in results.rows:
        out.append([
            r.agent, r.harness, pct(r.success), r.mean_return.fmt(), r.iqm_return.fmt(),
            f"{r.mean_length:.1f}", _steps(r.train_env_steps), _steps(r.eval_env_steps),
            _calls(r.llm_calls, r.llm_cached), str(r.tokens), f"{r.cost_usd:.4f}", f"{r.wall_s:.1f}", _failures(r),
        ])
    return out


def totals_rows(results: Results) -> list[list[str]]:
    return [[t.agent, t.agent_kind, pct(t.success), _steps(t.train_env_steps), _steps(t.eval_env_steps),
             _calls(t.llm_calls, t.llm_cached), str(t.tokens), f"{t.cost_usd:.4f}", f"{t.wall_s:.1f}"]
            for t in results.totals]


TOTALS_HEADER = ["agent", "kind", "success (all harnesses)", "train env steps charged",
                 "eval env steps", "LLM calls", "tokens", "$", "wall s"]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _reuse(results: Results) -> str:
    """Which cells this report's run computed and which it took from an earlier run."""
    if not results.ran and not results.reused:
        return ""
    return (f" Cells: {len(results.ran)} run now, {len(results.reused)} reused from an earlier run "
            "(unchanged suite, agent inputs and harness files).")


def markdown(results: Results, plots: list[str]) -> str:
    parts = [f"# Eval report: {results.suite}", ""]
    if results.description:
        parts += [results.description.strip(), ""]
    unknown = (" Success is \"unknown\" where the harness reports none and declares no success "
               "rule: compare returns there." if any(r.success.n == 0 for r in results.rows) else "")
    parts += [
        f"Seeds {results.seeds}, {results.episodes_per_cell} episodes per agent x harness x seed; "
        f"generated {results.created}. Success intervals are Wilson 95%; return intervals are "
        "95% percentile bootstrap over episodes. Train env steps count each distinct training "
        f"run or pretrained skill once.{unknown}{_reuse(results)}", "",
        _md_table(TABLE_HEADER, table_rows(results)), "",
        "## Totals per agent", "", _md_table(TOTALS_HEADER, totals_rows(results)), "",
    ]
    if results.missing_cells:
        parts += [f"**Incomplete**: {len(results.missing_cells)} cell(s) not run yet: "
                  + ", ".join(results.missing_cells[:20]), ""]
    for p in plots:
        parts += [f"![{p}]({p})", ""]
    return "\n".join(parts)


def _plot_success(results: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agents, harnesses = results.agents, results.harnesses
    width = 0.8 / max(1, len(agents))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(harnesses) + 2), 4.0), dpi=100)
    rows = {(r.agent, r.harness): r for r in results.rows}
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
        ax.bar(xs, ys, width=width * 0.95, yerr=[lo, hi], capsize=3, label=a)
    ax.set_xticks(range(len(harnesses)), harnesses, rotation=15, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (Wilson 95% CI)")
    ax.set_title(f"{results.suite}: success per agent and harness")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_curves(results: Results, path: Path) -> None:
    """Per harness: pure-RL learning curves (band = Wilson 95%) and every other agent as a point
    at the training env steps charged to it, so both sides sit on the same cost axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hs = results.harnesses
    cols = min(3, len(hs))
    nrows = math.ceil(len(hs) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), dpi=100, squeeze=False)
    colors = {a: f"C{i}" for i, a in enumerate(results.agents)}
    for k, h in enumerate(hs):
        ax = axes[k // cols][k % cols]
        for c in results.curves:
            if c.harness != h:
                continue
            ax.plot(c.env_steps, c.success, marker="o", ms=3, color=colors[c.agent], label=c.agent)
            ax.fill_between(c.env_steps, c.lo, c.hi, color=colors[c.agent], alpha=0.2)
        curve_agents = {c.agent for c in results.curves if c.harness == h}
        for r in results.rows:
            if r.harness != h or r.agent in curve_agents or r.success.n == 0:
                continue
            s = r.success
            ax.errorbar([r.train_env_steps], [s.value], yerr=[[s.value - s.lo], [s.hi - s.value]],
                        fmt="s", capsize=4, color=colors[r.agent], label=r.agent)
        xmax = max([x for c in results.curves if c.harness == h for x in c.env_steps]
                   + [r.train_env_steps for r in results.rows
                      if r.harness == h and r.agent not in curve_agents] + [0])
        xmax = xmax or 1  # only untrained agents: keep a sane axis
        ax.set_xlim(-0.03 * xmax, 1.05 * xmax)
        ax.set_title(h, fontsize=10)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("training env steps (per RL run; skills' pretraining)", fontsize=8)
        ax.set_ylabel("success rate")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for k in range(len(hs), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f2f2f2}
img{max-width:100%;border:1px solid #eee;margin:1em 0}"""


def html_report(results: Results, plots: dict[str, bytes]) -> str:
    imgs = "".join(
        f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(data).decode()}"><figcaption>{html.escape(name)}</figcaption></figure>'
        for name, data in plots.items()
    )
    missing = ""
    if results.missing_cells:
        missing = f"<p><b>Incomplete:</b> {len(results.missing_cells)} cell(s) not run yet.</p>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Eval report: {html.escape(results.suite)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Eval report: {html.escape(results.suite)}</h1>"
        f"<p>{html.escape(results.description)}</p>"
        f"<p>Seeds {results.seeds}, {results.episodes_per_cell} episodes per cell; generated "
        f"{html.escape(results.created)}. Success: Wilson 95% CI. Returns: 95% percentile bootstrap."
        f"{html.escape(_reuse(results))}</p>"
        f"{missing}{_html_table(TABLE_HEADER, table_rows(results))}"
        f"<h2>Totals per agent</h2>{_html_table(TOTALS_HEADER, totals_rows(results))}"
        f"<h2>Plots</h2>{imgs}</body></html>"
    )


def render_report(results: Results, out_dir: str | Path) -> dict[str, Path]:
    """Write results.json, report.md, the PNG plots and report.html; return their paths."""
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
    return paths


def load_results(path: str | Path) -> Results:
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    return Results.model_validate_json(p.read_text())
