"""A pure-RL agent's hyper-parameter sweep, run inside the suite and charged to the agent.

`sweep:` on a pure-RL agent names a small grid of TrainConfig fields (dotted paths, e.g.
`ppo.learning_rate`). Before any of the agent's cells trains, every grid point trains once on
the sweep's harness (a task family's representative, or each cell's own harness) with the
sweep's seed and budget, and is scored on `episodes` episodes played as the suite plays them
(seeds `SWEEP_SEED + i`, disjoint from the suite's, the curves' and every training seed).
The best point — most successes, then highest mean return, then the first in grid order —
is merged over the agent's `overrides` for all its cells. The trials run once per sweep
harness, in `<out>/work/<agent>/@sweep/<harness>/`, shared by the cells (one at a time
trains them, the others wait and reuse them); the ledger charges their env steps once, as
tuning (`tune:<agent>:<harness>`). `best.json` there records every trial's score.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polar.evals.suite import SweepConfig
from polar.evals.training import run_env_steps
from polar.files import atomic_write

SWEEP_SEED = 3 * 2**30  # trial episodes: seeds SWEEP_SEED + i (the suite's start at eval_seed, curves at 2^31)
SWEEP_DIR = "@sweep"  # under <out>/work/<agent>/ (no harness label can hold "@")
SCORE_FILE = "sweep_score.json"


# (overrides, run dir) -> trains one trial there (reusing or resuming it)
TrainFn = Callable[[dict[str, Any], Path], None]
# (policy, env seed) -> (success or None, return): one episode played as the suite plays them
PlayFn = Callable[[Any, int], tuple[bool | None, float]]


def run_sweep(sweep: SweepConfig, folder: Path, train: TrainFn, play: PlayFn) -> tuple[dict[str, Any], int]:
    """(the best point's overrides, env steps of all trials). Trials trained and scored
    earlier are reused."""
    from polar.rl.policy import load_policy

    trials = []
    for i, point in enumerate(sweep.points()):
        run = folder / f"trial-{i}"
        train(point, run)
        score_file = run / SCORE_FILE
        if not score_file.exists():
            policy = load_policy(run)
            outs = [play(policy, SWEEP_SEED + e) for e in range(sweep.episodes)]
            atomic_write(score_file, json.dumps({"successes": sum(bool(s) for s, _ in outs), "episodes": len(outs),
                                                 "mean_return": sum(r for _, r in outs) / len(outs)}))
        score = json.loads(score_file.read_text())
        trials.append({"trial": i, "overrides": point, **score, "env_steps": run_env_steps(run)})
    best = max(trials, key=lambda t: (t["successes"], t["mean_return"], -t["trial"]))
    atomic_write(folder / "best.json", json.dumps({"best": best, "trials": trials}, indent=1))
    return best["overrides"], sum(t["env_steps"] for t in trials)
