"""Register Crafter's skills from a `polar train` run of skills/recipes/crafter_collect.yaml and
measure each learnt skill on held-out worlds.

    python benchmarks/crafter_skills.py RUN_DIR --library skills_crafter --register
    python benchmarks/crafter_skills.py RUN_DIR --library skills_crafter --episodes 60
    python benchmarks/crafter_skills.py --scripted --library skills_crafter --episodes 60
    python benchmarks/crafter_skills.py RUN_DIR --library skills_crafter_memory --register --memory-skills

Registering goes through the CLI (`polar skills register` for the learnt skills, `polar skills
add` for the scripted ones and the primitives), from the manifests in skills/recipes/crafter/.
Measuring runs each learnt skill through the skill runner on the real `crafter:` harness, from
the start its training staged (`crafter:` with `start=<target>`: the target in view or within 8
cells, the tools it needs in hand), in worlds whose seeds training never drew (it draws below
2**30; these are HELD_OUT + i). An episode whose start does not meet the skill's preconditions
(the target not in view) is skipped, as `polar skills eval` does; the rate rests on the rest.
Each measurement is recorded in the library (`polar skills show` prints it) and all of them in
benchmarks/results/crafter_skills.json (the result convention of benchmarks/bench_results.py).
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

from polar.domains.crafter.collect_env import DEFAULT_TARGETS  # noqa: E402
from polar.domains.crafter.skills import skill_name  # noqa: E402

HELD_OUT = 1_500_000_000  # >= 2**30: world seeds training never draws
MANIFESTS = ROOT / "skills/recipes/crafter"


def policy_dir(run: Path) -> Path:
    """The run's final policy, else its latest checkpoint."""
    if (run / "policy.safetensors").is_file() or (run / "policy").is_dir():
        return run
    ckpts = sorted((run / "checkpoints").glob("ckpt-*"))
    if not ckpts:
        raise SystemExit(f"{run}: no policy and no checkpoint")
    return ckpts[-1]


# In the memory arm's library (skills_crafter_memory/) only: registered with --memory-skills, so
# re-registering skills_crafter/ keeps the no-memory arm's library (and its cells' keys) as it was
MEMORY_SKILLS = {"mine_stone", "mine_coal", "mine_iron", "mine_diamond", "plant_sapling", "eat_plant"}


def register(run: Path, library: Path, env_steps: int | None, memory_skills: bool = False) -> None:
    polar = [sys.executable, "-m", "polar"]
    # by a path, not a bare name: a bare name (skills_crafter) is the shipped library, read-only
    library = library.resolve()
    env = os.environ
    src = policy_dir(run)
    for target in DEFAULT_TARGETS:
        cmd = [*polar, "skills", "register", str(src), "--manifest", str(MANIFESTS / f"{skill_name(target)}.yaml"),
               "--library", str(library)]
        if env_steps is not None:
            cmd += ["--env-steps", str(env_steps)]
        subprocess.run(cmd, check=True, env=env)
    learnt = {f"{skill_name(t)}.yaml" for t in DEFAULT_TARGETS}
    for path in sorted(MANIFESTS.glob("*.yaml")):
        if path.stem in MEMORY_SKILLS and not memory_skills:
            continue
        if path.name not in learnt and not path.name.startswith("collect_"):
            subprocess.run([*polar, "skills", "add", str(path), "--library", str(library)], check=True, env=env)


# Scripted skills measured the same way, from the start staged for the target they act on
SCRIPTED = {"hunt_cow": "cow", "chop_wood": "wood", "go_near": "table",
            "mine_stone": "stone", "mine_coal": "coal", "mine_iron": "iron"}


def measure(library: Path, episodes: int, targets: list[str], names: dict[str, str] | None = None) -> dict[str, dict]:
    """Each skill (the learnt `skill_name(target)` for each target, or `names`: skill -> target)
    run from that target's staged start in held-out worlds."""
    from polar.skills.runner import evaluate_skill
    from polar.skills.store import SkillLibrary

    lib = SkillLibrary(library.resolve())
    out = {}
    for name, target in (names or {skill_name(t): t for t in targets}).items():
        skill = lib.get(name)
        t0 = time.perf_counter()
        args = {"thing": target} if "thing" in skill.parameters else {}  # go_near(thing=table)
        report = evaluate_skill(skill, "crafter:", episodes, args, seed=HELD_OUT,
                                harness_kwargs={"start": target})
        m = report.measurement
        assert m is not None, f"{skill.ref}: no episode ran ({report.skipped})"
        lib.record_evaluation(skill, m.model_copy(update={"harness": f"crafter: start={target}",
                                                         "seed": HELD_OUT}))
        steps = [o.steps for o in report.outcomes if o.success]
        reasons: dict[str, int] = {}
        for o in report.outcomes:
            reasons[o.reason] = reasons.get(o.reason, 0) + 1
        out[skill.ref] = {"target": target, "success": m.rate, "ci": [m.ci_low, m.ci_high],
                          "successes": m.successes, "episodes": m.episodes, "skipped": report.skipped,
                          "mean_steps_success": sum(steps) / len(steps) if steps else None,
                          "reasons": reasons, "env_steps_trained": skill.provenance.env_steps,
                          "wall_s": round(time.perf_counter() - t0, 1)}
        print(f"{skill.ref}: {m.describe()} skipped {report.skipped} "
              f"({out[skill.ref]['wall_s']} s)", flush=True)
    return out


def figures(details: dict[str, Any]) -> list[Figure]:
    """Each learnt skill's success from its staged starts on held-out worlds (reported for scale:
    the issue sets no goal per skill)."""
    return [Figure(f"{ref} success from staged starts, held-out Crafter worlds, {d['episodes']} episodes "
                   + (f"({d['env_steps_trained']} env steps of training)" if d["env_steps_trained"] is not None
                      else "(scripted, not learnt)"), round(d["success"], 3), "rate",
                   ci=(round(d["ci"][0], 3), round(d["ci"][1], 3)))
            for ref, d in sorted(details["skills"].items())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, nargs="?", help="the training run (not with --scripted)")
    ap.add_argument("--library", type=Path, default=ROOT / "skills_crafter")
    ap.add_argument("--register", action="store_true", help="register the skills first")
    ap.add_argument("--memory-skills", action="store_true",
                    help=f"with --register: also {', '.join(sorted(MEMORY_SKILLS))} (skills_crafter_memory)")
    ap.add_argument("--env-steps", type=int, default=None, help="env steps (a checkpoint, not a finished run)")
    ap.add_argument("--episodes", type=int, default=60)
    ap.add_argument("--targets", nargs="*", default=list(DEFAULT_TARGETS))
    ap.add_argument("--scripted", action="store_true", help=f"measure the scripted {', '.join(SCRIPTED)} instead")
    ap.add_argument("--only", nargs="*", default=None,
                    help="with --scripted: these scripted skills alone (default: those of skills_crafter)")
    ap.add_argument("--name", default="crafter_skills_scripted", help="with --scripted: the result's name")
    a = ap.parse_args()
    os.environ.setdefault("POLAR_NO_PROGRESS", "1")
    if a.scripted:
        t0 = time.perf_counter()
        # by default the no-memory library's stand-ins; --only names any (mine_* for skills_crafter_memory)
        names = {k: v for k, v in SCRIPTED.items() if (k in a.only if a.only is not None else k not in MEMORY_SKILLS)}
        details = {"skills": measure(a.library, a.episodes, [], names), "held_out_seed": HELD_OUT,
                   "library": str(a.library), "wall_s": round(time.perf_counter() - t0, 1)}
        print(json.dumps(details, indent=1))
        write_result(a.name, script_command("crafter_skills.py"), figures(details), details)
        return
    if a.run is None:
        ap.error("give the training run (RUN_DIR), or --scripted")
    if a.register:
        register(a.run, a.library, a.env_steps, a.memory_skills)
    t0 = time.perf_counter()
    details = {"skills": measure(a.library, a.episodes, a.targets), "held_out_seed": HELD_OUT,
               "library": str(a.library), "run": str(a.run), "wall_s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(details, indent=1))
    write_result("crafter_skills", script_command("crafter_skills.py"), figures(details), details)


if __name__ == "__main__":
    main()
