"""The one result file each benchmark writes: `benchmarks/results/<name>.json`.

    {"benchmark": "sandbox_bench",
     "command": "python benchmarks/sandbox_bench.py --load 1",
     "measured_at": "2025-01-01T00:00:00Z", "cpus": 2, "loadavg": [1.2, 0.9, 0.7],
     "figures": [{"what": "docker act() calls/s, 1 core kept busy", "value": 21000.0,
                  "unit": "calls/s", "goal": 20000, "better": "higher", "passed": true}],
     "details": {...anything else the benchmark wants to keep...}}

`goal` may be null (a figure reported for scale, never failing); `better` says which side
of the goal passes ("higher": value >= goal, "lower": value <= goal). `benchmarks/summary.py`
reads every such file into one table (benchmarks/README.md).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Figure:
    what: str
    value: float
    unit: str
    goal: float | None = None
    better: Literal["higher", "lower"] = "higher"

    @property
    def passed(self) -> bool | None:
        if self.goal is None:
            return None
        return self.value >= self.goal if self.better == "higher" else self.value <= self.goal

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


def script_command(script: str, args: list[str] | None = None) -> str:
    """The command that reproduces a run: `python benchmarks/<script> ARGS`."""
    argv = sys.argv[1:] if args is None else args
    return " ".join(["python", f"benchmarks/{script}", *map(shlex.quote, argv)])


def write_result(name: str, command: str, figures: list[Figure],
                 details: dict[str, Any] | None = None, results_dir: Path = RESULTS) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": name,
        "command": command,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "figures": [f.to_json() for f in figures],
        "details": details or {},
    }
    path = results_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)
    return path
