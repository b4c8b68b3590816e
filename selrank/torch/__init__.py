"""PyTorch heads for selective matching losses, ranking baselines and a neural ranker.

Heads are ``torch.nn.Module`` losses over dense ``[batch, list]`` scores (or ``[n, K]``
classes) with padding given by a boolean ``mask``, a ``lengths`` tensor or a sentinel
label, ``reduction="mean" | "sum" | "none"`` and per-item or per-list weights:

* selective heads over the core definitions of :mod:`selrank.losses` —
  :class:`PointwiseLoss`, :class:`PairwiseLoss`, :class:`ListwiseLoss`,
  :class:`MulticlassLoss` — with the closed-form gradient ``h(ŝ) − h(s)`` as backward;
* :class:`CoreLoss`: any loss of :data:`selrank.losses.LOSSES` (the core's baselines too);
  :class:`CombinedLoss`: weighted sums of heads (the core's ``Combined``);
* torch-only baselines (:mod:`selrank.torch.baselines`): softmax cross entropy, ListNet,
  ListMLE, RankNet, LambdaLoss, ApproxNDCG;
* :class:`NeuralRanker` (from :mod:`selrank.estimators.neural`): a scikit-learn style MLP
  ranker trained with any head.

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
    "NeuralRanker",
    "MLPScorer",
]

# NeuralRanker is an estimator (selrank.estimators.neural) built on these heads; imported on
# first use so that importing the heads does not import the estimators.
_LAZY = {"NeuralRanker", "MLPScorer"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'selrank.torch' has no attribute {name!r}")
    from ..estimators import neural

    value = getattr(neural, name)
    globals()[name] = value
    return value
