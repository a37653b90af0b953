"""The sandbox contract every backend implements, its limits and its typed errors.

    with make_sandbox("process", SandboxLimits(timeout_s=0.5)) as box:
        box.load(source)             # -> names of the functions the code defines
        action = box.call("act", obs) # plain data in, plain data out

Code receives plain data only (see `to_plain`) and hands back plain data that the worker
serialised inside the sandbox; the host never calls repr/==/iter on an object the code made.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

import numpy as np
from pydantic import Field

from polar.config import StrictModel
from polar.errors import PolarError

Backend = Literal["restricted", "process", "docker"]
BACKENDS: tuple[str, ...] = ("restricted", "process", "docker")


class SandboxError(PolarError):
    """Base of every sandbox failure; the CLI exits with code 3."""

    exit_code = 3


class SandboxTimeout(SandboxError):
    """A call ran past its wall-clock limit, or the code used up its CPU time."""


class SandboxMemoryError(SandboxError):
    """The code needed more memory than its limit."""


class SandboxViolation(SandboxError):
    """The code did something the sandbox policy forbids (an import, a name, a file size...)."""


class SandboxCrash(SandboxError):
    """The sandboxed process died (a segfault, an exit, a kill) or broke the protocol."""


class SandboxOutputError(SandboxError):
    """The code returned something too large, not plain data, or outside the action space."""


class SandboxCodeError(SandboxError):
    """The code raised an exception; carries its type name and a truncated message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"the code raised {type_name}: {message}")
        self.type_name = type_name
        self.detail = message


class SandboxUnavailable(SandboxError):
    """The backend's isolation cannot be set up on this machine; nothing was run."""


class SandboxLimits(StrictModel):
    """Limits every backend enforces. Memory and CPU are enforced by the kernel (rlimits /
    cgroups), wall time by a watchdog in the host that kills the sandbox."""

    timeout_s: float = Field(1.0, gt=0, description="wall-clock limit of one call")
    load_timeout_s: float = Field(10.0, gt=0, description="wall-clock limit of start + load")
    cpu_s: int = Field(60, gt=0, description="total CPU seconds for the sandbox's lifetime")
    memory_mb: int = Field(256, ge=32, description="address space (process) / cgroup memory")
    output_bytes: int = Field(65536, ge=64, description="largest result a call may return")
    max_env_steps: int = Field(10_000, gt=0, description="env steps a policy may drive")
    max_source_bytes: int = Field(200_000, gt=0, description="largest source accepted by load")
    file_mb: int = Field(1, ge=0, description="largest file the code may write in its tmp dir")


def to_plain(value: Any, *, _depth: int = 0) -> Any:
    """Convert host data (numpy arrays included) into plain JSON-like values for the code.

    Anything else (an env, a logger, a partial) is refused: a live object is a capability."""
    if _depth > 64:
        raise SandboxError("cannot pass data nested more than 64 levels deep to sandboxed code")
    t = type(value)
    if value is None or t is float or t is int or t is str or t is bool:
        return value
    if t is list and all(type(v) is float or type(v) is int for v in value):
        return value  # the common flat observation: already plain
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise SandboxError(f"cannot pass a numpy array of dtype {value.dtype} to sandboxed code")
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [to_plain(v, _depth=_depth + 1) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise SandboxError(f"cannot pass a dict with a {type(k).__name__} key to sandboxed code")
            out[str(k)] = to_plain(v, _depth=_depth + 1)
        return out
    raise SandboxError(f"cannot pass a {type(value).__name__} to sandboxed code: only plain data "
                       "(None, bool, int, float, str, list, dict, numpy arrays) crosses the boundary")


class Sandbox(ABC):
    """One loaded program in one isolated worker. Not thread-safe: one call at a time."""

    backend: str = "?"

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()

    @abstractmethod
    def load(self, source: str) -> list[str]:
        """Load (replacing any previous) code; returns the names of the functions it defines."""

    @abstractmethod
    def call(self, name: str, *args: Any) -> Any:
        """Call a function the code defines with plain-data arguments; returns plain data."""

    @abstractmethod
    def close(self) -> None:
        """Kill the worker and free everything; safe to call twice."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_source(self, source: str) -> None:
        if not isinstance(source, str):
            raise SandboxError(f"source must be a str, got {type(source).__name__}")
        size = len(source.encode("utf-8", "surrogatepass"))
        if size > self.limits.max_source_bytes:
            raise SandboxViolation(
                f"the source is {size} bytes, over the limit of {self.limits.max_source_bytes} "
                "bytes (limits.max_source_bytes)"
            )


def make_sandbox(backend: str, limits: SandboxLimits | None = None, **kwargs: Any) -> Sandbox:
    """A sandbox of the named backend: restricted, process or docker."""
    if backend == "restricted":
        from polar.sandboxes.restricted import RestrictedSandbox

        return RestrictedSandbox(limits, **kwargs)
    if backend == "process":
        from polar.sandboxes.process import ProcessSandbox

        return ProcessSandbox(limits, **kwargs)
    if backend == "docker":
        from polar.sandboxes.docker import DockerSandbox

        return DockerSandbox(limits, **kwargs)
    raise SandboxError(f"unknown sandbox backend {backend!r}; expected one of {', '.join(BACKENDS)}")
