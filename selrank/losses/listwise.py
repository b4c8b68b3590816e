r"""Listwise composite-softmax selective matching loss over the documents of each query."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _array as A
from .. import fast
from .._array import Array
from .._groups import Groups
from .._validation import positive_float
from ..scalings import (
    Scaling,
    composite_softmax,
    composite_softmax_bregman,
    composite_softmax_hess_diag,
    get_scaling,
)
from ._base import (
    BoundLoss,
    Loss,
    as_target_array,
    bind_groups,
    check_target,
    group_weights,
    refuse_other_family,
)

__all__ = ["Listwise"]


def check_softmax_convexity(scaling: Scaling, gamma: float, owner: str) -> None:
    """Warn when a composite softmax may be non-convex (Thm 4 needs a convex ``Q``)."""
    if scaling.convex_Q:
        return
    import warnings

    warnings.warn(
        f"{owner}: the scaling {scaling!r} has a non-convex Q, so the composite softmax loss "
        "is not guaranteed convex (Thm 4 needs convex Q); Hessian diagonals may be negative",
        UserWarning,
        stacklevel=3,
    )


def configure_softmax(
    loss, owner: str, scaling, gamma: float, target: str, scaling_params: dict
) -> dict[str, Any]:
    """Validate and store the parameters of a composite-softmax loss (listwise or multi-class);
    returns its constructor parameters, for the loss's ``_params``."""
    refuse_other_family(owner, "scaling", scaling_params)
    loss.scaling = get_scaling(scaling, **scaling_params)
    loss.gamma = positive_float(gamma, "gamma", owner)
    loss.target = check_target(target, owner)
    if target == "link" and not loss.scaling.constant:
        raise ValueError(
            f"target='link' for {owner} needs scaling='constant' (other composite softmaxes have no "
            f"closed-form conjugate); got {loss.scaling!r}. Give observed scores with target='score'"
        )
    check_softmax_convexity(loss.scaling, loss.gamma, owner)
    return {"scaling": loss.scaling, "gamma": gamma, "target": target}


def link_target_lists(y, lists_sum, alpha: float, what: str):
    """Validate link-space targets of a constant-scaling softmax: ``y >= 0``, lists sum to ``alpha``."""
    arr = np.asarray(A.to_numpy(y), dtype=np.float64)
    if np.any(arr < 0):
        i = int(np.flatnonzero(arr.reshape(-1) < 0)[0])
        raise ValueError(
            f"`y_true` with target='link' must be non-negative (scaled probabilities); index {i} holds {arr.reshape(-1)[i]!r}"
        )
    sums = np.asarray(A.to_numpy(lists_sum(y)), dtype=np.float64)
    bad = np.abs(sums - alpha) > 1e-6 * max(1.0, alpha)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`y_true` with target='link' must sum to alpha={alpha} over each {what} (the range of "
            f"h = alpha * softmax); {what} {i} sums to {sums[i]!r}. Normalise the targets, e.g. "
            "y / y.sum() * alpha per list"
        )


def _all_finite(x, xp) -> bool:
    return bool(xp.all(xp.isfinite(x)))


def widen_on_overflow(fn, z, owner: str, scaling: Scaling):
    """``fn(z)`` (a tuple of arrays), recomputed in float64 where a narrower float overflows.

    A capped scaling continues ``q`` linearly past its cap, so ``Q`` grows quadratically and
    the Hessian term ``q²`` even faster: with ``scaling="exp"`` float32 overflows from scores
    of about ``1e6`` and the softmax turns into ``inf - inf`` or ``0 · inf = NaN``. Such calls
    are recomputed in float64 (differentiably for tensors) and cast back; results that the
    input's dtype cannot hold are refused with a ``ValueError`` that says what to do. Values
    computed from non-finite scores are returned as they are.
    """
    xp = A.get_namespace(z)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is handled below
        out = fn(z)
    if z.dtype == xp.float64 or all(_all_finite(a, xp) for a in out) or not _all_finite(z, xp):
        return out
    wide = fn(xp.astype(z, xp.float64))
    with np.errstate(over="ignore"):  # checked on the next line
        back = tuple(xp.astype(a, z.dtype) for a in wide)
    if not all(_all_finite(a, xp) for a in back):
        top = float(xp.max(xp.abs(z)))
        raise ValueError(
            f"{owner}: scores up to |y_pred| = {top:.3g} overflow {z.dtype} in the composite softmax of "
            f"{scaling!r} (past its cap q grows linearly and Q quadratically); pass float64 scores, "
            "or use a smaller `cap` or `alpha` for the scaling"
        )
    return back


def solve_constant(
    scaling: Scaling, total: float, span: tuple[float, float] | None = None
) -> float:
    r"""Minimise :math:`Q(c) - c\,T` over scalar ``c`` (the optimal constant of a composite softmax).

    For a convex ``Q`` this is the root of :math:`q(c) = T`. A grid over the standardized
    argument ``[-30, 30]``, widened to ``span`` (the range of the observed scores, where
    :math:`T`, a mean of :math:`q` values, has its preimage), followed by golden-section
    refinement also handles non-convex ``Q`` and returns the grid end when the minimum lies
    beyond it. Without the widening, targets in the flat region of ``q`` (all scores -40 for
    the exp scaling) gave the grid end -30.
    """
    if scaling.constant:
        return 0.0
    lo, hi = -30.0 / scaling.alpha - scaling.beta, 30.0 / scaling.alpha - scaling.beta
    if span is not None and all(math.isfinite(v) for v in span):
        lo, hi = min(lo, float(span[0])), max(hi, float(span[1]))
    # fine steps of the standardized argument over [-30, 30], coarser beyond
    z = np.unique(
        np.concatenate(
            [
                np.linspace(-30.0, 30.0, 6001) / scaling.alpha - scaling.beta,
                np.linspace(lo, hi, 6001),
            ]
        )
    )
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.asarray(A.to_numpy(scaling.Q(z)), dtype=np.float64) - z * total
    f = np.where(np.isfinite(f), f, np.inf)
    i = int(np.argmin(f))
    lo, hi = z[max(i - 1, 0)], z[min(i + 1, z.size - 1)]
    golden = (math.sqrt(5.0) - 1.0) / 2.0

    def fun(c):
        return float(A.to_numpy(scaling.Q(np.array([c])))[0]) - c * total

    a, b = lo, hi
    c1, c2 = b - golden * (b - a), a + golden * (b - a)
    f1, f2 = fun(c1), fun(c2)
    for _ in range(80):
        if f1 <= f2:
            b, c2, f2 = c2, c1, f1
            c1 = b - golden * (b - a)
            f1 = fun(c1)
        else:
            a, c1, f1 = c1, c2, f2
            c2 = a + golden * (b - a)
            f2 = fun(c2)
    return float(0.5 * (a + b))


class Listwise(Loss):
    r"""Listwise selective matching loss: the composite softmax over each query's documents.

    For the documents of one query with observed scores :math:`s` (e.g. graded labels or
    teacher scores) and predictions :math:`\hat s` (eq. [29–30], docs/math.md §3):

    .. math::
        p_k(z) = \frac{e^{Q(z_k)/\gamma}}{\sum_j e^{Q(z_j)/\gamma}}, \quad
        H(z) = \gamma \log\sum_j e^{Q(z_j)/\gamma}, \quad h_k(z) = q(z_k)\,p_k(z),

        L(\hat s, s) = H(\hat s) - H(s) - \sum_k (\hat s_k - s_k)\,h_k(s), \qquad
        g_k = q(\hat s_k)\,p_k(\hat s) - q(s_k)\,p_k(s),

    with Hessian diagonal :math:`p_k\{q'(\hat s_k) + (1 - p_k)\,q(\hat s_k)^2/\gamma\}` [C.6].
    ``scaling="exp"`` (the default) emphasises the top of the list as NDCG does;
    ``scaling="constant"`` is a ListNet-style softmax; ``"smelu"``/``"relu"`` clip low
    teacher scores (distillation). Computed in log space (segment log-sum-exp), so scores of
    any magnitude stay finite.

    Parameters
    ----------
    scaling : Scaling or str
        Keyword parameters build a scaling given by name (``alpha``, ``beta``, ``cap``, ...).
    gamma : float
        Regulariser :math:`\gamma > 0` (a temperature).
    target : {"score", "link"}
        ``"link"`` takes targets already in link space — for the constant scaling, per-query
        distributions times ``alpha`` (a soft top-1 target); the loss is then
        :math:`\gamma\,\mathrm{KL}(y/\alpha \,\|\, p(\hat s))`. Other scalings have no
        closed-form conjugate and need ``target="score"``.

    Notes
    -----
    The unit is a query: ``reduction="none"`` gives one value per query (in order of first
    appearance); per-row ``sample_weight`` is averaged within each query. For a non-constant
    scaling the loss is not shift invariant; :meth:`optimal_constant` gives the best common
    score (the GBDT intercept).

    Examples
    --------
    >>> import numpy as np
    >>> loss = Listwise("exp")
    >>> y = np.array([2.0, 0.0, 1.0, 0.0, 1.0]); group = [3, 2]
    >>> float(loss.loss(y, y, group=group))
    0.0
    >>> g, h = loss.grad_hess(np.zeros(5), y, group=group)
    >>> bool(g[0] < 0 < g[1])    # raise the relevant document, lower the irrelevant one
    True
    """

    scaling: Scaling  # set by configure_softmax
    gamma: float
    target: str
    name = "listwise"
    structure = "group"
    separable = True  # whole queries: the GBDT objective may bind query-aligned blocks
    examples = [
        {},
        {"scaling": "constant"},
        {"scaling": "constant", "target": "link"},
        {"scaling": "sigmoid", "gamma": 0.5},
        {"scaling": "exp", "alpha": 0.5, "beta": -1.0},
        {"scaling": "smelu", "c": 1.0},
        {"scaling": "sinh", "cap": 3.0},
    ]

    def __init__(
        self,
        scaling: Scaling | str = "exp",
        *,
        gamma: float = 1.0,
        target: str = "score",
        **scaling_params: Any,
    ) -> None:
        self._params = configure_softmax(self, "Listwise", scaling, gamma, target, scaling_params)

    def _bind(self, y_true, *, group=None, sample_weight=None) -> _BoundListwise:
        y = as_target_array(y_true)
        if y.ndim != 1:
            raise ValueError(
                f"`y_true` of a listwise loss must be 1-D (one score per document); got shape {tuple(y.shape)}"
            )
        groups = bind_groups(group, int(y.shape[0]), f"{type(self).__name__} (a listwise loss)")
        wg = group_weights(groups, sample_weight)
        if self.target == "link":
            link_target_lists(groups.to_grouped(y), groups.sum, self.scaling.alpha, "query")
        return _BoundListwise(self, y, groups, wg)

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, group: Array | None = None
    ) -> float:
        r"""The common score :math:`c` minimising the weighted loss: :math:`q(c) = T`, with :math:`T`
        the weighted mean over queries of :math:`\sum_k h_k(s)` (0 for the constant scaling)."""
        b = cast(_BoundListwise, self.bind(y_true, group=group, sample_weight=sample_weight))
        per_query = np.asarray(A.to_numpy(b.groups.sum(b.hy)), dtype=np.float64)
        total = float(np.average(per_query, weights=b.unit_weight))
        span = None
        if self.target == "score":
            y = np.asarray(A.to_numpy(b.yg), dtype=np.float64)
            span = (float(np.min(y)), float(np.max(y)))
        return solve_constant(self.scaling, total, span)


class _BoundListwise(BoundLoss):
    groups: Groups  # always bound to query groups

    def __init__(self, loss: Listwise, y, groups, wg):
        super().__init__(loss, int(y.shape[0]), wg, groups)
        self.scaling, self.gamma, self.target = loss.scaling, loss.gamma, loss.target
        self.yg = groups.to_grouped(y)
        self._parts_y: dict[str, Any] | None = None
        if self.target != "score":
            self.hy = self.yg
        elif self.yg.dtype == np.float64 and (fused := self._fused(self.yg)) is not None:
            # the gradient needs only h(s); the rest of the targets' softmax waits for the loss
            self.hy = fused(self.scaling, self.gamma, self.yg, groups, False)[0]
        else:
            self.hy = self.parts_y["h"]
        self.row_weight = None if wg is None else groups.broadcast(wg)

    def _fused(self, z):
        """The fused composite softmax of :mod:`selrank.fast` for NumPy scores, or None (the
        generic :func:`~selrank.scalings.composite_softmax`): this loss's one dispatch decision."""
        if not isinstance(z, np.ndarray):
            return None
        path = fast.lookup(self.scaling, "composite_softmax", "numpy")
        return None if path is None else path.load()

    @property
    def parts_y(self):
        """The targets' composite softmax (:func:`~selrank.scalings.composite_softmax`), on first use."""
        if self._parts_y is None and self.target == "score":
            self._parts_y = composite_softmax(self.scaling, self.gamma, self.yg, self.groups)
        return self._parts_y

    def _grouped(self, y_pred):
        return self.groups.to_grouped(self._check_pred(y_pred, (self.n_rows,)))

    def _values(self, y_pred):
        return widen_on_overflow(self._values_of, self._grouped(y_pred), "Listwise", self.scaling)[
            0
        ]

    def _values_of(self, zg):
        parts = composite_softmax(self.scaling, self.gamma, zg, self.groups)
        yg = self._like("yg", self.yg, zg)
        if self.target == "link":
            xp = A.get_namespace(zg)
            pi = yg / self.scaling.alpha
            return (self.gamma * self.groups.sum(A.xlogx(pi, xp) - pi * parts["logp"]),)
        parts_y = {k: self._like(f"parts_y.{k}", v, zg) for k, v in self.parts_y.items()}
        return (
            composite_softmax_bregman(
                self.scaling, self.gamma, zg, yg, self.groups, parts, parts_y
            ),
        )

    def _grad_hess(self, y_pred):
        g, h = widen_on_overflow(
            self._grad_hess_of, self._grouped(y_pred), "Listwise", self.scaling
        )
        return self.groups.from_grouped(g), self.groups.from_grouped(h)

    def _grad_hess_of(self, zg):
        w = self._like("row_weight", self.row_weight, zg)
        fused = self._fused(zg)
        if fused is not None:
            g, h = fused(self.scaling, self.gamma, zg, self.groups)
            g -= self._like("hy", self.hy, zg)
            if w is not None:
                g *= w
                h *= w
            return g, h
        parts = composite_softmax(self.scaling, self.gamma, zg, self.groups)
        g = parts["h"] - self._like("hy", self.hy, zg)
        h = composite_softmax_hess_diag(parts, self.gamma)
        if w is not None:
            g, h = g * w, h * w
        return g, h
