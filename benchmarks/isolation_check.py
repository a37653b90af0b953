"""The test suite beside a user's work in the same account: neither touches the other.

A user's side, run as a user runs it (the caller's environment and Polar cache, the default
one when POLAR_CACHE_DIR is unset; a workspace of its own): `polar task --planner
polar-planner`, which starts the trained planner's llama.cpp server and leaves it running,
then, while the tests run, `polar compare` on a suite with that LLM arm and more `polar task`
episodes, one after another. Meanwhile the test suite runs a subset that starts, stops and
leak-checks model servers and podman services (default: tests/llm/test_serve_ownership.py,
test_serve_busy.py, test_serve_death.py, test_local_engine.py without its two slowest tests,
tests/sandboxes/test_engine_health.py), isolating itself as `make test` does
(tests/conftest.py). It checks:

- the test run passes;
- the user's server (the same pid and start time) is alive and still recorded after it;
- every user episode (each `polar task` and every `polar compare` episode) ended without
  `llm-error`, and both commands exited 0.

The user's server is on the profile's port 8015 when nothing answers there, else on a free
port (a workspace copy of the profile). At the end the script stops that server, and only
it: the one whose state file names the first `polar task` it ran as its owner. Usage:

    .venv/bin/python benchmarks/isolation_check.py                  # the default subset
    .venv/bin/python benchmarks/isolation_check.py tests/llm -k serve  # any pytest arguments

Writes benchmarks/results/isolation_check.json (benchmarks/README.md); exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from polar import ownership  # noqa: E402
from polar.llm import serve  # noqa: E402

# the `polar` command as a module: `python -m polar` (polar/__main__.py)
POLAR = "polar"
TASK = "use the key to open the door and then get to the goal"
HARNESS = "minigrid:MiniGrid-DoorKey-8x8-v0"
DEFAULT_TESTS = ["tests/llm/test_serve_ownership.py", "tests/llm/test_serve_busy.py", "tests/llm/test_serve_death.py",
                 "tests/llm/test_local_engine.py", "tests/sandboxes/test_engine_health.py",
                 "-k", "not shipped_trained and not transformers_serve"]
SUITE = {"name": "isolation-user", "description": "A user's LLM arm beside the test run.",
         "agents": [{"name": "polar-planner", "kind": "planner", "planner": "polar-planner",
                     "budget": {"decisions": 8, "llm_calls": 16}}],
         "harnesses": [{"id": HARNESS}], "seeds": 1, "episodes": 3, "workers": 0}


def figures(details: dict[str, Any]) -> list[Figure]:
    return [
        Figure("test subset passed beside a user's polar task + compare (1 = yes)", int(details["tests_rc"] == 0),
               "", 1),
        Figure("user's llama.cpp server alive and recorded after the test run (1 = yes)",
               int(details["user_server_survived"]), "", 1),
        Figure("user episodes ended as llm-error", details["user_llm_errors"], "episodes", 0, "lower"),
        Figure("user episodes checked (polar task + polar compare)", details["user_episodes"], "episodes"),
        Figure("user LLM calls answered by the user's server in those episodes", details["user_llm_calls"], "calls"),
    ]


def user_env() -> dict[str, str]:
    """The caller's environment without what a test run sets: the user's own Polar."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("POLAR_STATE_DIR", "POLAR_PODMAN_DIR", ownership.RUN_ENV, "PYTEST_CURRENT_TEST")}
    return env | {"PYTHONPATH": str(REPO)}


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return serve.probe(f"http://127.0.0.1:{port}", timeout=1.0) is None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def workspace(root: Path, port: int) -> None:
    """The user's workspace: the trained planner's profile on `port`, and the suite."""
    profile = yaml.safe_load((REPO / "planners" / "polar-planner.yaml").read_text())
    profile["server"] |= {"port": port, "threads": 1}
    profile["logprobs"] = False
    profile["cache_dir"] = None  # no replayed replies: every decision asks the server during the tests
    (root / "planners").mkdir()
    (root / "planners" / "polar-planner.yaml").write_text(yaml.safe_dump(profile))
    (root / "isolation-user.yaml").write_text(yaml.safe_dump(SUITE))


def polar(args: list[str], cwd: Path, log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen([sys.executable, "-m", POLAR, *args], cwd=cwd, env=user_env(),
                                stdout=out, stderr=subprocess.STDOUT)


def user_state(port: int) -> dict[str, Any] | None:
    """The state file of the user's server, read with the user's environment."""
    out = subprocess.run([sys.executable, "-c", f"import json; from polar.llm import serve; "
                          f"print(json.dumps(serve.read_state('127.0.0.1', {port})))"],
                         env=user_env(), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def episodes(folder: Path) -> list[dict[str, Any]]:
    """Every episode recorded under `folder`: its failure cause (None: it succeeded) and LLM calls."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "failure_cause" in node and "decisions" in node:
                found.append({"cause": node["failure_cause"], "llm_calls": node.get("llm_calls", 0)})
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for f in sorted(folder.rglob("*.json")):
        try:
            walk(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    return found


def wait_for_server(port: int, task: subprocess.Popen, log: Path, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = user_state(port)
        if state and state.get("ready_s") is not None and serve.is_alive(state):
            return state
        if task.poll() is not None:
            raise SystemExit(f"the user's polar task exited {task.returncode} before its server was up:\n"
                             f"{log.read_text()[-3000:]}")
        time.sleep(1.0)
    raise SystemExit(f"the user's server was not up after {timeout_s:g} s:\n{log.read_text()[-3000:]}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pytest_args", nargs="*", help="the test subset (default: server-heavy LLM and engine tests)")
    ap.add_argument("--start-timeout", type=float, default=1800.0,
                    help="seconds for the user's first server start (a first use merges the adapter)")
    args = ap.parse_args(argv)
    port = 8015 if port_is_free(8015) else free_port()
    root = Path(tempfile.mkdtemp(prefix="polar-isolation-"))
    workspace(root, port)
    print(f"user workspace {root}; the user's server will be on 127.0.0.1:{port}", flush=True)

    first = polar(["task", TASK, "--harness", HARNESS, "--planner", "polar-planner", "--seed", "100",
                   "--max-decisions", "8", "--out", "task-0"], root, root / "task-0.log")
    state = wait_for_server(port, first, root / "task-0.log", args.start_timeout)
    owner = state.get("owner") or {}
    assert owner.get("pid") == first.pid, f"the server on {port} was not started by the user's task: {state}"
    print(f"user's server up: pid {state['pid']} (run {owner.get('run')})", flush=True)

    compare = polar(["compare", "isolation-user.yaml", "--out", "compare", "--workers", "0"], root,
                    root / "compare.log")
    t0 = time.perf_counter()
    tests = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              *(args.pytest_args or DEFAULT_TESTS)], cwd=REPO, env=user_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tasks = [first]
    while tests.poll() is None:  # the user keeps working while the tests run
        if tasks[-1].poll() is not None and len(tasks) < 20:
            i = len(tasks)
            tasks.append(polar(["task", TASK, "--harness", HARNESS, "--planner", "polar-planner", "--seed",
                                str(100 + i), "--max-decisions", "8", "--out", f"task-{i}"], root,
                               root / f"task-{i}.log"))
        time.sleep(1.0)
    test_out = tests.stdout.read() if tests.stdout else ""
    tests_s = time.perf_counter() - t0
    after = user_state(port)
    survived = bool(after and after.get("pid") == state["pid"] and serve.is_alive(after))
    print(test_out[-4000:], flush=True)

    for proc in [*tasks, compare]:
        proc.wait(timeout=3600)
    rcs = {f"task-{i}": p.returncode for i, p in enumerate(tasks)} | {"compare": compare.returncode}
    by_command = {f"task-{i}": episodes(root / f"task-{i}") for i in range(len(tasks))}
    by_command["compare"] = episodes(root / "compare")
    flat = [e for es in by_command.values() for e in es]

    stopped = subprocess.run([sys.executable, "-c", f"from polar.llm import serve; "
                              f"print(serve.stop('127.0.0.1', {port}, run={owner.get('run')!r}) is not None)"],
                             env=user_env(), capture_output=True, text=True)
    details = {"tests": args.pytest_args or DEFAULT_TESTS, "tests_rc": tests.returncode, "tests_s": round(tests_s, 1),
               "tests_tail": test_out.strip().splitlines()[-1:] if test_out.strip() else [],
               "user_port": port, "user_server_pid": state["pid"], "user_server_survived": survived,
               "user_commands_rc": rcs, "user_episodes": len(flat),
               "user_llm_errors": sum(e["cause"] == "llm-error" for e in flat),
               "user_llm_calls": sum(e["llm_calls"] for e in flat),
               "user_episodes_by_command": by_command,
               "user_server_stopped_at_end": stopped.stdout.strip() == "True", "workspace": str(root)}
    write_result("isolation_check", script_command("isolation_check.py"), figures(details), details)
    print(json.dumps({k: v for k, v in details.items() if k != "user_episodes_by_command"}, indent=1))
    # polar task exits 0 when solved, 1 when not (a 135M planner fails some), 3 on llm-error
    ok = (tests.returncode == 0 and survived and details["user_llm_errors"] == 0 and len(flat) > 0
          and rcs["compare"] == 0 and all(rc in (0, 1) for rc in rcs.values()))
    if not ok:
        raise SystemExit(f"isolation check FAILED; logs in {root}")
    print("isolation check passed")
    return details


if __name__ == "__main__":
    main()
