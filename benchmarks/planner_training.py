"""Polar trains its planner (issue 12): teacher episodes -> dataset -> SFT of SmolLM2-135M ->
reward-filtered self-improvement rounds, each arm evaluated on held-out seeds.

    python benchmarks/planner_training.py --out runs/planner-training            # the whole loop
    python benchmarks/planner_training.py --out ... --stages teacher,dataset,sft,eval-sft

When both SFT and eval-base run (the default) on 2+ cores, the base model is evaluated in a
second process beside SFT (`--sequential` turns that off). Measured on 2 cores: the stages of
the whole loop, one round included, add up to 57 minutes
(evals/results/planner-training/loop-2026-12-02/README.md).

Every stage resumes after a kill (`kill -9` included; docs/planner-training.md): finished
episodes and cells are reused, the dataset is written whole or not at all, SFT continues from
its last checkpoint and registers its model once, a round of `improve` resumes where it stopped
(`--stages` picks stages) and writes `results.json` in --out: one row per arm (base, sft,
round-N), task and observation mode, with Wilson intervals over episodes, and a ledger of what
each stage cost (LLM tokens, training tokens, env steps, CPU and wall time). Copy it to
evals/results/planner-training/ to commit a measured run.

Memory mode (`--observation memory`, docs/memory.md): the teacher is the symbolic planner over
the agent's memory of what it has seen (evals/planner_teacher_memory.yaml: symbolic-memory over
skills_memory/, harnesses with `odometry: true`), the dataset is rendered with the student-memory
profile (the memory's predicates), and the rounds sample and evaluate the student in memory mode
with the memory skills on the same harnesses. Nothing of the default (predicates) run changes.

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
# Sampled in the improvement rounds beside the missions: training phrasings without a colour
# (evals/planner-training/paraphrases.yaml), so the model's own rewarded episodes cover wordings
# other than the mission's. None is a held-out phrasing.
SAMPLE_PHRASINGS = {
    "DoorKey-8x8-reach": ("minigrid:MiniGrid-DoorKey-8x8-v0", "reach the goal"),
    "UnlockPickup-other-room": ("minigrid:MiniGrid-UnlockPickup-v0", "get the box from the other room"),
    "BlockedUnlockPickup-take": ("minigrid:MiniGrid-BlockedUnlockPickup-v0", "open the locked door and take the box"),
}
# --observation memory (issue 41): what the agent observes is its own view and pose, so every
# harness gets odometry, the teacher and the student read the memory, the skills are the memory's
MEMORY = {"teacher_suite": REPO / "evals" / "planner_teacher_memory.yaml", "student": "student-memory",
          "skills": "skills_memory", "kwargs": {"odometry": True}, "teacher": "symbolic-memory"}
STAGES = ["teacher", "dataset", "sft", "eval-base", "eval-sft", "improve"]
EXTRA_STAGES = ["report", "dagger", "eval-dagger", "ship"]  # not in the default run


def rows_from_cells(arm: str, model: str, cells: Path, observation: str) -> tuple[list[dict], dict]:
    """Rows (success with Wilson intervals per task) and cost from the finished cell files of an
    evaluation, e.g. one stopped by a deadline: a cell is written only once all its episodes ran."""
    from polar.statistics import wilson_interval

    by_task: dict[str, list[dict]] = {}
    for f in sorted(cells.glob("*/*/seed-*.json")):
        by_task.setdefault(f.parent.name, []).extend(json.loads(f.read_text())["episodes"])
    rows = []
    for task, eps in by_task.items():
        k, n = sum(e["success"] for e in eps), len(eps)
        rows.append({"arm": arm, "model": model, "task": task, "observation": observation, "successes": k,
                     "episodes": n, "success": k / n, "ci95": list(wilson_interval(k, n)),
                     "decisions_per_episode": [len(e["decisions"]) for e in eps],
                     "failure_causes": [e.get("failure_cause") for e in eps if not e["success"]]})
    eps = [e for v in by_task.values() for e in v]
    cost = {"episodes": len(eps), "env_steps": sum(e["env_steps"] for e in eps),
            "llm_calls": sum(e["llm_calls"] for e in eps), "llm_prompt_tokens": sum(e["prompt_tokens"] for e in eps),
            "llm_completion_tokens": sum(e["completion_tokens"] for e in eps),
            "episode_wall_s": round(sum(e["wall_s"] for e in eps), 1)}
    return rows, cost


def eval_tasks(unseen: bool = True, kwargs: dict | None = None) -> list[SuiteHarness]:
    kw = kwargs or {}
    tasks = [SuiteHarness(id=h, kwargs=kw) for h in TRAIN]
    tasks += [SuiteHarness(id=h, task=t, name=n, kwargs=kw) for n, (h, t) in HELD_OUT_PHRASINGS.items()]
    if unseen:
        tasks.append(SuiteHarness(id="minigrid:MiniGrid-DoorKey-16x16-v0", kwargs=kw))
    return tasks


def train_tasks(kwargs: dict | None = None) -> list[SuiteHarness]:
    """The rounds' sampled tasks: the three missions and the training phrasings without a colour."""
    kw = kwargs or {}
    return [SuiteHarness(id=h, kwargs=kw) for h in TRAIN] + \
        [SuiteHarness(id=h, task=t, name=n, kwargs=kw) for n, (h, t) in SAMPLE_PHRASINGS.items()]


def improve_config(args: argparse.Namespace) -> ImproveConfig:
    """The rounds' config (and the evaluations'): in memory mode the student samples with the
    memory skills on harnesses with odometry."""
    memory = args.observation == "memory"
    kwargs = MEMORY["kwargs"] if memory else None
    return ImproveConfig(model=f"{args.name}", name=f"{args.name}-rft", profile=args.student,
                         observation=args.observation, skills=MEMORY["skills"] if memory else None,
                         tasks=train_tasks(kwargs),
                         eval_tasks=[t for t in eval_tasks(kwargs=kwargs)
                                     if args.eval_tasks is None or t.label in args.eval_tasks.split(",")],
                         rounds=args.rounds, episodes=args.episodes, temperature=args.temperature, seed=args.seed,
                         eval_seeds=args.eval_seeds, eval_episodes=args.eval_episodes,
                         max_decisions=args.max_decisions, port=args.port, threads=args.server_threads,
                         finetune={"token_budget": args.round_token_budget, "learning_rate": args.lr,
                                   "batch_size": 1, "max_length": args.max_length,
                                   "lora_layers": args.lora_layers, "threads": args.threads})


def dagger_config(args: argparse.Namespace, start: str) -> ImproveConfig:
    """Stage dagger's rounds (`targets: teacher`, polar/evals/improve.py): from `start`, the model
    plays the three missions (the evaluation sends them; the phrasings stay in the teacher's
    examples), its states are labelled by the teacher, and it is fine-tuned on every round's
    labels plus the teacher's own dataset, `--dagger-teacher-per-task` examples per task."""
    memory = args.observation == "memory"
    kwargs = MEMORY["kwargs"] if memory else {}
    cfg = improve_config(args)
    return cfg.model_copy(update={
        "model": start, "name": f"{args.name}-dagger", "targets": "teacher",
        "teacher": MEMORY["teacher"] if memory else "symbolic", "tasks": [SuiteHarness(id=h, kwargs=kwargs) for h in TRAIN],
        "eval_tasks": [], "rounds": args.dagger_rounds, "episodes": args.dagger_episodes,
        "temperature": args.dagger_temperature, "aggregate": [str(args.out.resolve() / "dataset")],
        "teacher_per_task": args.dagger_teacher_per_task,
        "finetune": cfg.finetune | {"token_budget": args.dagger_token_budget, "epochs": args.dagger_epochs},
        # each round's model on the held-out episodes inside the round (one process, resumable; the
        # same env seeds as stage eval-dagger's): arm `round-N` in dagger/results.json
        **({"eval_tasks": [SuiteHarness(id=h, kwargs=kwargs) for h in TRAIN], "eval_seeds": 1,
            "eval_episodes": args.dagger_eval_episodes} if args.dagger_eval_episodes else {})})


def shipped_rounds(ledger: dict) -> tuple[str, list[dict]]:
    """The rounds the shipped model comes out of: DAgger's when it ran (it starts from the last
    improvement round's model), else the improvement rounds."""
    return ("dagger", ledger["dagger"]) if ledger.get("dagger") else ("improve", ledger.get("improve") or [])


def held_out(rows: list[dict], arm: str) -> float | None:
    """An arm's success over all its evaluated episodes (None: not evaluated)."""
    mine = [r for r in rows if r["arm"] == arm]
    return sum(r["successes"] for r in mine) / sum(r["episodes"] for r in mine) if mine else None


def dagger_kept(rows: list[dict], rounds: list[dict]) -> int:
    """The shipping rule (docs/memory.md): a DAgger round counts only if its held-out success
    (stage eval-dagger) is at least that of the model it started from; the chain stops at the
    first round that lowers it or was not evaluated. Returns the last counting round (0: none)."""
    kept, best = 0, held_out(rows, "dagger-start")
    for r in rounds:
        s = held_out(rows, f"dagger-{r['round']}")
        if s is None or best is None or s < best:
            break
        kept, best = r["round"], s
    return kept


def teacher_planner(suite_path: Path) -> str:
    """The planner profile of the teacher suite's agent (crafter-memory for evals/crafter_teacher.yaml):
    what the shipped model's description says it learnt from."""
    from polar.config import load_yaml
    from polar.evals.suite import Suite

    planners = {getattr(a, "planner", None) for a in load_yaml(suite_path, Suite).agents} - {None}
    if len(planners) != 1:
        raise SystemExit(f"{suite_path}: a teacher suite has one planner agent, not {sorted(planners) or 'none'}")
    return planners.pop()


def ship_sft(ledger: dict, name: str, out: Path, seed: int, teacher_planner: str) -> None:
    """`--rounds 0`: ship the SFT model itself (no improvement round ran), charged the teacher's env steps."""
    from polar.llm.adapters import ship

    if "teacher" not in ledger or "sft" not in ledger:
        raise SystemExit(f"stage ship (--rounds 0): {out / 'results.json'} has no teacher or sft stage to ship")
    teacher = ledger["teacher"]["env_steps"]
    folder = ship(ledger["sft"]["model"], REPO / "planners" / "models" / name, env_steps=teacher,
                  env_steps_source=f"{out.name}/results.json: the teacher's episodes (ledger.teacher.env_steps "
                                   f"{teacher}); fine-tuning is not env steps of training",
                  description=f"SmolLM2-135M + LoRA, training seed {seed}: SFT on the {teacher_planner} "
                              "planner's decisions, no improvement round")
    print(f"shipped {ledger['sft']['model']} as {folder}")


def ship_last_round(results: dict, name: str | None, out: Path, seed: int, teacher_planner: str = "symbolic",
                    dagger_rounds: int | None = None, sft_only: bool = False) -> None:
    """Ship the last round's model, charged the env steps its training data cost; of DAgger's
    rounds, the last one the shipping rule keeps (`dagger_kept`), or the first `dagger_rounds`
    when the rule was applied to an evaluation made elsewhere (e.g. the memory suite's cells);
    `sft_only` (`--rounds 0`): the SFT model."""
    from polar.llm.adapters import ship

    if not name:
        raise SystemExit("stage ship: name the shipped model with --ship-as")
    ledger = results["ledger"]
    if sft_only:
        return ship_sft(ledger, name, out, seed, teacher_planner)
    stage, rounds = shipped_rounds(ledger)
    if stage == "dagger":
        kept = dagger_kept(results["rows"], rounds) if dagger_rounds is None else min(dagger_rounds, len(rounds))
        print(f"stage ship: DAgger rounds kept by the rule: {kept} of {len(rounds)}")
        stage, rounds = ("dagger", rounds[:kept]) if kept else ("improve", ledger.get("improve") or [])
    if "teacher" not in ledger or not rounds:
        raise SystemExit(f"stage ship: {out / 'results.json'} has no teacher or improve stage to ship")
    before = (ledger.get("improve") or []) if stage == "dagger" else []
    teacher = ledger["teacher"]["env_steps"]
    sampled = [r["sample"]["env_steps"] for r in before + rounds]
    source = (f"{out.name}/results.json: the teacher's episodes (ledger.teacher.env_steps {teacher}) + the "
              f"rounds' sampled episodes (ledger.improve[*]{' and ledger.dagger[*]' if before else ''}"
              f".sample.env_steps {sampled}); fine-tuning and evaluations are not env steps of training")
    what = f"{len(rounds)} reward-filtered round(s) on its own episodes"
    if stage == "dagger":
        what = (f"{len(before)} reward-filtered round(s) on its own episodes, then {len(rounds)} DAgger round(s) "
                f"(its own states labelled by the {teacher_planner} planner)")
    folder = ship(rounds[-1]["model"], REPO / "planners" / "models" / name, env_steps=teacher + sum(sampled),
                  env_steps_source=source,
                  description=f"SmolLM2-135M + LoRA, training seed {seed}: SFT on the {teacher_planner} "
                              f"planner's decisions, then {what}")
    print(f"shipped {rounds[-1]['model']} as {folder}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/planner-training"))
    ap.add_argument("--stages", default=",".join(STAGES),
                    help=f"comma-separated, from {STAGES + EXTRA_STAGES} (report: rows from the finished "
                         "cells of eval-base and eval-sft, for evaluations stopped early)")
    ap.add_argument("--name", default="polar-planner", help="registered name of the SFT model")
    ap.add_argument("--teacher-suite", type=Path, default=None,
                    help="the suite whose episodes teach (default: evals/planner_teacher.yaml, 600 episodes; "
                         "with --observation memory evals/planner_teacher_memory.yaml)")
    ap.add_argument("--observation", choices=["predicates", "view", "memory"], default="predicates",
                    help="what the student's prompts show; memory: the agent's own view (docs/memory.md): the "
                         "memory teacher, student-memory, skills_memory, harnesses with odometry")
    ap.add_argument("--student", default=None,
                    help="the student's planner profile: its templates render the dataset and serve the model "
                         "(default: student; with --observation memory student-memory)")
    ap.add_argument("--keep", choices=["episode", "outcome", "both"], default="both",
                    help="dataset: which teacher decisions enter (polar.planners.dataset.kept); outcome for an open "
                         "world whose episodes never succeed as a whole (Crafter: docs/crafter.md section 6d)")
    ap.add_argument("--token-budget", type=int, default=60_000, help="SFT training tokens (CPU: ~100 tokens/s)")
    ap.add_argument("--max-length", type=int, default=1024, help="tokens per packed SFT sequence")
    ap.add_argument("--max-minutes", type=float, default=None, help="SFT wall-time budget (then merge, convert, register)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads for SFT (default: all cores)")
    ap.add_argument("--lora-layers", type=int, default=None, help="LoRA on the top N layers only (cheaper backward)")
    ap.add_argument("--sft-eval-examples", type=int, default=100, help="validation examples scored after SFT")
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=0,
                    help="training seed: SFT's and the rounds' fine-tuning seed, the rounds' sampling episodes")
    ap.add_argument("--no-round-eval", action="store_true",
                    help="train the rounds without evaluating their models (a suite evaluates them)")
    ap.add_argument("--rounds", type=int, default=1, help="improvement rounds (0: none; stage ship ships the SFT model)")
    ap.add_argument("--episodes", type=int, default=4, help="sampled episodes per training task per round")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--eval-seeds", type=int, default=1)
    ap.add_argument("--eval-episodes", type=int, default=5)
    ap.add_argument("--round-token-budget", type=int, default=20_000)
    ap.add_argument("--max-decisions", type=int, default=20, help="decision budget per episode")
    ap.add_argument("--note", default=None, help="report: a note on the run kept in results.json (machine, load)")
    ap.add_argument("--port", type=int, default=8013, help="port of the evaluated model's server")
    ap.add_argument("--server-threads", type=int, default=os.cpu_count() or 1,
                    help="CPU threads of the model's server (default: every core; 1 for the eval-base run beside SFT)")
    ap.add_argument("--eval-tasks", default=None,
                    help="comma-separated labels to evaluate (default: all; e.g. DoorKey-8x8,DoorKey-8x8-para)")
    ap.add_argument("--base-episodes", type=int, default=None,
                    help="episodes per task for the base model (default: --eval-episodes)")
    ap.add_argument("--dagger-rounds", type=int, default=1, help="stage dagger: rounds")
    ap.add_argument("--dagger-from", default=None,
                    help="stage dagger: the model the first round plays (default: the last improve round's)")
    ap.add_argument("--dagger-episodes", type=int, default=8, help="stage dagger: episodes per mission per round")
    ap.add_argument("--dagger-temperature", type=float, default=0.3)
    ap.add_argument("--dagger-teacher-per-task", type=int, default=100,
                    help="stage dagger: the teacher's own examples per task in each round's fine-tune")
    ap.add_argument("--dagger-token-budget", type=int, default=150_000, help="stage dagger: training tokens per round")
    ap.add_argument("--dagger-epochs", type=float, default=1.0, help="stage dagger: passes over each round's set")
    ap.add_argument("--dagger-eval-episodes", type=int, default=0,
                    help="stage dagger: evaluate each round's model inside the round on this many held-out "
                         "episodes per training task (seed 0's, as stage eval-dagger; 0: not evaluated there)")
    ap.add_argument("--ship-dagger-rounds", type=int, default=None,
                    help="stage ship: ship the model of this many DAgger rounds (0: the improve round's), where the "
                         "shipping rule was applied to an evaluation outside this loop (default: stage eval-dagger's rows)")
    ap.add_argument("--ship-as", default=None,
                    help="stage ship: write the last round's model to planners/models/<NAME> (the folder to "
                         "commit), charged the teacher's and the rounds' sampled env steps")
    ap.add_argument("--sequential", action="store_true",
                    help="run eval-base after SFT instead of beside it (by default, when both stages run and the "
                         "machine has 2+ cores, the base model is evaluated in a second process on the core SFT leaves)")
    args = ap.parse_args(argv)
    memory = args.observation == "memory"
    args.teacher_suite = args.teacher_suite or (MEMORY["teacher_suite"] if memory
                                                else REPO / "evals" / "planner_teacher.yaml")
    args.student = args.student or (MEMORY["student"] if memory else "student")
    return args


def main() -> None:
    args = parse_args()
    stages = args.stages.split(",")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("POLAR_MODELS", str(out / "models.json"))
    res_path = out / "results.json"
    results = {"rows": [], "ledger": {}, "seed": args.seed}
    touched_arms: set[str] = set()  # what this process measured: save() merges only these into the file,
    touched_stages: set[str] = set()  # so two stage processes may share --out

    def save() -> None:
        import fcntl

        with open(out / ".results.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            disk = json.loads(res_path.read_text()) if res_path.exists() else {"rows": [], "ledger": {}}
            disk["rows"] = [r for r in disk["rows"] if r["arm"] not in touched_arms] + \
                [r for r in results["rows"] if r["arm"] in touched_arms]
            disk["ledger"] |= {k: v for k, v in results["ledger"].items() if k in touched_stages}
            disk |= {k: v for k, v in results.items() if k not in ("rows", "ledger")}
            tmp = res_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(disk, indent=1))
            tmp.replace(res_path)

    def timed(stage: str, fn):  # noqa: ANN001, ANN202
        t0, c0 = time.perf_counter(), _cpu_s()
        value = fn()
        touched_stages.add(stage)
        results["ledger"].setdefault(stage, {}).update(wall_s=round(time.perf_counter() - t0, 1),
                                                       cpu_s=round(_cpu_s() - c0, 1))
        save()
        return value

    t_start = time.perf_counter()
    beside = None
    if "eval-base" in stages and "sft" in stages and not args.sequential and (os.cpu_count() or 1) >= 2:
        import subprocess

        # argparse keeps the last --stages; the base model's server on the next port
        from polar.files import die_with_parent

        # it dies with this process (a kill -9 of the loop leaves no evaluation running on)
        beside = subprocess.Popen([sys.executable, __file__, *sys.argv[1:], "--stages", "eval-base",
                                   "--port", str(args.port + 1), "--server-threads", "1"],
                                  preexec_fn=die_with_parent)
        stages.remove("eval-base")
        args.threads = args.threads or 1

    if "teacher" in stages:
        from polar.evals.runner import run_cells

        summary = timed("teacher", lambda: run_cells(args.teacher_suite, out / "teacher"))
        eps = [e for c in summary.results for e in c.episodes]
        results["ledger"]["teacher"] |= {"episodes": len(eps), "env_steps": sum(e.env_steps for e in eps),
                                         "success": sum(bool(e.success) for e in eps) / max(len(eps), 1)}  # None: no goal (Crafter)
        save()
    if "dataset" in stages:
        from polar.llm.finetune import example_token_counter
        from polar.planners.dataset import build_dataset, read_paraphrases

        info = timed("dataset", lambda: build_dataset(
            [out / "teacher" / "cells"], out / "dataset", student=args.student,
            paraphrases=read_paraphrases(REPO / "evals" / "planner-training" / "paraphrases.yaml"),
            count_tokens=example_token_counter("smollm2-135m"), tokenizer="smollm2-135m", keep=args.keep))
        results["ledger"]["dataset"] |= {"counts": info.counts, "tokens": info.tokens, "per_skill": info.per_skill,
                                         "skipped": info.skipped, "sha256": info.sha256, "student": args.student,
                                         "keep": args.keep}
        save()
    cfg = improve_config(args)
    if "sft" in stages:
        from polar.llm.finetune import FinetuneConfig, finetune

        ft = FinetuneConfig(base="smollm2-135m", data=str(out / "dataset"), name=args.name,
                            token_budget=args.token_budget, learning_rate=args.lr, batch_size=1,
                            max_length=args.max_length, max_minutes=args.max_minutes, threads=args.threads,
                            lora_layers=args.lora_layers, seed=args.seed,
                            work_dir=str(out / "sft"), eval_examples=args.sft_eval_examples)
        entry = timed("sft", lambda: finetune(ft, resume=(out / "sft").exists()))
        p = entry.provenance
        results["ledger"]["sft"] |= {k: p[k] for k in ("steps", "tokens_seen", "examples_used", "loss_first",
                                                      "loss_last", "eval", "wall_s")} | {"model": entry.ref}
        save()
    if beside is not None and beside.wait() != 0:
        raise SystemExit(f"eval-base (beside SFT) failed with exit code {beside.returncode}")
    for arm, model in (("base", "smollm2-135m"), ("sft", args.name)):
        if f"eval-{arm}" in stages:
            episodes = args.base_episodes if arm == "base" and args.base_episodes else args.eval_episodes
            rows, cost = evaluate(cfg.model_copy(update={"eval_episodes": episodes}), arm, model, out / f"eval-{arm}")
            results["rows"] += rows
            results["ledger"][f"eval-{arm}"] = cost
            touched_arms.add(arm)
            touched_stages.add(f"eval-{arm}")
            save()
    if "report" in stages:
        for arm, model in (("base", "smollm2-135m"), ("sft", args.name)):
            if (out / f"eval-{arm}" / "cells").is_dir():
                rows, cost = rows_from_cells(arm, model, out / f"eval-{arm}" / "cells", args.observation)
                results["rows"] = [r for r in results["rows"] if r["arm"] != arm] + rows
                results["ledger"][f"eval-{arm}"] = cost
                touched_arms.add(arm)
                touched_stages.add(f"eval-{arm}")
        if args.note:
            results["note"] = args.note
        save()
    if "improve" in stages:
        rft = improve(cfg.model_copy(update={"eval_tasks": []}) if args.no_round_eval else cfg,
                      out / "improve", evaluate_start=False)
        results["rows"] += rft["rows"]
        results["ledger"]["improve"] = rft["ledger"]
        touched_arms.update(r["arm"] for r in rft["rows"])
        touched_stages.add("improve")
        save()
    if "dagger" in stages:
        done = json.loads(res_path.read_text())["ledger"].get("improve") if res_path.exists() else None
        start = args.dagger_from or (done[-1]["model"] if done else None)
        if start is None:
            raise SystemExit(f"stage dagger: {res_path} has no improve round to start from; name one with --dagger-from")
        rounds = improve(dagger_config(args, start), out / "dagger", evaluate_start=False)
        results["ledger"]["dagger"] = rounds["ledger"]
        touched_stages.add("dagger")
        save()
    if "eval-dagger" in stages:
        # the start model and every finished DAgger round's (read from the rounds' own results.json,
        # so a second process can evaluate round 1 while round 2 trains), on the same held-out episodes
        done = json.loads(res_path.read_text())["ledger"].get("improve") if res_path.exists() else None
        start = args.dagger_from or (done[-1]["model"] if done else None)
        if start is None:
            raise SystemExit(f"stage eval-dagger: {res_path} has no improve round; name the start with --dagger-from")
        rounds_file = out / "dagger" / "results.json"
        rounds = json.loads(rounds_file.read_text())["ledger"] if rounds_file.exists() else []
        cfg_eval = dagger_config(args, start)
        cfg_eval = cfg_eval.model_copy(update={"eval_tasks": cfg_eval.tasks, "eval_seeds": args.eval_seeds,
                                               "eval_episodes": args.eval_episodes})
        for arm, model in [("dagger-start", start)] + [(f"dagger-{r['round']}", r["model"]) for r in rounds]:
            rows, cost = evaluate(cfg_eval, arm, model, out / "eval-dagger" / arm)
            results["rows"] += rows
            results["ledger"][f"eval-{arm}"] = cost
            touched_arms.add(arm)
            touched_stages.add(f"eval-{arm}")
            save()
    if "ship" in stages:
        shipping = json.loads(res_path.read_text())
        if (out / "dagger" / "results.json").exists():  # the finished DAgger rounds, while a later one runs
            shipping["ledger"]["dagger"] = json.loads((out / "dagger" / "results.json").read_text())["ledger"]
        ship_last_round(shipping, args.ship_as, out, args.seed,
                        teacher_planner=teacher_planner(args.teacher_suite),
                        dagger_rounds=args.ship_dagger_rounds, sft_only=args.rounds == 0)
    if len(args.stages.split(",")) > 1:  # the loop's own process (not the eval-base one beside it)
        results["ledger"]["loop"] = {"wall_s": round(time.perf_counter() - t_start, 1), "stages": args.stages}
        touched_stages.add("loop")
        save()
    results = json.loads(res_path.read_text())
    for r in results["rows"]:
        print(f"{r['arm']:>8} {r['task']:<26} {r['observation']:<10} {r['successes']}/{r['episodes']} "
              f"= {r['success']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]")
    print(f"results: {res_path}")


if __name__ == "__main__":
    main()
