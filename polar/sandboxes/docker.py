"""The `docker` backend: the worker in a locked-down container, via the docker SDK.

Works against any Docker-API engine (Docker, or Podman's API service; see `engine.py`).
Each sandbox gets its own container, never reused by another program: no network, a
read-only root, a size-capped noexec tmpfs as /tmp, all capabilities dropped,
no-new-privileges, a PID limit, memory and CPU limits, user 65534, explicit nofile/nproc
ulimits (Podman on these hosts needs them), an empty environment, and inside it the same
worker with the same rlimits as the other backends. Frames travel over the container's
attached stdin/stdout (the engine multiplexes stdout/stderr with 8-byte headers, which
`AttachChannel` strips). A `ContainerPool` keeps started containers ready so acquiring one
costs no start-up.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import queue
import select
import struct
import threading
import time
from typing import Any

from polar.sandboxes.base import (
    SandboxCrash,
    SandboxError,
    SandboxLimits,
    SandboxMemoryError,
    SandboxUnavailable,
)
from polar.sandboxes.worker_host import Channel, WorkerSandbox, death_from_status, worker_config
from polar.wire import HEADER, ChannelClosed, ChannelTimeout, FrameTooLarge, ProtocolError, decode

_MUX = struct.Struct(">BxxxI")


class AttachChannel:
    """Polar frames over an attached container socket (stdout demultiplexed)."""

    def __init__(self, sock: Any, max_frame: int) -> None:
        self.sock = sock
        self.max_frame = max_frame
        self._raw = bytearray()  # multiplexed bytes as received
        self._out = bytearray()  # the worker's stdout, demultiplexed
        self.stderr = bytearray()

    def send_frame(self, frame: bytes, timeout: float | None = None) -> None:
        try:
            self.sock.sendall(frame)
        except OSError:
            raise ChannelClosed("the container's stdin is closed") from None

    def _fill(self, deadline: float | None) -> None:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                raise ChannelTimeout("no answer before the deadline")
        try:
            chunk = self.sock.recv(1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            raise ChannelClosed("the container closed its output")
        self._raw += chunk
        while len(self._raw) >= _MUX.size:
            stream, n = _MUX.unpack_from(self._raw)
            if len(self._raw) < _MUX.size + n:
                break
            payload = self._raw[_MUX.size : _MUX.size + n]
            del self._raw[: _MUX.size + n]
            if stream == 1:
                self._out += payload
            elif len(self.stderr) < 4096:
                self.stderr += payload[: 4096 - len(self.stderr)]

    def recv(self, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self._out) < HEADER.size:
            self._fill(deadline)
        (length,) = HEADER.unpack_from(self._out)
        if length > self.max_frame:
            raise FrameTooLarge(f"incoming frame of {length} bytes exceeds the limit of "
                                f"{self.max_frame} bytes")
        while len(self._out) < HEADER.size + length:
            self._fill(deadline)
        payload = bytes(self._out[HEADER.size : HEADER.size + length])
        del self._out[: HEADER.size + length]
        return decode(payload)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class WarmContainer:
    """A started container whose worker has said it is ready."""

    def __init__(self, container: Any, chan: AttachChannel, started_s: float) -> None:
        self.container = container
        self.chan = chan
        self.started_s = started_s


def _run_options(limits: SandboxLimits) -> dict[str, Any]:
    from docker.types import Ulimit

    tmpfs_mb = max(limits.file_mb, 1) * 4
    mem = (limits.memory_mb + 64) * 1024 * 1024  # backstop above the worker's own RLIMIT_AS
    return {
        "stdin_open": True,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": f"size={tmpfs_mb}m,mode=1777,noexec,nosuid,nodev"},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": 16,
        "mem_limit": mem,
        "memswap_limit": mem,
        "nano_cpus": 1_000_000_000,
        "user": "65534:65534",
        "ulimits": [Ulimit(name="nofile", soft=1024, hard=1024),
                    Ulimit(name="nproc", soft=1024, hard=1024),
                    Ulimit(name="core", soft=0, hard=0)],
        "working_dir": "/tmp",
        "environment": {},
        "labels": {"polar.sandbox": "1"},
        "detach": True,
    }


def start_container(client: Any, image: str, python: str, limits: SandboxLimits) -> WarmContainer:
    """Create, attach and start one container, and wait for its worker's ready frame."""
    import docker.errors

    t0 = time.perf_counter()
    cfg = worker_config(limits, "plain")
    argv = [python, "-I", "-S", "-B", "/opt/polar/worker.py", json.dumps(cfg)]
    try:
        container = client.containers.create(image, command=argv, **_run_options(limits))
        sock = client.api.attach_socket(container.id, params={"stdin": 1, "stdout": 1,
                                                              "stderr": 1, "stream": 1})
        container.start()
    except docker.errors.ImageNotFound:
        raise SandboxUnavailable(f"the sandbox image {image} is missing: run "
                                 "`polar sandbox build-image`") from None
    except docker.errors.APIError as err:
        raise SandboxUnavailable(f"the engine could not start a sandbox container: "
                                 f"{err.explanation or err}") from None
    raw = getattr(sock, "_sock", sock)  # the SDK wraps the hijacked socket in a SocketIO
    chan = AttachChannel(raw, max_frame=limits.output_bytes + 8192)
    try:
        ready = chan.recv(limits.load_timeout_s)
    except ProtocolError as err:
        _discard(container, chan)
        raise SandboxUnavailable(f"the sandbox container did not start its worker ({err}); "
                                 f"its stderr: {bytes(chan.stderr).decode(errors='replace')[:500]}") from None
    if ready != [0, "ready"]:
        _discard(container, chan)
        raise SandboxCrash("the sandbox container answered its start with something unexpected")
    return WarmContainer(container, chan, time.perf_counter() - t0)


_discarding: list[threading.Thread] = []


def _discard(container: Any, chan: AttachChannel | None) -> None:
    """Kill and remove a container in the background (removal takes a while and nothing
    waits on it); `_finish_discards` waits for these at interpreter exit."""
    if chan is not None:
        chan.close()

    def work() -> None:
        with contextlib.suppress(Exception):
            container.remove(force=True)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    _discarding[:] = [t for t in _discarding if t.is_alive()] + [thread]


@atexit.register
def _finish_discards() -> None:
    for thread in list(_discarding):
        thread.join(timeout=10)


class ContainerPool:
    """Keeps `size` started containers (for one set of limits) ready to hand out.

    A container is handed out once and destroyed on release, so no program ever sees state
    another left behind; a background thread starts replacements."""

    def __init__(self, limits: SandboxLimits | None = None, size: int = 2, client: Any = None,
                 image: str | None = None) -> None:
        from polar.sandboxes.engine import docker_client
        from polar.sandboxes.image import image_exists, image_ref

        self.limits = limits or SandboxLimits()
        self.client = client or docker_client()
        ref, recipe = image_ref()
        self.image = image or ref
        self.python = recipe.python
        if not image_exists(self.client, self.image):
            raise SandboxUnavailable(f"the sandbox image {self.image} is missing: run "
                                     "`polar sandbox build-image`")
        self.size = size
        self._ready: queue.Queue[WarmContainer] = queue.Queue()
        self._wanted = threading.Semaphore(0)
        self._closed = False
        self.last_error: SandboxError | None = None
        self._thread = threading.Thread(target=self._refill, daemon=True, name="polar-pool")
        self._thread.start()
        for _ in range(size):
            self._wanted.release()

    def _refill(self) -> None:
        while True:
            self._wanted.acquire()
            if self._closed:
                return
            try:
                warm = start_container(self.client, self.image, self.python, self.limits)
            except Exception as err:  # keep refilling; acquire reports the last failure
                self.last_error = err if isinstance(err, SandboxError) else SandboxUnavailable(
                    f"starting a sandbox container failed: {type(err).__name__}: {err}")
                time.sleep(1.0)
                self._wanted.release()
                continue
            if self._closed:
                _discard(warm.container, warm.chan)
                return
            self._ready.put(warm)

    def acquire(self, timeout: float = 30.0) -> WarmContainer:
        """A ready container (waits for one when the pool is drained)."""
        if self._closed:
            raise SandboxError("the container pool is closed")
        try:
            warm = self._ready.get(timeout=timeout)
        except queue.Empty:
            raise SandboxUnavailable(f"no sandbox container became ready within {timeout:g} s"
                                     + (f": {self.last_error}" if self.last_error else "")) from None
        self._wanted.release()
        return warm

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self._ready.qsize() < self.size and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> None:
        self._closed = True
        self._wanted.release()
        while True:
            try:
                warm = self._ready.get_nowait()
            except queue.Empty:
                break
            _discard(warm.container, warm.chan)

    def __enter__(self) -> ContainerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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

    def _start(self) -> Channel:
        if self.pool is not None:
            self._warm = self.pool.acquire()
        else:
            from polar.sandboxes.engine import docker_client
            from polar.sandboxes.image import image_ref

            self._client = self._client or docker_client()
            ref, recipe = image_ref()
            self._warm = start_container(self._client, self._image or ref, recipe.python,
                                         self.limits)
        return self._warm.chan

    def _kill(self) -> None:
        if self._warm is not None:
            with contextlib.suppress(Exception):
                self._warm.container.kill()
            _discard(self._warm.container, self._warm.chan)
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
