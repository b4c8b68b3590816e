"""Vectorised per-query kernels shared by the ranking metrics.

Everything here works on one flat array of rows in *grouped* order (see
:class:`selrank._groups.Groups`) and never loops over queries in Python: rows are ranked
inside their query with two stable global sorts, and per-query quantities are segment
reductions (``np.add.reduceat``) or look-ups in small tables indexed by rank.

Ties in the scores are handled through *tie blocks*: maximal runs of equal scores inside a
query, in ranked order. A metric that is linear in a per-position weight (DCG, precision,
recall) averages over all orderings of a block by giving every row of the block the mean
weight of the block's positions; average precision, reciprocal rank and ERR use the exact
closed forms derived in their functions below.

The measures' kernels (``_k_ndcg``, ``_k_average_precision``, ...) live here too, below the
ranking: each returns one value per query of a :class:`Ranking`, reading the judged counts
of :class:`Judgments`; their records are in :mod:`selrank.metrics.measures`.

Only NumPy is needed (no numba): the two sorts dominate the cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._groups import Groups

__all__ = ["Ranking", "rank_groups", "segment_sum", "cumulative_table", "log_factorial"]

TIES = ("average", "pessimistic", "optimistic", "stable")


def _stable_argsort_small_ints(x: np.ndarray, n_values: int) -> np.ndarray:
    """Stable argsort of non-negative ints below ``n_values`` (radix sort when they fit int16)."""
    if n_values <= np.iinfo(np.int16).max:
        return np.argsort(x.astype(np.int16), kind="stable")
    return np.argsort(x, kind="stable")


def segment_sum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums of ``values`` over the segments beginning at ``starts`` (non-empty segments)."""
    if values.size == 0:
        return np.zeros(starts.size, dtype=values.dtype)
    return np.add.reduceat(values, starts)


@dataclass
class Ranking:
    """Rows of every query ranked by score, with their tie blocks.

    All row arrays are in ranked order: the rows of query 0 from its top score down, then
    query 1, and so on. ``block_*`` arrays describe the tie blocks (a single row each
    unless ``ties == "average"``).

    Attributes
    ----------
    groups : Groups
        The query partition (in the caller's row order).
    ties : str
        Tie policy used to order the rows.
    label : ndarray of float64, shape (n_rows,)
        Labels in ranked order.
    pos : ndarray of int64, shape (n_rows,)
        0-based rank of each row inside its query.
    row_group : ndarray of int64, shape (n_rows,)
        Query index of each row.
    block_start : ndarray of int64, shape (n_blocks,)
        First row (global index) of each tie block.
    block_size : ndarray of int64, shape (n_blocks,)
    block_pos : ndarray of int64, shape (n_blocks,)
        Rank (inside the query) of the first row of each block.
    row_block : ndarray of int64 or None
        Block index of each row; ``None`` when every block is a single row.
    order : ndarray of int64 or None
        The ranking as indices into the grouped rows (``x_grouped[order]`` puts any other
        per-row array in ranked order).
    """

    groups: Groups
    ties: str
    label: np.ndarray
    pos: np.ndarray
    row_group: np.ndarray
    block_start: np.ndarray
    block_size: np.ndarray
    block_pos: np.ndarray
    row_block: np.ndarray | None
    order: np.ndarray | None = None

    @property
    def offsets(self) -> np.ndarray:
        return self.groups.offsets

    @property
    def sizes(self) -> np.ndarray:
        return self.groups.sizes

    @property
    def n_groups(self) -> int:
        return self.groups.n_groups

    @property
    def max_size(self) -> int:
        return int(self.groups.sizes.max())

    @property
    def has_ties(self) -> bool:
        return self.row_block is not None

    def group_sum(self, row_values: np.ndarray) -> np.ndarray:
        """Per-query sum of per-row values (ranked order)."""
        return segment_sum(row_values, self.offsets[:-1])

    def block_sum(self, row_values: np.ndarray) -> np.ndarray:
        """Per-block sum of per-row values (ranked order)."""
        if self.row_block is None:
            return row_values
        return segment_sum(row_values, self.block_start)

    def to_rows(self, block_values: np.ndarray) -> np.ndarray:
        """Per-block values repeated onto the rows of each block."""
        if self.row_block is None:
            return block_values
        return block_values[self.row_block]

    def block_group(self) -> np.ndarray:
        """Query index of each block."""
        return self.row_group[self.block_start]

    def expected_weight(self, table: np.ndarray) -> np.ndarray:
        """Per-row weight averaged over the positions of the row's tie block.

        ``table`` is a cumulative table, ``table[p] = Σ_{i<p} w(i)``, of a positional weight
        ``w`` (a discount, or 1 inside the cut-off). A row alone in its block gets ``w(pos)``;
        a row in a block covering positions ``[a, b)`` gets ``(table[b] - table[a]) / (b - a)``,
        its expected weight when the block is shuffled uniformly at random.
        """
        a = self.block_pos
        b = a + self.block_size
        w = (table[b] - table[a]) / self.block_size
        return self.to_rows(w)


def rank_groups(label: np.ndarray, score: np.ndarray, groups: Groups, ties: str) -> Ranking:
    """Rank the rows of every query by decreasing score.

    Parameters
    ----------
    label, score : ndarray, shape (n_rows,)
        In the caller's row order; ``label`` float64, ``score`` any real float dtype (ties
        are decided on the values as given, so float32 scores tie as float32 numbers).
    groups : Groups
    ties : {"average", "pessimistic", "optimistic", "stable"}
        ``"stable"`` and ``"average"`` order tied rows by input order (for ``"average"`` the
        order is irrelevant: the metrics average over it); ``"pessimistic"`` puts the lowest
        labels of a tie first, ``"optimistic"`` the highest.

    Returns
    -------
    Ranking
    """
    label = groups.to_grouped(label)
    score = groups.to_grouped(score)
    n = label.size
    neg = -score
    if ties in ("pessimistic", "optimistic"):
        first = np.argsort(label if ties == "pessimistic" else -label, kind="stable")
        order = first[np.argsort(neg[first], kind="stable")]
    else:
        order = np.argsort(neg, kind="stable")
    # a stable sort by query index keeps the score order inside each query
    order = order[_stable_argsort_small_ints(groups.row_group[order], groups.n_groups)]
    row_group = groups.row_group
    pos = np.arange(n, dtype=np.int64) - groups.offsets[row_group]
    ranked_label = label[order]
    if ties == "average" and n > 1:
        s = score[order]
        new_block = np.empty(n, dtype=bool)
        new_block[0] = True
        np.not_equal(s[1:], s[:-1], out=new_block[1:])
        new_block[groups.offsets[:-1]] = True
        if not new_block.all():
            block_start = np.flatnonzero(new_block)
            block_size = np.diff(np.append(block_start, n))
            row_block = np.cumsum(new_block) - 1
            return Ranking(
                groups, ties, ranked_label, pos, row_group,
                block_start, block_size, pos[block_start], row_block, order,
            )  # fmt: skip
    ones = np.ones(n, dtype=np.int64)
    return Ranking(groups, ties, ranked_label, pos, row_group, np.arange(n), ones, pos, None, order)


def cumulative_table(weights: np.ndarray) -> np.ndarray:
    """``table[p] = Σ_{i<p} weights[i]`` with ``table[0] = 0`` (length ``len(weights) + 1``)."""
    table = np.zeros(weights.size + 1, dtype=np.float64)
    np.cumsum(weights, out=table[1:])
    return table


def log_factorial(n: int) -> np.ndarray:
    """``log(i!)`` for ``i = 0 .. n``."""
    table = np.zeros(n + 1, dtype=np.float64)
    if n > 0:
        np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)), out=table[1:])
    return table


def _require_polars():
    try:
        import polars as pl
    except ImportError:  # pragma: no cover - polars is in the `data` extra
        raise ImportError(
            "selrank.metrics.evaluate requires polars: pip install 'selrank[data]'"
        ) from None
    return pl


# --------------------------------------------------------------------------------------
# The measures' kernels (their records: selrank.metrics.measures). Each returns one value
# per query of a Ranking; the engine (selrank.metrics._engine) applies the policy on
# queries without relevant rows.
# --------------------------------------------------------------------------------------


def _check_nonnegative(label: np.ndarray, why: str) -> None:
    if label.min() < 0:
        bad = int(np.flatnonzero(label < 0)[0])
        raise ValueError(f"`y_true` must be >= 0 for {why}; row {bad} has label {label[bad]!r}")


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
