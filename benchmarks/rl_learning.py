"""Learning benchmarks: does Polar's PPO/SAC reach the published targets (2 of 3 seeds)?

    .venv/bin/python benchmarks/rl_learning.py [--task ppo_cartpole|sac_pendulum|ppo_doorkey5x5|all]
                                               [--seeds 0 1 2] [--out runs/bench]

Each run trains from the recipe under skills/recipes/ with one seed and reads the final
deterministic evaluation (eval.json, seeds disjoint from training). Targets:
- ppo_cartpole:   eval mean return >= 475 within 100k env steps
- sac_pendulum:   eval mean return >= -200 within 20k env steps
- ppo_doorkey5x5: eval success rate >= 0.9 within 200k env steps
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from polar.config import load_yaml
from polar.rl.config import TrainConfig
from polar.rl.trainer import Trainer
from polar.workspace import find_asset

TARGETS: dict[str, tuple[str, float]] = {
    "ppo_cartpole": ("mean_return", 475.0),
    "sac_pendulum": ("mean_return", -200.0),
    "ppo_doorkey5x5": ("success_rate", 0.9),
}


def run(task: str, seed: int, out: Path) -> dict[str, Any]:
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
    summary = {}
    for task in tasks:
        key, target = TARGETS[task]
        results = [run(task, s, Path(args.out)) for s in args.seeds]
        passed = sum(r["passed"] for r in results)
        need = min(2, len(results))
        ok &= passed >= need
        summary[task] = results
        vals = ", ".join(f"seed {s}: {r.get(key)} ({r['env_steps']} steps, {r['wall_s']} s)"
                         for s, r in zip(args.seeds, results, strict=True))
        print(f"{task}: {key} >= {target}: {passed}/{len(results)} seeds pass [{vals}]", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "rl_learning.json").write_text(json.dumps(summary, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
