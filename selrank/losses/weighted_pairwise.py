r"""Metric-weighted selective pairwise loss: LambdaMART's :math:`|\Delta\mathrm{NDCG}|` pair weights
on a selective matching loss (issue 21).

:class:`WeightedPairwise` scales each pair's matching-loss term by the change of NDCG that
swapping the pair in the *current* ranking would cause (LambdaMART / LambdaLoss weighting),
with LightGBM's truncation and normalisation options. With the sigmoid link and
``target="order"`` its gradient and Hessian are LightGBM's ``lambdarank`` ones; any other
link (the capped ``sinh`` by default) generalises lambdarank with a selective pair loss.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _array as A
from .. import fast
from .._array import Array
from .._groups import Groups
from .._numba import installed as _numba_installed
from .._numba import pair_work, use_kernel
from .._validation import positive_float
from ..links import Link, Sinh, get_link
from ._base import BoundLoss, Loss, as_target_array, bind_groups, check_target, group_weights
from .pairwise import (
    PAIR_METHODS,
    _check_num_pair,
    _grouped_numpy,
    mean_pairs,
    scatter_add,
    topk_pairs,
)

__all__ = ["WeightedPairwise", "PAIR_WEIGHTS", "max_dcg"]

#: Pair weightings of :class:`WeightedPairwise`.
PAIR_WEIGHTS = ("ndcg",)
#: LightGBM's ``lambdarank_truncation_level`` default (the top-k cutoff when none is given).
DEFAULT_TRUNCATION = 30


def discounts(n: int) -> np.ndarray:
    """``1 / log2(2 + r)`` for ranks ``r = 0 .. n-1`` (the DCG discount, as LightGBM)."""
    return 1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0)


def max_dcg(gain_grouped: np.ndarray, groups: Groups, k: int | None) -> np.ndarray:
    """Ideal DCG at ``k`` (all documents when ``None``) per query, from grouped gains."""
    out = np.zeros(groups.n_groups, dtype=np.float64)
    disc = discounts(int(groups.sizes.max()) if groups.n_groups else 0)
    for q in range(groups.n_groups):
        start, stop = int(groups.offsets[q]), int(groups.offsets[q + 1])
        g = np.sort(gain_grouped[start:stop])[::-1]
        m = g.size if k is None else min(k, g.size)
        out[q] = float(np.sum(g[:m] * disc[:m]))
    return out


class WeightedPairwise(Loss):
    r"""Pairwise matching loss with LambdaMART's :math:`|\Delta\mathrm{NDCG}|` pair weights.

    For the pairs ``(a, b)`` of a query with ``y_a > y_b`` (pairs with equal targets have a
    zero weight and are skipped), ranked at positions ``r_a``, ``r_b`` by the current scores
    (ties: the earlier row first), the pair's matching-loss term (:class:`Pairwise`) is scaled
    by the NDCG change of swapping the two:

    .. math::
        w_{ab} = \frac{|G(y_a) - G(y_b)|\,|D(r_a) - D(r_b)|}{\mathrm{maxDCG@}k},
        \qquad G(y) = 2^y - 1, \quad D(r) = 1/\log_2(2 + r),

    held fixed while differentiating (as LambdaMART does). Each pair adds
    :math:`w_{ab}\,(h(\hat d_{ab}) - h(d_{ab}))` to the upper document's gradient, subtracts it
    from the lower one's, and adds :math:`w_{ab}\,h'(\hat d_{ab})` to both Hessians.

    With ``norm=True`` (LightGBM's ``lambdarank_norm``) each weight is divided by
    :math:`0.01 + |\hat d_{ab}|` (when the query's scores are not all equal) and the query's
    gradient and Hessian are multiplied by :math:`\log_2(1 + S)/S`, :math:`S` the sum of the
    absolute pair gradients times 2.

    With ``link="sigmoid"`` (``alpha = 1``) and ``target="order"`` each pair's term is
    RankNet's logistic loss :math:`\log(1 + e^{-\hat d_{ab}})` and the gradient and Hessian
    are those of LightGBM's ``lambdarank`` objective (``sigmoid=1``, the same truncation and
    ``lambdarank_norm``; ``tests/test_h21_weighted_pairwise.py`` checks it against LightGBM).
    With ``alpha = σ`` they are lambdarank's with ``sigmoid=σ`` divided by σ when
    ``norm=False``.

    Parameters
    ----------
    link : Link, str or callable
        Default ``Sinh(cap=3.0)`` (as :class:`Pairwise`). Keyword parameters build a link by name.
    weights : {"ndcg"}
        The pair weighting: :math:`|\Delta\mathrm{NDCG}|` at the current ranking.
    pair_method : {"topk", "all", "mean"}
        ``"topk"`` (default): LightGBM's truncation — the pairs whose better-ranked document is
        among the first ``k`` of the current ranking, and maxDCG at ``k``. ``"all"``: every
        pair, maxDCG over the whole list. ``"mean"``: ``m`` partners drawn per document as
        :class:`Pairwise` does (``pairs="all"`` draws), maxDCG over the whole list.
    num_pair_per_sample : int, optional
        ``k`` of ``"topk"`` (default 30, LightGBM's ``lambdarank_truncation_level``) or ``m``
        of ``"mean"`` (default 1).
    norm : bool
        LightGBM's ``lambdarank_norm`` (default True).
    gain_scale : float
        The gain is :math:`G(y) = 2^{y / \mathrm{gain\_scale}} - 1`: with targets
        ``label_scale * label`` (as :class:`~selrank.estimators.SelectiveRanker` makes them;
        it passes its ``label_scale`` here unless given) the gains are the labels' ``2^label - 1``.
    target : {"score", "order"}
        ``"score"``: the predicted difference is matched to the target difference
        :math:`d_{ab} = y_a - y_b`. ``"order"``: to the link's supremum (probability 1 for
        the sigmoid: RankNet); only for links whose range is bounded above.
    seed : int
        Seed of the ``"mean"`` draws.

    Examples
    --------
    >>> import numpy as np
    >>> loss = WeightedPairwise("sigmoid", target="order", norm=False)
    >>> g, h = loss.grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), group=[3])
    >>> [round(v, 4) for v in g.tolist()]
    [-0.2902, 0.1705, 0.1197]
    """

    name = "weighted_pairwise"
    structure = "group"
    separable = True
    examples = [
        {},
        {"link": "sigmoid", "target": "order"},
        {"link": "identity", "pair_method": "all", "norm": False},
        {"link": "sinh", "cap": 2.0, "pair_method": "topk", "num_pair_per_sample": 2},
    ]

    def __init__(
        self,
        link: Link | str | None = None,
        *,
        weights: str = "ndcg",
        pair_method: str = "topk",
        num_pair_per_sample: int | None = None,
        norm: bool = True,
        target: str = "score",
        gain_scale: float = 1.0,
        seed: int = 0,
        **link_params: Any,
    ) -> None:
        if link is None:
            link = Sinh(cap=3.0) if not link_params else get_link("sinh", **link_params)
            link_params = {}
        self.link = get_link(link, **link_params)
        if weights not in PAIR_WEIGHTS:
            raise ValueError(
                f"`weights` of WeightedPairwise must be one of {PAIR_WEIGHTS}; got {weights!r}"
            )
        self.weights = weights
        if pair_method not in PAIR_METHODS:
            raise ValueError(
                f"`pair_method` of WeightedPairwise must be one of {PAIR_METHODS}; got {pair_method!r}"
            )
        self.pair_method = pair_method
        if pair_method == "topk" and num_pair_per_sample is None:
            num_pair_per_sample = DEFAULT_TRUNCATION
        try:
            self.num_pair_per_sample = _check_num_pair(pair_method, num_pair_per_sample)
        except (TypeError, ValueError) as exc:
            raise type(exc)(str(exc).replace("of Pairwise", "of WeightedPairwise")) from None
        if not isinstance(norm, bool | np.bool_):
            raise TypeError(f"`norm` of WeightedPairwise must be a bool; got {norm!r}")
        self.norm = bool(norm)
        self.target = check_target(target, "WeightedPairwise", ("score", "order"))
        # "order": RankNet's pair loss, minimised only at infinite differences
        self.is_matching = self.target == "score"
        self.gain_scale = positive_float(gain_scale, "gain_scale", "WeightedPairwise")
        if self.target == "order" and not math.isfinite(self.link.range[1]):
            raise ValueError(
                f"target='order' of WeightedPairwise needs a link bounded above (e.g. 'sigmoid'); "
                f"{self.link!r} has range {self.link.range}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"`seed` of WeightedPairwise must be an integer >= 0; got {seed!r}")
        self.seed = int(seed)
        self._params = {
            "link": self.link,
            "weights": weights,
            "pair_method": pair_method,
            "num_pair_per_sample": self.num_pair_per_sample,
            "norm": self.norm,
            "target": target,
            "gain_scale": self.gain_scale,
            "seed": self.seed,
        }

    def _bind(self, y_true, *, group=None, sample_weight=None) -> _BoundWeightedPairwise:
        y = as_target_array(y_true)
        if y.ndim != 1:
            raise ValueError(
                f"`y_true` of a pairwise loss must be 1-D (one score per document); got shape {tuple(y.shape)}"
            )
        groups = bind_groups(group, int(y.shape[0]))
        return _BoundWeightedPairwise(self, y, groups, group_weights(groups, sample_weight))

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, group: Array | None = None
    ) -> float:
        """0: the loss only sees score differences within a query."""
        as_target_array(y_true)
        return 0.0


class _BoundWeightedPairwise(BoundLoss):
    """A bound :class:`WeightedPairwise` loss (``draw``: the next ``"mean"`` draw)."""

    groups: Groups  # always bound to query groups

    def __init__(self, loss: WeightedPairwise, y, groups, wg):
        super().__init__(loss, int(y.shape[0]), wg, groups)
        self.link = loss.link
        self.method = loss.pair_method
        self.k = loss.num_pair_per_sample
        self.norm = loss.norm
        self.order_target = loss.target == "order"
        self.seed = loss.seed
        self.draw = 0
        self.y_np = np.asarray(A.to_numpy(y), dtype=np.float64)
        self.yg = groups.to_grouped(self.y_np)
        labels = self.yg / loss.gain_scale
        if np.any(labels > 1000.0):
            raise ValueError(
                "`y_true` / gain_scale of WeightedPairwise enters the gain 2**y - 1; got "
                f"{float(labels.max())!r} (above 1000): rescale the targets or set gain_scale"
            )
        self.gain = np.exp2(labels) - 1.0
        mdcg = max_dcg(self.gain, groups, self.k if self.method == "topk" else None)
        self.inv_max_dcg = np.divide(1.0, mdcg, out=np.zeros_like(mdcg), where=mdcg > 0)
        self.sup = float(self.link.range[1]) if self.order_target else 0.0
        self._sel_cache: dict = {}
        self._ranking = np.zeros(self.n_rows, dtype=np.int64)  # the kernel's last ranking
        self._ranked = False
        self._kernel = self._kernel_params(y)
        # pairs of one call, for the kernel policy (selrank._numba.use_kernel)
        self._work = pair_work(groups.sizes, self.method, self.k)

    def _kernel_params(self, y) -> tuple | None:
        """The numba kernel's link parameters (:mod:`selrank.fast`) where it serves this
        binding (NumPy targets, a registered link, numba installed), else None: the generic
        path. This loss's one dispatch decision; a link without the kernel is reported once
        (:class:`selrank.fast.FastPathWarning`)."""
        # numba is imported when the kernel first runs (selrank._numba.use_kernel decides)
        if not (_numba_installed() and A.is_numpy(y)):
            return None
        if fast.lookup(self.link, "weighted_pairwise", "numba") is None:
            return None
        return fast.kernel_link(self.link)

    # -- the pairs of one call and their weights (generic path) ---------------------------
    def _selection(self, y_pred):
        groups = self.groups
        pg_pred = _grouped_numpy(y_pred, groups)
        n = pg_pred.shape[0]
        rg = groups.row_group
        order = np.lexsort((np.arange(n), -pg_pred, rg))
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n) - groups.offsets[rg[order]]
        if self.method == "all":
            i, j, pg = groups.pairs()
        elif self.method == "topk":
            i, j, pg = topk_pairs(pg_pred, groups, self.k or 0, self._sel_cache)  # int here
        else:
            key = fast.draw_key(self.seed, self.draw)
            i, j, pg = mean_pairs(groups, self.k or 0, key, False, None)  # k: an int here
        yg = self.yg
        keep = yg[i] != yg[j]
        i, j, pg = i[keep], j[keep], pg[keep]
        swap = yg[i] < yg[j]
        a, b = np.where(swap, j, i), np.where(swap, i, j)
        disc = discounts(int(groups.sizes.max()))
        w = (
            np.abs(self.gain[a] - self.gain[b])
            * np.abs(disc[pos[a]] - disc[pos[b]])
            * self.inv_max_dcg[pg]
        )
        if self.norm:
            qmax = np.full(groups.n_groups, -np.inf)
            qmin = np.full(groups.n_groups, np.inf)
            np.maximum.at(qmax, rg, pg_pred)
            np.minimum.at(qmin, rg, pg_pred)
            spread = (qmax != qmin)[pg]
            w = np.where(spread, w / (0.01 + np.abs(pg_pred[a] - pg_pred[b])), w)
        d = self.yg[a] - self.yg[b]
        if groups.perm is not None:
            a, b = groups.perm[a], groups.perm[b]
        return a, b, pg, d, w

    def selected_pairs(self, y_pred):
        """The oriented pairs ``(a, b)`` (caller rows, ``y_a > y_b``) and their weights
        :math:`w_{ab}` (before the query normalisation of ``norm``) for ``y_pred`` now."""
        a, b, _, _, w = self._selection(self._check_pred(y_pred, (self.n_rows,)))
        return a, b, w

    def _pair_terms(self, y_pred):
        """Per selected pair: weight, predicted and target difference, gradient term, slope."""
        y_pred = self._check_pred(y_pred, (self.n_rows,))
        a, b, pg, d, w = self._selection(y_pred)
        dev = A.get_namespace(y_pred)
        if A.is_torch(y_pred):
            import torch

            ia = torch.as_tensor(a, device=y_pred.device)
            ib = torch.as_tensor(b, device=y_pred.device)
        else:
            ia, ib = dev.asarray(a), dev.asarray(b)
        dhat = y_pred[ia] - y_pred[ib]
        return y_pred, ia, ib, pg, d, w, dhat

    def _query_factor(self, pg, g_abs_w) -> np.ndarray:
        """``log2(1 + S) / S`` per query (``norm``), 1 elsewhere."""
        nq = self.groups.n_groups
        if not self.norm:
            return np.ones(nq)
        s = 2.0 * np.bincount(pg, weights=g_abs_w, minlength=nq)
        return np.where(s > 0, np.log2(1.0 + s) / np.where(s > 0, s, 1.0), 1.0)

    def _target_h(self, d, like):
        if self.order_target:
            return self.sup
        return A.as_float_array(np.asarray(A.to_numpy(self.link.h(d)), dtype=np.float64), like=like)

    def _values(self, y_pred):
        y_pred, _, _, pg, d, w, dhat = self._pair_terms(y_pred)
        dd = A.as_float_array(d, like=dhat)
        if self.order_target:
            sup = A.get_namespace(dhat).full_like(dhat, self.sup)
            pair_loss = self.link.bregman_link_target(dhat, sup)
        else:
            pair_loss = self.link.bregman(dhat, dd)
        g = np.asarray(A.to_numpy(self.link.h(dhat)), dtype=np.float64) - np.asarray(
            A.to_numpy(self._target_h(d, dhat)), dtype=np.float64
        )
        factor = self._query_factor(pg, np.abs(g) * w)[pg]
        wt = A.as_float_array(w * factor, like=dhat)
        pgt = pg
        if A.is_torch(y_pred):
            import torch

            pgt = torch.as_tensor(pg, device=y_pred.device)
        return scatter_add(pgt, pair_loss * wt, self.groups.n_groups, dhat)

    def _grad_hess(self, y_pred):
        try:
            return self._grad_hess_now(y_pred)
        finally:
            self.draw += 1

    def _grad_hess_now(self, y_pred):
        if (
            self._kernel is not None
            and A.is_numpy(y_pred)
            and use_kernel("weighted_pairwise", self.draw, self._work)
            and fast.available()
        ):
            y_np = self._check_pred(y_pred, (self.n_rows,))
            if y_np.dtype == np.float64:
                groups = self.groups
                g, h = fast.weighted_pairwise(
                    groups.to_grouped(y_np),
                    self.yg,
                    self.gain,
                    groups.offsets,
                    self.unit_weight,
                    self.inv_max_dcg,
                    self._kernel,
                    self.order_target,
                    self.sup,
                    self.method,
                    self.k or 0,
                    fast.draw_key(self.seed, self.draw),
                    self.norm,
                    self._ranking,
                    self._ranked,
                )
                self._ranked = True
                if groups.perm is not None:
                    g, h = g[groups.inv_perm], h[groups.inv_perm]
                return g, h
        y_pred, ia, ib, pg, d, w, dhat = self._pair_terms(y_pred)
        hh, dh = self.link.h_dh(dhat)
        g = hh - self._target_h(d, dhat)
        g_np = np.asarray(A.to_numpy(g), dtype=np.float64)
        wf = w * self._query_factor(pg, np.abs(g_np) * w)[pg]
        if self.unit_weight is not None:  # after the normalisation, as LightGBM's weights
            wf = wf * self.unit_weight[pg]
        wt = A.as_float_array(wf, like=dhat)
        g, dh = g * wt, dh * wt
        n = self.n_rows
        grad = scatter_add(ia, g, n, y_pred) - scatter_add(ib, g, n, y_pred)
        hess = scatter_add(ia, dh, n, y_pred) + scatter_add(ib, dh, n, y_pred)
        return grad, hess
