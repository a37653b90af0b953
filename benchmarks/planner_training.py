"""Polar trains its planner (issue 12): teacher episodes -> dataset -> SFT of SmolLM2-135M ->
reward-filtered self-improvement rounds, each arm evaluated on held-out seeds.

    python benchmarks/planner_training.py --out runs/planner-training            # the whole loop
    python benchmarks/planner_training.py --out ... --stages teacher,dataset,sft,eval-sft

Every stage is resumable (finished eval cells, the teacher suite and the dataset are reused;
`--stages` picks stages) and writes `results.json` in --out: one row per arm (base, sft,
round-N), task and observation mode, with Wilson intervals over episodes, and a ledger of what
each stage cost (LLM tokens, training tokens, env steps, CPU and wall time). Copy it to
evals/results/planner-training/ to commit a measured run.

Held-out evaluation: episode seeds from 100000 (the flagship's), which neither the teacher
(seeds < 100000) nor the sampling rounds (200000+) use; phrasings of the tasks that the
symbolic planner cannot parse and that no training example holds; DoorKey-16x16, never trained on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from polar.evals.improve import ImproveConfig, _cpu_s, evaluate, improve  # noqa: E402
from polar.evals.suite import SuiteHarness  # noqa: E402

TRAIN = ["minigrid:MiniGrid-DoorKey-8x8-v0", "minigrid:MiniGrid-UnlockPickup-v0",
         "minigrid:MiniGrid-BlockedUnlockPickup-v0"]
HELD_OUT_PHRASINGS = {  # the symbolic planner refuses each (parse_mission gives None)
    "DoorKey-8x8-para": ("minigrid:MiniGrid-DoorKey-8x8-v0",
                         "fetch the key, unlock the way through and finish on the green square"),
    "UnlockPickup-para": ("minigrid:MiniGrid-UnlockPickup-v0",
                          "collect the box waiting in the room behind the locked door"),
    "BlockedUnlockPickup-para": ("minigrid:MiniGrid-BlockedUnlockPickup-v0",
                                 "clear the path, unlock the passage and collect the box in the next room"),
}
STAGES = ["teacher", "dataset", "sft", "eval-base", "eval-sft", "improve"]


def eval_tasks(unseen: bool = True) -> list[SuiteHarness]:
    tasks = [SuiteHarness(id=h) for h in TRAIN]
    tasks += [SuiteHarness(id=h, task=t, name=n) for n, (h, t) in HELD_OUT_PHRASINGS.items()]
    if unseen:
        tasks.append(SuiteHarness(id="minigrid:MiniGrid-DoorKey-16x16-v0"))
    return tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/planner-training"))
    ap.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, from {STAGES}")
    ap.add_argument("--name", default="polar-planner", help="registered name of the SFT model")
    ap.add_argument("--observation", choices=["predicates", "view"], default="predicates")
    ap.add_argument("--token-budget", type=int, default=60_000, help="SFT training tokens (CPU: ~100 tokens/s)")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--episodes", type=int, default=4, help="sampled episodes per training task per round")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--eval-seeds", type=int, default=1)
    ap.add_argument("--eval-episodes", type=int, default=5)
    ap.add_argument("--round-token-budget", type=int, default=20_000)
    ap.add_argument("--max-decisions", type=int, default=20, help="decision budget per episode")
    ap.add_argument("--eval-tasks", default=None,
                    help="comma-separated labels to evaluate (default: all; e.g. DoorKey-8x8,DoorKey-8x8-para)")
    args = ap.parse_args()
    stages = args.stages.split(",")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("POLAR_MODELS", str(out / "models.json"))
    res_path = out / "results.json"
    results = json.loads(res_path.read_text()) if res_path.exists() else {"rows": [], "ledger": {}}

    def save() -> None:
        res_path.write_text(json.dumps(results, indent=1))

    def timed(stage: str, fn):  # noqa: ANN001, ANN202
        t0, c0 = time.perf_counter(), _cpu_s()
        value = fn()
        results["ledger"].setdefault(stage, {}).update(wall_s=round(time.perf_counter() - t0, 1),
                                                       cpu_s=round(_cpu_s() - c0, 1))
        save()
        return value

    if "teacher" in stages:
        from polar.evals.runner import run_cells

        summary = timed("teacher", lambda: run_cells(REPO / "evals" / "planner_teacher.yaml", out / "teacher"))
        eps = [e for c in summary.results for e in c.episodes]
        results["ledger"]["teacher"] |= {"episodes": len(eps), "env_steps": sum(e.env_steps for e in eps),
                                         "success": sum(e.success for e in eps) / max(len(eps), 1)}
    if "dataset" in stages:
        from polar.planners.dataset import build_dataset, read_paraphrases

        info = timed("dataset", lambda: build_dataset(
            [out / "teacher" / "cells"], out / "dataset", student="local",
            paraphrases=read_paraphrases(REPO / "evals" / "planner-training" / "paraphrases.yaml")))
        results["ledger"]["dataset"] |= {"counts": info.counts, "per_skill": info.per_skill, "sha256": info.sha256}
    cfg = ImproveConfig(model=f"{args.name}", name=f"{args.name}-rft", observation=args.observation,
                        tasks=[SuiteHarness(id=h) for h in TRAIN],
                        eval_tasks=[t for t in eval_tasks()
                                    if args.eval_tasks is None or t.label in args.eval_tasks.split(",")],
                        rounds=args.rounds, episodes=args.episodes, temperature=args.temperature,
                        eval_seeds=args.eval_seeds, eval_episodes=args.eval_episodes,
                        max_decisions=args.max_decisions,
                        finetune={"token_budget": args.round_token_budget, "learning_rate": args.lr,
                                  "batch_size": 1})
    if "sft" in stages:
        from polar.llm.finetune import FinetuneConfig, finetune

        ft = FinetuneConfig(base="smollm2-135m", data=str(out / "dataset"), name=args.name,
                            token_budget=args.token_budget, learning_rate=args.lr, batch_size=1,
                            work_dir=str(out / "sft"), eval_examples=100)
        entry = timed("sft", lambda: finetune(ft, resume=(out / "sft").exists()))
        p = entry.provenance
        results["ledger"]["sft"] |= {k: p[k] for k in ("steps", "tokens_seen", "examples_used", "loss_first",
                                                      "loss_last", "eval", "wall_s")} | {"model": entry.ref}
    for arm, model in (("base", "smollm2-135m"), ("sft", args.name)):
        if f"eval-{arm}" in stages:
            rows, cost = evaluate(cfg, arm, model, out / f"eval-{arm}")
            results["rows"] = [r for r in results["rows"] if r["arm"] != arm] + rows
            results["ledger"][f"eval-{arm}"] = cost
            save()
    if "improve" in stages:
        rft = improve(cfg, out / "improve", evaluate_start=False)
        results["rows"] = [r for r in results["rows"] if not r["arm"].startswith("round-")] + rft["rows"]
        results["ledger"]["improve"] = rft["ledger"]
        save()
    for r in results["rows"]:
        print(f"{r['arm']:>8} {r['task']:<26} {r['observation']:<10} {r['successes']}/{r['episodes']} "
              f"= {r['success']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]")
    print(f"results: {res_path}")


if __name__ == "__main__":
    main()
