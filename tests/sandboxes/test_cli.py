"""`polar sandbox run` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "polar", "sandbox"]


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


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\xff\xfe\x00garbage", b"def act(obs):\x00\n"])
def test_a_binary_policy_file_is_a_one_line_error(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "policy.py"
    f.write_bytes(content)
    out = _run("run", str(f), "--backend", "process")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ConfigError: ") and str(f) in lines[0]
    assert "Traceback" not in out.stderr and "expected Python source" in lines[0]


def test_doctor_stops_the_engine_it_started(tmp_path: Path) -> None:
    """With no engine reachable, doctor starts Podman's service for its check and stops it.

    A private service folder gives this run its own service socket, so the engine the rest of
    the test run uses is never touched."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "POLAR_DOCKER_HOST")}
    env["POLAR_PODMAN_DIR"] = str(tmp_path / f"polar-podman-{os.getuid()}")
    if Path("/var/run/docker.sock").exists():
        pytest.skip("a Docker daemon answers here: doctor would not start an engine")
    out = subprocess.run([*CLI, "doctor"], capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last == "engine: started Podman's API service for this check and stopped it again", out.stdout
    service_dir = tmp_path / f"polar-podman-{os.getuid()}"
    assert not (service_dir / "service.json").exists() and not (service_dir / "podman.sock").exists()
    assert _podman_services(service_dir) == []


def _podman_services(service_dir: Path) -> list[int]:
    """Pids of podman API services listening under `service_dir` (read from /proc)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if "system\0service" in cmd and str(service_dir) in cmd and state != "Z":
                pids.append(int(proc.name))
    return pids
