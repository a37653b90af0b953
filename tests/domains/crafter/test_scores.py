"""Crafter's scores: the formulas, and `polar compare` reporting them from real episodes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from polar.domains.crafter.harness import ACHIEVEMENTS
from polar.domains.crafter.scores import (
    crafter_score,
    episode_metrics,
    progression,
    success_rates,
    unlocked,
)


def _stats(names):
    return {"achievements": {k: (2 if k in names else 0) for k in ACHIEVEMENTS}}


def test_score_formula_matches_hafner():
    assert crafter_score(np.zeros(22)) == pytest.approx(0.0)
    assert crafter_score(np.full(22, 100.0)) == pytest.approx(100.0)
    rates = np.array([50.0, 10.0] + [0.0] * 20)
    want = math.exp((math.log(51) + math.log(11)) / 22) - 1
    assert crafter_score(rates) == pytest.approx(want)
    # geometric: one achievement at 100% scores far below 22 at 100/22 %
    assert crafter_score(np.array([100.0] + [0.0] * 21)) < crafter_score(np.full(22, 100 / 22))


def test_progression_and_rates_from_episodes():
    m = np.array([unlocked(_stats({"collect_wood", "wake_up"})), unlocked(_stats({"collect_wood"}))])
    assert progression(m) == pytest.approx(100 * 3 / 44)
    r = success_rates(m)
    assert r[ACHIEVEMENTS.index("collect_wood")] == 100 and r[ACHIEVEMENTS.index("wake_up")] == 50
    with pytest.raises(ValueError, match="achievements"):
        unlocked({})


def test_episode_metrics_values_and_intervals():
    seeds = [[_stats({"collect_wood"}), _stats(set())], [_stats({"collect_wood", "collect_sapling"})] * 2]
    out = {m["name"]: m for m in episode_metrics(seeds, n_boot=200)}
    assert len(out) == 2 + 22
    score = out["Crafter score (%)"]["estimate"]
    assert score.value == pytest.approx(crafter_score(np.array(
        [75.0 if k == "collect_wood" else 50.0 if k == "collect_sapling" else 0.0 for k in ACHIEVEMENTS])))
    assert score.lo <= score.value <= score.hi and score.n == 4
    assert out["BALROG progression (%)"]["estimate"].value == pytest.approx(100 * 5 / 88)
    assert out["collect_wood"]["estimate"].value == pytest.approx(75.0)
    assert out["collect_wood"]["table"] != out["Crafter score (%)"]["table"]


def test_compare_reports_crafter_scores(tmp_path):
    """A real suite (random play on short Crafter episodes): every row carries the scores,
    computed from the achievements the harness recorded in each episode, and the report shows
    the tables."""
    pytest.importorskip("crafter")
    from polar.evals.comparison import compare

    suite = {
        "name": "crafter-mini", "seeds": 2, "episodes": 3, "workers": 0,
        "agents": [{"name": "random", "kind": "random"}],
        "harnesses": [{"id": "crafter:", "name": "crafter", "kwargs": {"length": 150, "pixels_only": True}}],
    }
    results, paths = compare(suite, tmp_path / "out", quiet=True)
    row = results.rows[0]
    assert row.failures == {} and row.success.n == 0  # no harness errors; Crafter has no success
    metrics = {m.name: m.estimate for m in row.domain_metrics}
    cells = list((tmp_path / "out" / "cells").rglob("*.json"))
    eps = [e for c in cells for e in json.loads(c.read_text())["episodes"]]
    assert len(eps) == 6 and all("achievements" in e["extra"]["episode_stats"] for e in eps)
    m = np.array([unlocked(e["extra"]["episode_stats"]) for e in eps])
    assert metrics["Crafter score (%)"].value == pytest.approx(crafter_score(success_rates(m)))
    assert metrics["BALROG progression (%)"].value == pytest.approx(progression(m))
    assert m.sum() > 0  # random play unlocks something in 150 steps (collect_sapling, wood, ...)
    md = paths["markdown"].read_text()
    assert "Crafter scores on crafter" in md and "Crafter score (%)" in md and "collect_diamond" in md
    assert "Crafter achievements" in paths["html"].read_text()
    from polar.evals.report import brief_markdown  # the README's block of a suite

    brief = brief_markdown(json.loads(paths["results"].read_text()))
    assert f"| Crafter score (%) | {metrics['Crafter score (%)'].fmt(1)} |" in brief and "| wake_up |" in brief
