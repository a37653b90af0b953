"""Learning benchmarks: does Polar's PPO/SAC reach the published targets (2 of 3 seeds)?

    .venv/bin/python benchmarks/rl_learning.py [--task ppo_cartpole|sac_pendulum|ppo_doorkey5x5|ppo_lstm_minigrid|all]
                                               [--seeds 0 1 2] [--out runs/bench]

Each run trains from the recipe under skills/recipes/ with one seed and reads the final
deterministic evaluation (eval.json, seeds disjoint from training). Targets:
- ppo_cartpole:   eval mean return >= 475 within 100k env steps
- sac_pendulum:   eval mean return >= -200 within 20k env steps
- ppo_doorkey5x5: eval success rate >= 0.9 within 200k env steps
- ppo_lstm_minigrid: the same for recurrent PPO (an LSTM over the 7x7 view)

Writes one result per task: benchmarks/results/rl_learning_<task>.json (benchmarks/README.md),
one figure per seed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

TARGETS: dict[str, tuple[str, float]] = {
    "ppo_cartpole": ("mean_return", 475.0),
    "sac_pendulum": ("mean_return", -200.0),
    "ppo_doorkey5x5": ("success_rate", 0.9),
    "ppo_lstm_minigrid": ("success_rate", 0.9),
}


LABELS = {"ppo_cartpole": "PPO CartPole-v1 100k env steps", "sac_pendulum": "SAC Pendulum-v1 20k env steps",
          "ppo_doorkey5x5": "PPO DoorKey-5x5 200k env steps",
          "ppo_lstm_minigrid": "Recurrent PPO (LSTM 64) DoorKey-5x5 200k env steps"}


def figures(details: dict[str, Any]) -> list[Figure]:
    """The final evaluation of each seed's run against the task's target."""
    task = details["task"]
    key, target = TARGETS[task]
    what, unit = ("eval success rate", "rate") if key == "success_rate" else ("eval mean return", "return")
    return [Figure(f"{LABELS[task]}, {what}, seed {seed}", run[key], unit, target)
            for seed, run in zip(details["seeds"], details["runs"], strict=True)]


def run(task: str, seed: int, out: Path) -> dict[str, Any]:
    from polar.config import load_yaml
    from polar.rl.config import TrainConfig
    from polar.rl.trainer import Trainer
    from polar.workspace import find_asset

    recipe = find_asset("skills", f"recipes/{task}.yaml")
    if recipe is None:
        raise SystemExit(f"no recipe skills/recipes/{task}.yaml")
    cfg = load_yaml(recipe, TrainConfig).model_copy(update={"seed": seed, "progress": False})
    res = Trainer(cfg, out / f"{task}-s{seed}", overwrite=True).run()
    key, target = TARGETS[task]
    res["passed"] = bool(res.get(key, float("-inf")) >= target)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Polar RL learning benchmarks")
    ap.add_argument("--task", choices=[*TARGETS, "all"], default="all")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default="runs/bench")
    args = ap.parse_args(argv)
    tasks = list(TARGETS) if args.task == "all" else [args.task]
    ok = True
    for task in tasks:
        key, target = TARGETS[task]
        results = [run(task, s, Path(args.out)) for s in args.seeds]
        passed = sum(r["passed"] for r in results)
        need = min(2, len(results))
        ok &= passed >= need
        vals = ", ".join(f"seed {s}: {r.get(key)} ({r['env_steps']} steps, {r['wall_s']} s)"
                         for s, r in zip(args.seeds, results, strict=True))
        print(f"{task}: {key} >= {target}: {passed}/{len(results)} seeds pass [{vals}]", flush=True)
        details = {"task": task, "seeds": args.seeds, "runs": results}
        command = script_command("rl_learning.py", ["--task", task, "--seeds", *map(str, args.seeds)])
        write_result(f"rl_learning_{task}", command, figures(details), details)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
