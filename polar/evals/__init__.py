"""Evals: suites of agents x harnesses x seeds, honest statistics and reports.

    from polar.evals import run_suite, render_report
    results = run_suite("evals/demo.yaml", "runs/demo", workers=0)
    paths = render_report(results, "runs/demo")   # results.json, report.md, PNGs, report.html
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["run_suite", "render_report", "compare", "load_suite"]

if TYPE_CHECKING:
    from polar.evals.report import render_report
    from polar.evals.runner import run_suite
    from polar.evals.suite import load_suite


def __getattr__(name: str) -> Any:
    # Lazy: `polar --help` imports the CLI, which must not pull matplotlib or torch.
    if name == "run_suite":
        from polar.evals.runner import run_suite

        return run_suite
    if name == "render_report":
        from polar.evals.report import render_report

        return render_report
    if name == "load_suite":
        from polar.evals.suite import load_suite

        return load_suite
    if name == "compare":
        from polar.evals.comparison import compare

        return compare
    raise AttributeError(name)
