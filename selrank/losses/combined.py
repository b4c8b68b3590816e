r"""Weighted sums of losses over the same rows (e.g. a pointwise level plus a within-query order)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .. import _array as A
from .._array import Array
from .._groups import as_groups
from .._validation import positive_float
from ._base import BoundLoss, Loss, as_target_array, check_reduction, get_loss

__all__ = ["Combined"]


class Combined(Loss):
    r"""A weighted sum of losses that share targets, groups and weights.

    .. math:: L(\hat s, s) = \sum_k w_k\,L_k(\hat s, s), \qquad
              g = \sum_k w_k\,g_k, \qquad \text{Hessian diagonal } \sum_k w_k\,h_k.

    Typical use: a pointwise selective loss that fixes the *level* of each prediction plus a
    pairwise or listwise loss that fixes the *order within each group* (for example dwell
    times within a session). Each component reads ``y_true`` in its own target space.

    Parameters
    ----------
    losses : sequence of Loss or str
        Components (names build them with default parameters).
    weights : sequence of float, optional
        Non-negative component weights (default all 1).

    Notes
    -----
    The structure is ``"group"`` if any component is a group loss (then ``group`` is
    required), ``"multiclass"`` if all are multi-class; pointwise and multi-class components
    cannot be mixed. Units differ between structures, so ``reduction="none"`` is only
    available when every component has the same structure; ``"sum"`` adds the components'
    sums with the weights and ``"mean"`` divides that by the first component's units (sum of
    its unit weights) — proportional to the objective whose gradient :meth:`grad_hess`
    returns, whatever the mix of units. :meth:`optimal_constant` minimises the
    weighted total over one common score by bisection on its derivative (the components are
    convex, so the derivative is monotone).

    Examples
    --------
    >>> import numpy as np
    >>> from selrank.losses import Combined, Pairwise, Pointwise
    >>> loss = Combined([Pointwise("identity"), Pairwise("identity")], weights=[1.0, 0.5])
    >>> y = np.array([2.0, 0.0, 1.0]); z = np.zeros(3)
    >>> g, h = loss.grad_hess(z, y, group=[3])
    >>> g1, h1 = Pointwise("identity").grad_hess(z, y)
    >>> g2, h2 = Pairwise("identity").grad_hess(z, y, group=[3])
    >>> bool(np.allclose(g, g1 + 0.5 * g2))
    True
    """

    name = "combined"
    examples = [
        {"losses": ["pointwise", "pairwise"]},
        {"losses": ["pointwise", "listwise"], "weights": [1.0, 0.3]},
    ]

    def __init__(self, losses: Sequence[Loss | str], *, weights: Sequence[float] | None = None):
        if isinstance(losses, Loss | str) or not isinstance(losses, Sequence) or len(losses) == 0:
            raise ValueError(
                f"`losses` of Combined must be a non-empty sequence of losses; got {losses!r}"
            )
        self.losses = [get_loss(item) for item in losses]
        if weights is None:
            w = [1.0] * len(self.losses)
        else:
            w = [positive_float(v, "weights", "Combined", allow_zero=True) for v in weights]
            if len(w) != len(self.losses):
                raise ValueError(
                    f"`weights` of Combined must have one entry per loss ({len(self.losses)}); got {len(w)}"
                )
            if not sum(w) > 0:
                raise ValueError("`weights` of Combined must not all be 0")
        self.weights = w
        kinds = {loss.structure for loss in self.losses}
        if "multiclass" in kinds and kinds != {"multiclass"}:
            raise ValueError(
                f"Combined cannot mix multi-class losses with {sorted(kinds - {'multiclass'})} losses"
            )
        self.mixed_units = len(kinds) > 1
        self.structure = "group" if "group" in kinds else next(iter(kinds))
        self.is_matching = all(loss.is_matching for loss in self.losses)
        self.target = "score"
        self._params = {"losses": losses, "weights": weights}

    def _bind(self, y_true, *, group=None, sample_weight=None) -> _BoundCombined:
        row_weight = sample_weight
        if sample_weight is not None and group is not None and self.mixed_units:
            # per-query weights (as group losses take them) become per-row weights for the
            # pointwise parts: each row carries its query's weight
            y = as_target_array(y_true)
            groups = as_groups(group, int(y.shape[0]))
            w = np.asarray(A.to_numpy(sample_weight), dtype=np.float64).reshape(-1)
            if w.size == groups.n_groups and w.size != groups.n_rows:
                row_weight = groups.from_grouped(groups.broadcast(w))
                group = groups
        bound = [
            loss.bind(
                y_true,
                group=group,
                sample_weight=row_weight if loss.structure == "pointwise" else sample_weight,
            )
            for loss in self.losses
        ]
        return _BoundCombined(self, bound)

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, group: Array | None = None
    ) -> float:
        if self.structure == "multiclass":
            raise ValueError(
                "Combined.optimal_constant supports scalar scores only (not multi-class losses)"
            )
        y = as_target_array(y_true)
        b = self.bind(y, group=group, sample_weight=sample_weight)
        n = int(y.shape[0])

        def slope(c: float) -> float:
            return float(np.sum(b.grad_hess(np.full(n, c))[0]))

        starts = [
            float(np.asarray(loss.optimal_constant(y, sample_weight, group=group)))
            for loss in self.losses
        ]
        lo, hi = min(starts) - 1.0, max(starts) + 1.0
        for _ in range(60):  # widen until the derivative changes sign
            s_lo, s_hi = slope(lo), slope(hi)
            if s_lo <= 0 <= s_hi:
                break
            width = hi - lo
            lo, hi = (lo - width, hi) if s_lo > 0 else (lo, hi + width)
        else:
            return float(min(starts, key=lambda c: abs(slope(c))))
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if slope(mid) > 0:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-12 * max(1.0, abs(mid)):
                break
        return float(0.5 * (lo + hi))

    def __repr__(self) -> str:
        return f"Combined({self.losses!r}, weights={self.weights!r})"


class _BoundCombined(BoundLoss):
    def __init__(self, loss: Combined, bound: list[BoundLoss]):
        super().__init__(
            loss,
            bound[0].n_rows,
            None,
            next((b.groups for b in bound if b.groups is not None), None),
        )
        self.parts = bound
        self.weights = loss.weights

    def loss(self, y_pred, *, reduction: str = "mean"):
        check_reduction(reduction)
        kinds = {b.loss_fn.structure for b in self.parts}
        if reduction == "none" and len(kinds) > 1:
            raise ValueError(
                "reduction='none' is undefined for a Combined loss whose parts have different units "
                f"({sorted(kinds)}); use 'sum' or 'mean', or evaluate the parts separately"
            )
        part_reduction = "sum" if reduction == "mean" else reduction
        parts = [
            w * b.loss(y_pred, reduction=part_reduction)
            for w, b in zip(self.weights, self.parts, strict=True)
            if w != 0
        ]
        total = parts[0]  # the weights are not all 0 (checked by Combined)
        for part in parts[1:]:
            total = total + part
        if reduction == "mean":
            # the weighted sum over the first part's units: proportional to the summed loss
            # whose gradient grad_hess returns, so early stopping watches what is optimised
            total = total / max(self.parts[0].unit_total(), math.ulp(0.0))
        return total

    def unit_total(self, values=None) -> float:
        return self.parts[0].unit_total()

    def _grad_hess(self, y_pred):
        g_sum = h_sum = None
        for w, b in zip(self.weights, self.parts, strict=True):
            if w == 0:
                continue
            g, h = b.grad_hess(y_pred)
            if w != 1.0:
                g, h = w * g, w * h
            g_sum = g if g_sum is None else g_sum + g
            h_sum = h if h_sum is None else h_sum + h
        return g_sum, h_sum
