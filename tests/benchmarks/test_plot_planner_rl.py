"""benchmarks/plot_planner_rl.py and planner_rl_heldout.py on a committed run and on made-up
evaluations: the curve's points, the table's rows, the paired and repeat checks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from planner_rl_heldout import compare  # noqa: E402
from plot_planner_rl import final_points, load_run, plot, table  # noqa: E402

RUN = ROOT / "evals" / "results" / "planner-rl" / "seed2-unlockpickup-2026-12-06"


def test_the_committed_runs_curve_and_table(tmp_path: Path) -> None:
    run = load_run(RUN)
    assert [p["episodes"] for p in run["points"]] == [8, 16, 24, 32]
    assert [p["per_task"]["UnlockPickup"] for p in run["points"]] == [[1, 8], [1, 8], [2, 8], [2, 8]]
    walls = [p["wall_s"] for p in run["points"]]
    assert walls == sorted(walls) and 540 < walls[0] < 560  # sample + update + convert of iteration 1
    assert [(e["iteration"], e["episodes"], e["rows"][0]["successes"]) for e in run["evals"]] == [(0, 0, 2), (3, 24, 7), (4, 32, 8)]
    rows = table(run).splitlines()
    assert len(rows) == 2 + 4 and rows[4].startswith("| 3 | UnlockPickup | 8 (24) | UnlockPickup 2/8 |")
    assert rows[4].endswith("| UnlockPickup 7/20 |")
    heldout = RUN.parent / "heldout-2026-12-06" / "results.json"  # the clean re-evaluation of this run's models
    finals = final_points(run, heldout, ["start=0", "grpo-it3=3"])
    assert [(f["episodes"], f["row"]["successes"], f["row"]["episodes"]) for f in finals] == [(0, 6, 40), (24, 1, 40)]
    plot(run, tmp_path / "c.png", "t", finals)
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def _evaluation(out: Path, label: str, outcomes: list[bool], decisions: list[str]) -> None:
    """An evaluation folder as `planner_rl_heldout.py eval` leaves it: its record and one cell."""
    from polar.evals.cells import CellResult

    eps = [{"episode_id": f"{label}-{i}", "agent": "planner", "harness_id": "h", "task": "t", "seed": 100000 + i,
            "success": ok, "episode_return": float(ok), "env_steps": 3, "terminated": ok, "truncated": not ok,
            "decisions": [{"index": 0, "decision": {"kind": "skill", "skill": skill, "args": {}}}]}
           for i, (ok, skill) in enumerate(zip(outcomes, decisions, strict=True))]
    cell = CellResult.model_validate({"cell": {"agent": "student", "harness": "UnlockPickup", "seed": 0}, "key": "k",
                                      "agent_kind": "planner", "harness_id": "h", "prep": {}, "episodes": eps,
                                      "wall_s": 1.0, "finished_at": "now"})
    d = out / label / "cells" / "student" / "UnlockPickup"
    d.mkdir(parents=True)
    (d / "seed-0.json").write_text(cell.model_dump_json())
    (out / label / "evaluation.json").write_text(json.dumps(
        {"label": label, "model": label, "task": "minigrid:UnlockPickup", "parallel": 8, "rows": [], "cost": {}}))


def test_paired_pooled_and_repeat_checks(tmp_path: Path) -> None:
    _evaluation(tmp_path, "start", [False] * 6, ["a"] * 6)
    _evaluation(tmp_path, "end", [True] * 5 + [False], ["b"] * 6)
    _evaluation(tmp_path, "end-again", [True] * 5 + [False], ["b"] * 5 + ["c"])
    res = compare(SimpleNamespace(out=str(tmp_path), pair=["end:start"], pool=["all=end:start"],
                                  repeat=["end:end-again"], json=str(tmp_path / "r.json")))
    p = res["paired"][0]
    assert (p["pairs"], p["a_only"], p["b_only"]) == (6, 5, 0) and abs(p["p_value"] - 0.0625) < 1e-12
    assert res["pooled"][0]["a_only"] == 5 and res["pooled"][0]["pairs"] == 6
    # the same outcomes but another decision in the last episode: not identical, and which one says so
    assert res["repeats"][0]["identical"] is False and res["repeats"][0]["differing_seeds"] == [100005]
