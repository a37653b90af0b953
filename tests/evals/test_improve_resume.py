"""`kill -9` of `polar llm improve` while a round samples with the model on llama.cpp's server,
then the same command again: the server the killed run left is stopped (it could serve other
weights under the same name), the round plays only the missing episodes, writes its row once,
and no server is left running afterwards. (The round's fine-tune resumes as
tests/llm/test_finetune_resume.py shows.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.llm.engine import free_port, require_engine, require_model

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


# two improve runs with SmolLM2-135M on llama.cpp (a few minutes on a shared 2-core machine): slow
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_an_improve_round_killed_while_sampling_resumes_and_leaves_no_server(tmp_path: Path) -> None:
    require_engine()
    require_model("smollm2-135m")
    from polar.llm.serve import read_state

    port = free_port()
    config = tmp_path / "improve.yaml"
    config.write_text(yaml.safe_dump({
        "model": "smollm2-135m", "name": "toy-rft", "profile": "student", "rounds": 1, "episodes": 3,
        "tasks": [{"id": "minigrid:MiniGrid-Empty-5x5-v0"}], "max_decisions": 2, "port": port, "threads": 1}))
    out, marker = tmp_path / "out", tmp_path / "paused"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POLAR_MODELS": str(tmp_path / "models.json"),
           "POLAR_PAUSE_FILE": str(marker)}
    cmd = [sys.executable, "-m", "polar", "llm", "improve", str(config), "--out", str(out), "--skip-start"]
    partial = out / "round-1" / "sample" / "work" / "student" / "Empty-5x5" / "seed-1" / "episodes.jsonl"

    first = subprocess.Popen(cmd, cwd=tmp_path, env={**env, "POLAR_PAUSE_AT": "episode-0"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert first.poll() is None, first.stderr.read()[-3000:] if first.stderr else ""
        assert time.monotonic() < deadline, "the round never finished an episode"
        time.sleep(0.1)
    state = read_state("127.0.0.1", port)
    assert state is not None and _alive(int(state["pid"]))  # the model's server, serving the round
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    kept = [json.loads(line)["episode_id"] for line in partial.read_text().splitlines()[1:]]
    assert len(kept) == 1 and not (out / "round-1" / "row.json").exists()

    marker.unlink()
    # the re-run pauses 3 s after its first episode (index 1), so the test sees which server serves it
    again = subprocess.Popen(cmd, cwd=tmp_path, env={**env, "POLAR_PAUSE_AT": "episode-1", "POLAR_PAUSE_S": "3"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not marker.exists():
        assert again.poll() is None, again.stderr.read()[-3000:] if again.stderr else ""
        assert time.monotonic() < deadline, "the re-run never finished an episode"
        time.sleep(0.1)
    serving = read_state("127.0.0.1", port)
    assert serving is not None and int(serving["pid"]) != int(state["pid"])  # a fresh server, not the leftover
    assert not _alive(int(state["pid"]))  # the killed run's server was stopped
    out_text, err = again.communicate(timeout=900)
    assert again.returncode == 0, out_text[-2000:] + err[-3000:]
    assert read_state("127.0.0.1", port) is None and not _alive(int(serving["pid"]))  # nothing left running
    cell = json.loads((out / "round-1" / "sample" / "cells" / "student" / "Empty-5x5" / "seed-1.json").read_text())
    assert [e["extra"]["index"] for e in cell["episodes"]] == [0, 1, 2]
    assert cell["episodes"][0]["episode_id"] == kept[0]  # the finished episode was kept, not played again
    row = json.loads((out / "round-1" / "row.json").read_text())
    results = json.loads((out / "results.json").read_text())
    assert [r["round"] for r in results["ledger"]] == [1] and row["sample"]["episodes"] == 3
