"""`compare`: run a suite, write its report, print the table. What `polar compare` and
`polar demo` call."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from polar.errors import ConfigError
from polar.evals.suite import Suite, load_suite

if TYPE_CHECKING:
    from rich.console import Console

    from polar.evals.metrics import Results


def default_out_dir(suite: Suite) -> Path:
    return Path("runs") / "evals" / suite.name


_SHORT = {"success [95% CI]": "success 95% CI", "train env steps": "train",
          "eval env steps": "eval", "LLM calls": "LLM", "success (all harnesses)": "success (all)",
          "train env steps charged": "train steps"}


def print_table(results: Results, console: Console | None = None) -> None:
    """The report's table on the terminal. On a narrow one, the return columns and the ledger
    columns that are zero for every agent (no LLM in the suite) are left out here; report.md
    and report.html always hold every column. Piped (not a terminal, no COLUMNS), every column
    prints at full width."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from polar.console import full_width
    from polar.console import print_table as print_table_at_width
    from polar.evals.report import TABLE_HEADER, TOTALS_HEADER, table_rows, totals_rows

    console = console or Console()
    wide = console.width >= 160 or full_width(console)  # piped: every column, at full width
    rows = table_rows(results)
    empty = {"0", "0.0000", "-"}
    keep = [i for i, h in enumerate(TABLE_HEADER)
            if wide or ("return" not in h and h != "ep. length" and not all(r[i] in empty for r in rows))]
    t = Table(title=f"{results.suite}: success (95% CI over seeds x episodes) and the cost ledger", box=box.SIMPLE_HEAD, pad_edge=False)
    for i in keep:
        h = TABLE_HEADER[i]
        if h == "failures":
            t.add_column(h, min_width=13, overflow="fold")
        else:
            t.add_column(h if wide else _SHORT.get(h, h), no_wrap=True)
    for row in rows:
        t.add_row(*[row[i] for i in keep])
    print_table_at_width(console, t)
    trows = totals_rows(results)
    tkeep = [i for i, h in enumerate(TOTALS_HEADER) if wide or not all(r[i] in empty for r in trows)]
    tt = Table(title="totals per agent", box=box.SIMPLE_HEAD, pad_edge=False)
    for i in tkeep:
        h = TOTALS_HEADER[i]
        tt.add_column(h if wide else _SHORT.get(h, h).replace(" charged", ""), no_wrap=True)
    for row in trows:
        tt.add_row(*[row[i] for i in tkeep])
    print_table_at_width(console, tt)
    from polar.evals.report import domain_tables

    for title, header, drows in domain_tables(results):  # a world's own scores (Crafter's)
        dt = Table(title=f"{title} (95% CI over seeds x episodes)", box=box.SIMPLE_HEAD, pad_edge=False)
        for h in header:
            dt.add_column(h, no_wrap=True)
        for row in drows:
            dt.add_row(*row)
        print_table_at_width(console, dt)


def compare(
    suite: Suite | str | Path,
    out_dir: str | Path | None = None,
    *,
    workers: int | None = None,
    progress: bool = True,
    console: Console | None = None,
    quiet: bool = False,
    fresh: bool = False,
    agents: list[str] | None = None,
) -> tuple[Results, dict[str, Path]]:
    """Run (or resume) a suite under `out_dir`, render its report, print the table and the
    report's path. Returns the results and the report file paths. `fresh`: reuse no cell.
    `agents`: run only these agents' missing cells; the report still shows every finished
    cell and lists the others as missing."""
    from rich.console import Console

    from polar.evals.report import disagreements, render_report
    from polar.evals.runner import run_suite

    s = load_suite(suite)
    out = Path(out_dir) if out_dir is not None else default_out_dir(s)
    only = None
    if agents is not None:
        unknown = [a for a in agents if a not in {x.name for x in s.agents}]
        if unknown or not agents:
            raise ConfigError(f"--agents: {', '.join(unknown) or 'nothing'} is not an agent of suite "
                              f"{s.name} (its agents: {', '.join(a.name for a in s.agents)})")
        if fresh:
            raise ConfigError("--agents with --fresh: --fresh deletes every agent's cells; run without --agents")
        only = lambda cell: cell.agent in agents  # noqa: E731
    results = run_suite(s, out, workers=workers, progress=progress and not quiet, fresh=fresh, only=only)
    paths = render_report(results, out)
    if not quiet:
        console = console or Console()
        print_table(results, console)
        for line in disagreements(results.rows):
            console.print(f"[bold red]{line}[/]")
        console.print(f"ran {len(results.ran)} cell(s), reused {len(results.reused)} from {out}"
                      + ("" if fresh or not results.reused else " (--fresh runs them all again)"))
        console.print(f"report: {paths['html']}  (tables: {paths['markdown']})")
    return results, paths
