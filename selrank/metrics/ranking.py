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

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._array import Array
from .._groups import Groups, as_groups
from .._validation import REDUCTIONS, as_numeric_array
from .._validation import as_vector as _as_vector
from .._validation import check_choice as _check_choice
from ._kernels import TIES, Ranking, cumulative_table, log_factorial, segment_sum

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


def _check_nonnegative(label: np.ndarray, why: str) -> None:
    if label.min() < 0:
        bad = int(np.flatnonzero(label < 0)[0])
        raise ValueError(f"`y_true` must be >= 0 for {why}; row {bad} has label {label[bad]!r}")


# --------------------------------------------------------------------------------------
# Per-query kernels on a Ranking. Each returns one value per query of the ranking; the
# engine (selrank.metrics._engine) applies the policy on queries without relevant rows.
# --------------------------------------------------------------------------------------


def _gain(label: np.ndarray, gain: str) -> np.ndarray:
    if gain == "linear":
        return label
    with np.errstate(over="ignore"):
        g = np.expm1(label * math.log(2.0))  # 2^rel - 1, accurate for small fractional labels
    if not np.all(np.isfinite(g)):
        raise ValueError(
            f"exponential gain 2^rel - 1 overflows for labels up to {label.max()!r}; "
            "use gain='linear'"
        )
    return g


def _discount_table(max_size: int, k: int | None) -> np.ndarray:
    disc = 1.0 / np.log2(np.arange(max_size, dtype=np.float64) + 2.0)
    if k is not None:
        disc[k:] = 0.0
    return cumulative_table(disc)


def _cutoff_table(max_size: int, k: int | None) -> np.ndarray:
    """``table[p] = min(p, k)``: the cumulative weight of 'inside the top k'."""
    p = np.arange(max_size + 1, dtype=np.float64)
    return p if k is None else np.minimum(p, k)


def _group_max(rk: Ranking, row_values: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(row_values, rk.offsets[:-1])


def _dcg_values(rk: Ranking, k: int | None, gain: str) -> np.ndarray:
    g = _gain(rk.label, gain)
    return rk.group_sum(g * rk.expected_weight(_discount_table(rk.max_size, k)))


def _ideal_dcg(rk: Ranking, k: int | None, gain: str) -> np.ndarray:
    """DCG of each query's rows sorted by label, by counting when labels are small ints."""
    table = _discount_table(rk.max_size, k)
    label = rk.label
    top = float(label.max())
    if top <= 64 and np.array_equal(label, np.floor(label)):
        n_levels = int(top) + 1
        # column c holds the label n_levels-1-c, so columns run from the best label down
        col = (n_levels - 1) - label.astype(np.int64)
        counts = np.bincount(
            rk.row_group * n_levels + col, minlength=rk.n_groups * n_levels
        ).reshape(rk.n_groups, n_levels)
        start = np.cumsum(counts, axis=1) - counts
        level_gain = _gain(np.arange(n_levels - 1, -1, -1, dtype=np.float64), gain)
        return (level_gain * (table[start + counts] - table[start])).sum(axis=1)
    order = np.argsort(-label, kind="stable")
    order = order[np.argsort(rk.row_group[order], kind="stable")]
    g = _gain(label[order], gain)
    return rk.group_sum(g * (table[rk.pos + 1] - table[rk.pos]))


@dataclass(frozen=True)
class Judgments:
    """What the judgments say about each query of a :class:`Ranking`, beyond its rows.

    With arrays every row is judged and the rows are all there is; a TREC run's rows are the
    retrieved documents, and the qrels add the judged documents the run missed and leave
    retrieved ones unjudged. The kernels read these instead of counting rows, so one kernel
    serves both (:mod:`selrank.metrics._engine`).

    Attributes
    ----------
    n_relevant : ndarray, shape (n_queries,)
        ``R``: the relevant judged documents of each query.
    n_nonrelevant : ndarray, shape (n_queries,)
        The judged non-relevant documents of each query (bpref's ``N``).
    ideal_dcg : callable ``(k, gain) -> ndarray``
        The DCG of each query's judged documents sorted by grade (NDCG's denominator).
    in_pool : ndarray of bool or None
        Per ranked row: judged at all (any value); ``None``: every row is.
    judged : ndarray of bool or None
        Per ranked row: judged with a relevance >= 0 (bpref); ``None``: every row is.
    """

    n_relevant: np.ndarray
    n_nonrelevant: np.ndarray
    ideal_dcg: Callable[[int | None, str], np.ndarray]
    in_pool: np.ndarray | None = None
    judged: np.ndarray | None = None

    @classmethod
    def of_rows(cls, rk: Ranking, relevance_threshold: float) -> Judgments:
        """Every row judged, nothing else: the judgments of flat label arrays."""
        n_rel = rk.group_sum(_relevant(rk, relevance_threshold)).astype(np.float64)
        return cls(n_rel, rk.sizes - n_rel, lambda k, gain: _ideal_dcg(rk, k, gain))


def _k_dcg(rk, k, *, gain="exponential", **_):
    return _dcg_values(rk, k, gain)


def _k_ndcg(rk, k, *, judgments, gain="exponential", **_):
    actual = _dcg_values(rk, k, gain)
    ideal = judgments.ideal_dcg(k, gain)
    out = np.zeros(rk.n_groups)
    np.divide(actual, ideal, out=out, where=ideal > 0)
    # rounding can push a perfect ranking a hair above 1
    return np.minimum(out, 1.0)


def _relevant(rk: Ranking, threshold: float) -> np.ndarray:
    return (rk.label > threshold).astype(np.int64)


def _k_precision(rk, k, *, relevance_threshold=0.0, capped=False, **_):
    rel = _relevant(rk, relevance_threshold)
    hits = rk.group_sum(rel * rk.expected_weight(_cutoff_table(rk.max_size, k)))
    sizes = rk.sizes.astype(np.float64)
    denom = sizes if k is None else (np.minimum(sizes, k) if capped else np.full_like(sizes, k))
    return hits / denom


def _hits(rk: Ranking, k: int | None, relevance_threshold: float) -> np.ndarray:
    """Relevant rows in the top ``k`` (expected over tied orderings)."""
    rel = _relevant(rk, relevance_threshold)
    return rk.group_sum(rel * rk.expected_weight(_cutoff_table(rk.max_size, k)))


def _k_recall(rk, k, *, judgments, relevance_threshold=0.0, **_):
    hits = _hits(rk, k, relevance_threshold)
    n_rel = judgments.n_relevant
    out = np.zeros(rk.n_groups)
    np.divide(hits, n_rel, out=out, where=n_rel > 0)
    return out


def _block_relevance(rk: Ranking, rel: np.ndarray):
    """Relevant rows per block, and relevant rows ranked before each block in its query."""
    rb = rk.block_sum(rel)
    before = np.cumsum(rb) - rb
    first_block = rk.offsets[:-1] if rk.row_block is None else rk.row_block[rk.offsets[:-1]]
    before = before - before[first_block][rk.block_group()]
    return rb, before, first_block


def _k_average_precision(rk, k, *, judgments, relevance_threshold=0.0, capped=False, **_):
    r"""Average precision, exact in expectation over tied orderings.

    For a tie block of ``m`` rows at ranks ``a+1 .. a+m`` holding ``r`` relevant rows, with
    ``B`` relevant rows ranked before it, a uniformly random order of the block gives the
    expected sum of precisions at its relevant rows (ranks inside the cut-off only)

    .. math:: \frac{r}{m}\Big[(B+1)\,\Delta H + \frac{r-1}{m-1}\big(m' - (a+1)\,\Delta H\big)\Big],
              \quad \Delta H = H_{a+m'} - H_a,\ m' = \min(m, \max(0, k-a)),

    since the relevant row at offset ``j`` of the block is preceded on average by
    ``j (r-1)/(m-1)`` relevant rows of the block (McSherry & Najork, ECIR 2008).
    """
    rel = _relevant(rk, relevance_threshold)
    rb, before, first_block = _block_relevance(rk, rel)
    a = rk.block_pos
    m = rk.block_size
    m_in = m if k is None else np.clip(k - a, 0, m)
    harmonic = cumulative_table(1.0 / np.arange(1, rk.max_size + 1, dtype=np.float64))
    dh = harmonic[a + m_in] - harmonic[a]
    spread = np.zeros(m.size)
    np.divide(rb - 1, m - 1, out=spread, where=m > 1)
    contrib = (rb / m) * ((before + 1) * dh + spread * (m_in - (a + 1) * dh))
    total = segment_sum(contrib, first_block)
    n_rel = judgments.n_relevant
    denom = np.minimum(n_rel, k) if (capped and k is not None) else n_rel
    out = np.zeros(rk.n_groups)
    np.divide(total, denom, out=out, where=n_rel > 0)
    return out


def _k_reciprocal_rank(rk, k, *, relevance_threshold=0.0, **_):
    """Reciprocal rank of the first relevant row, exact in expectation over tied orderings.

    Only the first tie block holding a relevant row matters. If it has ``m`` rows, ``r`` of
    them relevant, the first relevant row sits at offset ``j`` with hypergeometric
    probability ``C(m-j-1, r-1) / C(m, r)``.
    """
    rel = _relevant(rk, relevance_threshold)
    rb, before, _ = _block_relevance(rk, rel)
    first_rel_block = (rb > 0) & (before == 0)
    rows = np.flatnonzero(rk.to_rows(first_rel_block))
    pos = rk.pos[rows]
    if rk.has_ties:
        blk = rk.row_block[rows]
        m, r, a = rk.block_size[blk], rb[blk], rk.block_pos[blk]
        j = pos - a
        lf = log_factorial(rk.max_size)
        ok = (m - j - 1) >= (r - 1)
        n1 = np.where(ok, m - j - 1, 0)
        k1 = np.where(ok, r - 1, 0)
        log_p = (lf[n1] - lf[k1] - lf[n1 - k1]) - (lf[m] - lf[r] - lf[m - r])
        prob = np.where(ok, np.exp(log_p), 0.0)
    else:
        prob = np.ones(rows.size)
    w = prob / (pos + 1.0)
    if k is not None:
        w = np.where(pos < k, w, 0.0)
    return np.bincount(rk.row_group[rows], weights=w, minlength=rk.n_groups)


def _k_err(rk, k, *, max_grade=None, **_):
    r"""Expected reciprocal rank (Chapelle et al., CIKM 2009).

    .. math:: \mathrm{ERR@k} = \sum_{i \le k} \frac{1}{i} R_i \prod_{j<i} (1 - R_j),
              \quad R_i = \frac{2^{g_i} - 1}{2^{g_\max}}.

    With ``ties="average"`` a tie block whose rows have different labels contributes its
    exact expectation over orderings: the product over the rows before the block does not
    depend on their order, and inside the block
    ``E[R_{π(j)} Π_{i<j}(1-R_{π(i)})] = S_j - S_{j+1}`` with ``S_j`` the mean of
    ``Π (1 - R)`` over the ``j``-subsets of the block, built by a recurrence over the rows.
    """
    label = rk.label
    top = float(label.max())
    gmax = top if max_grade is None else float(max_grade)
    if top > gmax:
        raise ValueError(f"`max_grade` is {gmax!r} but `y_true` has labels up to {top!r}")
    # (2^g - 1) / 2^gmax written so that no power of two can overflow
    stop = np.exp2(label - gmax) - np.exp2(-gmax)
    keep = np.maximum(1.0 - stop, np.finfo(np.float64).tiny)  # = 2^-gmax at the top grade
    log_keep = np.log(keep)
    before = np.cumsum(log_keep) - log_keep
    before = before - before[rk.offsets[:-1]][rk.row_group]
    w = 1.0 / (rk.pos + 1.0)
    if k is not None:
        w = np.where(rk.pos < k, w, 0.0)
    contrib = stop * w * np.exp(before)
    if not rk.has_ties:
        return rk.group_sum(contrib)
    lo = np.minimum.reduceat(label, rk.block_start)
    hi = np.maximum.reduceat(label, rk.block_start)
    a, m = rk.block_pos, rk.block_size
    m_in = m if k is None else np.clip(k - a, 0, m)
    mixed = (lo != hi) & (m_in > 0)
    if not mixed.any():
        return rk.group_sum(contrib)
    contrib = np.where(rk.to_rows(mixed), 0.0, contrib)
    out = rk.group_sum(contrib)
    sel = np.flatnonzero(mixed)
    block_err = np.zeros(sel.size)
    # buckets of similar cut-off width keep the work arrays near the size of the blocks
    bucket = np.ceil(np.log2(m_in[sel])).astype(np.int64)
    for b in np.unique(bucket):
        part = np.flatnonzero(bucket == b)
        blk = sel[part]
        n_levels = np.unique(label[rk.block_start[blk]]).size  # a lower bound is enough here
        width = int(m_in[blk].max())
        # adding rows label by label costs ~4·levels·width² per block, row by row size·width
        cost_level = 4 * n_levels * (width + 1) ** 2
        by_level = (width + 1) ** 2 <= 2_000_000 and cost_level < int(m[blk].max()) * width
        chunk = max(1, 2_000_000 // (width + 1) ** 2) if by_level else blk.size
        for at in range(0, blk.size, chunk):
            sub, dst = blk[at : at + chunk], part[at : at + chunk]
            args = (keep, rk.block_start[sub], m[sub], a[sub], m_in[sub])
            value = _tied_err_by_level(label, *args) if by_level else None
            if value is None:
                value = _tied_err(*args)
            block_err[dst] = value
    block_err *= np.exp(before[rk.block_start[sel]])
    out += np.bincount(rk.block_group()[sel], weights=block_err, minlength=rk.n_groups)
    return out


def _tied_err(keep, starts, sizes, pos, m_in) -> np.ndarray:
    """ERR contribution of tie blocks, in expectation over their orderings.

    ``keep`` is ``1 - R`` per row; a block starts at row ``starts``, has ``sizes`` rows at
    ranks ``pos + 1 ..`` and ``m_in`` of them inside the cut-off. ``S_j``, the mean of
    ``Π (1 - R)`` over the ``j``-subsets of a block, is built one row at a time with
    ``S'_j = ((t + 1 - j) S_j + j x S_{j-1}) / (t + 1)`` (adding row ``x`` to ``t`` rows), a
    convex combination, so it never overflows as binomial coefficients would. Cost:
    ``O(size · m_in)`` per block.
    """
    order = np.argsort(-sizes, kind="stable")  # largest first: the active blocks are a prefix
    starts, sizes, pos, m_in = starts[order], sizes[order], pos[order], m_in[order]
    width = int(m_in.max())
    subset_mean = np.zeros((starts.size, width + 1))
    subset_mean[:, 0] = 1.0
    j = np.arange(1, width + 1, dtype=np.float64)
    n_active = np.searchsorted(-sizes, -np.arange(int(sizes[0])), side="left")
    for t in range(int(sizes[0])):  # one step per row offset inside a block, not per query
        na = n_active[t]
        s = subset_mean[:na]
        x = keep[starts[:na] + t][:, None]
        s[:, 1:] = ((t + 1 - j) * s[:, 1:] + j * x * s[:, :-1]) / (t + 1)
    jj = np.arange(width)
    step = subset_mean[:, :-1] - subset_mean[:, 1:]
    inside = jj[None, :] < m_in[:, None]
    value = np.where(inside, step / (pos[:, None] + jj[None, :] + 1.0), 0.0).sum(axis=1)
    out = np.empty_like(value)
    out[order] = value
    return out


def _tied_err_by_level(label, keep, starts, sizes, pos, m_in) -> np.ndarray | None:
    """:func:`_tied_err` adding all rows of one label at a time (few labels, small cut-off).

    Adding ``c`` rows of equal ``x`` to ``n`` rows gives
    ``S'_j = Σ_i h(i; j, c, n) x^i S_{j-i}`` with the hypergeometric weight
    ``h = C(c, i) C(n, j-i) / C(n+c, j)``. Cost ``O(levels · m_in²)`` per block,
    independent of the block size; returns None when there are too many distinct labels.
    """
    row_block = np.repeat(np.arange(starts.size), sizes)
    rows = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
    levels, level_of = np.unique(label[rows], return_inverse=True)
    if levels.size > 64:
        return None
    counts = np.bincount(
        row_block * levels.size + level_of.reshape(-1), minlength=starts.size * levels.size
    ).reshape(starts.size, levels.size)
    x_level = np.empty(levels.size)
    x_level[level_of.reshape(-1)] = keep[rows]
    width = int(m_in.max())
    lf = log_factorial(int(sizes.max()))
    j = np.arange(width + 1)[None, :, None]
    i = np.arange(width + 1)[None, None, :]
    subset_mean = np.zeros((starts.size, width + 1))
    subset_mean[:, 0] = 1.0
    n = np.zeros(starts.size, dtype=np.int64)
    for lvl in range(levels.size):  # one step per label value, not per query or row
        c = counts[:, lvl][:, None, None]
        nb = n[:, None, None]
        ok = (i <= c) & (j - i >= 0) & (j - i <= nb) & (j <= nb + c)
        ci, cj, cn = np.where(ok, i, 0), np.where(ok, j - i, 0), np.where(ok, j, 0)
        log_h = (
            (lf[c] - lf[ci] - lf[c - ci])
            + (lf[nb] - lf[cj] - lf[nb - cj])
            - (lf[nb + c] - lf[cn] - lf[nb + c - cn])
        )
        h = np.where(ok, np.exp(np.where(ok, log_h, 0.0)), 0.0)
        shifted = subset_mean[:, np.where(j - i >= 0, j - i, 0)[0]]  # (B, j, i) -> S_{j-i}
        subset_mean = (h * x_level[lvl] ** i * shifted).sum(axis=2)
        n += counts[:, lvl]
    jj = np.arange(width)
    step = subset_mean[:, :-1] - subset_mean[:, 1:]
    inside = jj[None, :] < m_in[:, None]
    return np.where(inside, step / (pos[:, None] + jj[None, :] + 1.0), 0.0).sum(axis=1)


def _k_rprec(rk, k, *, judgments, relevance_threshold=0.0, **_):
    """R-precision: relevant rows among the top ``R`` over ``R`` (trec_eval's ``Rprec``).

    ``R`` is the number of relevant judged documents of the query (the relevant rows, for
    arrays). A tie block straddling rank ``R`` counts its relevant rows by the expected
    share of the block inside the top ``R``.
    """
    rel = _relevant(rk, relevance_threshold)
    r = np.asarray(judgments.n_relevant, dtype=np.float64)
    cut = r[rk.block_group()]
    a = rk.block_pos
    b = a + rk.block_size
    inside = (np.minimum(b, cut) - np.minimum(a, cut)) / rk.block_size
    hits = rk.group_sum(rel * rk.to_rows(inside))
    out = np.zeros(rk.n_groups)
    np.divide(hits, r, out=out, where=r > 0)
    return out


def _k_success(rk, k, *, relevance_threshold=0.0, **_):
    """1 if a relevant row is in the top ``k`` (trec_eval's ``success``, ranx's ``hit_rate``).

    With tied scores, the probability of it over the orderings: only the first tie block
    holding a relevant row matters; with ``m`` rows, ``r`` relevant and ``m'`` of them inside
    the cut-off, no relevant row makes it with probability ``C(m - r, m') / C(m, m')``.
    """
    rel = _relevant(rk, relevance_threshold)
    rb, before, _ = _block_relevance(rk, rel)
    blk = np.flatnonzero((rb > 0) & (before == 0))
    m, r, a = rk.block_size[blk], rb[blk], rk.block_pos[blk]
    m_in = m if k is None else np.clip(k - a, 0, m)
    lf = log_factorial(rk.max_size)
    ok = (m - r) >= m_in  # else a relevant row is surely inside
    nr, mi = np.where(ok, m - r, 0), np.where(ok, m_in, 0)
    log_none = (lf[nr] - lf[mi] - lf[nr - mi]) - (lf[m] - lf[mi] - lf[m - mi])
    p_none = np.where(ok, np.exp(log_none), 0.0)
    out = np.bincount(rk.block_group()[blk], weights=1.0 - p_none, minlength=rk.n_groups)
    return np.minimum(out, 1.0)


def _k_bpref(rk, k, *, judgments, relevance_threshold=0.0, **_):
    r"""Binary preference (Buckley & Voorhees, SIGIR 2004), as trec_eval computes it.

    .. math:: \mathrm{bpref} = \frac{1}{R} \sum_{\text{relevant } r}
              \Big(1 - \frac{\min(n_r, R)}{\min(N, R)}\Big),

    with ``n_r`` the judged non-relevant rows ranked above ``r``, ``R`` the relevant and
    ``N`` the judged non-relevant documents of the query (``judgments``: all rows for
    arrays; for a run the qrels' counts and which retrieved rows are judged). Unjudged
    rows are ignored. In a tie block with ``n`` judged non-relevant rows, the number of them
    ahead of a given relevant row of the block is uniform on ``0..n`` over the orderings,
    which gives the exact expectation of ``min(B + X, R)``.
    """
    rel = _relevant(rk, relevance_threshold)
    judged = judgments.judged
    judged_rows = np.ones(rel.size, dtype=bool) if judged is None else np.asarray(judged, bool)
    nonrel = (judged_rows & (rel == 0)).astype(np.int64)
    r = np.asarray(judgments.n_relevant, dtype=np.float64)
    n_tot = np.asarray(judgments.n_nonrelevant, dtype=np.float64)
    rb, _, _ = _block_relevance(rk, rel)
    nb, before, _ = _block_relevance(rk, nonrel)
    grp = rk.block_group()
    cap, den = r[grp], np.minimum(n_tot, r)[grp]
    # E[min(B + X, R)] with X uniform on 0..n (n: judged non-relevant rows of the block)
    c = np.clip(cap - before, 0, nb + 1)
    expected = (c * before + c * (c - 1) / 2 + (nb + 1 - c) * cap) / (nb + 1)
    penalty = np.zeros(rb.size)
    np.divide(expected, den, out=penalty, where=den > 0)
    total = np.bincount(grp, weights=rb * (1.0 - penalty), minlength=rk.n_groups)
    out = np.zeros(rk.n_groups)
    np.divide(total, r, out=out, where=r > 0)
    return out


def _k_judged(rk, k, *, judgments, **_):
    """Fraction of the top ``min(k, n)`` rows that are judged (ir_measures' ``Judged@k``)."""
    pool = np.ones(rk.label.size) if judgments.in_pool is None else judgments.in_pool
    inside = rk.expected_weight(_cutoff_table(rk.max_size, k))
    depth = rk.sizes if k is None else np.minimum(rk.sizes, k)
    return rk.group_sum(pool * inside) / depth


def _k_hits(rk, k, *, relevance_threshold=0.0, **_):
    """Relevant rows in the top ``k`` (ranx's ``hits@k``, trec_eval's ``num_rel_ret``)."""
    return _hits(rk, k, relevance_threshold)


def _k_num_ret(rk, k, **_):
    """Rows ranked (retrieved documents), trec_eval's ``num_ret``."""
    return rk.sizes.astype(np.float64)


def _k_num_rel(rk, k, *, judgments, **_):
    """Relevant judged documents ``R``, retrieved or not (trec_eval's ``num_rel``)."""
    return np.asarray(judgments.n_relevant, dtype=np.float64)


def _k_f1(rk, k, *, judgments, relevance_threshold=0.0, **_):
    """F1 of precision@k and recall@k: ``2 hits / (k + R)`` (ranx's ``f1@k``).

    ``2PR / (P + R)`` with ``P = hits / k`` and ``R = hits / n_rel`` is ``2 hits / (k + n_rel)``,
    linear in ``hits``, so exact in expectation over tied orderings too. Without a cut-off
    ``k`` is the number of rows (trec_eval's ``set_F``).
    """
    hits = _hits(rk, k, relevance_threshold)
    depth = rk.sizes if k is None else np.full(rk.n_groups, k)
    denom = depth + np.asarray(judgments.n_relevant, dtype=np.float64)
    out = np.zeros(rk.n_groups)
    np.divide(2.0 * hits, denom, out=out, where=hits > 0)
    return out


def _k_rbp(rk, k, *, relevance_threshold=0.0, p=0.8, **_):
    r"""Rank-biased precision (Moffat & Zobel, TOIS 2008), graded as ranx computes it.

    .. math:: \mathrm{RBP} = (1 - p) \sum_{i \le k} g_i\, p^{i-1},

    ``g_i`` the label of the row at rank ``i`` when it is relevant, else 0. Linear in a
    positional weight, so exact in expectation over tied orderings.
    """
    weight = (1.0 - p) * p ** np.arange(rk.max_size, dtype=np.float64)
    if k is not None:
        weight[k:] = 0.0
    gain = np.where(rk.label > relevance_threshold, rk.label, 0.0)
    return rk.group_sum(gain * rk.expected_weight(cumulative_table(weight)))


def _k_iprec(rk, k, *, judgments, relevance_threshold=0.0, recall=0.0, **_):
    """Interpolated precision at a recall level (trec_eval's ``iprec_at_recall_0.10``).

    The largest precision at any rank whose recall (over ``R``, all judged relevant
    documents) reaches ``recall``; 0 when the ranking never reaches it. As trec_eval, the
    level is reached with ``floor(recall * R + 0.9)`` relevant documents. Needs one order of
    the rows (a maximum over ranks has no linear expectation over tied orderings).
    """
    rel = _relevant(rk, relevance_threshold)
    found = np.cumsum(rel)
    found = found - (found[rk.offsets[:-1]] - rel[rk.offsets[:-1]])[rk.row_group]
    n_rel = np.asarray(judgments.n_relevant, dtype=np.float64)[rk.row_group]
    # trec_eval turns the level into a number of relevant documents, floor(level * R + 0.9)
    need = np.floor(recall * n_rel + 0.9)
    reached = (n_rel > 0) & (found >= need)
    precision = np.where(reached, found / (rk.pos + 1.0), 0.0)
    return np.maximum.reduceat(precision, rk.offsets[:-1])


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
    from .names import parse_metric_name

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
    from . import _engine
    from .measures import MEASURES
    from .names import MetricSpec

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


def _require_polars():
    try:
        import polars as pl
    except ImportError:  # pragma: no cover - polars is in the `data` extra
        raise ImportError(
            "selrank.metrics.evaluate requires polars: pip install 'selrank[data]'"
        ) from None
    return pl
