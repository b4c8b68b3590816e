"""PyTorch heads for selective matching losses and ranking baselines.

Heads are ``torch.nn.Module`` losses over dense ``[batch, list]`` scores (or ``[n, K]``
classes) with padding given by a boolean ``mask``, a ``lengths`` tensor or a sentinel
label, ``reduction="mean" | "sum" | "none"`` and per-item or per-list weights:

* selective heads over the core definitions of :mod:`selrank.losses` —
  :class:`PointwiseLoss`, :class:`PairwiseLoss`, :class:`ListwiseLoss`,
  :class:`MulticlassLoss` — with the closed-form gradient ``h(ŝ) − h(s)`` as backward;
* :class:`CoreLoss`: any loss of :data:`selrank.losses.LOSSES` (the core's baselines too);
  :class:`CombinedLoss`: weighted sums of heads (the core's ``Combined``);
* torch-only baselines (:mod:`selrank.torch.baselines`): softmax cross entropy, ListNet,
  ListMLE, RankNet, LambdaLoss, ApproxNDCG.

The scikit-learn style MLP ranker trained with any of these heads is
:class:`selrank.estimators.NeuralRanker` (``selrank.torch.NeuralRanker``, its 0.2 alias, was
removed in 0.3).

Examples
--------
>>> import torch
>>> from selrank.torch import get_head
>>> head = get_head("listwise", scaling="exp")
>>> y_pred = torch.zeros(2, 3, requires_grad=True)
>>> y_true = torch.tensor([[2.0, 0.0, 1.0], [1.0, 0.0, -1.0]])   # -1: padding
>>> head(y_pred, y_true).backward()
>>> y_pred.grad.shape
torch.Size([2, 3])
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError("selrank.torch requires torch: pip install 'selrank[torch]'") from exc

from ._base import ClosedFormGradient, RankingHead
from ._masking import MaskedLists, padding_mask
from .baselines import (
    ApproxNDCGLoss,
    LambdaLoss,
    ListMLELoss,
    ListNetLoss,
    RankNetLoss,
    SoftmaxCrossEntropyLoss,
)
from .heads import (
    HEADS,
    CombinedLoss,
    CoreLoss,
    ListwiseLoss,
    MulticlassLoss,
    PairwiseLoss,
    PointwiseLoss,
    get_head,
    head_for,
    head_registry,
)

__all__ = [
    "RankingHead",
    "ClosedFormGradient",
    "MaskedLists",
    "padding_mask",
    "PointwiseLoss",
    "PairwiseLoss",
    "ListwiseLoss",
    "MulticlassLoss",
    "CoreLoss",
    "CombinedLoss",
    "SoftmaxCrossEntropyLoss",
    "ListNetLoss",
    "ListMLELoss",
    "RankNetLoss",
    "LambdaLoss",
    "ApproxNDCGLoss",
    "HEADS",
    "get_head",
    "head_for",
    "head_registry",
]


# The 0.2 aliases selrank.torch.NeuralRanker / MLPScorer were removed in 0.3 (CHANGELOG): say
# where they went instead of a bare AttributeError.
_MOVED = {"NeuralRanker": "selrank.estimators", "MLPScorer": "selrank.estimators"}


def __getattr__(name: str):
    if name in _MOVED:
        raise AttributeError(
            f"selrank.torch.{name} was removed in 0.3 (deprecated since 0.2): "
            f"use `from {_MOVED[name]} import {name}`"
        )
    raise AttributeError(f"module 'selrank.torch' has no attribute {name!r}")
