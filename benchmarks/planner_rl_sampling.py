"""The sampling stage of one planner-RL iteration (`polar llm rl`) with its episodes 1 at a time
vs G at a time against one llama-server, side by side: same recipe, model, tasks and start
states (the run's seed and iteration fix the curriculum's draws and the episode seeds).

Each arm is the real stage, `RLRun.sample` in a fresh run folder: the recipe's model served by
llama-server with `parallel` slots (1, then G), the curriculum's groups played by G agents (one
cell each, `cells_at_once` = the slots), every decision sampled at the recipe's temperature with
its token ids and log-probs, then the group-relative rollouts built and checked against the
trainer's tokenizer. The two arms sample different episodes (llama-server draws a fresh sampler
seed per request); they are compared on decisions/s and sampled tokens/s, not outcomes.

    .venv/bin/python benchmarks/planner_rl_sampling.py evals/planner-training/rl-seed2.yaml [--lanes 1 4]

Writes benchmarks/results/planner_rl_sampling.json (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import RESULTS, Figure, script_command, write_result  # noqa: E402

KEEP = ("episodes", "decisions", "env_steps", "prompt_tokens", "completion_tokens", "success", "wall_s", "cpu_s",
        "rollouts", "groups_used", "groups_dropped_zero_std", "calls_without_sampled_ids", "tokenizer_probe")


def run_arm(recipe: Any, lanes: int, out: Path) -> dict[str, Any]:
    """The sampling stage of iteration 1 with `lanes` slots; its record plus rates."""
    from polar.evals.planner_rl import RLRun

    cfg = recipe.model_copy(update={"engine": "llama-server", "parallel": lanes, "iterations": 1,
                                    "eval_start": False, "eval_every": 0})
    t0 = time.perf_counter()
    info = RLRun(cfg, out / f"lanes-{lanes}", progress=False).sample(1)
    arm = {"lanes": lanes, **{k: info.get(k) for k in KEEP}, "stage_wall_s": time.perf_counter() - t0}
    arm["decisions_per_s"] = arm["decisions"] / arm["wall_s"]
    arm["sampled_tokens_per_s"] = arm["completion_tokens"] / arm["wall_s"]
    arm["s_per_decision"] = arm["wall_s"] / max(arm["decisions"], 1)
    print(f"{lanes} lane(s): {arm['episodes']} episodes, {arm['decisions']} decisions, {arm['completion_tokens']} "
          f"sampled tokens in {arm['wall_s']:.0f} s = {arm['decisions_per_s']:.3f} decisions/s, "
          f"{arm['sampled_tokens_per_s']:.1f} sampled tokens/s; success {arm['success']:.2f}; "
          f"{arm['rollouts']} rollouts scored", flush=True)
    return arm


def figures(d: dict[str, Any]) -> list[Figure]:
    """Decisions/s and sampled tokens/s per arm, and the ratio of the most lanes to the fewest."""
    arms = d["arms"]
    one, top = min(arms, key=lambda a: a["lanes"]), max(arms, key=lambda a: a["lanes"])
    figs = [Figure(f"{d['model']}, one RL iteration's sampling, {a['lanes']} episode(s) at a time: decisions/s",
                   round(a["decisions"] / a["wall_s"], 3), "decisions/s") for a in arms]
    figs += [Figure(f"{d['model']}, {a['lanes']} episode(s) at a time: sampled tokens/s",
                    round(a["completion_tokens"] / a["wall_s"], 2), "tokens/s") for a in arms]
    figs.append(Figure(f"sampling decisions/s, {top['lanes']} episodes at a time / {one['lanes']} at a time "
                       "(2 cores: <= 2x expected)",
                       round((top["decisions"] / top["wall_s"]) / (one["decisions"] / one["wall_s"]), 2), "x"))
    return figs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("recipe", help="a `polar llm rl` recipe (its model, tasks, groups, G, temperature, threads)")
    ap.add_argument("--lanes", type=int, nargs="+", default=None, help="slots per arm (default: 1 and the recipe's G)")
    ap.add_argument("--port", type=int, default=None, help="the server's port (default: the recipe's)")
    ap.add_argument("--groups", type=int, default=None, help="groups of the iteration (default: the recipe's)")
    ap.add_argument("--no-write", action="store_true", help="print, do not write the result file")
    args = ap.parse_args(argv)
    from polar.config import load_yaml
    from polar.evals.planner_rl import RLConfig
    from polar.llm.llama_server import ensure_binary

    recipe = load_yaml(args.recipe, RLConfig)
    if args.port:
        recipe = recipe.model_copy(update={"port": args.port})
    if args.groups:
        recipe = recipe.model_copy(update={"groups": args.groups})
    lanes = args.lanes or [1, recipe.group_size]
    ensure_binary()  # a cold build is not part of any arm
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="polar-rl-sampling-") as tmp:
        arms = [run_arm(recipe, k, Path(tmp)) for k in lanes]
    d = {"recipe": args.recipe, "model": recipe.model, "tasks": [t.label for t in recipe.tasks],
         "group_size": recipe.group_size, "groups": recipe.groups, "temperature": recipe.temperature,
         "max_decisions": recipe.max_decisions, "server_threads": recipe.threads, "loadavg_before": load_before,
         "loadavg_after": [round(x, 2) for x in os.getloadavg()], "arms": arms}
    figs = figures(d)
    for f in figs:
        print(f"{f.what}: {f.value} {f.unit}")
    if not args.no_write:
        print(write_result("planner_rl_sampling", script_command("planner_rl_sampling.py", argv), figs, d, RESULTS))
    return d


if __name__ == "__main__":
    main()
