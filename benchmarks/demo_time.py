"""Wall time of `polar demo` once installed (goal: at most 5 minutes), from a cold start.

Runs the demo as a user does (`polar demo --fresh` in a subprocess, into a temporary --out
so that no finished cell is reused, and from that folder, so that no model reply is replayed
from the reply cache), with no local LLM server running beforehand: the time includes starting
llama.cpp's servers for the two language-model arms, training PPO and every episode.
Usage:

    .venv/bin/python benchmarks/demo_time.py

Writes benchmarks/results/demo_time.json (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_results import Figure, script_command, write_result  # noqa: E402

GOAL_S = 300.0
POLAR = Path(sys.executable).parent / "polar"


def figures(result: dict[str, Any]) -> list[Figure]:
    return [Figure("`polar demo` wall time once installed (fresh cells, server start included)",
                   round(result["wall_s"], 1), "s", GOAL_S, "lower")]


def cell_wall_by_agent(results: Path) -> dict[str, float]:
    """Where the demo's time goes: each agent's cell wall time, summed over its harnesses."""
    if not results.exists():
        return {}
    walls: dict[str, float] = {}
    for row in json.loads(results.read_text())["rows"]:
        walls[row["agent"]] = round(walls.get(row["agent"], 0.0) + row["wall_s"], 1)
    return walls


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="polar-demo-") as out:
        t0 = time.perf_counter()
        # run from the temporary folder: its .polar/llm-cache starts empty, so every model call
        # is live (--fresh reruns the cells, but a reply cache in the current folder would replay them)
        proc = subprocess.run([str(POLAR), "demo", "--fresh", "--out", out], capture_output=True, text=True, cwd=out)
        wall = time.perf_counter() - t0
        agents_wall = cell_wall_by_agent(Path(out) / "results.json")
    tail = (proc.stdout + proc.stderr)[-3000:]
    print(tail)
    if proc.returncode != 0:
        raise SystemExit(f"polar demo exited {proc.returncode}")
    print("cell wall time per agent (s, summed over its cells; 2 workers run cells side by side):",
          ", ".join(f"{a} {w:.0f}" for a, w in agents_wall.items()))
    result = {"wall_s": wall, "returncode": proc.returncode, "cell_wall_s_by_agent": agents_wall,
              "output_tail": tail}
    write_result("demo_time", script_command("demo_time.py", argv), figures(result), result)
    print(f"polar demo: {wall:.0f} s (goal <= {GOAL_S:.0f} s)")
    return result


if __name__ == "__main__":
    main()
