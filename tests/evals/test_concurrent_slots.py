"""K episodes in flight keep to K slots: each lane's planner sends llama-server's `id_slot`
(its lane's number) with every request, so an episode's consecutive prompts reuse its own
slot's evaluated prefix instead of landing on a slot that holds another episode's. A real eval
run (`run_cells`, four lanes) against a real HTTP server through litellm."""

from __future__ import annotations

from polar.evals.runner import run_cells
from polar.evals.suite import load_suite
from tests.llm_server import Reply, ScriptedLLMServer

HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"


def test_each_lane_sends_its_own_slot_with_every_request(tmp_path):
    turn = Reply.decision({"kind": "skill", "skill": "left", "args": {}})
    with ScriptedLLMServer(default=turn, model="smollm2-135m") as server:
        port = int(server.url.split(":")[-1].split("/")[0])
        server_block = {"model": "smollm2-135m", "engine": "llama-server", "parallel": 4, "port": port,
                        "attach": True}  # the scripted server stands in for llama-server's four slots
        suite = load_suite({
            "name": "slots", "episodes": 8, "workers": 0, "trace": 0, "seeds": [0],
            "agents": [{"name": "llm", "kind": "planner", "planner": "local",
                        "overrides": {"server": server_block, "cache_dir": None, "logprobs": False,
                                      "tokenizer": "none", "warmup": "none",
                                      "record_path": str(tmp_path / "calls.jsonl")},
                        "budget": {"decisions": 2}}],
            "harnesses": [{"id": HARNESS}]})
        summary = run_cells(suite, tmp_path / "out", progress=False)
        slots = [r.body.get("id_slot") for r in server.requests if r.path.endswith("/chat/completions")]
    episodes = summary.results[0].episodes
    assert len(episodes) == 8 and all(len(e.decisions) == 2 for e in episodes), [e.failure_detail for e in episodes]
    assert len(slots) == 16 and set(slots) == {0, 1, 2, 3}, slots  # every request pinned, every lane used
