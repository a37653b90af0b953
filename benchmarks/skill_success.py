"""Success of the shipped learned skills, as `polar skills eval` measures it (goals: goto
>= 0.9 on a layout it was trained on, reach >= 0.9 on one- and two-cell waypoints of a maze it
never saw; the other rows for scale).

    python benchmarks/skill_success.py                  # run every row (what `polar skills eval` runs)
    python benchmarks/skill_success.py --from-library   # no run: the evaluations the library recorded

Each row is one `polar skills eval` call, kept in the result as `command` of its row: the same
function (`polar.skills.runner.evaluate_skill`), harness, arguments, episodes and seeds.
`--from-library` takes, for each row, the last evaluation the library recorded for the skill's
latest version with that harness, arguments, seed and number of episodes (`polar skills eval`
records one by default); a row with none is left out. Measuring here records nothing in the
library. Writes benchmarks/results/skill_success.json (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

GOAL = 0.9


class Row(NamedTuple):
    skill: str
    harness: str
    args: dict[str, Any]
    episodes: int
    seed: int
    trained: bool  # a layout the skill was trained on
    goal: float | None = None  # a success goal where one is claimed


ROWS = [
    Row("goto", "minigrid:MiniGrid-DoorKey-8x8-v0", {"object": "key"}, 100, 0, True, GOAL),
    Row("goto", "minigrid:MiniGrid-DoorKey-8x8-v0", {"object": "door"}, 100, 0, True, GOAL),
    Row("goto", "minigrid:MiniGrid-DoorKey-16x16-v0", {"object": "key"}, 100, 0, False),
    Row("goto", "minigrid:MiniGrid-DoorKey-16x16-v0", {"object": "door"}, 100, 0, False),
    Row("reach", "maze_large_waypoints", {}, 200, 1000, False, GOAL),  # held out: PointMaze_Large
]


def eval_command(row: Row) -> str:
    cmd = ["polar", "skills", "eval", row.skill, "--harness", row.harness, "--episodes", str(row.episodes)]
    if row.args:
        cmd += ["--args", json.dumps(row.args)]
    if row.seed:
        cmd += ["--seed", str(row.seed)]
    return " ".join(map(shlex.quote, cmd))


def figures(details: dict[str, Any]) -> list[Figure]:
    figs = []
    for r in details["rows"]:
        m = r["measurement"]
        args = " ".join(f"{k}={v}" for k, v in m["args"].items())
        trained = "" if r["trained"] else " (never trained on)"
        harness = m["harness"].removeprefix("minigrid:").removesuffix("-v0")
        figs.append(Figure(f"{r['skill']}{f' {args}' if args else ''} success on {harness}{trained}, "
                           f"{m['episodes']} episodes", m["rate"], "rate", r.get("goal"),
                           ci=(round(m["ci_low"], 3), round(m["ci_high"], 3))))
    return figs


def recorded(row: Row, skill: Any) -> Any:
    found = [m for m in skill.evaluations if m.harness == row.harness and m.args == row.args
             and m.seed == row.seed and m.episodes == row.episodes]
    return found[-1] if found else None


def main(argv: list[str] | None = None) -> None:
    from polar.skills.runner import evaluate_skill
    from polar.skills.search_path import open_library

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-library", action="store_true", help="the recorded evaluations, no run")
    ap.add_argument("--library", default=None, help="library folder (default: the workspace's over the shipped one)")
    args = ap.parse_args(argv)
    lib = open_library(args.library)
    rows = []
    for row in ROWS:
        skill = lib.get(row.skill)
        entry: dict[str, Any] = {"skill": skill.ref, "trained": row.trained, "goal": row.goal,
                                 "command": eval_command(row)}
        if args.from_library:
            m = recorded(row, skill)
            if m is None:
                print(f"{skill.ref} {row.harness} {row.args}: no recorded evaluation; left out")
                continue
        else:
            report = evaluate_skill(skill, row.harness, row.episodes, row.args, row.seed)
            m = report.measurement
            entry["mean_steps"] = sum(o.steps for o in report.outcomes) / len(report.outcomes)
            entry["skipped"] = report.skipped
        entry["measurement"] = m.model_dump(mode="json")
        rows.append(entry)
        print(f"{skill.ref} on {row.harness} {row.args}: {m.describe()}", flush=True)
    details = {"source": "library" if args.from_library else "measured", "rows": rows}
    machine = None
    if args.from_library:  # when the evaluations ran; the machine they ran on is not recorded
        last = max(datetime.fromisoformat(r["measurement"]["measured_at"]) for r in rows)
        machine = {"measured_at": last.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "cpus": None,
                   "loadavg": None}
    # The command that measures these rows (from the library or not).
    measure = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--from-library"]
    write_result("skill_success", script_command("skill_success.py", measure), figures(details), details,
                 machine=machine)


if __name__ == "__main__":
    main()
