"""`polar harness list|describe|check`."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

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
    console.print(table)
    if not all_:
        console.print("Any Gymnasium id works as gym:<EnvId>, any MiniGrid/BabyAI id as "
                      "minigrid:<EnvId>; --all lists them.")


@harness_app.command("describe")
def describe_cmd(
    harness_id: str = typer.Argument(..., help="gym:<EnvId>, minigrid:<EnvId>, a spec name or a YAML path."),
    seed: int = typer.Option(0, min=0, help="Seed of the reset whose observation is shown."),
    as_json: bool = typer.Option(False, "--json", help="Print the spec as JSON."),
) -> None:
    """Show the spec and the rendered first observation exactly as a planner sees them."""
    from polar.harnesses.registry import make_harness
    from polar.harnesses.rollout import judged_by

    with make_harness(harness_id) as h:
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
    seed: int = typer.Option(0, min=0, help="Seed of the random rollouts."),
    steps: int = typer.Option(500, min=1, help="Steps per random rollout."),
) -> None:
    """Run Gymnasium's env checker on the adapter and two seeded random rollouts that must match.

    Exit code 0 when everything passes, 1 otherwise.
    """
    from polar.harnesses.check import check_harness

    with console.status(f"checking {harness_id}"):
        report = check_harness(harness_id, seed=seed, steps=steps)
    for w in report.warnings:
        console.print(f"[yellow]warning[/]: {w}", highlight=False)
    for p in report.problems:
        console.print(f"[red]problem[/]: {p}", highlight=False)
    if report.returns:
        mean = sum(report.returns) / len(report.returns)
        console.print(f"random rollout: {report.steps} steps, {report.episodes} episodes, "
                      f"mean return {mean:.3f}", highlight=False)
    else:
        console.print(f"random rollout: no episode finished in {report.steps} steps "
                      "(raise --steps to see returns)", highlight=False)
    if report.passed:
        console.print(f"[green]PASS[/] {harness_id}")
    else:
        console.print(f"[red]FAIL[/] {harness_id}")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(harness_app, name="harness")
