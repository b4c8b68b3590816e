"""Shared machinery of all losses: validation, binding of targets, weights and reductions.

A :class:`Loss` is stateless configuration (a link or scaling and options). Calling
:meth:`Loss.bind` with targets, groups and weights returns a :class:`BoundLoss` that has done
all target-side work once (link values of the targets, pair lists, group permutations) and
then evaluates ``loss(y_pred)`` and ``grad_hess(y_pred)`` for any prediction: the shape a
boosting round or a training step needs. The convenience methods :meth:`Loss.loss` and
:meth:`Loss.grad_hess` bind and evaluate in one call.

Conventions (the same for every loss):

* ``y_pred`` is in score space; ``y_true`` in score space (``target="score"``, the default:
  gradient ``h(ŝ) − h(s)``) or in the link's output space (``target="link"``: gradient
  ``h(ŝ) − y``, e.g. probabilities for a sigmoid link).
* the *unit* of a loss is a row (pointwise), a query (pairwise, listwise) or a sample
  (multi-class ``[n, K]``); ``reduction="none"`` returns one weighted value per unit,
  ``"sum"`` their sum, ``"mean"`` the weighted mean ``Σ w·L / Σ w``. Batch losses
  (``couples_samples``) have one unit per batch of ``group``.
* :meth:`BoundLoss.grad_hess` returns the gradient and the Hessian diagonal of the
  *weighted sum* ``Σ w·L`` with respect to ``y_pred`` — what LightGBM and XGBoost expect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .. import _array as A
from .._affine import Params
from .._array import Array
from .._groups import Groups, as_groups
from .._validation import REDUCTIONS, as_weight, check_choice, check_reduction, lookup

__all__ = ["Loss", "BoundLoss", "LOSSES", "get_loss", "REDUCTIONS", "TARGETS"]

TARGETS = ("score", "link")

# `as_weight` and `check_reduction` (and REDUCTIONS) live in selrank._validation; they are
# imported here so `from ._base import as_weight` keeps working in every loss module.
__all__ += ["as_weight", "check_reduction"]


def check_target(target: str, owner: str, allowed: tuple[str, ...] = TARGETS) -> str:
    return check_choice(target, "target", allowed, owner)


def as_target_array(y_true: Array, name: str = "y_true") -> Array:
    """Validate targets: numeric, finite. Keeps the namespace (a tensor stays a tensor)."""
    if y_true is None:
        raise TypeError(f"`{name}` is required; got None")
    if hasattr(y_true, "to_numpy") and not A.is_numpy(y_true) and not A.is_torch(y_true):
        y_true = y_true.to_numpy()  # polars / pandas
    xp = A.get_namespace(y_true)
    y = A.as_float_array(y_true, xp, name=name)
    if A.is_numpy(y) or A.is_torch(y) and y.device.type == "cpu":
        A.check_finite(y, name)
    return y


def check_class_indices(
    y: Array, owner: str, n_classes: int | None = None, name: str = "y_true"
) -> np.ndarray:
    """Integer class indices (in ``[0, n_classes)`` when given) as int64, or ``ValueError``."""
    values: np.ndarray = np.asarray(A.to_numpy(y))
    with np.errstate(invalid="ignore"):
        as_int = np.round(values).astype(np.int64)
    bad = (as_int != values) | (as_int < 0)
    if n_classes is not None:
        bad |= as_int >= n_classes
    if np.any(bad):
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        rng = f"[0, {n_classes})" if n_classes is not None else ">= 0"
        raise ValueError(
            f"`{name}` class indices of {owner} must be integers in {rng}; index {i} holds {values.reshape(-1)[i].item()!r}"
        )
    return as_int


def one_hot(idx: np.ndarray, n_classes: int, value: float = 1.0) -> np.ndarray:
    """``value`` at each index along a new last axis of length ``n_classes`` (float64)."""
    out = np.zeros((*idx.shape, n_classes), dtype=np.float64)
    np.put_along_axis(out, idx[..., None], value, axis=-1)
    return out


def shape_error(y_pred_shape, y_true_shape, what: str = "y_true") -> ValueError:
    return ValueError(
        f"`y_pred` and `{what}` must have the same shape; got {tuple(y_pred_shape)} and {tuple(y_true_shape)}"
    )


class Loss(Params):
    """Base class of every loss.

    Subclasses set :attr:`structure` and implement :meth:`bind` (returning a subclass of
    :class:`BoundLoss`). Parameters are keyword-only and stored in ``_params`` so that losses
    compare equal, print and clone like scikit-learn estimators' parameters (:class:`Params`).

    Attributes
    ----------
    structure : {"pointwise", "group", "multiclass"}
        Unit of the loss: one row, one query, or one row of an ``[n, K]`` array.
    target : {"score", "link"}
        Space ``y_true`` is given in.
    """

    name: ClassVar[str] = "loss"
    structure: str = "pointwise"  # Combined sets it per instance from its parts
    #: Parameter sets for the registry-driven tests (and as documentation).
    examples: ClassVar[list[dict[str, Any]]] = [{}]
    target: str = "score"
    #: False for the baselines: label targets, no zero gradient at ``y_pred = y_true``, may be
    #: negative or non-convex.
    is_matching: bool = True
    #: True for batch losses whose value and gradient mix the samples of a batch (unit = batch).
    couples_samples: ClassVar[bool] = False
    #: True where a unit's loss depends on that unit alone and the loss has no state fitted on
    #: the whole data, so that rows (whole queries) may be bound and evaluated in separate
    #: blocks (the GBDT objective does so for large data).
    separable: ClassVar[bool] = False

    # -- public API --------------------------------------------------------------------
    def bind(
        self,
        y_true: Array,
        *,
        group: Array | Groups | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
    ) -> BoundLoss:
        """Fix targets, groups and weights; returns a :class:`BoundLoss`.

        ``group`` are query sizes (or a :class:`~selrank._groups.Groups`), ``qid`` one query
        id per row; give at most one. A template method: the query ids are resolved into
        groups here, once for every loss, and the loss's own :meth:`_bind` does the rest.
        """
        group = _group_or_qid(group, qid, y_true)
        return self._bind(y_true, group=group, sample_weight=sample_weight)

    def _bind(self, y_true, *, group=None, sample_weight=None) -> BoundLoss:
        """What each loss implements: validate the targets once and return its bound loss.

        ``group`` arrives as query sizes or :class:`~selrank._groups.Groups` (or None),
        never as ``qid``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement _bind")

    def loss(
        self,
        y_pred: Array,
        y_true: Array,
        *,
        group: Array | Groups | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        reduction: str = "mean",
    ) -> Array:
        """Loss of ``y_pred`` for ``y_true`` (see the module docstring for units and reductions).

        ``group`` are query sizes (or a :class:`~selrank._groups.Groups`), ``qid`` one query
        id per row; give at most one. Differentiable with respect to a torch ``y_pred``
        (autograd flows through).
        """
        check_reduction(reduction)
        group = _group_or_qid(group, qid, y_true)
        return self.bind(y_true, group=group, sample_weight=sample_weight).loss(
            y_pred, reduction=reduction
        )

    def grad_hess(
        self,
        y_pred: Array,
        y_true: Array,
        *,
        group: Array | Groups | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
    ) -> tuple[Array, Array]:
        """Gradient and Hessian diagonal of the weighted summed loss w.r.t. ``y_pred``.

        ``group`` are query sizes, ``qid`` per-row query ids (see :meth:`loss`). Returns
        arrays of ``y_pred``'s shape, namespace, device and dtype.
        """
        group = _group_or_qid(group, qid, y_true)
        return self.bind(y_true, group=group, sample_weight=sample_weight).grad_hess(y_pred)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | Groups | None = None,
    ) -> float | np.ndarray:
        """The constant prediction minimising the weighted loss (a GBDT's intercept)."""
        raise NotImplementedError

    # get_params, repr, equality and hashing come from Params (selrank._affine)


#: Registry of losses by name. A plain dict, filled by :mod:`selrank.losses` once every loss
#: family is defined (it lives here so that a composite loss can look names up without
#: importing the package that imports it).
LOSSES: dict[str, Callable[..., Loss]] = {}


def get_loss(name: str | Loss, **params: Any) -> Loss:
    """Build a loss by registry name (or pass a :class:`Loss` through).

    Examples
    --------
    >>> from selrank.losses import get_loss
    >>> get_loss("pointwise", link="sigmoid", target="link")
    Pointwise(link=Sigmoid(alpha=1.0, beta=0.0), target='link')
    >>> get_loss("lambdamart")
    Traceback (most recent call last):
    ...
    ValueError: unknown loss 'lambdamart'; choose one of [...]
    """
    return lookup(LOSSES, name, "loss", instance_of=Loss, accepts="a name or a Loss", **params)


class BoundLoss:
    """A loss with targets, groups and weights fixed.

    Subclasses implement ``_values(y_pred)`` (unweighted loss per unit) and
    ``_grad_hess(y_pred)`` (gradient and Hessian diagonal), and may precompute target-side
    arrays in ``__init__``. Target arrays are converted to the namespace, device and dtype of
    each ``y_pred`` once and cached (:meth:`_like`).

    Weights: a subclass whose units are the rows (or the rows of an ``[n, K]`` array) sets
    ``weigh_elements = True`` and returns the *unweighted* gradient and Hessian;
    :meth:`grad_hess` then multiplies both by the unit weights, once, here. Others (group
    losses, whose weights act inside their kernels) return the weighted ones themselves.

    Attributes
    ----------
    n_rows : int
        Rows (first axis of ``y_pred``).
    unit_weight : ndarray or None
        Weight per unit (row, query or sample).
    groups : Groups or None
        Query structure for group losses.
    """

    def __init__(
        self, loss: Loss, n_rows: int, unit_weight: np.ndarray | None, groups: Groups | None = None
    ):
        self.loss_fn = loss
        self.n_rows = n_rows
        self.unit_weight = unit_weight
        self.groups = groups
        self._cache: dict[Any, Any] = {}

    # -- conversions -----------------------------------------------------------------------
    def _like(self, key: str, arr, like):
        """``arr`` in the namespace / device / dtype of ``like`` (cached per combination)."""
        if arr is None:
            return None
        if A.is_numpy(like) and A.is_numpy(arr) and arr.dtype == like.dtype:
            return arr
        ck = (key, type(like).__module__, str(getattr(like, "device", "")), str(like.dtype))
        hit = self._cache.get(ck)
        if hit is None:
            hit = A.as_float_array(arr, like=like, name=key)
            self._cache[ck] = hit
        return hit

    def _check_pred(self, y_pred, expected_shape) -> Any:
        if hasattr(y_pred, "to_numpy") and not A.is_numpy(y_pred) and not A.is_torch(y_pred):
            y_pred = y_pred.to_numpy()
        xp = A.get_namespace(y_pred)
        y_pred = A.as_float_array(y_pred, xp, name="y_pred")
        if tuple(y_pred.shape) != tuple(expected_shape):
            raise shape_error(y_pred.shape, expected_shape)
        return y_pred

    # -- public ----------------------------------------------------------------------------
    def loss(self, y_pred: Array, *, reduction: str = "mean") -> Array:
        """Weighted loss of ``y_pred``, reduced over units."""
        check_reduction(reduction)
        if self.n_rows == 0:  # no rows, no units: a zero loss (kept in the caller's graph)
            xp = A.get_namespace(y_pred)
            empty = A.as_float_array(y_pred, xp, name="y_pred") * 0.0
            return xp.reshape(empty, (0,)) if reduction == "none" else xp.sum(empty)
        values = self._values(y_pred)
        xp = A.get_namespace(values)
        w = self._like("unit_weight", self.unit_weight, values)
        if w is not None:
            values = values * w
        if reduction == "none":
            return values
        total = xp.sum(values)
        if _has_nan(y_pred, xp) and not _has_nan(total, xp):
            # a NaN prediction must not hide behind a finite loss (caps, clips and hinges
            # can drop it from the value while its gradient is NaN)
            total = total * float("nan")
        if reduction == "sum":
            return total
        return total / max(self.unit_total(values), math.ulp(0.0))

    def unit_total(self, values: Array | None = None) -> float:
        """Denominator of ``reduction="mean"``: the sum of unit weights, or the number of units."""
        if self.unit_weight is not None:
            return float(self.unit_weight.sum())
        if values is not None:
            return float(math.prod(values.shape))
        if self.loss_fn.structure == "group" and self.groups is not None:
            return float(self.groups.n_groups)
        return float(self.n_rows)

    #: ``_grad_hess`` returns unweighted values and :meth:`grad_hess` applies the unit weights.
    weigh_elements: ClassVar[bool] = False

    def grad_hess(self, y_pred: Array) -> tuple[Array, Array]:
        """Gradient and Hessian diagonal of ``Σ w·L`` w.r.t. ``y_pred``."""
        if self.n_rows == 0:  # no rows: empty gradient and Hessian of y_pred's shape
            empty = A.as_float_array(y_pred, A.get_namespace(y_pred), name="y_pred") * 0.0
            return empty, empty * 1.0
        g, h = self._grad_hess(y_pred)
        if self.weigh_elements and self.unit_weight is not None:
            w = self._like("unit_weight", self.unit_weight, g)
            if w.ndim < g.ndim:  # one weight per row of an [n, K] array
                w = A.get_namespace(g).reshape(w, tuple(w.shape) + (1,) * (g.ndim - w.ndim))
            g, h = g * w, h * w
        xp = A.get_namespace(g)
        if hasattr(y_pred, "shape") and tuple(y_pred.shape) == tuple(g.shape):
            if _has_nan(y_pred, xp):
                # NaN predictions keep NaN derivatives (hinges, caps and sorts can drop them)
                bad = xp.isnan(y_pred)
                g = xp.where(bad, g * float("nan"), g)
                h = xp.where(bad, h * float("nan"), h)
        return g, h

    def _values(self, y_pred):
        raise NotImplementedError

    def _grad_hess(self, y_pred):
        raise NotImplementedError


def _has_nan(x, xp) -> bool:
    """Whether ``x`` (an array of any namespace) holds a NaN: one reduction."""
    return bool(xp.any(xp.isnan(xp.asarray(x) if A.is_numpy(x) else x)))


def group_weights(
    groups: Groups, sample_weight: Array | None, name: str = "sample_weight"
) -> np.ndarray | None:
    """Per-query weights from per-query (length ``n_groups``) or per-row weights.

    Per-row weights are averaged within each query (documented convention for group losses:
    a query's loss is weighted by the mean weight of its rows).
    """
    if sample_weight is None:
        return None
    w = np.asarray(A.to_numpy(sample_weight), dtype=np.float64).reshape(-1)
    if w.size == groups.n_groups and w.size != groups.n_rows:
        return as_weight(w, groups.n_groups, name)
    w = as_weight(w, groups.n_rows, name)
    return groups.mean_per_group(groups.to_grouped(w))


def refuse_other_family(owner: str, takes: str, params: dict) -> None:
    """Refuse a ``link=`` given to a softmax loss (it takes a scaling), or a ``scaling=`` given
    to a pointwise / pairwise loss (they take a link), saying which loss takes which."""
    if takes == "scaling" and "link" in params:
        raise ValueError(
            f"{owner} is a composite-softmax (listwise) loss: it takes a `scaling`, not a `link` "
            f"(got link={params['link']!r}); links are for the pointwise and pairwise losses. "
            f"Give {owner}(scaling=...) alone, or use Pointwise(link=...) / Pairwise(link=...)"
        )
    if takes == "link" and "scaling" in params:
        raise ValueError(
            f"{owner} takes a `link`, not a `scaling` (got scaling={params['scaling']!r}); "
            f"scalings are for the listwise loss. Give {owner}(link=...) alone, or use "
            "Listwise(scaling=...)"
        )


def bind_groups(group, n_rows: int, loss: str = "this ranking loss") -> Groups:
    """Groups of a group loss from query sizes or a :class:`Groups` (ids come as ``qid=``).

    No groups is refused: a query loss never treats all rows as one list by default (one
    list is ``group=[n_rows]``, said explicitly).
    """
    if group is None:
        raise ValueError(
            f"{loss} compares documents within a query and needs query groups, but none were "
            f"given: pass `group=` (query sizes adding up to {n_rows}) or `qid=` (one query id per "
            f"row); for one list of all {n_rows} rows pass group=[{n_rows}]"
        )
    return as_groups(group, n_rows)


def _group_or_qid(group, qid, y_true):
    """``group`` unchanged, or the :class:`Groups` of per-row query ids ``qid``."""
    if qid is None:
        return group
    n = int(y_true.shape[0]) if hasattr(y_true, "shape") else len(y_true)
    return as_groups(group, n, qid=qid)
