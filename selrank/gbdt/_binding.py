"""One training set bound for boosting: weights per row, blocks, and the check of the start.

:meth:`GBDTObjective.bind <selrank.gbdt.GBDTObjective.bind>` validates the labels, groups
and weights of a training set once and keeps what every boosting round reuses in a
:class:`_Binding`; the pieces that do not depend on the objective's options live here:

* :func:`row_weights` — the weights the core loss takes and each row's effective weight
  (a query's rows share their query's weight) for the Hessian policy;
* :func:`bound_blocks` — the rows cut into blocks of about ``block_rows`` rows that never
  cut a query, each a separately bound core loss (host evaluation in a thread pool);
* :func:`check_degenerate_start` — refuses targets that saturate the loss at its optimal
  constant (the trees would learn nothing).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _array as A
from .._groups import Groups
from .._numba import shared_calls
from .._validation import as_weight
from ..losses import Loss
from ..losses.inputs import group_weights

__all__ = ["row_weights", "bound_blocks", "check_degenerate_start"]


class _Binding:
    """Everything fixed for one training set: bound core losses, weights, intercept, scale."""

    def __init__(
        self,
        n_rows: int,
        n_classes: int | None,
        groups: Groups | None,
        row_weight,
        intercept,
        blocks: list[tuple[int, int, Any]],
        full,
        ref: float,
        make_full: Any = None,
    ):
        self.n_rows = n_rows
        self.n_classes = n_classes
        self.groups = groups
        self.row_weight = row_weight  # per row effective weight (None: all 1)
        self.intercept = intercept
        self.blocks = blocks  # [(start, stop, BoundLoss)] for host evaluation
        self._full = full  # one BoundLoss over all rows (device evaluation), built lazily
        self._make_full = make_full
        self.ref = ref
        self.floor: float = 0.0
        self.calls = 0
        self.source: Any = None  # what the binding was built from (identity check)
        # the labels and weights bound, while a Dataset is not built yet (then compared)
        self.label: Any = None
        self.weight: Any = None
        self._cache: dict[tuple[str, ...], Any] = {}  # row weights by namespace, device, dtype

    @property
    def full(self):
        """One bound loss over all rows: the single block, or (for device arrays) built on first
        use, so that host training with several blocks holds the bound labels once, not twice."""
        if self._full is None and self._make_full is not None:
            self._full = self._make_full()
        return self._full

    def host_grad_hess(self, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of host scores ``pred`` (the full binding if built, else block
        by block)."""
        if self._full is not None:
            g, h = self._full.grad_hess(pred)
            return np.asarray(A.to_numpy(g)), np.asarray(A.to_numpy(h))
        return blocks_grad_hess(self.blocks, pred)

    def row_weight_like(self, like):
        """The per-row weights as an array like ``like`` (cached per namespace, device, dtype)."""
        if self.row_weight is None:
            return None
        key = (
            "row_weight",
            type(like).__module__,
            str(getattr(like, "device", "")),
            str(like.dtype),
        )
        hit = self._cache.get(key)
        if hit is None:
            hit = A.as_float_array(self.row_weight, like=like, name="row_weight")
            self._cache[key] = hit
        return hit


def row_weights(sample_weight, n: int, groups: Groups | None):
    """Weights for the core loss and the effective weight of each row (for the policy)."""
    if sample_weight is None:
        return None, None
    w = np.asarray(A.to_numpy(sample_weight), dtype=np.float64).reshape(-1)
    if w.size == 0:
        return None, None
    if groups is not None:
        # the core loss takes the weights as given (per row, or per query as XGBoost stores
        # ranking weights); the policy uses each row's query weight (the mean of its rows)
        wg = group_weights(groups, w)
        return w, groups.broadcast(wg)
    w = as_weight(w, n)
    return w, w


def blocks_grad_hess(blocks: list[tuple[int, int, Any]], pred: np.ndarray):
    """Gradient and Hessian of host scores ``pred`` evaluated block by block, in order."""
    g = np.empty(pred.shape, dtype=np.float64)
    h = np.empty(pred.shape, dtype=np.float64)
    with shared_calls(len(blocks)):  # one step over all rows: its work decides the kernel
        for s, e, bound in blocks:
            gb, hb = bound.grad_hess(pred[s:e])
            g[s:e] = A.to_numpy(gb)
            h[s:e] = A.to_numpy(hb)
    return g, h


def one_block(loss: Loss, n: int, block_rows: int) -> bool:
    """Whether ``n`` rows are bound (and evaluated on the host) in one piece."""
    return n <= block_rows * 1.5 or not loss.separable


def bound_blocks(
    loss: Loss, y, groups: Groups | None, w_unit, full, block_rows: int
) -> list[tuple[int, int, Any]]:
    """Row blocks aligned with query boundaries, each bound separately (host evaluation);
    ``full`` (the loss bound over all rows) is the one block when :func:`one_block`."""
    n = int(y.shape[0])
    if one_block(loss, n, block_rows):
        return [(0, n, full)]
    if groups is None:
        cuts = np.arange(0, n, block_rows, dtype=np.int64)
    else:
        offsets = groups.offsets
        cuts = offsets[np.searchsorted(offsets, np.arange(0, n, block_rows), side="left")]
    cuts = np.unique(np.append(cuts, n))
    if cuts[0] != 0:
        cuts = np.concatenate([[0], cuts])
    out = []
    for s, e in zip(cuts[:-1].tolist(), cuts[1:].tolist()):  # loop over blocks, not queries
        if groups is None:
            w = None if w_unit is None else w_unit[s:e]
            out.append((s, e, loss.bind(y[s:e], sample_weight=w)))
        else:
            g0, g1 = np.searchsorted(groups.offsets, [s, e])
            sizes = groups.sizes[g0:g1]
            if w_unit is None:
                w = None
            else:  # per-row weights follow the rows, per-query weights the queries
                w = w_unit[s:e] if w_unit.size == n else w_unit[g0:g1]
            out.append((s, e, loss.bind(y[s:e], group=Groups(sizes), sample_weight=w)))
    return out


def check_degenerate_start(b: _Binding, targets: Any, *, loss: Loss, label_scale: float) -> None:
    """Refuse targets that saturate the loss at its optimal constant (nothing to learn from).

    A composite softmax with the exponential scaling and target scores in the tens
    (labels x50, say) has a Hessian ~1e19 times its gradient at the start: every Newton
    step is ~1e-10 and the model stays constant. The mean Newton step ``sum|g| / sum h``
    is compared with the spread of the targets.

    ``targets`` are the objective's target values of the labels
    (:meth:`GBDTObjective.targets <selrank.gbdt.GBDTObjective.targets>`), ``loss`` its core
    loss and ``label_scale`` the factor the advice names; the objective itself is not needed.
    """
    t = np.asarray(A.to_numpy(targets), dtype=np.float64)
    shape = (b.n_rows,) if b.n_classes is None else (b.n_rows, b.n_classes)
    start = np.broadcast_to(np.asarray(b.intercept, dtype=np.float64), shape).copy()
    g, h = b.host_grad_hess(start)
    sg = float(np.abs(np.asarray(A.to_numpy(g))).sum())
    sh = float(np.asarray(A.to_numpy(h)).sum())
    spread = float(np.std(t))
    if not (sg > 0 and sh > 0 and spread > 0 and math.isfinite(sg) and math.isfinite(sh)):
        return
    step = sg / sh
    if step >= 1e-6 * spread:
        return
    top = float(np.max(np.abs(t)))
    if loss.target == "score":
        fix = (
            f"scale the targets down: label_scale={label_scale * 2.0 / top:.3g} (targets up to 2) instead "
            f"of {label_scale:g}, or divide the labels"
        )
    else:
        fix = "rescale the labels"
    raise ValueError(
        f"{loss!r} is saturated at its optimal constant: target scores reach {top:.3g} and the mean Newton "
        f"step is {step:.2g} for targets spread over {spread:.3g}, so the trees would learn nothing (a constant "
        f"model). {fix[0].upper() + fix[1:]}"
    )
