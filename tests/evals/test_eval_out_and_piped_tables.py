"""`polar eval` keeps one folder per agent and harness, and a piped `polar compare` prints its
tables at full width (rich would cut them to 80 columns when stdout is not a terminal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from polar.evals.report import TABLE_HEADER

ROOT = Path(__file__).resolve().parents[2]


def _polar(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = env or {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # piped, no width set
    p = subprocess.run([sys.executable, "-m", "polar", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=240, env=env | {"PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_two_evals_on_two_harnesses_keep_two_folders(tmp_path: Path) -> None:
    _polar("eval", "minigrid:MiniGrid-Empty-5x5-v0", "--episodes", "1", "--max-steps", "5", cwd=tmp_path)
    _polar("eval", "gym:CartPole-v1", "--episodes", "1", "--max-steps", "5", cwd=tmp_path)
    evals = tmp_path / "runs" / "evals"
    assert sorted(p.name for p in evals.iterdir()) == ["eval-random-CartPole-v1", "eval-random-Empty-5x5"]
    for name, hid in (("eval-random-CartPole-v1", "gym:CartPole-v1"),
                      ("eval-random-Empty-5x5", "minigrid:MiniGrid-Empty-5x5-v0")):
        assert json.loads((evals / name / "results.json").read_text())["rows"][0]["harness_id"] == hid


def test_a_piped_compare_prints_every_column_at_full_width(tmp_path: Path) -> None:
    suite = {"name": "wide", "agents": [{"name": "random", "kind": "random"}], "seeds": [0], "episodes": 1,
             "harnesses": [{"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 5}]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    out = _polar("compare", "s.yaml", "--out", "out", "--workers", "0", cwd=tmp_path).stdout
    header = next(line for line in out.splitlines() if "success [95% CI]" in line)
    # every column under its full name on one line (a narrow table drops the return columns and
    # shortens the rest), wider than the 80 columns rich assumes for a pipe
    assert all(h in header for h in TABLE_HEADER), header
    assert len(header) > 160
    # COLUMNS still decides where it is set
    narrow = _polar("compare", "s.yaml", "--out", "out", cwd=tmp_path, env={**os.environ, "COLUMNS": "100"}).stdout
    assert all(len(line) <= 100 for line in narrow.splitlines())
    assert "mean return [95% CI]" not in narrow
