"""Latency of a local model planning DoorKey: decisions/s and tokens/s, with and without
prefix reuse (goal: median <= 1.5 s per decision on SmolLM2-135M with reuse).

The model is served by a real engine (llama.cpp's server, started here on a free port and
stopped at the end) and called through the real planner path (planners/local.yaml: compact
templates, the decision schema as response_format, litellm), after the planner's warm-up.
The prompts are real: the planner contexts met by the symbolic planner on DoorKey-8x8
episodes (seeds 0..N-1), each asked of the model (not executed).

Side by side, in alternating blocks over the same contexts:
  reuse          the prompts as the planner sends them: consecutive decisions share the system
                 prompt and the skill list, which llama.cpp keeps evaluated (prefix reuse)
  no-reuse       the same prompts, each opened by a fresh random tag, so no prefix matches
  reuse+logprobs as `reuse`, with token log-probs returned (what planners/local.yaml records):
                 llama-cpp-python computes them in Python, sorting the 49k-token vocabulary
                 for every generated token
The first two leave log-probs off, so they time the model.
Plus two micro-measurements: prefill tokens/s (a fresh long prompt, 1 token out) and decode
tokens/s (a short prompt, 48 free tokens out). Usage:

    .venv/bin/python benchmarks/llm_latency.py [--model smollm2-135m] [--seeds 4] [--rounds 2]

Writes benchmarks/results/llm_latency.json (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_results import RESULTS, Figure, script_command, write_result  # noqa: E402

from polar.planners.base import PlannerContext  # noqa: E402

GOAL_MEDIAN_S = 1.5


def doorkey_contexts(seeds: int, harness: str) -> list[PlannerContext]:
    """The contexts the symbolic planner decides from on `seeds` episodes."""
    from polar.agent import Agent
    from polar.harnesses.registry import make_harness
    from polar.planners.symbolic import SymbolicPlanner
    from polar.skills.store import SkillLibrary

    seen: list[PlannerContext] = []

    class Recording(SymbolicPlanner):
        def decide(self, context: PlannerContext):  # type: ignore[override]
            seen.append(context)
            return super().decide(context)

    agent = Agent(Recording(), SkillLibrary())
    for seed in range(seeds):
        with make_harness(harness) as h:
            agent.run("use the key to open the door and then get to the goal", h, seed=seed)
    return seen


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    lat = sorted(r["latency_s"] for r in rows)
    total = sum(lat)
    return {
        "decisions": len(rows), "median_s": statistics.median(lat), "mean_s": statistics.fmean(lat),
        "p90_s": lat[int(0.9 * (len(lat) - 1))], "decisions_per_s": len(rows) / total,
        "prompt_tokens_mean": statistics.fmean(r["prompt_tokens"] for r in rows),
        "completion_tokens_mean": statistics.fmean(r["completion_tokens"] for r in rows),
        "prompt_tokens_per_s": sum(r["prompt_tokens"] for r in rows) / total,
        "completion_tokens_per_s": sum(r["completion_tokens"] for r in rows) / total,
        "valid": sum(r["valid"] for r in rows) / len(rows),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--harness", default="minigrid:MiniGrid-DoorKey-8x8-v0")
    ap.add_argument("--seeds", type=int, default=4, help="symbolic episodes whose contexts are asked")
    ap.add_argument("--rounds", type=int, default=2, help="alternating reuse / no-reuse blocks per arm")
    ap.add_argument("--observation", default="predicates", choices=["predicates", "view"])
    ap.add_argument("--threads", type=int, default=None,
                    help="the server's CPU threads (default: the engine default, all cores but one)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of llm_latency.json")
    args = ap.parse_args(argv)

    from polar.llm import serve
    from polar.planners.llm import LLMPlanner
    from polar.planners.profile import load_planner_profile
    from tests.llm.engine import free_port

    contexts = doorkey_contexts(args.seeds, args.harness)
    port = free_port()
    settings = serve.ServerSettings(model=args.model, port=port, threads=args.threads)
    t0 = time.perf_counter()
    state = serve.start(settings, announce=print)
    try:
        server_ready_s = time.perf_counter() - t0
        over = {"server": settings.model_dump(), "api_base": settings.api_base,
                "model": f"openai/{state['served_name']}", "cache_dir": None, "record_path": None,
                "observation": args.observation, "budgets": {"max_calls": None}}
        planners = {lp: LLMPlanner(load_planner_profile("local", {**over, "logprobs": lp})) for lp in (False, True)}
        profile, client = planners[False].profile, planners[False].client

        def ask(ctx: PlannerContext, tag: str | None, logprobs: bool = False) -> dict[str, Any]:
            planner = planners[logprobs]
            messages = planner.messages(ctx)
            if tag is not None:
                messages = [{**messages[0], "content": f"[{tag}] {messages[0]['content']}"}, *messages[1:]]
            resp = planner.client.complete(messages, response_format=planner.response_format(ctx),
                                           check=lambda text: planner.validate(text, ctx))
            return {"latency_s": resp.call.latency_s, "prompt_tokens": resp.call.prompt_tokens,
                    "completion_tokens": resp.call.completion_tokens, "valid": resp.valid,
                    "reply": resp.content}

        cold = ask(contexts[0], None)  # the very first call: weights paged in, nothing cached
        for p in planners.values():
            p.reset()  # the planner's warm-up (litellm import, one 1-token request)
        rows: dict[str, list[dict[str, Any]]] = {"reuse": [], "no-reuse": [], "reuse+logprobs": []}
        for _ in range(args.rounds):
            for arm in rows:
                for ctx in contexts:
                    rows[arm].append(ask(ctx, uuid.uuid4().hex[:12] if arm == "no-reuse" else None,
                                         logprobs=arm == "reuse+logprobs"))
                print(f"  {arm}: {len(rows[arm])} decisions, median {statistics.median(r['latency_s'] for r in rows[arm]):.2f} s",
                      flush=True)
        # micro-measurements: prefill and decode speed
        long_prompt = " ".join(f"{uuid.uuid4().hex[:6]} item {i}." for i in range(120))
        from polar.llm.client import litellm_module

        litellm = litellm_module()  # already imported by the warm-up

        def raw(messages: list[dict[str, Any]], max_tokens: int) -> tuple[float, Any]:
            t = time.perf_counter()
            r = litellm.completion(model=profile.model, api_base=profile.api_base, api_key="not-needed",
                                   messages=messages, max_tokens=max_tokens, temperature=0.0)
            return time.perf_counter() - t, r.usage

        pf_s, pf_usage = raw([{"role": "user", "content": long_prompt}], 1)
        dec_s, dec_usage = raw([{"role": "user", "content": "Write a long story about a robot."}], 48)
        prefill = {"prompt_tokens": pf_usage.prompt_tokens, "seconds": pf_s,
                   "prompt_tokens_per_s": pf_usage.prompt_tokens / pf_s}
        decode = {"completion_tokens": dec_usage.completion_tokens, "seconds": dec_s,
                  "completion_tokens_per_s": dec_usage.completion_tokens / dec_s}
    finally:
        serve.stop(settings.host, port)

    reuse, fresh, logp = _stats(rows["reuse"]), _stats(rows["no-reuse"]), _stats(rows["reuse+logprobs"])
    result = {
        "model": args.model, "model_source": state.get("model_source"), "engine": "llamacpp",
        "threads": serve.engine_threads(settings),
        "harness": args.harness, "observation": args.observation, "contexts": len(contexts),
        "server_ready_s": server_ready_s, "warmup_s": client.warmup_s, "cold_first_call": cold,
        "reuse": reuse, "no_reuse": fresh, "reuse_logprobs": logp,
        "no_reuse_over_reuse_median": fresh["median_s"] / reuse["median_s"],
        "logprobs_over_reuse_median": logp["median_s"] / reuse["median_s"],
        "replies": sorted({r["reply"] for r in rows["reuse"]}),
        "load_average_1m_end": os.getloadavg()[0],
        "prefill": prefill, "decode": decode, "goal_median_s": GOAL_MEDIAN_S,
        "goal_met": reuse["median_s"] <= GOAL_MEDIAN_S,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    out = write_result("llm_latency", script_command("llm_latency.py", argv), figures(result), result,
                       results_dir=args.results)
    print(f"\n{args.model} on {args.harness} ({args.observation}), {len(contexts)} contexts x {args.rounds} rounds")
    for name, s in (("reuse", reuse), ("no-reuse", fresh), ("reuse+logprobs", logp)):
        print(f"  {name:14s} median {s['median_s']:.2f} s  p90 {s['p90_s']:.2f} s  {s['decisions_per_s']:.2f} decisions/s  "
              f"prompt {s['prompt_tokens_mean']:.0f} tok ({s['prompt_tokens_per_s']:.0f}/s)  "
              f"completion {s['completion_tokens_mean']:.0f} tok ({s['completion_tokens_per_s']:.1f}/s)  valid {s['valid']:.0%}")
    print(f"  no-reuse / reuse median: {result['no_reuse_over_reuse_median']:.2f}x;  with log-probs / without: "
          f"{result['logprobs_over_reuse_median']:.2f}x;  cold first call "
          f"{cold['latency_s']:.2f} s;  prefill {prefill['prompt_tokens_per_s']:.0f} tok/s;  "
          f"decode {decode['completion_tokens_per_s']:.1f} tok/s;  goal (median <= 1.5 s with reuse): "
          f"{'met' if result['goal_met'] else 'NOT met'}")
    print(f"wrote {out}")
    return result


def figures(result: dict[str, Any]) -> list[Figure]:
    """The goal (median seconds per decision with prefix reuse) and, for scale, the other arms,
    the reuse speed-up, the engine's prefill and decode speed and the share of valid replies."""
    threads = f", {result['threads']} thread{'s' * (result['threads'] > 1)}" if "threads" in result else ""
    model = f"{result['model']} ({result['engine']}{threads})"
    arms = {"reuse": "prefix reuse", "no_reuse": "no reuse", "reuse_logprobs": "prefix reuse + log-probs"}
    figs = [Figure(f"{model} median s per DoorKey decision, {label}", round(result[arm]["median_s"], 2), "s",
                   GOAL_MEDIAN_S if arm == "reuse" else None, "lower") for arm, label in arms.items()]
    figs += [
        Figure(f"{model} median s per decision, no reuse / prefix reuse",
               round(result["no_reuse_over_reuse_median"], 2), "x"),
        Figure(f"{model} decisions/s, prefix reuse", round(result["reuse"]["decisions_per_s"], 3), "decisions/s"),
        Figure(f"{model} prompt tokens/s (prefill, a fresh {result['prefill']['prompt_tokens']}-token prompt)",
               round(result["prefill"]["prompt_tokens_per_s"], 1), "tokens/s"),
        Figure(f"{model} completion tokens/s (decode, {result['decode']['completion_tokens']} tokens)",
               round(result["decode"]["completion_tokens_per_s"], 1), "tokens/s"),
        Figure(f"{model} schema-valid replies, lowest of the three arms",
               min(result[arm]["valid"] for arm in arms), "rate"),
    ]
    return figs


if __name__ == "__main__":
    main()
