r"""Classification losses (class-label targets): the baselines of docs/math.md §6, in the
interface of the selective matching losses.

This package was ``selrank.losses.baselines`` before 0.3 (a name it shared with the torch
ranking baselines of :mod:`selrank.torch.baselines`); the old path still imports, with a
``DeprecationWarning``, until 0.4.

* :mod:`~selrank.losses.classification._classic` — the classic multi-class losses (``003``:
  multiclass SVM hinge, softmax cross entropy with the max-subtraction trick, mean squared
  error) and the re-weighted square loss of App. E.1 of ``000``;
* :mod:`~selrank.losses.classification.pols` — the single-logit classification losses of Keren,
  Sabato & Schuller (``001``): max-margin, Cauchy–Schwarz, Tanimoto, self-normalization,
  NCE, binary cross entropy, batch cross entropy and batch max-margin;
* :mod:`~selrank.losses.classification.multilabel` — multi-label softmax cross entropy and its
  n-way m-class generalisations (``002``);
* :mod:`~selrank.losses.classification._base` — the shared label/batch machinery.

The baselines are *not* matching losses (``is_matching = False``): targets are labels, the
loss has no zero-gradient point at ``y_pred = y_true``, some are negative (Tanimoto) or
non-convex (Cauchy–Schwarz sigmoid, Tanimoto, self-normalization far from its optimum,
re-weighting by the prediction). Hinge-type losses are not twice differentiable: their
Hessian diagonal is the almost-everywhere value 0.

:data:`BASELINES` maps each registry name (the class's ``name``) to its class; it is the one
list of the baselines: :data:`selrank.losses.LOSSES` and the exports are built from it.

Examples
--------
>>> BASELINES["softmax_cross_entropy"] is SoftmaxCrossEntropy
True
>>> len(BASELINES)
16
"""

from __future__ import annotations

from ._classic import MeanSquaredError, MulticlassHinge, ReweightedSquare, SoftmaxCrossEntropy
from .multilabel import MultiLabelSoftmaxCrossEntropy, NWaySoftmaxCrossEntropy
from .pols import (
    NCE,
    BatchCrossEntropy,
    BatchMaxMargin,
    BinaryCrossEntropy,
    MaxMargin,
    SelfNormalization,
    SigmoidCauchySchwarz,
    SigmoidTanimoto,
    SoftmaxCauchySchwarz,
    SoftmaxTanimoto,
)

#: Registry name -> class, in the order of docs/math.md §6.
BASELINES: dict[str, type] = {
    cls.name: cls
    for cls in (
        SoftmaxCrossEntropy,
        MulticlassHinge,
        MeanSquaredError,
        ReweightedSquare,
        MaxMargin,
        SoftmaxCauchySchwarz,
        SigmoidCauchySchwarz,
        SoftmaxTanimoto,
        SigmoidTanimoto,
        SelfNormalization,
        NCE,
        BinaryCrossEntropy,
        BatchCrossEntropy,
        BatchMaxMargin,
        MultiLabelSoftmaxCrossEntropy,
        NWaySoftmaxCrossEntropy,
    )
}

# Written out (not built from BASELINES) so that static readers (the API reference's
# generator, type checkers) see the names; tests/test_h23a_api_docs.py checks that it lists
# exactly the classes of BASELINES, in order.
__all__ = [
    "BASELINES",
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
