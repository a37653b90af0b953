"""Sandbox overhead, side by side in one run: act() calls/s for a native function and each
backend, plus start-up costs (cold container start, pre-warmed acquire).

    .venv/bin/python benchmarks/sandbox_bench.py [--calls 20000] [--docker-calls 5000]

Goals (issue 6): restricted >= 25,000 calls/s, process >= 20,000, docker >= 5,000,
pre-warmed acquire <= 20 ms. Numbers depend on the machine's load; the ratios to the native
call and to each other in the same run are what to compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import pytest

POLICY = """
def act(obs):
    x, v, angle, omega = obs
    return 1 if angle + 0.5 * omega > 0 else 0
"""
OBS = [0.01, -0.02, 0.03, 0.04]
GOALS = {"restricted": 25_000, "process": 20_000, "docker": 5_000}


def _rate(fn: Any, n: int) -> float:
    for _ in range(min(n // 10, 500)):  # warm-up
        fn("act", OBS)
    t0 = time.perf_counter()
    for _ in range(n):
        fn("act", OBS)
    return n / (time.perf_counter() - t0)


ECHO = "import os\nwhile True:\n    b = os.read(0, 65536)\n    if not b:\n        break\n    os.write(1, b)\n"


def _echo_rate(n: int) -> float:
    """The floor for scale: a bare Python echo over a pipe (one small write, one read)."""
    import subprocess

    from polar.sandboxes.process import sandbox_python

    proc = subprocess.Popen([sandbox_python(), "-I", "-S", "-c", ECHO], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    w, r = proc.stdin.fileno(), proc.stdout.fileno()
    t0 = time.perf_counter()
    for _ in range(n):
        os.write(w, b"\x00\x00\x00\x01\xc0")
        os.read(r, 65536)
    rate = n / (time.perf_counter() - t0)
    proc.stdin.close()
    proc.wait()
    return rate


def run(calls: int = 20_000, docker_calls: int = 5_000, with_docker: bool = True) -> dict[str, Any]:
    from polar.sandboxes.base import SandboxLimits, make_sandbox

    limits = SandboxLimits(cpu_s=600)
    ns: dict[str, Any] = {}
    exec(POLICY, ns)
    rows: dict[str, Any] = {"native": {"calls_s": _rate(lambda _n, o: ns["act"](o), calls)},
                            "pipe echo": {"calls_s": _echo_rate(calls)}}
    for backend in ("restricted", "process"):
        t0 = time.perf_counter()
        with make_sandbox(backend, limits) as box:
            box.load(POLICY)
            start = time.perf_counter() - t0
            rows[backend] = {"calls_s": _rate(box.call, calls), "start_s": start}
    if with_docker:
        from polar.sandboxes.docker import ContainerPool
        from polar.sandboxes.engine import docker_client
        from polar.sandboxes.image import build_image

        client = docker_client()
        build_image(client)
        colds = []
        for _ in range(3):
            t0 = time.perf_counter()
            with make_sandbox("docker", limits, client=client) as box:
                box.load(POLICY)
                colds.append(time.perf_counter() - t0)
        acquires = []
        with ContainerPool(limits, size=2, client=client) as pool:
            for _ in range(5):
                pool.wait_ready()
                t0 = time.perf_counter()
                with make_sandbox("docker", limits, pool=pool) as box:
                    box.load(POLICY)
                    acquires.append(time.perf_counter() - t0)
                    if len(acquires) == 1:
                        rows["docker"] = {"calls_s": _rate(box.call, docker_calls)}
        rows["docker"]["start_s"] = statistics.median(colds)
        rows["docker"]["acquire_s"] = statistics.median(acquires)
    return rows


def report(rows: dict[str, Any]) -> str:
    native = rows["native"]["calls_s"]
    lines = [f"{'backend':<11}{'act() calls/s':>15}{'x native':>10}{'goal':>9}{'start+load':>12}"]
    for name, r in rows.items():
        goal = GOALS.get(name)
        mark = "" if goal is None else (" ok" if r["calls_s"] >= goal else " BELOW")
        start = f"{r['start_s'] * 1000:.0f} ms" if "start_s" in r else "-"
        lines.append(f"{name:<11}{r['calls_s']:>15,.0f}{r['calls_s'] / native:>10.4f}"
                     f"{goal or '-':>9}{start:>12}{mark}")
    if "docker" in rows:
        acq = rows["docker"]["acquire_s"] * 1000
        lines.append(f"docker cold start (create+start+ready+load, median of 3): "
                     f"{rows['docker']['start_s'] * 1000:.0f} ms")
        lines.append(f"docker pre-warmed acquire+load (median of 5): {acq:.1f} ms "
                     f"(goal <= 20 ms){' ok' if acq <= 20 else ' ABOVE'}")
    return "\n".join(lines)


@pytest.mark.bench
def test_sandbox_bench() -> None:
    rows = run()
    print("\n" + report(rows))
    assert rows["process"]["calls_s"] > 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=20_000)
    p.add_argument("--docker-calls", type=int, default=5_000)
    p.add_argument("--no-docker", action="store_true")
    a = p.parse_args()
    print(report(run(a.calls, a.docker_calls, not a.no_docker)))
