"""`polar prompts list | show NAME | render NAME --context FILE.json | compare --suite S --variant N=T`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polar.errors import ConfigError

prompts_app = typer.Typer(help="Prompt templates: list, show, render, compare.", no_args_is_help=True)


@prompts_app.command("list")
def list_cmd() -> None:
    """Every template found (the workspace's copy of a name wins), with mode and version."""
    from rich.console import Console
    from rich.table import Table

    from polar.prompts.templates import list_templates

    table = Table("name", "mode", "version", "path", box=None)
    for t in list_templates():
        table.add_row(t.name, t.mode, t.version, str(t.path))
    Console().print(table)


@prompts_app.command("show")
def show_cmd(name: str = typer.Argument(..., help="Template name or path to a .j2 file.")) -> None:
    """Print a template's metadata and body."""
    from polar.prompts.templates import load_template

    t = load_template(name)
    typer.echo(f"name: {t.name}\nmode: {t.mode}\nversion: {t.version}\npath: {t.path}")
    typer.echo(f"inputs: {', '.join(t.inputs)}\ndescription: {t.description}\n---")
    typer.echo(t.body, nl=False)


@prompts_app.command("render")
def render_cmd(
    name: Annotated[str, typer.Argument(help="Template name or path to a .j2 file.")],
    context: Annotated[Path, typer.Option("--context", "-c", help="JSON file: the template's variables, or a planner context.")],
    mode: Annotated[str | None, typer.Option(help="Planner mode for a planner context (default: the template's).")] = None,
) -> None:
    """Render a template. A JSON file holding a planner context (task + spec + observation,
    e.g. prompts/examples/doorkey_context.json) is turned into variables as the LLM planner does."""
    from polar.config import read_mapping
    from polar.prompts.templates import load_template

    t = load_template(name)
    data = read_mapping(context, allow_empty=True)  # JSON (or YAML): an object of variables
    if {"task", "spec", "observation"} <= data.keys():
        from polar.config import validate
        from polar.planners.base import PlannerContext
        from polar.planners.llm import template_variables

        ctx = validate(PlannerContext, data, str(context))
        if mode is not None and mode not in ("plan", "skill", "code", "auto"):
            raise ConfigError(f"--mode: expected plan, skill, code or auto, got {mode!r}")
        chosen = mode or (t.mode if t.mode in ("plan", "skill", "code", "auto") else "auto")
        data = template_variables(ctx, chosen)
    typer.echo(t.render(data), nl=False)


@prompts_app.command("compare")
def compare_cmd(
    suite: Annotated[str, typer.Option("--suite", help="Suite YAML path or name.")],
    variant: Annotated[list[str], typer.Option("--variant", help="NAME=TEMPLATE; repeat for each variant.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir (default: runs/evals/<suite>-prompts).")] = None,
    workers: Annotated[int | None, typer.Option(help="Ray workers (0: in-process) (default: the suite's).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Reuse no finished cell: run every variant again.")] = False,
) -> None:
    """Run a suite once per prompt template variant; report success, tokens, cost and latency side by side.

    A variant's cells finished earlier are reused while nothing they depend on changed (the
    template files' contents included); the table says how many were run and reused."""
    from polar.evals.prompts import compare_prompts, parse_variants

    compare_prompts(suite, parse_variants(variant), out, workers=workers, fresh=fresh)


def register(app: typer.Typer) -> None:
    app.add_typer(prompts_app, name="prompts")
