"""Decisions/s and episodes/hour of an LLM arm with 1, 4 and 8 episodes in flight against one
llama-server (goal: 8 at a time >= 3x the decisions/s of 1 at a time), and whether the greedy
decisions are the same every way.

Each arm is the real eval path: `polar.evals.runner.run_cells` on a one-cell suite whose planner
is planners/local.yaml (SmolLM2-135M from its wheel; compact templates, the decision schema as
response_format, litellm) with `server: {engine: llama-server, parallel: K}`; the cell's episodes
then run K at a time (polar.evals.concurrent), each decision a request to the server's K slots.
Same model, same episode seeds (DoorKey-8x8, start states of suite seed 0), reply cache off,
temperature 0. The server is started before the clock starts and stopped after each arm, and
its own log gives the profile: prompt tokens evaluated and decoded tokens, with their times.

    .venv/bin/python benchmarks/llm_throughput.py [--episodes 8] [--decisions 6] [--slots 1 4 8]

Writes benchmarks/results/llm_throughput.json (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import RESULTS, Figure, script_command, write_result  # noqa: E402

GOAL_RATIO = 3.0
HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"
# llama-server's per-request timing lines: "... print_timing: id  3 | task 0 | prompt eval time =
# 746.03 ms /    34 tokens (...)" and "... |        eval time =     958.60 ms /    20 tokens (...)"
_TIMING = re.compile(r"\| +(prompt eval|eval) time = +([\d.]+) ms / +(\d+) tokens")


def server_profile(log: Path, since: int) -> dict[str, float]:
    """Prompt tokens evaluated and tokens decoded, and their summed times (a slot's own time:
    with K slots in one batch the times overlap), from the log written after byte `since`."""
    text = log.read_bytes()[since:].decode(errors="replace")
    out = {"prompt_tokens": 0.0, "prompt_ms": 0.0, "decoded_tokens": 0.0, "decode_ms": 0.0, "requests": 0.0}
    for kind, ms, n in _TIMING.findall(text):
        key = "prompt" if kind == "prompt eval" else "decode"
        out[f"{key}_ms"] += float(ms)
        out["prompt_tokens" if key == "prompt" else "decoded_tokens"] += int(n)
        out["requests"] += key == "decode"
    return out


def episode_outcome(e: Any) -> dict[str, Any]:
    """What greedy decoding decided in an episode, and what came of it."""
    return {"decisions": [d.decision for d in e.decisions], "success": e.success,
            "return": round(e.episode_return, 6), "env_steps": e.env_steps}


def run_arm(slots: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from polar.evals.runner import run_cells
    from polar.llm import serve

    settings = serve.ServerSettings(model=args.model, engine="llama-server", port=args.port, parallel=slots,
                                    threads=args.threads)
    serve.stop(settings.host, settings.port)
    t0 = time.perf_counter()
    serve.ensure_server(settings, lambda m: None, lasting=False)
    ready_s = time.perf_counter() - t0
    log = Path(str(serve.read_state(settings.host, settings.port)["log"]))
    since = log.stat().st_size
    suite = {"name": f"throughput-{slots}", "episodes": args.episodes, "workers": 0, "trace": 0, "seeds": [0],
             "agents": [{"name": "smollm2", "kind": "planner", "planner": "local",
                         "overrides": {"server": settings.model_dump(mode="json"), "cache_dir": None,
                                       "record_path": str(work / f"calls-{slots}.jsonl"), "logprobs": False},
                         "budget": {"decisions": args.decisions, "llm_calls": 2 * args.decisions}}],
             "harnesses": [{"id": HARNESS}]}
    try:
        t0 = time.perf_counter()
        summary = run_cells(suite, work / f"k{slots}", progress=False, fresh=True)
        wall = time.perf_counter() - t0
        profile = server_profile(log, since)
    finally:
        serve.stop(settings.host, settings.port)
    episodes = [e for cell in summary.results for e in cell.episodes]
    decisions = sum(len(e.decisions) for e in episodes)
    return {"slots": slots, "episodes": len(episodes), "decisions": decisions,
            "llm_calls": sum(e.llm_calls for e in episodes), "wall_s": round(wall, 2), "ready_s": round(ready_s, 2),
            "decisions_per_s": decisions / wall, "episodes_per_hour": 3600 * len(episodes) / wall,
            "successes": sum(bool(e.success) for e in episodes), "server": profile,
            "outcomes": [episode_outcome(e) for e in episodes]}


def compare_outcomes(arms: list[dict[str, Any]]) -> dict[str, Any]:
    """Per arm, the episodes and decisions that differ from the one-at-a-time arm's."""
    base = arms[0]["outcomes"]
    out = {}
    for arm in arms[1:]:
        eps = [i for i, (a, b) in enumerate(zip(base, arm["outcomes"], strict=True)) if a != b]
        pairs = [(x, y) for a, b in zip(base, arm["outcomes"], strict=True)
                 for x, y in zip(a["decisions"], b["decisions"], strict=False)]
        out[str(arm["slots"])] = {"episodes_differing": eps, "decisions_compared": len(pairs),
                                  "decisions_differing": sum(x != y for x, y in pairs)}
    return out


def figures(d: dict[str, Any]) -> list[Figure]:
    arms = {a["slots"]: a for a in d["arms"]}
    one = arms[min(arms)]
    figs = []
    for k, a in sorted(arms.items()):
        figs.append(Figure(f"smollm2-135m on llama-server, {k} episode(s) in flight: decisions/s",
                           round(a["decisions_per_s"], 3), "decisions/s"))
        figs.append(Figure(f"smollm2-135m on llama-server, {k} episode(s) in flight: episodes/hour",
                           round(a["episodes_per_hour"], 1), "episodes/h"))
    top = arms[max(arms)]
    figs.append(Figure(f"llama-server decisions/s, {top['slots']} episodes in flight / 1 at a time",
                       round(top["decisions_per_s"] / one["decisions_per_s"], 2), "x", goal=GOAL_RATIO))
    same = sum(not v["episodes_differing"] for v in d["greedy"].values())
    figs.append(Figure("arms whose greedy episodes all equal the one-at-a-time arm's",
                       same, f"of {len(d['greedy'])}", goal=len(d["greedy"])))
    return figs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--decisions", type=int, default=6, help="decision budget per episode")
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--threads", type=int, default=None, help="the server's CPU threads (default: all cores but one)")
    ap.add_argument("--port", type=int, default=8061)
    ap.add_argument("--no-write", action="store_true", help="print, do not write the result file")
    args = ap.parse_args(argv)
    from polar.llm.llama_server import binary_path, ensure_binary
    from polar.llm.serve import ServerSettings, engine_threads

    ensure_binary()  # a cold build is not part of any arm
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="polar-throughput-") as tmp:
        arms = [run_arm(k, args, Path(tmp)) for k in args.slots]
    d = {"model": args.model, "harness": HARNESS, "episodes": args.episodes, "decision_budget": args.decisions,
         "threads": engine_threads(ServerSettings(model=args.model, threads=args.threads)),
         "binary": binary_path().parent.name, "loadavg_before": load_before, "arms": arms}
    d["greedy"] = compare_outcomes(arms)
    for a in arms:
        s = a["server"]
        print(f"{a['slots']} in flight: {a['decisions']} decisions in {a['wall_s']} s = {a['decisions_per_s']:.2f}/s, "
              f"{a['episodes_per_hour']:.0f} episodes/h; server: {s['prompt_tokens']:.0f} prompt tokens "
              f"({s['prompt_ms'] / 1000:.1f} s), {s['decoded_tokens']:.0f} decoded ({s['decode_ms'] / 1000:.1f} s)")
    print(json.dumps(d["greedy"]))
    figs = figures(d)
    for f in figs:
        print(f"{f.what}: {f.value} {f.unit}" + ("" if f.goal is None else f" (goal {f.goal}: {f.passed})"))
    if not args.no_write:
        print(write_result("llm_throughput", script_command("llm_throughput.py", argv), figs, d, RESULTS))
    return d


if __name__ == "__main__":
    main()
