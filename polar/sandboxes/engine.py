"""Find (or start) a Docker-API engine for the `docker` backend.

Order: `$POLAR_DOCKER_HOST`, `$DOCKER_HOST`, a Docker daemon at /var/run/docker.sock (these
are engines Polar is told to use: it attaches, never stops them), and finally Podman's
Docker-compatible API service, which Polar starts itself when podman is installed:
`podman --runtime runc system service --time=0 unix://<socket>` (runc because crun fails on
hybrid-cgroup hosts), in the service folder `$POLAR_PODMAN_DIR`, else
`<tmp>/polar-podman-<uid>` (one per account; the test suite uses its own).

The service keeps running after Polar exits so the next run starts fast. It runs in `/`,
not in the folder of whoever started it: podman's conmon fails every container start
("Failed to get working directory") once that folder is deleted, as a removed checkout's is.
`service.json` beside the socket records its pid and start time and its owner (the process,
checkout, workspace and run that started it; `polar.ownership`). Before use the service is
checked: the process listening on the socket (SO_PEERCRED) must be the recorded one, its
working folder must exist, and it must answer a ping within 5 s. A stale one (gone, or in a
deleted folder) is stopped and replaced; a silent one is refused (it may only be overloaded:
killing it would break the runs using it); a foreign one (a listener Polar did not
record, nor an older Polar's `service.pid`) is refused at once with its pid and how to clear
it. An older Polar's service (`service.pid` only) is checked the same way: reused while
healthy, replaced once stale. Stop it with `polar sandbox doctor --stop-engine`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from polar.ownership import (
    cmdline,
    describe,
    owned_by_run,
    owner_record,
    process_alive,
    start_ticks,
)
from polar.sandboxes.base import SandboxUnavailable

PING_S = 5.0  # a live service answers a ping in milliseconds, a busy machine's in a second or two
Health = Literal["healthy", "absent", "stale", "foreign", "unresponsive"]


def podman_socket_dir() -> Path:
    env = os.environ.get("POLAR_PODMAN_DIR")
    return Path(env).expanduser() if env else Path(tempfile.gettempdir()) / f"polar-podman-{os.getuid()}"


def _socket() -> Path:
    return podman_socket_dir() / "podman.sock"


def _record_path() -> Path:
    return podman_socket_dir() / "service.json"


def read_record() -> dict[str, Any] | None:
    """What `service.json` records about the service in this folder (None: nothing)."""
    try:
        return json.loads(_record_path().read_text())
    except (OSError, ValueError):
        return None


def _recorded() -> dict[str, Any] | None:
    """The service this folder records: `service.json`, else an older Polar's `service.pid`
    (pid only; its start time is taken now, its owner is unknown)."""
    record = read_record()
    if record is not None:
        return record
    try:
        pid = int((podman_socket_dir() / "service.pid").read_text())
    except (OSError, ValueError):
        return None
    return {"pid": pid, "start_ticks": start_ticks(pid), "owner": None, "legacy": True}


def _explicit_url() -> str | None:
    for var in ("POLAR_DOCKER_HOST", "DOCKER_HOST"):
        if os.environ.get(var):
            return os.environ[var]
    if Path("/var/run/docker.sock").exists():
        return "unix:///var/run/docker.sock"
    return None


def engine_url() -> str | None:
    """The URL of an engine that is already configured or running, else None."""
    url = _explicit_url()
    if url is not None:
        return url
    return f"unix://{_socket()}" if _socket().exists() else None


def _ping(url: str, timeout: float = 5.0) -> Any | None:
    import docker

    try:
        client = docker.DockerClient(base_url=url, timeout=timeout)
        client.ping()
        return client
    except Exception:
        return None


def _peer_pid(sock: Path, timeout: float = 1.0) -> int | None:
    """The pid of the process listening on a Unix socket (the kernel says: SO_PEERCRED);
    None when nothing listens (a socket file left by a dead service)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(str(sock))
        except OSError:
            return None
        pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                        struct.calcsize("3i")))
    return pid or None


def service_health() -> tuple[Health, str]:
    """The state of the podman service in this folder, and what was found, in words."""
    sock, record = _socket(), _recorded()
    rec_alive = record is not None and process_alive(record.get("pid"), record.get("start_ticks"))
    if not sock.exists():
        if rec_alive:
            return "stale", f"the recorded service (pid {record['pid']}) runs but its socket {sock} is gone"
        return "absent", f"no service at {sock}"
    peer = _peer_pid(sock)
    if peer is None:
        return "stale", f"nothing listens on {sock} (its service is gone)"
    if not rec_alive or record is None or int(record["pid"]) != peer:
        return "foreign", (f"pid {peer} ({cmdline(peer)[:160]}) listens on {sock}, but Polar has no live record "
                           f"of starting it in {_record_path()} (or an older Polar's service.pid): started by "
                           f"hand or by another program")
    try:
        cwd = os.readlink(f"/proc/{peer}/cwd")
    except OSError:
        cwd = ""
    if cwd.endswith(" (deleted)"):
        return "stale", (f"the service (pid {peer}, {describe(record)}) runs in a deleted folder "
                         f"{cwd.removesuffix(' (deleted)')}: it cannot start containers")
    if _ping(f"unix://{sock}", PING_S) is None:  # alive and ours, but maybe only overloaded: not killed
        return "unresponsive", f"the service (pid {peer}, {describe(record)}) does not answer a ping within {PING_S:g} s"
    return "healthy", f"pid {peer}, {describe(record)}"


_started_here: list[subprocess.Popen] = []  # services this process started


def started_here() -> bool:
    """Whether this process started Podman's service (`docker_client` does when none runs)."""
    return bool(_started_here)


def start_podman_service(wait_s: float = 20.0) -> str:
    """Start Podman's Docker API service on this folder's socket; returns its URL."""
    podman = shutil.which("podman")
    if podman is None:
        raise SandboxUnavailable("no Docker engine found and podman is not installed "
                                 "(scripts/install_system_deps.sh installs podman and runc)")
    d = podman_socket_dir()
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    sock = d / "podman.sock"
    sock.unlink(missing_ok=True)
    argv = [podman]
    if shutil.which("runc"):
        argv += ["--runtime", "runc"]
    argv += ["system", "service", "--time=0", f"unix://{sock}"]
    log = open(d / "service.log", "ab")  # noqa: SIM115 - handed to the detached service
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                            start_new_session=True)
    record = {"pid": proc.pid, "start_ticks": start_ticks(proc.pid), "socket": str(sock),
              "started_at": time.time(), "owner": owner_record()}
    tmp = d / f"service.json.tmp{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(d / "service.json")
    (d / "service.pid").unlink(missing_ok=True)  # an older Polar's record
    url = f"unix://{sock}"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SandboxUnavailable(f"podman's API service exited with status {proc.returncode}; "
                                     f"see {d / 'service.log'}")
        if sock.exists() and _ping(url, 2.0) is not None:
            _started_here.append(proc)
            return url
        time.sleep(0.1)
    raise SandboxUnavailable(f"podman's API service did not answer within {wait_s:g} s; "
                             f"see {d / 'service.log'}")


def _clear_hint() -> str:
    return (f"Polar does not stop what it did not start: kill that pid if it is yours to stop, point "
            f"POLAR_PODMAN_DIR at another folder, or set POLAR_DOCKER_HOST=unix://{_socket()} to use it as it is")


def docker_client(url: str | None = None, start: bool = True) -> Any:
    """A docker SDK client for a live engine: an engine Polar is told to use, else this
    folder's podman service after a health check (a stale one is replaced, a foreign one
    refused), else a podman service started now."""
    url = url or _explicit_url()
    if url is not None:
        client = _ping(url)
        if client is None:
            raise SandboxUnavailable(f"the Docker engine at {url} does not answer")
        return client
    health, found = service_health()
    if health == "healthy":
        client = _ping(f"unix://{_socket()}", PING_S)
        if client is not None:
            return client
        health, found = "unresponsive", f"the service stopped answering ({found})"
    if health == "foreign":
        raise SandboxUnavailable(f"refusing podman's API service at {_socket()}: {found}; {_clear_hint()}")
    if health == "unresponsive":
        raise SandboxUnavailable(f"podman's API service at {_socket()} is running but silent: {found}. It may "
                                 f"only be overloaded (try again), or hung: stop it with `polar sandbox doctor "
                                 f"--stop-engine` and the next call starts a fresh one")
    if not start:
        raise SandboxUnavailable(f"no Docker engine is running ({found})")
    if health == "stale":
        _stop_recorded(_recorded())
    client = _ping(start_podman_service())
    if client is None:
        raise SandboxUnavailable("podman's API service started but does not answer")
    return client


def _stop_recorded(record: dict[str, Any] | None, grace_s: float = 10.0) -> bool:
    """Stop the service a record names, when that very process still runs (pid and start
    time); SIGKILL after `grace_s`. Whether one was stopped."""
    if record is None or not process_alive(record.get("pid"), record.get("start_ticks")):
        return False
    pid = int(record["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    mine = next((p for p in _started_here if p.pid == pid), None)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if mine is not None and mine.poll() is not None:
            break
        if mine is None and not process_alive(pid, record.get("start_ticks")):
            break
        time.sleep(0.05)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if mine is not None:
            mine.wait()
    return True


def stop_podman_service(run: str | None = None) -> bool:
    """Stop the service this folder records (an older Polar's `service.pid` too); whether
    there was one. With `run`, only a service that run started: another's is left alone."""
    record = _recorded()
    if record is None or (run is not None and not owned_by_run(record, run)):
        return False
    _stop_recorded(record)
    for name in ("service.json", "service.pid", "podman.sock"):
        (podman_socket_dir() / name).unlink(missing_ok=True)
    return True
