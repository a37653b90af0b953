"""Who owns a model server: Polar reuses only what its state folder records (or what a profile
says to attach to), stops on its own only what its run started, and replaces a stale record.

The "servers" here are real processes: an HTTP server answering GET /v1/models (in this
process, or a child), or a sleeping child recorded in a state file, so each rule is checked
against processes that really live and die."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from polar import ownership
from polar.llm import serve
from tests.llm.engine import free_port, require_engine, require_model


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.dumps({"data": [{"id": "smollm2-135m"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def answering(port: int) -> Iterator[None]:
    """A server on 127.0.0.1:port that serves smollm2-135m and that this Polar did not start."""
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield
    finally:
        httpd.shutdown()
        httpd.server_close()


def sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)


def record(port: int, proc: subprocess.Popen, run: str) -> Path:
    """A state file for `proc` as a server started by `run`."""
    owner = {**ownership.owner_record(), "run": run}
    state = {"pid": proc.pid, "start_ticks": ownership.start_ticks(proc.pid), "served_name": "smollm2-135m",
             "model": "smollm2-135m", "engine": "llamacpp", "api_base": f"http://127.0.0.1:{port}/v1",
             "owner": owner}
    path = serve.state_path("127.0.0.1", port)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state))
    return path


def test_a_server_this_polar_did_not_start_is_refused_with_who_runs_it_and_how_to_clear_it():
    port = free_port()
    s = serve.ServerSettings(model="smollm2-135m", port=port)
    with answering(port):
        with pytest.raises(serve.ServeError) as err:
            serve.ensure_server(s, announce=lambda _: None)
        msg = str(err.value)
        assert f"127.0.0.1:{port} answers (serving smollm2-135m) but this Polar did not start it" in msg
        assert str(serve.state_dir()) in msg and f"pid {os.getpid()}" in msg  # who listens: this test
        assert "attach: true" in msg and f"--stop --port {port}" in msg
        # told to attach, it is used as it is, and never recorded as ours
        attached = serve.ServerSettings(model="smollm2-135m", port=port, attach=True)
        assert serve.ensure_server(attached, announce=lambda _: None)["started"] is False
        assert serve.read_state("127.0.0.1", port) is None


def test_a_stale_record_does_not_make_a_foreign_server_ours():
    port = free_port()
    proc = sleeper()
    path = record(port, proc, ownership.run_id())
    proc.kill()
    proc.wait()
    settings = serve.ServerSettings(model="smollm2-135m", port=port)
    with answering(port), pytest.raises(serve.ServeError, match=f"records pid {proc.pid}, which is gone"):
        serve.ensure_server(settings, announce=lambda _: None)  # someone else took the port after ours died
    path.unlink()


def test_stopping_on_exit_leaves_another_runs_server_alone_and_stops_this_runs():
    ours_port, theirs_port = free_port(), free_port()
    settings = [serve.ServerSettings(model="smollm2-135m", port=p) for p in (ours_port, theirs_port)]
    ours, theirs = sleeper(), sleeper()
    try:
        with serve.stop_on_exit(settings, announce=lambda _: None):  # both ports idle on the way in
            record(ours_port, ours, ownership.run_id())
            record(theirs_port, theirs, "another-terminal")  # started meanwhile by another Polar run
        assert ours.wait(timeout=20) is not None  # this run's: stopped
        assert theirs.poll() is None and serve.read_state("127.0.0.1", theirs_port) is not None
        assert serve.stop("127.0.0.1", theirs_port, run=ownership.run_id()) is None  # not ours to stop
        assert theirs.poll() is None
        assert serve.stop("127.0.0.1", theirs_port)["was_running"]  # told explicitly: stopped
        assert theirs.wait(timeout=20) is not None
    finally:
        for p in (ours, theirs):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_a_stale_state_file_is_replaced_by_a_fresh_server():
    require_engine()
    require_model("smollm2-135m")
    port = free_port()
    proc = sleeper()
    record(port, proc, "a-run-that-crashed")
    proc.kill()
    proc.wait()
    said: list[str] = []
    s = serve.ServerSettings(model="smollm2-135m", port=port, threads=1)
    try:
        state = serve.start(s, announce=said.append)
        assert any("replacing the stale state file" in m and f"pid {proc.pid}" in m for m in said), said
        assert state["pid"] != proc.pid and state["owner"]["run"] == ownership.run_id()
        assert state["owner"]["pid"] == os.getpid() and state["owner"]["checkout"] == ownership.checkout()
        assert serve.is_alive(serve.read_state("127.0.0.1", port))
    finally:
        serve.stop("127.0.0.1", port)


LEAKY_TEST = '''
import json, os, subprocess, sys, time
from pathlib import Path
from polar import ownership
from polar.llm import serve

def test_leaks_a_server():
    # the user's server starts (or writes its state) while this test runs
    user_state = Path(os.environ["USER_STATE"])
    user_state.write_text(user_state.read_text())
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    state = {"pid": proc.pid, "start_ticks": ownership.start_ticks(proc.pid), "served_name": "m", "model": "m",
             "engine": "llamacpp", "owner": ownership.owner_record()}
    path = serve.state_path("127.0.0.1", 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state))
    Path(os.environ["LEAKED_PID"]).write_text(str(proc.pid))
'''


def test_the_test_runs_leak_guard_stops_its_own_leak_and_never_the_users_server(tmp_path):
    """An inner pytest run with this suite's conftest, in an account whose user has a server
    running: the inner run fails naming its leaked server and stops it; the user's server (in
    the user's cache, touched during the run, as a starting server's state file is) lives on."""
    user_cache = tmp_path / "user-cache"
    user = sleeper()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("POLAR_STATE_DIR", "POLAR_PODMAN_DIR",
                                                                 ownership.RUN_ENV)}
        env["POLAR_CACHE_DIR"] = str(user_cache)
        user_state = user_cache / "servers" / "127.0.0.1-8015.json"
        user_state.parent.mkdir(parents=True)
        user_state.write_text(json.dumps({"pid": user.pid, "start_ticks": ownership.start_ticks(user.pid),
                                          "served_name": "polar-planner", "model": "polar-planner",
                                          "engine": "llamacpp", "owner": {"run": "the-users-run"}}))
        (tmp_path / "test_leaky.py").write_text(LEAKY_TEST)
        env |= {"USER_STATE": str(user_state), "LEAKED_PID": str(tmp_path / "leaked.pid"),
                "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                              "--rootdir", str(tmp_path), str(tmp_path / "test_leaky.py")],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "LEAKED SERVER: test_leaky.py::test_leaks_a_server left a llamacpp server" in out.stdout, out.stdout
        leaked = int((tmp_path / "leaked.pid").read_text())
        assert not Path(f"/proc/{leaked}").exists()  # stopped (and reaped) by the inner run
        assert user.poll() is None and user_state.exists()  # the user's server: untouched
        assert sorted(p.name for p in (user_cache / "servers").iterdir()) == ["127.0.0.1-8015.json"]
    finally:
        user.kill()
        user.wait()


def test_a_killed_test_runs_leftovers_are_cleared_by_the_next_run():
    """A test run killed with SIGKILL never reaches its leak guard: the next run stops the
    servers its folder records and removes the folder; a live run's folder is left alone."""
    import tempfile

    from tests.conftest import _reap_dead_runs

    dead_session = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_session.wait()
    roots = {name: Path(tempfile.mkdtemp(prefix="polar-test-")) for name in ("dead", "live")}
    server = sleeper()
    try:
        for name, pid in (("dead", dead_session.pid), ("live", os.getpid())):
            (roots[name] / "session.json").write_text(json.dumps({"pid": pid, "run": name}))
            (roots[name] / "state").mkdir()
        state = {"pid": server.pid, "start_ticks": ownership.start_ticks(server.pid), "owner": {"run": "dead"}}
        (roots["dead"] / "state" / "127.0.0.1-1.json").write_text(json.dumps(state))
        podman_dir = os.environ.get("POLAR_PODMAN_DIR")
        cleared = _reap_dead_runs()
        assert str(roots["dead"]) in cleared and not roots["dead"].exists()
        assert server.wait(timeout=10) == -9  # its server: stopped
        assert str(roots["live"]) not in cleared and roots["live"].exists()
        assert os.environ.get("POLAR_PODMAN_DIR") == podman_dir  # this run's own setting is kept
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)


def test_our_server_is_reused_only_for_the_weights_it_loaded():
    """Versions of one model share a served name: a server of ours that loaded other weights
    under that name is refused (naming both), not silently reused for the new version."""
    require_model("smollm2-135m")
    from polar.llm.models import resolve_model

    port = free_port()
    proc = sleeper()
    path = record(port, proc, ownership.run_id())
    settings = serve.ServerSettings(model="smollm2-135m", port=port)
    try:
        with answering(port):
            state = json.loads(path.read_text())
            path.write_text(json.dumps({**state, "weights": "smollm2-135m@1 /elsewhere/older.gguf"}))
            with pytest.raises(serve.ServeError, match=r"serves smollm2-135m@1 \(/elsewhere/older.gguf\).*other weights"):
                serve.ensure_server(settings, announce=lambda _: None)
            with pytest.raises(serve.ServeError, match="other weights"):
                serve.start(settings, announce=lambda _: None)
            path.write_text(json.dumps({**state, "weights": serve.weights_id(resolve_model("smollm2-135m"))}))
            assert serve.ensure_server(settings, announce=lambda _: None)["started"] is False
    finally:
        proc.kill()
        proc.wait()
        path.unlink(missing_ok=True)
