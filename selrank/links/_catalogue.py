r"""The catalogue: links of a standardized argument :math:`x = \alpha(z - \beta)`.

:class:`_AffineLink` holds the machinery (caps, closed forms of the standardized function,
the exact Bregman gradient); each catalogue link supplies :math:`f, f', F` (and
:math:`f^{-1}`, :math:`F^*` where closed forms exist).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .. import _array as A
from .._affine import Capped
from .._array import Array
from .._functions import (
    DEFAULT_CAP,
    ExpFunction,
    NegExpFunction,
    SigmoidFunction,
    SinhFunction,
    SmeLUFunction,
    StepFunction,
    bregman_threshold,
)
from .._validation import positive_float
from ._base import Link

# ======================================================================================
# The catalogue: links of a standardized argument x = alpha (z - beta)
# ======================================================================================


#: the bounds of an open range moved strictly inside, per (dtype, bound, direction)
_INSIDE: dict[tuple[str, float, float], float] = {}


class _AffineLink(Capped, Link):
    r"""A link :math:`h(z) = f(\alpha(z - \beta))` with optional caps on :math:`x`.

    Subclasses implement ``_f``, ``_df``, ``_F`` (and ``_finv``, ``_Fconj`` where closed
    forms exist) of the standardized argument ``x``.
    """

    _f_range: tuple[float, float] = (-math.inf, math.inf)  # set per instance by Huber, Piecewise

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        beta: float = 0.0,
        cap: Any = "default",
        cap_mode: str = "linear",
    ):
        cap_value = self._set_affine(alpha, beta, cap, cap_mode)
        self._scale = self.alpha
        self._params = {"alpha": alpha, "beta": beta}
        if cap_value is not None or cap != "default":
            self._params["cap"] = cap_value
            self._params["cap_mode"] = cap_mode

    # standardized argument
    def _x(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp, name="z")
        if self.alpha == 1.0 and self.beta == 0.0:
            return xp, z  # the common case: no copy
        if A.is_numpy(z):
            x = z - self.beta
            x *= self.alpha
            return xp, x
        return xp, self.alpha * (z - self.beta)

    def h(self, z: Array) -> Array:
        xp, x = self._x(z)
        return self._cf(x, xp)

    def dh(self, z: Array) -> Array:
        xp, x = self._x(z)
        return self.alpha * self._cdf(x, xp)

    def H(self, z: Array) -> Array:
        xp, x = self._x(z)
        return self._cF(x, xp) / self.alpha

    def h_dh(self, z: Array) -> tuple[Array, Array]:
        xp, x = self._x(z)
        f, df = self._c_pair(x, xp)
        if self.alpha != 1.0:
            df = self.alpha * df
        return f, df

    def bregman_grad(self, z_hat: Array, z: Array) -> Array:
        # fast path: with both arguments inside the caps, one (f, f', F) evaluation per
        # argument gives H, h and h' — the operations of bregman() and h() in the same order,
        # so the same values (the exp link: 2 exponentials per item, instead of 7)
        # (in-place torch and numba copies for the heads: selrank.fast, "bregman_grad")
        if "bregman" in self.hooks:  # an own closed form of the loss
            return Link.bregman_grad(self, z_hat, z)
        xp, xh = self._x(z_hat)
        _, x = self._x(A.as_float_array(z, xp, like=xh))
        if not (self.inside_caps(xh) and self.inside_caps(x)):
            return Link.bregman_grad(self, z_hat, z)
        fh, _, Fh = self._f_df_F(xh, xp)
        f, df, F = self._f_df_F(x, xp)
        z_hat = A.as_float_array(z_hat, xp)
        z = A.as_float_array(z, xp, like=z_hat)
        d = z_hat - z
        diff = Fh - F if self.alpha == 1.0 else Fh / self.alpha - F / self.alpha
        direct = diff - d * f
        if self.smooth:
            small = xp.abs(d) * self._scale < bregman_threshold(d, xp)
            if bool(xp.any(small)):
                near = (d * d / 6.0) * (self.alpha * df + 2.0 * self.dh(z + 0.5 * d))
                direct = xp.where(small, near, direct)
        return xp.maximum(direct, xp.zeros_like(direct)), fh - f

    def _same_piece(self, z_a, z_b, xp):
        if not self.capped:
            return None
        return self.same_cap_piece(
            self.alpha * (z_a - self.beta), self.alpha * (z_b - self.beta), xp
        )

    def h_inv(self, y: Array) -> Array:
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        if "_finv" not in self.hooks:
            return Link.h_inv(self, y)
        return self._cfinv(y, xp) / self.alpha + self.beta

    def _cfinv(self, y, xp):
        """Inverse of the capped ``f`` (in ``x``); out-of-range values clip to the ends."""
        if not self.capped:
            return self._finv(self._clip_to_f_range(y, xp), xp)
        lo, hi = self._lo, self._hi
        x = self._finv(self._clip_to_f_range(y, xp), xp)
        if math.isfinite(hi):
            f_hi = float(self._f(np.array(hi), np))
            df_hi = float(self._df(np.array(hi), np))
            if self._cap_mode == "linear" and df_hi > 0:
                beyond = hi + (y - f_hi) / df_hi
            else:
                beyond = xp.full_like(y, hi)
            x = xp.where(y > f_hi, beyond, xp.minimum(x, xp.full_like(x, hi)))
        if math.isfinite(lo):
            f_lo = float(self._f(np.array(lo), np))
            df_lo = float(self._df(np.array(lo), np))
            if self._cap_mode == "linear" and df_lo > 0:
                beyond = lo + (y - f_lo) / df_lo
            else:
                beyond = xp.full_like(y, lo)
            x = xp.where(y < f_lo, beyond, xp.maximum(x, xp.full_like(x, lo)))
        return x

    def _clip_to_f_range(self, y, xp):
        lo, hi = self._f_range

        def inside(bound: float, toward: float) -> float:
            key = (str(y.dtype), bound, toward)
            if key not in _INSIDE:
                # finfo.tiny inside the bound, or the next value of y's dtype where tiny does
                # not move it (1.0 - tiny == 1.0: a closed-form inverse divides by zero there)
                b = xp.asarray(bound, dtype=y.dtype)
                with np.errstate(under="ignore"):  # the step above 0.0 is subnormal
                    step = xp.nextafter(b, xp.asarray(toward, dtype=y.dtype))
                tiny = xp.finfo(y.dtype).tiny
                _INSIDE[key] = float(
                    xp.maximum(step, b + tiny) if toward > bound else xp.minimum(step, b - tiny)
                )
            return _INSIDE[key]

        # strictly inside an open range so that closed-form inverses stay finite
        return xp.clip(
            y,
            inside(lo, hi)
            if math.isfinite(lo) and self._f_open_low
            else (lo if math.isfinite(lo) else None),
            inside(hi, lo)
            if math.isfinite(hi) and self._f_open_high
            else (hi if math.isfinite(hi) else None),
        )

    _f_open_low: ClassVar[bool] = True
    _f_open_high: ClassVar[bool] = True

    @property
    def range(self) -> tuple[float, float]:
        lo, hi = self._f_range
        if math.isfinite(self._hi):
            f_hi = float(self._f(np.array(self._hi), np))
            hi = (
                math.inf
                if self._cap_mode == "linear" and float(self._df(np.array(self._hi), np)) > 0
                else f_hi
            )
        if math.isfinite(self._lo):
            f_lo = float(self._f(np.array(self._lo), np))
            lo = (
                -math.inf
                if self._cap_mode == "linear" and float(self._df(np.array(self._lo), np)) > 0
                else f_lo
            )
        return (lo, hi)

    def conjugate(self, y: Array) -> Array:
        r""":math:`H^*(y) = \beta y + F^*(y)/\alpha` with :math:`F^*` the conjugate of the standardized primitive."""
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        if "_Fconj" in self.hooks and not self.capped:
            return self.beta * y + self._Fconj(y, xp) / self.alpha
        x = self._cfinv(y, xp)
        return self.beta * y + (x * y - self._cF(x, xp)) / self.alpha

    def __repr__(self) -> str:
        extra = {
            k: v for k, v in self._params.items() if k not in ("alpha", "beta", "cap", "cap_mode")
        }
        args = [f"alpha={self.alpha!r}", f"beta={self.beta!r}"] + [
            f"{k}={v!r}" for k, v in extra.items()
        ]
        return f"{type(self).__name__}({', '.join(args)}{self._cap_repr()})"


class Identity(_AffineLink):
    r"""Identity link: square loss, uniform sensitivity (paper eq. [6]).

    .. math:: h(z) = \alpha(z-\beta), \quad h'(z) = \alpha, \quad H(z) = \frac{[\alpha(z-\beta)]^2}{2\alpha},
              \quad L(\hat z, z) = \tfrac{\alpha}{2}(\hat z - z)^2.

    Domain: the real line. Equivalent to squared error (LightGBM ``regression``) for ``alpha=1``.

    Examples
    --------
    >>> float(Identity().bregman(3.0, 1.0))
    2.0
    """

    name = "identity"
    odd = True  # for beta = 0
    examples = [{}, {"alpha": 2.0, "beta": 0.5}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {"identity": {"params": {}, "w_u": 1.5, "d": 0.5}}
    _f_open_low = _f_open_high = False

    def _f(self, x, xp):
        return x

    def _df(self, x, xp):
        return xp.ones_like(x)

    def _F(self, x, xp):
        return 0.5 * x * x

    def _finv(self, y, xp):
        return y

    def _Fconj(self, y, xp):
        return 0.5 * y * y

    def bregman(self, z_hat: Array, z: Array) -> Array:
        # exact closed form: no cancellation at all
        xp = A.get_namespace(z_hat, z)
        z_hat = A.as_float_array(z_hat, xp)
        z = A.as_float_array(z, xp, like=z_hat)
        if self.capped:
            return Link.bregman(self, z_hat, z)
        d = z_hat - z
        return 0.5 * self.alpha * d * d


class Sigmoid(SigmoidFunction, _AffineLink):
    r"""Sigmoid link (paper eq. [3–5]): low-norm sensitivity at ``beta = 0``; a right shift
    (``beta > 0``) emphasises high scores, a left shift low scores.

    .. math:: h(z) = \sigma(x), \quad h'(z) = \alpha\,\sigma(x)(1-\sigma(x)),
              \quad H(z) = \log(1+e^{x})/\alpha, \quad x = \alpha(z-\beta).

    Range ``(0, 1)``: with ``target="link"`` on 0/1 labels the gradient equals logistic cross
    entropy's ``σ(ẑ) − y`` (App. E.2). Computed with an overflow-free softplus.

    Examples
    --------
    >>> float(Sigmoid().h(0.0)), float(Sigmoid().dh(0.0))
    (0.5, 0.25)
    """

    name = "sigmoid"
    examples = [{}, {"alpha": 2.0, "beta": 1.0}, {"beta": -1.5}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "sigmoid (low norm)": {"params": {}, "w_u": 0.0, "d": 0.5},
        "sigmoid (high score)": {"params": {"alpha": 1.5, "beta": 2.0}, "w_u": 1.5, "d": 0.5},
        "sigmoid (low score)": {"params": {"alpha": 1.5, "beta": -2.0}, "w_u": -1.5, "d": 0.5},
    }
    _f_range = (0.0, 1.0)

    def _finv(self, y, xp):
        return xp.log(y) - xp.log1p(-y)

    def _Fconj(self, y, xp):
        # negative binary entropy; finite (0) at y = 0 and y = 1
        return A.xlogx(y, xp) + A.xlogx(1.0 - y, xp)

    def _log_mean_constants(self, x, cells, n_cells, w):
        # logit(p) = log p - log(1 - p) with both means in log space: p underflows to 0 (or
        # rounds to 1) for |x| beyond ~37, where the generic inverse is no longer exact
        log_p = A.segment_log_mean_exp(A.log_sigmoid(x), cells, n_cells, w)
        log_q = A.segment_log_mean_exp(A.log_sigmoid(-x), cells, n_cells, w)
        return (log_p - log_q) / self.alpha + self.beta


class Exp(ExpFunction, _AffineLink):
    r"""Exponential link: high-score sensitivity (paper eq. [7]).

    .. math:: h(z) = e^{x}, \quad h'(z) = \alpha e^{x}, \quad H(z) = e^{x}/\alpha.

    Capped by default at ``x = 30`` (linear continuation beyond, ``cap=None`` for none), so
    values stay finite for any float32/float64 score.

    Examples
    --------
    >>> round(float(Exp().bregman(1.0, 0.0)), 6)  # e - 1 - 1
    0.718282
    """

    name = "exp"
    examples = [
        {},
        {"alpha": 0.5, "beta": 1.0},
        {"alpha": 2.0, "cap": 3.0},
        {"cap": 2.0, "cap_mode": "flat"},
    ]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "exp (high score)": {"params": {}, "w_u": 1.5, "d": 0.5},
        "exp (low region)": {"params": {}, "w_u": -1.5, "d": 0.5},
        "exp capped flat": {"params": {"cap": 1.0, "cap_mode": "flat"}, "w_u": 2.0, "d": 0.5},
    }
    _cap_sides = "high"
    _default_cap = DEFAULT_CAP
    _f_range = (0.0, math.inf)

    def _finv(self, y, xp):
        return xp.log(y)

    def _Fconj(self, y, xp):
        return A.xlogx(y, xp) - y

    def _log_mean_constants(self, x, cells, n_cells, w):
        # log-mean-exp: the mean of e^x underflows (-40 gave -27.6 through the old floor)
        return A.segment_log_mean_exp(x, cells, n_cells, w) / self.alpha + self.beta


class NegExp(NegExpFunction, _AffineLink):
    r"""Negative exponential (anti-exponential) link: low-score sensitivity.

    .. math:: h(z) = -e^{-x}, \quad h'(z) = \alpha e^{-x}, \quad H(z) = e^{-x}/\alpha.

    Capped by default at ``x = -30`` (linear continuation below).

    Examples
    --------
    >>> link = NegExp()
    >>> float(link.h(0.0)), float(link.dh(0.0)), float(link.H(0.0))
    (-1.0, 1.0, 1.0)
    >>> round(float(link.bregman(1.0, 0.0)), 6)  # e^-1 - 1 + 1
    0.367879
    """

    name = "negexp"
    examples = [{}, {"alpha": 0.5, "beta": -1.0}, {"cap": 2.0}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {"negexp (low score)": {"params": {}, "w_u": -1.5, "d": 0.5}}
    _cap_sides = "low"
    _default_cap = DEFAULT_CAP
    _f_range = (-math.inf, 0.0)

    def _finv(self, y, xp):
        return -xp.log(-y)

    def _Fconj(self, y, xp):
        # sup_x xy - e^{-x} at x = -log(-y): y log(-y)... = -y*log(-y) + y  (y < 0)
        return -A.xlogx(-y, xp) + y

    def _log_mean_constants(self, x, cells, n_cells, w):
        # -log-mean-exp(-x): the mean of -e^{-x} underflows to the range end 0 for large x
        return -A.segment_log_mean_exp(-x, cells, n_cells, w) / self.alpha + self.beta


class Sinh(SinhFunction, _AffineLink):
    r"""Hyperbolic-sine link: high-norm sensitivity, odd (pairwise order-invariant).

    .. math:: h(z) = \sinh(x), \quad h'(z) = \alpha\cosh(x), \quad H(z) = \cosh(x)/\alpha.

    Capped by default at ``|x| = 30`` ("a sinh link can be capped in a finite range to avoid
    instabilities"); use a smaller ``cap`` for a robust pairwise loss.

    Examples
    --------
    >>> link = Sinh(cap=2.0)
    >>> float(link.dh(5.0)) == float(link.dh(2.0))  # linear beyond the cap
    True
    """

    name = "sinh"
    odd = True
    examples = [{}, {"alpha": 0.5}, {"cap": 2.0}, {"cap": 1.5, "cap_mode": "flat"}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "sinh (high norm)": {"params": {}, "w_u": -1.5, "d": 0.5},
        "sinh capped linear": {"params": {"cap": 1.0}, "w_u": 2.0, "d": 0.5},
        "sinh capped flat": {"params": {"cap": 1.0, "cap_mode": "flat"}, "w_u": -2.0, "d": 0.5},
    }
    _default_cap = DEFAULT_CAP

    def _finv(self, y, xp):
        return xp.asinh(y)

    def _Fconj(self, y, xp):
        return y * xp.asinh(y) - xp.sqrt(1.0 + y * y)


class SmeLU(SmeLUFunction, _AffineLink):
    r"""SmeLU-gradient link: band sensitivity, clips low scores and caps high ones [14].

    .. math::
        h(z) = \begin{cases} 0 & x \le -c \\ \frac{x + c}{2c} & |x| \le c \\ 1 & x \ge c \end{cases},
        \qquad
        H(z) = \frac{1}{\alpha}\begin{cases} 0 & x \le -c \\ \frac{(x + c)^2}{4c} & |x| \le c \\ x & x \ge c \end{cases}

    with :math:`x = \alpha(z - \beta)`. The sensitive band is
    :math:`z \in [\beta - c/\alpha,\ \beta + c/\alpha]`; outside it :math:`h' = 0`, so a GBDT
    Hessian needs a floor there. For dwell time choose ``beta`` near a typical engaged dwell
    and ``c`` near half the band (docs/math.md §1, "capped SmeLU").

    Examples
    --------
    >>> link = SmeLU(c=1.0)
    >>> [float(v) for v in link.h(np.array([-2.0, 0.0, 2.0]))]
    [0.0, 0.5, 1.0]
    """

    name = "smelu"
    smooth = False
    examples = [{}, {"c": 0.5, "beta": 1.0}, {"alpha": 2.0, "c": 2.0}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "smelu (band)": {"params": {"beta": 1.0, "c": 1.0}, "w_u": 1.0, "d": 0.5},
        "smelu (flat below)": {"params": {"beta": 1.0, "c": 1.0}, "w_u": -2.0, "d": 0.5},
        "smelu (capped above)": {"params": {"beta": 1.0, "c": 1.0}, "w_u": 2.5, "d": 0.3},
    }
    _f_range = (0.0, 1.0)
    _f_open_low = _f_open_high = False

    def __init__(self, *, alpha: float = 1.0, beta: float = 0.0, c: float = 1.0):
        super().__init__(alpha=alpha, beta=beta, cap=None)
        self.c = positive_float(c, "c", "SmeLU")
        self._params = {"alpha": alpha, "beta": beta, "c": c}

    def _finv(self, y, xp):
        return 2.0 * self.c * y - self.c


class Huber(_AffineLink):
    r"""Huber-gradient link: bounded, linear in the middle; ``delta_low`` makes it asymmetric.

    .. math:: h(z) = \mathrm{clip}(x, -\delta_{low}, \delta), \quad
              h'(z) = \alpha\,\mathbb{1}[-\delta_{low} < x < \delta],

    and :math:`H = F(x)/\alpha` with :math:`F` the Huber function (:math:`x^2/2` inside,
    linear outside). ``delta_low`` defaults to ``delta``.

    Examples
    --------
    >>> float(Huber(delta=1.0).bregman(3.0, 0.0))  # 1*3 - 1/2
    2.5
    """

    name = "huber"
    smooth = False
    odd = True
    examples = [{}, {"delta": 0.5}, {"delta": 2.0, "delta_low": 0.5, "beta": 1.0}]
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "huber": {"params": {"delta": 1.0}, "w_u": 0.0, "d": 0.5},
        "huber (flat)": {"params": {"delta": 1.0}, "w_u": 2.0, "d": 0.5},
    }
    _f_open_low = _f_open_high = False

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        beta: float = 0.0,
        delta: float = 1.0,
        delta_low: float | None = None,
    ):
        super().__init__(alpha=alpha, beta=beta, cap=None)
        self.delta = positive_float(delta, "delta", "Huber")
        self.delta_low = (
            self.delta if delta_low is None else positive_float(delta_low, "delta_low", "Huber")
        )
        self.odd = self.delta_low == self.delta
        self._f_range = (-self.delta_low, self.delta)
        self._params = {"alpha": alpha, "beta": beta, "delta": delta, "delta_low": delta_low}

    def _f(self, x, xp):
        return xp.clip(x, -self.delta_low, self.delta)

    def _df(self, x, xp):
        inside = (x > -self.delta_low) & (x < self.delta)
        return xp.where(inside, xp.ones_like(x), xp.zeros_like(x))

    def _F(self, x, xp):
        xc = xp.clip(x, -self.delta_low, self.delta)
        return 0.5 * xc * xc + xc * (x - xc)

    def _finv(self, y, xp):
        return y


class Step(StepFunction, _AffineLink):
    r"""Step (Heaviside) link: hinge-shaped loss, distinguishes regions only.

    .. math:: h(z) = \mathbb{1}[x > 0] \ (\tfrac12 \text{ at } 0), \quad h' = 0 \text{ a.e.},
              \quad H(z) = \max(x, 0)/\alpha.

    The loss is :math:`\max(\hat z - \beta, 0)` for observed scores below the step and
    :math:`\max(\beta - \hat z, 0)` above it. :math:`h^{-1}` returns a preimage where one
    exists (:math:`\beta \pm 1/\alpha` for the two levels) and :math:`\beta` in between.

    Examples
    --------
    >>> Step().h(np.array([-1.0, 0.0, 2.0])).tolist()
    [0.0, 0.5, 1.0]
    >>> Step().bregman(np.array([2.0, -1.0]), np.array([-1.0, 2.0])).tolist()  # hinge: max(ẑ, 0), max(-ẑ, 0)
    [2.0, 1.0]
    >>> Step(beta=1.0).h_inv(np.array([0.0, 1.0])).tolist()
    [0.0, 2.0]
    """

    name = "step"
    smooth = False
    examples = [{}, {"beta": 1.0}]
    #: Outside Theorem 1 (see Link.theorem1).
    theorem1 = "discontinuous h (Theorem 1 assumes a continuously differentiable link; h' = 0 a.e.)"
    _f_range = (0.0, 1.0)
    _f_open_low = _f_open_high = False

    def _finv(self, y, xp):
        # a preimage where one exists: one unit (of x) beyond the step for the two levels,
        # the step itself for values in between (which no score attains)
        one = xp.ones_like(y)
        return xp.where(y >= 1.0, one, xp.where(y <= self._f_range[0], -one, xp.zeros_like(y)))


class Sign(Step):
    r"""Sign link: hinge-shaped loss around ``beta``.

    .. math:: h(z) = \mathrm{sign}(x), \quad h' = 0 \text{ a.e.}, \quad H(z) = |x|/\alpha.

    Examples
    --------
    >>> Sign().h(np.array([-2.0, 0.0, 3.0])).tolist()
    [-1.0, 0.0, 1.0]
    >>> Sign().bregman(np.array([2.0, -1.0]), np.array([-1.0, 2.0])).tolist()  # 2·max(ẑ, 0), 2·max(-ẑ, 0)
    [4.0, 2.0]
    """

    name = "sign"
    #: Outside Theorem 1 (see Link.theorem1).
    theorem1 = "discontinuous h (Theorem 1 assumes a continuously differentiable link; h' = 0 a.e.)"
    odd = True
    _f_range = (-1.0, 1.0)

    def _f(self, x, xp):
        return xp.sign(x)

    def _F(self, x, xp):
        return xp.abs(x)
