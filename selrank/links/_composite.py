"""Links that are not of the standardized affine form: the logit link on probabilities and
the composite sigmoid of a scaling.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import _array as A
from .._array import Array
from .._validation import positive_float
from ..scalings import Scaling, check_convexity, composite_sigmoid_h, get_scaling
from ._base import Link


class Logit(Link):
    r"""Logit link on probabilities: high-norm sensitivity for scores in ``(0, 1)``.

    .. math:: h(z) = \alpha \log\frac{z}{1-z}, \quad h'(z) = \frac{\alpha}{z(1-z)},
              \quad H(z) = \alpha\,[z\log z + (1-z)\log(1-z)].

    Domain ``(0, 1)``: observed scores outside it raise ``ValueError``; predictions are
    clipped to ``[eps, 1 − eps]`` of their dtype so the loss stays finite. ``alpha`` scales
    the output (a shift of ``z`` has no meaning on a bounded domain).

    Examples
    --------
    >>> float(Logit().h(0.5)), float(Logit().dh(0.5))
    (0.0, 4.0)
    """

    name = "logit"
    domain = (0.0, 1.0)
    examples = [{}, {"alpha": 0.5}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "logit": {"params": {}, "w_u": 0.8, "d": 0.05, "s_min": 0.05, "s_max": 0.95, "tau": 0.01}
    }

    def __init__(self, *, alpha: float = 1.0):
        self.alpha = positive_float(alpha, "alpha", "Logit")
        self._params = {"alpha": alpha}

    def _clip(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        eps = float(xp.finfo(z.dtype).eps)
        return xp, xp.clip(z, eps, 1.0 - eps)

    def h(self, z: Array) -> Array:
        xp, z = self._clip(z)
        return self.alpha * (xp.log(z) - xp.log1p(-z))

    def dh(self, z: Array) -> Array:
        xp, z = self._clip(z)
        return self.alpha / (z * (1.0 - z))

    def H(self, z: Array) -> Array:
        xp, z = self._clip(z)
        return self.alpha * (A.xlogx(z, xp) + A.xlogx(1.0 - z, xp))

    def h_inv(self, y: Array) -> Array:
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        return A.sigmoid(y / self.alpha, xp)

    def conjugate(self, y: Array) -> Array:
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        return self.alpha * A.softplus(y / self.alpha, xp)

    @property
    def range(self) -> tuple[float, float]:
        return (-math.inf, math.inf)


# ======================================================================================
# Composite sigmoid: a scaling turned into a link
# ======================================================================================


class CompositeSigmoid(Link):
    r"""Composite sigmoid link of a scaling (eq. [22–24]).

    .. math::
        p(z) = \sigma(Q(z)/\gamma), \quad h(z) = q(z)\,p(z), \quad
        H(z) = \gamma\log(1 + e^{Q(z)/\gamma}),
        \quad h'(z) = p(z)\,\{q'(z) + (1 - p(z))\,q(z)^2/\gamma\}.

    Parameters
    ----------
    scaling : Scaling or str
        A scaling or its registry name (remaining keyword parameters build it).
    gamma : float
        Regulariser :math:`\gamma > 0`.
    check : bool
        Refuse (``ValueError``) a scaling/``gamma`` pair that violates the convexity condition
        [G.2] on the scaling's default domain: the link would not be monotone.
    **scaling_params
        Parameters of the scaling when given by name.

    Notes
    -----
    The inverse link is computed by bisection. With ``Constant(alpha)`` and ``gamma = 1`` the
    composite sigmoid is ``alpha·σ(alpha·z)``.

    Examples
    --------
    >>> link = CompositeSigmoid("constant")
    >>> float(link.h(0.0))
    0.5
    >>> CompositeSigmoid("cosh", gamma=2.0, cap=6.0)
    Traceback (most recent call last):
    ...
    ValueError: the composite sigmoid of CoshScaling(alpha=1.0, beta=0.0, cap=(-6.0, 6.0), cap_mode='linear') with gamma=2.0 is not convex: condition [G.2] fails at z=..., where q' + (1-p) q^2/gamma = -...; choose a smaller gamma (e.g. <= 1/sqrt(2) for cosh, [G.4]) or pass check=False
    """

    name = "composite_sigmoid"
    examples: ClassVar[list[dict[str, Any]]] = [
        {"scaling": "exp"},
        {"scaling": "sigmoid", "gamma": 0.5},
        {"scaling": "constant", "alpha": 2.0},
    ]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "composite sigmoid (exp)": {"params": {"scaling": "exp"}, "w_u": 1.0, "d": 0.5},
        "composite sigmoid (sinh)": {
            "params": {"scaling": "sinh", "gamma": 0.5},
            "w_u": -1.0,
            "d": 0.5,
        },
    }

    def __init__(
        self,
        scaling: Scaling | str = "exp",
        *,
        gamma: float = 1.0,
        check: bool = True,
        **scaling_params: Any,
    ) -> None:
        self.scaling = get_scaling(scaling, **scaling_params)
        self.gamma = positive_float(gamma, "gamma", "CompositeSigmoid")
        self.smooth = self.scaling.smooth
        self._scale = self.scaling.alpha
        self._params = {"scaling": self.scaling, "gamma": gamma}
        if check and self.scaling.closed_form_convex(self.gamma) is not True:
            rep = check_convexity(self.scaling, self.gamma)
            if not rep.convex:
                raise ValueError(
                    f"the composite sigmoid of {self.scaling!r} with gamma={self.gamma} is not convex: "
                    f"condition [G.2] fails at z={rep.argmin:.6g}, where q' + (1-p) q^2/gamma = "
                    f"{rep.min_value:.6g}; choose a smaller gamma (e.g. <= 1/sqrt(2) for cosh, [G.4]) "
                    "or pass check=False"
                )

    def _parts(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        q, dq, Q = self.scaling.q_dq_Q(z)
        return xp, q, dq, Q

    def h(self, z: Array) -> Array:
        return composite_sigmoid_h(self.scaling, self.gamma, z)

    def dh(self, z: Array) -> Array:
        return self.h_dh(z)[1]

    def h_dh(self, z: Array) -> tuple[Array, Array]:
        xp, q, dq, Q = self._parts(z)
        a = Q / self.gamma
        p = A.sigmoid(a, xp)
        # 1 - p as sigmoid(-a): exact where p rounds to 1
        return q * p, p * (dq + A.sigmoid(-a, xp) * q * q / self.gamma)

    def H(self, z: Array) -> Array:
        xp, _, _, Q = self._parts(z)
        return self.gamma * A.softplus(Q / self.gamma, xp)

    def _same_piece(self, z_a, z_b, xp):
        s = self.scaling
        if not s.capped:
            return None
        return s.same_cap_piece(s.alpha * (z_a + s.beta), s.alpha * (z_b + s.beta), xp)

    def p(self, z: Array) -> Array:
        """Composite probability :math:`p(z) = \\sigma(Q(z)/\\gamma)`."""
        xp, _, _, Q = self._parts(z)
        return A.sigmoid(Q / self.gamma, xp)

    def __repr__(self) -> str:
        return f"CompositeSigmoid({self.scaling!r}, gamma={self.gamma!r})"
