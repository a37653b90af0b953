"""`polar prompts list | show NAME | render NAME --harness ID --seed N | compare --suite S --variant N=T`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from polar.errors import ConfigError

prompts_app = typer.Typer(help="Prompt templates: list, show, render, compare.", no_args_is_help=True)


@prompts_app.command("list")
def list_cmd() -> None:
    """Every template found (the workspace's copy of a name wins), with mode and version."""
    from rich.console import Console
    from rich.table import Table

    from polar.console import print_table
    from polar.prompts.templates import list_templates

    table = Table("name", "mode", "version", "path", box=None)
    for t in list_templates():
        table.add_row(t.name, t.mode, t.version, str(t.path))
    print_table(Console(), table)


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
    harness: Annotated[str | None, typer.Option("--harness", "-H", help="Render the real prompt of a live episode on "
                                                "this harness (reset with --seed), with your skill library.")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the live episode's reset.")] = 0,
    task: Annotated[str | None, typer.Option("--task", help="The task (default: the harness's mission).")] = None,
    planner: Annotated[str | None, typer.Option("--planner", "-p", help="An LLM profile whose mode, observation mode "
                                                "and history window to render with.")] = None,
    skills: Annotated[Path | None, typer.Option("--skills", help="Skill library folder (default: the workspace's "
                                                "skills/ over the shipped library).")] = None,
    observation: Annotated[str | None, typer.Option("--observation", help="full, predicates or view (default: the "
                                                    "profile's, else full).")] = None,
    context: Annotated[Path | None, typer.Option("--context", "-c", help="Instead of a live episode: a JSON file of "
                                                 "the template's variables, or a saved planner context.")] = None,
    mode: Annotated[str | None, typer.Option(help="Planner mode (default: the profile's, else the template's).")] = None,
) -> None:
    """Render a template: on a live episode (`--harness ID --seed N`: reset, the symbolic state,
    the skills your library offers for the task, exactly as the LLM planner renders its first
    decision), or on a JSON file (`--context`, e.g. prompts/examples/doorkey_context.json)."""
    from polar.prompts.templates import load_template

    if (harness is None) == (context is None):
        raise ConfigError("give exactly one of --harness ID (a live episode) or --context FILE.json")
    t = load_template(name)  # a broken template fails before the harness starts
    settings = _render_settings(planner, mode, observation)
    if harness is not None:
        from polar.evals.prompts import live_prompt_context, render_prompt

        ctx = live_prompt_context(harness, seed, task=task, skills=skills)
        typer.echo(render_prompt(name, ctx, **settings), nl=False)
        return
    from polar.config import read_mapping

    assert context is not None
    data = read_mapping(context, allow_empty=True)  # JSON (or YAML): an object of variables
    if {"task", "spec", "observation"} <= data.keys():  # a planner context: variables as the planner makes them
        from polar.config import validate
        from polar.evals.prompts import render_prompt
        from polar.planners.base import PlannerContext

        typer.echo(render_prompt(name, validate(PlannerContext, data, str(context)), **settings), nl=False)
        return
    typer.echo(t.render(data), nl=False)


def _render_settings(planner: str | None, mode: str | None, observation: str | None) -> dict[str, Any]:
    """The mode, observation mode and history window to render with: the LLM profile's, then
    the options given."""
    settings: dict[str, Any] = {}
    if planner is not None:
        from polar.planners.profile import LLMProfile, load_planner_profile

        profile = load_planner_profile(planner)
        if not isinstance(profile, LLMProfile):
            raise ConfigError(f"--planner {planner}: a {profile.backend} planner renders no prompt")
        settings = {"mode": profile.mode, "observation": profile.observation, "history_window": profile.history_window}
    if mode is not None:
        settings["mode"] = mode
    if observation is not None:
        if observation not in ("full", "predicates", "view"):
            raise ConfigError(f"--observation: expected full, predicates or view, got {observation!r}")
        settings["observation"] = observation
    return settings


@prompts_app.command("compare")
def compare_cmd(
    suite: Annotated[str, typer.Option("--suite", help="Suite YAML path or name.")],
    variant: Annotated[list[str], typer.Option("--variant", help="NAME=TEMPLATE; repeat for each variant.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir (default: runs/evals/<suite>-prompts).")] = None,
    workers: Annotated[int | None, typer.Option(help="Ray workers (0: in-process) (default: the suite's).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Reuse no finished cell: run every variant again.")] = False,
) -> None:
    """Run a suite once per prompt template variant and show what changed: per variant success,
    tokens, cost, latency and failures; per case what each variant did; a diff of the prompts
    they render. A broken template is flagged on its variant; the others still run.

    A variant's cells finished earlier are reused while nothing they depend on changed (the
    template files' contents included); each variant says how many were run and reused."""
    from polar.evals.prompts import compare_prompts, parse_variants

    compare_prompts(suite, parse_variants(variant), out, workers=workers, fresh=fresh)


def register(app: typer.Typer) -> None:
    app.add_typer(prompts_app, name="prompts")
