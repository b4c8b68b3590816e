r"""The registry of heads by name (:data:`HEADS`), :func:`head_for`, :func:`get_head`, and
:class:`CombinedLoss`, which builds its components through :func:`get_head`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from ..._validation import lookup, positive_float
from ...losses import (
    LOSSES,
    Combined,
    CompositeSoftmax,
    Decomposed,
    Listwise,
    Loss,
    Pairwise,
    Pointwise,
    get_loss,
)
from .. import baselines as B
from .._base import RankingHead
from .._masking import (
    check_reduction,
)
from ._core import CoreLoss
from ._selective import ListwiseLoss, MulticlassLoss, PairwiseLoss, PointwiseLoss

# ======================================================================================
# Weighted sums of heads
# ======================================================================================


class CombinedLoss(RankingHead):
    """A weighted sum of heads evaluated on the same scores and targets.

    The torch counterpart of :class:`selrank.losses.Combined` (e.g. a pointwise loss that
    fixes the level of each score plus a listwise loss that fixes the order within each
    list); any heads may be combined, baselines included. As for the core's ``Combined``,
    ``"sum"`` adds the components' sums with the weights and ``"mean"`` divides that by the
    first component's units (the sum of its unit weights), so the mean is proportional to
    the optimised sum whatever the mix of units; ``"none"`` needs components with the same
    unit.

    Parameters
    ----------
    losses : Combined or sequence of (head, name or Loss)
        A core :class:`~selrank.losses.Combined`, or the components (built by
        :func:`get_head` with this head's ``padding_value``).
    weights : sequence of float, optional
        Non-negative component weights (default: all 1, or the ``Combined``'s).

    Examples
    --------
    >>> import torch
    >>> from selrank.torch import ListwiseLoss, PointwiseLoss
    >>> head = CombinedLoss(["pointwise", "listwise"], weights=[1.0, 0.5])
    >>> z, y = torch.zeros(2, 3), torch.tensor([[2.0, 0.0, 1.0], [1.0, 0.0, -1.0]])
    >>> parts = PointwiseLoss()(z, y, reduction="sum") + 0.5 * ListwiseLoss()(z, y, reduction="sum")
    >>> bool(torch.isclose(head(z, y, reduction="sum"), parts)), bool(torch.isclose(head(z, y), parts / 5))
    (True, True)
    """

    def __init__(
        self,
        losses: Any,
        *,
        weights: Sequence[float] | None = None,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
    ) -> None:
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index
        )
        if isinstance(losses, Combined):
            if weights is None:
                weights = losses.weights
            losses = losses.losses
        if (
            isinstance(losses, str | Loss | RankingHead)
            or not isinstance(losses, list | tuple)
            or not losses
        ):
            raise ValueError(
                f"`losses` of CombinedLoss must be a non-empty sequence or a Combined; got {losses!r}"
            )
        heads = [
            get_head(h)
            if isinstance(h, RankingHead)
            else get_head(h, padding_value=self.padding_value)
            for h in losses
        ]
        w = (
            [1.0] * len(heads)
            if weights is None
            else [positive_float(v, "weights", "CombinedLoss", allow_zero=True) for v in weights]
        )
        if len(w) != len(heads):
            raise ValueError(
                f"`weights` of CombinedLoss must have one entry per loss ({len(heads)}); got {len(w)}"
            )
        if not sum(w) > 0:
            raise ValueError("`weights` of CombinedLoss must not all be 0")
        self.heads = torch.nn.ModuleList(heads)
        self.weights = w
        units = {h.unit for h in heads}
        self.unit = units.pop() if len(units) == 1 else "mixed"

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
            self.reduction if reduction is None else check_reduction(reduction, "CombinedLoss")
        )
        if reduction == "none" and self.unit == "mixed":
            raise ValueError(
                "reduction='none' is undefined for a CombinedLoss whose heads have different units "
                f"({sorted({cast(RankingHead, h).unit for h in self.heads})}); use 'sum' or 'mean'"
            )
        kw = {"mask": mask, "lengths": lengths, "sample_weight": sample_weight}
        total: Any = None  # set: the weights are not all 0
        for w, head in zip(self.weights, self.heads):
            if w == 0:
                continue
            part = w * head(
                y_pred, y_true, reduction="sum" if reduction == "mean" else reduction, **kw
            )
            total = part if total is None else total + part
        if reduction == "mean":
            denom = self.total_weight(y_pred, y_true, **kw)
            total = total / torch.where(denom > 0, denom, torch.ones_like(denom))
        return total

    def total_weight(
        self,
        y_pred: torch.Tensor,
        y_true: Any,
        *,
        mask: Any = None,
        lengths: Any = None,
        sample_weight: Any = None,
    ) -> torch.Tensor:
        """The denominator of ``"mean"``: the first component's summed unit weights."""
        return cast(RankingHead, self.heads[0]).total_weight(
            y_pred, y_true, mask=mask, lengths=lengths, sample_weight=sample_weight
        )

    def extra_repr(self) -> str:
        return f"weights={self.weights!r}, {super().extra_repr()}"


# ======================================================================================
# Registry
# ======================================================================================

#: Heads by name: the selective heads and the torch-only baselines. Names of
#: :data:`selrank.losses.LOSSES` not listed here resolve through :func:`head_for`; a name in
#: both denotes the same loss (the head of that core loss), so every name means one loss
#: (:func:`head_registry`).
HEADS: dict[str, Callable[..., RankingHead]] = {
    "pointwise": PointwiseLoss,
    "pairwise": PairwiseLoss,
    "listwise": ListwiseLoss,
    "multiclass": MulticlassLoss,
    "combined": CombinedLoss,
    "list_softmax_cross_entropy": B.SoftmaxCrossEntropyLoss,
    "listnet": B.ListNetLoss,
    "listmle": B.ListMLELoss,
    "ranknet": B.RankNetLoss,
    "lambdaloss": B.LambdaLoss,
    "approxndcg": B.ApproxNDCGLoss,
}

#: The head that evaluates each core loss class on padded batches.
_HEAD_OF_CORE: dict[type, Callable[..., RankingHead]] = {
    Pointwise: PointwiseLoss,
    Pairwise: PairwiseLoss,
    Listwise: ListwiseLoss,
    CompositeSoftmax: MulticlassLoss,
    Decomposed: MulticlassLoss,
    Combined: CombinedLoss,
}


def head_for(loss: Loss, **head_params: Any) -> RankingHead:
    """The head of a core loss instance: its selective head, else :class:`CoreLoss`."""
    if not isinstance(loss, Loss):
        raise TypeError(f"head_for needs a selrank.losses.Loss; got {type(loss).__name__}")
    cls = _HEAD_OF_CORE.get(type(loss), CoreLoss)
    return cls(loss, **head_params)


#: Old head names, kept as deprecated aliases: old name -> (new name, why it changed).
_DEPRECATED_HEADS: dict[str, tuple[str, str]] = {
    "softmax_ce": (
        "list_softmax_cross_entropy",
        "the listwise softmax cross entropy over a list; LOSSES' 'softmax_cross_entropy' is the "
        "per-sample classification loss",
    ),
}


def head_registry() -> dict[str, Callable[..., RankingHead]]:
    """The one registry of names :func:`get_head` accepts, each name for one loss.

    :data:`HEADS`, then every name of :data:`selrank.losses.LOSSES` that ``HEADS`` does not
    list (the head of that core loss, through :func:`head_for`). Built on each call, so that
    losses registered later are included.
    """
    return {**{key: _loss_head(key) for key in LOSSES}, **HEADS}


_HEAD_OPTIONS = ("reduction", "padding_value", "grad", "chunk_pairs")
# (CombinedLoss takes reduction and padding_value only)


def get_head(name: str | Loss | RankingHead, **params: Any) -> RankingHead:
    """Build a head by name, from a core loss, or pass a head through.

    Parameters
    ----------
    name : str, Loss or RankingHead
        A name of :func:`head_registry`: of :data:`HEADS` (selective heads and torch
        baselines) or of :data:`selrank.losses.LOSSES` (core losses and their baselines);
        a core :class:`~selrank.losses.Loss` instance; or a head. The old name
        ``"softmax_ce"`` still works (``DeprecationWarning``): it is
        ``"list_softmax_cross_entropy"``.
    **params
        Parameters of the head (or of the core loss, for a name of ``LOSSES``).

    Examples
    --------
    >>> get_head("listwise", scaling="exp", gamma=0.5)
    ListwiseLoss(Listwise(scaling=ExpScaling(alpha=1.0, beta=0.0, cap=(None, 30.0), cap_mode='linear'), gamma=0.5, target='score'), reduction='mean', padding_value=-1.0, grad='analytic')
    >>> type(get_head("ranknet")).__name__
    'RankNetLoss'
    >>> get_head("lambdamart")
    Traceback (most recent call last):
    ...
    ValueError: unknown head 'lambdamart'; choose one of [...]
    """
    if isinstance(name, Loss) and not isinstance(name, RankingHead):
        return head_for(name, **params)
    if isinstance(name, str) and name.lower() in _DEPRECATED_HEADS:
        new, why = _DEPRECATED_HEADS[name.lower()]
        warnings.warn(
            f"the head name {name!r} is deprecated; use {new!r} ({why})",
            DeprecationWarning,
            stacklevel=2,
        )
        name = new
    return lookup(
        head_registry(),
        name,
        "head",
        instance_of=RankingHead,
        accepts="a name, a selrank Loss or a RankingHead",
        **params,
    )


def _loss_head(key: str) -> Callable[..., RankingHead]:
    """The head of the core loss ``LOSSES[key]``: head options go to the head, the rest to the loss."""

    def build(**params: Any) -> RankingHead:
        head_params = {k: params.pop(k) for k in _HEAD_OPTIONS if k in params}
        return head_for(get_loss(key, **params), **head_params)

    return build
