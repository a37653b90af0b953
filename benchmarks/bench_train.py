"""Timed training runs for the side-by-side benchmarks: one recipe run under each side (a
context that switches one implementation), the sides interleaved round by round, the same
seed, so both sides must end on the same evaluation when they compute the same thing."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

WARM_UP_STEPS = 2048  # one PPO update of the MiniGrid recipes


def timed_train(recipe: str, out: Path, **overrides: Any) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one run of `skills/recipes/<recipe>.yaml` with `overrides`, its final
    evaluation included, and that evaluation's mean return and success rate."""
    from polar.config import load_yaml
    from polar.rl.config import TrainConfig
    from polar.rl.trainer import Trainer
    from polar.workspace import find_asset

    cfg = load_yaml(find_asset("skills", f"recipes/{recipe}.yaml"), TrainConfig).model_copy(
        update={"eval_every": 0, "progress": False, **overrides})
    t = time.perf_counter()
    res = Trainer(cfg, out, overwrite=True).run()
    return time.perf_counter() - t, {k: res[k] for k in ("mean_return", "success_rate")}


def interleaved_runs(recipe: str, sides: dict[str, Callable[[], AbstractContextManager[Any]]], rounds: int,
                     steps: int, **overrides: Any) -> dict[str, Any]:
    """`{"steps", "<side>_s": [wall per round], "<side>_eval": [evaluation per round]}`."""
    out: dict[str, Any] = {"steps": steps, **{f"{s}_s": [] for s in sides}, **{f"{s}_eval": [] for s in sides}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, side in sides.items():  # untimed: imports and first calls do not fall on round 0
            with side():
                timed_train(recipe, Path(tmp) / f"warm-{name}", steps=WARM_UP_STEPS, **overrides)
        for r in range(rounds):
            for name, side in sides.items():
                with side():
                    wall, ev = timed_train(recipe, Path(tmp) / f"{name}{r}", steps=steps, **overrides)
                out[f"{name}_s"].append(round(wall, 2))
                out[f"{name}_eval"].append(ev)
            print(f"{recipe} round {r}: " + ", ".join(f"{s} {out[f'{s}_s'][-1]} s" for s in sides), flush=True)
    return out
