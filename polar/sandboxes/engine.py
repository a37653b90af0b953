"""Find (or start) a Docker-API engine for the `docker` backend.

Order: `$POLAR_DOCKER_HOST`, `$DOCKER_HOST`, a Docker daemon at /var/run/docker.sock, and
finally Podman's Docker-compatible API service, which Polar starts itself when podman is
installed: `podman --runtime runc system service --time=0 unix://<socket>` (runc because
crun fails on hybrid-cgroup hosts). The service keeps running after Polar exits so the next
run starts fast; stop it with `polar sandbox doctor --stop-engine` or by killing the PID
written next to the socket.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from polar.sandboxes.base import SandboxUnavailable


def podman_socket_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"polar-podman-{os.getuid()}"


def engine_url() -> str | None:
    """The URL of an engine that is already configured or running, else None."""
    for var in ("POLAR_DOCKER_HOST", "DOCKER_HOST"):
        if os.environ.get(var):
            return os.environ[var]
    if Path("/var/run/docker.sock").exists():
        return "unix:///var/run/docker.sock"
    sock = podman_socket_dir() / "podman.sock"
    if sock.exists():
        return f"unix://{sock}"
    return None


def _ping(url: str, timeout: float = 5.0) -> Any | None:
    import docker

    try:
        client = docker.DockerClient(base_url=url, timeout=timeout)
        client.ping()
        return client
    except Exception:
        return None


_started_here: list[subprocess.Popen] = []  # services this process started


def started_here() -> bool:
    """Whether this process started Podman's service (`docker_client` does when none runs)."""
    return bool(_started_here)


def start_podman_service(wait_s: float = 20.0) -> str:
    """Start Podman's Docker API service on a private socket; returns its URL."""
    podman = shutil.which("podman")
    if podman is None:
        raise SandboxUnavailable("no Docker engine found and podman is not installed "
                                 "(scripts/install_system_deps.sh installs podman and runc)")
    d = podman_socket_dir()
    d.mkdir(mode=0o700, exist_ok=True)
    sock = d / "podman.sock"
    sock.unlink(missing_ok=True)
    argv = [podman]
    if shutil.which("runc"):
        argv += ["--runtime", "runc"]
    argv += ["system", "service", "--time=0", f"unix://{sock}"]
    log = open(d / "service.log", "ab")  # noqa: SIM115 - handed to the detached service
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    (d / "service.pid").write_text(str(proc.pid))
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


def docker_client(url: str | None = None, start: bool = True) -> Any:
    """A docker SDK client for a live engine, starting Podman's service when needed."""
    url = url or engine_url()
    if url is not None:
        client = _ping(url)
        if client is not None:
            return client
        if not url.endswith(f"{podman_socket_dir()}/podman.sock"):
            raise SandboxUnavailable(f"the Docker engine at {url} does not answer")
    if not start:
        raise SandboxUnavailable("no Docker engine is running")
    client = _ping(start_podman_service())
    if client is None:
        raise SandboxUnavailable("podman's API service started but does not answer")
    return client


def stop_podman_service() -> bool:
    """Stop the service Polar started (SIGTERM; SIGKILL after 10 s when this process started
    it and it has not exited); whether there was one."""
    pid_file = podman_socket_dir() / "service.pid"
    if not pid_file.exists():
        return False
    with contextlib.suppress(ProcessLookupError, ValueError):
        pid = int(pid_file.read_text())
        os.kill(pid, 15)
        for proc in _started_here:
            if proc.pid == pid:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    pid_file.unlink(missing_ok=True)
    (podman_socket_dir() / "podman.sock").unlink(missing_ok=True)
    return True
