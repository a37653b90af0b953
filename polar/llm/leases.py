"""Several Polar processes sharing one model server: one starts it, the others attach, and the
last one out stops it, only if a holder started it.

A holder is a Polar process that needs the server for a while (`polar compare`, `polar eval`,
`polar llm improve`, the planner-RL sampler: `hold(servers)` around their episodes). Each
holder leaves a lease file `<state folder>/<host>-<port>.holders/<pid>-<start ticks>-<token>.json`
(its owner record, `polar.ownership`) while it holds the server. A server that a holder had to
start is marked `"lease": true` in its state file; when a holder lets go and no live holder
is left, it stops such a server. A server that was already running when the first holder came
(`polar serve-llm`, an earlier command, a foreign one attached to) is left running.

A holder killed with SIGKILL leaves its lease file behind: a lease whose process is gone (pid
and start time, so a recycled pid does not count) is stale and removed by the next holder that
comes or goes, and the last live holder still stops the server. One lock file per server
(`<host>-<port>.lease.lock`) orders the holders' arrivals and departures.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from polar.files import file_lock
from polar.llm import serve
from polar.ownership import owned_by_run, owner_record, process_alive

Announce = Callable[[str], None]


def holders_dir(host: str, port: int) -> Path:
    return serve.state_path(host, port).with_suffix(".holders")


def _lease_lock(host: str, port: int) -> contextlib.AbstractContextManager[None]:
    # not serve._lock: `serve.start` takes that one itself, and flock does not nest across opens
    return file_lock(serve.state_path(host, port).with_suffix(".lease.lock"))


def live_holders(host: str, port: int) -> list[dict[str, Any]]:
    """The holders of host:port whose process still runs; stale lease files are removed."""
    out = []
    for f in sorted(holders_dir(host, port).glob("*.json")):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            rec = {}
        if process_alive(rec.get("pid"), rec.get("start_ticks")):
            out.append({**rec, "lease_file": str(f)})
        else:
            f.unlink(missing_ok=True)
    return out


def acquire(s: serve.ServerSettings, announce: Announce = serve._stderr) -> Path:
    """Make sure the server answers (starting it when it does not, marked as a holder's) and
    take a lease on it; returns the lease file, for `release`."""
    with _lease_lock(s.host, s.port):
        live_holders(s.host, s.port)  # clears the leases of killed holders
        info = serve.ensure_server(s, announce, lasting=False)
        if info.get("started"):
            state = serve.read_state(s.host, s.port)
            if state is not None:
                state["lease"] = True  # a holder started it: the last holder out stops it
                serve.state_path(s.host, s.port).write_text(json.dumps(state, indent=1))
        lease = holders_dir(s.host, s.port) / f"{os.getpid()}-{owner_record()['start_ticks']}-{secrets.token_hex(4)}.json"
        lease.parent.mkdir(parents=True, exist_ok=True)
        lease.write_text(json.dumps(owner_record(), indent=1))
        return lease


def release(s: serve.ServerSettings, lease: Path, announce: Announce = serve._stderr) -> bool:
    """Give the lease back; stop the server when no live holder is left and a holder started
    it. Returns whether this call stopped it."""
    with _lease_lock(s.host, s.port):
        lease.unlink(missing_ok=True)
        if live_holders(s.host, s.port):
            return False
        state = serve.read_state(s.host, s.port)
        if state is None or not state.get("lease") or not serve.is_alive(state):
            return False
        serve.stop(s.host, s.port)
        if owned_by_run(state):  # the words `polar demo` has always used for its own server
            announce(f"stopped the server this run started ({state.get('model')} on {s.base_url}); "
                     "no other Polar process is using it")
        else:
            announce(f"stopped the {state.get('engine')} server for {state.get('model')} on {s.base_url}: "
                     "the last Polar process using it is done")
        return True


@contextlib.contextmanager
def hold(servers: Iterable[serve.ServerSettings], announce: Announce = serve._stderr) -> Iterator[None]:
    """Hold each autostarting local server (one per host:port) while the block runs."""
    unique = {(s.host, s.port): s for s in servers if s.autostart}
    held: list[tuple[serve.ServerSettings, Path]] = []
    try:
        for s in unique.values():
            held.append((s, acquire(s, announce)))
        yield
    finally:
        for s, lease in reversed(held):
            release(s, lease, announce)
