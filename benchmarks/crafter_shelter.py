"""Measure the scripted `shelter` skill on held-out Crafter worlds, from dusk starts.

    python benchmarks/crafter_shelter.py --library skills_crafter --episodes 30

Each episode: a held-out world (seed HELD_OUT + i) staged as `collect_stone`'s start (the player
on free ground with stone in view or within 8 cells, `crafter:` with `start=stone`), a wood
pickaxe in hand, energy 6, the clock set to step 140 (dusk: `dark` holds, night falls at 148);
then one call of the library's `shelter` through the skill runner, without interrupts. Recorded
per episode: success (the call ended by its termination: light again, energy full, awake, the
door open), the steps until the player was first walled in (`sheltered`), the health lost
while walled in (zombies cannot reach a walled-in player: expected 0) and in all, and the
wake_up achievement. Written to benchmarks/results/crafter_shelter.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import Figure, script_command, write_result  # noqa: E402

HELD_OUT = 1_500_000_000  # >= 2**30: world seeds the collect policy's training never drew
DUSK = 140  # crafter.Env._step: daylight 0.59 (`dark`), night (< 0.5) from 148


def episode(skill: Any, seed: int) -> dict[str, Any]:
    from polar.harnesses.registry import make_harness
    from polar.skills.runner import run_skill

    h = make_harness("crafter:", start="stone")
    try:
        h.reset(seed=seed)
        env = h.env
        env._step = DUSK
        env._player.inventory["wood_pickaxe"] = 1
        env._player.inventory["energy"] = 6
        obs, *_ = h.step(0)  # noop: the observation shows the staged state
        start_health = int(env._player.health)
        trace: list[tuple[bool, int]] = []
        step = h.step

        def recording_step(action: Any) -> Any:
            out = step(action)
            trace.append(("sheltered" in h.symbolic_state().predicates, int(env._player.health)))
            return out

        h.step = recording_step
        o = run_skill(skill, h, {}, obs=obs).outcome
        first = next((i + 1 for i, (inside, _) in enumerate(trace) if inside), None)
        lost_inside = sum(max(0, a[1] - b[1]) for a, b in zip(trace, trace[1:], strict=False) if a[0] and b[0])
        return {"seed": seed, "success": o.success, "reason": o.reason, "steps": o.steps,
                "steps_to_walled_in": first, "steps_walled_in": sum(inside for inside, _ in trace),
                "health_lost_walled_in": lost_inside, "health_start": start_health,
                "health_end": int(env._player.health), "wake_up": int(env._player.achievements["wake_up"])}
    finally:
        h.close()


def figures(details: dict[str, Any]) -> list[Figure]:
    """Success over the night from dusk starts (reported for scale; the issue sets no goal)."""
    from polar.statistics import wilson_interval

    eps = details["episodes"]
    k, n = sum(e["success"] for e in eps), len(eps)
    lo, hi = wilson_interval(k, n)
    walled = [e["steps_to_walled_in"] for e in eps if e["steps_to_walled_in"] is not None]
    return [
        Figure(f"{details['skill']} success over a night from dusk starts, held-out Crafter worlds, {n} episodes "
               "(scripted, not learnt)", round(k / n, 3), "rate", ci=(round(lo, 3), round(hi, 3))),
        Figure(f"{details['skill']}: steps from dusk until walled in (mean)",
               round(sum(walled) / max(len(walled), 1), 1), "steps", better="lower"),
        Figure(f"{details['skill']}: health lost while walled in (all episodes)",
               float(sum(e["health_lost_walled_in"] for e in eps)), "points", better="lower"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", type=Path, default=ROOT / "skills_crafter")
    ap.add_argument("--episodes", type=int, default=30)
    a = ap.parse_args()
    os.environ.setdefault("POLAR_NO_PROGRESS", "1")
    from polar.skills.store import SkillLibrary

    skill = SkillLibrary(a.library.resolve()).get("shelter")
    t0 = time.perf_counter()
    eps = [episode(skill, HELD_OUT + i) for i in range(a.episodes)]
    details = {"skill": skill.ref, "held_out_seed": HELD_OUT, "dusk_step": DUSK, "episodes": eps,
               "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps({k: v for k, v in details.items() if k != "episodes"}))
    for f in figures(details):
        print(f"{f.what}: {f.value} {f.unit}" + (f" {list(f.ci)}" if f.ci else ""))
    write_result("crafter_shelter", script_command("crafter_shelter.py"), figures(details), details)


if __name__ == "__main__":
    main()
