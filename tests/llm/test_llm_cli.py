"""`polar llm export` and `polar serve-llm` through the real CLI."""

import json
import subprocess
import sys

from typer.testing import CliRunner

from polar.commands.app import app
from polar.episode import EpisodeRecord
from polar.llm.record import CallRecord, CallRecorder

runner = CliRunner()


def test_serve_llm_without_vllm_says_what_to_install():
    proc = subprocess.run([sys.executable, "-m", "polar", "serve-llm", "--engine", "vllm",
                           "Qwen/Qwen2.5-0.5B-Instruct"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "ServeError" in proc.stderr and "pip install 'polar[vllm]'" in proc.stderr
    # a hub id is not a local model: only vLLM fetches one
    proc = subprocess.run([sys.executable, "-m", "polar", "serve-llm", "Qwen/Qwen2.5-0.5B-Instruct"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "served only by --engine vllm" in proc.stderr


def test_export_skips_frozen_invalid_and_duplicate_calls(tmp_path):
    rec = CallRecorder(tmp_path / "calls.jsonl")
    base = {"time": 0.0, "model": "openai/x", "messages": [{"role": "user", "content": "q"}]}
    rec.write(CallRecord(call_id="1", reply="good", valid=True, cache_key="k1", **base))
    rec.write(CallRecord(call_id="2", reply="good", valid=True, cache_key="k1", cached=True, **base))
    rec.write(CallRecord(call_id="3", reply="bad", valid=False, cache_key="k2", **base))
    rec.write(CallRecord(call_id="4", reply="helper", frozen=True, role="helper", cache_key="k3", **base))
    rec.write(CallRecord(call_id="5", reply="crit", role="critic", cache_key="k4", **base))
    out = runner.invoke(app, ["llm", "export", str(tmp_path / "calls.jsonl"), "--out", str(tmp_path / "d.jsonl")])
    assert out.exit_code == 0, out.output
    assert "wrote 2 examples" in out.output and "frozen 1" in out.output and "duplicate 1" in out.output
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert lines[0]["messages"] == [{"role": "user", "content": "q"}, {"role": "assistant", "content": "good"}]
    out = runner.invoke(app, ["llm", "export", str(tmp_path / "calls.jsonl"), "--out", str(tmp_path / "p.jsonl"),
                              "--role", "planner"])
    assert "wrote 1 examples" in out.output


def test_export_keeps_only_successful_episodes_when_asked(tmp_path):
    rec = CallRecorder(tmp_path / "calls.jsonl")
    base = {"time": 0.0, "model": "openai/x", "messages": [{"role": "user", "content": "q"}], "valid": True}
    rec.write(CallRecord(call_id="1", episode_id="won", reply="a", cache_key="k1", **base))
    rec.write(CallRecord(call_id="2", episode_id="lost", reply="b", cache_key="k2", **base))
    for ep, ok in (("won", True), ("lost", False)):
        EpisodeRecord(episode_id=ep, agent="planner:llm", harness_id="keydoor", task="t", seed=0, success=ok,
                      episode_return=float(ok), env_steps=3, terminated=ok, truncated=not ok
                      ).save(tmp_path / "episodes" / f"{ep}.json")
    out = runner.invoke(app, ["llm", "export", str(tmp_path / "calls.jsonl"), "--out", str(tmp_path / "d.jsonl"),
                              "--episodes", str(tmp_path / "episodes")])
    assert out.exit_code == 0, out.output
    assert "wrote 1 examples" in out.output and "episode-not-successful 1" in out.output
    [line] = (tmp_path / "d.jsonl").read_text().splitlines()
    assert json.loads(line)["messages"][-1]["content"] == "a"


def test_export_of_a_missing_record_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "polar", "llm", "export", str(tmp_path / "none.jsonl"),
                           "--out", str(tmp_path / "d.jsonl")], capture_output=True, text=True)
    assert proc.returncode == 2 and "none.jsonl: call record not found" in proc.stderr
