"""Held-out greedy evaluations of planner models, paired on their start states (issue 40).

`eval` plays one model greedily on one task's held-out episode seeds (100000 + i, the flagship's
held-out range) with `polar.evals.improve.evaluate`, exactly as `polar llm rl`'s evaluation
stage does, into `OUT/<label>/` (resumable: finished episodes are kept). `compare` reads the
evaluations back and writes one JSON: per evaluation the success with its Wilson interval and
every episode's outcome; per requested pair the exact McNemar test on the paired episodes
(`polar.evals.paired.paired_harness`); per requested repeat whether two evaluations of one model
made the same decisions (every decision and what it executed) with the same outcomes.

    python benchmarks/planner_rl_heldout.py eval --out runs/heldout --label start \
        --model polar-planner-seed2 --task minigrid:MiniGrid-UnlockPickup-v0 --episodes 40 --parallel 8
    python benchmarks/planner_rl_heldout.py compare --out runs/heldout --pair it3:start \
        --repeat it4:it4-repeat --json evals/results/planner-rl/heldout-2026-12-06/results.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

ROW = "evaluation.json"  # a finished evaluation's record: its config, rows and cost


def evaluate_one(args: argparse.Namespace) -> dict[str, Any]:
    from polar.evals.improve import ImproveConfig, evaluate
    from polar.evals.suite import SuiteHarness

    out = Path(args.out) / args.label
    cfg = ImproveConfig(model=args.model, name="heldout", profile=args.profile, observation="predicates",
                        tasks=[SuiteHarness(id=args.task)], eval_tasks=[SuiteHarness(id=args.task)],
                        eval_seeds=1, eval_episodes=args.episodes, port=args.port, threads=args.threads,
                        max_decisions=args.max_decisions, engine="llama-server", parallel=args.parallel)
    rows, cost = evaluate(cfg, args.label, args.model, out)
    record = {"label": args.label, "model": args.model, "task": args.task, "episodes": args.episodes,
              "parallel": args.parallel, "threads": args.threads, "rows": rows, "cost": cost}
    (out / ROW).write_text(json.dumps(record, indent=1))
    print(json.dumps({k: v for k, v in record.items() if k != "cost"} | {"wall_s": round(cost["wall_s"], 1)}))
    return record


def load_cells(folder: Path) -> list[Any]:
    from polar.evals.cells import CellResult

    return [CellResult.model_validate_json(p.read_text()) for p in sorted((folder / "cells").rglob("*.json"))]


def fingerprint(episode: Any) -> str:
    """What the episode did: every validated decision and what executing it gave (the skill run,
    its success and env steps), in order (an evaluation keeps no per-step trace)."""
    done = [[d.decision, [(o.model_dump(mode="json").get("skill"), o.success, o.steps) for o in d.outcomes]]
            for d in episode.decisions]
    return hashlib.sha256(json.dumps([done, episode.env_steps], default=str).encode()).hexdigest()[:16]


def episodes_of(folder: Path) -> dict[int, dict[str, Any]]:
    """env seed -> the episode's outcome, per evaluation."""
    return {e.seed: {"seed": e.seed, "success": bool(e.success), "return": e.episode_return,
                     "decisions": len(e.decisions), "env_steps": e.env_steps, "fingerprint": fingerprint(e)}
            for c in load_cells(folder) for e in c.episodes}


def compare(args: argparse.Namespace) -> dict[str, Any]:
    from polar.evals.paired import paired_harness

    out = Path(args.out)
    evaluations: dict[str, Any] = {}
    for folder in sorted(p.parent for p in out.glob(f"*/{ROW}")):
        record = json.loads((folder / ROW).read_text())
        record["episode_outcomes"] = sorted(episodes_of(folder).values(), key=lambda e: e["seed"])
        evaluations[record["label"]] = record
    pairs = []
    for spec in args.pair:
        a, b = spec.split(":")
        ra, rb = evaluations[a], evaluations[b]
        if ra["task"] != rb["task"]:
            raise SystemExit(f"--pair {spec}: {a} ran {ra['task']}, {b} ran {rb['task']} (no pairs)")
        p = paired_harness(ra["task"], load_cells(out / a), load_cells(out / b), n_boot=2000)
        if p is None:
            raise SystemExit(f"--pair {spec}: no episode seeds in common")
        pairs.append({"a": a, "b": b, "a_model": ra["model"], "b_model": rb["model"], **p.model_dump(mode="json")})
    pooled = []
    for spec in args.pool:  # NAME=A:B,C:D: one McNemar test over the pairs of several tasks
        from polar.statistics import mcnemar_exact

        name, _, specs = spec.partition("=")
        sa, sb = [], []
        for ab in specs.split(","):
            a, b = ab.split(":")
            ea, eb = ({e["seed"]: e["success"] for e in evaluations[x]["episode_outcomes"]} for x in (a, b))
            common = sorted(set(ea) & set(eb))
            sa += [ea[k] for k in common]
            sb += [eb[k] for k in common]
        a_only, b_only, p = mcnemar_exact(sa, sb)
        pooled.append({"name": name, "pairs_of": specs, "pairs": len(sa), "a_successes": sum(sa),
                       "b_successes": sum(sb), "a_only": a_only, "b_only": b_only, "p_value": p})
    repeats = []
    for spec in args.repeat:
        a, b = spec.split(":")
        ea, eb = ({e["seed"]: e for e in evaluations[x]["episode_outcomes"]} for x in (a, b))
        common = sorted(set(ea) & set(eb))
        differ = [s for s in common if ea[s] != eb[s]]
        repeats.append({"a": a, "b": b, "model": evaluations[a]["model"], "episodes": len(common),
                        "a_parallel": evaluations[a]["parallel"], "b_parallel": evaluations[b]["parallel"],
                        "identical": not differ, "differing_seeds": differ})
    result = {"evaluations": evaluations, "paired": pairs, "pooled": pooled, "repeats": repeats}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    for p in pairs:
        print(f"{p['a']} vs {p['b']} ({p['harness']}, {p['pairs']} pairs): {p['a_success']:.3f} vs {p['b_success']:.3f}, "
              f"only {p['a']} {p['a_only']}, only {p['b']} {p['b_only']}, exact McNemar p = {p['p_value']:.4f}")
    for q in pooled:
        print(f"pooled {q['name']} ({q['pairs']} pairs): {q['a_successes']} vs {q['b_successes']}, "
              f"only A {q['a_only']}, only B {q['b_only']}, exact McNemar p = {q['p_value']:.4f}")
    for r in repeats:
        print(f"repeat {r['a']} / {r['b']}: {r['episodes']} episodes, identical={r['identical']} {r['differing_seeds']}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ev = sub.add_parser("eval", help="play one model greedily on held-out seeds")
    ev.add_argument("--out", required=True)
    ev.add_argument("--label", required=True)
    ev.add_argument("--model", required=True, help="a registered name or a .gguf path")
    ev.add_argument("--task", required=True, help="a suite harness id, e.g. minigrid:MiniGrid-UnlockPickup-v0")
    ev.add_argument("--episodes", type=int, default=40)
    ev.add_argument("--parallel", type=int, default=8)
    ev.add_argument("--threads", type=int, default=1)
    ev.add_argument("--port", type=int, default=8051)
    ev.add_argument("--profile", default="student")
    ev.add_argument("--max-decisions", type=int, default=20)
    cp = sub.add_parser("compare", help="paired comparisons and repeats of finished evaluations")
    cp.add_argument("--out", required=True)
    cp.add_argument("--pair", action="append", default=[], help="A:B, two labels on the same task")
    cp.add_argument("--pool", action="append", default=[], help="NAME=A:B,C:D, one test over several tasks' pairs")
    cp.add_argument("--repeat", action="append", default=[], help="A:B, two evaluations of one model")
    cp.add_argument("--json", required=True)
    args = ap.parse_args()
    evaluate_one(args) if args.cmd == "eval" else compare(args)


if __name__ == "__main__":
    main()
