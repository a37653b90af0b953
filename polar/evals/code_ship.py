"""Ship one iteration of a code-mode RL run as a named model (`polar code ship`).

An RL iteration's model is the SFT model it started from (a registered LoRA fine-tune) with
the run's own LoRA adapter merged on top (`polar.llm.rl` trains that adapter on the SFT model
merged, so the adapter is relative to it). Shipping writes the SFT model's adapter chain, then
the RL adapter, into `planners/models/<name>/` (`polar.llm.adapters.ship`): a few MB to commit.
On first use the chain is merged into the built-in base in order and converted to GGUF, the
same float32 merge the run's convert stage did, so the served model is the evaluated one.

The model is charged the env steps of its training: every episode of every program sampled by
the run up to that iteration (`env_steps_total` of its row in `results.json`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polar.errors import ConfigError
from polar.evals.stages import STATE_FILE


def rl_provenance(run: Path, iteration: int) -> tuple[str, Path, dict[str, Any]]:
    """(the run's starting model, the iteration's adapter folder, the iteration's provenance)
    from a code-mode RL run folder (`state.json`), checking the iteration finished."""
    path = run / STATE_FILE
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path}: not a readable RL run state: {err}") from None
    cfg = state.get("config") or {}
    it = (state.get("iterations") or {}).get(str(iteration)) or {}
    if "log" not in it:
        done = sorted(int(k) for k, v in (state.get("iterations") or {}).items() if "log" in v)
        raise ConfigError(f"{run}: iteration {iteration} has not finished (finished: {done or 'none'})")
    update, row = it["update"], it["log"]["row"]
    if not update.get("steps"):
        raise ConfigError(f"{run}: iteration {iteration} made no update (its model is the one before it); "
                          "ship the iteration that last changed the adapter")
    keep = ("steps", "sequences", "tokens", "loss", "kl", "clip_frac")
    prov = {"method": "grpo", "trained_from": cfg.get("model"), "run": run.name, "iteration": iteration,
            "config": {k: v for k, v in cfg.items() if k not in ("port", "backend")} | {"backend": cfg.get("backend")},
            "update": {k: update[k] for k in keep if k in update},
            "env_steps_total": row["env_steps_total"],
            "env_steps_by_task": _steps_by_task(run, iteration),
            "programs_sampled": sum(int(v["log"]["row"]["programs"]) for k, v in state["iterations"].items()
                                    if int(k) <= iteration and "log" in v)}
    return str(cfg.get("model")), Path(update["adapter"]), prov


def _steps_by_task(run: Path, iteration: int) -> dict[str, int]:
    """Env steps charged to each task over iterations 1..`iteration` (each program's episode)."""
    out: dict[str, int] = {}
    for i in range(1, iteration + 1):
        path = run / f"iter-{i}" / "programs.jsonl"
        if not path.is_file():
            raise ConfigError(f"{path}: missing, so iteration {i}'s env steps cannot be charged by task")
        for line in path.read_text().splitlines():
            if line.strip():
                p = json.loads(line)
                out[p["task"]] = out.get(p["task"], 0) + int(p["steps"])
    return out


def ship_iteration(run: str | Path, iteration: int, out: str | Path, *, description: str = "") -> Path:
    """Write `run`'s iteration as a shipped model folder `out` (its name is the model's name)."""
    from polar.llm.adapters import ship

    run = Path(run)
    start, adapter, prov = rl_provenance(run, iteration)
    source = (f"{run.name}/results.json row {iteration}: env_steps_total, every episode of every program the RL "
              f"run sampled in iterations 1-{iteration}; the SFT data played none (drawn programs, not played); "
              "validation and held-out evaluations are not training")
    return ship(start, Path(out), description=description, env_steps=prov["env_steps_total"],
                env_steps_source=source, on_top=[(adapter, prov)], shipped_from=f"{run.name} iteration {iteration}")
