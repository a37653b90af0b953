"""Fixtures for the sandbox tests: canaries, a real HTTP server, and the container engine.

The docker fixtures build on `docker_engine` (tests/conftest.py: one per session, shared with
the code-mode tests), which starts Podman's Docker API service and builds the image when it is
missing (cached by content hash), so a fresh machine needs only the Debian packages from
scripts/install_system_deps.sh.
"""

from __future__ import annotations

import http.server
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from polar.sandboxes.base import SandboxLimits

ATTACK_LIMITS = SandboxLimits(timeout_s=1.0, load_timeout_s=20, cpu_s=5, memory_mb=128,
                              output_bytes=65536, file_mb=1)


class Canary:
    """A secret file outside the sandbox and a secret in the host's environment."""

    def __init__(self, root: Path) -> None:
        self.dir = root
        self.path = root / "canary-secret.txt"
        self.secret = "CANARY-" + secrets.token_hex(16)
        self.env_name = "POLAR_TEST_SECRET_TOKEN"
        self.env_secret = "ENVSECRET-" + secrets.token_hex(16)
        self.path.write_text(self.secret)
        self.stat = self.path.stat()

    def intact(self) -> bool:
        st = self.path.stat()
        return (self.path.read_text() == self.secret and st.st_mtime_ns == self.stat.st_mtime_ns
                and st.st_ino == self.stat.st_ino)

    def leaked_in(self, text: str) -> bool:
        return self.secret in text or self.env_secret in text


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"you reached the host")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Canary]:
    c = Canary(tmp_path_factory.mktemp("canary"))
    os.environ[c.env_name] = c.env_secret
    yield c
    os.environ.pop(c.env_name, None)


@pytest.fixture(scope="session")
def http_server() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1 that records every request it gets."""
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], _Recorder.hits
    server.shutdown()


@pytest.fixture(scope="session")
def attack_pool(docker_engine) -> Iterator[object]:
    from polar.sandboxes.docker import ContainerPool

    with ContainerPool(ATTACK_LIMITS, size=3, client=docker_engine) as pool:
        yield pool
