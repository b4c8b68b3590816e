"""Synthetic data: MSLR-shaped ranking data, dwell times with idle users, and the
underspecification / stochasticity examples of the selective-matching-loss paper.

Everything here is vectorised NumPy driven by a seeded ``numpy.random.default_rng``; the same
arguments give the same arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import finite_float, positive_float
from ._containers import RankingSplit

__all__ = [
    "BustData",
    "StochasticScores",
    "SyntheticDwell",
    "MSLR_LABEL_PROPORTIONS",
    "make_bust_data",
    "make_dwell",
    "make_mslr_like",
    "make_one_large_score_data",
    "make_symmetric_score_data",
    "make_two_feature_data",
]

#: Default label histogram of :func:`make_mslr_like`: grades 0..4 in roughly the shares of the
#: MSLR-WEB collections (about half irrelevant, a third grade 1, under 3 % in grades 3 and 4).
MSLR_LABEL_PROPORTIONS = (0.52, 0.32, 0.13, 0.02, 0.01)

_DEVIATIONS = tuple(np.linspace(0.0, 1.0, 11).tolist())  # default of make_symmetric_score_data


def _positive_int(value: Any, name: str, owner: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"`{name}` of {owner} must be an int; got {value!r}")
    if value < minimum:
        raise ValueError(f"`{name}` of {owner} must be >= {minimum}; got {value}")
    return int(value)


def _query_sizes(rng: np.random.Generator, n_rows: int, mean: float) -> np.ndarray:
    """Positive sizes summing to ``n_rows``: 1 + Poisson(Gamma) (over-dispersed like MSLR)."""
    parts: list[np.ndarray] = []
    total = 0
    shape = 2.0  # gamma shape: coefficient of variation about 0.7, as in web-search logs
    while total < n_rows:  # one draw almost always suffices; the loop only tops it up
        n_q = max(16, int(1.3 * (n_rows - total) / mean) + 16)
        lam = rng.gamma(shape, max(mean - 1.0, 1e-9) / shape, size=n_q)
        s = 1 + rng.poisson(lam)
        parts.append(s)
        total += int(s.sum())
    sizes = np.concatenate(parts).astype(np.int64)
    ends = np.cumsum(sizes)
    k = int(np.searchsorted(ends, n_rows))  # first query that reaches n_rows
    sizes = sizes[: k + 1]
    sizes[-1] -= int(ends[k]) - n_rows
    return sizes


def make_mslr_like(
    n_rows: int = 1_000_000,
    n_features: int = 136,
    mean_docs_per_query: float = 120,
    seed: int = 0,
    *,
    n_informative: int = 20,
    label_proportions: Sequence[float] = MSLR_LABEL_PROPORTIONS,
    noise: float = 0.6,
) -> RankingSplit:
    """Synthetic ranking data shaped like MSLR-WEB10K/30K, at any size.

    Queries have over-dispersed sizes with mean ``mean_docs_per_query`` (at least 1 document).
    Relevance is a hidden score: a nonlinear function of the first ``n_informative``
    features (main effects through ``tanh`` and squares, plus pairwise interactions), a
    per-query offset (some queries have many relevant documents, some none) and Gaussian noise
    of standard deviation ``noise`` relative to the signal. Labels 0..4 are cut from that score
    at quantiles so that their shares are ``label_proportions``. Features are then given
    MSLR-like marginals by monotone transforms (kept informative for trees): a quarter of the
    columns are non-negative counts, a quarter are in (0, 1), a quarter are heavy-tailed
    (BM25-like) and the rest are Gaussian. Columns past ``n_informative`` carry no signal.

    Parameters
    ----------
    n_rows, n_features : int
    mean_docs_per_query : float
        Mean query size (MSLR-WEB30K: about 120).
    seed : int
    n_informative : int
        Features the relevance depends on (capped at ``n_features``).
    label_proportions : sequence of 5 floats
        Share of labels 0..4; normalised to sum to 1.
    noise : float
        Standard deviation of the label noise, in units of the signal's standard deviation.

    Returns
    -------
    RankingSplit
        ``X`` float32 (n_rows, n_features), ``y`` float64 in {0, ..., 4}, ``group`` (query
        sizes), ``qid`` (0, 1, ...). Unpacks as ``X, y, group``.

    Examples
    --------
    >>> X, y, group = make_mslr_like(2_000, 10, mean_docs_per_query=50, seed=1)
    >>> X.shape, X.dtype, int(group.sum())
    ((2000, 10), dtype('float32'), 2000)
    >>> sorted(set(y.tolist()))
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    owner = "make_mslr_like"
    n_rows = _positive_int(n_rows, "n_rows", owner)
    n_features = _positive_int(n_features, "n_features", owner)
    n_informative = min(_positive_int(n_informative, "n_informative", owner), n_features)
    mean = positive_float(mean_docs_per_query, "mean_docs_per_query", owner)
    if mean < 1:
        raise ValueError(f"`mean_docs_per_query` of {owner} must be >= 1; got {mean}")
    noise = positive_float(noise, "noise", owner, allow_zero=True)
    props = np.asarray(label_proportions, dtype=np.float64)
    if props.shape != (5,) or np.any(~np.isfinite(props)) or np.any(props < 0) or props.sum() <= 0:
        raise ValueError(
            f"`label_proportions` of {owner} must be 5 non-negative shares for labels 0..4; "
            f"got {label_proportions!r}"
        )
    props = props / props.sum()
    rng = np.random.default_rng(seed)

    sizes = _query_sizes(rng, n_rows, mean)
    qid = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    X = rng.standard_normal((n_rows, n_features), dtype=np.float32)

    # Hidden relevance: main effects, interactions of neighbouring features, query offset.
    Z = X[:, :n_informative].astype(np.float64)
    w = rng.normal(size=n_informative) / np.sqrt(np.arange(1, n_informative + 1))
    signal = np.tanh(1.5 * Z) @ w + 0.5 * (Z**2 - 1.0) @ (w[::-1] / 2)
    if n_informative > 1:
        signal += 0.5 * np.sum(Z[:, :-1] * Z[:, 1:] * w[1:], axis=1)
    del Z
    signal /= signal.std() + 1e-12
    signal += 0.5 * rng.standard_normal(sizes.size)[qid]
    score = signal + noise * rng.standard_normal(n_rows)
    cuts = np.quantile(score, np.cumsum(props)[:-1])
    y = np.searchsorted(cuts, score, side="right").astype(np.float64)

    # MSLR-like marginals (monotone per column, so the signal survives for trees).
    q = n_features // 4
    blocks = (slice(0, q), slice(q, 2 * q), slice(2 * q, 3 * q))
    X[:, blocks[0]] = np.floor(np.exp(X[:, blocks[0]]))  # counts 0, 1, 2, ...
    X[:, blocks[1]] = 1.0 / (1.0 + np.exp(-X[:, blocks[1]]))  # ratios in (0, 1)
    X[:, blocks[2]] = 10.0 * np.exp(0.8 * X[:, blocks[2]])  # heavy-tailed, BM25-like
    return RankingSplit(
        X=X,
        y=y,
        group=sizes,
        qid=qid,
        feature_names=tuple(f"f{j + 1}" for j in range(n_features)),
    )


# --------------------------------------------------------------------------------------
# Dwell time
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SyntheticDwell:
    """Synthetic dwell times; unpacks as ``X, seconds, y``.

    Attributes
    ----------
    X : ndarray of float64, shape (n_rows, n_features)
    seconds : ndarray of float64
        Observed dwell in seconds (engaged, idle or bounce).
    y : ndarray of float64
        ``log1p(seconds)``, the same target as :func:`~selrank.datasets.load_dwell`.
    engaged_log : ndarray of float64
        ``log1p`` of the median engaged dwell given the features (the noise-free part): what
        a model should predict inside the engaged band.
    idle, bounce : ndarray of bool
        Rows whose dwell is an idle gap / an accidental short click.
    feature_names : tuple of str
    """

    X: np.ndarray
    seconds: np.ndarray
    y: np.ndarray
    engaged_log: np.ndarray
    idle: np.ndarray
    bounce: np.ndarray
    feature_names: tuple[str, ...] = field(default=())

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.X, self.seconds, self.y))


def make_dwell(
    n_rows: int = 100_000,
    *,
    n_features: int = 8,
    engaged_median: float = 30.0,
    engaged_spread: float = 1.0,
    noise: float = 0.4,
    idle_fraction: float = 0.1,
    idle_range: tuple[float, float] = (600.0, 28_800.0),
    bounce_fraction: float = 0.05,
    seed: int = 0,
) -> SyntheticDwell:
    """Synthetic dwell times: an engaged band explained by the features, plus idle users.

    * **Engaged** rows: ``log(seconds) = log(engaged_median) + engaged_spread · f(X) + noise``
      with ``f`` a fixed nonlinear function of standard-normal features (unit variance), so
      most engaged dwells fall within a factor ``e^{±2·engaged_spread}`` of the median.
    * **Idle** rows (share ``idle_fraction``): the user left; the gap is the engaged dwell
      plus a log-uniform idle time in ``idle_range`` seconds, independent of the features —
      unpredictable long dwells that a capped link should not chase.
    * **Bounce** rows (share ``bounce_fraction``): accidental clicks, uniform in [0, 2) s.

    Parameters
    ----------
    n_rows, n_features : int
    engaged_median, engaged_spread, noise : float
        Median engaged dwell (seconds), feature effect and noise on the log scale.
    idle_fraction, bounce_fraction : float
        Shares of idle and bounce rows (disjoint; their sum must be below 1).
    idle_range : (float, float)
        Range of the idle time in seconds.
    seed : int

    Returns
    -------
    SyntheticDwell
        Unpacks as ``X, seconds, y`` with ``y = log1p(seconds)``.

    Examples
    --------
    >>> X, seconds, y = make_dwell(1_000, seed=3)
    >>> X.shape, bool(seconds.min() >= 0), bool(abs(y - np.log1p(seconds)).max() == 0)
    ((1000, 8), True, True)
    """
    owner = "make_dwell"
    n_rows = _positive_int(n_rows, "n_rows", owner)
    n_features = _positive_int(n_features, "n_features", owner)
    median = positive_float(engaged_median, "engaged_median", owner)
    spread = positive_float(engaged_spread, "engaged_spread", owner, allow_zero=True)
    noise = positive_float(noise, "noise", owner, allow_zero=True)
    p_idle = positive_float(idle_fraction, "idle_fraction", owner, allow_zero=True)
    p_bounce = positive_float(bounce_fraction, "bounce_fraction", owner, allow_zero=True)
    if p_idle + p_bounce >= 1:
        raise ValueError(
            f"`idle_fraction` + `bounce_fraction` of {owner} must be < 1; got {p_idle + p_bounce}"
        )
    lo, hi = (positive_float(v, "idle_range", owner) for v in idle_range)
    if not lo < hi:
        raise ValueError(
            f"`idle_range` of {owner} must be (low, high) with low < high; got {idle_range}"
        )
    rng = np.random.default_rng(seed)

    X = rng.standard_normal((n_rows, n_features))
    w = rng.normal(size=n_features) / np.sqrt(np.arange(1, n_features + 1))
    f = np.tanh(X) @ w + 0.3 * np.sin(2.0 * X[:, 0]) * (X[:, -1] > 0)
    f = (f - f.mean()) / (f.std() + 1e-12)
    log_engaged = np.log(median) + spread * f
    seconds = np.exp(log_engaged + noise * rng.standard_normal(n_rows))
    kind = rng.uniform(size=n_rows)
    idle = kind < p_idle
    bounce = (kind >= p_idle) & (kind < p_idle + p_bounce)
    seconds[idle] += np.exp(rng.uniform(np.log(lo), np.log(hi), size=int(idle.sum())))
    seconds[bounce] = rng.uniform(0.0, 2.0, size=int(bounce.sum()))
    return SyntheticDwell(
        X=X,
        seconds=seconds,
        y=np.log1p(seconds),
        engaged_log=np.log1p(np.exp(log_engaged)),
        idle=idle,
        bounce=bounce,
        feature_names=tuple(f"x{j}" for j in range(n_features)),
    )


# --------------------------------------------------------------------------------------
# Underspecification (docs/math.md section 5; paper Theorem 1, Appendix F, Appendix I)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BustData:
    """Theorem 1 data; unpacks as ``X, y`` (``X = w[:, None]``, ``y = z``).

    Attributes
    ----------
    X : ndarray, shape (n, 1)
        The only feature the model sees, ``w``.
    y : ndarray, shape (n,)
        Observed score ``z``: ``w``, or ``w + d`` inside the biased interval.
    w : ndarray, shape (n,)
    in_interval : ndarray of bool
        Rows with ``|w − w_u| ≤ τ/2``.
    s_min, s_max, w_u, tau, d : float
        The parameters of the construction.
    """

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray
    in_interval: np.ndarray
    s_min: float
    s_max: float
    w_u: float
    tau: float
    d: float

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.X, self.y))


def make_bust_data(
    n: int = 10_000,
    *,
    s_min: float = 0.0,
    s_max: float = 1.0,
    w_u: float = 0.5,
    tau: float = 0.05,
    d: float = 0.5,
    grid: bool = False,
    seed: int = 0,
) -> BustData:
    """Bias-underspecification data of Theorem 1 (BUST / BLUST; docs/math.md section 5).

    ``w ~ U[s_min, s_max]``; the observed score is ``z = w`` except on the small interval
    ``[w_u − τ/2, w_u + τ/2]``, where ``z = w + d``. The model sees only ``w``, so it cannot
    tell the interval apart: its optimal prediction ``ŵ + δ̂`` moves by
    ``δ̂ ≈ τ · [h(w_u + d) − h(w_u)] / [h(s_max) − h(s_min)]`` under a matching loss with
    link ``h``.

    Parameters
    ----------
    n : int
        Number of examples.
    s_min, s_max : float
        Score range, ``s_min < s_max``.
    w_u, tau : float
        Centre and width of the biased interval, which must lie inside the range.
    d : float
        Bias added inside the interval.
    grid : bool
        Place ``w`` at the midpoints of ``n`` equal cells instead of sampling it: a
        deterministic quadrature of the uniform distribution, for exact numerical checks.
    seed : int

    Examples
    --------
    >>> data = make_bust_data(1_000, tau=0.1, d=2.0, grid=True)
    >>> X, y = data
    >>> X.shape, int(data.in_interval.sum())
    ((1000, 1), 100)
    >>> float(np.max(np.abs((y - X[:, 0])[data.in_interval] - 2.0)))
    0.0
    """
    owner = "make_bust_data"
    n = _positive_int(n, "n", owner)
    lo = finite_float(s_min, "s_min", owner)
    hi = finite_float(s_max, "s_max", owner)
    if not lo < hi:
        raise ValueError(f"{owner} needs s_min < s_max; got s_min={lo}, s_max={hi}")
    wu = finite_float(w_u, "w_u", owner)
    tau = positive_float(tau, "tau", owner)
    d = finite_float(d, "d", owner)
    if wu - tau / 2 < lo or wu + tau / 2 > hi:
        raise ValueError(
            f"the biased interval [w_u - tau/2, w_u + tau/2] = [{wu - tau / 2}, {wu + tau / 2}] "
            f"of {owner} must lie inside [s_min, s_max] = [{lo}, {hi}]"
        )
    if grid:
        w = lo + (hi - lo) * (np.arange(n) + 0.5) / n
    else:
        w = np.random.default_rng(seed).uniform(lo, hi, size=n)
    inside = np.abs(w - wu) <= tau / 2
    z = np.where(inside, w + d, w)
    return BustData(
        X=w[:, None], y=z, w=w, in_interval=inside, s_min=lo, s_max=hi, w_u=wu, tau=tau, d=d
    )


def _labels(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"`{name}` of make_two_feature_data must be numeric; got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"`{name}` of make_two_feature_data must be a non-empty 1-D sequence; got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` of make_two_feature_data must be finite; got {arr.tolist()}")
    return arr.astype(np.float64)


def make_two_feature_data(
    *,
    low_labels: Sequence[float] = tuple(range(-10, 0)),
    high_labels: Sequence[float] = tuple(range(6, 11)),
    repeat_values: Sequence[float] = (1.0, 3.0),
) -> tuple[np.ndarray, np.ndarray]:
    """The two-feature underspecification example of the paper's Appendix F (Figure F.1).

    Each low label ``s`` (default −10, …, −1) is matched by feature ``x₂ = s`` and occurs once
    for every ``x₁`` in ``repeat_values`` (default {1, 3}); each high label ``s`` (default
    6, …, 10) is matched by ``x₁ = s`` and occurs once for every ``x₂`` in ``repeat_values``.
    So ``x₁`` governs the high labels and ``x₂`` the low ones, and in each region the other
    feature has no influence on the label. A linear model ``ŝ = w·x`` cannot fit both: a
    high-score-sensitive link puts the high labels on the identity line and lets the low ones
    deviate (in pairs, split by ``x₁``); a low-score link does the reverse. With the defaults
    there are 20 low and 10 high examples (the paper's third row, where low labels dominate);
    pass other label lists for its last row, which has more high examples.

    Returns
    -------
    X : ndarray of float64, shape (n, 2)
        Columns ``x₁, x₂``; low-label rows first, the repeats of a label adjacent.
    y : ndarray of float64, shape (n,)

    Examples
    --------
    >>> X, y = make_two_feature_data(low_labels=[-2, -1], high_labels=[6])
    >>> np.column_stack([X, y]).tolist()
    [[1.0, -2.0, -2.0], [3.0, -2.0, -2.0], [1.0, -1.0, -1.0], [3.0, -1.0, -1.0], [6.0, 1.0, 6.0], [6.0, 3.0, 6.0]]
    """
    low = _labels(low_labels, "low_labels")
    high = _labels(high_labels, "high_labels")
    rep = _labels(repeat_values, "repeat_values")
    r = rep.size
    x_low = np.column_stack([np.tile(rep, low.size), np.repeat(low, r)])
    x_high = np.column_stack([np.repeat(high, r), np.tile(rep, high.size)])
    X = np.concatenate([x_low, x_high])
    y = np.concatenate([np.repeat(low, r), np.repeat(high, r)])
    return X, y


@dataclass(frozen=True, eq=False)
class StochasticScores:
    """Groups of observed scores for one example each; unpacks as ``y, group``.

    The best constant prediction for group ``g`` under a matching loss with link ``h`` is
    ``h⁻¹(mean h(y_g))`` (Proposition 1); every group has the same arithmetic ``mean``.

    Attributes
    ----------
    y : ndarray of float64
        The scores, group after group.
    group : ndarray of int64
        Group sizes.
    x : ndarray of float64
        The x-axis value of each group in Figure I.1 (the large score, or the deviation).
    mean : ndarray of float64
        Arithmetic mean of each group's scores.
    """

    y: np.ndarray
    group: np.ndarray
    x: np.ndarray
    mean: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.y, self.group))


def make_one_large_score_data(
    *, mean: float = 0.1, small: float = 0.05, k_max: int = 18
) -> StochasticScores:
    """Appendix I, Figure I.1 (left): one large score among ``k`` small ones, fixed mean.

    Group ``k = 1, …, k_max`` holds one large score ``mean + k·(mean − small)`` and ``k``
    copies of ``small``, so every group's mean is ``mean``. With the paper's defaults
    (probabilities, small = 0.05, mean = 0.1, k up to 18) the large score grows from 0.15 to 1.
    An exponential link's optimal prediction rises with the large score although the mean is
    fixed, the more so the larger its scale α.

    Examples
    --------
    >>> d = make_one_large_score_data(k_max=2)
    >>> d.y.tolist(), d.group.tolist(), d.x.tolist()
    ([0.15, 0.05, 0.2, 0.05, 0.05], [2, 3], [0.15, 0.2])
    """
    owner = "make_one_large_score_data"
    mean = finite_float(mean, "mean", owner)
    small = finite_float(small, "small", owner)
    if not small < mean:
        raise ValueError(f"{owner} needs small < mean; got small={small}, mean={mean}")
    k_max = _positive_int(k_max, "k_max", owner)
    k = np.arange(1, k_max + 1)
    large = mean + k * (mean - small)
    sizes = (k + 1).astype(np.int64)
    y = np.full(int(sizes.sum()), small)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    y[starts] = large
    return StochasticScores(y=y, group=sizes, x=large, mean=np.full(k_max, mean))


def make_symmetric_score_data(
    *,
    means: Sequence[float] = (0.0, 1.0),
    deviations: Sequence[float] | np.ndarray = _DEVIATIONS,
) -> StochasticScores:
    """Appendix I, Figure I.1 (right): two scores ``mean ± Δ`` with growing deviation ``Δ``.

    One group per (mean, Δ) pair, means outermost. A high-score link's optimal prediction is
    pulled toward ``mean + Δ``, more so for larger Δ and larger link scale, by the same amount
    for every mean under an exponential link. (The paper does not list its means and
    deviations; the defaults here are our choice.)

    Examples
    --------
    >>> d = make_symmetric_score_data(means=[0.0], deviations=[0.0, 0.5])
    >>> d.y.tolist(), d.group.tolist(), d.x.tolist()
    ([0.0, 0.0, 0.5, -0.5], [2, 2], [0.0, 0.5])
    """
    owner = "make_symmetric_score_data"
    m = np.asarray(means, dtype=np.float64)
    dev = np.asarray(deviations, dtype=np.float64)
    for name, arr in (("means", m), ("deviations", dev)):
        if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
            raise ValueError(
                f"`{name}` of {owner} must be a non-empty 1-D finite sequence; got {arr!r}"
            )
    if np.any(dev < 0):
        raise ValueError(f"`deviations` of {owner} must be >= 0; got {dev.tolist()}")
    mm = np.repeat(m, dev.size)
    dd = np.tile(dev, m.size)
    y = np.column_stack([mm + dd, mm - dd]).reshape(-1)
    return StochasticScores(y=y, group=np.full(mm.size, 2, dtype=np.int64), x=dd, mean=mm)
