"""`polar task` (one episode with a live trace) and `polar demo` (the short comparison)."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from polar.commands.kwargs import KWARG_HELP
from polar.planners.decisions import describe_decision
from polar.sandboxes import SANDBOX_HELP

if TYPE_CHECKING:
    from polar.agent.events import AgentEvent

console = Console()


def _trace(event: AgentEvent) -> None:
    from polar.agent.events import DecisionMade, EpisodeStarted, ExecutionFinished

    if isinstance(event, EpisodeStarted):
        console.print(f"[bold]task[/]: {event.task}  [dim]harness {event.harness}, "
                      f"seed {event.seed}, episode {event.episode_id}[/]")
    elif isinstance(event, DecisionMade):
        d = event.decision
        why = f"  [dim]# {escape(d.reason)}[/]" if d.reason else ""
        console.print(f"[cyan]decide #{event.index}[/] {escape(describe_decision(d))}{why}",
                      highlight=False, soft_wrap=True)
    elif isinstance(event, ExecutionFinished):
        o = event.outcome
        mark = "[green]ok[/]" if o.success else f"[red]failed[/] [dim]({o.cause})[/]"
        console.print(f"   {mark} {event.call}: {escape(o.reason)} "
                      f"[dim]({o.steps} steps, return {o.reward:.3f})[/]", highlight=False, soft_wrap=True)


def _calls(record: Any) -> str:
    """The episode's model calls as a call budget counts them (replies from the replay cache
    included), with how many of them were replayed and how many failed."""
    calls = [c for d in record.decisions for c in d.llm_calls]
    cached = sum(c.cached for c in calls)
    failed = sum(bool(getattr(c, "error", None)) for c in calls)
    parts = [f"{cached} from the replay cache"] if cached else []
    parts += [f"{failed} failed"] if failed else []
    return f"{len(calls)} LLM calls" + (f" ({', '.join(parts)})" if parts else "")


def task(
    text: str = typer.Argument(..., help="The task in natural language."),
    harness: str = typer.Option(..., "--harness", "-H", help="Harness id (see `polar harness list`)."),
    harness_kwarg: list[str] = typer.Option(None, "--harness-kwarg", help=KWARG_HELP),
    planner: str = typer.Option(
        None, "--planner", "-p",
        help="Planner profile (path or name under planners/). Default: $POLAR_PLANNER, else 'symbolic' when "
             "it parses the whole task or the task restates the harness's goal, else 'polar-planner' (Polar's "
             "trained planner), else 'local' (the base model) where the trained one cannot run."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the episode's reset."),
    out: Path = typer.Option(None, "--out", help="Folder for episode.json (default runs/task-<time>)."),
    skills: Path = typer.Option(None, "--skills", help="Skill library folder (default: the workspace's skills/ over the shipped library)."),
    max_decisions: int = typer.Option(50, help="Decision budget of the episode."),
    max_steps: int = typer.Option(None, help="Env-step cap (default: the harness's own limit)."),
    sandbox: str = typer.Option("default", "--sandbox", help=SANDBOX_HELP),
    record_context: bool = typer.Option(
        False, "--record-context",
        help="Keep each decision's planner context in the record (training data for `polar llm dataset`)."),
) -> None:
    """Run one episode: the planner decides, skills and sandboxed code act, outcomes feed back.

    Prints each decision and outcome live, writes the episode record, and exits 0 on success,
    1 when the task was not solved (or success cannot be told on this harness), 3 when the
    model could not be reached (llm-error).
    """
    from polar.agent import Agent, AgentSettings, EpisodeStarted
    from polar.commands.kwargs import parse_kwargs
    from polar.episode import FailureCause
    from polar.errors import LLMError
    from polar.harnesses.registry import make_harness
    from polar.planners.profile import load_planner
    from polar.planners.symbolic import SymbolicPlanner, task_warning
    from polar.sandboxes.profiles import resolve_sandbox
    from polar.skills.search_path import open_library

    sandbox_profile = resolve_sandbox(sandbox)  # resolved once, here; None: no policy code
    profile = planner or os.environ.get("POLAR_PLANNER")

    def trace(event: AgentEvent) -> None:
        if isinstance(event, EpisodeStarted) and event.harness != harness:  # echo the id as typed
            event = replace(event, harness=f"{harness} (spec id {event.harness})")
        _trace(event)

    # The harness first: a bad id is an error before a model server is started for nothing.
    with make_harness(harness, **parse_kwargs(harness_kwarg, "--harness-kwarg")) as h:
        h.reset(seed=seed)  # the goal and mission the harness carries as the episode starts
        state = h.symbolic_state()
        if profile is None:
            from polar.planners.choose import default_planner

            profile, why = default_planner(text, h.spec, state)
            console.print(f"[bold]planner[/]: {profile} [dim]({escape(why)})[/]", highlight=False)
        p = load_planner(profile)
        if isinstance(p, SymbolicPlanner) and (warning := task_warning(text, state, h.spec)):
            console.print(f"[yellow]warning[/]: {escape(warning)}", highlight=False)
        agent = Agent(p, open_library(skills),
                      AgentSettings(max_decisions=max_decisions, max_env_steps=max_steps,
                                    sandbox=sandbox_profile, record_context=record_context),
                      on_event=trace)
        record = agent.run(text, h, seed=seed)
    out = out or Path("runs") / f"task-{time.strftime('%Y%m%d-%H%M%S')}"
    record.save(Path(out) / "episode.json")
    if record.success:
        status = "[green]success[/]"
    elif record.success is None:
        claim = " (the planner claims success)" if record.extra.get("success_source") == "planner-claim" else ""
        status = f"[yellow]success unknown[/]: this harness reports no success{claim}"
    else:
        status = f"[red]failure[/] ({record.failure_cause}: {escape(str(record.failure_detail))})"
    console.print(
        f"{status}: {record.env_steps} steps, return {record.episode_return:.3f}, "
        f"{len(record.decisions)} decisions, {_calls(record)}, "
        f"{record.prompt_tokens + record.completion_tokens} tokens, ${record.cost_usd:.4f}, "
        f"{record.wall_s:.1f} s", highlight=False)
    console.print(f"episode record: {Path(out) / 'episode.json'}")
    if record.failure_cause == FailureCause.LLM_ERROR:
        raise typer.Exit(LLMError.exit_code)
    if not record.success:
        raise typer.Exit(1)


def demo(
    out: Path = typer.Option(Path("runs/demo"), "--out", help="Folder of the results and report."),
    suite: str = typer.Option("demo", "--suite", help="Suite to run (name under evals/ or a path)."),
    workers: int = typer.Option(None, "--workers", help="Ray workers (default: the suite's)."),
    fresh: bool = typer.Option(False, "--fresh", help="Reuse no finished cell from --out: run everything again."),
) -> None:
    """The short planner-plus-skills vs pure-RL comparison on the embedded defaults.

    Runs `evals/demo.yaml` (the symbolic planner, Polar's trained planner and its untrained
    base model SmolLM2-135M, both served by llama.cpp on 127.0.0.1, over the shipped skills vs
    PPO vs random), prints the table and the report's path; a local engine the demo started is
    stopped at the end. With POLAR_PLANNER=planners/<llm>.yaml (and its API key) the
    planner agent uses that profile instead. Re-running resumes: finished cells are kept while
    nothing they depend on changed (see `polar compare --help`); --fresh runs them all again.
    """
    from polar.evals.comparison import compare
    from polar.evals.runner import agent_servers
    from polar.evals.suite import load_suite
    from polar.llm.serve import stop_on_exit

    s = load_suite(suite)
    if profile := os.environ.get("POLAR_PLANNER"):
        s = s.with_planner(profile)
        console.print(f"planner profile from POLAR_PLANNER: {profile}")
    servers = {(v.host, v.port): v for v in agent_servers(s).values()}.values()
    with stop_on_exit(servers):  # the embedded model's engine goes when the demo ends
        compare(s, out, workers=workers, fresh=fresh)


def register(app: typer.Typer) -> None:
    app.command("task")(task)
    app.command("demo")(demo)
