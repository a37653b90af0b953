"""`polar compare` and `polar eval` (`polar prompts compare` lives with the prompt commands).

Heavy imports (torch, ray, matplotlib) happen inside the commands so `polar --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from polar.errors import ConfigError
from polar.sandboxes import SANDBOX_HELP


def compare_cmd(
    suite: Annotated[str, typer.Argument(help="Suite YAML path, or a name under evals/ (e.g. demo).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir (default: runs/evals/<suite name>).")] = None,
    workers: Annotated[int | None, typer.Option(help="Ray workers (0: in-process) (default: the suite's).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Ignore finished cells in --out and run all.")] = False,
) -> None:
    """Run an eval suite (resuming finished cells) and write results.json, report.md, plots, report.html."""
    from polar.evals.comparison import compare, default_out_dir
    from polar.evals.preflight import check_suite
    from polar.evals.suite import load_suite

    s = load_suite(suite)
    out_dir = out or default_out_dir(s)
    if fresh:
        check_suite(s)  # a bad suite must not cost the finished cells
        _clear_cells(out_dir)
    compare(s, out_dir, workers=workers)


def _clear_cells(out_dir: Path) -> None:
    import shutil

    for sub in ("cells", "work"):
        if (out_dir / sub).is_dir():
            shutil.rmtree(out_dir / sub)


def eval_cmd(
    harness: Annotated[str, typer.Argument(help="Harness id, e.g. minigrid:MiniGrid-DoorKey-8x8-v0.")],
    agent: Annotated[str, typer.Option(help="random | planner | pure_rl")] = "random",
    planner: Annotated[str | None, typer.Option(help="Planner profile (agent=planner).")] = None,
    skills: Annotated[str | None, typer.Option(help="Skill library dir (agent=planner).")] = None,
    sandbox: Annotated[str, typer.Option(help=f"{SANDBOX_HELP} (agent=planner)")] = "default",
    checkpoint: Annotated[str | None, typer.Option(help="A `polar train` run dir (agent=pure_rl).")] = None,
    train_steps: Annotated[int | None, typer.Option(help="Train PPO for this many env steps (agent=pure_rl).")] = None,
    algo: Annotated[str, typer.Option(help="ppo | sac (agent=pure_rl).")] = "ppo",
    recipe: Annotated[str | None, typer.Option(help="Training recipe: skills/recipes/<name>.yaml or a path (agent=pure_rl).")] = None,
    episodes: Annotated[int, typer.Option(min=1)] = 10,
    seed: Annotated[int, typer.Option(min=0)] = 0,
    max_steps: Annotated[int | None, typer.Option(help="Per-episode step cap.")] = None,
    task: Annotated[str | None, typer.Option(help="Task in words (default: the harness's mission).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir (default: runs/evals/eval-<agent>).")] = None,
) -> None:
    """Run one agent on one harness and report success with its interval and the cost ledger."""
    from polar.evals.comparison import compare
    from polar.evals.suite import load_suite

    spec: dict[str, Any] = {"name": agent, "kind": agent}
    if agent == "planner":
        if planner is None:
            raise ConfigError("--planner: agent=planner needs a planner profile (e.g. --planner symbolic)")
        spec |= {"planner": planner, "skills": skills, "sandbox": sandbox}
    elif agent == "pure_rl":
        spec |= {"algo": algo, "checkpoint": checkpoint, "train_steps": train_steps, "recipe": recipe}
    elif agent != "random":
        raise ConfigError(f"--agent: {agent!r} is not one of random, planner, pure_rl")
    h: dict[str, Any] = {"id": harness, "task": task, "max_steps": max_steps}
    suite = load_suite({"name": f"eval-{agent}", "agents": [spec], "harnesses": [h], "seeds": [seed],
                        "episodes": episodes})
    compare(suite, out or Path("runs") / "evals" / f"eval-{agent}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
    app.command("eval")(eval_cmd)
