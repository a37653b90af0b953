"""Podman's API service is checked before use: a stale one (gone, or running in a deleted
checkout) is replaced, a foreign one refused at once, and no call waits on a dead socket.

Each test has its own service folder (`POLAR_PODMAN_DIR`) with real podman services, so the
service the rest of the run uses is never touched; every service a test starts by hand it
also stops."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from polar import ownership
from polar.sandboxes import engine
from polar.sandboxes.base import SandboxLimits, SandboxUnavailable, make_sandbox

LIMITS = SandboxLimits(timeout_s=5.0, load_timeout_s=20, cpu_s=1, memory_mb=128)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def service_dir(monkeypatch, docker_engine) -> Iterator[Path]:
    """A private, short service folder (a socket path is capped at 108 bytes); its service, if
    any, is stopped at the end."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed")
    for var in ("POLAR_DOCKER_HOST", "DOCKER_HOST"):
        monkeypatch.delenv(var, raising=False)
    d = Path(tempfile.mkdtemp(prefix="polar-pd-"))
    monkeypatch.setenv("POLAR_PODMAN_DIR", str(d))
    yield d
    from polar.sandboxes.docker import finish_removals

    # The test's removals under way go through this service: stopped under them, they fail
    # until they give up (120 s) and their containers stay behind, exited (a loaded CI run).
    finish_removals()
    engine.stop_podman_service()
    shutil.rmtree(d, ignore_errors=True)


def by_hand(sock: Path, cwd: Path) -> subprocess.Popen:
    """A podman service started the way an older Polar did: in the starter's folder."""
    log = sock.with_name("by-hand.log")
    with log.open("ab") as out:
        proc = subprocess.Popen(["podman", "--runtime", "runc", "system", "service", "--time=0", f"unix://{sock}"],
                                cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 60  # a loaded machine
    while engine._ping(f"unix://{sock}", 5.0) is None:
        if time.monotonic() > deadline or proc.poll() is not None:
            stop(proc)  # never left running when the test fails here
            pytest.fail(f"podman's service did not start: {log.read_text()}")
        time.sleep(0.1)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sandbox_call_s() -> float:
    """Seconds for one docker-sandbox call from scratch (engine, container, load, call)."""
    t0 = time.monotonic()
    with make_sandbox("docker", LIMITS, client=engine.docker_client()) as box:
        box.load("def f():\n    return 41 + 1\n")
        assert box.call("f") == 42
    return time.monotonic() - t0


def test_a_deleted_checkouts_service_does_not_break_another_checkouts_next_call(service_dir, tmp_path):
    """Checkout A starts the service and is deleted; checkout B's next call works within 5 s."""
    checkout_a = tmp_path / "checkout-a"
    checkout_a.mkdir()
    started = subprocess.run([sys.executable, "-c", "from polar.sandboxes.engine import docker_client; "
                              "docker_client(); print('ok')"], cwd=checkout_a, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert started.stdout.strip() == "ok", started.stderr
    record = engine.read_record()
    assert record["owner"]["workspace"] == str(checkout_a) and record["owner"]["run"] == ownership.run_id()
    assert os.readlink(f"/proc/{record['pid']}/cwd") == "/"  # it never depends on its starter's folder
    shutil.rmtree(checkout_a)
    assert sandbox_call_s() < 5.0
    assert engine.read_record()["pid"] == record["pid"]  # healthy: reused, not replaced


@pytest.mark.parametrize("recorded_by", ["service.pid", "service.json"])
def test_a_service_running_in_a_deleted_folder_is_replaced_within_5_s(service_dir, tmp_path, recorded_by):
    """A service started in a checkout that is now deleted (as an older Polar started it, with
    its pid file) answers pings but cannot start a container: found stale, stopped, replaced."""
    checkout_a = tmp_path / "checkout-a"
    checkout_a.mkdir()
    old = by_hand(service_dir / "podman.sock", checkout_a)
    try:
        if recorded_by == "service.pid":
            (service_dir / "service.pid").write_text(str(old.pid))
        else:
            (service_dir / "service.json").write_text(json.dumps({
                "pid": old.pid, "start_ticks": ownership.start_ticks(old.pid), "owner": {"run": "an-older-run"}}))
        shutil.rmtree(checkout_a)
        health, found = engine.service_health()
        assert health == "stale" and f"runs in a deleted folder {checkout_a}" in found
        assert sandbox_call_s() < 5.0
        assert old.wait(timeout=10) is not None  # the stale one was stopped
        assert engine.read_record()["pid"] != old.pid and not (service_dir / "service.pid").exists()
    finally:
        stop(old)


def test_a_gone_service_with_its_socket_left_behind_is_replaced(service_dir):
    engine.docker_client()
    record = engine.read_record()
    os.kill(record["pid"], signal.SIGKILL)  # the service dies; its socket file stays
    next(p for p in engine._started_here if p.pid == record["pid"]).wait(timeout=10)  # our child: reaped
    assert (service_dir / "podman.sock").exists()
    assert engine.service_health() == ("stale", f"nothing listens on {service_dir / 'podman.sock'} "
                                                "(its service is gone)")
    assert sandbox_call_s() < 5.0


def test_a_foreign_service_is_refused_at_once_with_its_pid_and_how_to_clear_it(service_dir):
    foreign = by_hand(service_dir / "podman.sock", Path("/"))  # no record: not started by this Polar
    try:
        t0 = time.monotonic()
        with pytest.raises(SandboxUnavailable) as err:
            engine.docker_client()
        assert time.monotonic() - t0 < 5.0
        msg = str(err.value)
        assert f"pid {foreign.pid} (" in msg and "podman" in msg and "no live record" in msg
        assert "kill that pid" in msg and "POLAR_DOCKER_HOST" in msg
        assert foreign.poll() is None  # refused, not stopped
    finally:
        stop(foreign)


def test_a_pool_on_an_engine_that_cannot_start_containers_fails_at_once(service_dir, tmp_path, docker_engine):
    """A client straight at a broken service (no health check on that path): the pool's first
    start fails, and acquire says why at once instead of waiting out its 30 s."""
    from polar.sandboxes.docker import ContainerPool

    checkout_a = tmp_path / "checkout-a"
    checkout_a.mkdir()
    broken = by_hand(service_dir / "podman.sock", checkout_a)
    try:
        shutil.rmtree(checkout_a)
        client = engine._ping(f"unix://{service_dir / 'podman.sock'}")
        pool = ContainerPool(LIMITS, size=1, client=client)
        try:
            t0 = time.monotonic()
            with pytest.raises(SandboxUnavailable, match="starting a sandbox container failed"):
                pool.acquire(timeout=30.0)
            assert time.monotonic() - t0 < 10.0
        finally:
            pool.close(wait_s=60.0)  # and wait for its refill thread's start under way
    finally:
        stop(broken)
        # the containers the broken service created but could not start, removed through a working one
        from polar.sandboxes.docker import OWNER_LABEL, finish_removals, owner_id

        finish_removals()
        for c in docker_engine.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner_id()}"}):
            if c.status in ("created", "exited"):
                c.remove(force=True)


def test_a_silent_service_is_refused_not_killed(service_dir):
    """A service of ours that is alive but does not answer (stopped here with SIGSTOP; on a
    real machine, overloaded or hung) is refused with what was found; other runs may be using
    it, so it is not killed."""
    engine.docker_client()
    record = engine.read_record()
    os.kill(record["pid"], signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(SandboxUnavailable, match="running but silent: the service .* does not answer a ping "
                                                      "within 5 s.*polar sandbox doctor --stop-engine"):
            engine.docker_client()
        assert time.monotonic() - t0 < 15.0
        assert ownership.process_alive(record["pid"], record["start_ticks"])
    finally:
        os.kill(record["pid"], signal.SIGCONT)
    assert engine.service_health()[0] == "healthy"
