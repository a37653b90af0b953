"""Where and why a Crafter agent's episodes end, from a suite's committed cells.

    python benchmarks/crafter_deaths.py evals/results/crafter_skills [--agent symbolic-skills]

For each episode: its length, whether the player died (terminated) or the 10,000 steps ran out,
the skill running at the end, the time of day at the end (Crafter's daylight, a function of the
step: night is daylight < 0.5, steps 148-272 of every 300), the vitals that were low and whether
the player was sheltered (the last outcome's predicates). Printed as counts, so a change to the
planner or the skills can be judged by what it moved, not only by the score; and the env steps
each skill took (the learnt skills' share of the work).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

DAY = 300  # Crafter's day length in steps (crafter.Env._update_time)


def daylight(step: int) -> float:
    """Crafter's daylight at `step` (crafter.Env._update_time)."""
    progress = (step / DAY) % 1 + 0.3
    return 1 - abs(math.cos(math.pi * progress)) ** 3


def episode_end(ep: dict[str, Any]) -> dict[str, Any]:
    """The facts of one episode record's end."""
    last = next((o for d in reversed(ep["decisions"]) for o in reversed(d.get("outcomes") or [])), None)
    preds = set(last["predicates_after"]) if last else set()
    steps = int(ep["env_steps"])
    return {"steps": steps, "died": bool(ep["terminated"]), "skill": (last["skill"].split("@")[0] if last else "-"),
            "night": daylight(steps) < 0.5, "nights_survived": sum(1 for k in range(1, steps + 1)
                                                                  if daylight(k - 1) < 0.5 <= daylight(k)),
            "low": sorted(p[4:-1] for p in preds if p.startswith("low(")), "sheltered": "sheltered" in preds}


def skill_steps(episodes: list[dict[str, Any]]) -> Counter:
    """Env steps per skill over the episodes' calls (the learnt skills' share of the work)."""
    steps: Counter = Counter()
    for ep in episodes:
        for d in ep["decisions"]:
            for o in d.get("outcomes") or []:
                steps[o["skill"].split("@")[0]] += int(o["steps"])
    return steps


def summarise(ends: list[dict[str, Any]]) -> str:
    n = len(ends)
    died = [e for e in ends if e["died"]]
    lines = [f"{n} episodes, mean length {sum(e['steps'] for e in ends) / max(n, 1):.0f} steps; "
             f"{len(died)} died ({sum(e['night'] for e in died)} at night), {n - len(died)} ran to the step limit; "
             f"nights survived per episode {sum(e['nights_survived'] for e in ends) / max(n, 1):.2f}"]
    by_skill = Counter((e["skill"], "night" if e["night"] else "day") for e in died)
    lines.append("deaths by the skill running and the time of day: " + ", ".join(
        f"{s} at {t} {k}" for (s, t), k in sorted(by_skill.items(), key=lambda x: -x[1])))
    low = Counter(v for e in died for v in e["low"])
    lines.append("low at death (of those who died): " + (", ".join(f"{v} {k}" for v, k in low.most_common()) or "none")
                 + f"; none low {sum(1 for e in died if not e['low'])}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="a suite's output folder (its cells/)")
    ap.add_argument("--agent", default="symbolic-skills")
    a = ap.parse_args()
    cells = sorted((a.results / "cells" / a.agent).rglob("seed-*.json"))
    if not cells:
        raise SystemExit(f"no cells under {a.results / 'cells' / a.agent}")
    episodes = [ep for c in cells for ep in json.loads(c.read_text())["episodes"]]
    print(summarise([episode_end(ep) for ep in episodes]))
    steps = skill_steps(episodes)
    total = sum(steps.values()) or 1
    print("env steps by skill: " + ", ".join(f"{s} {k} ({100 * k / total:.0f}%)" for s, k in steps.most_common()))


if __name__ == "__main__":
    main()
