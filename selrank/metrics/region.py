r"""Region and selectivity metrics: errors and ranking quality inside score or label regions.

A selective matching loss (docs/math.md §1) trades accuracy in low-sensitivity regions for
accuracy in high-sensitivity ones. Whole-sample metrics hide that trade; the functions here
measure it where it happens:

* :func:`region_error` — MAE / RMSE / MSE / bias / mean matching loss of the rows whose label
  (``on="label"``) or prediction (``on="score"``) lies in a region, e.g. the top relevance
  grade or the engaged dwell band;
* :func:`region_report` — the same for several regions at once (one row per region);
* :func:`region_pairwise_accuracy` — the fraction of correctly ordered document pairs of a
  query whose labels both lie in a region (distinction *inside* a region, e.g. among
  top-grade documents), or one in each of two regions (distinction *between* regions);
* :func:`region_ranking` — any ranking metric of :mod:`selrank.metrics.ranking` (NDCG,
  MAP, ...) computed on the rows of each query whose labels lie in a region;
* :func:`properness_check` — compares predictions with the proper optimum
  :math:`h^{-1}(\overline{h(y)})` of each feature cell (Proposition 1): a model trained with
  the matching loss of link ``h`` that can tell cells apart but nothing inside a cell
  should predict exactly that.

A region is a pair ``(lo, hi)``; ``None`` (or an infinity) leaves a side open. Both ends are
included unless ``closed`` says otherwise, so ``(4, 4)`` selects grade 4 exactly.

Examples
--------
>>> import numpy as np
>>> y = np.array([0.0, 1.0, 2.0, 4.0, 4.0])
>>> p = np.array([0.5, 1.0, 2.5, 3.0, 4.5])
>>> region_error(y, p, region=(4, None))            # MAE on the top grade
0.75
>>> region_error(y, p, region=(4, None), metric="bias")
-0.25
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import Array, is_numpy, to_numpy
from .._groups import as_groups
from .._validation import as_vector, as_weight, check_choice
from ..links import Link, get_link

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "in_region",
    "region_error",
    "region_report",
    "region_pairwise_accuracy",
    "region_ranking",
    "properness_check",
    "PropernessReport",
    "REGION_ERRORS",
]

_CLOSED = ("both", "left", "right", "neither")
_ON = ("label", "score")


# --------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------


def _vector(x: Any, name: str) -> np.ndarray:
    """A 1-D float64 NumPy array (a single row or column is flattened)."""
    return as_vector(x, name, column_ok=True).astype(np.float64, copy=False)


def _pair(y_true, y_pred, names=("y_true", "y_pred")) -> tuple[np.ndarray, np.ndarray]:
    y = _vector(y_true, names[0])
    p = _vector(y_pred, names[1])
    if y.shape != p.shape:
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must have the same shape; got {y.shape} and {p.shape}"
        )
    if y.size == 0:
        raise ValueError(f"`{names[0]}` and `{names[1]}` are empty: expected at least one row")
    for arr, nm in ((y, names[0]), (p, names[1])):
        if not np.all(np.isfinite(arr)):
            bad = np.flatnonzero(~np.isfinite(arr))
            raise ValueError(
                f"`{nm}` must be finite; found {bad.size} NaN/inf value(s), first at row {bad[0]}"
            )
    return y, p


def _check_region(region: Any, name: str = "region") -> tuple[float, float]:
    if not isinstance(region, Sequence) or isinstance(region, str) or len(region) != 2:
        raise TypeError(
            f"`{name}` must be a pair (lo, hi) with None for an open side; got {region!r}"
        )
    lo = -math.inf if region[0] is None else float(region[0])
    hi = math.inf if region[1] is None else float(region[1])
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ValueError(f"`{name}` must satisfy lo <= hi; got {region!r}")
    return lo, hi


def in_region(values: Array, region: Sequence[float | None], *, closed: str = "both") -> np.ndarray:
    """Boolean mask of the ``values`` that lie in ``region``.

    Parameters
    ----------
    values : array-like
    region : (lo, hi)
        Bounds; ``None`` (or ``±inf``) for an open side.
    closed : {"both", "left", "right", "neither"}
        Which finite ends belong to the region.

    Examples
    --------
    >>> in_region([1.0, 2.0, 3.0], (2, None)).tolist()
    [False, True, True]
    >>> in_region([1.0, 2.0, 3.0], (1, 3), closed="left").tolist()
    [True, True, False]
    """
    lo, hi = _check_region(region)
    check_choice(closed, "closed", _CLOSED)
    v = _vector(values, "values")
    left = v >= lo if closed in ("both", "left") else v > lo
    right = v <= hi if closed in ("both", "right") else v < hi
    return left & right


def _selector(y: np.ndarray, p: np.ndarray, on: str) -> np.ndarray:
    return y if check_choice(on, "on", _ON) == "label" else p


# --------------------------------------------------------------------------------------
# Errors inside a region
# --------------------------------------------------------------------------------------


def _mean(v: np.ndarray, w: np.ndarray | None) -> float:
    return float(np.average(v, weights=w))


def _err_mae(y, p, w, link):
    return _mean(np.abs(p - y), w)


def _err_mse(y, p, w, link):
    return _mean((p - y) ** 2, w)


def _err_rmse(y, p, w, link):
    return math.sqrt(_err_mse(y, p, w, link))


def _err_bias(y, p, w, link):
    return _mean(p - y, w)


def _err_bregman(y, p, w, link):
    if link is None:
        raise ValueError("metric='bregman' needs a `link` (a Link or a registry name)")
    return _mean(np.asarray(to_numpy(link.bregman(p, y)), dtype=np.float64), w)


#: Error metrics of :func:`region_error`: name -> ``f(y_true, y_pred, weights, link)``.
REGION_ERRORS: dict[str, Callable[..., float]] = {
    "mae": _err_mae,
    "mse": _err_mse,
    "rmse": _err_rmse,
    "bias": _err_bias,
    "bregman": _err_bregman,
}


def region_error(
    y_true: Array,
    y_pred: Array,
    *,
    region: Sequence[float | None],
    on: str = "label",
    metric: str = "mae",
    closed: str = "both",
    link: Link | str | None = None,
    sample_weight: Array | None = None,
) -> float:
    r"""An error metric restricted to the rows whose label or prediction lies in ``region``.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
        Observed scores (labels) and predictions, in score space.
    region : (lo, hi)
        Bounds, ``None`` for an open side (see :func:`in_region`).
    on : {"label", "score"}
        Select rows by ``y_true`` (how well are the top grades predicted?) or by
        ``y_pred`` (how good are the rows the model puts on top?).
    metric : {"mae", "mse", "rmse", "bias", "bregman"}
        ``bias`` is the mean signed error :math:`\overline{\hat y - y}`; ``bregman`` the
        mean matching loss :math:`L(\hat y, y)` of ``link``.
    closed : {"both", "left", "right", "neither"}
    link : Link or str, optional
        Needed for ``metric="bregman"``.
    sample_weight : array-like, shape (n,), optional

    Returns
    -------
    float

    Raises
    ------
    ValueError
        No row lies in the region (or all of its rows have weight 0).

    Examples
    --------
    >>> y = [1.0, 2.0, 8.0, 9.0]
    >>> p = [1.5, 2.0, 7.0, 9.0]
    >>> region_error(y, p, region=(5, None), metric="rmse")
    0.7071...
    >>> region_error(y, p, region=(None, 5), on="score", metric="mae")
    0.25
    >>> round(region_error(y, p, region=(5, None), metric="bregman", link="exp"), 2)  # (e^7 + 0) / 2
    548.32
    """
    y, p = _pair(y_true, y_pred)
    w = as_weight(sample_weight, y.size, positive_sum=False)
    check_choice(metric, "metric", list(REGION_ERRORS))
    link_obj = None if link is None else get_link(link)
    mask = in_region(_selector(y, p, on), region, closed=closed)
    wm = None if w is None else w[mask]
    if not mask.any() or (wm is not None and wm.sum() <= 0):
        raise ValueError(f"no rows have their {on} in region {tuple(region)!r} (closed={closed!r})")
    return REGION_ERRORS[metric](y[mask], p[mask], wm, link_obj)


def _regions_from(regions, y: np.ndarray) -> list[tuple[str, tuple[float, float], str]]:
    """``(name, (lo, hi), closed)`` for each region of :func:`region_report`."""
    if regions is None:  # one region per distinct label value (relevance grades)
        levels = np.unique(y)
        if levels.size > 64:
            raise ValueError(
                f"`regions=None` makes one region per distinct label, but there are {levels.size}; "
                "pass explicit regions or bin edges for continuous labels"
            )
        return [(f"{v:g}", (float(v), float(v)), "both") for v in levels]
    if isinstance(regions, Mapping):
        return [(str(k), _check_region(v, f"regions[{k!r}]"), "both") for k, v in regions.items()]
    arr = np.asarray(regions, dtype=object)
    if arr.ndim == 1 and all(isinstance(e, int | float | np.number) for e in arr.tolist()):
        edges = np.asarray(regions, dtype=np.float64)
        if edges.size < 2 or np.any(np.diff(edges) <= 0) or not np.all(np.isfinite(edges)):
            raise ValueError(
                f"bin edges in `regions` must be >= 2 finite, strictly increasing values; got {edges.tolist()}"
            )
        last = edges.size - 2
        return [
            (
                f"[{a:g}, {b:g}{']' if i == last else ')'}",
                (float(a), float(b)),
                "both" if i == last else "left",
            )
            for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]))
        ]
    out = []
    for r in regions:
        lo, hi = _check_region(r, "regions entry")
        out.append((f"[{lo:g}, {hi:g}]", (lo, hi), "both"))
    return out


def region_report(
    y_true: Array,
    y_pred: Array,
    *,
    regions: Any = None,
    on: str = "label",
    link: Link | str | None = None,
    sample_weight: Array | None = None,
    as_frame: bool = True,
) -> pl.DataFrame | dict[str, Any]:
    """Errors per region: one row per region with its size, MAE, RMSE, bias (and loss).

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
    regions : None, mapping, sequence of (lo, hi), or bin edges
        ``None``: one region per distinct label (relevance grades, at most 64). A mapping
        ``{"engaged": (5, 60), ...}`` names the regions. A 1-D sequence of numbers is read as
        bin edges: half-open bins ``[e_i, e_{i+1})``, the last one closed. Regions may
        overlap.
    on : {"label", "score"}
    link : Link or str, optional
        Adds the mean matching loss (``bregman``) of this link per region.
    sample_weight : array-like, optional
    as_frame : bool
        Return a polars DataFrame (needs ``polars``); otherwise a dict of NumPy arrays.

    Returns
    -------
    polars.DataFrame or dict
        Columns ``region, lo, hi, n, weight, mae, rmse, bias`` (and ``bregman``). Empty
        regions have ``n = 0`` and NaN errors.

    Examples
    --------
    >>> rep = region_report([0, 0, 1, 2, 2], [0.2, -0.2, 1.5, 1.0, 2.0], as_frame=False)
    >>> rep["region"], rep["n"].tolist(), rep["mae"].round(3).tolist()
    (['0', '1', '2'], [2, 1, 2], [0.2, 0.5, 0.5])
    """
    y, p = _pair(y_true, y_pred)
    w = as_weight(sample_weight, y.size, positive_sum=False)
    sel = _selector(y, p, on)
    link_obj = None if link is None else get_link(link)
    specs = _regions_from(regions, y)
    cols: dict[str, list] = {
        "region": [],
        "lo": [],
        "hi": [],
        "n": [],
        "weight": [],
        "mae": [],
        "rmse": [],
        "bias": [],
    }
    if link_obj is not None:
        cols["bregman"] = []
    for name, (lo, hi), closed in specs:
        mask = in_region(sel, (lo, hi), closed=closed)
        wm = None if w is None else w[mask]
        total = float(mask.sum()) if wm is None else float(wm.sum())
        cols["region"].append(name)
        cols["lo"].append(lo)
        cols["hi"].append(hi)
        cols["n"].append(int(mask.sum()))
        cols["weight"].append(total)
        empty = total <= 0
        for key in ("mae", "rmse", "bias") + (("bregman",) if link_obj is not None else ()):
            cols[key].append(
                math.nan if empty else REGION_ERRORS[key](y[mask], p[mask], wm, link_obj)
            )
    out = {k: (v if k == "region" else np.asarray(v)) for k, v in cols.items()}
    if not as_frame:
        return out
    try:
        import polars as pl
    except ImportError:
        raise ImportError(
            "region_report(as_frame=True) requires polars: pip install 'selrank[data]'"
        ) from None
    return pl.DataFrame({k: (list(v) if k == "region" else v) for k, v in out.items()})


# --------------------------------------------------------------------------------------
# Ranking quality inside a label region
# --------------------------------------------------------------------------------------


def _grouped_inputs(y_true, y_score, group, qid=None):
    y, s = _pair(y_true, y_score, ("y_true", "y_score"))
    groups = as_groups(group, y.size, qid=qid)
    return groups.to_grouped(y), groups.to_grouped(s), groups


def region_pairwise_accuracy(
    y_true: Array,
    y_score: Array,
    group: Array | None = None,
    *,
    qid: Array | None = None,
    region: Sequence[float | None],
    against: Sequence[float | None] | None = None,
    closed: str = "both",
    average: str = "pairs",
) -> float | np.ndarray:
    r"""Fraction of correctly ordered document pairs with labels in a region.

    A pair ``(i, j)`` of rows of the same query with ``y_i > y_j`` is *correct* when
    ``score_i > score_j``; a score tie counts ½. Only pairs with different labels count.

    * ``against=None``: both labels lie in ``region`` — how well the model distinguishes
      documents *inside* a region (e.g. among the top grades, where a high-score-sensitive
      loss should be sharp);
    * ``against=(lo, hi)``: one label in ``region`` and the other in ``against`` (which must
      not overlap it) — how well it separates two regions.

    Parameters
    ----------
    y_true, y_score : array-like, shape (n,)
    group : array-like or None
        Query sizes (:func:`selrank._groups.as_groups`); ``None`` (and no ``qid``) is one
        query.
    qid : array-like or None
        One query id per row instead of ``group``.
    region, against : (lo, hi)
    closed : {"both", "left", "right", "neither"}
    average : {"pairs", "queries", "none"}
        ``"pairs"``: over all eligible pairs (micro); ``"queries"``: mean of the per-query
        fractions over queries that have eligible pairs (macro); ``"none"``: the per-query
        array (NaN for queries without eligible pairs).

    Returns
    -------
    float or ndarray

    Notes
    -----
    Counting is vectorised over queries with one sorted search per distinct label value in
    the region, so it is meant for graded labels (a handful of values); continuous labels
    cost one pass per distinct value.

    Examples
    --------
    >>> y = [4, 3, 3, 0, 4, 3]
    >>> s = [0.9, 0.95, 0.1, 0.2, 0.5, 0.4]
    >>> region_pairwise_accuracy(y, s, [4, 2], region=(3, 4))   # pairs (4,3),(4,3) | (4,3)
    0.6666...
    >>> region_pairwise_accuracy(y, s, [4, 2], region=(3, 4), against=(0, 0))  # 3 pairs with label 0
    0.6666...
    """
    y, s, groups = _grouped_inputs(y_true, y_score, group, qid)
    check_choice(average, "average", ("pairs", "queries", "none"))
    in_a = in_region(y, region, closed=closed)
    if against is None:
        in_b = in_a
        passes = [(in_a, in_a)]
    else:
        (alo, ahi), (blo, bhi) = _check_region(region), _check_region(against, "against")
        if max(alo, blo) <= min(ahi, bhi):
            raise ValueError(
                f"`region` {tuple(region)!r} and `against` {tuple(against)!r} must not overlap"
            )
        in_b = in_region(y, against, closed=closed)
        # the higher-labelled row of a pair may sit in either region
        passes = [(in_a, in_b), (in_b, in_a)]
    qid = groups.row_group
    # dense ranks of the scores give integer keys that sort by (query, score)
    _, srank = np.unique(s, return_inverse=True)
    srank = srank.reshape(-1).astype(np.int64)
    span = int(srank.max()) + 2
    key = qid * span + srank
    base_key = qid * span - 1  # below every key of the query
    top_key = qid * span + span - 1  # above every key of the query
    correct = np.zeros(groups.n_groups)
    pairs = np.zeros(groups.n_groups)
    for high_rows, low_rows in passes:
        for level in np.unique(y[low_rows]):
            low = low_rows & (y == level)
            high = high_rows & (y > level)
            if not high.any():
                continue
            keys = np.sort(key[low])
            k_hi = key[high]
            start = np.searchsorted(keys, base_key[high], side="right")
            below = np.searchsorted(keys, k_hi, side="left") - start
            tied = np.searchsorted(keys, k_hi, side="right") - start - below
            total = np.searchsorted(keys, top_key[high], side="right") - start
            q = qid[high]
            correct += np.bincount(q, weights=below + 0.5 * tied, minlength=groups.n_groups)
            pairs += np.bincount(q, weights=total, minlength=groups.n_groups)
    if average == "pairs":
        if pairs.sum() == 0:
            raise ValueError("no query has a pair of rows with different labels in the region(s)")
        return float(correct.sum() / pairs.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        per_query = np.where(pairs > 0, correct / np.where(pairs > 0, pairs, 1.0), np.nan)
    if average == "none":
        return per_query
    if not np.any(pairs > 0):
        raise ValueError("no query has a pair of rows with different labels in the region(s)")
    return float(np.nanmean(per_query))


def _ranking_functions() -> dict[str, Callable]:
    from . import ranking as R

    return {
        "ndcg": R.ndcg,
        "dcg": R.dcg,
        "map": R.average_precision,
        "mrr": R.reciprocal_rank,
        "err": R.err,
        "precision": R.precision_at_k,
        "recall": R.recall_at_k,
    }


def region_ranking(
    y_true: Array,
    y_score: Array,
    group: Array | None = None,
    *,
    qid: Array | None = None,
    region: Sequence[float | None],
    metric: str = "ndcg",
    closed: str = "both",
    min_rows: int = 2,
    **options: Any,
) -> float | np.ndarray:
    """A ranking metric computed on the rows of each query whose labels lie in ``region``.

    Each query is cut down to its rows with labels in the region; queries left with fewer
    than ``min_rows`` rows are dropped (one row is always ranked perfectly). The metric then
    measures ordering *inside* the region, e.g. NDCG among the top-grade documents only.

    Parameters
    ----------
    y_true, y_score, group, qid
        As for :func:`selrank.metrics.ranking.ndcg` (``group``: query sizes, ``qid``: per-row ids).
    region : (lo, hi)
    metric : str
        ``"ndcg"``, ``"dcg"``, ``"map"``, ``"mrr"``, ``"err"``, ``"precision"``, ``"recall"``,
        optionally with a cut-off (``"ndcg@5"``).
    closed : {"both", "left", "right", "neither"}
    min_rows : int
        Smallest number of in-region rows a query needs to be kept.
    **options
        Passed to the metric (``gain``, ``ties``, ``no_relevant``, ``reduction``, ...).

    Returns
    -------
    float or ndarray
        As the metric returns (``reduction="none"``: one value per *kept* query).

    Examples
    --------
    >>> y = [4, 3, 0, 1, 3, 4, 0]
    >>> s = [0.2, 0.9, 0.5, 0.3, 0.8, 0.1, 0.0]
    >>> round(region_ranking(y, s, [4, 3], region=(3, None)), 4)   # both queries rank the 3 above the 4
    0.8479
    """
    from .ranking import parse_metric

    name, k = parse_metric(metric)
    if isinstance(min_rows, bool) or not isinstance(min_rows, int | np.integer) or min_rows < 1:
        raise ValueError(f"`min_rows` must be an int >= 1; got {min_rows!r}")
    if k is not None:
        if "k" in options:
            raise ValueError(
                f"cut-off given twice: in `metric` ({metric!r}) and as k={options['k']!r}"
            )
        options["k"] = k
    y, s, groups = _grouped_inputs(y_true, y_score, group, qid)
    mask = in_region(y, region, closed=closed)
    counts = np.bincount(groups.row_group[mask], minlength=groups.n_groups)
    keep = mask & (counts[groups.row_group] >= min_rows)
    if not keep.any():
        raise ValueError(
            f"no query has {min_rows} or more rows with labels in region {tuple(region)!r}"
        )
    return _ranking_functions()[name](y[keep], s[keep], qid=groups.row_group[keep], **options)


# --------------------------------------------------------------------------------------
# Properness per feature cell (Proposition 1)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PropernessReport:
    r"""Result of :func:`properness_check`: one entry per feature cell.

    Attributes
    ----------
    cells : ndarray, shape (n_cells, n_features)
        The distinct feature rows.
    n : ndarray of int
        Rows per cell.
    optimum : ndarray
        Proper optimum :math:`h^{-1}(\overline{h(y)})` of the cell (weighted mean).
    mean_label : ndarray
        Arithmetic mean of the labels of the cell (the square-loss optimum), for comparison.
    prediction : ndarray
        Mean prediction of the cell.
    spread : ndarray
        ``max - min`` of the predictions inside the cell (0 for a model that cannot tell the
        cell's rows apart).
    deviation : ndarray
        ``prediction - optimum``.
    link_gap : ndarray
        :math:`\overline{h(\hat y)} - \overline{h(y)}`: the mean matching-loss gradient of the
        cell, 0 at the optimum. Meaningful also where ``h`` is flat and the optimum is not
        unique.
    """

    cells: np.ndarray
    n: np.ndarray
    optimum: np.ndarray
    mean_label: np.ndarray
    prediction: np.ndarray
    spread: np.ndarray
    deviation: np.ndarray
    link_gap: np.ndarray

    @property
    def max_abs_deviation(self) -> float:
        """Largest ``|prediction - optimum|`` over cells."""
        return float(np.max(np.abs(self.deviation)))

    def passed(self, *, atol: float = 1e-6, rtol: float = 1e-6) -> bool:
        """All cells within ``atol + rtol·|optimum|`` of their optimum."""
        return bool(np.all(np.abs(self.deviation) <= atol + rtol * np.abs(self.optimum)))

    def summary(self) -> list[tuple[str, object]]:
        """``(field, value)`` pairs: cells, rows, the largest deviation and whether it passed.

        Examples
        --------
        >>> r = PropernessReport(np.zeros((1, 1)), np.array([3]), np.array([0.5]), np.array([0.5]),
        ...                      np.array([0.5]), np.array([0.0]), np.array([0.0]), np.array([0.0]))
        >>> dict(r.summary())["passed (1e-6)"]
        True
        """
        return [
            ("cells", int(self.cells.shape[0])),
            ("rows", int(np.sum(self.n))),
            ("max |prediction - optimum|", self.max_abs_deviation),
            ("max |mean gradient|", float(np.max(np.abs(self.link_gap)))),
            ("max spread in a cell", float(np.max(self.spread))),
            ("passed (1e-6)", self.passed()),
        ]

    def __repr__(self) -> str:
        return (
            f"PropernessReport(cells={self.cells.shape[0]}, rows={int(np.sum(self.n))}, "
            f"max_abs_deviation={self.max_abs_deviation:.3g}, passed={self.passed()})"
        )

    def _repr_html_(self) -> str:
        from .._repr import html_table

        return html_table(self.summary(), title="PropernessReport")

    def to_frame(self) -> pl.DataFrame:
        """The report as a polars DataFrame (columns ``x0, x1, ...`` for the cell)."""
        try:
            import polars as pl
        except ImportError:
            raise ImportError(
                "PropernessReport.to_frame requires polars: pip install 'selrank[data]'"
            ) from None
        cols = {f"x{j}": self.cells[:, j] for j in range(self.cells.shape[1])}
        cols.update(
            n=self.n,
            optimum=self.optimum,
            mean_label=self.mean_label,
            prediction=self.prediction,
            spread=self.spread,
            deviation=self.deviation,
            link_gap=self.link_gap,
        )
        return pl.DataFrame(cols)


def cell_optimum(link: Link, y: np.ndarray, inv: np.ndarray, m: int, w: np.ndarray):
    r"""Per-cell mean of :math:`h(y)` and the proper optimum :math:`h^{-1}` of it.

    ``inv`` holds the cell (``0 .. m-1``) of each row, ``w`` the row weights (every cell
    must carry positive weight). The optimum of each cell is the link's own
    :meth:`~selrank.links.Link.optimal_constant` of the cell's rows (all cells at once:
    :meth:`~selrank.links.Link.optimal_constants`), so it is exact where
    :math:`h` underflows towards a range end (an exp link at scores of -40) and finite where the
    mean lies on the boundary of a bounded range. Returns ``(mean_h, optimum)``, both of
    shape ``(m,)``.

    Examples
    --------
    >>> from selrank.links import get_link
    >>> y = np.array([-40.0, -40.0, 1.0, 3.0]); inv = np.array([0, 0, 1, 1])
    >>> mean_h, opt = cell_optimum(get_link("exp"), y, inv, 2, np.ones(4))
    >>> opt.round(4).tolist()  # log-mean-exp per cell: -40 stays -40
    [-40.0, 2.4338]
    """
    hy = np.asarray(to_numpy(link.h(y)), dtype=np.float64)
    mean_h = np.bincount(inv, weights=w * hy, minlength=m) / np.bincount(
        inv, weights=w, minlength=m
    )
    return mean_h, link.optimal_constants(y, inv, m, w)


def properness_check(
    X_cells: Array, y: Array, y_pred: Array, link: Link | str, *, sample_weight: Array | None = None
) -> PropernessReport:
    r"""Compare predictions with the proper optimum :math:`h^{-1}(\overline{h(y)})` per cell.

    Rows with equal feature values form a *cell*. A model trained with the matching loss of
    ``link`` that resolves the cells but nothing inside them minimises the expected loss at
    :math:`\hat y = h^{-1}(\mathrm{E}\,h(Y))` in each cell (Proposition 1, docs/math.md §1) —
    not at the mean label unless ``h`` is affine. This check reports, per cell, that optimum
    (with the same boundary handling as :meth:`~selrank.links.Link.optimal_constant`), the
    mean label, the mean prediction and their differences.

    Parameters
    ----------
    X_cells : array-like, shape (n,) or (n, n_features)
        Discrete features (or cell ids) identifying the cell of each row.
    y : array-like, shape (n,)
        Observed scores.
    y_pred : array-like, shape (n,)
        Predictions (score space).
    link : Link or str
    sample_weight : array-like, shape (n,), optional

    Returns
    -------
    PropernessReport

    Examples
    --------
    >>> import numpy as np
    >>> cells = np.array([0, 0, 1, 1])
    >>> y = np.array([0.0, 2.0, 1.0, 1.0])
    >>> rep = properness_check(cells, y, np.array([1.0, 1.0, 1.0, 1.0]), "exp")
    >>> rep.optimum.round(4).tolist(), rep.mean_label.tolist()   # log((1 + e^2) / 2) for cell 0
    ([1.4338, 1.0], [1.0, 1.0])
    >>> rep.deviation.round(4).tolist(), rep.passed(atol=1e-6)
    ([-0.4338, 0.0], False)
    """
    link = get_link(link)
    yv, pv = _pair(y, y_pred, ("y", "y_pred"))
    X = np.asarray(
        to_numpy(
            X_cells.to_numpy()
            if hasattr(X_cells, "to_numpy") and not is_numpy(X_cells)
            else X_cells
        )
    )
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] != yv.size:
        raise ValueError(
            f"`X_cells` must have shape ({yv.size},) or ({yv.size}, n_features); got {X.shape}"
        )
    w = as_weight(sample_weight, yv.size, positive_sum=False)
    w = np.ones_like(yv) if w is None else w
    link.check_domain(yv, "y")
    cells, inv, n = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    m = cells.shape[0]
    wsum = np.bincount(inv, weights=w, minlength=m)
    if np.any(wsum <= 0):
        bad = int(np.flatnonzero(wsum <= 0)[0])
        raise ValueError(f"cell {cells[bad].tolist()} has total weight 0")
    mean_h, optimum = cell_optimum(link, yv, inv, m, w)
    hp = np.asarray(to_numpy(link.h(pv)), dtype=np.float64)
    link_gap = np.bincount(inv, weights=w * hp, minlength=m) / wsum - mean_h
    pred = np.bincount(inv, weights=w * pv, minlength=m) / wsum
    pmax = np.full(m, -np.inf)
    pmin = np.full(m, np.inf)
    np.maximum.at(pmax, inv, pv)
    np.minimum.at(pmin, inv, pv)
    return PropernessReport(
        cells=cells,
        n=n.astype(np.int64),
        optimum=optimum,
        mean_label=np.bincount(inv, weights=w * yv, minlength=m) / wsum,
        prediction=pred,
        spread=pmax - pmin,
        deviation=pred - optimum,
        link_gap=link_gap,
    )
