"""Greedy decisions are the same one at a time and K at a time on llama-server, for real.

Twelve recorded DoorKey-8x8 planner requests (SmolLM2-135M, four episodes of three decisions:
the compact templates and the decision schema as response_format, as planners/local-slots.yaml
sends them; tests/llm/data/doorkey_decisions.jsonl) are replayed at temperature 0 against
llama-server started exactly as Polar starts it: one at a time against one slot, then the four
episodes at once against four slots, each episode keeping to its own slot as a lane does. The
replies and every token's log-prob must be bit-for-bit equal. Measured without Polar's
determinism settings (docs/local-llm.md, "Greedy decisions"): with llama.cpp's defaults 8 to 12
of the 12 log-prob vectors and 2 to 3 of the replies differ; with the server flags but a binary
built with llamafile's sgemm, 3 log-prob vectors and 1 reply."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

from polar.llm import serve
from tests.llm.engine import free_port, require_model
from tests.llm.test_llama_server import require_llama_server

DATA = Path(__file__).resolve().parent / "data" / "doorkey_decisions.jsonl"


def _decide(base_url: str, call: dict[str, Any], slot: int | None) -> tuple[str, list[float]]:
    body = {"model": "smollm2-135m", "messages": call["messages"], **call["params"], "logprobs": True,
            "top_logprobs": 1, **({} if slot is None else {"id_slot": slot})}
    req = Request(f"{base_url}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urlopen(req, timeout=600) as r:
        choice = json.loads(r.read())["choices"][0]
    return choice["message"]["content"], [t["logprob"] for t in choice["logprobs"]["content"]]


def _replay(calls: list[dict[str, Any]], parallel: int) -> list[tuple[str, list[float]]]:
    """Each episode's requests in order; `parallel` episodes at a time, episode e on slot e % K."""
    port = free_port()
    s = serve.ServerSettings(model="smollm2-135m", engine="llama-server", port=port, parallel=parallel, threads=1)
    serve.start(s, announce=lambda _: None)
    out: dict[int, tuple[str, list[float]]] = {}
    episodes: dict[int, list[int]] = {}
    for i, c in enumerate(calls):
        episodes.setdefault(c["episode"], []).append(i)

    def play(e: int) -> None:
        for i in episodes[e]:
            out[i] = _decide(s.base_url, calls[i], e % parallel if parallel > 1 else None)

    try:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            list(pool.map(play, sorted(episodes)))
    finally:
        serve.stop(s.host, s.port)
    return [out[i] for i in range(len(calls))]


def test_recorded_decisions_are_bit_for_bit_the_same_one_and_four_at_a_time():
    require_model("smollm2-135m")
    require_llama_server()
    calls = [json.loads(line) for line in DATA.read_text().splitlines()]
    one = _replay(calls, 1)
    four = _replay(calls, 4)
    replies = [i for i, (a, b) in enumerate(zip(one, four, strict=True)) if a[0] != b[0]]
    logprobs = [i for i, (a, b) in enumerate(zip(one, four, strict=True)) if a[1] != b[1]]
    assert not replies and not logprobs, f"of {len(calls)}, replies differ at {replies}, log-probs at {logprobs}"
