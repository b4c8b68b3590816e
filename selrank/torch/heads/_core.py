r"""Any loss of :data:`selrank.losses.LOSSES` as a head, through autograd (:class:`CoreLoss`)."""

from __future__ import annotations

from typing import Any

import torch

from ... import _array as A
from ..._groups import Groups
from ...losses import (
    Loss,
    get_loss,
)
from .._base import RankingHead
from .._masking import (
    MaskedLists,
    as_target_tensor,
    compute_dtype,
    neutralize,
    padding_mask,
)
from ._selective import _ndim

# ======================================================================================
# Any registered core loss, through autograd
# ======================================================================================


class CoreLoss(RankingHead):
    """Any loss of :data:`selrank.losses.LOSSES` as a head (the core's baselines included).

    The real items of the padded batch are handed to the core loss in its own layout —
    one row per item (``structure="pointwise"``), ragged query groups (``"group"``) or one
    ``[n, K]`` row per sample (``"multiclass"``: class indices ``[n]`` or label rows
    ``[n, K]``; whole rows are padding) — and autograd differentiates the core loss (every
    core loss is written against the array namespace, so it runs on tensors). Losses that
    couple the samples of a batch (``couples_samples``, e.g. batch cross entropy) give one
    value per call (unit ``"batch"``).

    Parameters
    ----------
    loss : str or Loss
        A registry name (parameters in ``**params``) or a core loss instance.
    reduction, padding_value
        See :class:`~selrank.torch._base.RankingHead`.

    Examples
    --------
    >>> import torch
    >>> head = CoreLoss("multiclass_hinge")
    >>> z = torch.tensor([[2.0, 1.5, -1.0], [0.0, 3.0, 0.0]], requires_grad=True)
    >>> head(z, torch.tensor([0, -1]), reduction="none")     # row 1 is padding
    tensor([0.5000, 0.0000], grad_fn=<WhereBackward0>)
    """

    def __init__(
        self,
        loss: str | Loss,
        *,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
        **params: Any,
    ) -> None:
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index
        )
        self.core = get_loss(loss, **params)
        self.structure = self.core.structure
        if self.structure == "pointwise":
            self.unit, self.ndims = "item", (1, 2)
        elif self.structure in ("group", "multiclass"):
            self.unit, self.ndims = "list", (2,)
            if getattr(self.core, "couples_samples", False):
                self.unit = "batch"
        else:
            raise ValueError(
                f"CoreLoss supports losses of structure 'pointwise', 'group' or 'multiclass'; "
                f"{self.core!r} has structure {self.structure!r}"
            )

    def _prepare(self, y_pred, y_true, mask, lengths):
        if self.structure == "multiclass" and _ndim(y_true) == 1:
            # class indices [n]: a row is padding when its index is the sentinel (or masked)
            z = self._check_pred(y_pred)
            z = z.to(compute_dtype(z.dtype))
            y = as_target_tensor(y_true, z)
            if tuple(y.shape) != (z.shape[0],):
                raise ValueError(
                    f"class indices must have shape ({z.shape[0]},) for `y_pred` of shape "
                    f"{tuple(z.shape)}; got {tuple(y.shape)}"
                )
            rows = padding_mask(y, mask=mask, lengths=None, padding_value=self.padding_value)
            valid = rows[:, None].expand(z.shape)
            full = bool(rows.all())
            if not full:
                (z,) = neutralize(valid, z)
            y = torch.where(rows, y, torch.zeros((), dtype=y.dtype, device=y.device))
            return z, y, MaskedLists(valid, full=full, neutralized=True)
        z, y, lists = super()._prepare(y_pred, y_true, mask, lengths)
        valid = lists.valid
        if (
            self.structure == "multiclass"
            and not lists.full
            and bool((valid.any(dim=-1) & ~valid.all(dim=-1)).any())
        ):
            raise ValueError(
                f"{self.core!r} cannot mask single classes; mark whole rows as padding "
                "(or use MulticlassLoss, which masks classes)"
            )
        return z, y, lists

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        valid = lists.valid
        if self.structure == "pointwise":
            vals = self.core.bind(y[valid]).loss(z[valid], reduction="none")
            return torch.zeros_like(z).masked_scatter(valid, vals.to(z.dtype))
        rows = valid.any(dim=-1)
        if self.structure == "group":
            groups = Groups.from_sizes(A.to_numpy(valid.sum(dim=-1)[rows]))
            vals = self.core.bind(y[valid], group=groups).loss(z[valid], reduction="none")
        else:
            vals = self.core.bind(y[rows]).loss(z[rows], reduction="none")
        if self.unit == "batch":
            return vals.to(z.dtype).reshape(1)
        out = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        return out.masked_scatter(rows, vals.to(z.dtype))

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"
