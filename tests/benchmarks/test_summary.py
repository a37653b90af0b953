"""benchmarks/summary.py: result files -> one table -> the README's Measured table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from bench_results import Figure, write_result  # noqa: E402
from summary import main, summary_rows  # noqa: E402

README = """# Project

## Measured (2-core machine)

| what | figure | command |
| --- | --- | --- |
| old row | 1 | `old` |

## Guides

text after
"""


def test_results_become_one_table_and_the_readme_table(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_result("fast_bench", "python benchmarks/fast_bench.py --load 1", [
        Figure("calls/s, 1 core | busy", 21000, "calls/s", 20000),
        Figure("acquire", 25.0, "ms", 20, "lower"),
        Figure("native", 3.5e6, "calls/s"),
    ], {"raw": [1, 2]}, results_dir=results)
    (results / "legacy.json").write_text(json.dumps({"steps": 5}))
    readme = tmp_path / "README.md"
    readme.write_text(README)

    assert main(["--results", str(results), "--readme", str(readme)]) == 0

    md = (results / "summary.md").read_text()
    rows = summary_rows(md)
    assert [r[1:5] for r in rows] == [
        ["calls/s, 1 core \\| busy", "21,000 calls/s", ">= 20,000", "pass"],
        ["acquire", "25 ms", "<= 20", "FAIL"],
        ["native", "3,500,000 calls/s", "-", "-"],
    ]
    assert all(r[5] == "`python benchmarks/fast_bench.py --load 1`" for r in rows)
    assert "3 figures, 1 below their goal." in md
    assert "Not in the result convention yet (not summarised): legacy.json." in md

    text = readme.read_text()
    assert "old row" not in text
    assert "| acquire | 25 ms | <= 20 (FAIL) | `python benchmarks/fast_bench.py --load 1` |" in text
    assert text.startswith("# Project\n\n## Measured (2-core machine)\n\n| what | figure | goal | command |")
    assert text.endswith("\n## Guides\n\ntext after\n")
