"""The suites' tables of the README: each block between `<!-- results:SPEC -->` and
`<!-- /results:SPEC -->` is the headline of committed results (the table of
`polar.evals.report.brief_markdown`: success and cost per agent and harness, the totals per
agent). `python benchmarks/summary.py --readme README.md` rewrites them with the Measured
table; edit the prose around a block, never inside it.

SPEC is `SUITE` (evals/results/SUITE/results.json, every row), or `SUITE+SUITE...:PART` where PART
keeps the rows of one information class (the `observes` label, docs/evals.md):

- `own-view`: the arms that observe the harness's own observation (`view`, the agent's memory
  of it included) or nothing (`none`): the headline comparison (issue 41);
- `privileged`: the arms that read the whole grid or the simulator's state (`full`,
  `privileged`), kept below it in their own table and never ranked against it.

Several suites on the same episode seeds merge into one table: an agent is shown once, from the
first suite that has it (the `random` arm of two suites is one arm), and the arms that observe
nothing come last.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

BLOCK = re.compile(r"(<!-- results:(?P<spec>[\w.+:-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=spec) -->)", re.S)
PARTS = {
    "own-view": ({"view", "none"}, "Arms that observe only their own view (`view`, the agent's memory of it "
                 "included) or nothing (`none`)"),
    "privileged": ({"full", "privileged"}, "Arms that read the whole grid or the simulator's state (`full`, "
                   "`privileged`): not ranked against the own-view table"),
}


def _load(suite: str, suites_dir: Path) -> dict[str, Any]:
    return json.loads((suites_dir / suite / "results.json").read_text())


def merged(suites: list[str], part: str, suites_dir: Path) -> dict[str, Any]:
    """One stored results.json holding `part`'s rows of each suite, each agent from the first
    suite that has it."""
    if part not in PARTS:
        raise SystemExit(f"README block results:{'+'.join(suites)}:{part}: unknown part {part!r}; "
                         f"one of {sorted(PARTS)}")
    keep = PARTS[part][0]
    out: dict[str, Any] = {"rows": [], "totals": [], "episodes_by_agent": {}, "missing_cells": []}
    created, per_cell = [], set()
    for suite in suites:
        stored = _load(suite, suites_dir)
        if unlabelled := [r["agent"] for r in stored["rows"] if "observes" not in r]:
            raise SystemExit(f"README block results:{'+'.join(suites)}:{part}: {suite}'s rows of "
                             f"{sorted(set(unlabelled))} have no `observes` label; rerun the suite's report")
        shown = {r["agent"] for r in out["rows"]}
        new = {r["agent"] for r in stored["rows"] if r["observes"] in keep} - shown
        out["rows"] += [r for r in stored["rows"] if r["agent"] in new]
        out["totals"] += [t for t in stored["totals"] if t["agent"] in new]
        out["episodes_by_agent"] |= {a: n for a, n in stored.get("episodes_by_agent", {}).items() if a in new}
        out["missing_cells"] += [c for c in stored.get("missing_cells", []) if c.split("/", 1)[0] in new]
        if new:
            created.append(f"{stored['created']} ({suite})" if len(suites) > 1 else stored["created"])
            per_cell.add(stored["episodes_per_cell"])
    if len(per_cell) != 1:
        raise SystemExit(f"README block results:{'+'.join(suites)}:{part}: "
                         + ("no row" if not per_cell else f"episodes per cell differ: {sorted(per_cell)}"))
    none = {r["agent"] for r in out["rows"] if r["observes"] == "none"}  # the floor, last
    out["rows"].sort(key=lambda r: r["agent"] in none)
    out["totals"].sort(key=lambda t: t["agent"] in none)
    return out | {"created": ", ".join(created), "episodes_per_cell": per_cell.pop()}


def suite_block(spec: str, suites_dir: Path) -> str:
    from polar.evals.report import brief_markdown

    names, _, part = spec.partition(":")
    if not part:
        return brief_markdown(_load(names, suites_dir))
    suites = names.split("+")
    what = f"{PARTS[part][1]}; suites {', '.join(suites)}." if part in PARTS else ""
    return f"{what}\n\n{brief_markdown(merged(suites, part, suites_dir))}"


def render_suites(text: str, suites_dir: Path) -> str:
    """`text` with every suite block regenerated."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{suite_block(m['spec'], suites_dir)}\n{m.group(4)}", text)
