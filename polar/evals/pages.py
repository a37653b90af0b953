"""The report's drill-down: one self-contained HTML page per cell (agent x harness x seed) under
`<out>/episodes/<agent>/<harness>/seed-<s>.html`, linked from report.html.

A page lists the cell's episodes (seed, success, return, steps, failure cause) and, per
episode, its decisions with their outcomes (skill, arguments, success, reason, steps), the LLM
calls of each decision (model, tokens, latency; prompt and reply where the record holds them)
and, for traced episodes, the step trace: a strip of frames readable without JavaScript and
a slider over every frame.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from polar.episode import EpisodeRecord
from polar.evals.cells import CellResult
from polar.evals.metrics import Results
from polar.evals.trace import TRACE_KEY, decode_frames
from polar.files import atomic_write

EPISODES_DIR = "episodes"  # under the report's folder
STRIP_FRAMES = 6  # frames shown side by side without JavaScript

_JS = """for (const el of document.querySelectorAll('.trace')) {
  const data = JSON.parse(document.getElementById(el.dataset.src).textContent);
  const rows = [data.frames[0].slice()]; let cur = data.frames[0].slice();
  for (const d of data.frames.slice(1)) {
    if (d.n !== undefined) { cur = cur.slice(0, d.n); while (cur.length < d.n) cur.push(''); }
    else cur = cur.slice();
    for (const k in d) if (k !== 'n') cur[+k] = d[k];
    rows.push(cur);
  }
  const slider = el.querySelector('input'), pre = el.querySelector('pre'), label = el.querySelector('span');
  slider.max = rows.length - 1;
  const show = () => { const t = +slider.value; pre.textContent = rows[t].join('\\n');
    const a = t ? data.actions[t - 1] : null;
    const name = a === null ? 'start' : (data.action_meanings && data.action_meanings[a] !== undefined ? data.action_meanings[a] : JSON.stringify(a));
    label.textContent = 'step ' + t + ' / ' + (rows.length - 1) + ': ' + name + (t ? ', reward ' + data.rewards[t - 1] : ''); };
  slider.addEventListener('input', show); show();
}"""

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.6em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f2f2f2}
pre{background:#f7f7f7;padding:6px;margin:2px;font-size:11px;line-height:1.1;overflow-x:auto}
.strip{display:flex;flex-wrap:wrap;gap:6px}.ok{color:#16792e}.bad{color:#b3261e}
section{border-top:2px solid #ddd;margin-top:1.5em}.note{color:#555;font-size:13px}"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _json(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=str)


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Cells are HTML already (escape them when building rows)."""
    th = "".join(f"<th>{_e(h)}</th>" for h in header)
    return f"<table><tr>{th}</tr>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
                                             for r in rows) + "</table>"


def _verdict(success: bool | None) -> str:
    if success is None:
        return "unknown"
    return "<span class='ok'>yes</span>" if success else "<span class='bad'>no</span>"


def _outcomes(d: Any) -> str:
    items = []
    for o in d.outcomes:
        what = o.skill or o.kind
        args = f"({_e(_json(o.args))})" if o.args else ""
        items.append(f"{_e(what)}{args}: {_verdict(o.success)} in {o.steps} steps, reward {o.reward:.3f}"
                     f" - {_e(o.reason)}")
    return "<br>".join(items) or "-"


def _llm_calls(d: Any) -> str:
    out = []
    for c in d.llm_calls:
        head = (f"{_e(c.model)}: {c.prompt_tokens}+{c.completion_tokens} tokens, {c.latency_s:.2f} s"
                + (" (cached)" if c.cached else ""))
        extra = c.model_extra or {}
        body = ""
        if extra.get("messages"):
            prompt = "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" for m in extra["messages"])
            body += f"<details><summary>prompt</summary><pre>{_e(prompt)}</pre></details>"
        if extra.get("reply") is not None:
            body += f"<details><summary>reply</summary><pre>{_e(extra['reply'])}</pre></details>"
        out.append(head + body)
    return "<br>".join(out) or "-"


def _decision(decision: dict[str, Any]) -> str:
    """A decision as JSON; policy code as its source, readable (the program a model wrote)."""
    if decision.get("kind") == "code" and isinstance(decision.get("source"), str):
        return f"policy code:<pre>{_e(decision['source'])}</pre>"
    return f"<pre>{_e(_json(decision))}</pre>"


def _decisions(ep: EpisodeRecord) -> str:
    if not ep.decisions:
        return "<p class='note'>A per-step policy: no decisions (see the step trace).</p>"
    rows = [[str(d.index), _decision(d.decision), _outcomes(d), str(d.env_steps),
             f"{d.planner_s:.3f}", _llm_calls(d)] for d in ep.decisions]
    return _table(["#", "decision", "outcomes", "env steps", "planner s", "LLM calls"], rows)


def _trace(ep: EpisodeRecord, anchor: str) -> str:
    tr = ep.extra.get(TRACE_KEY)
    if not isinstance(tr, dict) or not tr.get("frames"):
        return "<p class='note'>No step trace kept for this episode (the suite's <code>trace:</code> " \
               "sets how many episodes per cell keep one).</p>"
    frames = decode_frames(tr["frames"])
    picks = sorted({round(i * (len(frames) - 1) / max(1, STRIP_FRAMES - 1)) for i in range(STRIP_FRAMES)})
    strip = "".join(f"<div><div class='note'>step {i}</div><pre>{_e(frames[i])}</pre></div>" for i in picks)
    cut = (f" (first {len(frames) - 1} of {tr.get('steps')} steps kept)" if tr.get("cut") else "")
    data = json.dumps({k: tr.get(k) for k in ("frames", "actions", "rewards", "action_meanings")})
    data = data.replace("</", "<\\/")  # never closes the script element early
    return (f"<h3>Step trace{_e(cut)}</h3><div class='strip'>{strip}</div>"
            f"<div class='trace' data-src='{anchor}-trace'><input type='range' min='0' value='0' "
            f"style='width:40em'> <span></span><pre></pre></div>"
            f"<script type='application/json' id='{anchor}-trace'>{data}</script>")


def _prep(res: CellResult) -> str:
    p = res.prep
    charges = p.info.get("charges") or {}
    rows = [[_e(k), _e(v)] for k, v in charges.items()]
    parts = [f"<p>Training env steps charged to this cell: {p.train_env_steps}; preparation "
             f"{p.train_wall_s:.1f} s.</p>"]
    if rows:
        parts.append(_table(["charge", "env steps"], rows))
    if p.curve:
        parts.append(_table(["env steps", "successes", "episodes", "mean return"],
                            [[str(c.env_steps), _e(c.successes), str(c.episodes), f"{c.mean_return:.3f}"]
                             for c in p.curve]))
    return "".join(parts)


def cell_page(res: CellResult, observes: str, role: str, depth: int) -> str:
    up = "../" * depth
    eps = res.episodes
    summary = [[f"<a href='#ep-{i}'>{i}</a>", str(e.seed), _verdict(e.success), f"{e.episode_return:.3f}",
                str(e.env_steps), _e(e.failure_cause or "-"), str(len(e.decisions)),
                str(sum(len(d.llm_calls) for d in e.decisions)), "yes" if TRACE_KEY in e.extra else "-"]
               for i, e in enumerate(eps)]
    sections = []
    for i, e in enumerate(eps):
        detail = f" - {_e(e.failure_detail)}" if e.failure_detail else ""
        sections.append(
            f"<section id='ep-{i}'><h2>Episode {i}: env seed {e.seed}</h2>"
            f"<p>Task: {_e(e.task)}<br>Success: {_verdict(e.success)}, return {e.episode_return:.3f}, "
            f"{e.env_steps} env steps, {e.wall_s:.2f} s; cause: {_e(e.failure_cause or '-')}{detail}</p>"
            f"<h3>Decisions</h3>{_decisions(e)}{_trace(e, f'ep-{i}')}</section>")
    c = res.cell
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{_e(c.agent)} on {_e(c.harness)}, seed {c.seed}</title><style>{_CSS}</style></head><body>"
        f"<p><a href='{up}report.html'>back to the report</a></p>"
        f"<h1>{_e(c.agent)} on {_e(c.harness)}, seed {c.seed}</h1>"
        f"<p>Agent kind {_e(res.agent_kind)}; observes {_e(observes)}; {_e(role)}. Harness {_e(res.harness_id)}. "
        f"Cell key {_e(res.key)}, finished {_e(res.finished_at)}, {res.wall_s:.1f} s.</p>"
        f"<h2>Preparation</h2>{_prep(res)}<h2>Episodes</h2>"
        + _table(["#", "env seed", "success", "return", "env steps", "cause", "decisions", "LLM calls", "trace"],
                 summary)
        + "".join(sections) + f"<script>{_JS}</script></body></html>"
    )


def write_episode_pages(results: Results, out: Path) -> list[Path]:
    """A page for every cell of the results whose file is under `out/cells/`; pages of cells
    no longer in the results (an agent or harness removed from the suite) are deleted, so the
    report never links to, nor ships, a stale run."""
    written: list[Path] = []
    for r in results.rows:
        for slug in r.cells:
            src = out / "cells" / f"{slug}.json"
            if not src.is_file():
                continue
            res = CellResult.model_validate_json(src.read_text())
            dest = out / EPISODES_DIR / f"{slug}.html"
            depth = slug.count("/") + 1
            label = r.observes if r.decides_from == r.observes else f"{r.observes} (decides from {r.decides_from})"
            atomic_write(dest, cell_page(res, label, r.role, depth))
            written.append(dest)
    _prune(out / EPISODES_DIR, set(written))
    return written


def _prune(root: Path, keep: set[Path]) -> None:
    """Delete the pages under `root` that are not in `keep`, then the folders left empty."""
    if not root.is_dir():
        return
    for page in root.rglob("*.html"):
        if page not in keep:
            page.unlink()
    for folder in sorted((d for d in root.rglob("*") if d.is_dir()), key=lambda d: len(d.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
