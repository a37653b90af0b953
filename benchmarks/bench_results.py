"""The one result file each benchmark writes: `benchmarks/results/<name>.json`.

    {"benchmark": "sandbox_bench",
     "command": "python benchmarks/sandbox_bench.py --load 1",
     "measured_at": "2025-01-01T00:00:00Z", "cpus": 2, "loadavg": [1.2, 0.9, 0.7],
     "figures": [{"what": "docker act() calls/s, 1 core kept busy", "value": 21000.0,
                  "unit": "calls/s", "goal": 20000, "better": "higher", "passed": true}],
     "details": {...anything else the benchmark wants to keep...}}

`goal` may be null (a figure reported for scale, never failing); `better` says which side
of the goal passes ("higher": value >= goal, "lower": value <= goal); a rate may carry its
95% interval as `ci: [lo, hi]`. `benchmarks/summary.py` reads every such file into one table
(benchmarks/README.md).

Each benchmark computes its figures with a `figures(details)` function from the `details` it
stores, so the figures of a result file can always be recomputed from the file itself
(tests/test_readme_tables.py checks that they are).
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
    ci: tuple[float, float] | None = None  # a rate's 95% interval, where it has one

    @property
    def passed(self) -> bool | None:
        if self.goal is None:
            return None
        return self.value >= self.goal if self.better == "higher" else self.value <= self.goal

    def to_json(self) -> dict[str, Any]:
        doc = {**asdict(self), "passed": self.passed}
        if self.ci is None:
            del doc["ci"]
        else:
            doc["ci"] = list(self.ci)
        return doc


def script_command(script: str, args: list[str] | None = None) -> str:
    """The command that reproduces a run: `python benchmarks/<script> ARGS`."""
    argv = sys.argv[1:] if args is None else args
    return " ".join(["python", f"benchmarks/{script}", *map(shlex.quote, argv)])


def result_doc(name: str, command: str, figures: list[Figure], details: dict[str, Any] | None = None,
               machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """One result file's content. `machine` (measured_at, cpus, loadavg) defaults to now and
    this machine; a result converted from an older file passes what that file recorded."""
    if machine is None:
        machine = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    return {"benchmark": name, "command": command, **machine,
            "figures": [f.to_json() for f in figures], "details": details or {}}


def write_result(name: str, command: str, figures: list[Figure],
                 details: dict[str, Any] | None = None, results_dir: Path = RESULTS,
                 machine: dict[str, Any] | None = None) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    doc = result_doc(name, command, figures, details, machine)
    path = results_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)
    return path
