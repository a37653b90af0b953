"""The suites' tables of the README: each block between `<!-- results:SUITE -->` and
`<!-- /results:SUITE -->` is the headline of evals/results/SUITE/results.json (the table of
`polar.evals.report.brief_markdown`: success and cost per agent and harness, the totals per
agent). `python benchmarks/summary.py --readme README.md` rewrites them with the Measured
table; edit the prose around a block, never inside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

BLOCK = re.compile(r"(<!-- results:(?P<suite>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=suite) -->)", re.S)


def suite_block(suite: str, suites_dir: Path) -> str:
    from polar.evals.report import brief_markdown

    return brief_markdown(json.loads((suites_dir / suite / "results.json").read_text()))


def render_suites(text: str, suites_dir: Path) -> str:
    """`text` with every suite block regenerated."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{suite_block(m['suite'], suites_dir)}\n{m.group(4)}", text)
