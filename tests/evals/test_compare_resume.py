"""`kill -9` of `polar compare` in the middle of an LLM planner's cell, then the same command
again: the re-run keeps the episodes the killed run finished (the cell's `episodes.jsonl` in its
work folder), plays only the missing ones (the LLM server sees exactly their requests), and the
killed run leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.evals.test_compare_kill import _descendants
from tests.llm_server import Reply, ScriptedLLMServer

ROOT = Path(__file__).resolve().parents[2]
GIVE_UP = {"kind": "finish", "success": False, "reason": "scripted"}
EPISODES = 6


def _files(tmp_path: Path, server: ScriptedLLMServer) -> Path:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump({
        "backend": "llm", "model": "openai/scripted", "api_base": server.url, "mode": "skill",
        "timeout_s": 10, "retries": {"max_attempts": 1}, "structured_output": "none",
        "cache_dir": None, "record_path": None,  # no replay cache: every episode asks the server
    }))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "llmkill", "agents": [{"name": "llm", "kind": "planner", "planner": "p.yaml"}],
        "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 5}],
        "seeds": [0], "episodes": EPISODES, "workers": 0}))
    return suite


def _compare(suite: Path, out: Path, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "polar", "compare", str(suite), "--out", str(out)],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def test_llm_cells_resume_after_kill_9_without_repeating_or_losing_episodes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    partial = out / "work" / "llm" / "Empty-5x5" / "seed-0" / "episodes.jsonl"
    cell = out / "cells" / "llm" / "Empty-5x5" / "seed-0.json"
    # each decision takes 0.3 s to answer, so the kill lands inside the cell
    with ScriptedLLMServer(default=Reply.decision(GIVE_UP, usage=(100, 7), delay_s=0.3)) as server:
        suite = _files(tmp_path, server)
        driver = _compare(suite, out, tmp_path)
        deadline = time.monotonic() + 180
        started: set[tuple[int, str]] = set()
        while len(_lines(partial)) < 3:  # the header and two finished episodes
            assert driver.poll() is None, driver.stderr.read().decode()[-3000:] if driver.stderr else ""
            assert time.monotonic() < deadline, "no episode finished"
            started |= _descendants(driver.pid)
            time.sleep(0.05)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(10)
        kept = [json.loads(line) for line in _lines(partial)[1:]]
        assert 2 <= len(kept) < EPISODES and not cell.exists(), "the kill must land inside the cell"
        time.sleep(0.5)
        alive = [pid for pid, t in started if Path(f"/proc/{pid}").exists()]
        assert not alive, f"the killed compare left processes behind: {alive}"
        asked_before = server.request_count  # the kept episodes' requests (+ one cut by the kill)

        again = _compare(suite, out, tmp_path)
        _, err = again.communicate(timeout=300)
        assert again.returncode == 0, err.decode()[-3000:]
        # the re-run asked only for the missing episodes: one decision each
        assert server.request_count - asked_before == EPISODES - len(kept)

    result = json.loads(cell.read_text())
    episodes = result["episodes"]
    assert [e["extra"]["index"] for e in episodes] == list(range(EPISODES))
    assert [e["episode_id"] for e in episodes[:len(kept)]] == [e["episode_id"] for e in kept]  # not played again
    assert [e["seed"] for e in episodes] == [100_000 + i for i in range(EPISODES)]
    assert not partial.exists()  # the cell holds them now
