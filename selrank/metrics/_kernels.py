"""Vectorised per-query kernels shared by the ranking metrics.

Everything here works on one flat array of rows in *grouped* order (see
:class:`selrank._groups.Groups`) and never loops over queries in Python: rows are ranked
inside their query with two stable global sorts, and per-query quantities are segment
reductions (``np.add.reduceat``) or look-ups in small tables indexed by rank.

Ties in the scores are handled through *tie blocks*: maximal runs of equal scores inside a
query, in ranked order. A metric that is linear in a per-position weight (DCG, precision,
recall) averages over all orderings of a block by giving every row of the block the mean
weight of the block's positions; average precision, reciprocal rank and ERR use the exact
closed forms derived in their functions in :mod:`selrank.metrics.ranking`.

Only NumPy is needed (no numba): the two sorts dominate the cost.
"""

from __future__ import annotations

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
