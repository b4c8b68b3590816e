r"""Selective matching losses as ``torch.nn.Module`` heads over the core definitions.

Each head holds a core loss from :mod:`selrank.losses` (``Pointwise``, ``Pairwise``,
``Listwise``, ``CompositeSoftmax``/``Decomposed``) and evaluates it on dense, padded
``[batch, list]`` tensors with the core's own link and scaling maths
(:meth:`~selrank.links.Link.bregman`, :meth:`~selrank.links.Link.h`,
:func:`~selrank.scalings.composite_softmax`, :func:`~selrank.scalings.composite_softmax_bregman`);
only the padding (:mod:`selrank.torch._masking`) is added here. Nothing about a link is
written twice here: the fast copies the heads use (the pairwise and exp-link numba kernels,
the in-place torch Bregman and composite-softmax code) live in :mod:`selrank.fast`,
registered against their class and tested equal to the core's maths.

The gradient of a selective matching loss is the closed form :math:`h(\hat s) - h(s)`
(eq. [1], [30]); with ``grad="analytic"`` (default) the heads compute it in the forward
pass and the backward just scales it (:class:`~selrank.torch._base.ClosedFormGradient`):
cheaper than differentiating the loss value and exact at the minimum, where the loss value
itself is evaluated through a cancellation-free Taylor form; the pointwise and listwise
heads reduce it in the same pass (:class:`~selrank.torch._base.FusedGradient`). Double
backward works in both modes; ``grad="autograd"`` differentiates the value instead.

:func:`get_head` builds any head by name — the selective heads, the torch-only baselines of
:mod:`selrank.torch.baselines` and, through :class:`CoreLoss`, every loss registered in
:data:`selrank.losses.LOSSES`.
"""

# The package is split into the term functions (_terms), the selective heads (_selective),
# the head over any core loss (_core) and the registry with the weighted sum of heads
# (_registry); every public name is re-exported here.
from ._core import CoreLoss
from ._registry import HEADS, CombinedLoss, get_head, head_for, head_registry
from ._selective import ListwiseLoss, MulticlassLoss, PairwiseLoss, PointwiseLoss
from ._terms import (
    is_odd,
    pairwise_core_terms,
    pairwise_kernel_terms,
    pairwise_terms,
    pointwise_terms,
    softmax_terms,
)

__all__ = [
    "PointwiseLoss",
    "PairwiseLoss",
    "ListwiseLoss",
    "MulticlassLoss",
    "CoreLoss",
    "CombinedLoss",
    "HEADS",
    "get_head",
    "head_for",
    "head_registry",
    "pointwise_terms",
    "softmax_terms",
    "pairwise_terms",
    "pairwise_kernel_terms",
    "pairwise_core_terms",
    "is_odd",
]
