"""Interval estimates for eval figures: Wilson for success rates, percentile bootstrap for returns.

Why these: a success rate over a handful of episodes is a binomial proportion, and the Wilson
score interval keeps honest coverage near 0 and 1 where the normal ("Wald") interval
collapses to a point. Returns are not binomial, so their mean and interquartile mean (IQM,
the robust aggregate recommended by rliable, Agarwal et al. 2021) get percentile-bootstrap
intervals. The bootstrap is seeded so the same episodes always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

# Two-sided 95% standard normal quantile (scipy.stats.norm.ppf(0.975)).
Z95 = 1.959963984540054


class Estimate(BaseModel):
    """A point estimate and its interval; `n` is the number of values behind it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    lo: float
    hi: float
    n: int

    def fmt(self, digits: int = 2) -> str:
        if self.n == 0:
            return "n/a"
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for `successes` out of `n` trials.

    With n = 0 nothing is known, so the interval is the whole [0, 1].
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson_interval: need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # k = 0 and k = n give exactly 0 and 1 analytically; do not let rounding say otherwise.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def success_rate(outcomes: Sequence[bool], z: float = Z95) -> Estimate:
    n = len(outcomes)
    k = int(sum(bool(o) for o in outcomes))
    lo, hi = wilson_interval(k, n, z)
    return Estimate(value=k / n if n else float("nan"), lo=lo, hi=hi, n=n)


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% after dropping floor(n/4) from each end.

    This is `scipy.stats.trim_mean(x, 0.25)`, which rliable uses for its IQM.
    """
    x = np.sort(np.asarray(values, dtype=np.float64).reshape(-1))
    n = x.size
    if n == 0:
        return float("nan")
    k = int(0.25 * n)
    return float(x[k : n - k].mean())


def _iqm_rows(samples: np.ndarray) -> np.ndarray:
    """IQM of each row of a (B, n) matrix, vectorised for the bootstrap."""
    s = np.sort(samples, axis=1)
    n = s.shape[1]
    k = int(0.25 * n)
    return s[:, k : n - k].mean(axis=1)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of `statistic`.

    `statistic` maps a (B, n) matrix of resamples to B values (row-wise), so the whole
    bootstrap is one numpy call. Deterministic for a given seed.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return float("nan"), float("nan")
    if not 0 < confidence < 1:
        raise ValueError(f"bootstrap_ci: confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    stats = statistic(x[idx])
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha])
    return float(lo), float(hi)


def mean_estimate(values: Sequence[float], *, n_boot: int = 2000, seed: int = 0) -> Estimate:
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return Estimate(value=float("nan"), lo=float("nan"), hi=float("nan"), n=0)
    lo, hi = bootstrap_ci(x, lambda s: s.mean(axis=1), n_boot=n_boot, seed=seed)
    return Estimate(value=float(x.mean()), lo=lo, hi=hi, n=int(x.size))


def iqm_estimate(values: Sequence[float], *, n_boot: int = 2000, seed: int = 0) -> Estimate:
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return Estimate(value=float("nan"), lo=float("nan"), hi=float("nan"), n=0)
    lo, hi = bootstrap_ci(x, _iqm_rows, n_boot=n_boot, seed=seed)
    return Estimate(value=iqm(x), lo=lo, hi=hi, n=int(x.size))
