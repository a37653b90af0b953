"""The planner-training loop on Crafter (issue 42; docs/crafter.md section 6d): a tiny real run of
`benchmarks/planner_training.py` with the Crafter teacher suite (one short symbolic-memory episode)
and the dataset stage: Crafter's goal-less episodes are recorded (success unknown, not an error),
the default filter keeps no decision of them and `--keep outcome` keeps those whose call succeeded,
rendered with the student-crafter profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("crafter")

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "benchmarks" / "planner_training.py"


def _loop(out: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(LOOP), "--out", str(out), "--observation", "memory",
                    "--student", "student-crafter", *args], check=True, env=env, cwd=ROOT, capture_output=True)
    return json.loads((out / "results.json").read_text())["ledger"]


def test_the_loop_builds_a_crafter_dataset_from_outcomes(tmp_path):
    suite = yaml.safe_load((ROOT / "evals" / "crafter_teacher.yaml").read_text())
    suite.update(seeds=[0], episodes=1)
    suite["agents"][0]["budget"] = {"decisions": 15}
    teacher = tmp_path / "teacher.yaml"
    teacher.write_text(yaml.safe_dump(suite))
    ledger = _loop(tmp_path / "run", "--teacher-suite", str(teacher), "--stages", "teacher,dataset")
    assert ledger["teacher"]["episodes"] == 1 and ledger["teacher"]["success"] == 0.0
    assert ledger["dataset"]["counts"] == {"train": 0, "validation": 0}  # --keep both: no confirmed episode
    ledger = _loop(tmp_path / "run", "--teacher-suite", str(teacher), "--stages", "dataset", "--keep", "outcome")
    data = ledger["dataset"]
    assert data["keep"] == "outcome" and data["student"] == "student-crafter"
    assert sum(data["counts"].values()) + sum(v for k, v in data["skipped"].items() if k.startswith("duplicate")) \
        == 15 - data["skipped"].get("outcome-not-successful", 0)
    assert sum(data["counts"].values()) >= 8
    example = json.loads((tmp_path / "run" / "dataset" / "train.jsonl").read_text().splitlines()[0])
    assert example["messages"][-1]["content"].startswith("Task: unlock as many of Crafter's 22 achievements")


def test_a_shipped_model_names_the_teacher_suite_s_planner():
    """The shipped model's description names the planner its data came from: the teacher suite's own
    (Crafter's crafter-memory, not the MiniGrid memory teacher)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("planner_training", LOOP)
    loop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loop)
    assert loop.teacher_planner(ROOT / "evals" / "crafter_teacher.yaml") == "crafter-memory"
    assert loop.teacher_planner(ROOT / "evals" / "planner_teacher_memory.yaml") == "symbolic-memory"
    assert loop.teacher_planner(ROOT / "evals" / "planner_teacher.yaml") == "symbolic"
