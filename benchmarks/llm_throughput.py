"""Decisions/s and episodes/hour of an LLM arm with 1, 4 and 8 episodes in flight against one
llama-server (goal: 8 at a time >= 3x the decisions/s of 1 at a time), and whether the greedy
decisions are the same every way.

Each arm is the real eval path: `polar.evals.runner.run_cells` on a one-cell suite whose planner
is planners/local.yaml (SmolLM2-135M Q4_1 from its wheel; compact templates) or, with `--model
polar-planner`, planners/polar-planner.yaml (the trained planner, q8_0; student templates), the
decision schema as response_format, litellm, with `server: {engine: llama-server, parallel: K}`;
the cell's episodes then run K at a time (polar.evals.concurrent), each lane keeping to its own
slot. Same model, same episode seeds (DoorKey-8x8, start states of suite seed 0), reply cache
off, temperature 0. The server is started before the clock starts and stopped after each arm,
and its own log gives the profile: prompt tokens evaluated and decoded tokens, with their times.

After each arm, on the same server (same flags, K slots), the raw-ceiling arm sends plain
completions (64 tokens, no grammar, no chat template, no prompt reuse) K at a time: the
decoded tokens/s that batching alone gives on this CPU. Polar's K-in-flight speed-up is read
against that ceiling's (a 2-core CPU cannot batch its way to 3x: see docs/local-llm.md).

    .venv/bin/python benchmarks/llm_throughput.py [--model smollm2-135m|polar-planner] [--episodes 8]
        [--decisions 6] [--slots 1 4 8] [--threads N] [--no-ceiling]

Writes benchmarks/results/llm_throughput.json (llm_throughput_polar_planner.json for the trained
planner; benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import RESULTS, Figure, script_command, write_result  # noqa: E402

GOAL_RATIO = 3.0
# what this CPU allows is the raw ceiling's speed-up (batching alone); Polar's path (chat
# template, grammar, planner, harness, K client threads) should keep most of it
SHARE_GOAL = 0.9
HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"
# the planner profile that plays each model: its templates are the ones the model was made for
PROFILES = {"smollm2-135m": "local", "polar-planner": "polar-planner"}
CEILING_TOKENS = 64  # per plain completion of the raw-ceiling arm
CEILING_PER_LANE = 2  # completions each of the K concurrent lanes sends, one after another
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


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def raw_ceiling(base_url: str, slots: int) -> dict[str, Any]:
    """What the same server does with no Polar in the way: plain completions (no grammar, no
    chat template, no prompt reuse) of CEILING_TOKENS tokens each, `slots` in flight at once,
    each lane sending CEILING_PER_LANE one after another. Decoded tokens/s is the ceiling that
    batching alone allows on this machine, the figure Polar's decisions/s is read against."""
    def lane(j: int) -> int:
        n = 0
        for r in range(CEILING_PER_LANE):
            out = _post(f"{base_url}/completion", {
                "prompt": f"Story number {j * CEILING_PER_LANE + r}: Once upon a time", "n_predict": CEILING_TOKENS,
                "temperature": 0.0, "ignore_eos": True, "cache_prompt": False, "id_slot": j})
            n += int(out["timings"]["predicted_n"])
        return n

    _post(f"{base_url}/completion", {"prompt": "warm up", "n_predict": 4, "cache_prompt": False})
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=slots) as pool:
        tokens = sum(pool.map(lane, range(slots)))
    wall = time.perf_counter() - t0
    return {"completions": slots * CEILING_PER_LANE, "tokens": tokens, "wall_s": round(wall, 2),
            "tokens_per_s": tokens / wall}


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
             "agents": [{"name": "planner", "kind": "planner", "planner": PROFILES[args.model],
                         "overrides": {"server": settings.model_dump(mode="json"), "cache_dir": None,
                                       "record_path": str(work / f"calls-{slots}.jsonl"), "logprobs": False},
                         "budget": {"decisions": args.decisions, "llm_calls": 2 * args.decisions}}],
             "harnesses": [{"id": HARNESS}]}
    try:
        t0 = time.perf_counter()
        summary = run_cells(suite, work / f"k{slots}", progress=False, fresh=True)
        wall = time.perf_counter() - t0
        profile = server_profile(log, since)
        load_after = [round(x, 2) for x in os.getloadavg()]
        ceiling = raw_ceiling(settings.base_url, slots) if args.ceiling else None
    finally:
        serve.stop(settings.host, settings.port)
    episodes = [e for cell in summary.results for e in cell.episodes]
    decisions = sum(len(e.decisions) for e in episodes)
    return {"slots": slots, "episodes": len(episodes), "decisions": decisions,
            "llm_calls": sum(e.llm_calls for e in episodes), "wall_s": round(wall, 2), "ready_s": round(ready_s, 2),
            "decisions_per_s": decisions / wall, "episodes_per_hour": 3600 * len(episodes) / wall,
            "successes": sum(bool(e.success) for e in episodes), "server": profile, "loadavg_after": load_after,
            "ceiling": ceiling, "outcomes": [episode_outcome(e) for e in episodes]}


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
    model = d["model"]
    figs = []
    for k, a in sorted(arms.items()):
        figs.append(Figure(f"{model} on llama-server, {k} episode(s) in flight: decisions/s",
                           round(a["decisions_per_s"], 3), "decisions/s"))
        figs.append(Figure(f"{model} on llama-server, {k} episode(s) in flight: episodes/hour",
                           round(a["episodes_per_hour"], 1), "episodes/h"))
    top = arms[max(arms)]
    # the smollm2 figures keep the names they have always had in the summary table
    of = "" if model == "smollm2-135m" else f" ({model})"
    ratio = top["decisions_per_s"] / one["decisions_per_s"]
    figs.append(Figure(f"llama-server decisions/s, {top['slots']} episodes in flight / 1 at a time{of}",
                       round(ratio, 2), "x", goal=GOAL_RATIO))
    if top.get("ceiling") and one.get("ceiling"):
        for k, a in sorted(arms.items()):
            figs.append(Figure(f"{model} on llama-server, raw ceiling, {k} plain completion(s) in flight: tokens/s",
                               round(a["ceiling"]["tokens_per_s"], 1), "tokens/s"))
        ceiling = top["ceiling"]["tokens_per_s"] / one["ceiling"]["tokens_per_s"]
        figs.append(Figure(f"raw ceiling: llama-server tokens/s, {top['slots']} plain completions in flight / 1{of}",
                           round(ceiling, 2), "x"))
        figs.append(Figure(f"Polar's {top['slots']}-in-flight speed-up as a share of the raw ceiling's "
                           f"({ratio:.2f}x of {ceiling:.2f}x){of}", round(ratio / ceiling, 2), "x", goal=SHARE_GOAL))
    same = sum(not v["episodes_differing"] for v in d["greedy"].values())
    figs.append(Figure(f"arms whose greedy episodes all equal the one-at-a-time arm's{of}",
                       same, f"of {len(d['greedy'])}", goal=len(d["greedy"])))
    return figs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m", choices=sorted(PROFILES),
                    help="SmolLM2-135M Q4_1 (planners/local.yaml) or the trained q8_0 planner (planners/polar-planner.yaml)")
    ap.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                    help="skip the raw-ceiling arm (plain completions, K in flight, after each arm on its server)")
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
              f"({s['prompt_ms'] / 1000:.1f} s), {s['decoded_tokens']:.0f} decoded ({s['decode_ms'] / 1000:.1f} s)"
              + (f"; raw ceiling {a['ceiling']['tokens_per_s']:.0f} tokens/s" if a.get("ceiling") else "")
              + f"; load after {a['loadavg_after']}")
    print(json.dumps(d["greedy"]))
    figs = figures(d)
    for f in figs:
        print(f"{f.what}: {f.value} {f.unit}" + ("" if f.goal is None else f" (goal {f.goal}: {f.passed})"))
    if not args.no_write:
        name = "llm_throughput" if args.model == "smollm2-135m" else f"llm_throughput_{args.model.replace('-', '_')}"
        print(write_result(name, script_command("llm_throughput.py", argv), figs, d, RESULTS))
    return d


if __name__ == "__main__":
    main()
