"""`polar train`: train a policy (any registered algorithm) from a recipe YAML or from flags; `--resume DIR`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer

from polar.errors import ConfigError


def _resolve_config(name: str) -> Path:
    from polar.workspace import resolve_asset

    return resolve_asset("skills", name, folder="recipes", what="config file or recipe")


def train_cmd(
    config: str | None = typer.Argument(None, help="A run config YAML, or a recipe name under skills/recipes/ (e.g. ppo_cartpole)."),
    algo: str | None = typer.Option(None, "--algo", help="A registered algorithm (polar/rl/registry.py): ppo, sac, ..."),
    harness: str | None = typer.Option(None, "--harness", help="Harness id, e.g. gym:CartPole-v1."),
    steps: int | None = typer.Option(None, "--steps", help="Total env steps."),
    seed: int | None = typer.Option(None, "--seed", min=0),
    workers: int | None = typer.Option(None, "--workers", help="0: in-process; N: N Ray rollout actors."),
    out: str | None = typer.Option(
        None, "--out", help="Run directory (metrics, checkpoints, eval.json, policy/). Default: a new "
        "folder named after the config's `out` and the time, e.g. runs/train-20260101-120000."),
    resume: str | None = typer.Option(None, "--resume", help="Continue the run in this directory from its latest checkpoint."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the run already in --out (its metrics, "
                                   "TensorBoard events, checkpoints and policy are deleted first)."),
    eval_deterministic: bool | None = typer.Option(
        None, "--eval-deterministic/--eval-stochastic",
        help="Evaluate with the policy's most likely action (default) or with sampled actions."),
    device: str | None = typer.Option(
        None, "--device", help="The learner's device: auto (cuda for pixel policies where a GPU is "
        "visible), cpu or cuda. With --resume: continue a run on another device."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> None:
    """Train a policy. Flags override the config's fields. A run never writes into another
    run's folder: an --out that holds one needs --resume (continue it) or --overwrite."""
    import logging

    from polar.config import read_mapping, validate
    from polar.harnesses.registry import UnknownHarness, check_harness_id
    from polar.rl.config import TrainConfig
    from polar.workspace import recipe_paths

    if resume is not None:
        if (config or algo or harness or steps or seed is not None or workers is not None or out
                or overwrite or eval_deterministic is not None):
            raise ConfigError("--resume: give only the run directory (the saved config is used)")
        from polar.rl.trainer import Trainer

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        result = Trainer.resume(resume, progress=False if no_progress else None, device=device).run()
    else:
        data: dict[str, Any] = {}
        source = "command line"
        if config is not None:
            path = _resolve_config(config)
            data = recipe_paths(read_mapping(path), path)  # its paths: against the recipe's folder
            source = str(path)
        overrides = {"algo": algo, "harness": harness, "steps": steps, "seed": seed, "workers": workers,
                     "eval_deterministic": eval_deterministic, "device": device}
        data |= {k: v for k, v in overrides.items() if v is not None}
        if no_progress:
            data["progress"] = False
        if "harness" not in data:
            raise ConfigError(f"{source}: harness: required (a config field or --harness ID)")
        cfg = validate(TrainConfig, data, source)
        field = "--harness" if harness is not None else f"{source}: harness"
        for hid in [cfg.harness] if isinstance(cfg.harness, str) else cfg.harness:
            try:
                check_harness_id(hid)  # before the run folder exists
            except UnknownHarness as err:
                raise ConfigError(f"{field}: {err}") from None
        from polar.rl.trainer import Trainer

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        run_dir = Path(out) if out is not None else _new_run_dir(cfg.out)
        typer.echo(f"run folder: {run_dir}", err=True)
        result = Trainer(cfg, run_dir, overwrite=overwrite).run()
    typer.echo(json.dumps(result))


def _new_run_dir(base: str) -> Path:
    """`<base>-<YYYYmmdd-HHMMSS>`, with a counter if that folder exists already."""
    stamp = f"{base.rstrip('/')}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, i = Path(stamp), 1
    while path.exists():
        i += 1
        path = Path(f"{stamp}-{i}")
    return path


def register(app: typer.Typer) -> None:
    app.command("train")(train_cmd)
