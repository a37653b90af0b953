"""`kill -9` of the planner-training loop (`benchmarks/planner_training.py`) in its teacher and
dataset stages, then the same command again: the teacher's finished episodes are kept and only
the missing ones played; a dataset is never left half-written. (The SFT stage and each round's
fine-tune: tests/llm/test_finetune_resume.py; compare's LLM cells: tests/evals/test_compare_resume.py;
a whole improvement round: tests/evals/test_improve_resume.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "benchmarks" / "planner_training.py"
EPISODES = 6


def _teacher_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "teacher.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "teacher", "agents": [{"name": "teacher", "kind": "planner", "planner": "symbolic",
                                       "record_context": True}],
        "harnesses": [{"id": "minigrid:MiniGrid-DoorKey-5x5-v0"}], "seeds": [0], "episodes": EPISODES,
        "eval_seed": 0, "workers": 0}))
    return suite


def _loop(out: Path, stages: str, suite: Path, pause: str = "", marker: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POLAR_PAUSE_AT": pause, "POLAR_PAUSE_FILE": str(marker or "")}
    return subprocess.Popen([sys.executable, str(LOOP), "--out", str(out), "--stages", stages,
                             "--teacher-suite", str(suite)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _kill_at(proc: subprocess.Popen, marker: Path) -> None:
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read()[-3000:] if proc.stderr else ""
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    marker.unlink()


def _finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]


def test_the_teacher_stage_resumes_after_kill_9_without_repeating_episodes(tmp_path: Path) -> None:
    out, marker, suite = tmp_path / "loop", tmp_path / "paused", _teacher_suite(tmp_path)
    partial = out / "teacher" / "work" / "teacher" / "DoorKey-5x5" / "seed-0" / "episodes.jsonl"
    _kill_at(_loop(out, "teacher", suite, "episode-2", marker), marker)  # three episodes finished
    kept = [json.loads(line) for line in partial.read_text().splitlines()[1:]]
    assert [e["extra"]["index"] for e in kept] == [0, 1, 2]
    _finish(_loop(out, "teacher", suite))
    cell = json.loads((out / "teacher" / "cells" / "teacher" / "DoorKey-5x5" / "seed-0.json").read_text())
    assert [e["extra"]["index"] for e in cell["episodes"]] == list(range(EPISODES))
    assert [e["episode_id"] for e in cell["episodes"][:3]] == [e["episode_id"] for e in kept]  # kept, not replayed
    assert all(d.get("context") for e in cell["episodes"] for d in e["decisions"])  # what the dataset renders
    assert json.loads((out / "results.json").read_text())["ledger"]["teacher"]["episodes"] == EPISODES


def test_the_dataset_stage_killed_while_writing_leaves_no_half_dataset(tmp_path: Path) -> None:
    from polar.evals.runner import run_cells

    out, marker, suite = tmp_path / "loop", tmp_path / "paused", _teacher_suite(tmp_path)
    run_cells(suite, out / "teacher", progress=False)  # the teacher's cells, in this process
    _kill_at(_loop(out, "dataset", suite, "dataset-written", marker), marker)  # every file written, not yet moved
    assert not (out / "dataset").exists()  # a later SFT stage finds no dataset rather than half of one
    assert list(out.glob(".dataset.*.tmp"))  # what the killed run wrote
    _finish(_loop(out, "dataset", suite))
    info = json.loads((out / "dataset" / "dataset.json").read_text())
    assert info["counts"]["train"] + info["counts"]["validation"] > 0
    lines = sum(len((out / "dataset" / f).read_text().splitlines()) for f in ("train.jsonl", "validation.jsonl"))
    assert lines == info["counts"]["train"] + info["counts"]["validation"]
    assert not list(out.glob(".dataset.*.tmp"))  # the killed run's folder is cleaned up
