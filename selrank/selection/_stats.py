"""Paired comparisons over queries (and training seeds) for the selection report."""

from __future__ import annotations

import math

import numpy as np


def _normal_two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """Mean paired difference ``a - b`` over units (queries or rows) and training seeds.

    ``a`` and ``b`` hold ``[n_seeds, n_units]`` values (NaN: a unit without a value, left
    out of both). The CI resamples units and, with several seeds, seeds too (a two-level
    bootstrap, so the seed variance widens it). The p-value is the paired t-test on the
    per-unit seed means for one seed; for several, the normal approximation with
    ``se**2 = var_units / n_units + var_seeds / n_seeds`` (``var_seeds``: the variance over
    seeds of the mean difference).

    Returns
    -------
    dict
        ``delta``, ``low``, ``high``, ``p`` and ``n`` (units).
    """
    from ..metrics import paired_t_test

    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(b, dtype=np.float64))
    ok = ~(np.isnan(a).any(axis=0) | np.isnan(b).any(axis=0))
    d = a[:, ok] - b[:, ok]
    n_seeds, n = d.shape
    if n < 2:
        return {
            "delta": float("nan"),
            "low": float("nan"),
            "high": float("nan"),
            "p": float("nan"),
            "n": n,
        }
    per_unit = d.mean(axis=0)
    delta = float(per_unit.mean())
    if n_seeds == 1:
        _, p = paired_t_test(a[0, ok], b[0, ok])
    else:
        se2 = per_unit.var(ddof=1) / n + d.mean(axis=1).var(ddof=1) / n_seeds
        p = 1.0 if se2 == 0 else _normal_two_sided(delta / math.sqrt(se2))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_resamples)
    chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
    for start in range(0, n_resamples, chunk):
        m = min(chunk, n_resamples - start)
        if n_seeds > 1:
            w = rng.multinomial(n_seeds, np.full(n_seeds, 1.0 / n_seeds), size=m) / n_seeds
            values = w @ d  # [m, n]: each resample's seed mix per unit
        else:
            values = np.broadcast_to(per_unit, (m, n))
        idx = rng.integers(0, n, size=(m, n))
        boot[start : start + m] = np.take_along_axis(values, idx, axis=1).mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(boot, [100 * alpha, 100 * (1 - alpha)])
    return {"delta": delta, "low": float(lo), "high": float(hi), "p": float(p), "n": int(n)}


def verdict(low: float, high: float, p_adjusted: float, higher_is_better: bool) -> str:
    """``better`` / ``worse`` when the CI excludes 0 and the adjusted p < 0.05, else ``parity``."""
    if not (p_adjusted < 0.05):
        return "parity"
    if low > 0:
        return "better" if higher_is_better else "worse"
    if high < 0:
        return "worse" if higher_is_better else "better"
    return "parity"
