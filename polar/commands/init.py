"""`polar init [DIR]`."""

from __future__ import annotations

from pathlib import Path

import typer


def init_cmd(directory: Path = typer.Argument(Path("."), help="The workspace folder (created if missing).")) -> None:
    """Lay out a workspace: harnesses/ skills/ planners/ prompts/ evals/ with one example each
    and a README. Run Polar from it: its assets are found first, then the shipped ones."""
    from polar.scaffold import init_workspace

    written = init_workspace(directory)
    root = directory.expanduser().resolve()
    for p in written:
        typer.echo(f"  {p.relative_to(root)}")
    typer.echo(f"workspace ready in {root} ({len(written)} files). Next:\n"
               f"  cd {directory}\n  polar harness describe corridor\n  cat README.md")


def register(app: typer.Typer) -> None:
    app.command("init")(init_cmd)
