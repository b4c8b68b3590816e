r"""Backend-independent core of the GBDT objectives: binding, Hessian policy and intercept.

A :class:`GBDTObjective` wraps a core :class:`~selrank.losses.Loss`. Everything it returns is
computed by the loss's :meth:`~selrank.losses.BoundLoss.grad_hess`; this module only adds
what gradient boosting needs on top:

* **binding once per training set.** Labels, groups and weights are validated and bound the
  first time a data set is seen (the target-side work of the loss is done then), and the
  binding is reused every boosting round. On the host the rows are split into blocks of
  about ``block_rows`` rows that never cut a query; each block is a separately bound core
  loss whose working set fits in cache, and blocks run in a small thread pool (NumPy
  releases the GIL). Device arrays (CuPy, torch) are evaluated in one piece. The binding's
  pieces that need none of the objective's options (row weights, blocks, the check that
  the targets do not saturate the loss at the start) are in :mod:`selrank.gbdt._binding`.
* **Hessian policy** (:data:`HESSIAN_POLICIES`): the exact diagonal, a floor (default), a
  majorising upper bound, or a constant.
* **intercept.** Both libraries start a custom objective from 0 (LightGBM) or 0.5
  (XGBoost); the loss's :meth:`~selrank.losses.Loss.optimal_constant` is the right start
  (properness, docs/math.md §1) and is what ``init_score`` / ``base_margin`` are set to.

The reference Hessian scale
---------------------------
Floors and the constant policy need a scale that is right for every loss: the *reference
Hessian* :math:`\bar h` is the mean, per unit weight, of the exact Hessian diagonal at the
optimal constant (computed once per binding). For the identity link it is ``alpha``; for the
sigmoid link on balanced labels ``alpha / 4``; for a listwise loss about ``1 / n_docs``.
"""

from __future__ import annotations

import contextvars
import copy
import math
import os
import threading
import warnings
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from .. import _array as A
from .._array import Array
from .._groups import Groups, as_groups
from .._numba import shared_calls
from .._validation import positive_float
from ..losses import Loss, get_loss
from ..losses.inputs import as_target_array
from ..losses.multiclass import class_targets
from ._binding import (
    _Binding,
    blocks_grad_hess,
    bound_blocks,
    check_degenerate_start,
    one_block,
    row_weights,
)

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

__all__ = [
    "GBDTObjective",
    "HESSIAN_POLICIES",
    "DEFAULT_HESSIAN_FLOOR",
    "NOMINAL_LEAF_ROWS",
    "resolve_loss",
]

#: Hessian policies: ``"exact"`` (the loss's diagonal), ``"floor"`` (default: at least a
#: fraction of the reference Hessian), ``"upper"`` (largest Hessian of the row's query) and
#: ``"constant"`` (the reference Hessian everywhere).
HESSIAN_POLICIES = ("exact", "floor", "upper", "constant")

#: Default floor, as a fraction of the reference Hessian (see the module docstring). Chosen
#: on the LETOR validation splits (``docs/estimators.md``, "How the defaults were chosen").
DEFAULT_HESSIAN_FLOOR = 0.1

#: Rows of a nominal smallest leaf. LightGBM refuses leaves with fewer than
#: ``min_data_in_leaf`` rows (default 20) or a Hessian sum below ``min_sum_hessian_in_leaf``;
#: a per-row floor of ``min_sum_hessian_in_leaf / min_data_in_leaf`` keeps every leaf that
#: LightGBM allows by row count valid by Hessian too. XGBoost has no row minimum, so its
#: ``min_child_weight`` is spread over this many rows.
NOMINAL_LEAF_ROWS = 20

_STRUCTURES = ("pointwise", "group", "multiclass")

_VANISH = 1e-12  # a Hessian below this fraction of the reference counts as vanished


def distinct_constants(values) -> list:
    """The distinct intercepts (floats or per-class arrays) among ``values``, in first-seen order."""
    distinct: list = []
    for c in values:
        if not any(c.shape == d.shape and np.array_equal(c, d) for d in distinct):
            distinct.append(c)
    return distinct


def _intercept_value(c: Any) -> float | np.ndarray:
    """An intercept as a float (one output) or a float64 array (one value per class)."""
    arr = np.asarray(c, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


class _MulticlassConstant(Protocol):
    """The optimal constant of a multi-class loss, which takes the number of classes."""

    def optimal_constant(
        self, y_true, sample_weight=None, *, group=None, n_classes: int | None = None
    ) -> Any: ...


def resolve_loss(loss: Loss | str, **loss_params) -> Loss:
    """A core loss from a :class:`~selrank.losses.Loss` or a registry name and parameters."""
    return get_loss(loss, **loss_params)


class GBDTObjective:
    r"""A selrank loss as a gradient-boosting objective (base of the LightGBM / XGBoost adapters).

    Parameters
    ----------
    loss : Loss or str
        A core loss or a registry name (``"pointwise"``, ``"pairwise"``, ``"listwise"``,
        ``"decomposed"``, ``"composite_softmax"``); remaining keyword arguments that are not
        options below build it (``link=``, ``scaling=``, ``target=``, ``alpha=``, ...).
    hessian : {"floor", "exact", "upper", "constant"}
        * ``"exact"``: the loss's Hessian diagonal.
        * ``"floor"`` (default): ``max(h_i, w_i·f)`` with
          :math:`f = \max(\text{hessian\_floor}\cdot\bar h,\ \text{min\_leaf\_hessian} /
          \text{min\_leaf\_rows})`; ``\bar h`` is the reference Hessian (module docstring).
          Links whose slope vanishes (SmeLU, Huber, step, capped-flat) then still take
          bounded Newton steps, and no leaf is refused for a small Hessian sum.
        * ``"upper"``: each row gets the largest Hessian per unit weight of its query (group
          losses), of all rows (pointwise) or of its class column (multi-class) at the
          current predictions: a majorising diagonal, i.e. damped, conservative steps.
        * ``"constant"``: ``w_i·\bar h`` for every row: first-order boosting with the step
          scale of the loss.
    hessian_floor : float
        The floor as a fraction of the reference Hessian (``"floor"`` policy).
    label_scale : float
        Target scores are ``label_scale * label`` when the loss takes targets in score
        space (``target="score"``); labels given in link space are used as they are.
    group : array-like, optional
        Query sizes for calls that do not carry a group (LightGBM < 4.7's scikit-learn
        classes, ``XGBRegressor``); a group passed with the data takes precedence.
    qid : array-like, optional
        The same as one query id per row (each query's rows contiguous). Give ``group`` or
        ``qid``, not both.
    min_leaf_hessian, min_leaf_rows : float, optional
        The library's smallest leaf Hessian sum and row count, for the floor. Read from the
        data set's parameters where the library exposes them; otherwise the library
        defaults.
    n_jobs : int, optional
        Threads for host evaluation of the blocks (default: up to 4, at most the CPU count).
    block_rows : int
        Target rows per block (blocks never cut a query).

    Notes
    -----
    A warning is issued (once) when the exact Hessian vanishes on most rows that carry a
    gradient: with ``hessian="exact"`` the leaf values are then unbounded; with the floor,
    the floor sets the step size there.
    """

    backend = "gbdt"
    _OPTIONS = (
        "hessian",
        "hessian_floor",
        "label_scale",
        "group",
        "qid",
        "min_leaf_hessian",
        "min_leaf_rows",
        "n_jobs",
        "block_rows",
    )
    _default_min_leaf_hessian = 1e-3
    _default_min_leaf_rows = NOMINAL_LEAF_ROWS

    def __init__(
        self,
        loss: Loss | str = "listwise",
        *,
        hessian: str = "floor",
        hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
        label_scale: float = 1.0,
        group: Array | None = None,
        qid: Array | None = None,
        min_leaf_hessian: float | None = None,
        min_leaf_rows: int | None = None,
        n_jobs: int | None = None,
        block_rows: int = 65536,
        **loss_params: Any,
    ) -> None:
        owner = type(self).__name__
        self.loss = resolve_loss(loss, **loss_params)
        if self.loss.structure not in _STRUCTURES:
            raise ValueError(
                f"{owner} supports losses of structure {_STRUCTURES}; got {self.loss.structure!r}"
            )
        if hessian not in HESSIAN_POLICIES:
            raise ValueError(
                f"`hessian` of {owner} must be one of {HESSIAN_POLICIES}; got {hessian!r}"
            )
        self.hessian = hessian
        self.hessian_floor = positive_float(hessian_floor, "hessian_floor", owner, allow_zero=True)
        self.label_scale = positive_float(label_scale, "label_scale", owner)
        if group is not None and qid is not None:
            raise ValueError(
                f"give {owner} either `group` (query sizes) or `qid` (per-row query ids), not both"
            )
        self.group = group
        self.qid = qid
        self.min_leaf_hessian = (
            None
            if min_leaf_hessian is None
            else positive_float(min_leaf_hessian, "min_leaf_hessian", owner, allow_zero=True)
        )
        if min_leaf_rows is not None and (
            isinstance(min_leaf_rows, bool)
            or int(min_leaf_rows) != min_leaf_rows
            or min_leaf_rows < 1
        ):
            raise ValueError(
                f"`min_leaf_rows` of {owner} must be a positive integer; got {min_leaf_rows!r}"
            )
        self.min_leaf_rows = None if min_leaf_rows is None else int(min_leaf_rows)
        if n_jobs is not None and (isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs < 1):
            raise ValueError(
                f"`n_jobs` of {owner} must be a positive integer or None; got {n_jobs!r}"
            )
        self.n_jobs = n_jobs
        if isinstance(block_rows, bool) or int(block_rows) != block_rows or block_rows < 1:
            raise ValueError(
                f"`block_rows` of {owner} must be a positive integer; got {block_rows!r}"
            )
        self.block_rows = int(block_rows)
        self.intercept_: float | np.ndarray | None = None
        self.hessian_scale_: float | None = None
        self._fitted_intercepts: list[np.ndarray] = []
        self._init_state()

    # -- state that does not travel (pickling for Dask workers, cloning) ----------------------
    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_threads = 0  # the pool's size (not read from the executor's private state)
        self._bindings: dict[Any, _Binding] = {}
        self._warned: set[str] = set()
        self._share_bindings = False  # (train: a copy made by the library keeps the bindings)

    _TRANSIENT = ("_lock", "_pool", "_pool_threads", "_bindings", "_warned", "_share_bindings")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for key in self._TRANSIENT:
            state.pop(key, None)
        return state

    def __deepcopy__(self, memo: dict) -> Any:
        """A copy without this object's bindings, pool and warnings (as a pickle round trip);
        while :meth:`train` hands itself to the library (``lightgbm.train`` deep-copies its
        parameters), the copy shares the bindings, so the labels are not bound again."""
        state = copy.deepcopy(self.__getstate__(), memo)
        if self._share_bindings:  # (LightGBM copies the copy: the sharing carries on)
            state["_shared_bindings"] = self._bindings
        twin = type(self).__new__(type(self))
        twin.__setstate__(state)
        return twin

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        shared = state.pop("_shared_bindings", None)  # (__deepcopy__ during train)
        state.setdefault("_fitted_intercepts", [])
        self.__dict__.update(state)
        self._init_state()
        if shared is not None:
            self._bindings = dict(shared)
            self._share_bindings = True

    def get_options(self) -> dict[str, Any]:
        """The loss and the options (for ``repr`` and for rebuilding the objective).

        Deliberately not called ``get_params``: scikit-learn would then expand the objective
        into ``objective__loss`` parameters, which LightGBM's estimators pass on and reject.
        """
        out = {"loss": self.loss}
        for k in self._OPTIONS:
            out[k] = getattr(self, k)
        return out

    def __repr__(self) -> str:
        args = ", ".join(
            f"{k}={v!r}" for k, v in self.get_options().items() if k != "group" or v is not None
        )
        return f"{type(self).__name__}({args})"

    # -- targets -------------------------------------------------------------------------------
    @property
    def structure(self) -> str:
        return self.loss.structure

    def targets(self, label: Array, n_classes: int | None = None) -> Array:
        """Targets of the core loss from library labels (``label_scale`` applied for scores).

        Multi-class labels are class indices; with ``target="score"`` they become
        ``label_scale`` times one-hot rows of ``n_classes`` columns.
        """
        y = as_target_array(label, "label")
        if self.structure == "multiclass":
            if y.ndim == 2:
                return y if self.loss.target == "link" else y * self.label_scale
            if n_classes is None:
                raise ValueError("multi-class labels need the number of classes (`num_class`)")
            if self.loss.target == "link":
                class_targets(y, n_classes)  # validates the indices
                return y
            return class_targets(y, n_classes, self.label_scale)
        if y.ndim != 1:
            raise ValueError(
                f"labels of a {self.structure} loss must be 1-D; got shape {tuple(y.shape)}"
            )
        return y if self.loss.target == "link" else y * self.label_scale

    def _groups(self, group, n_rows: int, qid=None) -> Groups | None:
        """Query groups of a group loss: sizes (``group``) or per-row ids (``qid``), never guessed."""
        if self.structure != "group":
            return None
        if group is None and qid is None:
            group, qid = self.group, self.qid
        if group is None and qid is None:
            raise ValueError(
                f"the {self.loss.name} loss needs query groups, but none were given: pass query sizes "
                "(Dataset(group=...), DMatrix.set_group, fit(..., group=...)) or per-row ids (DMatrix(qid=...), "
                "fit(..., qid=...)) with the data, or give them to the objective (lightgbm_objective(..., group=sizes))"
            )
        return as_groups(group, n_rows, qid=qid, require_contiguous=True)

    # -- binding -------------------------------------------------------------------------------
    def bind(
        self,
        label: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        n_classes: int | None = None,
        min_leaf_hessian: float | None = None,
        min_leaf_rows: int | None = None,
    ) -> _Binding:
        """Validate and bind one training set (labels, groups, weights); done before training.

        ``group`` are query sizes, ``qid`` per-row query ids (contiguous). Raises
        ``ValueError`` for NaN/inf labels or weights, labels outside the link's domain, group
        sizes that do not add up, or query ids whose rows are not contiguous.
        """
        y = self.targets(label, n_classes)
        n = int(y.shape[0])
        groups = self._groups(group, n, qid)
        w_unit, row_w = row_weights(sample_weight, n, groups)
        kw = {} if groups is None else {"group": groups}

        core = self.loss  # (not self: the binding must not hold its objective)

        def make_full():
            return core.bind(y, sample_weight=w_unit, **kw)

        # several host blocks: the full binding is built only if a device array needs it
        lazy = A.is_numpy(y) and not one_block(self.loss, n, self.block_rows)
        full = None if lazy else make_full()
        blocks = bound_blocks(self.loss, y, groups, w_unit, full, self.block_rows)
        intercept: float | np.ndarray
        if self.structure == "multiclass":
            if n_classes is None:  # (label rows: was a TypeError from np.resize)
                raise ValueError("multi-class labels need the number of classes (`num_class`)")
            loss = cast(_MulticlassConstant, self.loss)
            intercept = np.asarray(
                loss.optimal_constant(y, w_unit, n_classes=n_classes), dtype=np.float64
            )
            if intercept.shape != (n_classes,):
                intercept = np.resize(intercept, n_classes)
        elif groups is not None:
            intercept = float(self.loss.optimal_constant(y, w_unit, group=groups))
        else:
            intercept = float(self.loss.optimal_constant(y, w_unit))
        shape = (n,) if n_classes is None or self.structure != "multiclass" else (n, n_classes)
        start = np.broadcast_to(np.asarray(intercept, dtype=np.float64), shape).copy()
        if full is None:
            _, h0 = blocks_grad_hess(blocks, start)
        else:
            _, h0 = full.grad_hess(start)
        h0 = np.asarray(A.to_numpy(h0), dtype=np.float64)
        total_w = float(n if row_w is None else row_w.sum()) * (1 if h0.ndim == 1 else h0.shape[1])
        ref = float(h0.sum()) / total_w if total_w > 0 else 0.0
        if (
            self.hessian_scale_ is not None
        ):  # fitted on the full training set (distributed workers see parts)
            ref = self.hessian_scale_
        elif not (math.isfinite(ref) and ref > 0):
            self._warn_once(
                "ref",
                (
                    f"the exact Hessian of {self.loss!r} is zero at the optimal constant; the Hessian "
                    "scale for the floor and constant policies falls back to 1 per unit weight"
                ),
            )
            ref = 1.0
        b = _Binding(
            n,
            n_classes if self.structure == "multiclass" else None,
            groups,
            row_w,
            intercept,
            blocks,
            full,
            ref,
            make_full=make_full,
        )
        mlh = self._pick(self.min_leaf_hessian, min_leaf_hessian, self._default_min_leaf_hessian)
        mlr = self._pick(self.min_leaf_rows, min_leaf_rows, self._default_min_leaf_rows)
        b.floor = max(self.hessian_floor * ref, mlh / max(mlr, 1))
        if self.hessian == "floor" and b.floor > 10.0 * ref:
            self._warn_once(
                "floor",
                (
                    f"the Hessian floor {b.floor:.3g} (min leaf Hessian {mlh:g} over {mlr} rows) is more than 10x the "
                    f"loss's Hessian scale {ref:.3g}: Newton steps are damped by the floor. Lower the library's "
                    "min_child_weight / min_sum_hessian_in_leaf"
                ),
            )
        return b

    @staticmethod
    def _pick(option, from_data, default):
        if option is not None:
            return option
        if from_data is not None:
            return from_data
        return default

    # -- evaluation ------------------------------------------------------------------------------
    def _n_threads(self) -> int:
        if self.n_jobs is not None:
            return self.n_jobs
        return max(1, min(4, os.cpu_count() or 1))

    def _exact(self, b: _Binding, y_pred):
        """Exact weighted gradient and Hessian diagonal from the core loss."""
        if not A.is_numpy(y_pred) or len(b.blocks) == 1:
            if b.full is None:
                raise RuntimeError("binding lost its full loss")
            return b.full.grad_hess(y_pred)
        threads = min(self._n_threads(), len(b.blocks))
        if threads <= 1:
            return blocks_grad_hess(b.blocks, y_pred)
        g = np.empty(y_pred.shape, dtype=np.float64)
        h = np.empty(y_pred.shape, dtype=np.float64)

        def run(block):
            s, e, bound = block
            gb, hb = bound.grad_hess(y_pred[s:e])
            g[s:e] = gb
            h[s:e] = hb

        if self._pool is None or self._pool_threads != threads:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(threads, thread_name_prefix="selrank-objective")
            self._pool_threads = threads
        # the round's work decides the kernel, not a block's (shared_calls), and each block
        # runs in a copy of this context: the fit's plan (selrank._numba planned_calls) and
        # that share reach the pool's threads and their kernel decisions
        with shared_calls(len(b.blocks)):
            futures = [
                self._pool.submit(contextvars.copy_context().run, run, block) for block in b.blocks
            ]
        for f in futures:
            f.result()
        return g, h

    def _apply_policy(self, b: _Binding, g, h):
        """The Hessian policy on the exact weighted diagonal ``h`` (host or device arrays)."""
        xp = A.get_namespace(h)
        w = b.row_weight_like(h)
        wcol = None if w is None else (w if h.ndim == 1 else w[:, None])
        b.calls += 1
        # the check costs a few passes: first call, then every 10th (host) / only the first (device)
        if self.hessian != "constant" and (b.calls == 1 or (A.is_numpy(h) and b.calls % 10 == 0)):
            self._check_vanishing(b, g, h, wcol, xp)
        if self.hessian == "exact":
            return g, h
        if self.hessian == "constant":
            return g, (xp.full_like(h, b.ref) if wcol is None else wcol * b.ref + xp.zeros_like(h))
        if self.hessian == "floor":
            if wcol is None:
                return g, (
                    np.maximum(h, b.floor)
                    if A.is_numpy(h)
                    else xp.maximum(h, xp.full_like(h, b.floor))
                )
            return g, xp.maximum(h, wcol * b.floor)
        # "upper": largest Hessian per unit weight of the query / all rows / the class column
        per = h if wcol is None else h / xp.where(wcol > 0, wcol, xp.ones_like(wcol))
        if b.groups is not None and h.ndim == 1:
            top = b.groups.broadcast(b.groups.max(per))
        else:
            top = xp.max(per, axis=0, keepdims=True) + xp.zeros_like(per)
        return g, (top if wcol is None else top * wcol)

    def _check_vanishing(self, b: _Binding, g, h, wcol, xp) -> None:
        if "vanish" in self._warned:
            return
        scale = b.ref * (1.0 if wcol is None else wcol)
        active = g != 0
        vanished = active & (h <= _VANISH * scale)
        n_active = int(xp.sum(active))
        n_vanished = int(xp.sum(vanished))
        if n_active and n_vanished > 0.5 * n_active:
            advice = {
                "exact": "leaf values are unbounded there; use hessian='floor' (the default)",
                "floor": f"the floor ({self.hessian_floor} x the reference Hessian) sets the step size there",
                "upper": "the query's largest Hessian sets the step size there",
            }[self.hessian]
            self._warn_once(
                "vanish",
                (
                    f"the Hessian of {self.loss!r} vanishes on {n_vanished} of {n_active} rows with a non-zero "
                    f"gradient: {advice}"
                ),
            )

    def _warn_once(self, key: str, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=4)

    def _evaluate(self, b: _Binding, y_pred):
        """Gradient and policy Hessian for predictions in the loss's layout."""
        g, h = self._exact(b, y_pred)
        return self._apply_policy(b, g, h)

    # -- public helpers ------------------------------------------------------------------------------
    def grad_hess(
        self,
        y_pred: Array,
        label: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        n_classes: int | None = None,
    ) -> tuple[Array, Array]:
        """Gradient and Hessian (after the policy) for arrays, binding on first use.

        ``y_pred`` is ``[n]`` or ``[n, K]`` (multi-class); the binding for ``label`` is cached
        (rebuilt when different labels come).

        Examples
        --------
        >>> import numpy as np
        >>> from selrank.gbdt import GBDTObjective
        >>> obj = GBDTObjective("pointwise", link="identity", hessian="exact")
        >>> g, h = obj.grad_hess(np.array([1.0, 3.0]), np.array([0.0, 1.0]))
        >>> g.tolist(), h.tolist()
        ([1.0, 2.0], [1.0, 1.0])
        """
        if n_classes is None and self.structure == "multiclass":
            shape = np.shape(y_pred)
            n_classes = int(shape[1]) if len(shape) == 2 else None
        if qid is not None:
            group = as_groups(group, int(np.shape(label)[0]), qid=qid, require_contiguous=True)
        b = self._binding_for_arrays(label, group, sample_weight, n_classes)
        return self._evaluate(b, y_pred)

    def _binding_for_arrays(self, label, group, sample_weight, n_classes, **leaf):
        key = "arrays"
        with self._lock:
            b = self._bindings.get(key)
            if b is not None and self._same_source(
                b.source, (label, group, sample_weight, n_classes)
            ):
                return b
            b = self.bind(
                label, group=group, sample_weight=sample_weight, n_classes=n_classes, **leaf
            )
            b.source = (label, group, sample_weight, n_classes)
            self._bindings[key] = b
            return b

    @staticmethod
    def _same_source(old, new) -> bool:
        """The same arrays (by identity, else by value) as the cached binding was built from."""
        if old is None:
            return False
        for a, c in zip(old, new):
            if a is c:
                continue
            if a is None or c is None or isinstance(a, int | float) or isinstance(c, int | float):
                if a != c:
                    return False
                continue
            an, cn = np.asarray(A.to_numpy(a)), np.asarray(A.to_numpy(c))
            if an.shape != cn.shape or not np.array_equal(an, cn):
                return False
        return True

    def fit_intercept(
        self,
        label: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        n_classes: int | None = None,
    ) -> float | np.ndarray:
        """Validate the training labels and store (and return) the optimal constant ``intercept_``.

        Also stores the reference Hessian ``hessian_scale_`` of these labels, which later
        bindings use (so that Dask workers, which see parts of the data, share one floor).

        Examples
        --------
        >>> import numpy as np
        >>> from selrank.gbdt import GBDTObjective
        >>> obj = GBDTObjective("pointwise", link="exp")
        >>> round(obj.fit_intercept(np.array([0.0, 2.0])), 6)   # log((1 + e^2) / 2)
        1.433781
        """
        self.hessian_scale_ = None
        b = self.bind(label, group=group, qid=qid, sample_weight=sample_weight, n_classes=n_classes)
        return self._take_intercept(b, label, n_classes)

    def _take_intercept(self, b: _Binding, label: Array, n_classes: int | None):
        """Refuse a degenerate start, then store the binding's intercept and Hessian scale."""
        check_degenerate_start(
            b,
            self.targets(label, n_classes),
            loss=self.loss,
            label_scale=self.label_scale,
        )
        self.intercept_ = b.intercept
        self.hessian_scale_ = b.ref
        self._fitted_intercepts.append(np.asarray(b.intercept, dtype=np.float64).copy())
        return b.intercept

    # -- the intercept travels with the booster ---------------------------------------------
    def booster_intercept(
        self, booster: Any, intercept: float | Array | None = None
    ) -> float | np.ndarray:
        """The intercept ``booster`` was trained from (a float, or one value per class).

        :meth:`train` stores it in the booster (and :meth:`save_model` in the saved model),
        so an objective that trained several boosters predicts each with its own. A booster
        trained by the library directly (after ``set_init_score`` / ``set_base_margin``)
        carries none: then the objective's intercept is used if it fitted only one, and a
        ``ValueError`` asks for ``obj.train`` or ``intercept=`` when it fitted several.
        """
        if intercept is not None:
            return _intercept_value(intercept)
        stored = self._read_intercept(booster)
        if stored is not None:
            return stored
        fitted = getattr(self, "_fitted_intercepts", [])
        if not fitted:
            if self.intercept_ is not None:
                return _intercept_value(self.intercept_)
            raise ValueError(
                "the intercept is not known: train with obj.train(...), or call fit_intercept / "
                f"{self._start_hint.split(' before')[0]} before training"
            )
        distinct = distinct_constants(fitted)
        if len(distinct) > 1:
            shown = ", ".join(str(np.round(d, 6).tolist()) for d in distinct[:4])
            raise ValueError(
                f"this booster carries no intercept (it was not trained with obj.train) and the objective fitted "
                f"{len(distinct)} different intercepts ({shown}) on its training sets: which one belongs to this "
                "booster is unknown. Train with obj.train(...), which stores the intercept in the booster, or pass "
                "intercept="
            )
        return _intercept_value(distinct[0])

    def _read_intercept(self, booster):
        value = getattr(booster, "_selrank_intercept", None)
        return None if value is None else _intercept_value(value)

    def write_intercept(self, booster: Any, intercept: Any) -> None:
        """Record ``intercept`` as the booster's selrank metadata (what :meth:`booster_intercept`
        reads; it does not change the model: :meth:`fold_intercept` does)."""
        booster._selrank_intercept = _intercept_value(intercept)

    # -- the intercept inside the model (what a serving stack reads) ------------------------
    def intercept_in_model(self, booster: Any) -> bool:
        """Whether ``booster``'s own model already includes its intercept.

        True for boosters from :meth:`train` (and models saved by :meth:`save_model`, or
        loaded from older files by :meth:`load_model`): LightGBM then carries the intercept
        in the leaf values of its first tree (one per class), XGBoost as its ``base_score``,
        and the plain library predicts ``model.predict``'s scores without selrank.
        """
        return bool(getattr(booster, "_selrank_in_model", False))

    def _mark_in_model(self, booster) -> None:
        booster._selrank_in_model = True

    def fold_intercept(self, booster: Any, intercept: float | Array | None = None) -> bool:
        """Put the booster's intercept inside its model; returns whether the model now holds it.

        Idempotent (a booster that holds its intercept is left alone). The change is checked
        on a probe row: where the library cannot hold it (LightGBM's ``linear_tree``, a
        booster without trees, an XGBoost release without vector ``base_score`` for
        multi-class) the booster is left unchanged, returns ``False`` and a warning says
        that plain-library predictions lack the intercept.
        """
        if self.intercept_in_model(booster):
            return True
        c = self.booster_intercept(booster, intercept)
        ok = self._fold(booster, np.asarray(c, dtype=np.float64))
        if ok:
            self.write_intercept(booster, c)
            self._mark_in_model(booster)
        else:
            warnings.warn(
                f"the intercept {np.round(np.asarray(c), 6).tolist()} could not be put inside this "
                f"{self.backend} model; selrank adds it when predicting, but the plain library's "
                "predictions from the saved model lack it",
                UserWarning,
                stacklevel=3,
            )
        return ok

    def _fold(self, booster, c: np.ndarray) -> bool:  # pragma: no cover - backends override
        return False

    def booster_offset(
        self, booster: Any, intercept: float | Array | None = None
    ) -> float | np.ndarray:
        """What :meth:`predict` adds to the booster's raw output: 0 when the model holds it.

        ``intercept=`` replaces the booster's intercept (for a booster that holds one, the
        difference is added).
        """
        if intercept is not None:
            if self.intercept_in_model(booster):
                held = np.asarray(self.booster_intercept(booster), dtype=np.float64)
                return _intercept_value(np.asarray(intercept, dtype=np.float64) - held)
            return _intercept_value(intercept)
        if self.intercept_in_model(booster):
            return 0.0
        return self.booster_intercept(booster)

    def adopt_booster(self, booster: Any, intercept: Any, fold: bool = True) -> None:
        """Record ``intercept`` in a booster this objective trained (:meth:`train`, or the Dask
        functions of :mod:`selrank.gbdt.dask`) and fold it into the model when ``fold``."""
        self.write_intercept(booster, intercept)
        if fold and self.fold_intercept(booster, intercept):
            with self._lock:  # a fallback for copies of the booster without selrank's metadata
                if self._fitted_intercepts:
                    self._fitted_intercepts[-1] = np.zeros_like(self._fitted_intercepts[-1])

    # -- sharing between threads ---------------------------------------------------------------
    def _private_copy(self):
        """A copy with its own bindings, pool and fitted state (for one :meth:`train` call)."""
        twin = type(self).__new__(type(self))
        state = self.__getstate__()  # a new dict: its own list of fitted intercepts
        state["_fitted_intercepts"] = []
        twin.__setstate__(state)
        twin._warned = set(self._warned)
        return twin

    def _adopt(self, twin) -> None:
        """Take over what a private copy fitted (under the lock: the last training wins)."""
        with self._lock:
            self.intercept_ = twin.intercept_
            self.hessian_scale_ = twin.hessian_scale_
            self._fitted_intercepts.extend(twin._fitted_intercepts)
            self._warned.update(twin._warned)

    def init_score(self, n_rows: int, n_classes: int | None = None) -> np.ndarray:
        """``intercept_`` repeated for ``n_rows`` rows (``[n]`` or ``[n, K]``)."""
        if self.intercept_ is None:
            raise ValueError(
                "the intercept is not known yet: call fit_intercept(...) on the training labels first"
            )
        c = np.asarray(self.intercept_, dtype=np.float64)
        if c.ndim == 0:
            return np.full(int(n_rows), float(c))
        return np.tile(c, (int(n_rows), 1))

    def _check_start(self, b: _Binding, y_pred) -> None:
        """Warn (once) when training does not start from the optimal constant."""
        if b.calls or "start" in self._warned or not A.is_numpy(y_pred) or y_pred.size == 0:
            return
        flat = y_pred.reshape(y_pred.shape[0], -1)
        if not np.all(flat == flat[:1]):
            return  # an init score or a continued model: not a bare start
        best = b.intercept if self.intercept_ is None else self.intercept_
        c = np.broadcast_to(np.asarray(best, dtype=np.float64), flat[0].shape)
        if np.allclose(flat[0], c, rtol=1e-6, atol=1e-9):
            return
        if self.structure == "group" and np.allclose(c, 0.0):
            return
        self._warn_once(
            "start",
            (
                f"training starts from a constant {np.round(flat[0], 6).tolist()} instead of the loss's optimal "
                f"constant {np.round(c, 6).tolist()}; set it with {self._start_hint}"
            ),
        )

    _start_hint = "the library's init_score / base_margin"
