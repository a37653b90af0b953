"""`polar code dataset | eval | rl`: code mode, where a model writes act(obs) (docs/code-mode.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

code_app = typer.Typer(help="Code mode: tasks where a model writes act(obs); SFT data, evaluation, RL.",
                       no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(code_app, name="code")


def _seeds(text: str) -> list[int]:
    """'1000-1019' or '1,2,5' -> the seeds."""
    from polar.errors import ConfigError

    try:
        if "-" in text.strip("-"):
            lo, hi = text.split("-", 1)
            return list(range(int(lo), int(hi) + 1))
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"--seeds: expected 'LO-HI' or a comma-separated list of integers, got {text!r}") from None


def _tasks(text: str) -> list[str]:
    from polar.evals.code_tasks import TASKS, get_task

    return list(TASKS) if text == "all" else [get_task(t.strip()).name for t in text.split(",")]


@code_app.command("dataset")
def dataset(
    out: Path = typer.Option(..., help="The dataset folder to write (polar llm finetune --data)."),
    per_task: int = typer.Option(60, help="Train programs per task."),
    val_per_task: int = typer.Option(4, help="Validation programs per task."),
    seed: int = typer.Option(0, help="Seed of the drawn gains."),
    tasks: str = typer.Option("all", help="Comma-separated tasks, or all."),
) -> None:
    """Write SFT data: parametrised controller programs (gains varied) with each task's prompt."""
    from polar.evals.code_programs import build_dataset

    info = build_dataset(out, per_task=per_task, seed=seed, val_per_task=val_per_task, tasks=_tasks(tasks))
    typer.echo(json.dumps({"out": str(out), "counts": info.counts, "sha256": info.sha256}))


@code_app.command("eval")
def evaluate(
    model: str = typer.Option(..., help="The model (a name, name@version or a .gguf), served by llama.cpp."),
    out: Path = typer.Option(..., help="Results folder (resumable: finished episodes are kept)."),
    seeds: str = typer.Option("1000-1019", help="Episode seeds, 'LO-HI' or a list (1000-1019: the held-out ones)."),
    tasks: str = typer.Option("all", help="Comma-separated tasks, or all."),
    k: int = typer.Option(3, help="At most K programs per episode (a program the gate refuses is replaced)."),
    temperature: float = typer.Option(0.7, help="Sampling temperature."),
    backend: str = typer.Option("docker", help="The sandbox that plays: docker (committed results) or process."),
    port: int = typer.Option(8031, help="The llama.cpp server's port."),
    threads: int = typer.Option(1, help="llama.cpp threads."),
    select_episodes: int = typer.Option(0, min=0, help="Generate-and-test: try each of up to K programs on this "
                                        "many selection episodes first (0: off; docs/code-mode.md)."),
) -> None:
    """Play held-out episodes with programs the model writes; summary.json, episodes.md."""
    from polar.evals.code_eval import evaluate as run_eval
    from polar.evals.code_runner import docker_profile
    from polar.sandboxes.profiles import SandboxProfile

    profile = docker_profile() if backend == "docker" else SandboxProfile(backend=backend)
    s = run_eval(model, out, tasks=_tasks(tasks), seeds=_seeds(seeds), k=k, profile=profile,
                 temperature=temperature, port=port, threads=threads, select=select_episodes)
    for name, row in s["tasks"].items():
        typer.echo(f"{name:12s} return {row['mean_return']:9.1f}  success {row['success']:.2f}  "
                   f"bar {'met' if row['meets_threshold'] else 'not met'} ({row['metric']} >= {row['threshold']:g})  "
                   f"env steps {row['env_steps']}  refused {row['refused']}")


@code_app.command("rl")
def rl(
    model: str = typer.Option(..., help="The starting model and KL reference (the SFT code model)."),
    out: Path = typer.Option(..., help="Run folder (resumable: rerun the same command)."),
    iterations: int = typer.Option(4, help="Iterations to run (may grow on resume)."),
    group_size: int = typer.Option(8, help="G: programs per (task, seed)."),
    episodes: int = typer.Option(1, min=1, help="Start states each program plays; its reward is the mean return "
                                               "(more than one ranks programs by how many starts they solve)."),
    seed: int = typer.Option(0, help="Run seed (training episode seeds and the update's)."),
    temperature: float = typer.Option(1.0, help="Sampling temperature."),
    tasks: str = typer.Option("all", help="Comma-separated tasks, or all."),
    backend: str = typer.Option("docker", help="The sandbox that plays: docker or process."),
    port: int = typer.Option(8032, help="The llama.cpp server's port."),
    lr: float = typer.Option(1e-4, help="The update's learning rate."),
    kl_coef: float = typer.Option(0.04, help="beta: weight of the k3 KL to the starting model."),
) -> None:
    """GRPO from the sandbox's episode return: G programs per (task, seed), KL to the start."""
    from polar.evals.code_rl import CodeRLConfig, code_rl
    from polar.llm.rl import GRPOConfig

    cfg = CodeRLConfig(model=model, tasks=_tasks(tasks), iterations=iterations, group_size=group_size, episodes=episodes,
                       seed=seed, temperature=temperature, backend=backend, port=port,
                       grpo=GRPOConfig(threads=1, minibatch=8, learning_rate=lr, kl_coef=kl_coef))
    res = code_rl(cfg, out)
    typer.echo(json.dumps(res["rows"][-1] if res["rows"] else {}, indent=1))


@code_app.command("ship")
def ship(
    run: Path = typer.Option(..., help="A code-mode RL run folder (polar code rl --out)."),
    iteration: int = typer.Option(..., help="The iteration to ship (the shipped-model rule's choice)."),
    name: str = typer.Option("code-planner", help="The shipped model's name."),
    out: Path | None = typer.Option(None, help="The folder to write (default planners/models/<name>)."),
    description: str = typer.Option("", help="One line shown by `polar llm models`."),
) -> None:
    """Ship an RL iteration as a named model: the SFT adapter chain + the RL adapter (a few MB)."""
    from polar.evals.code_ship import ship_iteration
    from polar.llm.models import SHIPPED_FOLDER
    from polar.workspace import user_dir

    folder = ship_iteration(run, iteration, out or user_dir("planners") / SHIPPED_FOLDER / name, description=description)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    typer.echo(f"wrote {folder} ({size / 1e6:.1f} MB); use it as `polar code eval --model {folder.name} ...`")
