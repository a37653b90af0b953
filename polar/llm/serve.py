"""`polar serve-llm`: start, find and stop a real OpenAI-compatible engine for a local model.

Engines (each a separate process, reached over HTTP on 127.0.0.1 like any remote API):
- `llamacpp`: llama.cpp's server from llama-cpp-python (`python -m llama_cpp.server`) for GGUF
  files, on CPU, with JSON-schema grammars and a RAM prompt cache; one request at a time;
- `llama-server`: llama.cpp's own server binary (`polar.llm.llama_server` builds it once from
  the same llama.cpp source) for GGUF files, with `parallel` slots batched together, so K
  episodes' decisions are evaluated at once;
- `transformers`: `transformers serve` for a checkpoint folder (e.g. a freshly fine-tuned
  model; no conversion);
- `vllm`: `vllm serve` on a GPU machine.

A started server is described by a state file `<state folder>/<host>-<port>.json` (pid,
command, model, engine, log file, and its owner: the process, checkout, workspace and run that
started it; `polar.ownership`). The state folder is `$POLAR_STATE_DIR`, else `<cache>/servers`.
`polar serve-llm --stop` and `--status` read it, and a planner profile whose `server:` block
names a model starts the server when it is not running (`ensure_server`). A file lock keeps
parallel workers from starting it twice, and a server of ours that is alive but busy (it
answers one request at a time) is waited for, not started again.

Ownership: Polar reuses a server only when its state folder records it as alive (ours), or
when the profile says `attach: true`; a server that answers on the port but is not recorded
here (another checkout's, another cache's, a test run's, one started by hand) is refused with
what was found and how to clear it, never stopped. A state file whose process is gone is stale
and replaced. Stopping on its own (`stop_on_exit`) touches only what this run started.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from polar.config import StrictModel
from polar.errors import PolarError
from polar.files import file_lock
from polar.llm.models import Engine, ModelEntry, cache_dir, resolve_model, weights_path
from polar.ownership import (
    cmdline,
    describe,
    owned_by_run,
    owner_record,
    process_alive,
    run_id,
    start_ticks,
)


class ServeError(PolarError):
    """An engine is missing, could not be started, or did not become ready."""

    exit_code = 2


ENGINE_HINTS = {
    "llamacpp": "llama.cpp's server is not installed in this environment: pip install "
                "'polar[local-llm]' (or `make install`; it builds llama-cpp-python from source, ~11 min on 2 cores)",
    "llama-server": "llama.cpp's llama-server is built from the llama-cpp-python sdist's llama.cpp source "
                    "(python -m polar.llm.llama_server --build; needs cmake and a C++ compiler)",
    "transformers": "`transformers serve` is not installed in this environment: pip install 'polar[serve-transformers]'",
    "vllm": "vLLM is not installed in this environment. Install the optional extra: pip install 'polar[vllm]' "
            "(vLLM needs a Linux machine with a CUDA GPU). Any other OpenAI-compatible server works too: "
            "point a profile's api_base at it.",
}


class ServerSettings(StrictModel):
    """How to serve a local model: the `server:` block of a planner profile, or the options of
    `polar serve-llm`."""

    model: str = Field(description="A model name (`polar llm models`), name@version, a .gguf file or a checkpoint folder.")
    engine: Engine | None = Field(default=None, description="Default: the model's (llamacpp for GGUF, transformers for checkpoints).")
    host: str = "127.0.0.1"
    port: int = Field(default=8012, ge=1, le=65535)
    n_ctx: int = Field(default=2048, ge=256, description="llama.cpp's context window: prompt + reply tokens.")
    threads: int | None = Field(default=None, ge=1, description="CPU threads; default: all cores but one "
                                "(llama.cpp's threads spin-wait on each other, so a contended core slows all).")
    prompt_cache: bool = Field(default=False, description=(
        "llama-cpp-python's RAM cache of evaluated prompt states, for prefix reuse across interleaved "
        "prompts. Off by default: each saved state keeps the whole logits matrix, which its size limit "
        "does not count, so memory grows by ~100 MB per request until the server is OOM-killed. The "
        "shared prefix of consecutive decisions is reused without it (llama.cpp's KV prefix match)."))
    parallel: int = Field(default=1, ge=1, le=64, description=(
        "llama-server's slots (-np): requests it decodes together in one batch. An LLM arm then plays "
        "this many episodes at a time against the server (each slot keeps n_ctx tokens)."))
    engine_args: list[str] = Field(default_factory=list, description="Extra command-line arguments for the engine.")
    autostart: bool = Field(default=True, description="A planner using this profile starts the server when it is not running.")
    attach: bool = Field(default=False, description=(
        "Use a server that answers on this port although this Polar's state folder does not record it "
        "(one started by hand, by another checkout or cache). Polar never stops a server it attached to."))
    startup_timeout_s: float = Field(default=300.0, gt=0)

    @model_validator(mode="after")
    def _parallel_needs_a_batching_engine(self) -> ServerSettings:
        # llama-cpp-python's server answers one request at a time: K episodes would only queue
        # behind each other and evict each other's evaluated prompt
        if self.parallel > 1 and self.engine not in ("llama-server", "vllm"):
            raise ValueError(f"parallel: {self.parallel} slots need engine: llama-server (or vllm), "
                             f"not {self.engine or 'the default engine'}")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`attach` and `parallel` appear only when set: a dumped server block (a per-seed model's
        profile overrides, part of its cells' keys) stays what it was before the fields existed."""
        out = handler(self)
        for name in self.at_default("attach", "parallel"):
            out.pop(name, None)
        return out

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/v1"


# --- commands ------------------------------------------------------------------------


def _require(engine: str, module: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ServeError(ENGINE_HINTS[engine])


def _console_script(name: str, engine: str) -> str:
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if exe is None:
        raise ServeError(f"the `{name}` command is not on PATH; {ENGINE_HINTS[engine]}")
    return exe


def engine_threads(s: ServerSettings) -> int:
    """The CPU threads the engine gets: the setting, else all cores but one."""
    return s.threads or max(1, (os.cpu_count() or 1) - 1)


def engine_command(s: ServerSettings, model: ModelEntry | str, engine: Engine) -> list[str]:
    """The engine's command line. `model` is an entry, or (vLLM only) a hub id passed through."""
    threads = engine_threads(s)
    if engine == "llamacpp":
        _require(engine, "llama_cpp.server")
        if not isinstance(model, ModelEntry) or model.format != "gguf":
            raise ServeError(f"llama.cpp serves GGUF files; {getattr(model, 'path', model)} is not one "
                             "(serve a checkpoint folder with --engine transformers)")
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(weights_path(model)),
               "--model_alias", model.name, "--host", s.host, "--port", str(s.port),
               "--n_ctx", str(s.n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
               "--cache", str(s.prompt_cache).lower()]
        if model.chat_format:
            cmd += ["--chat_format", model.chat_format]
        return [*cmd, *s.engine_args]
    if engine == "llama-server":
        return llama_server_command(s, model, threads)
    if engine == "transformers":
        _require(engine, "transformers")
        path = str(weights_path(model)) if isinstance(model, ModelEntry) else model
        exe = _console_script("transformers", engine)
        return [exe, "serve", path, "--host", s.host, "--port", str(s.port), *s.engine_args]
    _require("vllm", "vllm")
    exe = _console_script("vllm", "vllm")
    name = str(weights_path(model)) if isinstance(model, ModelEntry) else model
    return [exe, "serve", name, "--host", s.host, "--port", str(s.port), *s.engine_args]


# llama-server's settings under which a greedy decision does not depend on how many episodes
# are in flight (with the binary built without llamafile's sgemm, polar.llm.llama_server, and
# each lane keeping to its own slot, polar.evals.concurrent):
# - flash attention off: on CPU it takes a split-KV path (chunks per thread, merged after)
#   for a lone decoding sequence with 512+ cached tokens and a one-chunk path when several
#   slots decode together, and the two round differently; without it, attention is ggml's
#   per-row products and soft-max, the same for any batch;
# - no weight repacking: repacked weights run a 4-row GEMM for batches of 4 rows and more and
#   a GEMV for the rest, so a row's result would depend on its neighbours.
# The KV cache stays per slot (not unified): a unified one places a slot's cells among the
# others', and the attention sums then change with their positions. Measured in
# docs/local-llm.md ("Greedy decisions"); tests/llm/test_llama_server_greedy.py holds it.
DETERMINISM_ARGS = ("--flash-attn", "off", "--no-repack", "--no-kv-unified")


def llama_server_command(s: ServerSettings, model: ModelEntry | str, threads: int) -> list[str]:
    """llama-server's command line (the binary built on first use). Each of the `parallel` slots
    gets the whole n_ctx (-c is the total, split across slots); continuous batching puts the
    slots' tokens in one batch; the RAM prompt cache is capped, since the machine is shared."""
    from polar.llm.llama_server import BuildError, ensure_binary

    if not isinstance(model, ModelEntry) or model.format != "gguf":
        raise ServeError(f"llama-server serves GGUF files; {getattr(model, 'path', model)} is not one "
                         "(serve a checkpoint folder with --engine transformers)")
    try:
        exe = ensure_binary()
    except BuildError as err:
        raise ServeError(f"{err}\n{ENGINE_HINTS['llama-server']}") from None
    cmd = [str(exe), "--model", str(weights_path(model)), "--alias", model.name, "--host", s.host,
           "--port", str(s.port), "--ctx-size", str(s.n_ctx * s.parallel), "--parallel", str(s.parallel),
           "--threads", str(threads), "--threads-batch", str(threads), "--cont-batching",
           "--cache-ram", "256", "--no-webui", *DETERMINISM_ARGS]
    if model.chat_format:  # a GGUF without its own template: one of llama.cpp's built-in ones
        cmd += ["--chat-template", model.chat_format]
    return [*cmd, *s.engine_args]


def served_name(model: ModelEntry | str, engine: Engine) -> str:
    """The model id the server answers to (what a profile's `model:` names after `openai/`)."""
    if isinstance(model, ModelEntry):
        return model.name if engine in ("llamacpp", "llama-server") else str(weights_path(model))
    return model


def weights_id(model: ModelEntry | str) -> str:
    """Which weights a server loads, beyond the name it answers to: versions of one model
    share a served name, so a server of ours is reused only for the same version and file."""
    return f"{model.ref} {model.path}" if isinstance(model, ModelEntry) else model


def _check_weights(s: ServerSettings, state: dict[str, Any] | None, model: ModelEntry | str) -> None:
    """Refuse to reuse our server when it loaded other weights under the same served name (a
    state file from before this check records none: reused as before)."""
    loaded = (state or {}).get("weights")
    if loaded is not None and loaded != weights_id(model):
        raise ServeError(f"{s.base_url} serves {loaded.split()[0]} ({loaded.split(maxsplit=1)[-1]}), not "
                         f"{weights_id(model).split()[0]}: the same served name, other weights; stop it "
                         f"(polar serve-llm --stop --port {s.port}) or choose another port")


def resolve(s: ServerSettings) -> tuple[ModelEntry | str, Engine]:
    """The model entry and engine; an unknown, non-local name passes through to vLLM only."""
    try:
        entry: ModelEntry | str = resolve_model(s.model)
    except PolarError as err:
        if s.engine != "vllm":
            raise ServeError(f"{err} (a Hugging Face hub id is served only by --engine vllm, on a GPU "
                             "machine with network access)") from None
        entry = s.model  # a hub id: vLLM fetches it itself
    engine = s.engine or (entry.engine if isinstance(entry, ModelEntry) else "vllm")
    return entry, engine


# --- state files and probing -------------------------------------------------------------


def state_dir() -> Path:
    """The state folder: where this Polar records the servers it started (`$POLAR_STATE_DIR`,
    else `<cache>/servers`). Servers recorded elsewhere are not this Polar's."""
    env = os.environ.get("POLAR_STATE_DIR")
    return Path(env).expanduser() if env else cache_dir() / "servers"


def state_path(host: str, port: int) -> Path:
    return state_dir() / f"{host}-{port}.json"


def read_state(host: str, port: int) -> dict[str, Any] | None:
    try:
        return json.loads(state_path(host, port).read_text())
    except (OSError, json.JSONDecodeError):
        return None


_start_ticks = start_ticks  # the name the tests know


def is_alive(state: dict[str, Any]) -> bool:
    """Whether the recorded process still runs (and is ours: same pid and start time)."""
    return process_alive(state.get("pid"), state.get("start_ticks"))


def probe(base_url: str, timeout: float = 2.0) -> list[str] | None:
    """The model ids a server at `base_url` serves (GET /v1/models), or None when none answers."""
    try:
        with urllib.request.urlopen(f"{base_url}/v1/models", timeout=timeout) as r:
            data = json.loads(r.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]


def _answer_of_ours(s: ServerSettings, name: str) -> list[str] | None:
    """What our own live server on this port serves, waiting while it is busy; None when no
    live server of ours serves `name` there. llama-cpp-python's server answers GET /v1/models
    only between completions (the model's lock), so while one suite worker's request runs,
    another worker's probe times out: that is a busy server, not a missing one."""
    state = read_state(s.host, s.port)
    if state is None or state.get("served_name") != name or not is_alive(state):
        return None
    deadline = time.monotonic() + s.startup_timeout_s
    while time.monotonic() < deadline and is_alive(state):
        served = probe(s.base_url, timeout=max(1.0, min(30.0, deadline - time.monotonic())))
        if served is not None:
            return served
        time.sleep(0.25)
    return None


def _lock(host: str, port: int) -> contextlib.AbstractContextManager[None]:
    return file_lock(state_path(host, port).with_suffix(".lock"))


def _engine_env() -> dict[str, str]:
    """The engine's environment: unbuffered (its log shows each request as it comes), and
    without variables llama.cpp's server would take over its command line (HOST, PORT, ...)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT", "CONFIG_FILE", "MODEL")}
    return {**env, "PYTHONUNBUFFERED": "1"}


def _log_tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def death_note(host: str, port: int) -> str | None:
    """When the server Polar started on host:port has died (a crash, a kill), say so with the
    last lines of its log; None when no server of ours was recorded there or it still runs.
    A failed call's "connection error" then names its cause."""
    state = read_state(host, port)
    if state is None or is_alive(state):
        return None
    log = Path(str(state.get("log", "")))
    return (f"the {state.get('engine', 'model')} server Polar started for {state.get('model')} "
            f"(pid {state.get('pid')}) is no longer running; last lines of {log}:\n{_log_tail(log, 8)}")


def listener_pid(port: int) -> int | None:
    """The process listening on TCP `port` on this machine (from /proc; None when unknown)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                f = line.split()
                if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{f[9]}]")
    for proc in Path("/proc").iterdir() if inodes else []:
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
    return None


def _check_owned(s: ServerSettings, served: list[str]) -> dict[str, Any] | None:
    """The state of our server answering at s.base_url; None when it is not ours but the
    settings say attach. A server not recorded alive in our state folder is refused: what
    answers, who runs it, and how to clear it."""
    state = read_state(s.host, s.port)
    if state is not None and is_alive(state):
        return state
    if s.attach:
        return None
    pid = listener_pid(s.port)
    who = f"pid {pid}: {cmdline(pid)[:200]}" if pid else "a process this account cannot see"
    recorded = ("" if state is None else f"; the state file there records pid {state.get('pid')}, "
                f"which is gone ({describe(state)})")
    raise ServeError(
        f"{s.base_url} answers (serving {', '.join(served) or 'no model'}) but this Polar did not start it: "
        f"no live server is recorded for that port in its state folder {state_dir()}{recorded}. It is run by {who} "
        f"(another checkout, another POLAR_CACHE_DIR, a test run, or started by hand); Polar neither reuses nor "
        f"stops it. Set `attach: true` in the profile's server block to use it as it is, choose another port, or "
        f"stop it where it was started (polar serve-llm --stop --port {s.port} with that POLAR_CACHE_DIR"
        + (f", or kill {pid}" if pid else "") + ")")


# --- start / stop --------------------------------------------------------------------


Announce = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def start(s: ServerSettings, *, foreground: bool = False, announce: Announce = _stderr) -> dict[str, Any]:
    """Start the engine and wait until it answers; returns its state. Reuses a server of ours
    that already serves the same model on this port; refuses a port taken by anything else."""
    entry, engine = resolve(s)
    name = served_name(entry, engine)
    cmd = engine_command(s, entry, engine)  # first: a missing engine is the error to report
    with _lock(s.host, s.port):
        running = probe(s.base_url) or _answer_of_ours(s, name)
        if running is not None:
            state = _check_owned(s, running)
            if name in running:
                _check_weights(s, state, entry)
                return state or {"pid": None, "model": s.model, "served_name": name, "engine": engine,
                                 "api_base": s.api_base, "reused": True, "attached": True}
            raise ServeError(f"{s.base_url} already serves {', '.join(running) or 'something else'}, "
                             f"not {name}; stop it (polar serve-llm --stop --port {s.port}) or choose another --port")
        stale = read_state(s.host, s.port)
        if stale is not None:  # its process is gone (a live one would have answered or been waited for)
            announce(f"replacing the stale state file {state_path(s.host, s.port)}: the {stale.get('engine')} "
                     f"server it records (pid {stale.get('pid')}) is no longer running")
        log = state_path(s.host, s.port).with_suffix(".log")
        log.parent.mkdir(parents=True, exist_ok=True)
        state = {"pid": None, "command": cmd, "model": s.model, "served_name": name, "engine": engine,
                 "weights": weights_id(entry), "api_base": s.api_base, "log": str(log), "started_at": time.time(), "owner": owner_record()}
        if isinstance(entry, ModelEntry):
            state["model_source"], state["license"] = entry.source, entry.license
        announce(f"starting {engine} server for {s.model} on {s.base_url} (log: {log})")
        t0 = time.perf_counter()
        with log.open("ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=None if foreground else out,
                                    stderr=None if foreground else subprocess.STDOUT, start_new_session=True,
                                    env=_engine_env())
        state["pid"], state["start_ticks"] = proc.pid, _start_ticks(proc.pid)
        state_path(s.host, s.port).write_text(json.dumps(state, indent=1))
        deadline = time.monotonic() + s.startup_timeout_s
        while probe(s.base_url, timeout=1.0) is None:
            if proc.poll() is not None:
                state_path(s.host, s.port).unlink(missing_ok=True)
                raise ServeError(f"the {engine} server exited with status {proc.returncode} before it was "
                                 f"ready; last lines of {log}:\n{_log_tail(log)}")
            if time.monotonic() > deadline:
                _terminate(proc.pid)
                state_path(s.host, s.port).unlink(missing_ok=True)
                raise ServeError(f"the {engine} server was not ready after {s.startup_timeout_s:g} s; "
                                 f"last lines of {log}:\n{_log_tail(log)}")
            time.sleep(0.25)
        state["ready_s"] = round(time.perf_counter() - t0, 2)
        state_path(s.host, s.port).write_text(json.dumps(state, indent=1))
        announce(f"ready in {state['ready_s']:.1f} s: pid {proc.pid}, api_base {s.api_base}, model id {name!r}")
    if foreground:
        try:
            proc.wait()
        except KeyboardInterrupt:
            _terminate(proc.pid)
        finally:
            state_path(s.host, s.port).unlink(missing_ok=True)
    return state


def _terminate(pid: int, grace_s: float = 15.0) -> None:
    """SIGTERM the server's process group, SIGKILL it after `grace_s`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            waited, _ = os.waitpid(pid, os.WNOHANG)  # our own child: reap it
        except ChildProcessError:
            waited = 0
            if not Path(f"/proc/{pid}").exists():
                return
        if waited == pid:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def stop(host: str = "127.0.0.1", port: int = 8012, *, run: str | None = None) -> dict[str, Any] | None:
    """Stop the server this state folder records on host:port; returns its state, or None when
    there was none. With `run`, only a server that run started: another's is left alone."""
    with _lock(host, port):
        state = read_state(host, port)
        if state is None or (run is not None and not owned_by_run(state, run)):
            return None
        return _stop_recorded(host, port, state)


def _stop_recorded(host: str, port: int, state: dict[str, Any]) -> dict[str, Any]:
    """Terminate the recorded server (when it still runs) and remove its state file; under _lock."""
    state["was_running"] = is_alive(state)
    if state["was_running"]:
        _terminate(int(state["pid"]))
    state_path(host, port).unlink(missing_ok=True)
    return state


def stop_own(host: str = "127.0.0.1", port: int = 8012) -> dict[str, Any] | None:
    """Stop the server recorded on host:port when this run started it, or when what started it is
    gone (a killed run's leftover); returns its state, or None when none was recorded. A live
    server that another live Polar run started (the same user in another terminal) is refused
    with a ServeError naming its owner, never stopped: the loops that serve each model fresh
    (improve, planner RL, code eval and code RL) call this before and after their episodes."""
    with _lock(host, port):
        state = read_state(host, port)
        if state is None:
            return None
        owner = state.get("owner") or {}
        if (is_alive(state) and not owned_by_run(state)
                and not (owner and not process_alive(owner.get("pid"), owner.get("start_ticks")))):
            raise ServeError(
                f"the {state.get('engine')} server for {state.get('model')} on {host}:{port} (pid {state.get('pid')}) "
                f"was not started by this run but {describe(state)}; this run does not stop it. Choose another "
                f"port, or stop it where it was started (polar serve-llm --stop --port {port})")
        return _stop_recorded(host, port, state)


def status(host: str = "127.0.0.1", port: int = 8012) -> dict[str, Any]:
    state = read_state(host, port) or {}
    served = probe(f"http://{host}:{port}")
    return {**state, "running": served is not None, "serves": served,
            "ours": bool(state) and is_alive(state), "state_file": str(state_path(host, port))}


@contextlib.contextmanager
def stop_on_exit(settings: Iterable[ServerSettings], announce: Announce = _stderr) -> Iterator[None]:
    """Stop, on the way out, each of these servers that was not running on the way in and that
    this run started, so that a demo leaves no engine behind; one that another Polar process
    started on that port meanwhile (another terminal) is left alone."""
    idle = [s for s in {(s.host, s.port): s for s in settings}.values() if probe(s.base_url) is None]
    run = run_id()
    try:
        yield
    finally:
        for s in idle:
            state = stop(s.host, s.port, run=run)
            if state and state.get("was_running"):
                announce(f"stopped the server this run started ({s.model} on {s.base_url})")


def ensure_server(s: ServerSettings, announce: Announce = _stderr, *, lasting: bool = True) -> dict[str, Any]:
    """Make sure the profile's server answers: reuse it, or start it when `autostart` (saying so).
    `lasting=False`: the caller stops it when done (a lease holder), so no word on stopping it."""
    entry, engine = resolve(s)
    name = served_name(entry, engine)
    served = probe(s.base_url) or _answer_of_ours(s, name)
    if served is not None:
        state = _check_owned(s, served)
        if name in served:
            _check_weights(s, state, entry)
            return {"api_base": s.api_base, "served_name": name, "started": False}
    if served is not None:
        raise ServeError(f"{s.base_url} serves {', '.join(served)}, not {name}")
    if not s.autostart:
        raise ServeError(f"no server answers at {s.base_url}; start it: polar serve-llm {s.model} --port {s.port}")
    announce(f"the planner's server ({s.model} on {s.base_url}) is not running: starting it")
    state = start(s, announce=announce)
    if lasting:
        announce(f"it keeps running after this command, for the next one (`polar demo` stops the servers it "
                 f"started); stop it: polar serve-llm --stop --port {s.port}")
    return {**state, "started": True}

