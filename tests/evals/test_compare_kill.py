"""`kill -9` of `polar compare` running cells on Ray workers: nothing is written into --out
after the driver's death (cells are written by the driver only, and workers exit with it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
name: killme
agents:
  - name: ppo
    kind: pure_rl
    train_steps: 1000000      # far more than the test waits for
    overrides: {ppo: {num_envs: 2, num_steps: 32}}   # an update (and a metrics row) every 64 steps
harnesses:
  - {id: gym:CartPole-v1}
seeds: [0, 1]
episodes: 1
workers: 2
"""


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[19]


def _descendants(pid: int) -> set[tuple[int, str]]:
    """Every process below `pid` as (pid, start time), so the test can reap what it started
    (the start time guards against a recycled pid)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name))) is not None:
            children.setdefault(st[0], []).append((int(d.name), st[1]))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c[0])
    return out


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def test_nothing_is_written_after_the_driver_is_killed(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    suite, out = tmp_path / "suite.yaml", tmp_path / "out"
    suite.write_text(SUITE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen([sys.executable, "-m", "polar", "compare", str(suite), "--out", str(out)],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    started: set[tuple[int, str]] = set()
    try:
        deadline = time.monotonic() + 180
        # both workers training: each writes a metrics row per update into its work folder
        while len(list(out.glob("work/**/metrics.jsonl"))) < 2:
            assert driver.poll() is None, driver.stderr.read().decode()[-2000:] if driver.stderr else ""
            assert time.monotonic() < deadline, "the workers never started training"
            started.update(_descendants(driver.pid))
            time.sleep(0.2)
        before = _snapshot(out)
        time.sleep(1.0)
        assert _snapshot(out) != before, "the workers are not writing: the test would prove nothing"
        started.update(_descendants(driver.pid))
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=10)
        time.sleep(0.5)  # the workers notice within 50 ms; a write in flight lands meanwhile
        at_death = _snapshot(out)
        time.sleep(4.0)
        assert _snapshot(out) == at_death, "files under --out changed after the driver died"
        assert not list(out.glob("cells/**/*.json")), "a cell was written without the driver"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for pid, start in started:  # Ray's own processes wind down by themselves; never leave any
            if (st := _stat(pid)) is not None and st[1] == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
