"""Crafter's scores, from the achievements each episode unlocked.

- Success rate of an achievement: the share of episodes in which it was unlocked at least once.
- Crafter score (Hafner 2021, eq. 1): `exp(mean_i log(1 + s_i)) - 1` over the 22 success
  rates s_i in percent; a geometric mean, so rare achievements weigh as much as common ones.
  Published: random 1.6, PPO 4.6, DreamerV3 14.5, SPRING 27.3, human experts 50.5.
- BALROG progression (Paglieri et al. 2024): the share of the 22 achievements an episode
  unlocked, averaged over episodes, in percent.

Intervals are 95% percentile bootstrap over seeds x episodes (seeds redrawn, then episodes
within each drawn seed), as every other figure of a Polar report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from polar.domains.crafter.harness import ACHIEVEMENTS
from polar.statistics import Estimate, seed_estimate, success_estimate

SCORES_TABLE = "Crafter scores"
ACHIEVEMENTS_TABLE = "Crafter achievements: success rate per agent (% of episodes)"


def unlocked(stats: dict[str, Any]) -> np.ndarray:
    """The 22 achievements as 0/1 (unlocked at least once) from one episode's stats."""
    got = stats.get("achievements")
    if not isinstance(got, dict):
        raise ValueError("episode stats: no 'achievements' (not a Crafter episode's stats)")
    return np.array([float(int(got.get(k, 0)) > 0) for k in ACHIEVEMENTS])


def success_rates(matrix: np.ndarray) -> np.ndarray:
    """Per achievement, the % of episodes (rows) that unlocked it."""
    return 100.0 * matrix.mean(axis=0)


def crafter_score(rates_pct: np.ndarray) -> float:
    """Hafner 2021's score of success rates in percent: exp(mean(log(1 + s))) - 1."""
    return float(np.exp(np.mean(np.log1p(rates_pct))) - 1.0)


def progression(matrix: np.ndarray) -> float:
    """BALROG progression in %: the mean over episodes of the share of achievements unlocked."""
    return float(100.0 * matrix.mean())


def _score_estimate(groups: list[np.ndarray], n_boot: int, seed: int = 0) -> Estimate:
    """The score over all episodes, with a two-level bootstrap interval (seeds, then episodes)."""
    value = crafter_score(success_rates(np.concatenate(groups)))
    rng = np.random.default_rng(seed)
    boots = np.empty(n_boot)
    for b in range(n_boot):
        drawn = [groups[s] for s in rng.integers(0, len(groups), size=len(groups))]
        boots[b] = crafter_score(success_rates(np.concatenate([g[rng.integers(0, len(g), size=len(g))]
                                                               for g in drawn])))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return Estimate(value=value, lo=float(lo), hi=float(hi), n=sum(len(g) for g in groups))


def episode_metrics(seeds: Sequence[Sequence[dict[str, Any]]], n_boot: int = 2000) -> list[dict[str, Any]]:
    """The report's Crafter figures from each seed's episodes' stats (`episode_stats()`):
    [{"table", "name", "estimate"}], the scores first, then one row per achievement."""
    groups = [np.array([unlocked(s) for s in eps]) for eps in seeds if eps]
    if not groups:
        return []
    out = [
        {"table": SCORES_TABLE, "name": "Crafter score (%)", "estimate": _score_estimate(groups, n_boot)},
        {"table": SCORES_TABLE, "name": "BALROG progression (%)",
         "estimate": _scaled(seed_estimate([g.mean(axis=1) for g in groups], "mean", n_boot=n_boot))},
    ]
    for i, name in enumerate(ACHIEVEMENTS):
        est = success_estimate([g[:, i] for g in groups], n_boot=n_boot)
        out.append({"table": ACHIEVEMENTS_TABLE, "name": name, "estimate": _scaled(est)})
    return out


def _scaled(est: Estimate) -> Estimate:
    """A rate in [0, 1] as percent."""
    return est.model_copy(update={"value": 100 * est.value, "lo": 100 * est.lo, "hi": 100 * est.hi})
