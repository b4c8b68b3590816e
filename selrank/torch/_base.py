"""Base class of every head: input validation, padding, precision, weights and reduction.

A head is a ``torch.nn.Module`` called as ``head(y_pred, y_true, *, mask=None,
lengths=None, sample_weight=None)``. The base class does everything that is the same for
all heads — checking shapes and types, resolving padding (:mod:`._masking`), running in
float32 under autocast or for half-precision scores, weighting and reducing — and a
concrete head implements one method returning the unweighted loss of each *unit* (an item
or a list). Heads with a closed-form gradient (the selective matching losses: ``h(ŝ) −
h(s)``) return it too and get an analytic backward through :class:`ClosedFormGradient`
(per-unit values) or, for a ``"mean"``/``"sum"`` loss, :class:`FusedGradient` (the reduced
loss and its gradient from one pass); both differentiate the general path again under
``create_graph=True``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch import nn

from ._masking import (
    MaskedLists,
    as_target_tensor,
    check_reduction,
    compute_dtype,
    mask_all,
    mask_weight,
    neutralize,
    padding_mask,
    reduce_units,
    unit_weights,
)

__all__ = ["RankingHead", "ClosedFormGradient", "FusedGradient", "GRAD_MODES"]

GRAD_MODES = ("analytic", "autograd")


class ClosedFormGradient(torch.autograd.Function):
    """Per-unit losses whose backward is a precomputed closed-form gradient.

    ``forward(z, terms, recompute)`` calls ``terms(z)`` (without autograd) for ``(values,
    grad)``: ``values`` one loss per unit (shape ``[batch]`` for lists, ``z.shape`` for
    items) and ``grad`` the gradient of each unit's loss with respect to its own scores
    (shape of ``z``). The backward multiplies ``grad`` by the incoming per-unit gradient.
    Under ``create_graph=True`` (double backward) it instead differentiates
    ``recompute(z)`` — the same values through autograd — so that the gradient has a graph.
    """

    @staticmethod
    def forward(
        ctx: Any,
        z: torch.Tensor,
        terms: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
        recompute: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        values, grad = terms(z.detach())
        ctx.save_for_backward(z, grad)
        ctx.unit_dims = values.dim()
        ctx.recompute = recompute
        return values

    @staticmethod
    def backward(ctx: Any, grad_values: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        z, grad = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: a differentiable gradient
            return _regrad(ctx.recompute, z, grad_values), None, None
        g = grad_values
        for _ in range(grad.dim() - ctx.unit_dims):
            g = g[..., None]
        return g * grad, None, None


class FusedGradient(torch.autograd.Function):
    """A reduced loss whose gradient was computed with it (the fused paths of the heads).

    ``forward(z, total, grad, denom, again, recompute)``: ``total`` (0-d) and ``grad``
    (shape of ``z``, zero at padding) come from one pass outside autograd; the result is
    ``total / denom`` (``denom`` None: ``total``) and the backward ``grad * (grad_output /
    denom)`` — no graph of elementwise operations is built or walked. The first backward
    scales ``grad`` in place and hands it over (no new tensor); a second one
    (``retain_graph``) takes ``again()``, the same gradient computed anew. Under
    ``create_graph=True`` the gradient is recomputed by differentiating ``recompute(z)``
    (the general path's total, through autograd), so double backward works.
    """

    @staticmethod
    def forward(ctx, z, total, grad, denom, again, recompute):
        ctx.save_for_backward(z)
        ctx.grad, ctx.denom, ctx.again, ctx.recompute = grad, denom, again, recompute
        return total.clone() if denom is None else total / denom

    @staticmethod
    def backward(ctx, grad_out):
        (z,) = ctx.saved_tensors
        scale = grad_out if ctx.denom is None else grad_out / ctx.denom
        if torch.is_grad_enabled():
            return _regrad(ctx.recompute, z, scale), None, None, None, None, None
        grad, ctx.grad = ctx.grad, None
        if grad is None:
            grad = ctx.again()
        return grad.mul_(scale), None, None, None, None, None


class NaNGradient(torch.autograd.Function):
    """Identity whose backward puts NaN at the scores that were NaN (at real items).

    A loss of a NaN score is NaN, but autograd can still hand back a finite gradient for
    it: a piecewise link (SmeLU, a capped link) or a ``where`` selects a constant branch
    for NaN, whose derivative is 0. Training would go on silently; the NumPy losses (and
    the analytic gradients) give NaN. Applied to the scores of every head when a real item
    is NaN, so the class is covered whatever the head computes.
    """

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, nan_at: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(nan_at)
        return z.view_as(z)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (nan_at,) = ctx.saved_tensors
        return grad.masked_fill(nan_at, math.nan), None


def _guard_nan(z: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``z``, whose gradient is NaN wherever a real item's score is NaN (see :class:`NaNGradient`)."""
    if not (z.requires_grad and torch.is_grad_enabled()):
        return z
    if z.device.type == "cpu" and not math.isnan(z.sum().item()):
        return z  # (one pass: a sum is NaN when any item is NaN, or +inf and -inf meet)
    nan_at = torch.isnan(z.detach()) & valid
    return NaNGradient.apply(z, nan_at)


def _no_autocast(device_type: str):
    """``autocast(enabled=False)`` where autocast is on; a no-op context otherwise."""
    try:
        on = torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4
        on = (
            torch.is_autocast_cpu_enabled() if device_type == "cpu" else torch.is_autocast_enabled()
        )
    if on:
        return torch.autocast(device_type=device_type, enabled=False)
    return contextlib.nullcontext()


def _regrad(recompute, z, grad_out):
    """``∂(recompute(z))/∂z · grad_out`` with a graph (double backward of the heads)."""
    if recompute is None:
        raise RuntimeError(
            "this head's analytic gradient is not differentiable here; use grad='autograd'"
        )
    with torch.enable_grad():
        values = recompute(z)
        (g,) = torch.autograd.grad(values, z, grad_out, create_graph=True)
    return g


class RankingHead(nn.Module):
    """Base class of all heads.

    Parameters
    ----------
    reduction : {"mean", "sum", "none"}
        ``"mean"``: weighted mean over units (items or non-empty lists); ``"sum"``; ``"none"``:
        one weighted value per unit (``[batch]`` for list heads, ``[batch, list]`` for item
        heads), 0 for padding.
    padding_value : float or None
        Sentinel label of padded items (used when neither ``mask`` nor ``lengths`` is
        passed). ``None``: no sentinel.
    ignore_index : float, optional
        PyTorch's name for the same thing (``CrossEntropyLoss(ignore_index=-100)``): items
        whose label equals it are padding. When given it replaces ``padding_value``.

    Attributes
    ----------
    unit : {"item", "list"}
        What one loss value belongs to.
    """

    unit: str = "list"  # a class attribute; CoreLoss and CombinedLoss set it per instance
    #: Accepted numbers of dimensions of ``y_pred``.
    ndims: tuple[int, ...] = (2,)

    def __init__(
        self,
        *,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
    ):
        super().__init__()
        self.reduction = check_reduction(reduction, type(self).__name__)
        if ignore_index is not None:
            if isinstance(ignore_index, bool):
                raise TypeError(
                    f"`ignore_index` of {type(self).__name__} must be a number; got {ignore_index!r}"
                )
            padding_value = ignore_index
        if padding_value is not None:
            try:
                padding_value = float(padding_value)
            except (TypeError, ValueError):
                raise TypeError(
                    f"`padding_value` of {type(self).__name__} must be a number or None; got {padding_value!r}"
                ) from None
        self.padding_value = padding_value

    # -- the one method a head implements ----------------------------------------------
    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        """Unweighted loss per unit of scores ``z`` for targets ``y``.

        ``lists`` is the reducer of the batch (``lists.valid``: the real items). ``z`` and
        ``y`` are in the compute dtype and finite everywhere: padded entries hold copies of
        a real item of their list (:func:`~selrank.torch._masking.neutralize`).
        """
        raise NotImplementedError

    # -- public ----------------------------------------------------------------------------
    def forward(
        self,
        y_pred: torch.Tensor,
        y_true: Any,
        *,
        mask: Any = None,
        lengths: Any = None,
        sample_weight: Any = None,
        reduction: str | None = None,
    ) -> torch.Tensor:
        """Loss of scores ``y_pred`` for targets ``y_true``.

        Parameters
        ----------
        y_pred : Tensor ``[batch, list]``
            Scores (any floating dtype; half precision is computed in float32).
        y_true : Tensor or array ``[batch, list]``
            Labels or teacher scores; padded entries may hold the sentinel.
        mask : bool Tensor ``[batch, list]``, optional
            ``True`` for real items.
        lengths : int Tensor ``[batch]``, optional
            Real items at the start of each list.
        sample_weight : Tensor ``[batch]`` or ``[batch, list]``, optional
            Per-list or per-item weights.
        reduction : {"mean", "sum", "none"}, optional
            Overrides the head's ``reduction`` for this call.
        """
        reduction = (
            self.reduction if reduction is None else check_reduction(reduction, type(self).__name__)
        )
        z, y, lists = self._prepare(y_pred, y_true, mask, lengths)
        with torch.autocast(device_type=z.device.type, enabled=False):
            values = self._values(z, y, lists)
            weights = unit_weights(
                self._unit_valid(y, lists.valid), sample_weight, self.unit, values
            )
            return reduce_units(values, weights, reduction)

    def total_weight(
        self,
        y_pred: torch.Tensor,
        y_true: Any,
        *,
        mask: Any = None,
        lengths: Any = None,
        sample_weight: Any = None,
    ) -> torch.Tensor:
        """The denominator of ``reduction="mean"``: the summed weight of the units.

        A data-parallel trainer whose ranks see parts of one batch divides each rank's
        ``reduction="sum"`` loss by the total weight of the whole batch, which makes the
        averaged gradient exactly that of the mean over the batch.
        """
        z, y, lists = self._prepare(y_pred, y_true, mask, lengths)
        return unit_weights(self._unit_valid(y, lists.valid), sample_weight, self.unit, z).sum()

    def partial_mean(
        self,
        y_pred: torch.Tensor,
        y_true: Any,
        *,
        total_weight: torch.Tensor | float,
        mask: Any = None,
        lengths: Any = None,
        sample_weight: Any = None,
    ) -> torch.Tensor:
        """This part of a batch's contribution to the batch's mean: its sum / ``total_weight``.

        ``total_weight`` is :meth:`total_weight` of the whole batch. Data-parallel ranks add
        up (average, times the world size) to exactly the mean over the batch.
        """
        return (
            self(
                y_pred,
                y_true,
                mask=mask,
                lengths=lengths,
                sample_weight=sample_weight,
                reduction="sum",
            )
            / total_weight
        )

    def _values(self, z, y, lists):
        valid = lists.valid
        if not valid.numel() or not lists.any_real:
            # nothing real in the batch (no lists, empty lists or all padding): a zero loss
            # that keeps the graph (a zero, finite gradient)
            zeros = torch.where(valid, z, torch.zeros((), dtype=z.dtype, device=z.device)) * 0.0
            if self.unit == "batch":
                return zeros.sum().reshape(1)
            return zeros if self.unit == "item" else zeros.sum(dim=-1)
        return self.unit_values(z, y, lists)

    def _unit_valid(self, y: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Which items count for the weights (heads may drop lists, e.g. without relevant items)."""
        return valid

    def _check_pred(self, y_pred) -> torch.Tensor:
        name = type(self).__name__
        if not torch.is_tensor(y_pred):
            raise TypeError(
                f"`y_pred` of {name} must be a torch.Tensor; got {type(y_pred).__name__}"
            )
        if not y_pred.is_floating_point():
            raise TypeError(
                f"`y_pred` of {name} must be a floating tensor; got dtype {y_pred.dtype}"
            )
        if y_pred.dim() not in self.ndims:
            want = " or ".join(f"{d}-D" for d in self.ndims)
            raise ValueError(
                f"`y_pred` of {name} must be {want} ([batch, list]); got shape {tuple(y_pred.shape)}"
            )
        return y_pred

    def _targets(self, y_true, z: torch.Tensor) -> torch.Tensor:
        y = as_target_tensor(y_true, z)
        if tuple(y.shape) != tuple(z.shape):
            raise ValueError(
                f"`y_pred` and `y_true` must have the same shape; got {tuple(z.shape)} and {tuple(y.shape)}"
            )
        return y

    def _prepare(self, y_pred, y_true, mask, lengths):
        z, y, valid, full = self._inputs(y_pred, y_true, mask, lengths)
        if not full:
            z, y = neutralize(valid, z, y)
        return z, y, MaskedLists(valid, full=full, neutralized=True)

    def _inputs(self, y_pred, y_true, mask, lengths):
        """Checked scores and targets in the compute dtype, the real items and whether all are."""
        y_pred = self._check_pred(y_pred)
        z = y_pred.to(compute_dtype(y_pred.dtype))
        y = self._targets(y_true, z)
        valid = padding_mask(y, mask=mask, lengths=lengths, padding_value=self.padding_value)
        full = mask_all(valid)
        z = _guard_nan(z, valid)
        if y.device.type == "cpu" and not math.isfinite(y.sum().item()):
            # the sum decides in one pass; the search for the culprit runs only when it fails
            bad = valid & ~torch.isfinite(y)
            if bool(bad.any()):
                i = torch.nonzero(bad)[0].tolist()
                raise ValueError(
                    f"`y_true` must be finite at real items; found {float(y[tuple(i)])!r} at index {i}"
                )
        return z, y, valid, full

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}, padding_value={self.padding_value!r}"


class AnalyticHead(RankingHead):
    """A head whose units have a closed-form gradient (see :class:`ClosedFormGradient`).

    Subclasses implement ``terms(z, y, lists, with_grad)`` returning ``(values, grad)``
    (``grad`` is ``None`` when ``with_grad`` is false).

    Parameters
    ----------
    grad : {"analytic", "autograd"}
        ``"analytic"``: backward is the closed form, computed in the forward pass (faster,
        less memory, exact at the minimum; under ``create_graph=True`` the general path is
        differentiated instead, so double backward works); ``"autograd"``: differentiate
        the loss value.

    Heads that set ``fused = True`` evaluate ``"mean"`` and ``"sum"`` without sample
    weights through :meth:`_fused` (:class:`FusedGradient`).
    """

    #: Lists are evaluated about this many items at a time, which bounds the temporaries
    #: alive at once (memory taken fresh from the OS costs page faults on CPU). With the
    #: in-place list computations each chunk's fixed cost dominates below this size: the
    #: listwise head measured 1.6-1.8x the ListNet reference at 2^17 items per chunk,
    #: 1.6-2.0x at 2^16, 2.0-2.4x at 2^15 and 1.5-2.1x unchunked (2026-11-23, medians and
    #: minima at the torch_heads shapes).
    chunk_items: int | None = 1 << 17

    def __init__(self, *, grad: str = "analytic", **kwargs):
        super().__init__(**kwargs)
        if grad not in GRAD_MODES:
            raise ValueError(
                f"`grad` of {type(self).__name__} must be one of {GRAD_MODES}; got {grad!r}"
            )
        self.grad = grad

    def terms(self, z, y, lists, with_grad: bool):
        raise NotImplementedError

    def chunked_terms(self, z, y, lists, with_grad: bool):
        """:meth:`terms` over chunks of lists (the values and gradients concatenated)."""
        rows = (
            z.shape[0]
            if self.chunk_items is None or z.dim() < 2
            else max(1, self.chunk_items // max(z.shape[-1], 1))
        )
        if z.dim() < 2 or rows >= z.shape[0]:
            return self.terms(z, y, lists, with_grad)
        parts = [
            self.terms(z[i : i + rows], y[i : i + rows], lists.rows(i, i + rows), with_grad)
            for i in range(0, z.shape[0], rows)
        ]
        values = torch.cat([p[0] for p in parts])
        return values, (torch.cat([p[1] for p in parts]) if with_grad else None)

    def unit_values(self, z, y, lists):
        if self.grad == "analytic" and z.requires_grad and torch.is_grad_enabled():
            return ClosedFormGradient.apply(
                z,
                lambda zd: self.chunked_terms(zd, y, lists, True),
                lambda zz: self.terms(zz, y, lists, False)[0],
            )
        if self.grad == "analytic":  # no graph needed: chunks are cheaper
            return self.chunked_terms(z, y, lists, False)[0]
        return self.terms(z, y, lists, False)[0]

    # -- the fused path ------------------------------------------------------------------
    #: Heads whose "mean" / "sum" without sample weights may take :meth:`_fused`.
    fused: ClassVar[bool] = False

    def fused_neutralizes(self) -> bool:
        """Whether :meth:`_fused` overwrites the padding first (list heads: padded values
        would enter list maxima and sums). A head whose units are single items may say no:
        its padded slots are multiplied by a zero weight, and a non-finite result falls
        back to the general path."""
        return True

    def forward(
        self,
        y_pred: torch.Tensor,
        y_true: Any,
        *,
        mask: Any = None,
        lengths: Any = None,
        sample_weight: Any = None,
        reduction: str | None = None,
    ) -> torch.Tensor:
        reduction = (
            self.reduction if reduction is None else check_reduction(reduction, type(self).__name__)
        )
        if self.fused and self.grad == "analytic" and sample_weight is None and reduction != "none":
            out = self._fused(y_pred, y_true, mask, lengths, reduction)
            if out is not None:
                return out
        return super().forward(
            y_pred,
            y_true,
            mask=mask,
            lengths=lengths,
            sample_weight=sample_weight,
            reduction=reduction,
        )

    def _fused(self, y_pred, y_true, mask, lengths, reduction):
        """The ``"mean"`` / ``"sum"`` loss and its gradient in one pass, or None.

        The general path builds a graph over the padding, the weighting and the reduction
        (each a pass over the batch forward and again backward); here the reduced loss and
        its gradient (times the unit weights and the padding mask) are computed together
        and :class:`FusedGradient` returns ``grad_output * grad``. The values are those of
        the general path (the same :meth:`terms`, weights and sum) and so is the gradient
        (the same products by 0/1 weights and by ``grad_output / denominator``). None — the
        general path runs — where a value or gradient is not finite or nothing is real.
        """
        z, y, valid, full = self._inputs(y_pred, y_true, mask, lengths)
        if valid.numel() == 0:
            return None
        with _no_autocast(z.device.type):
            need_grad = z.requires_grad and torch.is_grad_enabled()
            item = self.unit == "item"
            vw = None if full else mask_weight(valid, z.dtype)  # 0/1 per item
            zd, yn = z.detach(), y
            neutral = not full and self.fused_neutralizes()
            if neutral:
                zd, yn = neutralize(valid, zd, y, weight=vw)
            if item:  # item terms reduce over no list: the reducer only chunks
                lists = MaskedLists.unchecked(valid, full=full, weight=vw)
            else:
                lists = MaskedLists(valid, full=full, neutralized=True, weight=vw)
                if not lists.any_real:
                    return None
            values, grad = self.chunked_terms(zd, yn, lists, need_grad)
            if item:
                weights = vw
                total = values.sum() if vw is None else values.mul_(vw).sum()  # None: full
                denom = float(valid.numel()) if vw is None else vw.sum()
            else:
                unit_valid = self._unit_valid(y, valid)
                weights = unit_weights(unit_valid, None, self.unit, values)
                total = (values * weights).sum()
                denom = weights.sum()
            check = total
            if full:
                gw = None
            elif item or unit_valid is valid:
                gw = vw
            else:
                gw = mask_weight(unit_valid, z.dtype)
            if need_grad:
                if gw is not None:
                    # zero gradient at padding and in lists of weight 0 (0/1 weights: the
                    # products of the backward of the weighting and of neutralize, in one)
                    grad = grad.mul_(gw)
                if not neutral and not full:
                    check = check + grad.sum()  # garbage at the (unneutralized) padding
            if not math.isfinite(check.item()):
                return None
            if item and not full and not float(denom) > 0:
                return None
            if need_grad:

                def recompute(zz):
                    zn, yr = (zz, y) if full else neutralize(valid, zz, y)
                    v = self.terms(zn, yr, lists, False)[0]
                    return v.sum() if weights is None else (v * weights).sum()

                def again():
                    g = self.chunked_terms(zd, yn, lists, True)[1]
                    return g if gw is None else g.mul_(gw)

                # the denominator is positive here (the general path's where() picks it)
                return FusedGradient.apply(
                    z, total, grad, denom if reduction == "mean" else None, again, recompute
                )
            return total / denom if reduction == "mean" else total

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, grad={self.grad!r}"
