"""Interval estimates for eval figures: Wilson for success rates, percentile bootstrap for returns.

Why these: a success rate over a handful of episodes is a binomial proportion, and the Wilson
score interval keeps honest coverage near 0 and 1 where the normal ("Wald") interval
collapses to a point. Returns are not binomial, so their mean and interquartile mean (IQM,
the robust aggregate recommended by rliable, Agarwal et al. 2021) get percentile-bootstrap
intervals. The bootstrap is seeded so the same episodes always give the same interval.

Seed-level statistics (rliable, Agarwal et al. 2021): an agent that trains is a random variable
over its training seed, so its intervals resample seeds, then episodes within them
(`seed_estimate`; for success rates `success_estimate`, never narrower than Wilson's);
comparisons across tasks use the IQM of per-run normalised scores with a
stratified bootstrap (`aggregate_iqm`) and the probability of improvement
(`probability_of_improvement`); paired comparisons on the same episode seeds use the exact
McNemar test (`mcnemar_exact`) and a seed-level interval of the paired differences.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

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


# ---- seed-level statistics (rliable-style) ------------------------------------------------
#
# An agent that trains is a random variable over its training seed: episodes of one seed share
# one policy, so pooling them as if independent understates the uncertainty. The intervals
# below resample seeds (runs) first. Layout: `groups[s]` holds the values of seed s (one per
# episode); `tasks[t][r]` holds run r's score on task t. Every bootstrap is seeded.


def _percentile(stats: np.ndarray, confidence: float) -> tuple[float, float]:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha])
    return float(lo), float(hi)


def _groups(groups: Sequence[Sequence[float]]) -> list[np.ndarray]:
    out = [np.asarray(g, dtype=np.float64).reshape(-1) for g in groups]
    return [g for g in out if g.size]


STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mean": lambda s: s.mean(axis=1),
    "iqm": _iqm_rows,
}


def two_level_samples(groups: Sequence[Sequence[float]], statistic: str = "mean", *, n_boot: int = 2000,
                      seed: int = 0) -> np.ndarray:
    """`n_boot` bootstrap replicates of `statistic` over seeds x episodes: draw as many seeds as
    there are, with replacement; for each drawn seed, draw its episodes with replacement; apply
    the statistic to everything drawn. (A seed with one episode, or one seed, reduces this to
    the ordinary one-level bootstrap.)"""
    gs = _groups(groups)
    if not gs:
        return np.full(n_boot, np.nan)
    fn = STATISTICS[statistic]
    rng = np.random.default_rng(seed)
    sizes = {g.size for g in gs}
    if len(sizes) == 1:  # the usual case (every cell plays the same episodes): one numpy call
        m = np.stack(gs)  # (S, E)
        s_count, e_count = m.shape
        rows = rng.integers(0, s_count, size=(n_boot, s_count, 1))
        cols = rng.integers(0, e_count, size=(n_boot, s_count, e_count))
        return fn(m[rows, cols].reshape(n_boot, -1))
    out = np.empty(n_boot)
    for b in range(n_boot):
        picked = rng.integers(0, len(gs), size=len(gs))
        drawn = [gs[i][rng.integers(0, gs[i].size, size=gs[i].size)] for i in picked]
        out[b] = fn(np.concatenate(drawn)[None, :])[0]
    return out


def seed_estimate(groups: Sequence[Sequence[float]], statistic: str = "mean", *, n_boot: int = 2000,
                  confidence: float = 0.95, seed: int = 0) -> Estimate:
    """The statistic over every value, with a percentile interval from `two_level_samples`.
    For success, pass 0/1 values: the rate and its interval over seeds x episodes."""
    gs = _groups(groups)
    n = sum(g.size for g in gs)
    if n == 0:
        return Estimate(value=float("nan"), lo=float("nan"), hi=float("nan"), n=0)
    value = float(STATISTICS[statistic](np.concatenate(gs)[None, :])[0])
    lo, hi = _percentile(two_level_samples(gs, statistic, n_boot=n_boot, seed=seed), confidence)
    return Estimate(value=value, lo=lo, hi=hi, n=n)


def success_estimate(groups: Sequence[Sequence[float]], *, n_boot: int = 2000, confidence: float = 0.95,
                     seed: int = 0) -> Estimate:
    """A success rate over seeds x episodes (`groups[s]`: seed s's 0/1 outcomes): the
    `seed_estimate` interval, widened to contain the Wilson interval of the same episodes
    pooled. The percentile bootstrap collapses to a point when every episode has the same
    outcome (20/20 gives [1, 1]); Wilson keeps the small-sample uncertainty that the
    resamples cannot show, and seed-to-seed variance still widens it where seeds disagree."""
    est = seed_estimate(groups, n_boot=n_boot, confidence=confidence, seed=seed)
    if est.n == 0:
        return est
    lo, hi = wilson_interval(round(est.value * est.n), est.n, NormalDist().inv_cdf(0.5 + confidence / 2))
    return est.model_copy(update={"lo": min(est.lo, lo), "hi": max(est.hi, hi)})


def _stratified(tasks: Sequence[Sequence[float]], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, total runs): each task's runs redrawn with replacement within that task."""
    parts = []
    for t in tasks:
        x = np.asarray(t, dtype=np.float64).reshape(-1)
        parts.append(x[rng.integers(0, x.size, size=(n_boot, x.size))])
    return np.concatenate(parts, axis=1)


def _check_tasks(tasks: Sequence[Sequence[float]], what: str) -> None:
    if not tasks or any(len(t) == 0 for t in tasks):
        raise ValueError(f"{what}: every task needs at least one run score")


def aggregate_iqm(tasks: Sequence[Sequence[float]], *, n_boot: int = 2000, confidence: float = 0.95,
                  seed: int = 0) -> Estimate:
    """IQM over all (run, task) scores, with a stratified-bootstrap interval (runs redrawn
    within each task, as rliable does). `tasks[t]` holds the runs' normalised scores on task t."""
    _check_tasks(tasks, "aggregate_iqm")
    flat = np.concatenate([np.asarray(t, dtype=np.float64).reshape(-1) for t in tasks])
    rng = np.random.default_rng(seed)
    lo, hi = _percentile(_iqm_rows(_stratified(tasks, n_boot, rng)), confidence)
    return Estimate(value=iqm(flat), lo=lo, hi=hi, n=int(flat.size))


def _poi_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 of each row pair: x (B, n), y (B, m) -> (B,)."""
    gt = (x[:, :, None] > y[:, None, :]).mean(axis=(1, 2))
    eq = (x[:, :, None] == y[:, None, :]).mean(axis=(1, 2))
    return gt + 0.5 * eq


def probability_of_improvement(x_tasks: Sequence[Sequence[float]], y_tasks: Sequence[Sequence[float]], *,
                               n_boot: int = 2000, confidence: float = 0.95, seed: int = 0) -> Estimate:
    """P(X > Y): on each task, the probability that a random run of X scores above a random run
    of Y (ties count half: the Mann-Whitney U statistic over n x m run pairs), averaged over
    tasks; the interval redraws each agent's runs within each task (stratified bootstrap)."""
    _check_tasks(x_tasks, "probability_of_improvement: x")
    _check_tasks(y_tasks, "probability_of_improvement: y")
    if len(x_tasks) != len(y_tasks):
        raise ValueError(f"probability_of_improvement: {len(x_tasks)} tasks for x but {len(y_tasks)} for y")
    rng = np.random.default_rng(seed)
    value, boot = 0.0, np.zeros(n_boot)
    for xt, yt in zip(x_tasks, y_tasks, strict=True):
        x = np.asarray(xt, dtype=np.float64).reshape(-1)
        y = np.asarray(yt, dtype=np.float64).reshape(-1)
        value += float(_poi_rows(x[None, :], y[None, :])[0])
        boot += _poi_rows(x[rng.integers(0, x.size, size=(n_boot, x.size))],
                          y[rng.integers(0, y.size, size=(n_boot, y.size))])
    k = len(x_tasks)
    lo, hi = _percentile(boot / k, confidence)
    return Estimate(value=value / k, lo=lo, hi=hi, n=k)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int, float]:
    """Exact McNemar test on paired successes: (episodes only A solved, episodes only B solved,
    two-sided p-value). Under "A and B are equally good", each discordant pair is a fair coin:
    p = min(1, 2 * P(Binomial(n, 1/2) <= min(a_only, b_only))), n = a_only + b_only."""
    if len(a) != len(b):
        raise ValueError(f"mcnemar_exact: {len(a)} outcomes for A but {len(b)} for B (pairs needed)")
    a_only = sum(bool(x) and not bool(y) for x, y in zip(a, b, strict=True))
    b_only = sum(bool(y) and not bool(x) for x, y in zip(a, b, strict=True))
    n = a_only + b_only
    if n == 0:
        return a_only, b_only, 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1)) / 2**n
    return a_only, b_only, min(1.0, 2 * tail)
