r"""Dwell-time metrics: error in the engaged band, overall error, within-session ranking, calibration.

Dwell times are evaluated in the space a model is trained in, ``log1p(seconds)`` (the ``y``
of :func:`selrank.datasets.load_dwell`); every function here takes ``y_true`` and
``y_pred`` in that space and, with ``space="seconds"``, maps both back with ``expm1`` first.
Predictions of a model trained on raw seconds (Poisson, Gamma, Tweedie, squared error on
seconds) enter as ``log1p(max(prediction, 0))``.

* :func:`band_error` — MAE / RMSE / bias of the rows whose observed dwell lies in the engaged
  band ``(lo, hi)`` (log1p seconds, both ends included); built on
  :func:`selrank.metrics.region.region_error`.
* :func:`overall_error` — the same over all rows.
* :func:`session_ranking` — how well the predicted dwell orders the clicks *within* each
  session: NDCG (:func:`selrank.metrics.ndcg` with ``qid=session``) or Kendall's
  :math:`\tau_b`, one value per session, averaged over the informative sessions.
* :func:`calibration_table`, :func:`expected_calibration_error` — binned mean prediction
  against mean observation.
* :func:`dwell_report` — all of the above for one or several models, as a polars DataFrame.

A band is any pair ``(lo, hi)`` of finite numbers with ``lo < hi`` — a tuple or a
:class:`selrank.dwell.DwellBand`.

Examples
--------
>>> import numpy as np
>>> y = np.log1p([2.0, 30.0, 60.0, 3000.0])
>>> p = np.log1p([20.0, 20.0, 60.0, 200.0])
>>> band = (np.log1p(5.0), np.log1p(600.0))           # 5 s to 10 min
>>> round(band_error(y, p, band), 4)                  # the 30 s and 60 s clicks only
0.1947
>>> round(band_error(y, p, band, space="seconds"), 1)  # |20 - 30| and |60 - 60|, in seconds
5.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import Array
from .._groups import Groups, as_groups
from .._validation import as_weight, check_choice
from .region import _pair, _vector, region_error

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "SPACES",
    "SESSION_METRICS",
    "band_error",
    "overall_error",
    "session_ranking",
    "calibration_table",
    "expected_calibration_error",
    "dwell_report",
]

#: Spaces errors can be measured in: ``"log"`` (log1p seconds, as given) or ``"seconds"``.
SPACES = ("log", "seconds")
#: Within-session ranking metrics of :func:`session_ranking`.
SESSION_METRICS = ("ndcg", "kendall")
_ERRORS = ("mae", "rmse", "mse", "bias")
_STRATEGIES = ("quantile", "uniform")


# --------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------


def _check_band(band: Any) -> tuple[float, float]:
    """``(lo, hi)`` from a pair or a :class:`~selrank.dwell.DwellBand`: finite, ``lo < hi``."""
    if isinstance(band, str) or not isinstance(band, Sequence) or len(band) != 2:
        raise TypeError(f"`band` must be a pair (lo, hi) of log1p-seconds bounds; got {band!r}")
    try:
        lo, hi = float(band[0]), float(band[1])
    except (TypeError, ValueError):
        raise TypeError(f"`band` must hold two numbers (lo, hi); got {band!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"`band` must have finite ends; got ({lo!r}, {hi!r})")
    if not lo < hi:
        raise ValueError(f"`band` must satisfy lo < hi; got lo={lo!r}, hi={hi!r}")
    return lo, hi


def _to_space(values: np.ndarray, space: str) -> np.ndarray:
    return values if space == "log" else np.expm1(values)


def _errors(y: np.ndarray, p: np.ndarray, region, metric: str, space: str, on: str, w) -> float:
    check_choice(metric, "metric", _ERRORS)
    check_choice(space, "space", SPACES)
    lo, hi = region
    if space == "seconds":
        # expm1 is increasing, so the rows selected in seconds are those selected in log1p space
        lo, hi = math.expm1(lo), math.expm1(hi)
    return region_error(
        _to_space(y, space),
        _to_space(p, space),
        region=(lo, hi),
        on=on,
        metric=metric,
        sample_weight=w,
    )


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def band_error(
    y_true: Array,
    y_pred: Array,
    band: Sequence[float],
    *,
    metric: str = "mae",
    space: str = "log",
    on: str = "label",
    sample_weight: Array | None = None,
) -> float:
    r"""Error of the rows whose dwell lies in the engaged band.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
        Observed and predicted dwell in ``log1p(seconds)``.
    band : (lo, hi)
        Engaged band in ``log1p(seconds)``; both ends included.
    metric : {"mae", "rmse", "mse", "bias"}
        ``bias`` is the mean of ``y_pred - y_true``.
    space : {"log", "seconds"}
        Measure the error in log1p seconds, or in seconds (``expm1`` of both).
    on : {"label", "score"}
        Select rows by observed dwell (default: how accurate is the model on engaged
        clicks?) or by predicted dwell.
    sample_weight : array-like, shape (n,), optional

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Shapes differ, NaN/inf values, ``lo >= hi``, or no row lies in the band.

    Examples
    --------
    >>> y = [1.0, 3.0, 4.0, 7.0]
    >>> p = [2.0, 3.5, 3.5, 5.0]
    >>> band_error(y, p, (2.0, 5.0))                  # rows 1 and 2
    0.5
    >>> band_error(y, p, (2.0, 5.0), metric="bias")
    0.0
    >>> band_error(y, p, (5.0, 2.0))
    Traceback (most recent call last):
    ...
    ValueError: `band` must satisfy lo < hi; got lo=5.0, hi=2.0
    """
    region = _check_band(band)
    y, p = _pair(y_true, y_pred)
    return _errors(
        y, p, region, metric, space, on, as_weight(sample_weight, y.size, positive_sum=False)
    )


def overall_error(
    y_true: Array,
    y_pred: Array,
    *,
    metric: str = "mae",
    space: str = "log",
    sample_weight: Array | None = None,
) -> float:
    """Error over all rows (same conventions as :func:`band_error`).

    Examples
    --------
    >>> round(overall_error([1.0, 3.0, 4.0, 7.0], [2.0, 3.5, 3.5, 5.0], metric="rmse"), 4)
    1.1726
    """
    y, p = _pair(y_true, y_pred)
    return _errors(
        y,
        p,
        (-math.inf, math.inf),
        metric,
        space,
        "label",
        as_weight(sample_weight, y.size, positive_sum=False),
    )


# --------------------------------------------------------------------------------------
# Within-session ranking
# --------------------------------------------------------------------------------------


def _informative(y: np.ndarray, groups: Groups, min_size: int) -> np.ndarray:
    """Per session: at least ``min_size`` rows and two distinct dwell values (grouped order)."""
    lo = np.minimum.reduceat(y, groups.offsets[:-1])
    hi = np.maximum.reduceat(y, groups.offsets[:-1])
    return (groups.sizes >= min_size) & (hi > lo)


def _kendall_tau_b(y: np.ndarray, p: np.ndarray, groups: Groups) -> np.ndarray:
    r"""Kendall's :math:`\tau_b` per group (rows in grouped order); 0 where ``p`` is constant."""
    i, j, g = groups.pairs()
    dy = np.sign(y[i] - y[j])
    dp = np.sign(p[i] - p[j])
    m = groups.n_groups
    s = np.bincount(g, weights=dy * dp, minlength=m)
    ny = np.bincount(g, weights=(dy != 0).astype(np.float64), minlength=m)
    npred = np.bincount(g, weights=(dp != 0).astype(np.float64), minlength=m)
    denom = np.sqrt(ny * npred)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, s / np.where(denom > 0, denom, 1.0), 0.0)


def session_ranking(
    y_true: Array,
    y_pred: Array,
    session: Array,
    *,
    metric: str = "ndcg",
    k: int | None = None,
    gain: str = "linear",
    min_size: int = 2,
    reduction: str = "mean",
) -> float | np.ndarray:
    r"""How well the predicted dwell orders the clicks of each session.

    Each session is a list ranked by ``y_pred``; its relevance is the observed ``y_true``
    (log1p seconds).

    * ``metric="ndcg"``: :func:`selrank.metrics.ndcg` with ``qid=session``, tied
      predictions averaged over their orderings, ``gain="linear"`` by default (gain = log1p
      seconds; ``"exponential"`` gives ``2^y − 1 ≈ seconds``, which lets the longest — often
      idle — dwell of a session dominate).
    * ``metric="kendall"``: Kendall's :math:`\tau_b` between predicted and observed dwell,
      in :math:`[-1, 1]`, 0 for a random order. A session whose predictions are all equal
      gets 0 (no ordering information; the expectation over random tie-breaking), where
      ``scipy.stats.kendalltau`` gives NaN. It enumerates every pair of rows of a session:
      memory grows with :math:`\sum_s n_s^2`.

    **Conventions.** Only *informative* sessions count: at least ``min_size`` rows (a
    session of one click is ranked perfectly by any model) and at least two distinct
    observed dwells (every order of equal dwells is perfect). The set depends on the labels
    only, so it is the same for every model. Values are averaged over sessions (macro), so a
    long session weighs as much as a short one.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
        Observed and predicted dwell (log1p seconds; any increasing transform of the
        predictions gives the same ranking).
    session : array-like
        One session id per row (rows of a session need not be adjacent).
    metric : {"ndcg", "kendall"}
    k : int, optional
        NDCG cut-off (``None``: the whole session).
    gain : {"linear", "exponential"}
        NDCG gain.
    min_size : int
        Fewest rows of an informative session (>= 2).
    reduction : {"mean", "none"}
        ``"none"``: one value per session in order of first appearance, NaN for sessions that
        are not informative (pair them across models for a paired test).

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        Shapes differ, NaN/inf, negative ``y_true`` with NDCG, or no informative session.

    Examples
    --------
    >>> y = [1.0, 2.0, 3.0, 5.0, 5.0, 4.0]
    >>> s = [7, 7, 7, 8, 8, 9]               # session 8 has equal dwells, session 9 one click
    >>> session_ranking(y, [0.1, 0.2, 0.3, 1.0, 0.0, 2.0], s, metric="kendall")
    1.0
    >>> session_ranking(y, [0.3, 0.2, 0.1, 1.0, 0.0, 2.0], s, metric="kendall")
    -1.0
    >>> round(session_ranking(y, [0.3, 0.2, 0.1, 1.0, 0.0, 2.0], s), 4)  # (1 + 2/log2(3) + 3/2) / IDCG
    0.79
    >>> session_ranking(y, [0.3, 0.2, 0.1, 1.0, 0.0, 2.0], s, metric="kendall", reduction="none")
    array([-1., nan, nan])
    """
    check_choice(metric, "metric", SESSION_METRICS)
    check_choice(reduction, "reduction", ("mean", "none"))
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer) or min_size < 2:
        raise ValueError(f"`min_size` must be an int >= 2; got {min_size!r}")
    y, p = _pair(y_true, y_pred)
    if session is None:
        raise TypeError("`session` is required: one session id per row")
    n_ids = int(np.size(session.to_numpy() if hasattr(session, "to_numpy") else session))
    if n_ids != y.size:
        raise ValueError(
            f"`session` must hold one session id per row, {y.size} values; got {n_ids}"
        )
    groups = as_groups(None, y.size, qid=session)
    yg, pg = groups.to_grouped(y), groups.to_grouped(p)
    keep = _informative(yg, groups, int(min_size))
    if not keep.any():
        raise ValueError(
            f"no informative session: every session has fewer than {min_size} rows or one distinct dwell value"
        )
    rows = keep[groups.row_group]
    sub = Groups(groups.sizes[keep])
    if metric == "ndcg":
        from .ranking import ndcg

        values = ndcg(yg[rows], pg[rows], sub, k=k, gain=gain, ties="average", reduction="none")
    else:
        if k is not None:
            raise ValueError(
                "`k` applies to metric='ndcg' only; Kendall's tau uses the whole session"
            )
        values = _kendall_tau_b(yg[rows], pg[rows], sub)
    if reduction == "mean":
        return float(np.mean(values))
    out = np.full(groups.n_groups, np.nan)
    out[keep] = values
    return out


# --------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------


def _bins(p: np.ndarray, n_bins: int, strategy: str) -> tuple[np.ndarray, np.ndarray]:
    """Bin index of each prediction and the bin edges (equal-count or equal-width)."""
    if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"`n_bins` must be a positive int; got {n_bins!r}")
    check_choice(strategy, "strategy", _STRATEGIES)
    if strategy == "quantile":
        edges = np.unique(np.quantile(p, np.linspace(0.0, 1.0, int(n_bins) + 1)))
    else:
        edges = np.unique(np.linspace(p.min(), p.max(), int(n_bins) + 1))
    if edges.size == 1:  # constant predictions: one bin
        return np.zeros(p.size, dtype=np.int64), np.array([edges[0], edges[0]])
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, edges.size - 2)
    return idx, edges


def calibration_table(
    y_true: Array,
    y_pred: Array,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    space: str = "log",
    sample_weight: Array | None = None,
    as_frame: bool = True,
) -> pl.DataFrame | dict[str, np.ndarray]:
    """Mean prediction against mean observation in bins of the prediction.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
        Observed and predicted dwell in log1p seconds.
    n_bins : int
        Number of bins (fewer when predictions repeat: equal quantiles merge).
    strategy : {"quantile", "uniform"}
        Equal-count bins (quantiles of ``y_pred``) or equal-width bins over its range.
        Bins are half-open ``[lo, hi)``, the last one closed.
    space : {"log", "seconds"}
        Bin and average in log1p seconds or in seconds. A model is calibrated in seconds when
        it predicts the conditional *mean* of the seconds (Poisson, Gamma, Tweedie), and in
        log space when it predicts the conditional mean of log1p seconds (squared error on
        the log); the two differ by Jensen's gap for the same data.
    sample_weight : array-like, optional
    as_frame : bool
        Return a polars DataFrame; otherwise a dict of NumPy arrays.

    Returns
    -------
    polars.DataFrame or dict
        One row per non-empty bin: ``bin, lo, hi, n, weight, mean_pred, mean_true, gap``
        (``gap = mean_pred - mean_true``).

    Examples
    --------
    >>> t = calibration_table([1.0, 2.0, 3.0, 5.0], [1.5, 1.5, 4.0, 4.0], n_bins=2, as_frame=False)
    >>> t["n"].tolist(), t["mean_pred"].tolist(), t["mean_true"].tolist()
    ([2, 2], [1.5, 4.0], [1.5, 4.0])
    """
    check_choice(space, "space", SPACES)
    y, p = _pair(y_true, y_pred)
    w = as_weight(sample_weight, y.size, positive_sum=False)
    w = np.ones_like(y) if w is None else w
    y, p = _to_space(y, space), _to_space(p, space)
    idx, edges = _bins(p, n_bins, strategy)
    m = edges.size - 1
    n = np.bincount(idx, minlength=m)
    wsum = np.bincount(idx, weights=w, minlength=m)
    ok = wsum > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mp = np.bincount(idx, weights=w * p, minlength=m) / wsum
        mt = np.bincount(idx, weights=w * y, minlength=m) / wsum
    out = {
        "bin": np.arange(m)[ok],
        "lo": edges[:-1][ok],
        "hi": edges[1:][ok],
        "n": n[ok],
        "weight": wsum[ok],
        "mean_pred": mp[ok],
        "mean_true": mt[ok],
        "gap": (mp - mt)[ok],
    }
    if not as_frame:
        return out
    try:
        import polars as pl
    except ImportError:
        raise ImportError(
            "calibration_table(as_frame=True) requires polars: pip install 'selrank[data]'"
        ) from None
    return pl.DataFrame(out)


def expected_calibration_error(
    y_true: Array,
    y_pred: Array,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    space: str = "log",
    sample_weight: Array | None = None,
) -> float:
    r"""Expected calibration error: :math:`\sum_b \frac{W_b}{W}\,|\bar{\hat y}_b - \bar y_b|`.

    The weighted mean absolute gap of :func:`calibration_table` (same parameters), in the
    units of ``space``. 0 for a model whose binned means match; a constant prediction at the
    mean of ``y_true`` also scores 0 (calibration says nothing about resolution — read it
    with the errors and the ranking metrics).

    Examples
    --------
    >>> expected_calibration_error([1.0, 2.0, 3.0, 5.0], [2.0, 2.0, 3.0, 3.0], n_bins=2)
    0.75
    """
    t = calibration_table(
        y_true,
        y_pred,
        n_bins=n_bins,
        strategy=strategy,
        space=space,
        sample_weight=sample_weight,
        as_frame=False,
    )
    return float(np.sum(t["weight"] * np.abs(t["gap"])) / np.sum(t["weight"]))


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def dwell_report(
    y_true: Array,
    y_pred: Array,
    *,
    band: Sequence[float],
    session: Array | None = None,
    n_bins: int = 10,
    gain: str = "linear",
    sample_weight: Array | None = None,
) -> pl.DataFrame:
    """All dwell metrics for one or several models, one row per model.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed dwell, log1p seconds.
    y_pred : array-like or mapping of name -> array-like
        Predictions in log1p seconds; a mapping compares several models on the same rows.
    band : (lo, hi)
        Engaged band in log1p seconds.
    session : array-like, optional
        Session id per row; adds the within-session ranking columns.
    n_bins : int
        Calibration bins (equal-count).
    gain : {"linear", "exponential"}
        NDCG gain (see :func:`session_ranking`).
    sample_weight : array-like, optional
        Row weights for the errors and calibration (not for the ranking metrics).

    Returns
    -------
    polars.DataFrame
        Columns ``model``, ``n``, ``band_n``; in log1p seconds ``band_mae``, ``band_rmse``,
        ``band_bias``, ``mae``, ``rmse``, ``bias``, ``ece``; in seconds ``band_mae_s``,
        ``band_rmse_s``, ``mae_s``, ``rmse_s``, ``ece_s``; with ``session``: ``ndcg`` and
        ``kendall_tau`` (means over informative sessions) and ``n_sessions`` (how many).

    Examples
    --------
    >>> y = np.log1p([2.0, 30.0, 60.0, 3000.0, 45.0, 20.0])
    >>> preds = {"a": np.log1p([20.0, 20.0, 60.0, 200.0, 40.0, 30.0]), "b": np.full(6, 3.5)}
    >>> rep = dwell_report(y, preds, band=(1.5, 6.5), session=[1, 1, 1, 2, 2, 2])
    >>> rep["model"].to_list(), rep["band_n"].to_list()
    (['a', 'b'], [4, 4])
    >>> rep["kendall_tau"].round(3).to_list()   # b predicts a constant: tau 0
    [0.908, 0.0]
    """
    try:
        import polars as pl
    except ImportError:
        raise ImportError("dwell_report requires polars: pip install 'selrank[data]'") from None
    region = _check_band(band)
    y = _vector(y_true, "y_true")
    models = dict(y_pred) if isinstance(y_pred, Mapping) else {"model": y_pred}
    if not models:
        raise ValueError("`y_pred` is an empty mapping: expected at least one model's predictions")
    rows = []
    for name, pred in models.items():
        yy, p = _pair(y, pred, ("y_true", f"y_pred[{name!r}]"))
        w = as_weight(sample_weight, yy.size, positive_sum=False)
        row: dict[str, Any] = {
            "model": str(name),
            "n": int(yy.size),
            "band_n": int(np.count_nonzero((yy >= region[0]) & (yy <= region[1]))),
        }
        for space, suffix in (("log", ""), ("seconds", "_s")):
            for metric in ("mae", "rmse") + (("bias",) if space == "log" else ()):
                row[f"band_{metric}{suffix}"] = _errors(yy, p, region, metric, space, "label", w)
            for metric in ("mae", "rmse") + (("bias",) if space == "log" else ()):
                row[f"{metric}{suffix}"] = _errors(
                    yy, p, (-math.inf, math.inf), metric, space, "label", w
                )
            row[f"ece{suffix}"] = expected_calibration_error(
                yy, p, n_bins=n_bins, space=space, sample_weight=w
            )
        if session is not None:
            nd = session_ranking(yy, p, session, metric="ndcg", gain=gain, reduction="none")
            row["ndcg"] = float(np.nanmean(nd))
            row["kendall_tau"] = session_ranking(yy, p, session, metric="kendall")
            row["n_sessions"] = int(np.count_nonzero(~np.isnan(nd)))
        rows.append(row)
    return pl.DataFrame(rows)
