"""The test run's isolation, and a guard for the whole run: no test leaves a server behind.

Isolation. Before anything reads them, the run gets its own Polar cache, state folder, podman
service folder and run id (`POLAR_CACHE_DIR`, `POLAR_STATE_DIR`, `POLAR_PODMAN_DIR`,
`POLAR_RUN_ID`) in a fresh temporary folder, so it never sees, reuses or stops a user's model
servers, podman service or containers (a user's `polar task` on 127.0.0.1:8015 keeps running),
and every server or container a test starts records this run as its owner. Tests that start
servers take free ports (`tests.llm.engine.free_port`). Ray's temporary folder (`RAY_TMPDIR`)
is in the run's folder too: the sessions of every Ray the tests start and Ray's "current
cluster" address file, which `ray.init(address="auto")` elsewhere on the machine would read.

The artefacts `make install` puts in the user's cache (the assembled Gemma GGUF, merged shipped
models, llama.cpp's GGUF converter, dequantised checkpoints and tokenizers, the llama.cpp
wheel) are symlinked into the test cache, not copied: they are content-keyed and written
under a temporary name, then renamed, so sharing them is safe, nothing is rebuilt or
downloaded per run, and one a test builds is kept for the next run as before. The state
folder is never shared. A test that damages a cache entry on purpose uses a cache of its own.

The guard. A server writes its state file (pid, command, owner) under the state folder. After
each test the files of this run that appeared during it and whose process is alive are noted
with the test's id; at the end of the run every such server still alive is stopped and named
with the test that started it, and the run fails (a leaked llama.cpp server holds a core and
~200 MB for good). Sandbox containers of this run still present fail it the same way. The
podman service this run started is stopped at the end. A run killed with SIGKILL leaves its
folder behind: the next run stops what that folder records and removes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from polar import ownership
from polar.llm import serve
from polar.llm.models import cache_dir

# cache entries made by `make install` or by tests, shared with the user's cache (see above)
SHARED_ARTEFACTS = ("models", "llama.cpp-converter", "checkpoints", "tokenizers", "wheels", "llama-server")
ISOLATION_VARS = ("POLAR_CACHE_DIR", "POLAR_STATE_DIR", "POLAR_PODMAN_DIR", ownership.RUN_ENV)

_started_by: dict[Path, str] = {}  # state file -> the test during which its server started
_root: Path | None = None


def _isolate() -> Path:
    """Point this process (and every child it starts) at a run-private cache, state folder and
    podman folder; link the user's artefacts into the cache. Returns the private root."""
    user_cache = cache_dir()  # the user's, read before it is replaced
    root = Path(tempfile.mkdtemp(prefix="polar-test-"))  # short: podman's socket path is capped at 108
    cache = root / "cache"
    cache.mkdir()
    for name in SHARED_ARTEFACTS:
        target = user_cache / name
        with contextlib.suppress(OSError):  # a read-only home: the test cache keeps its own copy
            target.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            (cache / name).symlink_to(target, target_is_directory=True)
    os.environ.update({"POLAR_CACHE_DIR": str(cache), "POLAR_STATE_DIR": str(root / "state"),
                       "POLAR_PODMAN_DIR": str(root / "podman"), "RAY_TMPDIR": str(root),
                       ownership.RUN_ENV: f"test-{os.getpid()}-{root.name.removeprefix('polar-test-')}"})
    return root


def _reap_dead_runs() -> list[str]:
    """Clear what an earlier test run killed with SIGKILL left behind: for each
    /tmp/polar-test-* folder whose session process is gone, stop the servers and the podman
    service it recorded (each checked by pid and start time) and remove the folder. A live
    run's folder (another checkout's test run, right now) is left alone."""
    from polar.sandboxes import engine

    cleared, podman_dir = [], os.environ.get("POLAR_PODMAN_DIR")
    for root in Path(tempfile.gettempdir()).glob("polar-test-*"):
        try:
            pid = int(json.loads((root / "session.json").read_text())["pid"])
        except (OSError, ValueError, KeyError):
            continue  # not one of ours, or still being set up
        if ownership.start_ticks(pid) is not None:
            continue  # that session still runs (or its pid is reused: left alone, to be safe)
        for f in (root / "state").glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                state = json.loads(f.read_text())
                if serve.is_alive(state):
                    os.killpg(int(state["pid"]), 9)
        with contextlib.suppress(Exception):
            os.environ["POLAR_PODMAN_DIR"] = str(root / "podman")
            engine.stop_podman_service()
        shutil.rmtree(root, ignore_errors=True)
        cleared.append(str(root))
    if podman_dir is None:
        os.environ.pop("POLAR_PODMAN_DIR", None)
    else:
        os.environ["POLAR_PODMAN_DIR"] = podman_dir
    return cleared


def pytest_configure(config: pytest.Config) -> None:
    global _root
    if _root is None:
        _reap_dead_runs()
        _root = _isolate()
        (_root / "session.json").write_text(json.dumps({"pid": os.getpid(), "run": ownership.run_id()}))


def _live_state_files(since: float) -> list[Path]:
    folder = serve.state_dir()
    found = []
    for f in folder.glob("*.json") if folder.is_dir() else []:
        try:
            state = json.loads(f.read_text())
            if f.stat().st_mtime >= since and serve.is_alive(state) and ownership.owned_by_run(state):
                found.append(f)
        except (OSError, ValueError):
            continue  # being written or removed right now
    return found


@pytest.fixture(autouse=True)
def _note_servers_started(request: pytest.FixtureRequest):
    start = time.time() - 1.0
    yield
    for f in _live_state_files(start):
        _started_by.setdefault(f, request.node.nodeid)


def _leaked_servers() -> list[str]:
    leaked = []
    for f, test in _started_by.items():
        if not f.exists():
            continue
        state = json.loads(f.read_text())
        if not serve.is_alive(state) or not ownership.owned_by_run(state):
            continue
        host, port = f.stem.rsplit("-", 1)
        serve.stop(host, int(port), run=ownership.run_id())
        leaked.append(f"{test} left a {state.get('engine')} server ({state.get('model')}) running on "
                      f"{host}:{port} (pid {state.get('pid')}); stopped now")
    return leaked


def _leaked_containers() -> list[str]:
    """This run's sandbox containers still present, removed now; then this run's podman
    service is stopped. Nothing is started to check: no service of this run, nothing to do."""
    from polar.sandboxes import docker, engine

    if not ownership.owned_by_run(engine.read_record()) or engine.service_health()[0] != "healthy":
        engine.stop_podman_service(run=ownership.run_id())
        return []
    leaked = []
    with contextlib.suppress(Exception):
        client = engine.docker_client(start=False)
        docker.finish_removals()
        for c in docker.run_containers(client):
            leaked.append(f"sandbox container {c.short_id} ({c.status}, owner {c.labels.get(docker.OWNER_LABEL)}) "
                          "was left by this run; removed now")
            with contextlib.suppress(Exception):
                c.remove(force=True)
    engine.stop_podman_service(run=ownership.run_id())
    return leaked


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = [f"LEAKED SERVER: {line}" for line in _leaked_servers()]
    leaked += [f"LEAKED CONTAINER: {line}" for line in _leaked_containers()]
    if leaked:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            for line in leaked:
                reporter.write_line(line, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    if _root is not None:  # the links go, never what they point to (rmtree does not follow them)
        shutil.rmtree(_root, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_engine():
    """A docker SDK client with the sandbox image present (built once if missing).

    At the end of the session, after every pool closed: no container this test process
    started is left, running or stopped."""
    from polar.sandboxes import docker
    from polar.sandboxes.engine import docker_client
    from polar.sandboxes.image import build_image

    client = docker_client()
    build_image(client)
    yield client
    docker.finish_removals()
    left = client.containers.list(all=True, filters={"label": f"{docker.OWNER_LABEL}={docker.owner_id()}"})
    assert left == [], ("sandbox containers left behind (id, status, created, finished): "
                        f"{[(c.short_id, c.status, c.attrs.get('Created'), c.attrs.get('State', {}).get('FinishedAt')) for c in left]}")
