"""The symbolic planner over a skill library on MiniGrid tasks: success and failure causes.

    python benchmarks/symbolic_planner.py --episodes 40 --seed-start 1000 \
        --harness MiniGrid-DoorKey-16x16-v0 --harness MiniGrid-BlockedUnlockPickup-v0

Runs the agent loop (`polar.agent.Agent`, the same loop `polar eval` runs) with the
symbolic planner and the library (default: the shipped one) on each harness, episode seeds
seed-start .. seed-start + episodes - 1. Tune on seeds below 100000: the eval suites' episode
seeds start there. Prints, per harness, the success rate with its Wilson interval, the
failure causes and the mean env steps, and writes `benchmarks/results/symbolic_planner.json`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

DEFAULT = ["MiniGrid-DoorKey-8x8-v0", "MiniGrid-DoorKey-16x16-v0", "MiniGrid-UnlockPickup-v0",
           "MiniGrid-BlockedUnlockPickup-v0", "MiniGrid-KeyCorridorS3R3-v0"]


def run(env_id: str, library: Any, episodes: int, seed_start: int) -> dict:
    from polar.agent import Agent
    from polar.harnesses.registry import make_harness
    from polar.planners.symbolic import SymbolicPlanner
    from polar.statistics import wilson_interval

    harness = make_harness(f"minigrid:{env_id}")
    agent = Agent(SymbolicPlanner(), library)
    causes: Counter[str] = Counter()
    wins, steps, failed = 0, [], []
    try:
        for seed in range(seed_start, seed_start + episodes):
            harness.reset(seed=seed)
            task = harness.symbolic_state().mission or ""
            rec = agent.run(task, harness, seed=seed)
            wins += bool(rec.success)
            steps.append(rec.env_steps)
            if not rec.success:
                causes[str(rec.failure_cause)] += 1
                failed.append({"seed": seed, "cause": str(rec.failure_cause), "detail": rec.failure_detail})
    finally:
        harness.close()
    lo, hi = wilson_interval(wins, episodes)
    return {"harness": env_id, "successes": wins, "episodes": episodes, "ci": [lo, hi],
            "mean_env_steps": sum(steps) / len(steps), "failures": dict(causes), "failed": failed}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", action="append", help="MiniGrid env id (repeatable); default: five tasks")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--seed-start", type=int, default=1000)
    ap.add_argument("--library", type=Path, default=None, help="skill library folder (default: the shipped one)")
    args = ap.parse_args(argv)
    from polar.skills.store import SkillLibrary

    library = SkillLibrary(args.library)
    rows = []
    for env_id in args.harness or DEFAULT:
        r = run(env_id, library, args.episodes, args.seed_start)
        rows.append(r)
        print(f"{env_id}: {r['successes']}/{r['episodes']} [{r['ci'][0]:.2f}, {r['ci'][1]:.2f}] "
              f"mean steps {r['mean_env_steps']:.1f} failures {r['failures'] or '-'}", flush=True)
        for f in r["failed"]:
            print(f"    seed {f['seed']}: {f['cause']}: {(f['detail'] or '')[:160]}", flush=True)
    details = {"library": str(library.root), "skills": [s.ref for s in library.list()],
               "seed_start": args.seed_start, "episodes": args.episodes, "rows": rows}
    write_result("symbolic_planner", script_command("symbolic_planner.py", argv), figures(details), details)


def figures(details: dict[str, Any]) -> list[Figure]:
    """Success per harness, with its interval, for scale (a scripted reference)."""
    return [Figure(f"{r['harness']} success, seeds {details['seed_start']}+{details['episodes']}",
                   r["successes"] / r["episodes"], "rate", ci=(round(r["ci"][0], 3), round(r["ci"][1], 3)))
            for r in details["rows"]]


if __name__ == "__main__":
    main()
