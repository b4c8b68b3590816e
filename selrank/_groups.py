"""Query groups: one representation for sizes, per-row query ids and segment operations.

Ranking data is a flat array of rows partitioned into queries. Users hand that partition
over in two ways, each under its own keyword: LightGBM-style *sizes* ``group=[3, 5, 2]`` or
XGBoost-style per-row *query ids* ``qid=[7, 7, 7, 9, 9, ...]``. Which one an array is, is never
guessed (``n`` one-row queries have sizes ``[1] * n``). :func:`as_groups` turns either into a
:class:`Groups` object which every group-wise computation in selrank (losses, metrics, GBDT adapters)
uses, so the parsing rules and error messages are the same everywhere.

Group-wise work is done with segment reductions (``np.add.reduceat``,
``torch.Tensor.index_add``), never a Python loop over queries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._array import get_namespace, is_numpy, is_torch, to_numpy

__all__ = ["Groups", "as_groups"]


class Groups:
    """Partition of ``n_rows`` rows into ``n_groups`` non-empty query groups.

    Rows of one group need not be adjacent in the caller's arrays (query ids may arrive in
    any order); :meth:`to_grouped` permutes rows into grouped order (a stable sort, so the
    order inside a group is kept) and :meth:`from_grouped` puts per-row results back.

    Build with :meth:`from_sizes`, :meth:`from_ids` or :func:`as_groups`.

    Attributes
    ----------
    sizes : ndarray of int64, shape (n_groups,)
    offsets : ndarray of int64, shape (n_groups + 1,)
        Start of each group in grouped order; ``offsets[-1] == n_rows``.
    row_group : ndarray of int64, shape (n_rows,)
        Group index of each row, in grouped order.
    perm : ndarray of int64 or None
        ``x_grouped = x[perm]``; ``None`` when rows are already grouped.
    ids : ndarray or None
        The query id of each group when built from ids.
    """

    def __init__(self, sizes: np.ndarray, perm: np.ndarray | None = None, ids=None):
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.offsets = np.zeros(self.sizes.size + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=self.offsets[1:])
        self.perm = perm
        self.inv_perm = None if perm is None else np.argsort(perm, kind="stable")
        self.ids = ids
        self.row_group = np.repeat(np.arange(self.sizes.size, dtype=np.int64), self.sizes)
        self._device_cache: dict[Any, Any] = {}
        self._pair_cache: dict[Any, Any] = {}

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_sizes(cls, sizes: Any, n_rows: int | None = None) -> Groups:
        """Groups from query sizes (LightGBM's ``group``)."""
        s = to_numpy(sizes)
        if s.ndim != 1:
            raise ValueError(f"`group` sizes must be 1-D; got shape {s.shape}")
        if s.size == 0:
            raise ValueError("`group` is empty: expected at least one query size")
        if not np.issubdtype(s.dtype, np.integer):
            if not np.all(np.isfinite(s)) or np.any(s != np.round(s)):
                raise ValueError("`group` sizes must be whole numbers; got non-integer values")
            s = s.astype(np.int64)
        if np.any(s <= 0):
            bad = int(np.flatnonzero(s <= 0)[0])
            raise ValueError(f"`group` sizes must be positive; query {bad} has size {int(s[bad])}")
        total = int(s.sum())
        if n_rows is not None and total != n_rows:
            raise ValueError(f"`group` sizes add up to {total} rows but the data has {n_rows} rows")
        return cls(s)

    @classmethod
    def from_ids(cls, ids: Any, *, require_contiguous: bool = False) -> Groups:
        """Groups from one query id per row (XGBoost's ``qid``).

        Groups are numbered in order of first appearance. Rows of a query that are not
        adjacent are gathered (stable), unless ``require_contiguous`` is set, in which case a
        ``ValueError`` names the first row that breaks contiguity.
        """
        q = to_numpy(ids)
        if q.ndim != 1:
            raise ValueError(f"query ids must be 1-D; got shape {q.shape}")
        if q.size == 0:
            raise ValueError("query ids are empty")
        if q.dtype.kind == "f" and not np.all(np.isfinite(q)):
            bad = int(np.flatnonzero(~np.isfinite(q))[0])
            raise ValueError(f"query ids must be finite; row {bad} has {q[bad]!r}")
        change = np.empty(q.size, dtype=bool)
        change[0] = True
        np.not_equal(q[1:], q[:-1], out=change[1:])
        starts = np.flatnonzero(change)
        run_ids = q[starts]
        uniq, first = np.unique(run_ids, return_index=True)
        if uniq.size == starts.size:  # every query is one contiguous run
            sizes = np.diff(np.append(starts, q.size))
            return cls(sizes, None, ids=run_ids)
        if require_contiguous:
            seen: dict = {}
            for k, v in enumerate(run_ids.tolist()):
                if v in seen:
                    row = int(starts[k])
                    raise ValueError(
                        f"query ids must be contiguous (all rows of a query together); "
                        f"query {v!r} reappears at row {row} after other queries"
                    )
                seen[v] = k
        # number groups by first appearance, then a stable sort gathers their rows
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        _, inverse = np.unique(q, return_inverse=True)
        gidx = rank[inverse.reshape(-1)]
        perm = np.argsort(gidx, kind="stable")
        sizes = np.bincount(gidx, minlength=uniq.size)
        return cls(sizes, perm, ids=uniq[order])

    # -- basic properties ----------------------------------------------------------------
    @property
    def n_groups(self) -> int:
        return int(self.sizes.size)

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    @property
    def is_grouped(self) -> bool:
        """True when rows already come in grouped order (no permutation needed)."""
        return self.perm is None

    def __repr__(self) -> str:
        return (
            f"Groups(n_groups={self.n_groups}, n_rows={self.n_rows}, "
            f"max_size={int(self.sizes.max())}, grouped={self.is_grouped})"
        )

    # -- index arrays on the right device -------------------------------------------------
    def _index(self, name: str, like):
        """Index array ``name`` in the namespace/device of ``like`` (cached per device)."""
        arr = getattr(self, name) if isinstance(name, str) else name
        if is_numpy(like):
            return arr
        key = (name, str(getattr(like, "device", "")), type(like).__module__)
        hit = self._device_cache.get(key)
        if hit is None:
            if is_torch(like):
                import torch

                hit = torch.as_tensor(arr, device=like.device)
            else:
                xp = get_namespace(like)
                hit = xp.asarray(arr)
            self._device_cache[key] = hit
        return hit

    # -- permutations ---------------------------------------------------------------------
    def to_grouped(self, x):
        """Rows of ``x`` (first axis) in grouped order."""
        if self.perm is None or x is None:
            return x
        return x[self._index("perm", x), ...]

    def from_grouped(self, x):
        """Inverse of :meth:`to_grouped` for per-row results."""
        if self.perm is None or x is None:
            return x
        return x[self._index("inv_perm", x), ...]

    # -- segment reductions (inputs in grouped order) ------------------------------------
    def sum(self, x):
        """Per-group sum of ``x`` (grouped order, first axis) -> shape ``(n_groups, ...)``."""
        if is_numpy(x):
            if x.shape[0] == 0:  # reduceat has no empty segments (it reads x[start])
                return np.zeros((self.n_groups, *x.shape[1:]), dtype=x.dtype)
            return np.add.reduceat(x, self.offsets[:-1], axis=0)
        if is_torch(x):
            import torch

            idx = self._index("row_group", x)
            out = torch.zeros((self.n_groups, *x.shape[1:]), dtype=x.dtype, device=x.device)
            return out.index_add(0, idx, x)
        import cupyx  # CuPy: scatter-add into a zero array

        xp = get_namespace(x)
        out = xp.zeros((self.n_groups, *x.shape[1:]), dtype=x.dtype)
        cupyx.scatter_add(out, self._index("row_group", x), x)
        return out

    def max(self, x):
        """Per-group maximum of ``x`` (grouped order, 1-D) -> shape ``(n_groups,)``."""
        if is_numpy(x):
            if x.shape[0] == 0:  # the maximum of nothing (reduceat would read x[start])
                return np.full((self.n_groups, *x.shape[1:]), -np.inf, dtype=x.dtype)
            return np.maximum.reduceat(x, self.offsets[:-1], axis=0)
        if is_torch(x):
            import torch

            idx = self._index("row_group", x)
            out = torch.full((self.n_groups,), -torch.inf, dtype=x.dtype, device=x.device)
            return out.scatter_reduce(0, idx, x, reduce="amax", include_self=False)
        import cupyx

        xp = get_namespace(x)
        out = xp.full((self.n_groups,), -xp.inf, dtype=x.dtype)
        cupyx.scatter_max(out, self._index("row_group", x), x)
        return out

    def broadcast(self, v):
        """Per-group values ``v`` repeated onto the rows (grouped order)."""
        if isinstance(v, np.ndarray):  # the same values; np.repeat is faster than a gather
            return np.repeat(v, self.sizes, axis=0)
        return v[self._index("row_group", v), ...]

    def mean_per_group(self, x):
        """Per-group mean of per-row values."""
        s = self.sum(x)
        return s / self._index("sizes", s)

    # -- pairs ---------------------------------------------------------------------------
    def pairs(self):
        """All within-group pairs ``i < j`` (grouped-order row indices).

        Returns ``(i, j, pair_group)`` as int64 NumPy arrays of length ``Σ n_g (n_g - 1) / 2``.
        Built with one vectorised step per distinct group size (not per query) and cached.
        """
        hit = self._pair_cache.get("all")
        if hit is not None:
            return hit
        i_parts, j_parts, g_parts = [], [], []
        sizes = self.sizes
        for m in np.unique(sizes):
            if m < 2:
                continue
            gsel = np.flatnonzero(sizes == m)
            ti, tj = np.triu_indices(int(m), 1)
            base = self.offsets[gsel][:, None]
            i_parts.append((base + ti[None, :]).reshape(-1))
            j_parts.append((base + tj[None, :]).reshape(-1))
            g_parts.append(np.repeat(gsel, ti.size))
        if i_parts:
            i = np.concatenate(i_parts)
            j = np.concatenate(j_parts)
            g = np.concatenate(g_parts)
            order = np.argsort(g, kind="stable")
            out = (i[order], j[order], g[order])
        else:
            empty = np.zeros(0, dtype=np.int64)
            out = (empty, empty, empty)
        self._pair_cache["all"] = out
        return out

    def n_pairs(self) -> int:
        """Number of within-group pairs ``Σ n_g (n_g - 1) / 2``."""
        return int(np.sum(self.sizes * (self.sizes - 1) // 2))


def _host_vector(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "to_numpy") and not is_numpy(x) and not is_torch(x):
        x = x.to_numpy()  # polars / pandas Series
    v = to_numpy(x)
    if v.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; got shape {v.shape}")
    return v


def as_groups(
    group: Any = None,
    n_rows: int | None = None,
    *,
    qid: Any = None,
    require_contiguous: bool = False,
) -> Groups:
    """Query groups from query *sizes* (``group``) or per-row query *ids* (``qid``).

    The two keywords follow the ecosystem: ``group`` are query sizes as LightGBM takes them,
    ``qid`` one query id per row as XGBoost takes them. Nothing is guessed from an array's
    length: ``group=np.ones(n)`` is ``n`` one-row queries, and an array that is not a valid
    list of sizes is refused with a message naming ``qid=``.

    Parameters
    ----------
    group : Groups or array-like of int, optional
        A :class:`Groups` object (used as is; its row count is checked) or query sizes,
        positive and adding up to ``n_rows``.
    n_rows : int
        Number of rows in the data.
    qid : array-like, optional
        One query id per row (any numeric or string values). Rows of a query need not be
        adjacent unless ``require_contiguous`` is set.
    require_contiguous : bool
        Refuse query ids whose rows are not adjacent (what LightGBM and XGBoost need).

    Returns
    -------
    Groups
        With neither ``group`` nor ``qid``: all rows form one query.

    Raises
    ------
    ValueError
        Both ``group`` and ``qid`` given; sizes that are not positive whole numbers adding up
        to ``n_rows`` (the message suggests ``qid=`` when the array has one value per row);
        ids of the wrong length, not finite, or not contiguous when that is required.

    Examples
    --------
    >>> as_groups([2, 3], 5).sizes
    array([2, 3])
    >>> as_groups(qid=[7, 7, 9, 9, 9], n_rows=5).sizes
    array([2, 3])
    >>> as_groups([1, 1, 1], 3).n_groups   # three one-row queries
    3
    """
    if n_rows is None:
        raise TypeError("as_groups() needs `n_rows`, the number of rows of the data")
    n_rows = int(n_rows)
    if group is not None and qid is not None:
        raise ValueError(
            "give either `group` (query sizes) or `qid` (one query id per row), not both"
        )
    if qid is not None:
        q = _host_vector(qid, "qid")
        if q.size != n_rows:
            raise ValueError(
                f"`qid` must hold one query id per row, {n_rows} values; got {q.size}"
                + ("; for query sizes pass group=" if q.size < n_rows else "")
            )
        return Groups.from_ids(q, require_contiguous=require_contiguous)
    if isinstance(group, Groups):
        if group.n_rows != n_rows:
            raise ValueError(
                f"`group` describes {group.n_rows} rows but the data has {n_rows} rows"
            )
        return group
    if group is None:
        return Groups(np.array([n_rows], dtype=np.int64))
    g = _host_vector(group, "group")
    try:
        return Groups.from_sizes(g, n_rows)
    except ValueError as exc:
        if g.size == n_rows and n_rows > 0:
            raise ValueError(
                f"{exc}; `group` holds query sizes (adding up to n_rows={n_rows}) and this array has one "
                "value per row: for per-row query ids pass qid= instead"
            ) from None
        raise


class DenseLists:
    """Reducer over the last axis of a dense ``[n, K]`` array, with the :class:`Groups` API.

    Lets one implementation of the composite softmax serve multi-class ``[n, K]`` arrays
    (:class:`DenseLists`) and ragged query lists (:class:`Groups`): ``sum`` and ``max``
    return one value per list, ``broadcast`` spreads per-list values back onto elements.
    """

    def sum(self, x):
        xp = get_namespace(x)
        return xp.sum(x, axis=-1)

    def max(self, x):
        xp = get_namespace(x)
        return xp.max(x, axis=-1)

    def broadcast(self, v):
        return v[..., None]
