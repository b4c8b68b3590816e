r"""Scalings, composite sigmoid links and composite softmax maths (docs/math.md §2–3).

A *scaling* :math:`q(z)` with integral :math:`Q(z)` (the log score transform) amplifies a
matching loss. With a regulariser :math:`\gamma > 0` it defines

* the **composite sigmoid** link (scalar, eq. [22–24]):
  :math:`p = \sigma(Q/\gamma)`, :math:`h = q\,p`, :math:`H = \gamma\log(1 + e^{Q/\gamma})`,
  :math:`h' = p\,\{q' + (1 - p)\,q^2/\gamma\}`;
* the **composite softmax** over a list (multi-class or the documents of one query,
  eq. [16–18, 29–30]): :math:`p_k = \mathrm{softmax}(Q(z)/\gamma)_k`,
  :math:`H = \gamma\,\mathrm{logsumexp}(Q(z)/\gamma)`, :math:`h_k = q(z_k)\,p_k`.

The loss is convex if :math:`Q` is convex (Thms 3, 4); more generally the scalar loss is
convex iff :math:`q'(z) + (1 - p(z))\,q(z)^2/\gamma \ge 0` (condition [G.2]), checked by
:func:`check_convexity`.

The catalogue follows the paper's appendix C.3 in using :math:`x = \alpha(z + \beta)`
(note the sign: a positive ``beta`` shifts a scaling to the *left*), with
:math:`q(z) = \alpha\,q_0(x)`, :math:`q'(z) = \alpha^2 q_0'(x)`, :math:`Q(z) = Q_0(x)`.

Examples
--------
>>> import numpy as np
>>> from selrank.scalings import get_scaling
>>> from selrank.links import CompositeSigmoid
>>> s = get_scaling("exp")
>>> float(s.q(0.0)), float(s.Q(0.0))
(1.0, 1.0)
>>> link = CompositeSigmoid("exp", gamma=1.0)   # a Link: everything built on links works
>>> round(float(link.h(0.0)), 6)  # q(0) * sigmoid(Q(0)) = 1 * sigmoid(1)
0.731059
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import _array as A
from . import _functions
from ._affine import Capped, Params
from ._array import Array
from ._functions import DEFAULT_CAP, bregman_threshold
from ._validation import finite_float, lookup, positive_float

__all__ = [
    "Scaling",
    "Constant",
    "ExpScaling",
    "NegExpScaling",
    "SigmoidScaling",
    "TanhScaling",
    "SinhScaling",
    "CoshScaling",
    "PolyScaling",
    "SmeLUScaling",
    "ReLUScaling",
    "CallableScaling",
    "ConvexityReport",
    "check_convexity",
    "closed_form_convexity",
    "scaling_from_transform",
    "SCALINGS",
    "INVALID_TRANSFORMS",
    "get_scaling",
    "composite_sigmoid_h",
    "composite_softmax",
    "composite_softmax_hess_diag",
    "composite_softmax_quadratic",
    "composite_softmax_bregman",
]


class Scaling(Params, Capped):
    r"""Base class of scalings: ``q``, ``dq``, ``Q`` of :math:`x = \alpha(z + \beta)`.

    Subclasses implement ``_q``, ``_dq`` and ``_Q`` of ``x`` for ``alpha = 1`` (the same
    capping machinery as links applies: exact on ``[lo, hi]``, continued linearly or flat).

    Attributes
    ----------
    convex_Q : bool
        ``Q`` is convex (``q`` non-decreasing) everywhere: every ``gamma`` gives a convex
        loss (Thms 3, 4).
    constant : bool
        ``q`` is constant (the standard softmax).
    """

    name: str = "scaling"  # an instance may rename itself (CallableScaling)
    convex_Q: ClassVar[bool] = True
    constant: ClassVar[bool] = False
    smooth: ClassVar[bool] = True
    examples: ClassVar[list[dict[str, Any]]] = [{}]

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        beta: float = 0.0,
        cap: Any = "default",
        cap_mode: str = "linear",
    ):
        cap_value = self._set_affine(alpha, beta, cap, cap_mode)
        self._params: dict[str, Any] = {"alpha": alpha, "beta": beta}
        if cap != "default":
            self._params.update(cap=cap_value, cap_mode=cap_mode)

    def _x(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp, name="z")
        if self.alpha == 1.0 and self.beta == 0.0:
            return xp, z
        return xp, self.alpha * (z + self.beta)

    def q(self, z: Array) -> Array:
        """Scaling function :math:`q(z)`."""
        xp, x = self._x(z)
        return self.alpha * self._cf(x, xp)

    def dq(self, z: Array) -> Array:
        """Derivative :math:`q'(z)`."""
        xp, x = self._x(z)
        return (self.alpha * self.alpha) * self._cdf(x, xp)

    def Q(self, z: Array) -> Array:
        """Log score transform :math:`Q(z) = \\int q`."""
        xp, x = self._x(z)
        return self._cF(x, xp)

    def q_dq_Q(self, z: Array) -> tuple[Array, Array, Array]:
        """``(q, q', Q)`` in one call (one evaluation of the shared transcendental work)."""
        xp, x = self._x(z)
        f, df, F = self._c_triple(x, xp)
        if self.alpha == 1.0:
            return f, df, F
        return self.alpha * f, (self.alpha * self.alpha) * df, F

    # Capped expects _f/_df/_F; scalings written out here define _q/_dq/_Q, the ones that
    # share a link's standardized function inherit its _f/_df/_F (selrank._functions) instead
    def _q(self, x, xp):
        """Hook of a written-out scaling: ``q`` of ``x`` at ``alpha = 1``."""
        raise NotImplementedError

    def _dq(self, x, xp):
        """Hook of a written-out scaling: ``q'`` of ``x`` at ``alpha = 1``."""
        raise NotImplementedError

    def _Q(self, x, xp):
        """Hook of a written-out scaling: ``Q`` of ``x`` at ``alpha = 1``."""
        raise NotImplementedError

    def _f(self, x, xp):
        return self._q(x, xp)

    def _df(self, x, xp):
        return self._dq(x, xp)

    def _F(self, x, xp):
        return self._Q(x, xp)

    def closed_form_convex(self, gamma: float) -> bool | None:
        """Closed-form convexity verdict for this scaling and ``gamma`` (None if unknown)."""
        if self.convex_Q:
            return True
        return None

    def __repr__(self) -> str:
        args = ", ".join(
            f"{k}={v!r}" for k, v in self._params.items() if k not in ("cap", "cap_mode")
        )
        return f"{type(self).__name__}({args}{self._cap_repr()})"


class Constant(Scaling):
    r"""Constant scaling :math:`q = \alpha`, :math:`Q = \alpha(z+\beta)`: the standard softmax
    (temperature :math:`\gamma/\alpha`) and, as a composite sigmoid, the sigmoid link.

    Examples
    --------
    >>> s = Constant(alpha=2.0)
    >>> [float(v) for v in s.q_dq_Q(1.0)]   # q = alpha, q' = 0, Q = alpha * z
    [2.0, 0.0, 2.0]
    """

    name = "constant"
    constant = True
    examples = [{}, {"alpha": 2.0}]

    def _q(self, x, xp):
        return xp.ones_like(x)

    def _dq(self, x, xp):
        return xp.zeros_like(x)

    def _Q(self, x, xp):
        return x


# The scalings below share a catalogue link's standardized function triple: ``q0, q0', Q0``
# are the mixin's ``f, f', F`` of :mod:`selrank._functions` (no second copy), and the scaling
# applies its own scale, shift and caps.


class ExpScaling(_functions.ExpFunction, Scaling):
    r"""Exponential scaling :math:`q = \alpha e^{x}`, :math:`Q = e^{x}`: the double-exponential
    softmax [C.11–C.12], high-score sensitivity. Capped by default at ``x = 30``.

    Examples
    --------
    >>> [round(float(v), 6) for v in ExpScaling().q_dq_Q(1.0)]   # e, e, e
    [2.718282, 2.718282, 2.718282]
    """

    name = "exp"
    examples = [{}, {"alpha": 0.5, "beta": -1.0}, {"cap": 3.0}]
    _cap_sides = "high"
    _default_cap = DEFAULT_CAP


class NegExpScaling(_functions.NegExpFunction, Scaling):
    r"""Anti-exponential scaling :math:`q = -\alpha e^{-x}`, :math:`Q = e^{-x}`: low-score
    sensitivity (a convex, decreasing ``Q``). Capped by default at ``x = -30``.

    Examples
    --------
    >>> [round(float(v), 6) for v in NegExpScaling().q_dq_Q(1.0)]   # -1/e, 1/e, 1/e
    [-0.367879, 0.367879, 0.367879]
    """

    name = "negexp"
    examples = [{}, {"alpha": 0.5}]
    _cap_sides = "low"
    _default_cap = DEFAULT_CAP


class SigmoidScaling(_functions.SigmoidFunction, Scaling):
    r"""Sigmoid scaling :math:`q = \alpha\sigma(x)`, :math:`Q = \mathrm{softplus}(x)`: SoftmaxPlus,
    the add-1 softmax [C.13–C.15].

    Examples
    --------
    >>> [round(float(v), 6) for v in SigmoidScaling().q_dq_Q(0.0)]   # 1/2, 1/4, log 2
    [0.5, 0.25, 0.693147]
    """

    name = "sigmoid"
    examples = [{}, {"alpha": 2.0, "beta": 1.0}]


class TanhScaling(Scaling):
    r"""Tanh scaling :math:`q = \alpha\tanh(x)`, :math:`Q = \log\cosh(x)`: SoftCosh [C.16–C.17]
    (reverses sensitivities in the multi-class case, App. H.6).

    Examples
    --------
    >>> [round(float(v), 6) for v in TanhScaling().q_dq_Q(1.0)]   # tanh 1, 1 - tanh² 1, log cosh 1
    [0.761594, 0.419974, 0.433781]
    """

    name = "tanh"
    examples = [{}, {"alpha": 2.0}]

    def _q(self, x, xp):
        return xp.tanh(x)

    def _dq(self, x, xp):
        t = xp.tanh(x)
        return 1.0 - t * t

    def _Q(self, x, xp):
        a = xp.abs(x)
        return a + xp.log1p(xp.exp(-2.0 * a)) - math.log(2.0)

    def _f_df_F(self, x, xp):
        t = xp.tanh(x)
        return t, 1.0 - t * t, self._Q(x, xp)


class SinhScaling(_functions.SinhFunction, Scaling):
    r"""Sinh scaling :math:`q = \alpha\sinh(x)`, :math:`Q = \cosh(x)`: high-norm sensitivity
    (convex ``Q``). Capped by default at ``|x| = 30``.

    Examples
    --------
    >>> [round(float(v), 6) for v in SinhScaling().q_dq_Q(1.0)]   # sinh 1, cosh 1, cosh 1
    [1.175201, 1.543081, 1.543081]
    """

    name = "sinh"
    examples = [{}, {"alpha": 0.5}, {"cap": 2.0}]
    _default_cap = DEFAULT_CAP


class CoshScaling(Scaling):
    r"""Cosh scaling :math:`q = \alpha\cosh(x)`, :math:`Q = \sinh(x)`: a monotone composite
    probability with high-norm sensitivity. ``Q`` is not convex; the composite sigmoid loss
    is convex for :math:`\gamma \le 1/\sqrt{2}` (Corollary [G.4]).

    Examples
    --------
    >>> [round(float(v), 6) for v in CoshScaling(cap=8.0).q_dq_Q(1.0)]   # cosh 1, sinh 1, sinh 1
    [1.543081, 1.175201, 1.175201]
    >>> CoshScaling().closed_form_convex(gamma=0.5), CoshScaling().closed_form_convex(gamma=1.0)
    (True, None)
    """

    name = "cosh"
    convex_Q = False
    examples = [{"cap": 8.0}, {"alpha": 0.5, "cap": 8.0}]
    _default_cap = DEFAULT_CAP

    def _q(self, x, xp):
        return xp.cosh(x)

    def _dq(self, x, xp):
        return xp.sinh(x)

    def _Q(self, x, xp):
        return xp.sinh(x)

    def _f_df_F(self, x, xp):
        sh = xp.sinh(x)
        return xp.cosh(x), sh, sh

    def closed_form_convex(self, gamma: float) -> bool | None:
        # [G.4] is sufficient, not necessary: above the bound the verdict is left to [G.2]
        return True if gamma <= 1.0 / math.sqrt(2.0) else None


class PolyScaling(Scaling):
    r"""Polynomial scaling :math:`q = \alpha(|x|^d + c)`,
    :math:`Q = \mathrm{sign}(x)|x|^{d+1}/(d+1) + c\,x` (``d >= 1``): high norms. ``Q`` is not
    convex; the composite sigmoid loss is convex if
    :math:`c \ge \max\{\sqrt{2\gamma d},\ \gamma d - 1/2\}` (Corollary [G.5]).

    Examples
    --------
    >>> [round(float(v), 6) for v in PolyScaling(d=2.0, c=2.0).q_dq_Q(1.0)]   # 1 + 2, 2, 1/3 + 2
    [3.0, 2.0, 2.333333]
    """

    name = "poly"
    convex_Q = False
    examples = [{"d": 2.0, "c": 2.0}, {"d": 1.0, "c": 1.5}]

    def __init__(self, *, d: float = 2.0, c: float = 2.0, alpha: float = 1.0, beta: float = 0.0):
        super().__init__(alpha=alpha, beta=beta, cap=None)
        self.d = positive_float(d, "d", "PolyScaling")
        if self.d < 1.0:
            raise ValueError(
                f"`d` of PolyScaling must be >= 1 (q' is unbounded at 0 otherwise); got {d!r}"
            )
        self.c = finite_float(c, "c", "PolyScaling")
        self._params = {"d": d, "c": c, "alpha": alpha, "beta": beta}

    def _q(self, x, xp):
        return xp.abs(x) ** self.d + self.c

    def _dq(self, x, xp):
        if self.d == 1.0:
            return xp.sign(x)
        return self.d * xp.sign(x) * xp.abs(x) ** (self.d - 1.0)

    def _Q(self, x, xp):
        return xp.sign(x) * xp.abs(x) ** (self.d + 1.0) / (self.d + 1.0) + self.c * x

    def closed_form_convex(self, gamma: float) -> bool | None:
        bound = max(math.sqrt(2.0 * gamma * self.d), gamma * self.d - 0.5)
        return True if self.c >= bound else None


class SmeLUScaling(_functions.SmeLUFunction, Scaling):
    r"""SmeLU scaling: :math:`Q = \mathrm{SmeLU}(x)`, :math:`q = \alpha\cdot` the SmeLU gradient:
    SoftSmeLU, clips low scores (distillation of teacher scores, docs/math.md §3–4).

    Examples
    --------
    >>> [float(v) for v in SmeLUScaling(c=1.0).q_dq_Q(0.0)]   # middle of the band
    [0.5, 0.5, 0.25]
    """

    name = "smelu"
    smooth = False
    examples = [{}, {"c": 0.5, "beta": -1.0}]

    def __init__(self, *, c: float = 1.0, alpha: float = 1.0, beta: float = 0.0):
        super().__init__(alpha=alpha, beta=beta, cap=None)
        self.c = positive_float(c, "c", "SmeLUScaling")
        self._params = {"c": c, "alpha": alpha, "beta": beta}


class ReLUScaling(_functions.StepFunction, Scaling):
    r"""ReLU scaling: :math:`Q = \max(x, 0)`, :math:`q = \alpha\,\mathbb{1}[x > 0]` (½ at 0):
    clips low scores to a common floor.

    Examples
    --------
    >>> [float(v) for v in ReLUScaling().q_dq_Q(1.0)]   # q = 1 above 0, Q = max(z, 0)
    [1.0, 0.0, 1.0]
    """

    name = "relu"
    smooth = False
    examples = [{}, {"beta": -1.0}]


class CallableScaling(Scaling):
    r"""A user-defined scaling from callables ``q`` and ``Q`` (``dq`` by differences if absent).

    ``alpha``/``beta`` are not applied: the callables receive the score ``z`` itself.
    Whether ``Q`` is convex is not known in closed form, so losses built from it run the
    [G.2] check (:func:`check_convexity`).
    """

    name = "callable"
    convex_Q = False

    def __init__(
        self, q: Callable, Q: Callable, *, dq: Callable | None = None, name: str = "callable"
    ):
        for nm, f in (("q", q), ("Q", Q)):
            if not callable(f):
                raise TypeError(
                    f"`{nm}` of CallableScaling must be callable; got {type(f).__name__}"
                )
        if dq is not None and not callable(dq):
            raise TypeError(
                f"`dq` of CallableScaling must be callable or None; got {type(dq).__name__}"
            )
        super().__init__(alpha=1.0, beta=0.0, cap=None)
        self._uq, self._uQ, self._udq = q, Q, dq
        self.name = name
        self._params = {"q": q, "Q": Q, "dq": dq, "name": name}

    def _q(self, x, xp):
        return A.as_float_array(self._uq(x), xp, like=x)

    def _Q(self, x, xp):
        return A.as_float_array(self._uQ(x), xp, like=x)

    def _dq(self, x, xp):
        if self._udq is not None:
            return A.as_float_array(self._udq(x), xp, like=x)
        eps = float(xp.finfo(x.dtype).eps)
        step = eps ** (1.0 / 3.0) * xp.maximum(xp.abs(x), xp.ones_like(x))
        return (self._q(x + step, xp) - self._q(x - step, xp)) / (2.0 * step)


# ======================================================================================
# Convexity: condition [G.2] and the closed forms [G.4], [G.5]
# ======================================================================================


@dataclass(frozen=True)
class ConvexityReport:
    """Result of :func:`check_convexity`.

    Attributes
    ----------
    convex : bool
        Condition [G.2] holds at every grid point (within rounding).
    min_value : float
        Smallest value of :math:`q' + (1 - p) q^2 / \\gamma` on the grid.
    argmin : float
        Score where it is attained.
    closed_form : bool or None
        Verdict of the closed-form sufficient condition ([G.4], [G.5], or convex ``Q``),
        ``None`` where none applies.
    domain : tuple of float
        Scores checked.
    """

    convex: bool
    min_value: float
    argmin: float
    closed_form: bool | None
    domain: tuple[float, float]

    def __bool__(self) -> bool:
        return self.convex


def _default_domain(scaling: Scaling) -> tuple[float, float]:
    """Scores whose standardized argument spans ``[-20, 20]`` (or the caps, if nearer)."""
    lo, hi = scaling.caps
    lo = max(-20.0, lo) if math.isfinite(lo) else -20.0
    hi = min(20.0, hi) if math.isfinite(hi) else 20.0
    lo, hi = lo - 1.0, hi + 1.0  # a little beyond the caps, where the continuation applies
    return (lo / scaling.alpha - scaling.beta, hi / scaling.alpha - scaling.beta)


def check_convexity(
    scaling: Scaling | str,
    gamma: float = 1.0,
    *,
    domain: tuple[float, float] | None = None,
    num: int = 20001,
) -> ConvexityReport:
    r"""Check condition [G.2], :math:`q'(z) + \frac{1}{\gamma}(1 - p(z))\,q(z)^2 \ge 0`, on a grid.

    The composite sigmoid matching loss is convex on ``domain`` iff this holds there
    (Corollary G.1). A violation means the composite link decreases somewhere.

    Parameters
    ----------
    scaling : Scaling or str
    gamma : float
        Regulariser :math:`\gamma > 0`.
    domain : (float, float), optional
        Scores to check; by default the scores whose standardized argument spans
        ``[-21, 21]``.
    num : int
        Grid points.

    Examples
    --------
    >>> check_convexity("cosh", gamma=0.7, domain=(-8, 8)).convex   # [G.4]: gamma <= 1/sqrt(2)
    True
    >>> check_convexity("poly", gamma=1.0).convex  # d=2, c=2 >= max(2, 1.5): [G.5]
    True
    >>> check_convexity(get_scaling("poly", d=2.0, c=0.0)).convex
    False
    """
    scaling = get_scaling(scaling) if not isinstance(scaling, Scaling) else scaling
    gamma = positive_float(gamma, "gamma", "check_convexity")
    lo, hi = domain if domain is not None else _default_domain(scaling)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"`domain` must be a finite interval (low < high); got {domain!r}")
    z = np.linspace(lo, hi, int(num))
    with np.errstate(over="ignore", invalid="ignore"):
        q, dq, Q = (np.asarray(A.to_numpy(v), dtype=np.float64) for v in scaling.q_dq_Q(z))
        one_minus_p = A.to_numpy(A.sigmoid(-Q / gamma, np))
        g = dq + one_minus_p * q * q / gamma
    scale = np.abs(dq) + one_minus_p * q * q / gamma
    tol = 1e-10 * np.maximum(scale, 1e-300)
    finite = np.isfinite(g)
    ok = bool(np.all(g[finite] >= -tol[finite])) and bool(np.all(finite))
    i = int(np.nanargmin(np.where(finite, g, np.inf)))
    return ConvexityReport(
        ok, float(g[i]), float(z[i]), closed_form_convexity(scaling, gamma), (float(lo), float(hi))
    )


def closed_form_convexity(scaling: Scaling | str, gamma: float = 1.0) -> bool | None:
    """Closed-form sufficient convexity condition: convex ``Q`` (Thm 3), [G.4] or [G.5].

    Returns True where it proves convexity, None where it does not decide.
    """
    scaling = get_scaling(scaling) if not isinstance(scaling, Scaling) else scaling
    return scaling.closed_form_convex(float(gamma))


# ======================================================================================
# Composite sigmoid (scalar) and composite softmax maths, shared by multi-class [n, K]
# arrays and ragged query lists
# ======================================================================================


def composite_sigmoid_h(scaling: Scaling, gamma: float, z: Array) -> Array:
    r"""Composite sigmoid link [22]: :math:`h(z) = q(z)\,\sigma(Q(z)/\gamma)`.

    The ``h`` of :class:`selrank.links.CompositeSigmoid`; here so that the scalings can check
    a score transform (:func:`scaling_from_transform`) without the links.

    Examples
    --------
    >>> float(composite_sigmoid_h(get_scaling("constant"), 1.0, 0.0))  # 1 * sigmoid(0)
    0.5
    """
    xp = A.get_namespace(z)
    z = A.as_float_array(z, xp)
    q, _, Q = scaling.q_dq_Q(z)
    return q * A.sigmoid(Q / gamma, xp)


def composite_softmax(scaling: Scaling, gamma: float, z: Array, lists: Any) -> dict[str, Array]:
    r"""Composite softmax quantities of scores ``z`` over lists.

    Parameters
    ----------
    scaling : Scaling
    gamma : float
    z : array
        Scores; ``[n, K]`` with ``lists = DenseLists()`` or flat grouped rows with
        ``lists`` a :class:`~selrank._groups.Groups`.
    lists : DenseLists or Groups
        Reducer with ``sum``, ``max`` (per list) and ``broadcast`` (back onto elements).

    Returns
    -------
    dict with ``q``, ``dq``, ``p``, ``logp`` (per element), ``H`` (per list:
    :math:`\gamma\,\mathrm{logsumexp}(Q/\gamma)`, computed in log space), and ``h = q·p``.
    """
    xp = A.get_namespace(z)
    q, dq, Q = scaling.q_dq_Q(z)
    a = Q / gamma
    m = lists.max(a)
    if A.is_torch(m):
        m = m.detach()
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    shifted = a - lists.broadcast(m)
    e = xp.exp(shifted)
    s = lists.sum(e)
    log_s = xp.log(s)
    lse = log_s + m
    # p and log p from the shifted values: exact for near-equal large scores (no `a - lse`),
    # and one exponential per element
    p = e / lists.broadcast(s)
    logp = shifted - lists.broadcast(log_s)
    return {"q": q, "dq": dq, "p": p, "logp": logp, "H": gamma * lse, "h": q * p}


def composite_softmax_hess_diag(parts: dict, gamma: float) -> Array:
    r"""Hessian diagonal [C.6]: :math:`p_k\{q'(z_k) + (1 - p_k)\,q(z_k)^2/\gamma\}`.

    ``1 - p`` is computed as ``-expm1(log p)``, exact where ``p`` rounds to 1.
    """
    xp = A.get_namespace(parts["p"])
    one_minus_p = -xp.expm1(parts["logp"])
    return parts["p"] * (parts["dq"] + one_minus_p * parts["q"] * parts["q"] / gamma)


def composite_softmax_quadratic(parts: dict, d: Array, gamma: float, lists: Any) -> Array:
    r"""Per-list quadratic form :math:`d^\top \nabla^2 H\, d` of the composite softmax [B.2].

    .. math:: \sum_k p_k q'_k d_k^2 + \frac{1}{\gamma}\Big[\sum_k p_k q_k^2 d_k^2 - \big(\sum_k p_k q_k d_k\big)^2\Big]
    """
    p, q, dq = parts["p"], parts["q"], parts["dq"]
    pqd = p * q * d
    return lists.sum(p * dq * d * d) + (lists.sum(pqd * q * d) - lists.sum(pqd) ** 2) / gamma


def composite_softmax_bregman(
    scaling: Scaling,
    gamma: float,
    z_hat: Array,
    z: Array,
    lists: Any,
    parts_hat: dict | None = None,
    parts: dict | None = None,
) -> Array:
    r"""Per-list loss [29]: :math:`H(\hat z) - H(z) - \sum_k (\hat z_k - z_k)\,h_k(z)`, stably.

    Lists whose largest :math:`|\alpha(\hat z_k - z_k)|` is tiny use Simpson's rule on
    :math:`\int_0^1 (1 - t)\, d^\top \nabla^2 H(z + t d)\, d\, dt` instead of the cancelling
    difference. Clipped at 0.
    """
    xp = A.get_namespace(z_hat, z)
    parts_hat = parts_hat or composite_softmax(scaling, gamma, z_hat, lists)
    parts = parts or composite_softmax(scaling, gamma, z, lists)
    d = z_hat - z
    direct = parts_hat["H"] - parts["H"] - lists.sum(d * parts["h"])
    if scaling.smooth:
        dmax = lists.max(xp.abs(d))
        small = dmax * scaling.alpha < bregman_threshold(d, xp)
        if scaling.capped and bool(xp.any(small)):  # the Taylor form needs one smooth piece
            same = scaling.same_cap_piece(
                scaling.alpha * (z_hat + scaling.beta),
                scaling.alpha * (z + scaling.beta),
                xp,
            )
            if same is not None:  # (it is: the scaling is capped)
                small = small & (lists.sum(xp.astype(~same, d.dtype)) == 0)
        if bool(xp.any(small)):
            mid = composite_softmax(scaling, gamma, z + 0.5 * d, lists)
            near = (
                composite_softmax_quadratic(parts, d, gamma, lists)
                + 2.0 * composite_softmax_quadratic(mid, d, gamma, lists)
            ) / 6.0
            direct = xp.where(small, near, direct)
    return xp.maximum(direct, xp.zeros_like(direct))


# ======================================================================================
# Score transforms and the registry
# ======================================================================================

#: Score transforms ``f = e^Q`` that never give a monotone link (App. G.3), with what to use.
INVALID_TRANSFORMS: dict[str, str] = {
    "abs_power": "f(z) = |x|^d gives Q = d·log|x| and a decreasing link with a discontinuity",
    "exp_sigmoid": "f(z) = e^{σ(z)} gives q = σ'(z), the logistic density, and a decreasing link",
    "exp_tanh": "f(z) = e^{tanh z} gives q = 1 − tanh², a decaying density, and a decreasing link",
    "softplus": "f(z) = log(1 + e^z) gives a link that decreases like 1/z; the scaling 'sigmoid' has Q = softplus",
    "sigmoid_transform": "f(z) = σ(z) gives a link that decreases for large z",
    "sinh_abs": "f(z) = sinh(|z|) gives a link with decreasing regions",
}


def scaling_from_transform(
    f: Callable,
    *,
    gamma: float = 1.0,
    domain: tuple[float, float] = (-10.0, 10.0),
    name: str = "transform",
    num: int = 4001,
) -> CallableScaling:
    r"""Build a scaling from a positive *score transform* :math:`f = e^{Q}` and refuse invalid ones.

    :math:`Q = \log f`, :math:`q = f'/f` (central differences). Transforms that cannot give a
    monotone non-decreasing composite link on ``domain`` — e.g. :math:`|z|^d`,
    :math:`e^{\sigma(z)}`, :math:`e^{\tanh z}`, softplus, sigmoid, :math:`\sinh|z|` (App. G.3)
    — raise ``ValueError`` naming where the link decreases.

    Examples
    --------
    >>> s = scaling_from_transform(lambda z: 1.0 + np.exp(z))   # Q = softplus: SoftmaxPlus
    >>> round(float(s.q(0.0)), 6)
    0.5
    >>> scaling_from_transform(lambda z: np.log1p(np.exp(z)))
    Traceback (most recent call last):
    ...
    ValueError: score transform 'transform' is invalid (App. G.3): the composite link decreases near z=...
    """
    if not callable(f):
        raise TypeError(f"`f` must be callable; got {type(f).__name__}")

    def Q(z):
        xp = A.get_namespace(z)
        return xp.log(A.as_float_array(f(z), xp, like=z))

    def q(z):
        xp = A.get_namespace(z)
        eps = float(xp.finfo(z.dtype).eps)
        step = eps ** (1.0 / 3.0) * xp.maximum(xp.abs(z), xp.ones_like(z))
        return (Q(z + step) - Q(z - step)) / (2.0 * step)

    grid = np.linspace(domain[0], domain[1], int(num))
    with np.errstate(all="ignore"):
        fv = np.asarray(f(grid), dtype=np.float64)
    if not np.all(np.isfinite(fv) & (fv > 0)):
        bad = int(np.flatnonzero(~(np.isfinite(fv) & (fv > 0)))[0])
        raise ValueError(
            f"score transform {name!r} must be positive and finite on {domain} (f = e^Q); "
            f"got f({grid[bad]:.4g}) = {fv[bad]!r}"
        )
    scaling = CallableScaling(q, Q, name=name)
    with np.errstate(all="ignore"):
        hv = A.to_numpy(composite_sigmoid_h(scaling, gamma, grid))
    dec = np.diff(hv) < -1e-9 * np.maximum(1.0, np.abs(hv[1:]))
    if np.any(dec):
        i = int(np.flatnonzero(dec)[0])
        raise ValueError(
            f"score transform {name!r} is invalid (App. G.3): the composite link decreases near "
            f"z={grid[i]:.4g} (h falls from {hv[i]:.6g} to {hv[i + 1]:.6g}), so no convex matching loss exists"
        )
    return scaling


#: Registry of scalings by name.
SCALINGS: dict[str, type[Scaling]] = {
    "constant": Constant,
    "exp": ExpScaling,
    "negexp": NegExpScaling,
    "sigmoid": SigmoidScaling,
    "tanh": TanhScaling,
    "sinh": SinhScaling,
    "cosh": CoshScaling,
    "poly": PolyScaling,
    "smelu": SmeLUScaling,
    "relu": ReLUScaling,
}


def get_scaling(name: str | Scaling, **params: Any) -> Scaling:
    """Build a scaling by registry name (or pass a :class:`Scaling` through).

    Names of invalid score transforms (App. G.3, :data:`INVALID_TRANSFORMS`) raise a
    ``ValueError`` that explains why.

    Examples
    --------
    >>> get_scaling("sigmoid", alpha=2.0)
    SigmoidScaling(alpha=2.0, beta=0.0)
    >>> get_scaling("softplus")
    Traceback (most recent call last):
    ...
    ValueError: 'softplus' is an invalid score transform (App. G.3): f(z) = log(1 + e^z) gives a link that decreases like 1/z; the scaling 'sigmoid' has Q = softplus
    """
    if isinstance(name, str) and name.lower() in INVALID_TRANSFORMS:
        raise ValueError(
            f"{name!r} is an invalid score transform (App. G.3): {INVALID_TRANSFORMS[name.lower()]}"
        )
    return lookup(
        SCALINGS, name, "scaling", instance_of=Scaling, accepts="a name or a Scaling", **params
    )
