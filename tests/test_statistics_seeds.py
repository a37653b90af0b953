"""Seed-level statistics against values computed by hand or by enumerating every resample."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from polar.statistics import (
    aggregate_iqm,
    iqm,
    mcnemar_exact,
    probability_of_improvement,
    seed_estimate,
    success_estimate,
    two_level_samples,
    wilson_interval,
)


def _exact_two_level(groups: list[list[int]]) -> dict[Fraction, Fraction]:
    """Every two-level resample of `groups`, each with its probability: the bootstrap's exact law."""
    law: Counter[Fraction] = Counter()
    s = len(groups)
    for picked in itertools.product(range(s), repeat=s):
        for draws in itertools.product(*[itertools.product(groups[i], repeat=len(groups[i])) for i in picked]):
            values = [v for d in draws for v in d]
            p = Fraction(1, s**s)
            for i in picked:
                p /= len(groups[i]) ** len(groups[i])
            law[Fraction(sum(values), len(values))] += p
    return dict(law)


def test_two_level_law_matches_hand_computation() -> None:
    # Seeds [0, 1] and [1, 1]. The mean of a resample is 1 when: both draws pick seed 1 (1/4);
    # one draw picks each seed (1/2) and seed 0's two episodes both redraw its 1 (1/4);
    # both pick seed 0 (1/4) and all four episodes redraw the 1 (1/16):
    # P(mean = 1) = 1/4 + 1/8 + 1/64 = 25/64. And P(mean = 0) = 1/4 * 1/16 = 1/64.
    law = _exact_two_level([[0, 1], [1, 1]])
    assert law[Fraction(1)] == Fraction(25, 64)
    assert law[Fraction(0)] == Fraction(1, 64)
    assert sum(law.values()) == 1
    samples = two_level_samples([[0, 1], [1, 1]], n_boot=200_000, seed=1)
    for value, p in law.items():
        assert np.mean(np.isclose(samples, float(value))) == pytest.approx(float(p), abs=0.004)


def test_seed_interval_is_the_exact_quantiles() -> None:
    # Three seeds of two episodes; the exact resample law puts each 2.5% / 97.5% quantile
    # well inside one atom, so 100k draws give exactly that atom.
    groups = [[0, 0], [1, 1], [0, 1]]
    law = sorted(_exact_two_level(groups).items())
    cdf = np.cumsum([float(p) for _, p in law])
    want_lo = float(law[int(np.searchsorted(cdf, 0.025))][0])
    want_hi = float(law[int(np.searchsorted(cdf, 0.975))][0])
    est = seed_estimate(groups, n_boot=100_000, seed=0)
    for q in (0.025, 0.975):  # neither quantile sits on the edge of an atom
        assert abs(cdf[int(np.searchsorted(cdf, q))] - q) > 0.01
    assert est.value == pytest.approx(3 / 6) and est.n == 6
    assert (est.lo, est.hi) == pytest.approx((want_lo, want_hi))
    # seeds that disagree widen the interval beyond the pooled one-level bootstrap
    pooled = seed_estimate([[v for g in groups for v in g]], n_boot=100_000, seed=0)
    assert est.hi - est.lo >= pooled.hi - pooled.lo


def test_seed_interval_edge_cases() -> None:
    same = seed_estimate([[1, 1], [1, 1], [1, 1]])
    assert (same.value, same.lo, same.hi) == (1.0, 1.0, 1.0)
    assert seed_estimate([]).n == 0 and math.isnan(seed_estimate([[]]).value)
    # one episode per seed: the ordinary bootstrap over seeds; ragged seeds take the slow path
    a = seed_estimate([[0], [1], [1], [1]], seed=3)
    assert a.value == 0.75 and 0.0 <= a.lo <= 0.75 <= a.hi <= 1.0
    r = seed_estimate([[0, 1, 1], [1]], seed=0)
    assert r.value == 0.75 and r.n == 4
    assert seed_estimate([[0, 1, 1], [1]], seed=0) == r  # seeded
    q = seed_estimate([[1, 2, 3, 100], [2, 2, 3, 4]], "iqm")
    assert q.value == iqm([1, 2, 3, 100, 2, 2, 3, 4])  # mean(2, 2, 3, 3)


def test_success_interval_never_collapses_to_a_point() -> None:
    # 20/20 in one seed: every resample is 1, so the bootstrap says [1, 1]; Wilson for 20/20
    # is [n / (n + z^2), 1] = [20 / 23.8415, 1] = [0.8389, 1] (hand-computed, z = 1.95996).
    all_won = success_estimate([[1.0] * 20])
    assert seed_estimate([[1.0] * 20]).lo == 1.0
    assert (all_won.value, all_won.hi, all_won.n) == (1.0, 1.0, 20)
    assert all_won.lo == pytest.approx(20 / (20 + 1.959963984540054**2)) == pytest.approx(0.8389, abs=1e-4)
    # 0 of 5 seeds x 4 episodes: [0, z^2 / (n + z^2)] = [0, 3.8415 / 23.8415] = [0, 0.1611]
    none = success_estimate([[0.0] * 4] * 5)
    assert (none.value, none.lo) == (0.0, 0.0) and none.hi == pytest.approx(0.1611, abs=1e-4)
    # seeds that disagree (all or nothing): the seed bootstrap is the wider one and is kept
    split = [[1.0] * 5, [0.0] * 5, [1.0] * 5, [0.0] * 5]
    boot, est = seed_estimate(split), success_estimate(split)
    wl, wh = wilson_interval(10, 20)
    assert (est.lo, est.hi) == (boot.lo, boot.hi) and boot.lo < wl and boot.hi > wh
    assert success_estimate([]).n == 0


def test_aggregate_iqm_hand_computed_and_exact_law() -> None:
    # 8 (run, task) scores -> drop 2 at each end -> mean(.2, .4, .6, .8) = .5
    est = aggregate_iqm([[0.0, 0.2, 0.4, 1.0], [0.6, 0.8, 1.0, 0.0]])
    assert est.value == pytest.approx(0.5) and est.n == 8
    # Two tasks of two runs: task A [0, 1], task B [1, 1]. A stratified resample redraws A's
    # runs only among A's: 4 values, IQM = mean of the middle two. A redraws [0,0] (1/4):
    # values 0,0,1,1 -> 0.5; [0,1] or [1,0] (1/2): 0,1,1,1 -> 1; [1,1] (1/4): 1. So the IQM is
    # 0.5 with probability 1/4 and 1 otherwise: the 95% interval is [0.5, 1].
    boot = aggregate_iqm([[0, 1], [1, 1]], n_boot=20_000, seed=2)
    assert boot.value == 1.0 and (boot.lo, boot.hi) == (0.5, 1.0)
    with pytest.raises(ValueError, match="at least one run"):
        aggregate_iqm([[0.1], []])


def test_probability_of_improvement_hand_computed() -> None:
    # x = [1, 2, 3] vs y = [0, 2, 4]: of 9 pairs, x wins 4 (1>0, 2>0, 3>0, 3>2), ties 1 (2=2):
    # P = (4 + 0.5) / 9 = 0.5.
    assert probability_of_improvement([[1, 2, 3]], [[0, 2, 4]]).value == pytest.approx(0.5)
    # two tasks: 0.5 and 1.0 (x always above) -> mean 0.75; identical agents -> 0.5 exactly
    two = probability_of_improvement([[1, 2, 3], [5, 6]], [[0, 2, 4], [1]])
    assert two.value == pytest.approx(0.75) and two.n == 2
    same = probability_of_improvement([[0.3, 0.3]], [[0.3]])
    assert (same.value, same.lo, same.hi) == (0.5, 0.5, 0.5)
    # one run each: P is 1, 0 or 1/2 and the interval cannot move
    assert probability_of_improvement([[1.0]], [[0.0]]).lo == 1.0
    with pytest.raises(ValueError, match="2 tasks for x but 1"):
        probability_of_improvement([[1], [2]], [[1]])


def test_mcnemar_exact_hand_computed() -> None:
    # 1 episode only A solved, 5 only B solved, 4 both: n = 6 discordant pairs,
    # p = 2 * P(Bin(6, 1/2) <= 1) = 2 * (1 + 6) / 64 = 14/64 = 0.21875
    a = [True] + [False] * 5 + [True] * 4
    b = [False] + [True] * 5 + [True] * 4
    assert mcnemar_exact(a, b) == (1, 5, pytest.approx(0.21875))
    assert mcnemar_exact([True, False], [True, False]) == (0, 0, 1.0)
    # 0 vs 8 discordant: p = 2 / 256
    assert mcnemar_exact([True] * 8, [False] * 8)[2] == pytest.approx(2 / 256)
    assert mcnemar_exact([True] * 3, [True] * 3)[2] == 1.0
    with pytest.raises(ValueError, match="pairs needed"):
        mcnemar_exact([True], [True, False])
