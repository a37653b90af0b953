"""Every hostile program in attacks/ against every backend.

Each program's header names its class and the outcomes the isolating backends (process,
docker) may produce: typed errors, or `contained` (a result that carries no secret).
The restricted backend may also stop a program earlier with SandboxViolation (its static
gate). In every case the canary file is unchanged, no secret appears in the result or the
error, and the HTTP server on 127.0.0.1 receives nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from polar.sandboxes import base
from polar.sandboxes.base import SandboxError, make_sandbox
from polar.sandboxes.engine import podman_socket_dir

from .conftest import ATTACK_LIMITS

ATTACKS = sorted(Path(__file__).parent.joinpath("attacks").glob("*.py"))
BACKENDS = ["restricted", "process", "docker"]


def _header(path: Path, key: str) -> str:
    for line in path.read_text().splitlines()[:5]:
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"{path.name} has no '# {key}:' header")


def test_suite_covers_the_issue() -> None:
    classes = {_header(p, "class") for p in ATTACKS}
    assert len(ATTACKS) >= 40
    assert {"import escape", "introspection escape", "file access", "network",
            "resource exhaustion", "signals", "deserialisation", "C-level loop", "exit",
            "hostile result", "secrets", "passed objects"} <= classes


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("attack", ATTACKS, ids=[p.stem for p in ATTACKS])
def test_attack_is_contained(attack: Path, backend: str, canary, http_server, request) -> None:
    port, hits = http_server
    expect = _header(attack, "expect")
    kwargs = {"pool": request.getfixturevalue("attack_pool")} if backend == "docker" else {}
    ctx = {"canary": str(canary.path), "canary_dir": str(canary.dir), "env_name": canary.env_name,
           "secret_hint": canary.secret[:12], "http_port": port,
           "engine_socket": str(podman_socket_dir() / "podman.sock")}
    hits_before = len(hits)
    outcome: object
    t0 = time.monotonic()
    with make_sandbox(backend, ATTACK_LIMITS, **kwargs) as box:
        try:
            box.load(attack.read_text())
            outcome = box.call("attack", ctx)
        except SandboxError as err:
            outcome = err
    elapsed = time.monotonic() - t0

    text = f"{type(outcome).__name__}: {outcome}" if isinstance(outcome, SandboxError) else json.dumps(outcome)
    assert not canary.leaked_in(text), f"secret leaked: {text[:300]}"
    assert canary.intact(), "the canary file was changed"
    assert len(hits) == hits_before, "the sandbox reached the host's HTTP server"
    assert elapsed < 15, f"took {elapsed:.1f} s"

    allowed = set(expect.split("|"))
    if backend == "restricted":
        allowed |= {"SandboxViolation", "SandboxCodeError"}
    got = type(outcome).__name__ if isinstance(outcome, SandboxError) else "contained"
    if isinstance(outcome, SandboxError):
        assert isinstance(outcome, getattr(base, got)), got
    assert got in allowed, f"{backend}: expected {expect}, got {text[:300]}"
