"""The commands as a user runs them: a real `polar` subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

SUITE = {"name": "cli", "agents": [{"name": "random", "kind": "random"}], "seeds": [0], "episodes": 2,
         "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 20}]}


def _polar(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "polar", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=240)


def test_compare_writes_a_report_and_resumes(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SUITE))
    p = _polar("compare", "s.yaml", "--out", "out", "--workers", "0", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "ran 1 cell(s), reused 0" in p.stdout and "report.html" in p.stdout
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["rows"][0]["episodes"] == 2
    p = _polar("compare", "s.yaml", "--out", "out", cwd=tmp_path)
    assert "ran 0 cell(s), reused 1" in p.stdout
    p = _polar("compare", "s.yaml", "--out", "out", "--fresh", cwd=tmp_path)
    assert "ran 1 cell(s), reused 0" in p.stdout


def test_bad_suite_is_a_one_line_config_error(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**SUITE, "episodez": 3}))
    p = _polar("compare", "s.yaml", cwd=tmp_path)
    assert p.returncode == 2
    assert "ConfigError" in p.stderr and "s.yaml: episodez: unknown key" in p.stderr
    assert "Traceback" not in p.stderr


def test_eval_one_agent_on_one_harness(tmp_path: Path) -> None:
    p = _polar("eval", "minigrid:MiniGrid-Empty-5x5-v0", "--agent", "random", "--episodes", "3",
               "--max-steps", "30", "--out", "ev", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert data["rows"][0]["episodes"] == 3 and data["rows"][0]["agent"] == "random"
    p = _polar("eval", "minigrid:MiniGrid-Empty-5x5-v0", "--agent", "planner", cwd=tmp_path)
    assert p.returncode == 2 and "--planner" in p.stderr


def test_random_cartpole_is_not_reported_as_solved_and_pendulum_shows_returns_only(tmp_path: Path) -> None:
    p = _polar("eval", "gym:CartPole-v1", "--agent", "random", "--episodes", "5", "--out", "cp", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    row = json.loads((tmp_path / "cp" / "results.json").read_text())["rows"][0]
    assert row["success"]["n"] == 5 and row["success"]["value"] == 0.0  # the pole fell: not 100%
    assert row["failures"] == {"task-failed": 5}
    p = _polar("eval", "gym:Pendulum-v1", "--agent", "random", "--episodes", "2", "--out", "pd", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    row = json.loads((tmp_path / "pd" / "results.json").read_text())["rows"][0]
    assert row["success"]["n"] == 0 and row["failures"] == {}  # nothing can tell success here
    report = (tmp_path / "pd" / "report.md").read_text()
    assert "| random | none | Pendulum-v1 | 1 | unknown |" in report
