"""The maze planner over a scripted reach on PointMaze, side by side with the controller alone.

    .venv/bin/python benchmarks/maze_planner.py                 # 20 seeds per maze
    .venv/bin/python benchmarks/maze_planner.py --episodes 5

Rows, on the same harness seeds for every agent (Medium, Large, and the held-out spiral):

  planner+scripted (lookahead 2 / 1)   polar.domains.maze.planner over a PD controller standing in
                                       for the trained `reach` skill (privileged: it reads
                                       the target point, ignores walls)
  scripted alone                       the same controller aimed straight at the goal

The planner's figures bound what a trained `reach` can give it (a skill at least as good as
the PD controller on one- and two-cell straight moves). Reported: success rate with its 95%
Wilson interval, mean env steps of successful episodes, mean reach calls per episode.
Goal: the planner's success >= 0.9 on every maze. Writes benchmarks/results/maze_planner.json
(benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import Figure, script_command, write_result  # noqa: E402

MAZES = ["maze:PointMaze_Medium-v3", "maze:PointMaze_Large-v3", "maze_spiral"]
GOAL_PLANNER = 0.9


def figures(doc: dict[str, Any]) -> list[Figure]:
    """Success per maze and agent, with its interval; goal on the planner's rows."""
    figs = []
    for row in doc["rows"]:
        maze = row["harness"].removeprefix("maze:").removesuffix("-v3")
        planner = row["agent"].startswith("planner")
        figs.append(Figure(f"{maze}: {row['agent']} success, {row['episodes']} seeds", row["success"], "rate",
                           GOAL_PLANNER if planner else None, ci=(row["ci"][0], row["ci"][1])))
    return figs


def scripted_alone(h, obs) -> tuple[bool, int, int]:
    import numpy as np

    from polar.domains.maze.reach import scripted_action

    for t in range(h.spec.max_steps):
        obs, _, term, trunc, _ = h.step(scripted_action(obs, tuple(np.asarray(obs["desired_goal"]))))
        if term or trunc:
            return bool(term), t + 1, 0
    return False, h.spec.max_steps, 0


def main(argv: list[str] | None = None) -> None:
    import numpy as np
    from tests.planners.test_maze import run_with_scripted_reach

    from polar.domains.maze.planner import MazePlanner
    from polar.harnesses.registry import make_harness
    from polar.statistics import wilson_interval

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=10_000)
    args = ap.parse_args(argv)
    agents = {
        "planner+scripted (lookahead 2)": lambda h, o: run_with_scripted_reach(h, o, MazePlanner(lookahead=2)),
        "planner+scripted (lookahead 1)": lambda h, o: run_with_scripted_reach(h, o, MazePlanner(lookahead=1)),
        "scripted alone": scripted_alone,
    }
    rows = []
    for maze in MAZES:
        h = make_harness(maze)
        for name, agent in agents.items():
            t0 = time.perf_counter()
            res = [agent(h, h.reset(seed=args.seed + i)[0]) for i in range(args.episodes)]
            k = sum(ok for ok, _, _ in res)
            lo, hi = wilson_interval(k, len(res))
            steps = [s for ok, s, _ in res if ok]
            row = {"harness": maze, "agent": name, "episodes": len(res), "success": k / len(res),
                   "ci": [round(lo, 3), round(hi, 3)],
                   "mean_steps_success": round(float(np.mean(steps)), 1) if steps else None,
                   "mean_calls": round(float(np.mean([c for _, _, c in res])), 2),
                   "step_limit": h.spec.max_steps, "wall_s": round(time.perf_counter() - t0, 2)}
            rows.append(row)
            print(f"{maze:28s} {name:32s} success {row['success']:.2f} [{lo:.2f}, {hi:.2f}]  "
                  f"steps {row['mean_steps_success']}  calls {row['mean_calls']}  ({row['wall_s']} s)")
        h.close()
    doc = {"seed": args.seed, "rows": rows}
    write_result("maze_planner", script_command("maze_planner.py", argv), figures(doc), doc)


if __name__ == "__main__":
    main()
