"""goto(object, color) across MiniGrid layouts and sizes, side by side with a random walk.

    .venv/bin/python benchmarks/goto_skill.py                     # the shipped skill, 100 episodes
    .venv/bin/python benchmarks/goto_skill.py --policy runs/goto  # a training run's policy
    .venv/bin/python benchmarks/goto_skill.py --episodes 20

Every row runs the same episodes (harness seeds 10000..) for the skill's policy and for a
uniform random walk over the same three actions, with the same step budget. Reported per row:
success rate with its 95% Wilson interval, over all episodes and over the episodes where the
target can be reached at all (a key can wall off a one-cell-wide DoorKey room), mean steps of
successful episodes and their ratio to the shortest path (breadth-first search over poses).
`goal` rows open every door first (the state after toggle). Sizes 16x16 (DoorKey) and 19x19
(FourRooms) were never trained on: the recipe trains on 5x5 .. 11x6 layouts. Writes
benchmarks/results/goto_skill.json (benchmarks/README.md); goal: success >= 0.9 on the rows
of layouts the skill was trained on.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_results import Figure, script_command, write_result  # noqa: E402

GOAL_TRAINED = 0.9

# (harness, object, open doors first, trained on this layout?)
ROWS = [
    ("MiniGrid-DoorKey-5x5-v0", "key", False, True),
    ("MiniGrid-DoorKey-8x8-v0", "key", False, True),
    ("MiniGrid-DoorKey-8x8-v0", "door", False, True),
    ("MiniGrid-DoorKey-8x8-v0", "goal", True, True),
    ("BabyAI-GoToLocal-v0", "ball", False, True),
    ("BabyAI-GoToLocal-v0", "box", False, True),
    ("MiniGrid-DoorKey-16x16-v0", "key", False, False),
    ("MiniGrid-DoorKey-16x16-v0", "door", False, False),
    ("MiniGrid-DoorKey-16x16-v0", "goal", True, False),
    ("MiniGrid-FourRooms-v0", "goal", False, False),
]


def load_actor(args: argparse.Namespace):
    if args.policy:
        from polar.rl.policy import load_policy

        return load_policy(args.policy), args.policy
    from polar.skills.search_path import open_library
    from polar.skills.store import load_skill_policy

    skill = open_library(args.library).get(args.skill)
    return load_skill_policy(skill), skill.ref


def figures(doc: dict[str, Any]) -> list[Figure]:
    """The skill's success per row, with its interval; goal on the layouts it was trained on."""
    figs = []
    for row in doc["rows"]:
        env = row["harness"].removeprefix("minigrid:").removesuffix("-v0")
        when = ", doors open" if row["open_doors"] else ""
        trained = "" if row["trained"] else " (never trained on)"
        s = row["skill"]
        figs.append(Figure(f"{doc['policy']} {row['object']} success on {env}{trained}{when}, "
                           f"{s['episodes']} episodes", s["rate"], "rate",
                           GOAL_TRAINED if row["trained"] else None, ci=(round(s["ci"][0], 3), round(s["ci"][1], 3))))
    return figs


def main(argv: list[str] | None = None) -> None:
    import torch

    from polar.domains.minigrid.goto_eval import RandomActor, evaluate_goto
    from polar.harnesses.registry import make_harness

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skill", default="goto", help="library ref (default: goto, the latest version)")
    ap.add_argument("--library", default=None, help="library folder (default: the workspace library over the shipped one)")
    ap.add_argument("--policy", default=None, help="a run dir or saved policy dir instead of the library")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--budget", type=int, default=100, help="steps per episode (the skill's step budget)")
    ap.add_argument("--sample", action="store_true", help="sample actions instead of the argmax")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # one small forward pass per step: extra threads only contend
    actor, name = load_actor(args)
    mode = "sampled" if args.sample else "argmax"
    print(f"goto benchmark: {name} ({mode} actions), {args.episodes} episodes per row, budget {args.budget}")
    header = (f"{'harness':28s} {'object':6s} {'trained':7s} | {'skill success [95% CI]':24s} "
              f"{'reachable':9s} {'steps':>5s} {'/opt':>5s} | {'random':>6s} {'ratio':>6s} | {'s':>5s}")
    print(header)
    print("-" * len(header))
    rows = []
    for hid, obj, open_doors, trained in ROWS:
        t0 = time.perf_counter()
        harness = make_harness(f"minigrid:{hid}")
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # BabyAI prints rejected samples
                s = evaluate_goto(actor, harness, obj, None, args.episodes, args.budget, open_doors=open_doors,
                             deterministic=not args.sample)
                r = evaluate_goto(RandomActor(0), harness, obj, None, args.episodes, args.budget,
                             open_doors=open_doors)
        finally:
            harness.close()
        reach = s.episodes - s.unreachable
        s_reach = s.successes / reach if reach else float("nan")
        ratio = s.rate / r.rate if r.rate else float("inf")
        wall = time.perf_counter() - t0
        print(f"{hid:28s} {obj:6s} {'yes' if trained else 'NO':7s} | {s.rate:5.2f} [{s.ci[0]:.2f}, {s.ci[1]:.2f}] "
              f"({s.successes}/{s.episodes}) {s_reach:9.2f} {s.mean_steps:5.1f} {s.step_ratio:5.2f} | "
              f"{r.rate:6.2f} {ratio:6.1f} | {wall:5.1f}", flush=True)
        rows.append({"harness": f"minigrid:{hid}", "object": obj, "open_doors": open_doors, "trained": trained,
                     "skill": vars(s), "random": vars(r), "success_reachable": s_reach,
                     "success_ratio_vs_random": ratio, "wall_s": wall})
    doc = {"policy": name, "sampled": args.sample, "episodes": args.episodes, "budget": args.budget, "rows": rows}
    write_result("goto_skill", script_command("goto_skill.py", argv), figures(doc), doc)


if __name__ == "__main__":
    main()
