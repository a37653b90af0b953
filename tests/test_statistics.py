"""Statistics against values computed by hand (and cross-checked with scipy/statsmodels)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from polar.statistics import (
    Z95,
    bootstrap_ci,
    iqm,
    iqm_estimate,
    mean_estimate,
    success_rate,
    wilson_interval,
)


def test_wilson_8_of_10_matches_hand_computation() -> None:
    # p = 0.8, z^2 = 3.8415: centre = (0.8 + 0.19207) / 1.38415 = 0.71675,
    # half = 1.96 * sqrt(0.016 + 0.0096037) / 1.38415 = 0.22658 -> [0.4902, 0.9433]
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4901625, abs=1e-6)
    assert hi == pytest.approx(0.9433178, abs=1e-6)


def test_wilson_edges_and_symmetry() -> None:
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0
    # k = 0: upper bound = z^2 / (n + z^2)
    assert hi == pytest.approx(Z95**2 / (10 + Z95**2), rel=1e-12)
    lo2, hi2 = wilson_interval(10, 10)
    assert hi2 == 1.0 and lo2 == pytest.approx(1 - hi, rel=1e-12)
    a, b = wilson_interval(3, 10)
    c, d = wilson_interval(7, 10)
    assert a == pytest.approx(1 - d) and b == pytest.approx(1 - c)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes=11, n=10"):
        wilson_interval(11, 10)


def test_success_rate_estimate() -> None:
    est = success_rate([True] * 8 + [False] * 2)
    assert est.value == 0.8 and est.n == 10
    assert (est.lo, est.hi) == pytest.approx(wilson_interval(8, 10))
    assert est.fmt() == "0.80 [0.49, 0.94]"


def test_iqm_hand_computed() -> None:
    # n = 8: drop 2 from each end -> mean(3, 4, 5, 6) = 4.5
    assert iqm([8, 1, 7, 2, 6, 3, 5, 4]) == 4.5
    # n = 10: drop floor(2.5) = 2 each end -> mean(3..8) = 5.5; the outlier 1000 is ignored
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000]) == 5.5
    # n = 3: nothing dropped
    assert iqm([1, 2, 9]) == 4.0
    assert math.isnan(iqm([]))


def test_bootstrap_is_seeded_and_brackets_the_statistic() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(5.0, 2.0, size=200)
    a = bootstrap_ci(x, lambda s: s.mean(axis=1), seed=3)
    b = bootstrap_ci(x, lambda s: s.mean(axis=1), seed=3)
    c = bootstrap_ci(x, lambda s: s.mean(axis=1), seed=4)
    assert a == b and a != c
    lo, hi = a
    assert lo < x.mean() < hi
    # the percentile bootstrap of a mean is close to the normal interval mean +- 1.96 s/sqrt(n)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert lo == pytest.approx(x.mean() - Z95 * se, abs=0.1 * se * Z95 + 0.05)
    assert hi == pytest.approx(x.mean() + Z95 * se, abs=0.1 * se * Z95 + 0.05)


def test_constant_values_have_a_point_interval() -> None:
    m = mean_estimate([2.0] * 7)
    q = iqm_estimate([2.0] * 7)
    assert (m.value, m.lo, m.hi) == (2.0, 2.0, 2.0)
    assert (q.value, q.lo, q.hi) == (2.0, 2.0, 2.0)


def test_iqm_estimate_interval_is_robust_to_outliers() -> None:
    x = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 100.0]
    assert iqm(x) == pytest.approx(1.0125)  # mean(1.0, 1.0, 1.0, 1.05)
    x = [0.9, 1.0, 1.1] * 10 + [100.0]
    q = iqm_estimate(x, seed=0)
    m = mean_estimate(x, seed=0)
    assert q.hi < 2.0 < m.hi  # the outlier drags the mean's interval, not the IQM's
