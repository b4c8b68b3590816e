r"""Pairwise (contrastive) selective matching loss over document pairs of each query."""

from __future__ import annotations

import numpy as np

from .. import _array as A
from ..links import Link, Sinh, get_link
from . import _kernels
from ._base import BoundLoss, Loss, as_target_array, bind_groups, check_target, group_weights

__all__ = ["Pairwise", "scatter_add"]


def scatter_add(index, values, n: int, like):
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
    of the link (MATH.md §4):

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
    runs a numba kernel (:mod:`selrank.losses._kernels`) that walks the pairs without storing
    them (the pair arrays are then built only if another path needs them).

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
    examples = [
        {},
        {"link": "identity"},
        {"link": "sigmoid", "pairs": "distinct"},
        {"link": "exp", "alpha": 0.5, "pairs": "distinct"},
        {"link": "sinh", "cap": 1.0, "cap_mode": "flat"},
    ]

    def __init__(self, link: Link | str | None = None, *, pairs: str = "all", target: str = "score", **link_params):
        if link is None:
            link = Sinh(cap=3.0) if not link_params else get_link("sinh", **link_params)
            link_params = {}
        self.link = get_link(link, **link_params)
        if pairs not in ("all", "distinct"):
            raise ValueError(f"`pairs` of Pairwise must be 'all' or 'distinct'; got {pairs!r}")
        self.pairs = pairs
        self.target = check_target(target, "Pairwise", ("score",))
        self._params = {"link": self.link, "pairs": pairs, "target": target}

    def bind(self, y_true, *, group=None, sample_weight=None) -> _BoundPairwise:
        y = as_target_array(y_true)
        if y.ndim != 1:
            raise ValueError(f"`y_true` of a pairwise loss must be 1-D (one score per document); got shape {tuple(y.shape)}")
        n = int(y.shape[0])
        groups = bind_groups(group, n)
        wg = group_weights(groups, sample_weight)
        return _BoundPairwise(self, y, groups, wg)

    def optimal_constant(self, y_true, sample_weight=None, *, group=None) -> float:
        """0: the loss only sees score differences within a query."""
        as_target_array(y_true)
        return 0.0


class _BoundPairwise(BoundLoss):
    def __init__(self, loss: Pairwise, y, groups, wg):
        super().__init__(loss, int(y.shape[0]), wg, groups)
        self.link = loss.link
        self.distinct = loss.pairs == "distinct"
        self.y_np = np.asarray(A.to_numpy(y), dtype=np.float64)
        self._pairs: dict | None = None
        self._idx_cache: dict = {}
        # numba fast path for NumPy predictions: pairs are walked on the fly, none are stored
        self._kernel = None
        self._target_grad = None
        if _kernels.available() and groups.perm is None and A.is_numpy(y):
            self._kernel = _kernels.kernel_link(self.link)
        if self._kernel is None:
            self._build_pairs()

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
        if self._pairs is not None:
            return int(self._pairs["a"].size)
        total = self.groups.n_pairs()
        if not self.distinct:
            return total
        # pairs with equal targets: per (query, target value) c (c - 1) / 2
        _, counts = np.unique(np.column_stack([self.groups.row_group, self.y_np]), axis=0, return_counts=True)
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

    def _values(self, y_pred):
        y_pred, dhat = self._pred_diff(y_pred)
        pair_loss = self.link.bregman(dhat, self._like("d", self.d, y_pred))
        return scatter_add(self._index("pair_group", y_pred), pair_loss, self.groups.n_groups, y_pred)

    def _grad_hess(self, y_pred):
        if self._kernel is not None and A.is_numpy(y_pred):
            y_np = self._check_pred(y_pred, (self.n_rows,))
            if y_np.dtype == np.float64:
                if self._target_grad is None:  # the targets' part of the gradient, once per binding
                    self._target_grad = _kernels.pairwise_target_grad(self.y_np, self.groups.offsets, self.unit_weight,
                                                                      self.distinct, self._kernel)
                return _kernels.pairwise_grad_hess(y_np, self.y_np, self.groups.offsets, self.unit_weight,
                                                   self.distinct, self._kernel, self._target_grad)
        y_pred, dhat = self._pred_diff(y_pred)
        h, dh = self.link.h_dh(dhat)
        g = h - self._like("hd", self.hd, y_pred)
        w = self._like("pair_weight", self.pair_weight, y_pred)
        if w is not None:
            g, dh = g * w, dh * w
        n, a, b = self.n_rows, self._index("a", y_pred), self._index("b", y_pred)
        grad = scatter_add(a, g, n, y_pred) - scatter_add(b, g, n, y_pred)
        hess = scatter_add(a, dh, n, y_pred) + scatter_add(b, dh, n, y_pred)
        return grad, hess
