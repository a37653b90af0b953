"""A guard for the whole test run: no test leaves a local LLM server behind.

A server Polar starts writes its state file (pid, command) under Polar's cache. After each test
the files that appeared during it and whose process is alive are noted with the test's id; at
the end of the run every such server still alive is stopped and named with the test that
started it, and the run fails (a leaked llama.cpp server holds a core and ~200 MB for good).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from polar.llm import serve

_started_by: dict[Path, str] = {}  # state file -> the test during which its server started


def _live_state_files(since: float) -> list[Path]:
    folder = serve.state_path("127.0.0.1", 0).parent
    found = []
    for f in folder.glob("*.json") if folder.is_dir() else []:
        try:
            if f.stat().st_mtime >= since and serve.is_alive(json.loads(f.read_text())):
                found.append(f)
        except (OSError, ValueError):
            continue  # being written or removed right now
    return found


@pytest.fixture(autouse=True)
def _note_servers_started(request: pytest.FixtureRequest):
    start = time.time() - 1.0
    yield
    for f in _live_state_files(start):
        _started_by.setdefault(f, request.node.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = []
    for f, test in _started_by.items():
        if not f.exists():
            continue
        state = json.loads(f.read_text())
        if not serve.is_alive(state):
            continue
        host, port = f.stem.rsplit("-", 1)
        serve.stop(host, int(port))
        leaked.append(f"{test} left a {state.get('engine')} server ({state.get('model')}) running on "
                      f"{host}:{port} (pid {state.get('pid')}); stopped now")
    if leaked:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            for line in leaked:
                reporter.write_line(f"LEAKED SERVER: {line}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
