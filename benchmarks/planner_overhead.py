"""Planner overhead per decision, excluding model latency (goal: under 5 ms).

Measured side by side in one run, against the scripted OpenAI-compatible server on
127.0.0.1 (it answers at once, so its own time is ~0):

  raw_http     the same chat request sent with http.client: the transport floor
  openai_sdk   the same request through the openai SDK that litellm wraps (httpx + pydantic)
  live         LLMPlanner.decide() through litellm to the server (cache off)
  cached       LLMPlanner.decide() served from the replay cache (no request at all)
  render / validate   the planner's own steps alone (templates; parse + checks)

Planner overhead = cached (everything Polar does around a model call: render, cache key,
budget, validation, the JSONL record), and live - raw_http (the same plus litellm's client
cost). Usage:

    .venv/bin/python benchmarks/planner_overhead.py [--n 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.llm_server when run as a script

import pytest  # noqa: E402
from bench_results import Figure, script_command, write_result  # noqa: E402

DECISION = {"kind": "skill", "skill": "open_door", "args": {"color": "yellow"}, "reason": "carrying the key"}


def timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def summary(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {"median_ms": statistics.median(s), "p90_ms": s[int(0.9 * (len(s) - 1))], "mean_ms": statistics.fmean(s)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="decisions per measurement")
    args = ap.parse_args(argv)
    from polar.planners.base import PlannerContext
    from polar.planners.llm import LLMPlanner
    from polar.planners.profile import load_planner_profile
    from tests.llm_server import Reply, ScriptedLLMServer

    ctx = PlannerContext.model_validate_json((ROOT / "prompts/examples/doorkey_context.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="polar-bench-"))
    results: dict[str, Any] = {"n": args.n}
    with ScriptedLLMServer(default=Reply.decision(DECISION, usage=(800, 30))) as server:
        def profile(**kw: Any) -> Any:
            base = {"api_base": server.url, "model": "openai/bench", "budgets": {"max_calls": None},
                    "record_path": str(work / "calls.jsonl"), "cache_dir": None}
            return load_planner_profile(ROOT / "planners/local-test.yaml", {**base, **kw})

        live = LLMPlanner(profile())
        cached = LLMPlanner(profile(cache_dir=str(work / "cache")))
        cached.decide(ctx)  # fill the cache (and warm litellm's import and connection pool)
        for _ in range(10):
            live.decide(ctx)

        body = json.dumps({"model": "bench", "messages": live.messages(ctx), "temperature": 0.0}).encode()
        url = urlparse(server.url)
        conn = http.client.HTTPConnection(url.hostname, url.port)

        def raw() -> None:
            conn.request("POST", url.path + "/chat/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()

        import openai  # a litellm dependency: separates litellm's own cost from the SDK's

        sdk = openai.OpenAI(base_url=server.url, api_key="not-needed", max_retries=0)
        messages = live.messages(ctx)

        def via_sdk() -> None:
            sdk.chat.completions.create(model="bench", messages=messages, temperature=0.0, max_tokens=512)

        via_sdk()
        reply = json.dumps({"decision": DECISION})
        paths = {
            "raw_http": raw, "openai_sdk": via_sdk, "live": lambda: live.decide(ctx),
            "cached": lambda: cached.decide(ctx), "render": lambda: live.messages(ctx),
            "validate": lambda: live.validate(reply, ctx),
        }
        # Interleaved round-robin: every path sees the same machine load (this box is shared).
        samples: dict[str, list[float]] = {k: [] for k in paths}
        before = server.request_count
        for _ in range(args.n):
            for k, fn in paths.items():
                samples[k] += timed(fn, 1)
        # raw_http, openai_sdk and live send one request each; cached must send none.
        assert server.request_count - before == 3 * args.n, "a cached decision sent a request"
        assert all(c.cached for c in cached.last_calls)
        for k, ms in samples.items():
            results[k] = summary(ms)
        conn.close()

    med = {k: v["median_ms"] for k, v in results.items() if isinstance(v, dict)}
    results["overhead_cached_ms"] = med["cached"]
    results["overhead_live_minus_raw_ms"] = med["live"] - med["raw_http"]
    results["ratio_live_over_raw"] = med["live"] / med["raw_http"]
    results["litellm_over_sdk_ms"] = med["live"] - med["openai_sdk"] - med["render"] - med["validate"]
    results["goal_ms"] = 5.0
    print(f"{'path':<10} {'median ms':>10} {'p90 ms':>10}")
    for k in ("raw_http", "openai_sdk", "live", "cached", "render", "validate"):
        print(f"{k:<10} {results[k]['median_ms']:>10.3f} {results[k]['p90_ms']:>10.3f}")
    print(f"planner overhead (cache hit, no model):       {results['overhead_cached_ms']:.3f} ms  (goal < 5 ms)")
    print(f"client+planner overhead (live - raw HTTP):    {results['overhead_live_minus_raw_ms']:.3f} ms  "
          f"(live/raw = {results['ratio_live_over_raw']:.2f}x)")
    print(f"of which litellm's own layer (live - sdk - render - validate): {results['litellm_over_sdk_ms']:.3f} ms")
    write_result("planner_overhead", script_command("planner_overhead.py", argv), figures(results), results)
    return results


def figures(results: dict[str, Any]) -> list[Figure]:
    return [
        Figure("planner overhead per decision, cache hit (no model)",
               round(results["overhead_cached_ms"], 3), "ms", results["goal_ms"], "lower"),
        Figure("planner overhead per decision through litellm (live - raw HTTP)",
               round(results["overhead_live_minus_raw_ms"], 3), "ms"),
        Figure("LLMPlanner.decide() through litellm to a local server that answers at once, median",
               round(results["live"]["median_ms"], 3), "ms"),
    ]


@pytest.mark.bench
def test_planner_overhead() -> None:
    results = main(["--n", "200"])
    assert results["overhead_cached_ms"] > 0


if __name__ == "__main__":
    main()
