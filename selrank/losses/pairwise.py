r"""Pairwise (contrastive) selective matching loss over document pairs of each query."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _array as A
from .. import fast
from .._array import Array
from .._groups import Groups
from .._numba import installed as _numba_installed
from .._numba import pair_work, use_kernel
from ..links import Link, Sinh, get_link
from ._base import (
    BoundLoss,
    Loss,
    as_target_array,
    bind_groups,
    check_target,
    group_weights,
    refuse_other_family,
)

__all__ = ["Pairwise", "PAIR_METHODS", "scatter_add"]

#: Pair selection of :class:`Pairwise` (XGBoost's ``lambdarank_pair_method`` and ``"all"``).
PAIR_METHODS = ("all", "topk", "mean")
#: ``num_pair_per_sample`` when not given: XGBoost's defaults (truncation 32 for top-k, one
#: partner per document for mean).
DEFAULT_NUM_PAIR = {"topk": 32, "mean": 1}


def scatter_add(index: Array, values: Array, n: int, like: Array) -> Array:
    """``out[index[k]] += values[k]`` into a length-``n`` array of ``like``'s namespace."""
    if A.is_numpy(values):
        return np.bincount(index, weights=values, minlength=n).astype(values.dtype, copy=False)
    if A.is_torch(values):
        import torch

        idx = index if torch.is_tensor(index) else torch.as_tensor(index, device=values.device)
        out = torch.zeros(n, dtype=values.dtype, device=values.device)
        return out.index_add(0, idx, values)
    import cupyx

    xp = A.get_namespace(values)
    out = xp.zeros(n, dtype=values.dtype)
    cupyx.scatter_add(out, xp.asarray(index), values)
    return out


class Pairwise(Loss):
    r"""Pairwise matching loss: score differences of document pairs matched with a link.

    For every pair of documents :math:`(a, b)` of one query, oriented so that the target
    difference :math:`d_{ab} = s_a - s_b \ge 0`, the predicted difference
    :math:`\hat d_{ab} = \hat s_a - \hat s_b` is matched to it with the scalar matching loss
    of the link (docs/math.md §4):

    .. math::
        L_q = \sum_{(a,b)} H(\hat d_{ab}) - H(d_{ab}) - (\hat d_{ab} - d_{ab})\,h(d_{ab}),
        \qquad g_a = \sum_b h(\hat d_{ab}) - h(d_{ab}) - \sum_{b'} \ldots

    Gradients accumulate per document (LambdaMART-style): each pair adds
    :math:`h(\hat d) - h(d)` to its upper document and subtracts it from the lower one; the
    Hessian diagonal adds :math:`h'(\hat d)` to both. A high-norm link (capped ``sinh``,
    the default) emphasises large differences and discounts small ones, which may be label
    noise; an odd link makes the loss independent of pair orientation.

    Parameters
    ----------
    link : Link, str or callable
        Default ``Sinh(cap=3.0)``. Keyword parameters build a link given by name.
    pairs : {"all", "distinct"}
        ``"all"`` includes pairs with equal targets (matched to a zero difference);
        ``"distinct"`` only pairs whose targets differ (as LambdaMART).
    pair_method : {"all", "topk", "mean"}
        Which pairs of a query enter the loss, with the meaning of XGBoost's
        ``lambdarank_pair_method`` (deep lists: a query of ``n`` documents has ``n(n-1)/2``
        pairs):

        * ``"all"`` (default): every pair.
        * ``"topk"``: the pairs whose better-ranked document is among the first ``k`` of the
          query's *current* ranking by ``y_pred`` (ties in ``y_pred``: the earlier row ranks
          first), each unordered pair once: about ``k·n`` pairs. With ``k >= n - 1`` these
          are all pairs.
        * ``"mean"``: each document draws ``m`` partners uniformly from the other documents
          of its query (with ``pairs="distinct"``: from those with a different target, as
          XGBoost does), ``n·m`` pairs (a pair drawn twice counts twice). Each
          :meth:`~selrank.losses.BoundLoss.grad_hess` call (a boosting round) draws afresh;
          draw ``t`` of a binding is a pure function of ``seed`` and ``t`` (reproducible,
          independent of threads and of the path that computes it).

        The loss and its gradient are those of the selected pairs (not rescaled).
    num_pair_per_sample : int, optional
        ``k`` for ``"topk"`` (default 32) or ``m`` for ``"mean"`` (default 1), as XGBoost's
        ``lambdarank_num_pair_per_sample``. Not used by ``"all"``.
    seed : int
        Seed of the ``"mean"`` draws.
    target : {"score"}
        Pairwise targets are per-document scores.

    Notes
    -----
    The loss is invariant to adding a constant to all scores of a query, so
    :meth:`optimal_constant` is 0. The unit of the loss is a query: ``reduction="none"``
    returns one summed pair loss per query; per-row ``sample_weight`` is averaged within each
    query. Pairs are enumerated once per :meth:`bind` (vectorised per distinct query size)
    and kept: memory is about 40 bytes per pair. For NumPy float64 predictions, grouped rows
    and the identity, exp, sinh and sigmoid links, :meth:`~selrank.losses.BoundLoss.grad_hess`
    runs a numba kernel (:mod:`selrank.fast`) that walks the pairs without storing
    them (the pair arrays are then built only if another path needs them). The sampled
    methods never enumerate all pairs: the kernel walks the selected ones, and the generic
    path builds index arrays for the selected pairs only (about ``k·n`` or ``m·n`` per query).
    :meth:`_BoundPairwise.selected_pairs` returns the pairs a call will use.

    Examples
    --------
    >>> import numpy as np
    >>> loss = Pairwise("identity")
    >>> y = np.array([2.0, 0.0, 1.0]); s = np.array([0.0, 0.0, 0.0])
    >>> g, h = loss.grad_hess(s, y, group=[3])
    >>> g.tolist(), h.tolist()   # identity: g_a = sum_b (d_hat - d)
    ([-3.0, 3.0, 0.0], [2.0, 2.0, 2.0])
    """

    name = "pairwise"
    structure = "group"
    separable = True  # whole queries: the GBDT objective may bind query-aligned blocks
    examples = [
        {},
        {"link": "identity"},
        {"link": "sigmoid", "pairs": "distinct"},
        {"link": "exp", "alpha": 0.5, "pairs": "distinct"},
        {"link": "sinh", "cap": 1.0, "cap_mode": "flat"},
    ]

    def __init__(
        self,
        link: Link | str | None = None,
        *,
        pairs: str = "all",
        pair_method: str = "all",
        num_pair_per_sample: int | None = None,
        seed: int = 0,
        target: str = "score",
        **link_params: Any,
    ) -> None:
        refuse_other_family("Pairwise", "link", link_params)
        if link is None:
            link = Sinh(cap=3.0) if not link_params else get_link("sinh", **link_params)
            link_params = {}
        self.link = get_link(link, **link_params)
        if pairs not in ("all", "distinct"):
            raise ValueError(f"`pairs` of Pairwise must be 'all' or 'distinct'; got {pairs!r}")
        self.pairs = pairs
        if pair_method not in PAIR_METHODS:
            raise ValueError(
                f"`pair_method` of Pairwise must be one of {PAIR_METHODS}; got {pair_method!r}"
            )
        self.pair_method = pair_method
        self.num_pair_per_sample = _check_num_pair(pair_method, num_pair_per_sample)
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise TypeError(f"`seed` of Pairwise must be an integer; got {type(seed).__name__}")
        if seed < 0:
            raise ValueError(f"`seed` of Pairwise must be >= 0; got {seed!r}")
        self.seed = int(seed)
        self.target = check_target(target, "Pairwise", ("score",))
        self._params = {
            "link": self.link,
            "pairs": pairs,
            "pair_method": pair_method,
            "num_pair_per_sample": self.num_pair_per_sample,
            "seed": self.seed,
            "target": target,
        }

    def _bind(self, y_true, *, group=None, sample_weight=None) -> _BoundPairwise:
        y = as_target_array(y_true)
        if y.ndim != 1:
            raise ValueError(
                f"`y_true` of a pairwise loss must be 1-D (one score per document); got shape {tuple(y.shape)}"
            )
        n = int(y.shape[0])
        groups = bind_groups(group, n, f"{type(self).__name__} (a pairwise loss)")
        wg = group_weights(groups, sample_weight)
        return _BoundPairwise(self, y, groups, wg)

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, group: Array | None = None
    ) -> float:
        """0: the loss only sees score differences within a query."""
        as_target_array(y_true)
        return 0.0


def _check_num_pair(method: str, value) -> int | None:
    if method == "all":
        if value is not None:
            raise ValueError(
                f"`num_pair_per_sample` of Pairwise is used only with pair_method 'topk' or 'mean'; "
                f"got {value!r} with pair_method 'all'"
            )
        return None
    if value is None:
        return DEFAULT_NUM_PAIR[method]
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(
            f"`num_pair_per_sample` of Pairwise must be a positive integer; got {type(value).__name__}"
        )
    if value < 1:
        raise ValueError(
            f"`num_pair_per_sample` of Pairwise must be a positive integer; got {value!r}"
        )
    return int(value)


def _grouped_numpy(y_pred, groups) -> np.ndarray:
    """Predictions as float64 NumPy in grouped order (for choosing pairs: no gradient flows)."""
    if A.is_torch(y_pred):  # bfloat16 has no NumPy dtype
        import torch

        y_pred = y_pred.detach().to(dtype=torch.float64)
    return np.asarray(groups.to_grouped(A.to_numpy(y_pred)), dtype=np.float64)


def topk_pairs(pred_grouped: np.ndarray, groups, k: int, cache: dict | None = None):
    """Grouped-order pairs ``(i, j, pair_group)`` of ``pair_method="topk"``: ``i`` is ranked
    ``r < k`` by ``pred_grouped`` within its query (ties: the earlier row first) and ``j`` any
    document ranked below it. Vectorised per distinct query size; the position templates are
    cached in ``cache``."""
    n = pred_grouped.shape[0]
    order = np.lexsort((np.arange(n), -pred_grouped, groups.row_group))
    hit = None if cache is None else cache.get(("topk", k))
    if hit is None:
        li: list[np.ndarray] = []
        lj: list[np.ndarray] = []
        lg: list[np.ndarray] = []
        sizes = groups.sizes
        for m in np.unique(sizes):
            if m < 2:
                continue
            gsel = np.flatnonzero(sizes == m)
            ti, tj = np.triu_indices(int(m), 1)
            keep = ti < k
            ti, tj = ti[keep], tj[keep]
            base = groups.offsets[gsel][:, None]
            li.append((base + ti[None, :]).reshape(-1))
            lj.append((base + tj[None, :]).reshape(-1))
            lg.append(np.repeat(gsel, ti.size))
        empty = np.zeros(0, dtype=np.int64)
        hit = (
            (np.concatenate(li), np.concatenate(lj), np.concatenate(lg))
            if li
            else (empty, empty, empty)
        )
        if cache is not None:
            cache[("topk", k)] = hit
    ri, rj, rg = hit
    return order[ri], order[rj], rg


def target_runs(y_grouped: np.ndarray, groups):
    """Rows in target order within each query (``ysort``) and, per row, its run of equal
    targets ``[blo, bhi)`` as positions in that order relative to the query start."""
    n = y_grouped.shape[0]
    rg = groups.row_group
    ysort = np.lexsort((np.arange(n), y_grouped, rg))
    ys, gs = y_grouped[ysort], rg[ysort]
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = (ys[1:] != ys[:-1]) | (gs[1:] != gs[:-1])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)
    run = np.cumsum(new) - 1
    first = groups.offsets[gs]
    blo = np.empty(n, dtype=np.int64)
    bhi = np.empty(n, dtype=np.int64)
    blo[ysort] = starts[run] - first
    bhi[ysort] = ends[run] - first
    return ysort.astype(np.int64), blo, bhi


def mean_pairs(groups, m: int, key, distinct: bool, runs=None):
    """Grouped-order pairs ``(i, j, pair_group)`` of ``pair_method="mean"``: row ``i``'s
    ``t``-th partner ``j`` is drawn with splitmix64 from ``key`` (:func:`selrank.fast.draw_key`),
    uniformly over the other rows of its query (``distinct``: those with another target;
    ``runs`` from :func:`target_runs`). The same draws as the numba kernel."""
    n = groups.n_rows
    rows = np.repeat(np.arange(n, dtype=np.int64), m)
    t = np.tile(np.arange(m, dtype=np.int64), n)
    rg = groups.row_group[rows]
    start = groups.offsets[rg]
    size = groups.sizes[rg]
    p = rows - start
    if distinct:
        ysort, blo, bhi = runs
        lo, run = blo[rows], bhi[rows] - blo[rows]
    else:
        lo, run = np.zeros_like(rows), np.ones_like(rows)
    c = size - run
    keep = c > 0
    rows, t, rg, start, p, lo, run, c = (x[keep] for x in (rows, t, rg, start, p, lo, run, c))
    with np.errstate(over="ignore"):
        u = fast.mix64(np.uint64(key) + (rows * m + t).astype(np.uint64) * fast.GOLDEN)
    r = (u % c.astype(np.uint64)).astype(np.int64)
    if distinct:
        partner = runs[0][start + np.where(r < lo, r, r + run)]
    else:
        partner = start + np.where(r < p, r, r + 1)
    return rows, partner, rg


class _BoundPairwise(BoundLoss):
    """A bound :class:`Pairwise` loss.

    Attributes
    ----------
    draw : int
        The draw of ``pair_method="mean"`` that the next call uses; every
        :meth:`grad_hess` advances it by one.
    """

    groups: Groups  # a pairwise loss is always bound to query groups

    def __init__(self, loss: Pairwise, y, groups, wg):
        super().__init__(loss, int(y.shape[0]), wg, groups)
        self.link = loss.link
        self.distinct = loss.pairs == "distinct"
        self.method = loss.pair_method
        self.num_pair: int = loss.num_pair_per_sample or 0  # (set for "topk" / "mean")
        self.seed = loss.seed
        self.draw = 0
        self.y_np = np.asarray(A.to_numpy(y), dtype=np.float64)
        self._pairs: dict | None = None
        self._idx_cache: dict = {}
        self._sel_cache: dict = {}
        self._runs = None
        if self.method == "mean" and self.distinct:
            self._runs = target_runs(groups.to_grouped(self.y_np), groups)
        # numba fast path for NumPy predictions: pairs are walked on the fly, none are stored
        self._target_grad: np.ndarray | None = None
        self._kernel = self._kernel_params(y, groups)
        # pairs of one call: the kernel runs once the generic path has done a compile's worth
        # of them, or at once past the pair cap (selrank._numba.use_kernel, the kernel policy)
        self._work = pair_work(groups.sizes, self.method, self.num_pair)
        if self._kernel is None and self.method == "all":
            self._build_pairs()

    def _kernel_params(self, y, groups) -> tuple | None:
        """The numba kernel's link parameters (:mod:`selrank.fast`) where it serves this
        binding (NumPy targets in grouped order, a registered link, numba installed), else
        None: the generic path. This loss's one dispatch decision; a link without the
        kernel is reported once (:class:`selrank.fast.FastPathWarning`)."""
        # numba is imported when the kernel first runs (selrank._numba.use_kernel decides)
        if not (_numba_installed() and groups.perm is None and A.is_numpy(y)):
            return None
        if fast.lookup(self.link, "pairwise", "numba") is None:
            return None
        return fast.kernel_link(self.link)

    def _build_pairs(self) -> dict:
        """Enumerate the oriented pairs once (generic path; lazily when the kernel serves NumPy)."""
        if self._pairs is not None:
            return self._pairs
        y_np, groups = self.y_np, self.groups
        i, j, pg = groups.pairs()
        if groups.perm is not None:  # pair indices are in grouped order: back to caller rows
            i, j = groups.perm[i], groups.perm[j]
        swap = y_np[i] < y_np[j]
        a = np.where(swap, j, i)
        b = np.where(swap, i, j)
        d = y_np[a] - y_np[b]
        if self.distinct:
            keep = d > 0
            a, b, d, pg = a[keep], b[keep], d[keep], pg[keep]
        hd = np.asarray(A.to_numpy(self.link.h(d)), dtype=np.float64)
        pw = None if self.unit_weight is None else self.unit_weight[pg]
        self._pairs = {"a": a, "b": b, "pair_group": pg, "d": d, "hd": hd, "pair_weight": pw}
        return self._pairs

    a = property(lambda self: self._build_pairs()["a"])
    b = property(lambda self: self._build_pairs()["b"])
    pair_group = property(lambda self: self._build_pairs()["pair_group"])
    d = property(lambda self: self._build_pairs()["d"])
    hd = property(lambda self: self._build_pairs()["hd"])
    pair_weight = property(lambda self: self._build_pairs()["pair_weight"])

    @property
    def n_pairs(self) -> int:
        """Within-query pairs of the binding (all of them, or those with distinct targets);
        ``"topk"`` and ``"mean"`` select from these at each call (:meth:`selected_pairs`)."""
        if self._pairs is not None:
            return int(self._pairs["a"].size)
        total = self.groups.n_pairs()
        if not self.distinct:
            return total
        # pairs with equal targets: per (query, target value) c (c - 1) / 2
        rows = np.column_stack([self.groups.row_group, self.y_np])
        _, counts = np.unique(rows, axis=0, return_counts=True)
        return int(total - np.sum(counts * (counts - 1) // 2))

    def _index(self, name, like):
        arr = getattr(self, name)
        if A.is_numpy(like):
            return arr
        key = (name, str(getattr(like, "device", "")))
        hit = self._idx_cache.get(key)
        if hit is None:
            if A.is_torch(like):
                import torch

                hit = torch.as_tensor(arr, device=like.device)
            else:
                hit = A.get_namespace(like).asarray(arr)
            self._idx_cache[key] = hit
        return hit

    def _pred_diff(self, y_pred):
        y_pred = self._check_pred(y_pred, (self.n_rows,))
        return y_pred, y_pred[self._index("a", y_pred)] - y_pred[self._index("b", y_pred)]

    # -- pair selection (pair_method "topk" / "mean") ----------------------------------------
    def _selection(self, y_pred) -> dict:
        """The oriented pairs of the current call, in caller rows (generic path)."""
        groups = self.groups
        if self.method == "topk":
            i, j, pg = topk_pairs(
                _grouped_numpy(y_pred, groups), groups, self.num_pair, self._sel_cache
            )
        else:
            i, j, pg = mean_pairs(
                groups,
                self.num_pair,
                fast.draw_key(self.seed, self.draw),
                self.distinct,
                self._runs,
            )
        yg = groups.to_grouped(self.y_np)
        # orientation: y_a >= y_b, ties: the earlier row first (as for all pairs)
        swap = (yg[i] < yg[j]) | ((yg[i] == yg[j]) & (i > j))
        a, b = np.where(swap, j, i), np.where(swap, i, j)
        if self.distinct:
            keep = yg[a] != yg[b]
            a, b, pg = a[keep], b[keep], pg[keep]
        if groups.perm is not None:
            a, b = groups.perm[a], groups.perm[b]
        d = self.y_np[a] - self.y_np[b]
        hd = np.asarray(A.to_numpy(self.link.h(d)), dtype=np.float64)
        pw = None if self.unit_weight is None else self.unit_weight[pg]
        return {"a": a, "b": b, "pair_group": pg, "d": d, "hd": hd, "pair_weight": pw}

    def selected_pairs(self, y_pred):
        """The oriented pairs ``(a, b)`` (caller rows, ``y_a >= y_b``) that a call with
        ``y_pred`` uses now (``"mean"``: the current :attr:`draw`); a pair drawn twice is
        listed twice."""
        sel = self._build_pairs() if self.method == "all" else self._selection(y_pred)
        return sel["a"], sel["b"]

    def _device(self, sel: dict, name: str, like):
        arr = sel[name]
        if arr is None or A.is_numpy(like):
            return arr
        if name in ("a", "b", "pair_group"):
            if A.is_torch(like):
                import torch

                return torch.as_tensor(arr, device=like.device)
            return A.get_namespace(like).asarray(arr)
        return A.as_float_array(arr, like=like, name=name)

    def _values(self, y_pred):
        if self.method != "all":
            y_pred = self._check_pred(y_pred, (self.n_rows,))
            sel = self._selection(y_pred)
            a, b = self._device(sel, "a", y_pred), self._device(sel, "b", y_pred)
            pair_loss = self.link.bregman(y_pred[a] - y_pred[b], self._device(sel, "d", y_pred))
            return scatter_add(
                self._device(sel, "pair_group", y_pred), pair_loss, self.groups.n_groups, y_pred
            )
        y_pred, dhat = self._pred_diff(y_pred)
        pair_loss = self.link.bregman(dhat, self._like("d", self.d, y_pred))
        return scatter_add(
            self._index("pair_group", y_pred), pair_loss, self.groups.n_groups, y_pred
        )

    def _grad_hess(self, y_pred):
        try:
            return self._grad_hess_now(y_pred)
        finally:
            self.draw += 1  # "mean": the next call draws afresh

    def _grad_hess_now(self, y_pred):
        kernel = "pairwise" if self.method == "all" else "pairwise_sampled"
        if (
            self._kernel is not None
            and A.is_numpy(y_pred)
            and use_kernel(kernel, self.draw, self._work)
            and fast.available()
        ):
            y_np = self._check_pred(y_pred, (self.n_rows,))
            if y_np.dtype == np.float64:
                offsets, qw = self.groups.offsets, self.unit_weight
                if self.method != "all":
                    return fast.pairwise_sampled(
                        y_np,
                        self.y_np,
                        offsets,
                        qw,
                        self.distinct,
                        self._kernel,
                        self.method,
                        self.num_pair,
                        fast.draw_key(self.seed, self.draw),
                        self._runs,
                    )
                if self._target_grad is None:  # the targets' part of the gradient, once per binding
                    self._target_grad = fast.pairwise_target_grad(
                        self.y_np, offsets, qw, self.distinct, self._kernel
                    )
                return fast.pairwise_grad_hess(
                    y_np, self.y_np, offsets, qw, self.distinct, self._kernel, self._target_grad
                )
        if self.method != "all":
            y_pred = self._check_pred(y_pred, (self.n_rows,))
            sel = self._selection(y_pred)
            a, b = self._device(sel, "a", y_pred), self._device(sel, "b", y_pred)
            hd, w = self._device(sel, "hd", y_pred), self._device(sel, "pair_weight", y_pred)
            dhat = y_pred[a] - y_pred[b]
        else:
            y_pred, dhat = self._pred_diff(y_pred)
            a, b = self._index("a", y_pred), self._index("b", y_pred)
            hd = self._like("hd", self.hd, y_pred)
            w = self._like("pair_weight", self.pair_weight, y_pred)
        h, dh = self.link.h_dh(dhat)
        g = h - hd
        if w is not None:
            g, dh = g * w, dh * w
        n = self.n_rows
        grad = scatter_add(a, g, n, y_pred) - scatter_add(b, g, n, y_pred)
        hess = scatter_add(a, dh, n, y_pred) + scatter_add(b, dh, n, y_pred)
        return grad, hess
