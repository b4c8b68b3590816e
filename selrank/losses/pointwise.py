r"""Pointwise (scalar) selective matching loss [1–2]."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _array as A
from .._array import Array
from ..links import Link, get_link
from ._base import (
    BoundLoss,
    Loss,
    as_target_array,
    as_weight,
    check_target,
    refuse_other_family,
)

__all__ = ["Pointwise"]


class Pointwise(Loss):
    r"""Scalar selective matching loss of a link (paper eq. [1–2], docs/math.md §1).

    .. math::
        L(\hat s, s) = H(\hat s) - H(s) - (\hat s - s)\,h(s), \qquad
        g = h(\hat s) - h(s), \qquad \text{Hessian } h'(\hat s).

    With ``target="link"`` the targets are in the link's output space and
    :math:`g = h(\hat s) - y`, :math:`L = H(\hat s) - \hat s\,y + H^*(y)` (App. E.2: the
    sigmoid link on 0/1 labels is logistic cross entropy minus the label entropy).

    Parameters
    ----------
    link : Link, str or callable
        The link (default ``"exp"``: high-score sensitivity). Remaining keyword parameters
        build a link given by name (``alpha``, ``beta``, ``cap``, ``c``, ...).
    target : {"score", "link"}
        Space of ``y_true``.

    Examples
    --------
    >>> import numpy as np
    >>> loss = Pointwise("identity")
    >>> float(loss.loss(np.array([1.0, 3.0]), np.array([0.0, 1.0])))   # mean of 1/2, 2
    1.25
    >>> g, h = loss.grad_hess(np.array([1.0, 3.0]), np.array([0.0, 1.0]))
    >>> g.tolist(), h.tolist()
    ([1.0, 2.0], [1.0, 1.0])
    >>> round(Pointwise("exp").optimal_constant(np.array([0.0, 2.0])), 6)  # log((1 + e^2) / 2)
    1.433781
    """

    name = "pointwise"
    structure = "pointwise"
    separable = True
    examples = [
        {"link": "identity"},
        {"link": "exp"},
        {"link": "sigmoid", "beta": 1.0},
        {"link": "sigmoid", "target": "link"},
        {"link": "smelu", "c": 1.5, "beta": 1.0},
        {"link": "sinh", "cap": 2.0},
    ]

    def __init__(
        self, link: Link | str = "exp", *, target: str = "score", **link_params: Any
    ) -> None:
        refuse_other_family("Pointwise", "link", link_params)
        self.link = get_link(link, **link_params)
        self.target = check_target(target, "Pointwise")
        self._params = {"link": self.link, "target": target}

    def _bind(self, y_true, *, group=None, sample_weight=None) -> _BoundPointwise:
        # `group` is accepted (and ignored) so every loss shares one signature
        y = as_target_array(y_true)
        if self.target == "score":
            self.link.check_domain(y, "y_true")
        else:
            self.link.check_range(y, "y_true")
        n = int(y.shape[0]) if y.ndim else 1
        w = as_weight(sample_weight, n) if y.ndim == 1 else _weight_nd(sample_weight, y)
        return _BoundPointwise(self, y, w)

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, group: Array | None = None
    ) -> float:
        r""":math:`h^{-1}` of the weighted mean of :math:`h(y)` (or of :math:`y` for ``target="link"``)."""
        y = as_target_array(y_true)
        w = (
            None
            if sample_weight is None
            else as_weight(
                sample_weight, int(y.reshape(-1).shape[0]) if y.ndim == 1 else y.shape[0]
            )
        )
        return self.link.optimal_constant(y, w, target=self.target)


def _weight_nd(sample_weight, y):
    """Weights for multi-dimensional pointwise targets must match their shape exactly."""
    if sample_weight is None:
        return None
    w = np.asarray(A.to_numpy(sample_weight), dtype=np.float64)
    if w.shape != tuple(y.shape):
        raise ValueError(f"`sample_weight` must have shape {tuple(y.shape)}; got {w.shape}")
    as_weight(w.reshape(-1), w.size)
    return w


class _BoundPointwise(BoundLoss):
    weigh_elements = True

    def __init__(self, loss: Pointwise, y, w):
        super().__init__(loss, int(y.shape[0]) if y.ndim else 1, w)
        self.y = y
        self.link = loss.link
        self.target = loss.target
        # target-side link values: computed once, reused every iteration
        self.hy = loss.link.h(y) if loss.target == "score" else y

    def _values(self, y_pred):
        y_pred = self._pred(y_pred)
        y = self._like("y", self.y, y_pred)
        if self.target == "score":
            return self.link.bregman(y_pred, y)
        return self.link.bregman_link_target(y_pred, y)

    def _grad_hess(self, y_pred):
        y_pred = self._pred(y_pred)
        h, dh = self.link.h_dh(y_pred)
        hy = self._like("hy", self.hy, y_pred)
        if A.is_numpy(h) and h is not y_pred and h is not dh and h is not hy:
            g = np.subtract(h, hy, out=h)  # h is a fresh array of no further use: reuse it
        else:
            g = h - hy
        return g, dh  # unweighted: BoundLoss.grad_hess applies the weights

    def _pred(self, y_pred):
        return self._check_pred(y_pred, self.y.shape)
