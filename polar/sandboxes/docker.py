"""The `docker` backend: the worker in a locked-down container, via the docker SDK.

Works against a Docker-API engine on this machine (Docker, or Podman's API service; see
`engine.py`). Each sandbox gets its own container, never reused by another program: no
network, a read-only root, a size-capped noexec tmpfs as /tmp, all capabilities dropped,
no-new-privileges, a PID limit, memory and CPU limits, user 65534, explicit nofile/nproc
ulimits (Podman on these hosts needs them), an empty environment, and inside it the same
worker with the same rlimits as the other backends, under an init process (catatonit, from
the image) so that the worker is not PID 1: signals such as the CPU limit's SIGXCPU act on
it as they do in the process backend, and its exit status comes back as 128 + signal.

Frames travel over a Unix socket, not the engine's attach stream (which multiplexes through
the engine and capped a round trip at a few thousand calls/s): the host listens in a fresh
directory that only uid 65534 can enter, bind-mounts it read-only into the container, and
accepts exactly one connection, the worker's; then the socket file and the directory are
removed, so nothing else can connect. Both ends then speak `polar.wire` frames with the same
short busy-poll as the process backend.

Containers never outlive their use: a closed sandbox's container is removed in the
background (waited for at interpreter exit), a `ContainerPool` removes what it holds when
closed, and every container carries its owner's identity (host, pid, start time) so that
`reap_orphans` removes containers whose owner died (a `kill -9`); it runs once per process
before the first container starts. Containers also carry their run and checkout
(`polar.ownership`): `run_containers` lists one run's only, so two test runs (or a test run and
a user's) never see or count each other's containers.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import select
import shutil
import socket
import struct
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from polar.ownership import checkout, run_id, start_ticks
from polar.sandboxes.base import (
    SandboxCrash,
    SandboxError,
    SandboxLimits,
    SandboxMemoryError,
    SandboxUnavailable,
)
from polar.sandboxes.worker_host import (
    NOBODY,
    SPIN_US,
    WorkerSandbox,
    death_from_status,
    worker_config,
)
from polar.wire import FramedChannel, ProtocolError

log = logging.getLogger(__name__)

CHANNEL_DIR = "/run/polar"  # where the socket's directory appears inside the container
CHANNEL_NAME = "channel.sock"
LABEL = "polar.sandbox"
OWNER_LABEL = "polar.owner"
RUN_LABEL = "polar.run"
CHECKOUT_LABEL = "polar.checkout"


# -- who owns a container ------------------------------------------------------------------


def owner_id(pid: int | None = None) -> str:
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{start_ticks(pid)}"


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's, or not ours to judge
    return str(start_ticks(int(pid))) == started


def owner_labels() -> dict[str, str]:
    """The labels naming who starts a container now: process, run and checkout."""
    return {LABEL: "1", OWNER_LABEL: owner_id(), RUN_LABEL: run_id(), CHECKOUT_LABEL: checkout()}


def run_containers(client: Any, run: str | None = None) -> list[Any]:
    """Every sandbox container of this run (or `run`), running or not; none of another run's."""
    return _list_sandboxes(client, labels=[f"{RUN_LABEL}={run or run_id()}"])


def _list_sandboxes(client: Any, attempts: int = 5, labels: list[str] | None = None) -> list[Any]:
    """Every sandbox container (with all these labels). Podman answers 500 ("read
    /proc/PID/cgroup: no such process") when a container exits while it lists them, and the
    SDK's inspection of each listed container fails ("no such container") when one is removed
    in between: those races are retried, not reported."""
    import docker.errors

    filters = {"label": [LABEL, *(labels or [])]}
    for attempt in range(1, attempts):
        try:
            return client.containers.list(all=True, filters=filters)
        except docker.errors.APIError as err:
            if "no such process" not in str(err) and "no such container" not in str(err):
                raise
            time.sleep(0.1 * attempt)
    return client.containers.list(all=True, filters=filters)


def reap_orphans(client: Any) -> int:
    """Remove sandbox containers whose owning process has died; returns how many."""
    removed = 0
    for container in _list_sandboxes(client):
        owner = container.labels.get(OWNER_LABEL)
        if owner and not _owner_alive(owner):
            removed += _remove(container, None)
    return removed


_reaped = False


def _reap_once(client: Any) -> None:
    global _reaped
    if not _reaped:
        _reaped = True
        with contextlib.suppress(Exception):
            reap_orphans(client)


# -- removal in the background -----------------------------------------------------------

_pending: list[threading.Thread] = []  # removals under way (guarded by _pending_lock)
_pending_lock = threading.Lock()
_open_pools: weakref.WeakSet[ContainerPool] = weakref.WeakSet()
_refillers: list[threading.Thread] = []  # pools' start threads, also of pools closed while one was starting
_live: set[WarmContainer] = set()  # started and not yet discarded (also those never closed)


def _discard(container: Any, conn: socket.socket | None = None) -> None:
    """Remove the container in the background (force-removal kills it; nothing waits on
    it); `finish_removals` waits for these at interpreter exit."""
    thread = threading.Thread(target=_remove, args=(container, conn), daemon=True,
                              name="polar-sandbox-remove")
    with _pending_lock:  # several threads discard at once (pools' refills, sandboxes closing)
        thread.start()
        _pending[:] = [t for t in _pending if t.is_alive()] + [thread]


def _remove(container: Any, conn: socket.socket | None, patience_s: float = 120.0) -> bool:
    """Force-remove (kill) a container; whether it is gone. The channel stays open until
    then: closing it first lets the worker exit on its own while the engine kills it, and
    Podman then refuses the removal ("container state improper"). A refused removal is
    retried, waiting for the container to stop in between (a loaded engine can take tens of
    seconds), for up to `patience_s`; a container still there after that is logged."""
    import docker.errors

    deadline = time.monotonic() + patience_s
    attempt = 0
    try:
        while True:
            attempt += 1
            try:
                container.remove(force=True)
                return True
            except docker.errors.NotFound:
                return True
            except Exception as err:  # noqa: BLE001 - the engine's refusals vary
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("sandbox container %s not removed after %d attempts: %s",
                                getattr(container, "short_id", "?"), attempt, err)
                    return False
                if attempt < 5:
                    time.sleep(min(left, 0.2 * attempt))
                else:  # wait until it has stopped, then try again
                    with contextlib.suppress(Exception):
                        container.wait(timeout=max(1, min(30, int(left))))
                    time.sleep(min(max(left, 0), 1.0))
    finally:
        if conn is not None:
            conn.close()


def finish_removals(timeout: float = 180.0) -> None:
    """Close every open pool, remove every container still live, and wait for the removals
    under way (runs at exit)."""
    deadline = time.monotonic() + timeout
    for pool in list(_open_pools):
        pool.close(wait_s=max(0.0, deadline - time.monotonic()))
    for thread in list(_refillers):  # a closed pool's start under way discards what it started
        thread.join(max(0.0, deadline - time.monotonic()))
    for warm in list(_live):  # sandboxes nobody closed
        warm.discard()
    while time.monotonic() < deadline:  # until no removal is under way, those begun meanwhile too
        with _pending_lock:
            running = [t for t in _pending if t.is_alive()]
        if not running:
            break
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))


atexit.register(finish_removals)


# -- starting one container --------------------------------------------------------------


class WarmContainer:
    """A started container whose worker has connected and said it is ready."""

    def __init__(self, container: Any, conn: socket.socket, chan: FramedChannel,
                 started_s: float) -> None:
        self.container = container
        self.conn = conn
        self.chan = chan
        self.started_s = started_s
        _live.add(self)

    def discard(self) -> None:
        if self in _live:
            _live.discard(self)
            _discard(self.container, self.conn)


def _run_options(limits: SandboxLimits, channel_dir: str) -> dict[str, Any]:
    from docker.types import Mount, Ulimit

    tmpfs_mb = max(limits.file_mb, 1) * 4
    mem = (limits.memory_mb + 64) * 1024 * 1024  # backstop above the worker's own RLIMIT_AS
    return {
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": f"size={tmpfs_mb}m,mode=1777,noexec,nosuid,nodev"},
        "mounts": [Mount(CHANNEL_DIR, channel_dir, type="bind", read_only=True)],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": 16,
        "mem_limit": mem,
        "memswap_limit": mem,
        "nano_cpus": 1_000_000_000,
        "user": f"{NOBODY}:{NOBODY}",
        "ulimits": [Ulimit(name="nofile", soft=1024, hard=1024),
                    Ulimit(name="nproc", soft=1024, hard=1024),
                    Ulimit(name="core", soft=0, hard=0)],
        "working_dir": "/tmp",
        "environment": {},
        "labels": owner_labels(),
        "detach": True,
    }


def _listen() -> tuple[socket.socket, str]:
    """A listening socket in a fresh directory only the sandbox user can enter."""
    d = tempfile.mkdtemp(prefix="polar-sandbox-io-")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(os.path.join(d, CHANNEL_NAME))
        listener.listen(1)
        if os.geteuid() == 0:
            os.chown(d, NOBODY, NOBODY)  # mode 0700: root and uid 65534 only
            os.chown(os.path.join(d, CHANNEL_NAME), NOBODY, NOBODY)
        else:
            # Rootless engines map uid 65534 to a sub-uid we cannot chown to; the socket is
            # then connectable by local users who know the path (docs/sandboxes.md).
            os.chmod(d, 0o711)
            os.chmod(os.path.join(d, CHANNEL_NAME), 0o777)
    except BaseException:
        listener.close()
        shutil.rmtree(d, ignore_errors=True)
        raise
    return listener, d


def _require_local_engine(client: Any) -> None:
    base = str(getattr(client.api, "base_url", ""))
    if not base.startswith("http+docker://local"):
        raise SandboxUnavailable(f"the docker backend bind-mounts a Unix socket into the container, "
                                 f"so it needs an engine on this machine; {base} is remote")


def _accept(listener: socket.socket, container: Any, timeout: float) -> socket.socket:
    """The worker's connection; fails early when the container exits without connecting."""
    deadline = time.monotonic() + timeout
    while True:
        wait = min(0.25, deadline - time.monotonic())
        if wait <= 0:
            raise SandboxUnavailable(f"the sandbox container's worker did not connect within "
                                     f"{timeout:g} s (limits.load_timeout_s)")
        if select.select([listener], [], [], wait)[0]:
            conn, _ = listener.accept()
            break
        container.reload()
        if container.status in ("exited", "dead"):
            logs = container.logs(stdout=True, stderr=True)[-500:].decode(errors="replace")
            raise SandboxUnavailable(f"the sandbox container exited before its worker connected; "
                                     f"its output: {logs.strip() or '(none)'}")
    problem = _peer_problem(conn, container.id)
    if problem:
        conn.close()
        raise SandboxUnavailable(f"refusing a channel connection: {problem}")
    return conn


def _peer_problem(conn: socket.socket, container_id: str) -> str | None:
    """Why the connected peer is not this container's worker (None: it is). The kernel says
    who connected (SO_PEERCRED): it must be uid 65534 (when we run as root) and a process in
    this container's cgroup, not another sandbox user racing for the socket."""
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                      struct.calcsize("3i")))
    if os.geteuid() == 0 and uid != NOBODY:
        return f"the peer runs as uid {uid}, not the sandbox user {NOBODY}"
    try:
        cgroups = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None if pid == 0 else f"cannot read the cgroup of the peer (pid {pid})"
    if container_id not in cgroups:
        return f"the peer (pid {pid}) is not in the container {container_id[:12]}"
    return None


def start_container(client: Any, image: str, python: str, init: str,
                    limits: SandboxLimits) -> WarmContainer:
    """Create and start one container, accept its worker's connection and wait for its
    ready frame."""
    import docker.errors

    _require_local_engine(client)
    _reap_once(client)
    t0 = time.perf_counter()
    cfg = worker_config(limits, "plain", spin_us=SPIN_US) | {
        "connect": f"{CHANNEL_DIR}/{CHANNEL_NAME}"}
    argv = [init, "--", python, "-I", "-S", "-B", "/opt/polar/worker.py", json.dumps(cfg)]
    listener, channel_dir = _listen()
    container = None
    try:
        container = client.containers.create(image, command=argv,
                                             **_run_options(limits, channel_dir))
        container.start()
        conn = _accept(listener, container, limits.load_timeout_s)
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(f"the sandbox image {image} is missing: run "
                                 "`polar sandbox build-image`") from None
    except docker.errors.APIError as err:
        if container is not None:
            _discard(container)
        raise SandboxUnavailable(f"the engine could not start a sandbox container: "
                                 f"{err.explanation or err}") from None
    except BaseException:
        if container is not None:
            _discard(container)
        raise
    finally:
        listener.close()
        shutil.rmtree(channel_dir, ignore_errors=True)  # nothing else can connect now
    chan = FramedChannel(conn.fileno(), conn.fileno(), limits.output_bytes + 8192,
                         SPIN_US * 1e-6)
    warm = WarmContainer(container, conn, chan, 0.0)
    try:
        ready = chan.recv(limits.load_timeout_s)
    except ProtocolError as err:
        warm.discard()
        raise SandboxUnavailable(f"the sandbox container's worker did not start ({err})") from None
    if ready != [0, "ready"]:
        warm.discard()
        raise SandboxCrash("the sandbox container answered its start with something unexpected")
    warm.started_s = time.perf_counter() - t0
    return warm


def _image(image: str | None) -> tuple[str, str, str]:
    """(image ref, python path, init path), from the recipe."""
    from polar.sandboxes.image import image_ref

    ref, recipe = image_ref()
    return image or ref, recipe.python, recipe.init


# -- a pool of ready containers ------------------------------------------------------------


class ContainerPool:
    """Keeps `size` started containers (for one set of limits) ready to hand out.

    A container is handed out once and destroyed on release, so no program ever sees state
    another left behind; a background thread starts replacements."""

    def __init__(self, limits: SandboxLimits | None = None, size: int = 2, client: Any = None,
                 image: str | None = None) -> None:
        from polar.sandboxes.engine import docker_client
        from polar.sandboxes.image import image_exists

        self.limits = limits or SandboxLimits()
        self.client = client or docker_client()
        self.image, self.python, self.init = _image(image)
        if not image_exists(self.client, self.image):  # fail here, not in the refill thread
            raise SandboxUnavailable(f"the sandbox image {self.image} is missing: run "
                                     "`polar sandbox build-image`")
        self.size = size
        self._ready: queue.Queue[WarmContainer] = queue.Queue()
        self._wanted = threading.Semaphore(0)
        self._closed = False
        self.last_error: SandboxError | None = None
        self._thread = threading.Thread(target=self._refill, daemon=True, name="polar-pool")
        _open_pools.add(self)
        self._thread.start()
        _refillers[:] = [t for t in _refillers if t.is_alive()] + [self._thread]
        for _ in range(size):
            self._wanted.release()

    def _refill(self) -> None:
        while True:
            self._wanted.acquire()
            if self._closed:
                return
            try:
                warm = start_container(self.client, self.image, self.python, self.init,
                                       self.limits)
            except Exception as err:  # keep refilling; acquire reports the last failure
                self.last_error = err if isinstance(err, SandboxError) else SandboxUnavailable(
                    f"starting a sandbox container failed: {type(err).__name__}: {err}")
                time.sleep(1.0)
                self._wanted.release()
                continue
            if self._closed:
                warm.discard()
                return
            self.last_error = None  # the engine starts containers again
            self._ready.put(warm)

    def acquire(self, timeout: float = 30.0) -> WarmContainer:
        """A ready container (waits for one when the pool is drained). When starting one
        failed and none is ready, fails at once with that cause instead of waiting out the
        timeout on an engine that cannot start containers."""
        if self._closed:
            raise SandboxError("the container pool is closed")
        deadline = time.monotonic() + timeout
        while True:
            try:
                warm = self._ready.get(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
                break
            except queue.Empty:
                if self.last_error is not None:
                    raise SandboxUnavailable(f"starting a sandbox container failed: {self.last_error}") from None
                if time.monotonic() >= deadline:
                    raise SandboxUnavailable(f"no sandbox container became ready within {timeout:g} s") from None
        self._wanted.release()
        return warm

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self._ready.qsize() < self.size and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self, wait_s: float = 0.0) -> None:
        """Remove the ready containers; with `wait_s`, also wait that long for a start under
        way (at interpreter exit, so that it is removed rather than left running)."""
        self._closed = True
        _open_pools.discard(self)
        self._wanted.release()
        if wait_s > 0:
            self._thread.join(wait_s)
        while True:
            try:
                warm = self._ready.get_nowait()
            except queue.Empty:
                break
            warm.discard()

    def __enter__(self) -> ContainerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the sandbox -------------------------------------------------------------------------


class DockerSandbox(WorkerSandbox):
    backend = "docker"
    _start_reads_ready = True

    def __init__(self, limits: SandboxLimits | None = None, pool: ContainerPool | None = None,
                 client: Any = None, image: str | None = None) -> None:
        super().__init__(limits)
        if pool is not None and pool.limits != self.limits:
            raise SandboxError("the container pool was made for different limits than this sandbox")
        self.pool = pool
        self._client = client
        self._image = image
        self._warm: WarmContainer | None = None

    def _start(self) -> FramedChannel:
        if self.pool is not None:
            self._warm = self.pool.acquire()
        else:
            from polar.sandboxes.engine import docker_client

            self._client = self._client or docker_client()
            ref, python, init = _image(self._image)
            self._warm = start_container(self._client, ref, python, init, self.limits)
        return self._warm.chan

    def _kill(self) -> None:
        if self._warm is not None:
            self._warm.discard()
            self._warm = None

    def _death(self) -> SandboxError:
        assert self._warm is not None
        container = self._warm.container
        try:
            status = container.wait(timeout=10).get("StatusCode", -1)
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        except Exception:
            return SandboxCrash("the sandbox container stopped and the engine cannot say why")
        if oom:
            return SandboxMemoryError(f"the container was killed for exceeding its memory "
                                      f"limit of {self.limits.memory_mb} MB (limits.memory_mb)")
        return death_from_status(status, self.limits, None)
