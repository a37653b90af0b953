"""The host side of a sandbox worker: frames in, plain data or a typed error out.

Backends differ only in how they start, kill and post-mortem the worker (`_start`, `_kill`,
`_death`); the request/reply protocol and the mapping of failures to typed errors live here.
"""

from __future__ import annotations

import signal
from abc import abstractmethod
from typing import Any

from polar.sandboxes.base import (
    Sandbox,
    SandboxCodeError,
    SandboxCrash,
    SandboxError,
    SandboxLimits,
    SandboxMemoryError,
    SandboxOutputError,
    SandboxTimeout,
    SandboxViolation,
    to_plain,
)
from polar.wire import (
    DEFAULT_MAX_FRAME,
    ChannelClosed,
    ChannelTimeout,
    FramedChannel,
    FrameEncoder,
    FrameTooLarge,
    ProtocolError,
)

# Both ends of a worker channel busy-poll this long for the other's next frame before
# sleeping (adaptive: a mostly-missing spin turns itself off). On an idle machine a sleeping
# reader costs 70-100 us per wake-up, several times a small call; 0 disables the spin.
SPIN_US = 100.0
NOBODY = 65534  # the unprivileged uid/gid every worker runs as


def worker_config(limits: SandboxLimits, mode: str, libdir: str | None = None,
                  spin_us: float = 0.0) -> dict[str, Any]:
    """What the worker applies to itself before any untrusted code exists; `spin_us`: how
    long it busy-polls for the next request after each reply (0: it sleeps in read())."""
    return {
        "mode": mode,
        "libdir": libdir,
        "spin_us": spin_us,
        "memory_bytes": limits.memory_mb * 1024 * 1024,
        "cpu_s": limits.cpu_s,
        "output_bytes": limits.output_bytes,
        "file_bytes": limits.file_mb * 1024 * 1024,
        "nproc": 0,
        "nofile": 32,
    }


def death_from_status(status: int, limits: SandboxLimits, cpu_used: float | None) -> SandboxError:
    """Explain a worker's exit status (a signal number when negative or > 128)."""
    sig = -status if status < 0 else status - 128 if status > 128 else 0
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used is not None
                                 and cpu_used >= limits.cpu_s - 0.5):
        return SandboxTimeout(f"the code used up its CPU time limit of {limits.cpu_s} s "
                              "(limits.cpu_s) and was killed")
    if sig == signal.SIGXFSZ:
        return SandboxViolation(f"the code wrote a file larger than the limit of "
                                f"{limits.file_mb} MB (limits.file_mb) and was killed")
    if sig == signal.SIGSEGV:
        return SandboxCrash("the sandboxed process crashed with a segmentation fault "
                            "(often: recursion too deep for the C stack)")
    if sig == signal.SIGKILL:
        return SandboxCrash(f"the sandboxed process was killed by SIGKILL (by the CPU-time hard "
                            f"limit of {limits.cpu_s} s or the kernel's memory killer at "
                            f"{limits.memory_mb} MB)")
    if sig:
        return SandboxCrash(f"the sandboxed process was killed by signal "
                            f"{signal.Signals(sig).name if sig in signal.valid_signals() else sig}")
    return SandboxCrash(f"the sandboxed process exited with status {status} "
                        "(the code ended its own process)")


_KINDS: dict[str, type[SandboxError]] = {
    "violation": SandboxViolation,
    "memory": SandboxMemoryError,
    "output": SandboxOutputError,
}


def _describe(what: str, is_call: bool) -> str:
    return f"the call to {what}()" if is_call else what


def _plain_args(args: tuple[Any, ...]) -> list[Any]:
    """`to_plain(list(args))`, with the usual case checked inline: scalars and flat lists
    of numbers are plain already (exact types only, as in to_plain)."""
    for a in args:
        t = type(a)
        if t is float or t is int or t is str or t is bool or a is None:
            continue
        if t is list and all(type(v) is float or type(v) is int for v in a):
            continue
        return to_plain(list(args))
    return list(args)


def reply_value(reply: Any) -> Any:
    """[0, value] -> value; [1, kind, type, message] -> the matching typed error."""
    if not isinstance(reply, list) or not reply or reply[0] not in (0, 1):
        raise SandboxCrash("the sandbox sent a malformed reply (protocol broken)")
    if reply[0] == 0 and len(reply) == 2:
        return reply[1]
    if len(reply) != 4 or not all(isinstance(x, str) for x in reply[1:]):
        raise SandboxCrash("the sandbox sent a malformed error reply (protocol broken)")
    _, kind, type_name, message = reply
    message = " ".join(message.split())  # one line: the CLI prints `ErrorType: message`
    if kind in _KINDS:
        raise _KINDS[kind](f"{type_name}: {message}" if kind != "output" else message)
    raise SandboxCodeError(type_name[:100], message[:2000])


class WorkerSandbox(Sandbox):
    """A persistent worker process speaking frames; subclasses say how it starts and dies."""

    _start_reads_ready = False  # whether _start already consumed the worker's ready frame

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        super().__init__(limits)
        self._chan: FramedChannel | None = None
        self._loaded = False
        # Requests (sources up to max_source_bytes, large observations) are not bound by the
        # reply limit the channel enforces on incoming frames.
        self._encode = FrameEncoder(DEFAULT_MAX_FRAME)

    # --- what a backend provides

    @abstractmethod
    def _start(self) -> FramedChannel:
        """Start a worker; return its channel (the ready frame not yet read)."""

    @abstractmethod
    def _kill(self) -> None:
        """Kill the worker from outside (SIGKILL or container kill); must not raise."""

    @abstractmethod
    def _death(self) -> SandboxError:
        """After the channel closed: wait for the worker and explain why it died."""

    # --- the contract

    def load(self, source: str) -> list[str]:
        self._check_source(source)
        if self._chan is None:
            self._chan = self._start()
            if not self._start_reads_ready:
                self._roundtrip(None, self.limits.load_timeout_s, "start")
        names = self._roundtrip(["load", source], self.limits.load_timeout_s, "load")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise SandboxCrash("the sandbox answered load with something other than a list of names")
        self._loaded = True
        return names

    def call(self, name: str, *args: Any) -> Any:
        if not self._loaded or self._chan is None:
            raise SandboxError("no code is loaded: call load(source) first "
                               "(after a timeout or crash the sandbox must be loaded again)")
        return self._roundtrip(["call", name, _plain_args(args)], self.limits.timeout_s, name, True)

    def close(self) -> None:
        if self._chan is not None:
            self._kill()
        self._chan = None
        self._loaded = False

    def _roundtrip(self, msg: Any, timeout: float, what: str, is_call: bool = False) -> Any:
        """One request and its reply; `what` is "start", "load" or (is_call) the called
        function's name: error texts are built only on an error, as this runs once per call."""
        assert self._chan is not None
        try:
            frame = None if msg is None else self._encode(msg)
        except ProtocolError as err:  # e.g. arguments over 64 MB; the worker is untouched
            raise SandboxError(f"cannot send {_describe(what, is_call)} to the sandbox: {err}") from None
        try:
            if frame is not None:
                self._chan.send_frame(frame, timeout)
            reply = self._chan.recv(timeout)
        except ChannelTimeout:
            self._fail()
            limit_name = "limits.timeout_s" if is_call else "limits.load_timeout_s"
            raise SandboxTimeout(f"{_describe(what, is_call)} ran past its wall-clock limit of {timeout:g} s "
                                 f"({limit_name}); the sandbox was killed") from None
        except ChannelClosed:
            err = self._death()
            self._fail()
            raise err from None
        except FrameTooLarge:
            self._fail()
            raise SandboxOutputError(f"{_describe(what, is_call)} returned more than the output limit of "
                                     f"{self.limits.output_bytes} bytes (limits.output_bytes)") from None
        except ProtocolError as perr:
            self._fail()
            raise SandboxCrash(f"the sandbox broke the protocol: {perr}") from None
        try:
            return reply_value(reply)
        except SandboxCrash:
            self._fail()
            raise

    def _fail(self) -> None:
        """After a fatal error the worker is gone; the next load starts a fresh one."""
        self._kill()
        self._chan = None
        self._loaded = False
