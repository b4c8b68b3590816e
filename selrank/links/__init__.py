r"""Links: monotone functions that define selective matching losses.

A link :math:`h` is a monotone non-decreasing function of a score :math:`z`, with primitive
:math:`H` (:math:`H' = h`). The matching loss of a prediction :math:`\hat s` for an observed
score :math:`s` is the Bregman divergence of :math:`H` (docs/math.md §1, paper eq. [1–2]):

.. math::

    L(\hat s, s) = H(\hat s) - H(s) - (\hat s - s)\,h(s), \qquad
    \partial_{\hat s} L = h(\hat s) - h(s), \qquad \partial^2_{\hat s} L = h'(\hat s).

The slope :math:`h'` is the loss sensitivity: where it is large the model must be accurate,
where it is small it may be sloppy.

Every link defines :meth:`Link.h`, :meth:`Link.dh`, :meth:`Link.H` and, where it exists,
:meth:`Link.h_inv` once, written against the array namespace of its input (NumPy, PyTorch
with autograd, CuPy; float32 or float64). Loss values, gradients, Hessians, optimal
constants, sensitivity curves, GBDT objectives and torch heads are all derived from these.

The catalogue uses a standardized argument :math:`x = \alpha(z - \beta)` (scale
:math:`\alpha > 0`, shift :math:`\beta`), so that :math:`h(z) = f(x)`,
:math:`h'(z) = \alpha f'(x)` and :math:`H(z) = F(x)/\alpha` (paper eq. [3–7]).

Examples
--------
>>> import numpy as np
>>> from selrank.links import get_link
>>> link = get_link("exp", alpha=1.0)
>>> float(link.h(0.0)), float(link.dh(0.0)), float(link.H(0.0))
(1.0, 1.0, 1.0)
>>> float(link.h_inv(link.h(1.5)))
1.5
>>> sorted(LINKS)[:4]
['composite_sigmoid', 'exp', 'huber', 'identity']
"""

# The package is split by kind of link: _base (Link, numerical fallbacks), _catalogue (the
# standardized affine links), _piecewise, _callable, _composite (Logit, CompositeSigmoid) and
# _registry (LINKS, get_link). Every name is re-exported here; import from selrank.links.
from ._base import Link
from ._base import _eps_threshold as _eps_threshold  # old private name, kept for importers
from ._callable import CallableLink
from ._catalogue import (
    Exp,
    Huber,
    Identity,
    NegExp,
    Sigmoid,
    Sign,
    Sinh,
    SmeLU,
    Step,
)
from ._catalogue import _AffineLink as _AffineLink  # the base of the catalogue links
from ._composite import CompositeSigmoid, Logit
from ._piecewise import Piecewise
from ._registry import LINKS, get_link

__all__ = [
    "Link",
    "Identity",
    "Sigmoid",
    "Exp",
    "NegExp",
    "Sinh",
    "Logit",
    "SmeLU",
    "Huber",
    "Step",
    "Sign",
    "Piecewise",
    "CallableLink",
    "CompositeSigmoid",
    "LINKS",
    "get_link",
]
