"""Ranking metrics: NDCG, DCG, MAP, MRR, ERR, precision@k and recall@k.

Every metric takes flat ``y_true`` (labels), ``y_score`` (model scores) and ``group`` (query
sizes) or ``qid`` (one query id per row), see :func:`selrank._groups.as_groups`, as NumPy arrays,
torch tensors, polars/pandas Series, or column names of a ``data`` frame. Conventions that
libraries disagree on are parameters (see ``docs/metrics.md``):

``gain``
    ``"exponential"`` (``2^rel - 1``, LightGBM and XGBoost) or ``"linear"`` (``rel``,
    trec_eval, ranx's ``ndcg``, scikit-learn).
``ties``
    ``"average"`` (the expectation over all orderings of tied scores, as scikit-learn's
    ``ndcg_score``), ``"pessimistic"`` (tied rows ranked worst label first),
    ``"optimistic"`` (best label first) or ``"stable"`` (input order, LightGBM, XGBoost,
    ranx).
``no_relevant``
    The value of a metric that is 0/0 on a query without relevant documents (NDCG, AP,
    RR, recall): ``"one"`` (LightGBM, XGBoost), ``"zero"`` (trec_eval, ranx, scikit-learn)
    or ``"exclude"`` (NaN per query, left out of the mean). DCG, ERR and precision are 0 on
    such queries by definition and accept ``"zero"`` or ``"exclude"``.

Queries are never looped over in Python: rows are ranked with two stable sorts and every
metric is a segment sum (:mod:`selrank.metrics._kernels`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._array import Array
from .._groups import Groups, as_groups
from .._validation import REDUCTIONS, as_numeric_array
from .._validation import as_vector as _as_vector
from .._validation import check_choice as _check_choice
from . import _engine
from ._kernels import TIES
from ._kernels import Judgments as Judgments
from ._kernels import _check_nonnegative as _check_nonnegative
from ._kernels import _ideal_dcg as _ideal_dcg
from ._kernels import _require_polars as _require_polars
from ._kernels import _tied_err as _tied_err
from ._kernels import _tied_err_by_level as _tied_err_by_level
from .measures import MEASURES
from .names import MetricSpec, parse_metric_name

__all__ = [
    "ndcg",
    "dcg",
    "average_precision",
    "reciprocal_rank",
    "err",
    "precision_at_k",
    "recall_at_k",
    "r_precision",
    "bpref",
    "success_at_k",
    "parse_metric",
    "CONVENTIONS",
]

GAINS = ("exponential", "linear")
NO_RELEVANT = ("one", "zero", "exclude")

# Defaults of other libraries, for `evaluate(..., conventions=name)`. See docs/metrics.md for
# how each was verified; trec_eval breaks ties by document id, which "stable" matches only
# when rows come in that order.
CONVENTIONS: dict[str, dict[str, Any]] = {
    "lightgbm": {"gain": "exponential", "ties": "stable", "no_relevant": "one", "capped": True},
    "xgboost": {"gain": "exponential", "ties": "stable", "no_relevant": "one", "capped": True},
    "trec_eval": {"gain": "linear", "ties": "stable", "no_relevant": "zero", "capped": False},
    "ranx": {"gain": "linear", "ties": "stable", "no_relevant": "zero", "capped": False},
    "sklearn": {"gain": "linear", "ties": "average", "no_relevant": "zero", "capped": False},
}
_DEFAULTS = {"gain": "exponential", "ties": "average", "no_relevant": "one", "capped": False}


# --------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------


def _check_k(k: Any) -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"`k` must be a positive int or None; got {k!r}")
    if k <= 0:
        raise ValueError(f"`k` must be a positive int or None; got {k!r}")
    return int(k)


def _column(x: Any, data: Any, name: str) -> Any:
    """Resolve a column name against ``data``; pass arrays through."""
    if isinstance(x, str):
        if data is None:
            raise TypeError(f"`{name}` is a column name ({x!r}) but no `data` frame was given")
        columns = list(getattr(data, "columns", []))
        if x not in columns:
            raise ValueError(f"`{name}` column {x!r} is not in `data`; its columns are {columns}")
        return data[x]
    return x


def _rows_as_queries(y_true, y_score, group, qid):
    """scikit-learn's ``ndcg_score`` convention: 2-D ``(n_queries, n_docs)`` arrays, one query
    per row, become flat rows with ``group = [n_docs] * n_queries``."""
    if isinstance(y_true, str) or isinstance(y_score, str):
        return y_true, y_score, group
    yt, ys = (
        np.asarray(as_numeric_array(y_true, "y_true")),
        np.asarray(as_numeric_array(y_score, "y_score")),
    )
    if ys.shape != yt.shape:
        raise ValueError(
            f"2-D `y_true` and `y_score` (one query per row, scikit-learn's convention) must have the "
            f"same shape; got {yt.shape} and {ys.shape}"
        )
    if group is not None or qid is not None:
        raise ValueError(
            f"`y_true` of shape {yt.shape} is one query per row (scikit-learn's convention) and "
            "`group` / `qid` describe flat rows: give 1-D arrays with `group` / `qid`, or 2-D arrays alone"
        )
    return yt.reshape(-1), ys.reshape(-1), np.full(yt.shape[0], yt.shape[1])


def _prepare(y_true, y_score, group, data, qid=None) -> tuple[np.ndarray, np.ndarray, Groups]:
    """Labels, scores and groups (``group``: query sizes, ``qid``: per-row query ids, or column names)."""
    y_true, y_score = _column(y_true, data, "y_true"), _column(y_score, data, "y_score")
    if np.ndim(y_true) == 2:
        y_true, y_score, group = _rows_as_queries(y_true, y_score, group, qid)
    label = _as_vector(y_true, "y_true").astype(np.float64)
    score = _as_vector(y_score, "y_score")
    if score.dtype.kind != "f":
        score = score.astype(np.float64)
    if label.shape != score.shape:
        raise ValueError(
            f"`y_true` and `y_score` must have the same shape; got {label.shape} and {score.shape}"
        )
    if label.size == 0:
        raise ValueError("`y_true` and `y_score` are empty: expected at least one row")
    if not np.all(np.isfinite(label)):
        bad = np.flatnonzero(~np.isfinite(label))
        raise ValueError(
            f"`y_true` must be finite; found {bad.size} NaN/inf label(s), first at row {bad[0]}"
        )
    nan = np.isnan(score)
    if nan.any():
        bad = np.flatnonzero(nan)
        raise ValueError(f"`y_score` has {bad.size} NaN value(s), first at row {bad[0]}")
    q = None if qid is None else _column(qid, data, "qid")
    groups = as_groups(_column(group, data, "group"), label.size, qid=q)
    return label, score, groups


# --------------------------------------------------------------------------------------
# The public functions: one measure each, through the engine
# --------------------------------------------------------------------------------------


def parse_metric(name: str) -> tuple[str, int | None]:
    """Split a metric name such as ``"ndcg@10"`` into ``("ndcg", 10)``.

    The grammar is :func:`selrank.metrics.names.parse_metric_name`'s: selrank/ranx,
    trec_eval and ir_measures spellings (``"ndcg_cut_10"``, ``"P@5"``, ``"AP"``) all work.

    Examples
    --------
    >>> parse_metric("ndcg@10")
    ('ndcg', 10)
    >>> parse_metric("MAP")
    ('map', None)
    >>> parse_metric("P_5")
    ('precision', 5)
    """
    spec = parse_metric_name(name)
    return spec.measure, spec.k


def _resolve_policy(no_relevant: str, normalised: bool, name: str) -> str:
    _check_choice(no_relevant, "no_relevant", NO_RELEVANT)
    if no_relevant == "one" and not normalised:
        raise ValueError(
            f"{name} is 0 on a query without relevant documents, not 0/0, so "
            f"`no_relevant` must be 'zero' or 'exclude'; got 'one'"
        )
    return no_relevant


def _apply_policy(values: np.ndarray, no_rel: np.ndarray, policy: str) -> np.ndarray:
    out = values.astype(np.float64, copy=True)
    if policy == "one":
        out[no_rel] = 1.0
    elif policy == "zero":
        out[no_rel] = 0.0
    else:
        out[no_rel] = np.nan
    return out


def _reduce(values: np.ndarray, reduction: str):
    if reduction == "none":
        return values
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        warnings.warn(
            "every query was excluded (no relevant documents); the metric is NaN",
            UserWarning,
            stacklevel=3,
        )
        return float("nan")
    return float(kept.mean() if reduction == "mean" else kept.sum())


def _metric_call(
    name, y_true, y_score, group, *, k, ties, no_relevant, reduction, data, options, qid=None
):
    measure = MEASURES[name]
    k = _check_k(k)
    _check_choice(ties, "ties", TIES)
    _check_choice(reduction, "reduction", REDUCTIONS)
    policy = _resolve_policy(no_relevant, measure.normalised, name)
    if "gain" in options:
        _check_choice(options["gain"], "gain", GAINS)
    label, score, groups = _prepare(y_true, y_score, group, data, qid=qid)
    spec = MetricSpec(name, name, k)
    _engine.validate_labels(label, [spec], options)
    values, _ = _engine.evaluate_arrays(label, score, groups, [spec], ties, policy, options)
    return _reduce(values[spec.name], reduction)


# --------------------------------------------------------------------------------------
# Public metric functions
# --------------------------------------------------------------------------------------

_COMMON_DOC = """
    y_true : array-like, shape (n_rows,)
        Relevance labels (NumPy array, torch tensor, polars/pandas Series, or a column name
        of ``data``).
    y_score : array-like, shape (n_rows,)
        Scores; higher ranks first. NaN is refused; float32 scores tie as float32 values.
    group : array-like or None
        Query sizes (LightGBM's ``group``), adding up to ``n_rows``; ``[1] * n`` is ``n``
        one-row queries. ``None`` (and no ``qid``) makes all rows one query.
    qid : array-like or None
        One query id per row instead (XGBoost's ``qid``; rows of a query need not be
        adjacent). Give ``group`` or ``qid``, not both. 2-D ``y_true`` / ``y_score`` of shape
        ``(n_queries, n_docs)`` without either are one query per row (scikit-learn's
        ``ndcg_score`` convention).
    k : int or None
        Cut-off; ``None`` uses the whole list."""


def ndcg(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    gain: str = "exponential",
    ties: str = "average",
    no_relevant: str = "one",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    r"""Normalised discounted cumulative gain.

    .. math:: \mathrm{NDCG@k} = \frac{\mathrm{DCG@k}}{\mathrm{IDCG@k}}, \quad
              \mathrm{DCG@k} = \sum_{i=1}^{\min(k, n)} \frac{G(\mathrm{rel}_i)}{\log_2(i+1)},

    with ``G(r) = 2^r - 1`` (``gain="exponential"``) or ``G(r) = r`` (``"linear"``) and
    IDCG the DCG of the rows sorted by label. Labels must be >= 0.

    Parameters
    ----------%s
    gain : {"exponential", "linear"}
    ties : {"average", "pessimistic", "optimistic", "stable"}
        ``"average"`` is the expectation over all orderings of tied scores (scikit-learn's
        ``ndcg_score``); ``"stable"`` keeps input order (LightGBM, XGBoost).
    no_relevant : {"one", "zero", "exclude"}
        Value for a query whose labels are all 0 (IDCG = 0). ``"one"`` matches LightGBM and
        XGBoost, ``"zero"`` trec_eval, ranx and scikit-learn; ``"exclude"`` gives NaN and
        leaves the query out of the mean.
    reduction : {"mean", "sum", "none"}
        ``"none"`` returns the per-query array (NaN for excluded queries).
    data : polars or pandas DataFrame, optional
        Frame to look up column names in.

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> ndcg([3, 2, 0, 1], [0.9, 0.8, 0.7, 0.1])
    0.9926...
    >>> ndcg([1, 0, 0, 0, 0], [0.5, 0.5, 0.1, 0.3, 0.2], group=[2, 3], reduction="none")
    array([0.8154..., 1.        ])
    """
    return _metric_call(
        "ndcg", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"gain": gain},
    )  # fmt: skip


def dcg(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    gain: str = "exponential",
    ties: str = "average",
    no_relevant: str = "zero",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    r"""Discounted cumulative gain ``Σ_{i<=k} G(rel_i) / log2(i + 1)``.

    Parameters
    ----------%s
    gain : {"exponential", "linear"}
        Exponential gain needs labels >= 0; linear gain accepts any finite label.
    ties : {"average", "pessimistic", "optimistic", "stable"}
    no_relevant : {"zero", "exclude"}
        DCG is 0 on a query without positive labels; ``"exclude"`` leaves such queries out.
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> dcg([1, 0, 1], [3.0, 2.0, 1.0], gain="linear")
    1.5
    """
    return _metric_call(
        "dcg", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"gain": gain},
    )  # fmt: skip


def average_precision(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    relevance_threshold: float = 0.0,
    capped: bool = False,
    ties: str = "average",
    no_relevant: str = "one",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    r"""Average precision per query; its mean is MAP.

    .. math:: \mathrm{AP@k} = \frac{1}{D} \sum_{i \le k,\ \mathrm{rel}_i} \mathrm{P@}i,

    with ``D`` the number ``R`` of relevant rows of the query (trec_eval's ``map_cut``,
    ranx) or ``min(R, k)`` when ``capped=True`` (LightGBM's and XGBoost's ``map@k``).
    A row is relevant when its label is ``> relevance_threshold``.

    Parameters
    ----------%s
    relevance_threshold : float
    capped : bool
    ties : {"average", "pessimistic", "optimistic", "stable"}
        ``"average"`` is the exact expectation over tied orderings.
    no_relevant : {"one", "zero", "exclude"}
        ``"one"`` matches LightGBM and XGBoost, ``"zero"`` trec_eval and ranx.
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6])
    0.8333...
    >>> average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6], k=1, capped=True)
    1.0
    """
    return _metric_call(
        "map", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid,
        options={"relevance_threshold": relevance_threshold, "capped": bool(capped)},
    )  # fmt: skip


def reciprocal_rank(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    relevance_threshold: float = 0.0,
    ties: str = "average",
    no_relevant: str = "one",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    """Reciprocal rank of the first relevant row (0 if it is below ``k``); its mean is MRR.

    Parameters
    ----------%s
    relevance_threshold : float
        A row is relevant when its label is ``> relevance_threshold``.
    ties : {"average", "pessimistic", "optimistic", "stable"}
        ``"average"`` is the exact expectation over tied orderings.
    no_relevant : {"one", "zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> reciprocal_rank([0, 1, 0, 1], [0.9, 0.8, 0.7, 0.6], group=[2, 2], reduction="none")
    array([0.5, 0.5])
    >>> reciprocal_rank([0, 1], [0.5, 0.5])  # tie: rank 1 or 2 with equal chance
    0.75
    """
    return _metric_call(
        "mrr", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"relevance_threshold": relevance_threshold},
    )  # fmt: skip


def err(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    max_grade: float | None = None,
    ties: str = "average",
    no_relevant: str = "zero",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    r"""Expected reciprocal rank (Chapelle et al., 2009).

    .. math:: \mathrm{ERR@k} = \sum_{i \le k} \frac{1}{i} R_i \prod_{j<i} (1 - R_j),
              \quad R_i = \frac{2^{\mathrm{rel}_i} - 1}{2^{g_\max}}.

    Parameters
    ----------%s
    max_grade : float or None
        ``g_max``, the highest possible label; ``None`` takes the largest label in
        ``y_true`` (over all queries, so that every query uses the same scale).
    ties : {"average", "pessimistic", "optimistic", "stable"}
        ``"average"`` is the exact expectation over tied orderings (cost grows with the
        size of tie blocks that mix labels).
    no_relevant : {"zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> err([2, 0, 1], [0.9, 0.5, 0.1])  # 3/4 + (1/3)(1/4)(1/4)
    0.7708...
    """
    return _metric_call(
        "err", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"max_grade": max_grade},
    )  # fmt: skip


def precision_at_k(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    relevance_threshold: float = 0.0,
    capped: bool = False,
    ties: str = "average",
    no_relevant: str = "zero",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    """Fraction of relevant rows among the top ``k``.

    The denominator is ``k`` even for queries shorter than ``k`` (trec_eval, ranx), or
    ``min(k, n_rows_of_query)`` with ``capped=True`` (XGBoost's ``pre@k``); with
    ``k=None`` it is the query size.

    Parameters
    ----------%s
    relevance_threshold : float
    capped : bool
    ties : {"average", "pessimistic", "optimistic", "stable"}
    no_relevant : {"zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> precision_at_k([1, 0, 1], [0.9, 0.8, 0.7], k=2)
    0.5
    >>> precision_at_k([1, 0, 1], [0.9, 0.8, 0.7], k=5, capped=True)
    0.6666...
    """
    return _metric_call(
        "precision", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid,
        options={"relevance_threshold": relevance_threshold, "capped": bool(capped)},
    )  # fmt: skip


def recall_at_k(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    relevance_threshold: float = 0.0,
    ties: str = "average",
    no_relevant: str = "one",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    """Fraction of a query's relevant rows found in the top ``k``.

    Parameters
    ----------%s
    relevance_threshold : float
    ties : {"average", "pessimistic", "optimistic", "stable"}
    no_relevant : {"one", "zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> recall_at_k([1, 0, 1], [0.9, 0.8, 0.7], k=2)
    0.5
    """
    return _metric_call(
        "recall", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"relevance_threshold": relevance_threshold},
    )  # fmt: skip


def r_precision(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    relevance_threshold: float = 0.0,
    ties: str = "average",
    no_relevant: str = "one",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    """R-precision: the fraction of relevant rows among the top ``R``, ``R`` the relevant rows.

    trec_eval's ``Rprec`` (equal to recall at ``R``). A row is relevant when its label is
    ``> relevance_threshold``.

    Parameters
    ----------%s
    relevance_threshold : float
    ties : {"average", "pessimistic", "optimistic", "stable"}
    no_relevant : {"one", "zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> r_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6])  # R = 2: one relevant in the top 2
    0.5
    """
    return _metric_call(
        "rprec", y_true, y_score, group, k=None, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"relevance_threshold": relevance_threshold},
    )  # fmt: skip


def bpref(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    relevance_threshold: float = 0.0,
    ties: str = "average",
    no_relevant: str = "one",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    r"""Binary preference (Buckley & Voorhees, SIGIR 2004), trec_eval's ``bpref``.

    .. math:: \mathrm{bpref} = \frac{1}{R} \sum_{\text{relevant } r}
              \Big(1 - \frac{\min(n_r, R)}{\min(N, R)}\Big),

    ``n_r`` the non-relevant rows ranked above ``r``, ``R`` and ``N`` the relevant and
    non-relevant rows of the query (every row counts as judged here; runs with unjudged
    documents go through :func:`~selrank.metrics.evaluate_run`).

    Parameters
    ----------%s
    relevance_threshold : float
    ties : {"average", "pessimistic", "optimistic", "stable"}
        ``"average"`` is the exact expectation over tied orderings.
    no_relevant : {"one", "zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> bpref([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6])  # (1 + (1 - 1/2)) / 2
    0.75
    """
    return _metric_call(
        "bpref", y_true, y_score, group, k=None, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"relevance_threshold": relevance_threshold},
    )  # fmt: skip


def success_at_k(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    k: int | None = None,
    relevance_threshold: float = 0.0,
    ties: str = "average",
    no_relevant: str = "zero",
    reduction: str = "mean",
    data: Any = None,
) -> float | np.ndarray:
    """1 if a relevant row is in the top ``k``, else 0 (trec_eval ``success``, ranx ``hit_rate``).

    With ``ties="average"`` it is the probability of that over the orderings of tied scores.

    Parameters
    ----------%s
    relevance_threshold : float
    ties : {"average", "pessimistic", "optimistic", "stable"}
    no_relevant : {"zero", "exclude"}
    reduction : {"mean", "sum", "none"}
    data : DataFrame, optional

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> success_at_k([0, 0, 1], [0.9, 0.8, 0.7], group=[2, 1], k=1, reduction="none")
    array([0., 1.])
    >>> success_at_k([0, 1], [0.5, 0.5], k=1)  # a tie: the relevant row is first half the time
    0.5
    """
    return _metric_call(
        "success", y_true, y_score, group, k=k, ties=ties, no_relevant=no_relevant,
        reduction=reduction, data=data, qid=qid, options={"relevance_threshold": relevance_threshold},
    )  # fmt: skip


for _f in (
    ndcg, dcg, average_precision, reciprocal_rank, err, precision_at_k, recall_at_k,
    r_precision, bpref, success_at_k,
):  # fmt: skip
    if _f.__doc__:  # None under `python -OO`
        _f.__doc__ = _f.__doc__ % _COMMON_DOC
del _f
