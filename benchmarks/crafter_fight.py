"""Pick, register and measure the learnt fight skill (skills/recipes/crafter_fight.yaml) against
the scripted `fight_zombie` / `fight_skeleton` it could replace.

    python benchmarks/crafter_fight.py runs/crafter_fight-seed0 runs/crafter_fight-seed1 \\
        runs/crafter_fight-seed2 --library skills_crafter_fight --episodes 100

Every run is one training seed. The recipe's rule, written before the runs, picks one: the seed
that beats the most foes (both foes pooled) on `--episodes` validation starts per foe (world
seeds VALIDATION + i), ties to fewer deaths. The pick is registered in `--library` (a new
version of fight_zombie and fight_skeleton) and measured, with the scripted skills of
`--scripted-library` beside it, on `--episodes` held-out starts per foe (world seeds
HELD_OUT + i). Training draws world seeds below 2**30; both sets lie above it.

Every episode is one skill call through the skill runner on the real `crafter:` harness from
the start staged for the foe (`crafter:` with `start=<foe>`: a new foe 2-4 cells away in view,
a sword drawn, health 4-9). What is counted is Crafter's own: the foe beaten (the achievement
count `defeat_<foe>` rose during the call), the player dead, the steps and health the call
took. Torch is seeded per episode (the learnt skills sample their actions), so a rerun repeats
every figure. The skill's own termination (no foe in view) also holds when the foe walked out of view,
so "beaten" is the figure compared, not the runner's success. The held-out rates are recorded
in the library (`polar skills show`) and all figures in benchmarks/results/crafter_fight.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import Figure, script_command, write_result  # noqa: E402

from polar.domains.crafter.fight import FOES  # noqa: E402

VALIDATION = 1_400_000_000
HELD_OUT = 1_500_000_000
MANIFESTS = ROOT / "skills/recipes/crafter_fight"


def register(run: Path, library: Path) -> None:
    """Register `run`'s final policy as a new version of each fight skill in `library`."""
    for foe in FOES:
        subprocess.run([sys.executable, "-m", "polar", "skills", "register", str(run), "--manifest",
                        str(MANIFESTS / f"fight_{foe}.yaml"), "--library", str(library.resolve())],
                       check=True, env=os.environ)


def fights(skill: Any, foe: str, episodes: int, seed: int) -> dict[str, Any]:
    """`episodes` calls of `skill` from `foe`'s staged start in worlds seed..seed+episodes-1."""
    import torch

    from polar.domains.crafter.view import visible_things
    from polar.harnesses.registry import make_harness
    from polar.skills.runner import run_skill

    harness = make_harness("crafter:", start=foe)
    beaten = died = skipped = 0
    steps: list[int] = []
    lost: list[int] = []
    try:
        for i in range(episodes):
            obs, _ = harness.reset(seed=seed + i)
            if foe not in visible_things(obs["semantic"]):  # the skill's precondition, sees(foe)
                skipped += 1
                continue
            torch.manual_seed(seed + i)  # a learnt skill samples its actions: the same draws on a rerun
            before = harness.episode_stats()["achievements"][f"defeat_{foe}"]
            health = int(obs["vitals"][0])
            res = run_skill(skill, harness, {"thing": foe}, obs=obs)
            won = harness.episode_stats()["achievements"][f"defeat_{foe}"] > before
            dead = int(res.obs["vitals"][0]) <= 0
            beaten += won
            died += dead
            steps.append(res.outcome.steps)
            lost.append(health - max(int(res.obs["vitals"][0]), 0))
    finally:
        harness.close()
    n = len(steps)
    return {"episodes": n, "skipped": skipped, "beaten": beaten, "died": died,
            "beaten_rate": beaten / n if n else 0.0, "died_rate": died / n if n else 0.0,
            "mean_steps": sum(steps) / n if n else None, "mean_health_lost": sum(lost) / n if n else None}


def measure(skills: dict[str, Any], episodes: int, seed: int) -> dict[str, dict[str, Any]]:
    """Each skill (name -> Skill, keyed by its label) against its foe."""
    out = {}
    for label, skill in skills.items():
        foe = skill.name.removeprefix("fight_")
        t0 = time.perf_counter()
        out[label] = {"skill": skill.ref, "foe": foe, **fights(skill, foe, episodes, seed),
                      "wall_s": round(time.perf_counter() - t0, 1)}
        d = out[label]
        print(f"{label}: beaten {d['beaten']}/{d['episodes']}, died {d['died']}, "
              f"{d['mean_steps']:.1f} steps, {d['mean_health_lost']:.2f} health lost ({d['wall_s']} s)", flush=True)
    return out


def pick(validation: dict[str, dict[str, Any]]) -> str:
    """The rule: most foes beaten over both foes, ties to fewer deaths (then the earlier run)."""
    def score(run: str) -> tuple[int, int]:
        cells = [d for d in validation.values() if d["run"] == run]
        return sum(d["beaten"] for d in cells), -sum(d["died"] for d in cells)

    runs = list(dict.fromkeys(d["run"] for d in validation.values()))
    return max(runs, key=score)


def figures(details: dict[str, Any]) -> list[Figure]:
    """Each skill's held-out rate of foes beaten (for scale: the issue sets no goal per skill)."""
    from polar.statistics import wilson_interval

    return [Figure(f"{label} foes beaten from staged starts, held-out Crafter worlds, {d['episodes']} episodes "
                   f"({d['died']} deaths)", round(d["beaten_rate"], 3), "rate",
                   ci=tuple(round(v, 3) for v in wilson_interval(d["beaten"], d["episodes"])))
            for label, d in details["held_out"].items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path, nargs="+", help="the training runs, one per seed")
    ap.add_argument("--library", type=Path, default=ROOT / "skills_crafter_fight", help="where the pick is registered")
    ap.add_argument("--scripted-library", type=Path, default=ROOT / "skills_crafter",
                    help="the library holding the scripted fight skills compared against")
    ap.add_argument("--episodes", type=int, default=100, help="starts per foe, for validation and held out alike")
    a = ap.parse_args()
    os.environ.setdefault("POLAR_NO_PROGRESS", "1")
    from polar.skills.store import SkillLibrary

    t0 = time.perf_counter()
    validation: dict[str, dict[str, Any]] = {}
    for run in a.runs:
        lib = run / "validation-library"
        if not (lib / "fight_zombie").is_dir():
            register(run, lib)
        skills = SkillLibrary(lib)
        for label, d in measure({f"{run.name}:fight_{f}": skills.get(f"fight_{f}") for f in FOES},
                                a.episodes, VALIDATION).items():
            validation[label] = {"run": str(run), **d}
    chosen = pick(validation)
    print(f"picked {chosen}", flush=True)
    register(Path(chosen), a.library)
    learnt, scripted = SkillLibrary(a.library.resolve()), SkillLibrary(a.scripted_library.resolve())
    held_out = measure({**{f"learnt:fight_{f}": learnt.get(f"fight_{f}") for f in FOES},
                        **{f"scripted:fight_{f}": scripted.get(f"fight_{f}") for f in FOES}}, a.episodes, HELD_OUT)
    from polar.skills.model import Measurement

    for f in FOES:
        d = held_out[f"learnt:fight_{f}"]
        learnt.record_evaluation(learnt.get(f"fight_{f}"), Measurement.from_counts(
            d["beaten"], d["episodes"], harness=f"crafter: start={f} (foe beaten)", seed=HELD_OUT))
    details = {"validation": validation, "picked": chosen, "held_out": held_out, "validation_seed": VALIDATION,
               "held_out_seed": HELD_OUT, "library": str(a.library), "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(details, indent=1))
    write_result("crafter_fight", script_command("crafter_fight.py"), figures(details), details)


if __name__ == "__main__":
    main()
