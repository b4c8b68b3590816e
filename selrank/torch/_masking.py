"""Padding, masked list reductions and the one reduction helper shared by every head.

Batches of ranked lists arrive as dense ``[batch, list]`` tensors in which short lists are
padded. Users mark the padding in one of three ways, all accepted by every head:

* a boolean ``mask`` (``True`` for a real item — the opposite of PyTorch's
  ``key_padding_mask``, which is ``True`` for padding: pass ``~key_padding_mask``),
* a ``lengths`` tensor (the first ``lengths[b]`` items of list ``b`` are real),
* a *sentinel* label (``padding_value``, default ``-1``) in ``y_true`` — it marks padding
  when neither ``mask`` nor ``lengths`` is given. With a mask or lengths, an item marked
  real whose label is the sentinel is refused (an inverted ``key_padding_mask`` puts the
  ``-1`` labels of the pads among the real items); targets that may genuinely equal the
  sentinel (teacher scores) need ``padding_value=None``.

Everything that touches padding lives here, so a head's own code never repeats a masking
block (allRank's mistake):

* :func:`padding_mask` turns the three conventions into one boolean mask;
* :func:`neutralize` overwrites padded entries with a *copy of a real entry of the same
  list* (detached), so no padded value — ``-inf``, ``NaN`` or a huge score — can reach an
  ``exp``, and padded slots receive exactly zero gradient. This is what keeps the forward
  *and* the backward free of ``0·inf`` and ``-inf − (-inf)``;
* :class:`MaskedLists` is the list reducer of :func:`selrank.scalings.composite_softmax`
  (the API of :class:`selrank._groups.DenseLists`) that ignores padded entries;
* :func:`unit_weights` and :func:`reduce_units` implement ``reduction="mean" | "sum" |
  "none"`` with per-item or per-list weights for every head.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .._validation import REDUCTIONS, check_reduction

__all__ = [
    "REDUCTIONS",
    "padding_mask",
    "neutralize",
    "MaskedLists",
    "unit_weights",
    "reduce_units",
    "as_target_tensor",
    "compute_dtype",
    "check_reduction",
]


def as_bytes(mask: torch.Tensor) -> torch.Tensor:
    """A boolean mask as 0/1 bytes (a view, no copy).

    On CPU, reductions and conversions of ``uint8`` run vectorised while those of ``bool``
    cost about an ``exp`` per element; every mask reduction and 0/1 weight goes through this.
    """
    return mask.view(torch.uint8) if mask.dtype == torch.bool else mask


def mask_all(mask: torch.Tensor) -> bool:
    """``bool(mask.all())`` through the byte view (see :func:`as_bytes`)."""
    return bool(as_bytes(mask).all())


def mask_weight(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``mask`` as 0/1 numbers of ``dtype`` (through the byte view, see :func:`as_bytes`)."""
    return as_bytes(mask).to(dtype)


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Losses run in float32 for half-precision scores (as autocast's float32 op list does)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def as_target_tensor(y_true: Any, like: torch.Tensor, name: str = "y_true") -> torch.Tensor:
    """``y_true`` as a tensor on ``like``'s device in ``like``'s dtype (no gradient)."""
    if isinstance(y_true, str | bytes) or y_true is None:
        raise TypeError(f"`{name}` must be a tensor or numeric array; got {type(y_true).__name__}")
    if hasattr(y_true, "to_numpy") and not isinstance(y_true, np.ndarray | torch.Tensor):
        y_true = y_true.to_numpy()  # polars / pandas
    if not torch.is_tensor(y_true):
        arr = np.asarray(y_true)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"`{name}` must be a tensor or numeric array; got dtype {arr.dtype}")
        y_true = torch.as_tensor(arr)
    if y_true.dtype == torch.bool or y_true.is_complex():
        raise TypeError(f"`{name}` must have a real numeric dtype; got {y_true.dtype}")
    return y_true.detach().to(device=like.device, dtype=like.dtype)


def _as_bool_mask(mask: Any, shape: tuple, device) -> torch.Tensor:
    if not torch.is_tensor(mask):
        mask = torch.as_tensor(np.asarray(mask))
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(
            f"`mask` must have the shape of `y_true` {tuple(shape)}; got {tuple(mask.shape)}"
        )
    if mask.dtype != torch.bool:
        if mask.is_floating_point() or mask.is_complex():
            raise TypeError(f"`mask` must be boolean (True for real items); got dtype {mask.dtype}")
        if bool(((mask != 0) & (mask != 1)).any()):
            raise ValueError("`mask` given as integers must hold only 0 and 1")
        mask = mask != 0
    return mask.to(device)


def _lengths_mask(lengths: Any, shape: tuple, device) -> torch.Tensor:
    if len(shape) != 2:
        raise ValueError(
            f"`lengths` needs targets of shape [batch, list]; got shape {tuple(shape)}"
        )
    if not torch.is_tensor(lengths):
        lengths = torch.as_tensor(np.asarray(lengths))
    if lengths.dtype == torch.bool or lengths.is_complex():
        raise TypeError(f"`lengths` must hold whole numbers; got dtype {lengths.dtype}")
    if lengths.is_floating_point() and bool((lengths != torch.round(lengths)).any()):
        raise ValueError("`lengths` must hold whole numbers; got fractional values")
    if tuple(lengths.shape) != (shape[0],):
        raise ValueError(
            f"`lengths` must have shape ({shape[0]},), one per list; got {tuple(lengths.shape)}"
        )
    lengths = lengths.to(device=device, dtype=torch.long)
    bad = (lengths < 0) | (lengths > shape[1])
    if bool(bad.any()):
        i = int(torch.nonzero(bad)[0, 0])
        raise ValueError(
            f"`lengths` must lie in [0, {shape[1]}]; list {i} has length {int(lengths[i])}"
        )
    return torch.arange(shape[1], device=device)[None, :] < lengths[:, None]


def _refuse_real_sentinels(y_true: torch.Tensor, valid: torch.Tensor, padding_value, by: str):
    """Refuse items marked real (by ``mask`` or ``lengths``) whose label is the padding sentinel."""
    if (
        y_true.device.type == "cpu"
        and y_true.dtype in (torch.float32, torch.float64)
        and y_true.numel() > 0
    ):
        # the search runs only when a hit exists: on CPU a comparison written as 0/1 floats
        # and their dot product with the mask's 0/1 floats cost about a sixth of a boolean
        # comparison, ``&`` and ``any`` (see as_bytes)
        found = torch.eq(y_true, padding_value, out=torch.empty_like(y_true)).reshape(-1)
        if not torch.dot(found, mask_weight(valid, y_true.dtype).reshape(-1)).item() > 0:
            return
    hit = valid & (y_true == padding_value)
    if not bool(hit.any()):
        return
    count = int(hit.sum())
    first = torch.nonzero(hit)[0].tolist()
    if by == "mask":
        why = (
            "selrank's `mask` is True for REAL items, while PyTorch's key_padding_mask "
            "(nn.MultiheadAttention, nn.Transformer) is True for PADDING: pass mask=~key_padding_mask"
        )
    else:
        why = "`lengths` counts padded items as real: check that it holds each list's real length"
    raise ValueError(
        f"`{by}` marks as real {count} item(s) whose label is the padding value {float(padding_value)!r} "
        f"(first at index {first}); {why}. If {float(padding_value)!r} is a genuine target (e.g. a "
        "teacher score), pass padding_value=None to the head"
    )


def padding_mask(
    y_true: torch.Tensor,
    *,
    mask: Any = None,
    lengths: Any = None,
    padding_value: float | None = -1.0,
) -> torch.Tensor:
    """Boolean mask (``True`` for real items) from any of the three padding conventions.

    Parameters
    ----------
    y_true : Tensor
        Targets of shape ``[batch, list]`` (or any shape for item-wise heads).
    mask : bool tensor, optional
        ``True`` for real items; shape of ``y_true``.
    lengths : int tensor of shape ``[batch]``, optional
        Number of real items at the start of each list.
    padding_value : float or None
        Sentinel label of padded items: it marks the padding when neither ``mask`` nor
        ``lengths`` is given, and with them an item marked real must not carry it (refused:
        the mask is inverted or the lengths too long). ``None`` means no sentinel.

    Examples
    --------
    >>> import torch
    >>> y = torch.tensor([[2.0, 0.0, -1.0], [1.0, -1.0, -1.0]])
    >>> padding_mask(y).tolist()
    [[True, True, False], [True, False, False]]
    >>> padding_mask(y, lengths=torch.tensor([2, 1])).tolist()
    [[True, True, False], [True, False, False]]
    >>> padding_mask(y, mask=torch.tensor([[False, False, True], [False, True, True]]))
    Traceback (most recent call last):
    ...
    ValueError: `mask` marks as real 3 item(s) whose label is the padding value -1.0 ...
    """
    shape = tuple(y_true.shape)
    if mask is not None and lengths is not None:
        raise ValueError("give at most one of `mask` and `lengths`; got both")
    if mask is not None or lengths is not None:
        if mask is not None:
            valid = _as_bool_mask(mask, shape, y_true.device)
        else:
            valid = _lengths_mask(lengths, shape, y_true.device)
        if padding_value is not None:
            _refuse_real_sentinels(
                y_true, valid, padding_value, "mask" if lengths is None else "lengths"
            )
        return valid
    if padding_value is None:
        return torch.ones(shape, dtype=torch.bool, device=y_true.device)
    return y_true != padding_value


def _finite_spread(t: torch.Tensor) -> bool:
    """Whether ``max(t) − min(t)`` is finite (so is every value and every difference)."""
    if t.numel() == 0:
        return False
    lo, hi = torch.aminmax(t)
    return math.isfinite((hi - lo).item())


def neutralize(
    valid: torch.Tensor,
    x: torch.Tensor,
    *others: torch.Tensor,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """Overwrite padded entries (last axis = list) with copies of one real item of the list.

    The source of each list is its first real item; the same item fills ``x`` and every
    tensor of ``others`` (the targets), so every elementwise function of the inputs takes,
    at a padded slot, a value it also takes at a real item. Hence no padded value —
    ``-inf``, ``NaN`` or a huge score — reaches an ``exp``, a link's domain is respected, a
    list maximum is unchanged by the padding, and padded slots get exactly zero gradient
    (the copies are detached). A list without real entries copies the source of the first
    list that has one (a harmless dummy list whose loss the heads discard); 0 if none has.
    ``weight`` may pass ``valid`` as 0/1 numbers of the tensors' dtype (else made here).

    Examples
    --------
    >>> import torch
    >>> x = torch.tensor([[1.0, float("inf")], [float("nan"), 5.0], [7.0, 8.0]])
    >>> y = torch.tensor([[10.0, -1.0], [-1.0, 50.0], [-1.0, -1.0]])
    >>> valid = torch.tensor([[True, False], [False, True], [False, False]])
    >>> [t.tolist() for t in neutralize(valid, x, y)]
    [[[1.0, 1.0], [5.0, 5.0], [1.0, 1.0]], [[10.0, 10.0], [50.0, 50.0], [10.0, 10.0]]]
    """
    if valid.dim() == 0 or valid.shape[-1] == 0:
        return (x, *others)
    nonempty = as_bytes(valid).amax(dim=-1, keepdim=True)
    every = nonempty.amin().item() == 1
    if every and as_bytes(valid)[..., 0].amin().item() == 1:
        idx = None  # every list starts with a real item (the usual padding)
    elif bool((as_bytes(valid)[..., :1] | (1 - nonempty)).all()):
        idx = None  # every list that has a real item starts with one
    else:
        idx = as_bytes(valid).argmax(dim=-1, keepdim=True)
    if every:  # every list has a real item: one select per tensor
        w = weight
        out = []
        for t in (x, *others):
            src = t.detach()[..., :1] if idx is None else t.detach().gather(-1, idx)
            if t.is_floating_point() and _finite_spread(t.detach()):
                # every difference finite: lerp by the 0/1 weight is the select, exactly
                # (s + 0·(x − s) and x − (x − s)·0), in float passes (see as_bytes); its
                # backward is g·w
                if w is None or w.dtype != t.dtype:
                    w = mask_weight(valid, t.dtype)
                out.append(torch.lerp(src, t, w))
            else:
                out.append(torch.where(valid, t, src))
        return tuple(out)
    nonempty = nonempty.to(torch.bool)
    flat_nonempty = nonempty.reshape(-1)
    row = flat_nonempty.to(torch.uint8).argmax()  # first list with a real item
    out = []
    for t in (x, *others):
        td = t.detach()
        src = td[..., :1] if idx is None else td.gather(-1, idx)
        anywhere = torch.where(
            flat_nonempty[row],
            src.reshape(-1)[row],
            torch.zeros((), dtype=t.dtype, device=t.device),
        )
        out.append(torch.where(valid, t, torch.where(nonempty, src, anywhere)))
    return tuple(out)


class MaskedLists:
    """List reducer over the last axis that ignores padded entries.

    Same API as :class:`selrank._groups.DenseLists` (``sum``, ``max``, ``broadcast``), so
    the core's :func:`~selrank.scalings.composite_softmax` runs on padded batches
    unchanged. Reduced inputs must be finite at padded positions, which
    :func:`neutralize` guarantees; a fully padded list is reduced as a full (dummy) list —
    its loss is discarded by a zero weight — so that every list has an entry.

    Parameters
    ----------
    valid : bool tensor ``[..., list]``
        ``True`` for real entries.
    neutralized : bool
        The reduced inputs are elementwise functions of tensors passed through
        :func:`neutralize`: padded entries repeat real ones, so a maximum needs no mask.

    Attributes
    ----------
    valid : bool tensor
        The real items.
    mask : bool tensor
        The entries reduced over: the real items, and every entry of a fully padded list.
    full : bool
        No padding at all.

    Examples
    --------
    >>> import torch
    >>> lists = MaskedLists(torch.tensor([[True, True, False]]))
    >>> lists.sum(torch.tensor([[1.0, 2.0, 100.0]])).tolist()
    [3.0]
    >>> lists.log_softmax(torch.tensor([[0.0, 0.0, 50.0]])).exp().tolist()
    [[0.5, 0.5, 1.0]]
    """

    def __init__(
        self,
        valid: torch.Tensor,
        *,
        full: bool | None = None,
        neutralized: bool = False,
        weight: torch.Tensor | None = None,
    ):
        self.valid = valid
        self.full = mask_all(valid) if full is None else bool(full)
        self.neutralized = neutralized
        self.mask = valid
        self.any_real = True
        self._weights: dict = {}
        if not self.full:
            w = mask_weight(valid, torch.float32) if weight is None else weight
            sums = w.sum(dim=-1, keepdim=True)
            empty = sums == 0 if sums.numel() and sums.amin().item() == 0 else None
            if empty is not None:
                self.any_real = not bool(empty.all())
                self.mask = valid | empty
                w = w + empty.to(w.dtype)
            self._weights[w.dtype] = w

    @classmethod
    def unchecked(
        cls, valid: torch.Tensor, *, full: bool, weight: torch.Tensor | None = None
    ) -> MaskedLists:
        """A reducer that does not look for fully padded lists (no synchronising check):
        for terms that reduce over no list (``mask`` is ``valid``, ``any_real`` assumed)."""
        weights = {} if weight is None else {weight.dtype: weight}
        return cls._of(valid, valid, bool(full), True, True, weights)

    @classmethod
    def _of(
        cls, valid, mask, full: bool, neutralized: bool, any_real: bool, weights: dict
    ) -> MaskedLists:
        """A reducer of these parts as they are (no checks: :meth:`unchecked`, :meth:`rows`)."""
        self = cls.__new__(cls)
        self.valid, self.mask = valid, mask
        self.full, self.neutralized, self.any_real = full, neutralized, any_real
        self._weights = weights
        return self

    def weight(self, dtype: torch.dtype) -> torch.Tensor:
        """``mask`` as 0/1 numbers of ``dtype`` (cached)."""
        w = self._weights.get(dtype)
        if w is None:
            base = self._weights.get(torch.float32)
            w = self._weights[dtype] = (
                mask_weight(self.mask, dtype) if base is None else base.to(dtype)
            )
        return w

    def rows(self, start: int, stop: int) -> MaskedLists:
        """The reducer of lists ``start:stop`` (no new synchronising checks)."""
        return MaskedLists._of(
            self.valid[start:stop],
            self.mask[start:stop],
            self.full,
            self.neutralized,
            self.any_real,
            {k: w[start:stop] for k, w in self._weights.items()},
        )

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        if self.full:
            return x.sum(dim=-1)
        return (x * self.weight(x.dtype)).sum(dim=-1)

    def max(self, x: torch.Tensor) -> torch.Tensor:
        if self.full or self.neutralized:
            return x.amax(dim=-1)
        low = torch.tensor(-math.inf, dtype=x.dtype, device=x.device)
        return torch.where(self.mask, x, low).amax(dim=-1)

    def broadcast(self, v: torch.Tensor) -> torch.Tensor:
        return v[..., None]

    def log_softmax(self, z: torch.Tensor) -> torch.Tensor:
        """Log-softmax over the reduced entries; 0 at the others (never ``-inf``)."""
        if self.full:
            return torch.log_softmax(z, dim=-1)
        low = torch.tensor(-math.inf, dtype=z.dtype, device=z.device)
        out = torch.log_softmax(torch.where(self.mask, z, low), dim=-1)
        return torch.where(self.mask, out, torch.zeros((), dtype=z.dtype, device=z.device))


def _weight_tensor(sample_weight: Any, like: torch.Tensor) -> torch.Tensor:
    w = as_target_tensor(sample_weight, like, "sample_weight")
    if w.device.type == "cpu":
        if not bool(torch.isfinite(w).all()):
            raise ValueError("`sample_weight` must be finite; found NaN or inf")
        if bool((w < 0).any()):
            raise ValueError(f"`sample_weight` must be non-negative; found {float(w.min())!r}")
    return w


def unit_weights(
    valid: torch.Tensor, sample_weight: Any, unit: str, like: torch.Tensor
) -> torch.Tensor:
    """Weight of each loss unit, zero for padding.

    Parameters
    ----------
    valid : bool tensor ``[batch, list]``
        Real items.
    sample_weight : tensor or None
        Per list (shape ``[batch]``) or per item (shape ``[batch, list]``).
    unit : {"item", "list", "batch"}
        ``"item"``: one loss per item, weights ``[batch, list]`` (a per-list weight applies
        to each of its items). ``"list"``: one loss per list, weights ``[batch]`` (per-item
        weights are averaged over the real items of a list, the convention of
        :mod:`selrank.losses`); fully padded lists get weight 0. ``"batch"``: one loss for
        the whole batch (losses that couple their samples), weight ``[1]``: the mean weight
        of the real lists.
    like : Tensor
        Dtype and device of the result.

    Examples
    --------
    >>> import torch
    >>> valid = torch.tensor([[True, True, False], [False, False, False]])
    >>> unit_weights(valid, None, "list", torch.zeros(1)).tolist()
    [1.0, 0.0]
    >>> unit_weights(valid, torch.tensor([[1.0, 3.0, 9.0], [1.0, 1.0, 1.0]]), "list", torch.zeros(1)).tolist()
    [2.0, 0.0]
    """
    if unit == "batch":
        per_list = unit_weights(valid, sample_weight, "list", like)
        n = valid.any(dim=-1).sum().to(like.dtype)
        return (per_list.sum() / n.clamp_min(1.0)).reshape(1)
    dtype, device = like.dtype, like.device
    zero = torch.zeros((), dtype=dtype, device=device)
    if sample_weight is None:
        if unit == "item":
            return mask_weight(valid, dtype)
        if valid.shape[-1] == 0:
            return valid.any(dim=-1).to(dtype)
        return as_bytes(valid).amax(dim=-1).to(dtype)
    w = _weight_tensor(sample_weight, like)
    shape = tuple(valid.shape)
    if tuple(w.shape) == shape:  # per item
        if unit == "item":
            return torch.where(valid, w, zero)
        count = valid.sum(dim=-1).to(dtype)
        return torch.where(valid, w, zero).sum(dim=-1) / count.clamp_min(1.0)
    if len(shape) > 1 and tuple(w.shape) == shape[:-1]:  # per list
        if unit == "item":
            return torch.where(valid, w[..., None], zero)
        return torch.where(valid.any(dim=-1), w, zero)
    expected = f"{shape[:-1]} (per list) or {shape} (per item)" if len(shape) > 1 else f"{shape}"
    raise ValueError(f"`sample_weight` must have shape {expected}; got {tuple(w.shape)}")


def reduce_units(values: torch.Tensor, weights: torch.Tensor, reduction: str) -> torch.Tensor:
    """Weighted reduction of per-unit losses.

    ``"none"`` returns ``weights * values`` (0 for padding), ``"sum"`` their sum and
    ``"mean"`` the weighted mean ``Σ w·L / Σ w`` (0 when every unit has weight 0 — a batch
    of fully padded lists — with zero, finite gradients).

    Examples
    --------
    >>> import torch
    >>> reduce_units(torch.tensor([1.0, 3.0, 9.0]), torch.tensor([1.0, 1.0, 0.0]), "mean")
    tensor(2.)
    """
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    total = None
    if reduction != "none" and values.device.type == "cpu":
        # the plain weighted sum equals the masked one unless a value is not finite (an
        # infinite loss at a zero weight would give NaN): one product and one sum, and the
        # masked sum only when the plain one is not finite
        total = (values * weights).sum()
        if not math.isfinite(total.item()):
            total = None
    if total is None:
        weighted = torch.where(weights > 0, values * weights, zero)
        if reduction == "none":
            return weighted
        total = weighted.sum()
    if reduction == "sum":
        return total
    denom = weights.sum()
    return total / torch.where(denom > 0, denom, torch.ones_like(denom))
