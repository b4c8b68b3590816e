"""A position-based click model for the robustness option (``benchmarks/noise.py`` uses it too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Click probability of an examined document by grade 0 / 1 / >= 2 (0.1: click noise).
CLICK_EPS = (0.1, 0.5, 1.0)
#: Positions examined (from 0): ``1 / (r + 1)`` for ``r < CLICK_DEPTH``, 0 below.
CLICK_DEPTH = 10
#: Click counts are capped here.
CLICK_CAP = 4


def simulate_clicks(
    y: Any,
    group: Any,
    *,
    sessions: int = 50,
    seed: int | np.random.Generator | None = 0,
    eps: Sequence[float] = CLICK_EPS,
    depth: int = CLICK_DEPTH,
    cap: int = CLICK_CAP,
) -> np.ndarray:
    """Click counts of a position-based model on randomly ordered sessions.

    Each query gets ``sessions`` sessions; a session shows its documents in a random order (a
    randomised logging policy), position ``r`` (from 0) is examined with probability
    ``1 / (r + 1)`` for ``r < depth``, and an examined document is clicked with probability
    ``eps[min(grade, len(eps) - 1)]``. The label is the click count, capped at ``cap``.

    Parameters
    ----------
    y : array-like, shape (n,)
        Relevance grades (>= 0; fractional grades are floored).
    group : array-like of int
        Query sizes.
    sessions, depth, cap : int
    seed : int or numpy.random.Generator or None
    eps : sequence of float

    Returns
    -------
    ndarray of float64, shape (n,)

    Examples
    --------
    >>> clicks = simulate_clicks([2, 0, 1, 0], [4], sessions=200, seed=0)
    >>> bool(clicks[0] >= clicks[1])
    True
    """
    y = np.asarray(y, dtype=np.float64)
    sizes = np.asarray(group, dtype=np.int64)
    if y.ndim != 1 or np.any(y < 0) or not np.all(np.isfinite(y)):
        raise ValueError("`y` must be a 1-D vector of finite grades >= 0")
    if sizes.sum() != y.size:
        raise ValueError(f"`group` sizes sum to {int(sizes.sum())}; `y` has {y.size} rows")
    if isinstance(sessions, bool) or not isinstance(sessions, int) or sessions < 1:
        raise ValueError(f"`sessions` must be an int >= 1; got {sessions!r}")
    rng = np.random.default_rng(seed)
    p = np.asarray(eps, dtype=np.float64)[np.minimum(y, len(eps) - 1).astype(np.int64)]
    clicks = np.zeros(y.size)
    start = 0
    for n in sizes:
        n = int(n)
        theta = np.where(np.arange(n) < depth, 1.0 / (np.arange(n) + 1.0), 0.0)
        for _ in range(sessions):
            perm = rng.permutation(n)  # perm[r]: the document shown at position r
            click = rng.random(n) < theta * p[start + perm]
            clicks[start + perm[click]] += 1.0
        start += n
    return np.minimum(clicks, cap)
