"""The loops that serve each model fresh (`polar llm improve`, planner RL, code eval, code RL)
stop the server on their port before and after their episodes: only one this run started, or
one whose starter is gone, never a live server that the same user's other Polar run started
(another terminal). The servers are real processes recorded in real state files."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from polar import ownership
from polar.llm import serve
from tests.llm.engine import free_port
from tests.llm.test_serve_ownership import record, sleeper

ROOT = Path(__file__).resolve().parents[2]
LOOPS = ("improve", "planner_rl", "code_eval", "code_rl")


def test_a_server_another_live_run_started_survives_and_the_refusal_names_its_owner():
    port = free_port()
    theirs = sleeper()
    try:
        record(port, theirs, "another-terminal")  # its owner (this test process) is alive
        with pytest.raises(serve.ServeError) as err:
            serve.stop_own("127.0.0.1", port)
        msg = str(err.value)
        assert "not started by this run" in msg and "another-terminal" in msg and f"--port {port}" in msg
        assert theirs.poll() is None and serve.read_state("127.0.0.1", port) is not None  # untouched
    finally:
        theirs.kill()
        theirs.wait()
        serve.state_path("127.0.0.1", port).unlink(missing_ok=True)


def test_this_runs_server_and_a_dead_runs_leftover_are_stopped():
    ours_port, left_port = free_port(), free_port()
    ours, left = sleeper(), sleeper()
    try:
        record(ours_port, ours, ownership.run_id())
        assert serve.stop_own("127.0.0.1", ours_port)["was_running"]
        assert ours.wait(timeout=20) is not None and serve.read_state("127.0.0.1", ours_port) is None
        # a killed run's server: its owner process is gone (a pid that exited), so it is stopped
        path = record(left_port, left, "a-run-that-was-killed")
        gone = sleeper()
        gone.kill()
        gone.wait()
        state = json.loads(path.read_text())
        state["owner"].update(pid=gone.pid, start_ticks=1)
        path.write_text(json.dumps(state))
        assert serve.stop_own("127.0.0.1", left_port)["was_running"]
        assert left.wait(timeout=20) is not None
        assert serve.stop_own("127.0.0.1", left_port) is None  # nothing recorded: nothing to do
    finally:
        for p in (ours, left):
            if p.poll() is None:
                p.kill()
                p.wait()


def _stop_calls(module: str) -> list[str]:
    """The names of the stop functions a loop calls on its server."""
    tree = ast.parse((ROOT / "polar" / "evals" / f"{module}.py").read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name.startswith("stop"):
                names.append(name)
    return names


@pytest.mark.parametrize("module", LOOPS)
def test_each_loop_stops_its_server_only_through_stop_own(module):
    calls = _stop_calls(module)
    assert calls and set(calls) == {"stop_own"}, calls
