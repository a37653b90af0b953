"""`polar sandbox run` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "polar.cli", "sandbox"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_run_prints_the_json_result(tmp_path: Path) -> None:
    f = tmp_path / "p.py"
    f.write_text("def act(obs):\n    return {'sum': sum(obs)}\n")
    out = _run("run", str(f), "--backend", "process", "--args", "[[1, 2, 3]]")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"sum": 6}


def test_violation_prints_one_line_and_exits_3(tmp_path: Path) -> None:
    f = tmp_path / "p.py"
    f.write_text("import os\ndef act(obs):\n    return os.listdir('/')\n")
    out = _run("run", str(f), "--backend", "restricted", "--args", "[[]]")
    assert out.returncode == 3
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("SandboxViolation: ")


def test_timeout_flag(tmp_path: Path) -> None:
    f = tmp_path / "p.py"
    f.write_text("def act():\n    while True:\n        pass\n")
    out = _run("run", str(f), "--backend", "process", "--timeout", "0.2")
    assert out.returncode == 3 and out.stderr.startswith("SandboxTimeout: ")
    bad = _run("run", str(f), "--timeout", "-1")
    assert bad.returncode == 2 and "timeout_s" in bad.stderr
