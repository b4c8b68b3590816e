r"""Shared machinery of the baseline losses (docs/math.md §6): label targets, batches, stable helpers.

The baselines are *not* matching losses: their targets are class labels (indices, one-hot
rows, label distributions or multi-hot rows), not observed scores, so they have no
zero-gradient point at ``y_pred = y_true`` and some are negative (Tanimoto) or non-convex.
They share the :class:`~selrank.losses.Loss` interface: :meth:`bind`, ``loss``,
``grad_hess`` (gradient and Hessian diagonal of the weighted summed loss),
``optimal_constant`` and ``examples``.

A concrete label loss implements two pure functions of ``z = y_pred`` and one-hot / label
rows ``t`` (both ``[n, K]`` in the namespace, device and dtype of ``y_pred``):

* ``row_values(z, t, xp)`` — unweighted loss per sample, shape ``[n]``;
* ``row_derivatives(z, t, xp)`` — unweighted gradient and exact Hessian diagonal, ``[n, K]``.

Batch losses (:class:`BatchLabelLoss`) couple the samples of a batch; their unit is a batch
(see that class), and they implement ``batch_values(z, t, xp, groups)`` (one value per batch)
and ``batch_derivatives(z, t, xp, groups)`` instead, on rows in grouped order.
"""

from __future__ import annotations

import math
import operator
from typing import Any, ClassVar

import numpy as np

from ... import _array as A
from ..._array import Array
from ..._groups import Groups, as_groups
from .._base import (
    BoundLoss,
    Loss,
    as_target_array,
    as_weight,
    check_class_indices,
    group_weights,
    one_hot,
)

__all__ = [
    "LabelLoss",
    "BatchLabelLoss",
    "LABEL_KINDS",
    "label_class_means",
    "check_labels",
    "check_class_indices",
    "log1p_sum_exp",
    "loo_logsumexp",
    "masked_max",
]

#: What each label kind accepts (rows along the last axis).
LABEL_KINDS = {
    "one_hot": "one-hot rows (exactly one 1 per row, zeros elsewhere)",
    "distribution": "rows of non-negative values summing to 1 (one-hot or soft labels)",
    "probability": "values in [0, 1] (independent per class)",
    "multi_hot": "values in {0, 1}",
    "real": "finite real values",
}

_ROW_SUM_ATOL = 1e-5


def check_labels(y: np.ndarray, kind: str, owner: str, name: str = "y_true") -> None:
    """Raise ``ValueError`` unless ``y`` (last axis = classes) is of label ``kind``."""
    if kind == "real":
        return
    flat = y.reshape(-1, y.shape[-1]) if y.ndim else y.reshape(1, 1)
    if kind in ("one_hot", "multi_hot"):
        bad = (flat != 0) & (flat != 1)
    else:
        bad = (flat < 0) | (flat > 1)
    if np.any(bad):
        r, c = np.argwhere(bad)[0]
        raise ValueError(
            f"`{name}` of {owner} must hold {LABEL_KINDS[kind]}; row {int(r)}, class {int(c)} holds {flat[r, c].item()!r}"
        )
    if kind in ("one_hot", "distribution"):
        s = flat.sum(axis=1)
        off = np.abs(s - 1.0) > _ROW_SUM_ATOL
        if np.any(off):
            r = int(np.flatnonzero(off)[0])
            raise ValueError(
                f"`{name}` of {owner} must hold {LABEL_KINDS[kind]}; row {r} sums to {s[r].item()!r}"
            )


def check_bool(value: Any, name: str, owner: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` of {owner} must be True or False; got {value!r}")
    return bool(value)


def check_positive_int(value: Any, name: str, owner: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` of {owner} must be a positive integer; got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"`{name}` of {owner} must be a positive integer; got {value!r}") from None
    if v < 1:
        raise ValueError(f"`{name}` of {owner} must be a positive integer; got {value!r}")
    return int(v)


# --------------------------------------------------------------------------------------
# Stable helpers written once against the array namespace.
# --------------------------------------------------------------------------------------


def _const(m):
    """A maximum that cancels mathematically: no gradient path through it (cf. logsumexp)."""
    return m.detach() if A.is_torch(m) else m


def relu(x, xp):
    return xp.where(x > 0, x, xp.zeros_like(x))


def step(x, xp):
    """Indicator ``1[x > 0]`` in the dtype of ``x`` (the a.e. derivative of :func:`relu`)."""
    return xp.astype(x > 0, x.dtype)


def log_softmax(z, xp, axis: int = -1):
    """Log-softmax around the maximum (:func:`selrank._array.log_softmax`): float32-exact at any logit scale."""
    return A.log_softmax(z, xp, axis=axis)


def masked_max(x, mask, xp, axis: int = -1):
    """Maximum of ``x`` over ``mask`` along ``axis`` and the subgradient weights selecting it.

    The weights split 1 evenly between tied maxima (what autograd of ``amax`` does), so the
    closed-form subgradient equals autograd's also at ties. Every slice needs one masked entry.
    """
    ninf = xp.full_like(x, -math.inf)
    xm = xp.where(mask, x, ninf)
    m = xp.max(xm, axis=axis, keepdims=True)
    hit = xp.astype(mask & (x == m), x.dtype)
    sel = hit / xp.sum(hit, axis=axis, keepdims=True)
    return xp.squeeze(m, axis=axis), sel


def log1p_sum_exp(x, mask, xp, axis: int = -1):
    r"""``log(1 + Σ_{mask} e^{x})`` along ``axis`` and the weights ``e^{x_k} / (1 + Σ e^{x})``.

    A log-sum-exp over the set augmented with a zero logit: never overflows, is exactly 0 when
    the mask is empty, and the weights are in ``[0, 1)`` (masked-out entries get weight 0).
    """
    ninf = xp.full_like(x, -math.inf)
    xm = xp.where(mask, x, ninf)
    m = _const(xp.max(xm, axis=axis, keepdims=True))
    m = xp.where(m > 0, m, xp.zeros_like(m))  # the zero logit belongs to the set
    e = xp.exp(xm - m)
    s = xp.exp(-m) + xp.sum(e, axis=axis, keepdims=True)
    return xp.squeeze(m + xp.log(s), axis=axis), e / s


def loo_logsumexp(x, xp, *, minus_self: bool = False):
    r"""Leave-one-out log-sum-exp along the last axis: ``out_k = log Σ_{j≠k} e^{x_j}``.

    ``O(K)`` and stable: for every entry but the (first) maximum, ``Σ_{j≠k} e^{x_j - max}``
    contains the term 1 of the maximum, so the subtraction ``T - e^{x_k - max}`` loses no
    relative precision; for the maximum the log-sum-exp of the other entries is taken around
    the second largest. Needs ``K >= 2``. ``minus_self=True`` returns ``out_k - x_k``
    formed from the exact differences ``max - x_k`` (no large ``out_k`` is subtracted, which
    would cost ``1e-3`` absolute at logits of ``1e4`` in float32).
    """
    K = x.shape[-1]
    m = _const(xp.max(x, axis=-1, keepdims=True))
    is_max = xp.arange(K, **_dev(x)) == xp.argmax(x, axis=-1, keepdims=True)
    e = xp.exp(x - m)
    rest = xp.sum(e, axis=-1, keepdims=True) - e
    base = (m - x) if minus_self else m
    out_other = base + xp.log(xp.where(is_max, xp.ones_like(rest), rest))
    ninf = xp.full_like(x, -math.inf)
    m2 = _const(xp.max(xp.where(is_max, ninf, x), axis=-1, keepdims=True))
    s2 = xp.sum(xp.exp(xp.where(is_max, ninf, x - m2)), axis=-1, keepdims=True)
    base2 = (m2 - x) if minus_self else m2
    return xp.where(is_max, base2 + xp.log(s2), out_other)


def _dev(x) -> dict:
    return {"device": x.device} if A.is_torch(x) else {}


def label_class_means(
    y_true, sample_weight, n_classes: int | None, owner: str, kind: str
) -> np.ndarray:
    """Weighted mean label row ``π`` (``[K]``, or ``[..., K]`` per way) from labels or class indices."""
    y = np.asarray(A.to_numpy(as_target_array(y_true)), dtype=np.float64)
    if y.ndim == 1:
        idx = check_class_indices(y, owner, n_classes)
        K = n_classes if n_classes is not None else int(idx.max()) + 1
        y = one_hot(idx, K)
    else:
        check_labels(y, kind, owner)
        if n_classes is not None and y.shape[-1] != n_classes:
            raise ValueError(
                f"`n_classes` of {owner} is {n_classes} but `y_true` has {y.shape[-1]} classes"
            )
    w = as_weight(sample_weight, y.shape[0])
    return np.average(y, axis=0, weights=w)


def log_frequencies(pi: np.ndarray, floor: float = math.exp(-30.0)) -> np.ndarray:
    """``log π`` with absent classes (``π = 0``, optimum at −∞) at ``e^{-30}`` times the rarest present one.

    Present classes keep their exact ``log π``, however rare (a class of frequency ``1e-20``
    from tiny weights is not lifted to ``e^{-30}``), and stay above every absent class.
    """
    pi = np.asarray(pi, dtype=np.float64)
    present = pi[pi > 0]
    low = floor * (min(1.0, float(present.min())) if present.size else 1.0)
    with np.errstate(divide="ignore"):
        return np.where(pi > 0, np.log(np.where(pi > 0, pi, 1.0)), math.log(low))


# --------------------------------------------------------------------------------------
# Per-sample label losses
# --------------------------------------------------------------------------------------


class LabelLoss(Loss):
    """Base of the per-sample baselines on ``[n, K]`` scores with class-label targets.

    ``y_true`` is either ``[n]`` integer class indices (one-hot targets; ``K`` is taken from
    ``y_pred``) or an ``[n, K]`` array of the loss's :attr:`labels` kind. The unit is a sample;
    ``reduction="none"`` gives one weighted value per sample. ``group`` is accepted and
    ignored, so every loss shares one signature.

    Attributes
    ----------
    labels : str
        Key of :data:`LABEL_KINDS`: which ``[n, K]`` targets are accepted.
    min_classes : int
        Smallest ``K`` the definition makes sense for.
    is_matching : bool
        Always False: these are baselines, not Bregman matching losses (no zero gradient at
        ``y_pred = y_true``; some are negative or non-convex).
    couples_samples : bool
        True for batch losses, whose value and gradient mix the samples of a batch.
    """

    structure = "multiclass"
    target = "link"
    labels: ClassVar[str] = "distribution"
    min_classes: ClassVar[int] = 2
    is_matching = False
    couples_samples: ClassVar[bool] = False
    #: number of axes of ``y_pred`` the loss accepts
    pred_ndims: ClassVar[tuple[int, ...]] = (2,)

    # -- binding -----------------------------------------------------------------------
    def _bind(self, y_true, *, group=None, sample_weight=None):
        y = self._host_labels(y_true)
        w = as_weight(sample_weight, int(y.shape[0]))
        return _BoundLabel(self, y, w)

    def _host_labels(self, y_true) -> np.ndarray:
        y = np.asarray(A.to_numpy(as_target_array(y_true)), dtype=np.float64)
        owner = type(self).__name__
        ndims = {d - 1 for d in self.pred_ndims} | set(self.pred_ndims)
        if y.ndim not in ndims or y.ndim == 0:
            raise ValueError(
                f"`y_true` of {owner} must be class indices or label rows with {sorted(ndims)} axes; got shape {y.shape}"
            )
        if self.pred_ndims == (2,):  # unambiguous: validate now
            if y.ndim == 1:
                check_class_indices(y, owner)
            else:
                check_labels(y, self.labels, owner)
        return y

    # -- the hooks the bound loss (_BoundLabel, _BoundBatch) calls --------------------------
    def label_rows(self, y: np.ndarray, pred_shape: tuple[int, ...]) -> np.ndarray:
        """Label rows of ``pred_shape`` from stored labels (indices → one-hot); called by the
        bound loss when it first sees ``y_pred``'s shape."""
        owner = type(self).__name__
        K = pred_shape[-1]
        if y.shape == pred_shape[:-1]:
            return one_hot(check_class_indices(y, owner, K), K)
        if y.shape != pred_shape:
            raise ValueError(
                f"`y_true` of {owner} must have the shape of `y_pred` {pred_shape} (label rows) or "
                f"{pred_shape[:-1]} (class indices); got {y.shape}"
            )
        check_labels(y, self.labels, owner)
        return y

    def check_classes(self, K: int) -> None:
        """Refuse ``K`` classes the definition does not cover (called by the bound loss)."""
        if K < self.min_classes:
            raise ValueError(
                f"{type(self).__name__} needs at least {self.min_classes} classes; `y_pred` has {K}"
            )

    # -- the definition (per subclass) ---------------------------------------------------
    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        """Unweighted loss per sample, shape ``[n]`` (called by the bound loss)."""
        raise NotImplementedError

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        """Unweighted gradient and Hessian diagonal, ``[n, K]`` (called by the bound loss)."""
        raise NotImplementedError

    def _zeros_constant(self, y_true, sample_weight, n_classes):
        pi = label_class_means(y_true, sample_weight, n_classes, type(self).__name__, self.labels)
        return np.zeros(pi.shape)


class _BoundLabel(BoundLoss):
    weigh_elements = True  # one weight per row, applied by BoundLoss.grad_hess
    loss_fn: LabelLoss  # the hooks below are LabelLoss's

    def __init__(self, loss: LabelLoss, y: np.ndarray, w, groups=None):
        super().__init__(loss, int(y.shape[0]), w, groups)
        self.raw = y
        self._shape: tuple[int, ...] | None = None
        self._t: np.ndarray | None = None

    def _inputs(self, y_pred):
        loss = self.loss_fn
        if hasattr(y_pred, "to_numpy") and not A.is_numpy(y_pred) and not A.is_torch(y_pred):
            y_pred = y_pred.to_numpy()
        xp = A.get_namespace(y_pred)
        z = A.as_float_array(y_pred, xp, name="y_pred")
        shape = tuple(int(s) for s in z.shape)
        if z.ndim not in loss.pred_ndims or shape[0] != self.n_rows:
            axes = " or ".join(f"{d}-D" for d in loss.pred_ndims)
            raise ValueError(
                f"`y_pred` of {type(loss).__name__} must be {axes} with {self.n_rows} rows; got shape {shape}"
            )
        loss.check_classes(shape[-1])
        if shape != self._shape:
            self._t = self._prepare(loss.label_rows(self.raw, shape))
            self._shape = shape
            self._cache.clear()
        return z, self._like("t", self._t, z), xp

    def _prepare(self, t: np.ndarray) -> np.ndarray:
        return t

    def _values(self, y_pred):
        z, t, xp = self._inputs(y_pred)
        return self.loss_fn.row_values(z, t, xp)

    def _grad_hess(self, y_pred):
        z, t, xp = self._inputs(y_pred)
        return self.loss_fn.row_derivatives(z, t, xp)


# --------------------------------------------------------------------------------------
# Batch losses
# --------------------------------------------------------------------------------------


class BatchLabelLoss(LabelLoss):
    r"""Base of the batch losses (Keren et al., §5): one loss value per *batch* of samples.

    A batch is all rows (``group=None``) or each group of ``group`` (sizes, or per-row ids
    as ``qid=``, as for query groups): ``loss(..., reduction="mean")`` of a partition into batches is the
    mean batch loss, the paper's :math:`\mathbb E_B[L(B)]` over that partition.

    * ``reduction="none"`` returns one weighted value per batch, shape ``[n_batches]`` (not
      one per sample: the loss of a batch does not split into per-sample terms).
    * ``sample_weight`` weights batches: length ``n_batches``, or per row (averaged within
      each batch, the group-loss convention of :func:`~selrank.losses._base.group_weights`).
    * ``grad_hess`` returns ``[n, K]`` arrays: the gradient and Hessian diagonal of
      ``Σ_B w_B L(B)`` with respect to every logit. Row ``i``'s gradient depends on the other
      rows of its batch (the minimum true / maximum false logit, the batch normaliser).
    """

    couples_samples = True
    labels = "one_hot"

    def _bind(self, y_true, *, group=None, sample_weight=None):
        y = self._host_labels(y_true)
        groups = as_groups(group, int(y.shape[0]))
        w = group_weights(groups, sample_weight)
        return _BoundBatch(self, y, w, groups)

    # the batch hooks: the row losses' row_values / row_derivatives with the batches (grouped order)
    def batch_values(self, z: Array, t: Array, xp: Any, groups: Groups) -> Array:
        """Unweighted loss per batch, shape ``[n_batches]``."""
        raise NotImplementedError

    def batch_derivatives(self, z: Array, t: Array, xp: Any, groups: Groups) -> tuple[Array, Array]:
        """Unweighted gradient and Hessian diagonal, ``[n, K]`` in grouped order."""
        raise NotImplementedError


class _BoundBatch(_BoundLabel):
    # The unit is a batch: its weight reaches every row of the batch here, in grouped order.
    weigh_elements = False
    groups: Groups  # always given (BatchLoss.bind)
    loss_fn: BatchLabelLoss

    def _prepare(self, t: np.ndarray) -> np.ndarray:
        self._row_weight = (
            None if self.unit_weight is None else self.unit_weight[self.groups.row_group]
        )
        return self.groups.to_grouped(t)  # batch work runs in grouped order

    def _values(self, y_pred):
        z, t, xp = self._inputs(y_pred)
        return self.loss_fn.batch_values(self.groups.to_grouped(z), t, xp, self.groups)

    def _grad_hess(self, y_pred):
        z, t, xp = self._inputs(y_pred)
        g, h = self.loss_fn.batch_derivatives(self.groups.to_grouped(z), t, xp, self.groups)
        w = self._like("row_weight", self._row_weight, z)
        if w is not None:
            g, h = g * w[:, None], h * w[:, None]
        return self.groups.from_grouped(g), self.groups.from_grouped(h)


def group_hits(groups, x, value_rows, mask, xp):
    """Subgradient weights of a per-batch max: 1 split evenly over the masked entries equal to it."""
    hit = xp.astype(mask & (x == value_rows[:, None]), x.dtype)
    count = groups.sum(xp.sum(hit, axis=1))
    return hit / groups.broadcast(count)[:, None]
