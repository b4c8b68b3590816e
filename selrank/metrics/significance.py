"""Paired significance tests and multiple-comparison corrections.

NumPy only: the t distribution is evaluated with a continued fraction, so scipy is not
needed at run time (the tests check these functions against scipy).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["paired_t_test", "paired_permutation_test"]


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


def paired_t_test(a, b) -> tuple[float, float]:
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


def paired_permutation_test(a, b, *, n_resamples: int = 10_000, seed=0) -> float:
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
