"""benchmarks/crafter_budget.py: the committed symbolic-memory episodes cut at a decision budget."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import crafter_budget  # noqa: E402

from polar.domains.crafter.scores import episode_metrics  # noqa: E402

CELLS = ROOT / "evals" / "results" / "crafter_memory" / "cells" / "symbolic-memory"


def _seeds(decisions: int, episodes: int | None = None) -> list[list[dict]]:
    return [[crafter_budget.truncated_stats(e, decisions) for e in json.loads(f.read_text())["episodes"][:episodes]]
            for f in sorted(CELLS.glob("*/seed-*.json"))]


def _score(seeds: list[list[dict]]) -> float:
    return episode_metrics(seeds, n_boot=100)[0]["estimate"].value


def test_the_agents_record_agrees_with_the_harness_stats_on_every_whole_episode():
    for f in sorted(CELLS.glob("*/seed-*.json")):
        for ep in json.loads(f.read_text())["episodes"]:
            full = {k for k, v in ep["extra"]["episode_stats"]["achievements"].items() if int(v) > 0}
            whole = crafter_budget.achieved_by(ep, None)
            assert whole <= full and len(full - whole) <= 1, ep["episode_id"]


def test_a_budget_cuts_achievements_and_no_budget_is_the_committed_score():
    assert round(_score(_seeds(10**6)), 1) == 48.4  # docs/crafter.md section 6c, the suite's report
    scores = [_score(_seeds(n)) for n in (1, 20, 60, 150, 10**6)]
    assert scores == sorted(scores) and scores[0] < 1 < scores[-2] < scores[-1]
    cut = _seeds(20, 2)
    assert sum(len(s) for s in cut) == 10
    # an episode cut at 20 decisions holds no achievement it reached later
    ep = json.loads(next(iter(sorted(CELLS.glob("*/seed-*.json")))).read_text())["episodes"][1]
    assert len(ep["decisions"]) > 20
    got = {k for k, v in crafter_budget.truncated_stats(ep, 20)["achievements"].items() if v}
    assert got == crafter_budget.achieved_by(ep, 20) and got < crafter_budget.achieved_by(ep, None)
