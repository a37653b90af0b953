"""The docker backend's container life: the worker under an init, the channel socket, and
no container outliving the process that started it (closed, crashed, pooled, or killed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from polar.sandboxes.base import SandboxCrash, SandboxLimits, SandboxTimeout, make_sandbox
from polar.sandboxes.docker import OWNER_LABEL, reap_orphans

LIMITS = SandboxLimits(timeout_s=5.0, load_timeout_s=20, cpu_s=1, memory_mb=128)


def owned_by(client, owner: str) -> list:
    return client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})


def test_worker_runs_under_an_init_and_the_channel_socket_is_gone(docker_engine) -> None:
    src = ("import os\ndef probe():\n    return [os.getpid() != 1, os.getppid(), "
           "os.listdir('/run/polar')]\n")
    with make_sandbox("docker", LIMITS, client=docker_engine) as box:
        box.load(src)
        not_init, parent, channel_dir = box.call("probe")
    assert not_init and parent == 1  # catatonit is PID 1
    assert channel_dir == []  # removed once the worker connected: nothing else can connect


@pytest.mark.parametrize("backend", ["process", "docker"])
def test_cpu_limit_ends_in_sigxcpu_as_a_typed_error(backend: str, request) -> None:
    kwargs = {"client": request.getfixturevalue("docker_engine")} if backend == "docker" else {}
    with make_sandbox(backend, LIMITS, **kwargs) as box:
        box.load("def spin():\n    while True:\n        pass\n")
        with pytest.raises(SandboxTimeout, match="CPU time limit of 1 s"):
            box.call("spin")


CHILD = textwrap.dedent("""
    import os, sys, time
    from polar.sandboxes.base import SandboxError, SandboxLimits, make_sandbox
    from polar.sandboxes.docker import ContainerPool, owner_id
    from polar.sandboxes.engine import docker_client

    limits = SandboxLimits(timeout_s=0.5, load_timeout_s=20)
    client = docker_client()
    print(owner_id(), flush=True)
    pool = ContainerPool(limits, size=2, client=client)  # never closed by this script
    pool.wait_ready()
    if sys.argv[1] == "hang":
        print("ready", flush=True)
        time.sleep(600)
    for src, call in [("def f():\\n    return 1\\n", "f"),
                      ("def f():\\n    while True:\\n        pass\\n", "f"),
                      ("import os\\ndef f():\\n    os._exit(3)\\n", "f")]:
        box = make_sandbox("docker", limits, pool=pool)
        try:
            box.load(src)
            box.call(call)
        except SandboxError as err:
            print(type(err).__name__, flush=True)
        box.close()
    box = make_sandbox("docker", limits, client=client)  # a cold one, left open
    box.load("def f():\\n    return 1\\n")
    print("done", flush=True)
""")


def test_no_container_outlives_the_process_that_started_it(docker_engine) -> None:
    out = subprocess.run([sys.executable, "-c", CHILD, "exit"], capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    owner, *events = out.stdout.split()
    assert events == ["SandboxTimeout", "SandboxCrash", "done"]
    assert owned_by(docker_engine, owner) == []


def test_containers_of_a_killed_process_are_reaped(docker_engine) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, "hang"], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        owner = proc.stdout.readline().strip()
        assert proc.stdout.readline().strip() == "ready"
        assert len(owned_by(docker_engine, owner)) == 2
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert reap_orphans(docker_engine) >= 2
    deadline = time.monotonic() + 10
    while owned_by(docker_engine, owner) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert owned_by(docker_engine, owner) == []


def test_a_crash_is_a_typed_error_with_the_exit_status(docker_engine) -> None:
    with make_sandbox("docker", LIMITS, client=docker_engine) as box:
        box.load("import os\ndef f():\n    os._exit(7)\n")
        with pytest.raises(SandboxCrash, match="exited with status 7"):
            box.call("f")


def test_only_the_containers_own_worker_may_hold_the_channel() -> None:
    """A peer that is not uid 65534 in that container's cgroup (here: this test process)."""
    import socket

    from polar.sandboxes.docker import _peer_problem

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        problem = _peer_problem(a, "f" * 64)
    assert problem is not None
    assert ("not the sandbox user 65534" in problem) if os.geteuid() == 0 else ("not in the container" in problem)


def test_listing_retries_podmans_race_with_an_exiting_container() -> None:
    """Podman answers 500 "read /proc/PID/cgroup: no such process" when a container exits
    while it lists them (seen in a full test run): the reaper retries; other errors surface."""
    import docker.errors

    class Containers:
        def __init__(self, errors: list[str]) -> None:
            self.errors, self.calls = errors, 0

        def list(self, **_: object) -> list:
            self.calls += 1
            if self.errors:
                raise docker.errors.APIError(self.errors.pop(0))
            return []

    class Client:
        def __init__(self, errors: list[str]) -> None:
            self.containers = Containers(errors)

    race = 'Internal Server Error ("read /proc/24513/cgroup: no such process")'
    # the SDK inspects each listed container: one removed in between (another run's) is gone
    gone = 'Internal Server Error ("container edfc4611 does not exist in database: no such container")'
    client = Client([race, gone])
    assert reap_orphans(client) == 0 and client.containers.calls == 3
    with pytest.raises(docker.errors.APIError, match="permission denied"):
        reap_orphans(Client(["permission denied"]))


HOLD = textwrap.dedent("""
    import time
    from polar.sandboxes.base import SandboxLimits, make_sandbox
    box = make_sandbox("docker", SandboxLimits(timeout_s=5.0, load_timeout_s=20))
    box.load("def f():\\n    return 1\\n")
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_run_sees_only_its_own_containers(docker_engine) -> None:
    """Two runs on one engine (two test runs, or a test run and a user's compare): each lists
    only the containers its own run started."""
    from polar.ownership import RUN_ENV, checkout, run_id
    from polar.sandboxes.docker import CHECKOUT_LABEL, RUN_LABEL, run_containers

    other = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, RUN_ENV: "another-run"})
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "ready"
        with make_sandbox("docker", LIMITS, client=docker_engine) as box:
            box.load("def f():\n    return 1\n")
            ours = {c.id for c in run_containers(docker_engine)}
            theirs = run_containers(docker_engine, "another-run")
            assert box._warm.container.id in ours
            assert len(theirs) == 1 and theirs[0].id not in ours
            assert theirs[0].labels[RUN_LABEL] == "another-run" and theirs[0].labels[CHECKOUT_LABEL] == checkout()
            assert all(c.labels[RUN_LABEL] == run_id() for c in run_containers(docker_engine))
    finally:
        other.kill()
        other.wait(timeout=60)
    reap_orphans(docker_engine)  # its owner is dead: an orphan of any run is removed
    deadline = time.monotonic() + 30
    while run_containers(docker_engine, "another-run") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run_containers(docker_engine, "another-run") == []
