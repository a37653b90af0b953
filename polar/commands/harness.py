"""`polar harness list|describe|check`."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from polar.commands.kwargs import KWARG_HELP, parse_kwargs
from polar.console import print_table

console = Console()
harness_app = typer.Typer(help="Inspect and check harnesses (environments Polar can run).",
                          no_args_is_help=True)


@harness_app.command("list")
def list_cmd(
    all_: bool = typer.Option(False, "--all", help="Also list every registered gym:/minigrid: id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List harness specs under harnesses/ (and, with --all, every Gymnasium/MiniGrid id)."""
    from polar.harnesses.registry import list_harnesses

    entries = list_harnesses(include_registered=all_)
    if as_json:
        print(json.dumps([e.__dict__ for e in entries], indent=1))
        return
    table = Table("id", "kind", "source")
    for e in entries:
        table.add_row(e.id, e.kind, e.source)
    print_table(console, table)
    if not all_:
        console.print("Any Gymnasium id works as gym:<EnvId>, any MiniGrid/BabyAI id as "
                      "minigrid:<EnvId>; --all lists them.")


@harness_app.command("describe")
def describe_cmd(
    harness_id: str = typer.Argument(..., help="gym:<EnvId>, minigrid:<EnvId>, a spec name or a YAML path."),
    seed: int = typer.Option(0, min=0, help="Seed of the reset whose observation is shown."),
    as_json: bool = typer.Option(False, "--json", help="Print the spec as JSON."),
    harness_kwarg: list[str] = typer.Option(None, "--harness-kwarg", help=KWARG_HELP),
) -> None:
    """Show the spec and the rendered first observation exactly as a planner sees them."""
    from polar.harnesses.registry import make_harness
    from polar.harnesses.rollout import judged_by

    with make_harness(harness_id, **parse_kwargs(harness_kwarg, "--harness-kwarg")) as h:
        obs, _ = h.reset(seed=seed)
        state = h.symbolic_state()
        if as_json:
            out = {"spec": h.spec.model_dump(mode="json", exclude_none=True),
                   "observation": h.render_text(obs),
                   "symbolic": state.model_dump(mode="json") if state else None,
                   "success_judged_by": judged_by(h.spec, bool(state and state.goal))}
            print(json.dumps(out, indent=1))
            return
        console.print(h.spec.describe(), highlight=False, markup=False)
        console.rule("observation (as the planner sees it)")
        console.print(h.render_text(obs), highlight=False, markup=False)
        if state is not None:
            console.rule("symbolic state")
            console.print("holds: " + (", ".join(state.predicates) or "nothing"), markup=False)
            console.print("goal:  " + (", ".join(state.goal) or "(none parsed)"), markup=False)
        console.print("success judged by: " + judged_by(h.spec, bool(state and state.goal)), markup=False)


@harness_app.command("check")
def check_cmd(
    harness_id: str = typer.Argument(..., help="The harness to check."),
    seed: int = typer.Option(0, min=0, help="Reset seed of the first random episode (then seed+1, ...)."),
    episodes: int = typer.Option(3, min=1, help="Whole random episodes to play."),
    steps: int | None = typer.Option(None, min=1, help="Step cap of each random rollout (default: the "
                                                        "episodes at the spec's step limit; 1000 where it has none)."),
    harness_kwarg: list[str] = typer.Option(None, "--harness-kwarg", help=KWARG_HELP),
) -> None:
    """Run Gymnasium's env checker on the adapter, then random episodes on seeds seed, seed+1, ...
    played twice: both runs must match step for step.

    Exit code 0 when everything passes, 1 otherwise.
    """
    from polar.harnesses.check import check_harness, check_summary

    kwargs = parse_kwargs(harness_kwarg, "--harness-kwarg")
    with console.status(f"checking {harness_id}"):
        report = check_harness(harness_id, seed=seed, steps=steps, episodes=episodes, kwargs=kwargs)
    for w in report.warnings:
        console.print(f"[yellow]warning[/]: {w}", highlight=False, soft_wrap=True)
    for p in report.problems:
        console.print(f"[red]problem[/]: {p}", highlight=False, soft_wrap=True)
    for line in check_summary(report):
        console.print(line, highlight=False, markup=False, soft_wrap=True)  # one line each, for grep
    if report.passed:
        console.print(f"[green]PASS[/] {harness_id}")
    else:
        console.print(f"[red]FAIL[/] {harness_id}")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(harness_app, name="harness")
