"""Writing files so that a reader (or a crash) never sees half of one."""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: str | Path, data: str | bytes, *, durable: bool = False) -> Path:
    """Write `data` to a temporary file next to `path`, then rename it over `path` (atomic on
    POSIX: a reader sees the old file or the new one). `durable` also fsyncs the file and its
    folder, so the new content survives a power loss. Creates missing parent folders."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(p.parent)
    return p


def fsync_dir(path: str | Path) -> None:
    """Make a folder's entries (a rename into it) durable; a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_of(path: str | Path, chunk: int = 1 << 20) -> str:
    """The sha256 of a file's bytes, read in chunks (weights are hundreds of MB)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def leaves(folder: str | Path, path: str | Path) -> bool:
    """Whether `path` lies outside `folder` once `..` and symlinks are followed (a folder
    from elsewhere must not reach into the rest of the machine)."""
    root = Path(folder).resolve()
    return not Path(path).resolve().is_relative_to(root)


def die_with_parent() -> None:
    """For `subprocess.Popen(preexec_fn=...)`: the child gets SIGKILL when the process that
    started it dies (Linux's PR_SET_PDEATHSIG), so a `kill -9` of a long job leaves no helper
    running on behind it; a no-op elsewhere."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def pause_point(stage: str) -> None:
    """Test hook: with POLAR_PAUSE_AT=<stage>, write POLAR_PAUSE_FILE and sleep, so a test can
    `kill -9` a long job at a precise point (e.g. after a model is registered)."""
    if os.environ.get("POLAR_PAUSE_AT") != stage:
        return
    import time

    if marker := os.environ.get("POLAR_PAUSE_FILE"):
        Path(marker).write_text(stage)
    time.sleep(float(os.environ.get("POLAR_PAUSE_S", "60")))


@contextlib.contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created with its folder) for the block: one process at
    a time across Polar processes; released when the block ends or the process dies."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
