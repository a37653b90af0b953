"""The `process` backend: a persistent worker under bubblewrap, killed from outside.

Isolation (all of it required; without bubblewrap this backend refuses to run):
- new user, network, PID, IPC, UTS and mount namespaces (`bwrap --unshare-all`); when the
  host runs as root the worker is started as uid/gid 65534 outside the namespace too;
- a filesystem view holding only /usr (read-only), the worker runtime (read-only), a fresh
  /proc and minimal /dev, and a size-capped tmpfs /tmp whose /tmp/work is the working dir;
- an empty environment; rlimits on address space, CPU, processes (none), file size, open
  files and core dumps (set by the worker on itself before any untrusted code exists);
- a wall-clock watchdog in the host (`recv` deadline) that SIGKILLs the whole sandbox.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from polar.sandboxes.base import SandboxError, SandboxLimits, SandboxUnavailable
from polar.sandboxes.worker_host import (
    NOBODY,
    SPIN_US,
    WorkerSandbox,
    death_from_status,
    worker_config,
)
from polar.wire import FramedChannel

_HERE = Path(__file__).resolve().parent


def sandbox_python() -> str:
    """The interpreter the worker runs on: the system Python under /usr when there is one
    (the only tree bound into the sandbox), else the host's own base interpreter."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK):
            return cand
    return os.path.realpath(sys.executable)


@functools.cache
def runtime_dir() -> Path:
    """A world-readable copy of the worker and RestrictedPython, keyed by content hash.

    The sandbox user (65534) may not be able to read the checkout or the virtualenv (often
    under /root or /home), and binding those would expose user files; a copy of exactly
    these files can be bound read-only instead."""
    import RestrictedPython

    rp_dir = Path(RestrictedPython.__file__).parent
    files = [_HERE / "worker.py", *sorted(rp_dir.glob("*.py"))]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + f.read_bytes())
    root = Path(tempfile.gettempdir()) / f"polar-sandbox-runtime-{digest.hexdigest()[:16]}"
    if not root.exists():
        tmp = Path(tempfile.mkdtemp(prefix="polar-runtime-"))
        (tmp / "lib" / "RestrictedPython").mkdir(parents=True)
        shutil.copy(files[0], tmp / "worker.py")
        for f in files[1:]:
            shutil.copy(f, tmp / "lib" / "RestrictedPython" / f.name)
        for p in [tmp, *tmp.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        try:
            tmp.rename(root)
        except OSError:  # another process won the race: its copy is identical
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def _as_nobody() -> dict:
    """Popen arguments that drop root to nobody before bwrap runs (no-op when not root)."""
    if os.geteuid() != 0:
        return {}
    return {"user": NOBODY, "group": NOBODY, "extra_groups": []}


def bwrap_argv(python: str, runtime: Path, limits: SandboxLimits) -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (`bwrap`) is not installed: the process sandbox "
                                 "cannot isolate the code (apt-get install bubblewrap)")
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    for link in ("lib", "lib64", "lib32", "bin", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            argv += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.is_dir():
            argv += ["--ro-bind", str(target), f"/{link}"]
    if Path("/etc/ld.so.cache").exists():  # where the loader finds /usr/lib/<triplet> libraries
        argv += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    if not python.startswith("/usr/"):
        prefix = str(Path(python).resolve().parent.parent)
        argv += ["--ro-bind", prefix, prefix]
    tmpfs_bytes = max(limits.file_mb, 1) * 4 * 1024 * 1024
    argv += ["--ro-bind", str(runtime), "/opt/polar", "--proc", "/proc", "--dev", "/dev",
             "--size", str(tmpfs_bytes), "--tmpfs", "/tmp", "--dir", "/tmp/work",
             "--chdir", "/tmp/work", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    return argv


@functools.cache
def bwrap_problem() -> str | None:
    """None when bwrap can set up the full isolation here, else why not."""
    try:
        argv = bwrap_argv(sandbox_python(), runtime_dir(), SandboxLimits())
    except SandboxUnavailable as err:
        return str(err)
    try:
        out = subprocess.run([*argv, sandbox_python(), "-I", "-S", "-c", "print(1)"], env={},
                             capture_output=True, text=True, timeout=20, **_as_nobody())
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap failed to start: {err}"
    if out.returncode != 0 or out.stdout.strip() != "1":
        return f"bubblewrap cannot create the namespaces here: {out.stderr.strip()[:300]}"
    return None


class ProcessSandbox(WorkerSandbox):
    """Plain Python in an isolated worker process (bubblewrap); see the module docstring."""

    backend = "process"
    mode = "plain"
    require_isolation = True
    spin_us = SPIN_US

    def __init__(self, limits: SandboxLimits | None = None, python: str | None = None) -> None:
        super().__init__(limits)
        self.python = python or sandbox_python()
        self._proc: subprocess.Popen | None = None
        self._stderr: tempfile._TemporaryFileWrapper | None = None
        self._cwd: str | None = None
        self._killed = False

    def _argv(self) -> list[str]:
        runtime = runtime_dir()
        problem = bwrap_problem()
        if problem is None:
            cfg = worker_config(self.limits, self.mode, "/opt/polar/lib", self.spin_us)
            prefix = bwrap_argv(self.python, runtime, self.limits)
            return [*prefix, self.python, "-I", "-S", "-B", "/opt/polar/worker.py", json.dumps(cfg)]
        if self.require_isolation:
            raise SandboxUnavailable(f"the {self.backend} sandbox refuses to run without its "
                                     f"isolation: {problem}")
        # Restricted mode without bubblewrap: policy gate + rlimits + watchdog + empty env.
        self._cwd = tempfile.mkdtemp(prefix="polar-sandbox-")
        if os.geteuid() == 0:
            os.chown(self._cwd, NOBODY, NOBODY)
        cfg = worker_config(self.limits, self.mode, str(runtime / "lib"), self.spin_us)
        return [self.python, "-I", "-S", "-B", str(runtime / "worker.py"), json.dumps(cfg)]

    def _start(self) -> FramedChannel:
        argv = self._argv()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        self._killed = False
        try:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env={}, cwd=self._cwd or "/", start_new_session=True, close_fds=True,
                **_as_nobody(),
            )
        except OSError as err:
            raise SandboxUnavailable(f"cannot start the sandbox worker: {err}") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return FramedChannel(self._proc.stdout.fileno(), self._proc.stdin.fileno(),
                           self.limits.output_bytes + 8192, self.spin_us * 1e-6)

    def _kill(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._killed = True
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)  # bwrap and everything under it (pid namespace)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for f in (proc.stdin, proc.stdout):
            if f is not None:
                f.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._cwd:
            shutil.rmtree(self._cwd, ignore_errors=True)
            self._cwd = None
        self._proc = None

    def _death(self) -> SandboxError:
        proc = self._proc
        assert proc is not None
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:
            proc.wait()
            cpu = None
        rc = proc.returncode
        if rc == 1 and self._stderr is not None:
            self._stderr.seek(0)
            text = self._stderr.read(2000).decode(errors="replace").strip()
            if text:
                return SandboxUnavailable(f"the sandbox worker failed to start: {text}")
        return death_from_status(rc, self.limits, cpu)
