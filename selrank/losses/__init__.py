"""Selective matching losses and baselines, for NumPy, PyTorch and CuPy arrays.

Every loss has ``loss(y_pred, y_true, *, group=None, sample_weight=None, reduction="mean")``,
``grad_hess(y_pred, y_true, *, group=None, sample_weight=None)`` (gradient and Hessian
diagonal of the weighted summed loss), ``optimal_constant(y_true, sample_weight=None)`` and
``bind(y_true, ...)``, which does the target-side work once for a training loop.

=====================  ===========  ====================================================
name                   unit         definition
=====================  ===========  ====================================================
``pointwise``          row          scalar matching loss of a link [1–2]
``pairwise``           query        link-matched score differences of document pairs
``listwise``           query        composite softmax over each query's documents [29–30]
``decomposed``         sample       per-class scalar matching losses on ``[n, K]`` [28]
``composite_softmax``  sample       composite softmax over ``[n, K]`` classes [29–30]
=====================  ===========  ====================================================

plus the baselines of docs/math.md §6 (see :data:`LOSSES`).

Examples
--------
>>> import numpy as np
>>> from selrank.losses import get_loss
>>> loss = get_loss("listwise", scaling="exp")
>>> y = np.array([2.0, 0.0, 1.0])
>>> g, h = loss.grad_hess(np.zeros(3), y, group=[3])
>>> g.shape, bool((h > 0).all())
((3,), True)
"""

from __future__ import annotations

from ._base import LOSSES, BoundLoss, Loss, get_loss
from .classification import (
    BASELINES,
    NCE,
    BatchCrossEntropy,
    BatchMaxMargin,
    BinaryCrossEntropy,
    MaxMargin,
    MeanSquaredError,
    MulticlassHinge,
    MultiLabelSoftmaxCrossEntropy,
    NWaySoftmaxCrossEntropy,
    ReweightedSquare,
    SelfNormalization,
    SigmoidCauchySchwarz,
    SigmoidTanimoto,
    SoftmaxCauchySchwarz,
    SoftmaxCrossEntropy,
    SoftmaxTanimoto,
)
from .combined import Combined
from .listwise import Listwise
from .multiclass import CompositeSoftmax, Decomposed
from .pairwise import Pairwise
from .pointwise import Pointwise
from .weighted_pairwise import WeightedPairwise

__all__ = [
    "Loss",
    "BoundLoss",
    "Pointwise",
    "Pairwise",
    "WeightedPairwise",
    "Listwise",
    "Decomposed",
    "CompositeSoftmax",
    "Combined",
    "LOSSES",
    "get_loss",
    "BASELINES",
    # the baselines (classification.__all__ after "BASELINES"), written out for static readers;
    # tests/test_h23a_api_docs.py checks the two lists agree
    "SoftmaxCrossEntropy",
    "MulticlassHinge",
    "MeanSquaredError",
    "ReweightedSquare",
    "MaxMargin",
    "SoftmaxCauchySchwarz",
    "SigmoidCauchySchwarz",
    "SoftmaxTanimoto",
    "SigmoidTanimoto",
    "SelfNormalization",
    "NCE",
    "BinaryCrossEntropy",
    "BatchCrossEntropy",
    "BatchMaxMargin",
    "MultiLabelSoftmaxCrossEntropy",
    "NWaySoftmaxCrossEntropy",
]

# The registry (a plain dict, :data:`LOSSES`) and :func:`get_loss` are defined in ._base so
# that a composite loss can look names up; the entries are listed once, here.
LOSSES.update(
    {
        "pointwise": Pointwise,
        "pairwise": Pairwise,
        "weighted_pairwise": WeightedPairwise,
        "listwise": Listwise,
        "decomposed": Decomposed,
        "composite_softmax": CompositeSoftmax,
        "combined": Combined,
    }
)
# baselines (docs/math.md §6): one list, classification.BASELINES
LOSSES.update(BASELINES)
