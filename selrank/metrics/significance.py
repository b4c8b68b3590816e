"""Paired significance tests and multiple-comparison corrections.

NumPy only: the t distribution is evaluated with a continued fraction, so scipy is not
needed at run time (the tests check these functions against scipy).
"""

from __future__ import annotations

import math

import numpy as np

from .._array import Array

__all__ = [
    "paired_t_test",
    "paired_permutation_test",
    "wilcoxon_signed_rank_test",
    "paired_bootstrap_ci",
    "holm",
]


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta ``I_x(a, b)`` by Lentz's continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _betainc(b, a, 1.0 - x)
    log_front = a * math.log(x) + b * math.log1p(-x) - math.log(a)
    log_front -= math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return math.exp(log_front) * h


def _t_two_sided(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def paired_t_test(a: Array, b: Array) -> tuple[float, float]:
    """Paired two-sided t-test of ``mean(a - b) = 0``.

    Returns ``(t, p_value)``. Identical samples give ``(0.0, 1.0)``; a constant non-zero
    difference gives ``(±inf, 0.0)``. The t distribution is evaluated with a continued
    fraction, so scipy is not needed.

    Examples
    --------
    >>> t, p = paired_t_test([0.5, 0.6, 0.7, 0.9], [0.4, 0.6, 0.5, 0.6])
    >>> round(t, 4), round(p, 4)
    (2.3238, 0.1027)
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"paired_t_test needs two 1-D samples of >= 2 values; got {d.shape}")
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return (0.0, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), 0.0)
    t = mean / (sd / math.sqrt(d.size))
    return t, _t_two_sided(t, d.size - 1.0)


def paired_permutation_test(
    a: Array, b: Array, *, n_resamples: int = 10_000, seed: int | np.random.Generator | None = 0
) -> float:
    """Two-sided paired randomisation (sign-flip) test of ``mean(a - b) = 0``.

    Under the null each per-query difference is equally likely to have either sign. With
    ``2^n <= n_resamples`` all sign patterns are enumerated (exact p-value); otherwise
    ``p = (1 + #{|mean*| >= |mean|}) / (1 + n_resamples)`` over random flips.

    Examples
    --------
    >>> paired_permutation_test([0.5, 0.6, 0.7, 0.9], [0.4, 0.6, 0.5, 0.6])
    0.25
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.ndim != 1 or d.size < 1:
        raise ValueError(f"paired_permutation_test needs two 1-D samples; got {d.shape}")
    if isinstance(n_resamples, bool) or int(n_resamples) < 1:
        raise ValueError(f"`n_resamples` must be a positive int; got {n_resamples!r}")
    n = d.size
    observed = abs(d.sum())
    tol = 1e-9 * max(np.abs(d).sum(), 1e-300)
    if observed <= tol:
        return 1.0
    if n <= 16 and 2**n <= n_resamples:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
        stats = np.abs((1 - 2 * bits) @ d)
        return float(np.mean(stats >= observed - tol))
    rng = np.random.default_rng(seed)
    hits = 0
    chunk = max(1, 4_000_000 // n)
    done = 0
    while done < n_resamples:
        m = min(chunk, n_resamples - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
        done += m
    return (1.0 + hits) / (1.0 + n_resamples)


_CORRECTIONS = (None, "holm", "bonferroni")


def _adjust(p: np.ndarray, correction: str | None) -> np.ndarray:
    if correction is None or p.size == 0:
        return p
    m = p.size
    if correction == "bonferroni":
        return np.minimum(p * m, 1.0)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty_like(p)
    out[order] = np.minimum(stepped, 1.0)
    return out


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _normal_ppf(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def _paired_differences(a, b, what: str, minimum: int) -> np.ndarray:
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.ndim != 1 or d.size < minimum:
        raise ValueError(
            f"{what} needs two 1-D samples of >= {minimum} values; got shape {d.shape}"
        )
    if not np.all(np.isfinite(d)):
        raise ValueError(f"{what}: the samples must be finite (drop excluded queries first)")
    return d


def wilcoxon_signed_rank_test(a: Array, b: Array) -> tuple[float, float]:
    """Paired two-sided Wilcoxon signed-rank test of a zero median of ``a - b``.

    Zero differences are dropped (Wilcoxon's convention, scipy's ``zero_method="wilcox"``),
    tied absolute differences get their average rank, and the p-value comes from the normal
    approximation with the tie correction of the variance and no continuity correction
    (scipy's ``method="asymptotic"``), which is accurate for the hundreds of queries of a
    ranking benchmark.

    Returns ``(statistic, p_value)`` where ``statistic = min(R+, R-)``. Samples that are
    equal everywhere give ``(0.0, 1.0)``.

    Examples
    --------
    >>> stat, p = wilcoxon_signed_rank_test([0.5, 0.6, 0.7, 0.9, 0.3], [0.4, 0.6, 0.5, 0.6, 0.35])
    >>> stat, round(p, 4)
    (1.0, 0.1441)
    """
    d = _paired_differences(a, b, "wilcoxon_signed_rank_test", 1)
    d = d[d != 0.0]
    n = d.size
    if n == 0:
        return 0.0, 1.0
    absd = np.abs(d)
    order = np.argsort(absd, kind="stable")
    sorted_abs = absd[order]
    # average ranks of tied |d|
    starts = np.flatnonzero(np.r_[True, sorted_abs[1:] != sorted_abs[:-1]])
    counts = np.diff(np.r_[starts, n])
    avg = starts + (counts + 1) / 2.0
    ranks = np.empty(n)
    ranks[order] = np.repeat(avg, counts)
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    stat = min(r_plus, r_minus)
    mean = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(counts**3 - counts)) / 48.0
    if var <= 0.0:
        return stat, 1.0
    z = (stat - mean) / math.sqrt(var)
    return stat, min(1.0, 2.0 * _normal_cdf(-abs(z)))


def _bootstrap_means(d: np.ndarray, n_resamples: int, rng) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement) of ``d``, in bounded memory."""
    n = d.size
    out = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // n)
    for lo in range(0, n_resamples, chunk):
        hi = min(n_resamples, lo + chunk)
        idx = rng.integers(0, n, size=(hi - lo, n))
        out[lo:hi] = d[idx].mean(axis=1)
    return out


def paired_bootstrap_ci(
    a: Array,
    b: Array,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    method: str = "percentile",
    seed: int | np.random.Generator | None = 0,
) -> tuple[float, float]:
    """Bootstrap confidence interval of the mean paired difference ``mean(a - b)``.

    Pairs (queries) are resampled with replacement, so the dependence between ``a`` and
    ``b`` on the same query is kept (scipy's ``bootstrap(..., paired=True)``).

    Parameters
    ----------
    a, b : array-like of shape (n,)
        Paired values (e.g. per-query NDCG of two systems), ``n >= 2``.
    confidence : float
        Two-sided confidence level in (0, 1).
    n_resamples : int
        Bootstrap resamples.
    method : {"percentile", "bca"}
        Percentile interval, or bias-corrected and accelerated (Efron 1987; acceleration
        from the jackknife, as scipy computes it).
    seed : int or numpy.random.Generator

    Returns
    -------
    (low, high) : tuple of float
        A constant difference gives ``(d, d)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(0.5, 0.1, 300)
    >>> low, high = paired_bootstrap_ci(a + 0.02, a + rng.normal(0, 0.05, 300))
    >>> bool(low < 0.02 < high), bool(high - low < 0.02)
    (True, True)
    """
    d = _paired_differences(a, b, "paired_bootstrap_ci", 2)
    if not (isinstance(confidence, int | float) and 0.0 < confidence < 1.0):
        raise ValueError(f"`confidence` must be in (0, 1); got {confidence!r}")
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 2
    ):
        raise ValueError(f"`n_resamples` must be an int >= 2; got {n_resamples!r}")
    if method not in ("percentile", "bca"):
        raise ValueError(f"`method` must be 'percentile' or 'bca'; got {method!r}")
    theta = float(d.mean())
    if np.all(d == d[0]):
        return theta, theta
    rng = np.random.default_rng(seed)
    boot = _bootstrap_means(d, int(n_resamples), rng)
    alpha = (1.0 - confidence) / 2.0
    if method == "percentile":
        lo, hi = np.percentile(boot, [100 * alpha, 100 * (1 - alpha)])
        return float(lo), float(hi)
    # BCa: bias from the share of resamples below the estimate (ties count half)
    share = (np.count_nonzero(boot < theta) + 0.5 * np.count_nonzero(boot == theta)) / boot.size
    share = min(max(share, 1.0 / (2 * boot.size)), 1.0 - 1.0 / (2 * boot.size))
    z0 = _normal_ppf(share)
    jack = (d.sum() - d) / (d.size - 1)
    dev = jack.mean() - jack
    denom = 6.0 * float(np.sum(dev**2)) ** 1.5
    acc = float(np.sum(dev**3)) / denom if denom > 0 else 0.0
    levels = []
    for q in (alpha, 1.0 - alpha):
        zq = _normal_ppf(q)
        levels.append(_normal_cdf(z0 + (z0 + zq) / (1.0 - acc * (z0 + zq))))
    lo, hi = np.percentile(boot, [100 * levels[0], 100 * levels[1]])
    return float(lo), float(hi)


def holm(p_values: Array) -> np.ndarray:
    """Holm's step-down adjustment of p-values (family-wise error rate).

    The i-th smallest p-value is multiplied by ``m - i + 1`` (``m`` tests), made
    non-decreasing in that order, and capped at 1; reject where the adjusted value is below
    the level. NaN entries (no test) stay NaN and do not count in ``m``.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"`p_values` must be 1-D; got shape {p.shape}")
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError("`p_values` must be in [0, 1]")
    out[ok] = _adjust(p[ok], "holm")
    return out
