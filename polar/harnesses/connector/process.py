"""One running game process: start it, connect the channel, stop it without leaving anything.

The process gets its own session (process group) so that killing it also kills anything the
game spawned, and its stdout/stderr go to a log file whose tail ends up in error messages.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from polar.errors import HarnessError
from polar.harnesses.connector.config import ConnectorConfig
from polar.harnesses.connector.protocol import ENV_MAX_FRAME, ENV_SOCKET, ENV_SPIN_US, ENV_TRANSPORT
from polar.wire import FramedChannel, pack_frame

_CLOSE_FRAME = pack_frame({"op": "close"})


class StartupFailed(Exception):
    """The process died or stayed silent while starting; `cause` says which."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


def resolve_command(command: list[str], base_dir: Path) -> list[str]:
    """`python` -> this interpreter; a relative program path -> relative to the YAML folder."""
    cmd = list(command)
    if cmd[0] == "python":
        cmd[0] = sys.executable
    elif "/" in cmd[0] and not os.path.isabs(cmd[0]):
        cmd[0] = str((base_dir / cmd[0]).resolve())
    return cmd


class GameProcess:
    """A started game process with a connected `FramedChannel`."""

    def __init__(self, config: ConnectorConfig, base_dir: Path, workdir: Path) -> None:
        self.config = config
        self.log_path = workdir / "game.log"
        self._sock: socket.socket | None = None
        cmd = resolve_command(config.command, base_dir)
        env = dict(os.environ)
        env.update(config.env or {})
        env[ENV_TRANSPORT] = config.transport
        env[ENV_MAX_FRAME] = str(config.max_frame_bytes)
        env[ENV_SPIN_US] = str(config.spin_us)
        deadline = time.monotonic() + config.startup_timeout_s
        listener: socket.socket | None = None
        if config.transport == "unix":
            # We listen, the game connects: the path is ours, so there is no race on who
            # creates it and no stale socket from an earlier run to trip over.
            sock_path = workdir / "game.sock"
            with contextlib.suppress(FileNotFoundError):
                sock_path.unlink()
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(sock_path))
            listener.listen(1)
            env[ENV_SOCKET] = str(sock_path)
        try:
            with open(self.log_path, "wb") as log:
                stdio = config.transport == "stdio"
                self.proc = subprocess.Popen(
                    cmd,
                    cwd=base_dir,
                    env=env,
                    stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
                    stdout=subprocess.PIPE if stdio else log,
                    stderr=log,
                    bufsize=0,
                    start_new_session=True,
                )
        except OSError as err:
            if listener is not None:
                listener.close()
            raise HarnessError(f"cannot start the game process {cmd} in {base_dir}: "
                               f"{err.strerror or err}") from None
        spin_s = config.spin_us * 1e-6
        if listener is None:
            assert self.proc.stdout is not None and self.proc.stdin is not None
            self.channel = FramedChannel(self.proc.stdout.fileno(), self.proc.stdin.fileno(),
                                       config.max_frame_bytes, spin_s)
            return
        try:
            self._sock = self._accept(listener, deadline)
        except StartupFailed:
            self.kill()
            raise
        finally:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                Path(env[ENV_SOCKET]).unlink()
        fd = self._sock.fileno()
        self.channel = FramedChannel(fd, fd, config.max_frame_bytes, spin_s)

    def _accept(self, listener: socket.socket, deadline: float) -> socket.socket:
        while True:
            if self.proc.poll() is not None:
                raise StartupFailed(self.describe_exit("start-up"))
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise StartupFailed(f"game process did not connect within "
                                    f"{self.config.startup_timeout_s:g} s")
            ready, _, _ = select.select([listener], [], [], min(wait, 0.05))
            if ready:
                conn, _ = listener.accept()
                return conn

    # -- diagnostics ---------------------------------------------------------------------
    def stderr_tail(self, max_chars: int = 400) -> str:
        """The last non-empty line the game wrote to stderr/stdout, shortened."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][-max_chars:] if lines else ""

    def describe_exit(self, during: str) -> str:
        """Why the channel closed: the exit code or signal, plus the last stderr line."""
        try:
            rc = self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"game process closed the connection during {during}"
        if rc < 0:
            try:
                name = f" ({signal.Signals(-rc).name})"
            except ValueError:
                name = ""
            text = f"game process exited with signal {-rc}{name} during {during}"
        else:
            text = f"game process exited with code {rc} during {during}"
        tail = self.stderr_tail()
        return f"{text}; last output: {tail}" if tail else text

    # -- stopping ------------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL the game's whole process group and reap it (no zombie left behind)."""
        # The group is the game's own session (start_new_session): its children go too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        self.proc.wait()
        self._close_fds()

    def shutdown(self, grace_s: float) -> None:
        """Ask the game to close, give it `grace_s` to exit, then kill it."""
        if self.proc.poll() is None:
            try:
                self.channel.send_frame(_CLOSE_FRAME, grace_s)
                self.channel.recv(grace_s)
                self.proc.wait(timeout=grace_s)
            except Exception:  # any failure here just means we fall through to SIGKILL
                pass
        self.kill()  # also reaps the group after a clean exit: the game's children go too

    def _close_fds(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
