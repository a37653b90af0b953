"""Who started a thing Polar runs outside its own process, and whether that owner still exists.

Every model server, podman service and sandbox container Polar starts records an owner: the
process (pid and start time, which together name one process even after the pid is reused),
the checkout Polar runs from, the workspace (current folder) and the run. A run is one
top-level Polar command and everything it starts: the first Polar process of a run picks an id
and exports it as `POLAR_RUN_ID`, so its workers and subprocesses inherit it (a test session
sets it once for the whole session). Polar stops on its own only what its run started
(`polar demo`'s servers at exit, the test suite's leak guard); it reuses what its own state
folder records; everything else is foreign: refused, or used only when it is told to attach.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any

RUN_ENV = "POLAR_RUN_ID"
_PACKAGE = Path(__file__).resolve().parent


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat from field 3 (state) on; the command name before it may hold spaces."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot), from /proc; None when it is gone.
    With the pid it names a process uniquely: a recycled pid has a later start."""
    stat = _stat(pid)
    return None if stat is None else int(stat[19])  # field 22


def process_alive(pid: Any, ticks: Any) -> bool:
    """Whether the process recorded as (pid, start ticks) still runs (a zombie, dead but not yet
    reaped by its parent, does not)."""
    stat = None if pid is None or ticks is None else _stat(int(pid))
    return stat is not None and int(stat[19]) == int(ticks) and stat[0] not in ("Z", "X")


def run_id() -> str:
    """This run's id: `$POLAR_RUN_ID`, else a fresh one that this process's children inherit."""
    rid = os.environ.get(RUN_ENV)
    if not rid:
        rid = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        os.environ[RUN_ENV] = rid
    return rid


def checkout() -> str:
    """The folder Polar runs from (a source checkout, or the site-packages holding the wheel)."""
    return str(_PACKAGE.parent)


def owner_record(pid: int | None = None) -> dict[str, Any]:
    """Who is starting something now: this process (or `pid`), its checkout, workspace and run."""
    pid = pid or os.getpid()
    return {"pid": pid, "start_ticks": start_ticks(pid), "host": socket.gethostname(),
            "checkout": checkout(), "workspace": os.environ.get("POLAR_HOME") or os.getcwd(),
            "run": run_id()}


def owned_by_run(record: dict[str, Any] | None, run: str | None = None) -> bool:
    """Whether a state record's owner is this run (or `run`)."""
    owner = (record or {}).get("owner") or {}
    return owner.get("run") == (run or run_id())


def describe(record: dict[str, Any] | None) -> str:
    """The owner of a state record in words, for an error message."""
    owner = (record or {}).get("owner")
    if not owner:
        return "no owner recorded (started by an older Polar, or by hand)"
    alive = "running" if process_alive(owner.get("pid"), owner.get("start_ticks")) else "gone"
    return (f"started by pid {owner.get('pid')} ({alive}) of run {owner.get('run')}, "
            f"checkout {owner.get('checkout')}, workspace {owner.get('workspace')}")


def cmdline(pid: int) -> str:
    """A process's command line, for messages ('' when it cannot be read)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def record_owner(entry: Path) -> None:
    """Note beside a cache entry Polar just made who made it (`<entry>.owner.json`): the cache's
    artefacts are shared between a user's runs and the test suite's (tests/conftest.py)."""
    sidecar = entry.with_name(entry.name + ".owner.json")
    tmp = sidecar.with_name(f"{sidecar.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(json.dumps({**owner_record(), "made_at": time.time()}, indent=1))
        tmp.replace(sidecar)
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only cache: the entry stands without its note
