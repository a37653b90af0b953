"""KeyDoor steps/s through the connector vs in-process (goal: >= 15,000 steps/s through it).

Side by side in one run, same seed and same action sequence for every variant, rounds
interleaved so a change in machine load hits all variants alike:

  in_process        KeyDoor (the game-side wrapper) called directly: the ceiling
  stdio             ConnectorHarness over the child's stdin/stdout, default spin
  stdio_nospin      the same with spin_us=0 (always sleep in select() while waiting)
  unix              ConnectorHarness over a Unix socket, default spin
  echo              raw bytes echoed over a pipe pair, no msgpack, no game: the transport floor

Every connector variant must produce exactly the in-process trajectory (a digest of every
observation, reward and flag): a fast but wrong connector fails the run. Usage:

    .venv/bin/python benchmarks/connector_bench.py [--steps 50000] [--rounds 3]

Writes benchmarks/results/connector_bench.json. The figures depend on machine load (the
load average is printed): on an idle VM waking a sleeping process on the other CPU costs
~35 us, which is what the spin avoids; on a busy one the spin backs off by itself.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from bench_results import Figure, script_command, write_result

if TYPE_CHECKING:
    from polar.harnesses.connector import ConnectorHarness

ROOT = Path(__file__).resolve().parents[1]
KEYDOOR = ROOT / "harnesses" / "keydoor"

GOAL_STEPS_PER_S = 15_000
SEED = 0


def _digest_update(h: Any, obs: dict, reward: float, terminated: bool, truncated: bool) -> None:
    h.update(obs["grid"].tobytes())
    h.update(obs["inventory"].tobytes())
    h.update(f"{reward}{terminated:d}{truncated:d}".encode())


def _loop(reset: Any, step: Any, actions: list[int]) -> tuple[float, float, str]:
    """Steps through `actions` (resetting at episode ends).

    Returns (steps/s over the whole loop, median seconds per step, digest). The median is
    what one step costs when the process is not preempted; on a shared machine the mean is
    dominated by the few steps that wait out another process's time slice.
    """
    digest = hashlib.sha256()
    durations = [0.0] * len(actions)
    clock = time.perf_counter
    reset(seed=SEED)
    t0 = clock()
    for i, a in enumerate(actions):
        t = clock()
        obs, reward, terminated, truncated, _ = step(a)
        durations[i] = clock() - t
        _digest_update(digest, obs, reward, terminated, truncated)
        if terminated or truncated:
            reset()
    elapsed = clock() - t0
    return len(actions) / elapsed, statistics.median(durations), digest.hexdigest()


def _connector(transport: str, spin_us: float | None) -> ConnectorHarness:
    from polar.config import read_yaml
    from polar.harnesses.connector import ConnectorConfig, ConnectorHarness

    spec = read_yaml(KEYDOOR / "keydoor.yaml")
    cfg = dict(spec["connector"], transport=transport)
    if spin_us is not None:
        cfg["spin_us"] = spin_us
    return ConnectorHarness(ConnectorConfig.model_validate(cfg), "keydoor", KEYDOOR, spec["kwargs"])


ECHO_SERVER = """
import os
while True:
    d = os.read(0, 65536)
    if not d:
        break
    os.write(1, d)
"""


def _echo(n: int) -> float:
    """Round trips/s of a 20-byte message over a pipe pair to a child that echoes it."""
    proc = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, bufsize=0)
    w, r = proc.stdin.fileno(), proc.stdout.fileno()
    msg = b"x" * 20
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            os.write(w, msg)
            os.read(r, 65536)
        return n / (time.perf_counter() - t0)
    finally:
        proc.stdin.close()
        proc.wait()


def run(steps: int, rounds: int) -> dict[str, Any]:
    import numpy as np

    sys.path.insert(0, str(KEYDOOR))
    from keydoor_connector import KeyDoor

    actions = np.random.default_rng(SEED).integers(0, 6, steps).tolist()
    variants = {"stdio": ("stdio", None), "stdio_nospin": ("stdio", 0.0), "unix": ("unix", None)}
    harnesses = {name: _connector(*args) for name, args in variants.items()}
    rates: dict[str, list[float]] = {name: [] for name in ["in_process", *variants, "echo"]}
    medians: dict[str, list[float]] = {name: [] for name in ["in_process", *variants]}
    digests: dict[str, str] = {}
    load_before = os.getloadavg()
    try:
        for h in harnesses.values():  # warm-up: first frames, page faults, caches
            _loop(h.reset, h.step, actions[:2000])
        for _ in range(rounds):
            game = KeyDoor()
            rate, p50, digests["in_process"] = _loop(game.reset, game.step, actions)
            rates["in_process"].append(rate)
            medians["in_process"].append(p50)
            for name, h in harnesses.items():
                rate, p50, digests[name] = _loop(h.reset, h.step, actions)
                rates[name].append(rate)
                medians[name].append(p50)
            rates["echo"].append(_echo(min(steps, 20_000)))
        ping_us = statistics.median(harnesses["stdio"].ping() for _ in range(200)) * 1e6
    finally:
        for h in harnesses.values():
            h.close()
    wrong = [name for name, d in digests.items() if d != digests["in_process"]]
    if wrong:
        raise AssertionError(f"trajectory differs from in-process for {wrong}")
    med = {name: statistics.median(v) for name, v in rates.items()}
    return {
        "steps": steps,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "steps_per_s_median": {k: round(v) for k, v in med.items()},
        "steps_per_s_all": {k: [round(x) for x in v] for k, v in rates.items()},
        "slowdown_vs_in_process": {k: round(med["in_process"] / med[k], 1) for k in variants},
        "median_step_us": {k: round(min(v) * 1e6, 1) for k, v in medians.items()},
        "steps_per_s_at_median_step": {k: round(1 / min(v)) for k, v in medians.items()},
        "connector_vs_echo": round(med["stdio"] / med["echo"], 2),
        "ping_median_us": round(ping_us, 1),
        "goal_steps_per_s": GOAL_STEPS_PER_S,
        "goal_met": med["stdio"] >= GOAL_STEPS_PER_S,
        "goal_met_at_median_step": 1 / min(medians["stdio"]) >= GOAL_STEPS_PER_S,
        "trajectories_identical": True,
    }


def report(r: dict[str, Any]) -> str:
    lines = [f"keydoor, {r['steps']} steps x {r['rounds']} rounds, {r['cpus']} CPUs, "
             f"load average {r['loadavg_before'][0]} -> {r['loadavg_after'][0]}"]
    for name, rate in r["steps_per_s_median"].items():
        extra = f"  (in-process is {r['slowdown_vs_in_process'][name]}x faster)" if name in r["slowdown_vs_in_process"] else ""
        unit = "round trips/s" if name == "echo" else "steps/s"
        lines.append(f"  {name:<13} {rate:>9,} {unit} median of {r['steps_per_s_all'][name]}{extra}")
    lines.append(f"  ping (stdio)  {r['ping_median_us']} us median round trip")
    lines.append("  median time of one step (best round): " + ", ".join(
        f"{k} {v} us (= {r['steps_per_s_at_median_step'][k]:,}/s)" for k, v in r["median_step_us"].items()))
    lines.append(f"  trajectories identical across variants: {r['trajectories_identical']}")
    verdict = "met" if r["goal_met"] else "NOT met"
    at_median = "met" if r["goal_met_at_median_step"] else "NOT met"
    lines.append(f"  goal >= {r['goal_steps_per_s']:,} steps/s through the connector (stdio): {verdict} "
                 f"by throughput, {at_median} at the median step time")
    return "\n".join(lines)


def figures(r: dict[str, Any]) -> list[Figure]:
    rates = r["steps_per_s_median"]
    return [
        Figure("keydoor steps/s through the connector (stdio)", rates["stdio"], "steps/s",
               GOAL_STEPS_PER_S),
        Figure("keydoor steps/s through the connector (unix socket)", rates["unix"], "steps/s"),
        Figure("keydoor steps/s in-process (the ceiling)", rates["in_process"], "steps/s"),
    ]


def save(r: dict[str, Any], command: str) -> None:
    write_result("connector_bench", command, figures(r), r)


@pytest.mark.bench
def test_connector_throughput() -> None:
    r = run(steps=50_000, rounds=3)
    print(report(r))
    save(r, script_command("connector_bench.py", ["--steps", "50000", "--rounds", "3"]))
    assert r["trajectories_identical"]
    assert r["goal_met"], report(r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    r = run(args.steps, args.rounds)
    print(report(r))
    save(r, script_command("connector_bench.py"))


if __name__ == "__main__":
    main()
