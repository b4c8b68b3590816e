r"""Underspecification suite: BUST / BLUST (Theorem 1), Appendix F, Appendix I, sensitivity reports.

A selective matching loss makes a model that cannot explain everything explain the
high-sensitivity regions first (docs/math.md §5). This module measures that, for any link:

**Theorem 1.** Scores :math:`w \sim U[S_m, S_M]` are observed as :math:`z = w`, except on a
small interval :math:`[w_u - \tau/2, w_u + \tau/2]` where :math:`z = w + d`. A model that
cannot see the interval predicts :math:`\hat z = w + \hat\delta` with one offset. The
matching loss of link :math:`h` sets the offset where the mean gradient
:math:`h(w + \hat\delta) - h(z)` vanishes, i.e. (paper eq. [12])

.. math::

    \int_{S_m}^{S_M} [h(w + \hat\delta) - h(w)]\,dw
    = \int_{w_u - \tau/2}^{w_u + \tau/2} [h(w + d) - h(w)]\,dw,

and for :math:`\tau \to 0` (eq. [13], [10])

.. math::

    \frac{\hat\delta}{\tau} \to \Delta_{\rm BUST}(w_u) = \frac{h(w_u + d) - h(w_u)}{h(S_M) - h(S_m)},
    \qquad \frac{\hat\delta}{\tau d} \to \Delta_{\rm BLUST}(w_u) = \frac{h'(w_u)}{h(S_M) - h(S_m)}.

:func:`bust` and :func:`blust` evaluate the closed forms, :func:`solve_bust_offset` solves
[12] exactly for finite :math:`\tau` (with the primitive :math:`H`, safeguarded Newton), and
:func:`check_theorem1` also fits the one-offset model to sampled data with the matching loss
(:func:`fit_linear`: Newton on the link, gradient :math:`h(\hat z) - h(z)`, Hessian
:math:`h'(\hat z)`) and checks that the three agree within stated tolerances.
:func:`theorem1_table` runs it for every case of :data:`THEOREM1_CASES` (one or more per link
family of :data:`selrank.links.LINKS`, capped and flat links included).

**Appendix F.** :func:`two_feature_experiment` / :func:`appendix_f`: a linear model
:math:`\hat s = w_1 x_1 + w_2 x_2` fit with a high-score, low-score or low-norm link on the
two-feature data (:func:`selrank.datasets.make_two_feature_data`).

**Appendix I.** :func:`stochastic_optimum` / :func:`appendix_i`: the proper optimum
:math:`h^{-1}(\overline{h(S)})` of groups of stochastic scores under an exponential link, as
the scale :math:`\alpha` grows.

**Sensitivity reports.** :func:`sensitivity_report` tabulates :math:`h`, :math:`h'`, the loss
curves for observed scores :math:`s \in \{-3, 0, 3\}`, BUST and BLUST for any link or scaling
(through its composite sigmoid); :meth:`SensitivityReport.figure` draws them
(:func:`selrank.paper.figures.plot_sensitivity`).

Everything is derived from the link's own ``h``, ``dh``, ``H`` and ``h_inv``; this module never
imports :mod:`selrank.losses`.

Examples
--------
>>> from selrank.links import get_link
>>> exp = get_link("exp")
>>> round(float(bust(exp, 1.5, d=0.5, s_min=-3, s_max=3)), 4)
0.1451
>>> round(solve_bust_offset(exp, w_u=1.5, d=0.5, tau=0.01, s_min=-3, s_max=3) / 0.01, 4)
0.145
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import Array, to_numpy
from .._validation import finite_float, positive_float
from ..links import LINKS, CompositeSigmoid, Link, get_link
from ..losses import Pointwise
from ..metrics.region import cell_optimum
from ..scalings import Scaling
from ._drawing import draw_sensitivity

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.figure import Figure

__all__ = [
    "bust",
    "blust",
    "solve_bust_offset",
    "fit_linear",
    "LinearFit",
    "Theorem1Result",
    "check_theorem1",
    "THEOREM1_CASES",
    "THEOREM1_EXCLUDED",
    "theorem1_catalogue",
    "theorem1_table",
    "TwoFeatureResult",
    "two_feature_experiment",
    "APPENDIX_F_LINKS",
    "appendix_f",
    "stochastic_optimum",
    "AppendixIResult",
    "APPENDIX_I_ALPHAS",
    "APPENDIX_I_DEVIATIONS",
    "appendix_i",
    "SensitivityReport",
    "sensitivity_report",
]


def _np(x) -> np.ndarray:
    return np.asarray(to_numpy(x), dtype=np.float64)


def _h(link: Link, z) -> np.ndarray:
    za = np.asarray(z, dtype=np.float64)
    return _np(link.h(np.atleast_1d(za))).reshape(za.shape)


def _dh(link: Link, z) -> np.ndarray:
    za = np.asarray(z, dtype=np.float64)
    return _np(link.dh(np.atleast_1d(za))).reshape(za.shape)


def _H(link: Link, z) -> np.ndarray:
    za = np.asarray(z, dtype=np.float64)
    return _np(link.H(np.atleast_1d(za))).reshape(za.shape)


def _scalar_or_array(x: np.ndarray, like) -> float | np.ndarray:
    return float(x) if np.ndim(like) == 0 else x


def _check_range(link: Link, s_min: float, s_max: float, owner: str) -> tuple[float, float, float]:
    lo = finite_float(s_min, "s_min", owner)
    hi = finite_float(s_max, "s_max", owner)
    if not lo < hi:
        raise ValueError(f"{owner} needs s_min < s_max; got s_min={lo}, s_max={hi}")
    link.check_domain(np.array([lo, hi]), "[s_min, s_max]")
    span = float(np.diff(_h(link, [lo, hi]))[0])
    if not span > 0:
        raise ValueError(
            f"{owner}: the link {link!r} is flat on [s_min, s_max] = [{lo}, {hi}] "
            "(h(s_max) = h(s_min)), so BUST is undefined; choose a range that covers its sensitive region"
        )
    return lo, hi, span


# ======================================================================================
# Theorem 1: closed forms and the exact finite-tau offset
# ======================================================================================


def bust(
    link: Link | str, w_u: float | Array, *, d: float, s_min: float, s_max: float
) -> float | np.ndarray:
    r"""Bias underspecification sensitivity :math:`\Delta_{\rm BUST}(w_u)` (Theorem 1, eq. [10]).

    .. math:: \Delta_{\rm BUST}(w_u) = \frac{h(w_u + d) - h(w_u)}{h(S_M) - h(S_m)}

    Parameters
    ----------
    link : Link or str
    w_u : float or array-like
        Centre(s) of the underspecified interval.
    d : float
        Bias of the observed scores inside the interval.
    s_min, s_max : float
        Score range :math:`[S_m, S_M]` (where :math:`h` must not be flat).

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> bust("identity", [0.0, 2.0], d=0.6, s_min=-3, s_max=3).tolist()   # d / (S_M - S_m)
    [0.1, 0.1]
    >>> float(bust("smelu", -2.5, d=0.5, s_min=-3, s_max=3))   # flat below the band
    0.0
    """
    link = get_link(link)
    _, _, span = _check_range(link, s_min, s_max, "bust")
    d = finite_float(d, "d", "bust")
    w = np.asarray(w_u, dtype=np.float64)
    return _scalar_or_array((_h(link, w + d) - _h(link, w)) / span, w_u)


def blust(
    link: Link | str, w_u: float | Array, *, s_min: float, s_max: float
) -> float | np.ndarray:
    r"""Bias local underspecification sensitivity :math:`\Delta_{\rm BLUST}(w_u)` (eq. [10]).

    .. math:: \Delta_{\rm BLUST}(w_u) = \frac{h'(w_u)}{h(S_M) - h(S_m)}

    Examples
    --------
    >>> round(float(blust("sigmoid", 0.0, s_min=-3, s_max=3)), 4)   # 0.25 / (σ(3) − σ(−3))
    0.2762
    """
    link = get_link(link)
    _, _, span = _check_range(link, s_min, s_max, "blust")
    w = np.asarray(w_u, dtype=np.float64)
    return _scalar_or_array(_dh(link, w) / span, w_u)


def _interval_rhs(link: Link, w_u: float, d: float, tau: float) -> float:
    """Right-hand side of [12]: the integral of h(w + d) - h(w) over the interval, via H."""
    a, b = w_u - tau / 2, w_u + tau / 2
    H = _H(link, [b + d, a + d, b, a])
    return float((H[0] - H[1]) - (H[2] - H[3]))


def solve_bust_offset(
    link: Link | str,
    *,
    w_u: float,
    d: float,
    tau: float,
    s_min: float,
    s_max: float,
    max_iter: int = 200,
) -> float:
    r"""The exact optimal offset :math:`\hat\delta` of Theorem 1 for a finite interval width.

    Solves eq. [12],

    .. math::

        G(\delta) = [H(S_M + \delta) - H(S_M)] - [H(S_m + \delta) - H(S_m)]
        = [H(w_u + \tfrac\tau2 + d) - H(w_u - \tfrac\tau2 + d)] - [H(w_u + \tfrac\tau2) - H(w_u - \tfrac\tau2)],

    with safeguarded Newton steps (:math:`G'(\delta) = h(S_M + \delta) - h(S_m + \delta) \ge 0`,
    so :math:`G` is monotone) inside a bisection bracket. :math:`\hat\delta / \tau` tends to
    :math:`\Delta_{\rm BUST}` as :math:`\tau \to 0`.

    Parameters
    ----------
    link : Link or str
    w_u, d, tau : float
        Interval centre, bias and width (``tau > 0``); the interval must lie in the range.
    s_min, s_max : float
    max_iter : int

    Returns
    -------
    float

    Examples
    --------
    >>> solve_bust_offset("identity", w_u=0.0, d=0.5, tau=0.06, s_min=-3, s_max=3)   # tau d / 6
    0.005...
    """
    link = get_link(link)
    owner = "solve_bust_offset"
    lo, hi, span = _check_range(link, s_min, s_max, owner)
    w_u = finite_float(w_u, "w_u", owner)
    d = finite_float(d, "d", owner)
    tau = positive_float(tau, "tau", owner)
    if w_u - tau / 2 < lo or w_u + tau / 2 > hi:
        raise ValueError(
            f"{owner}: the interval [w_u - tau/2, w_u + tau/2] = [{w_u - tau / 2}, {w_u + tau / 2}] "
            f"must lie inside [s_min, s_max] = [{lo}, {hi}]"
        )
    link.check_domain(np.array([w_u - tau / 2 + d, w_u + tau / 2 + d]), "w_u ± tau/2 + d")
    target = _interval_rhs(link, w_u, d, tau)
    H_hi, H_lo = _H(link, [hi, lo])

    def G(delta: float) -> float:
        v = _H(link, [hi + delta, lo + delta])
        return float((v[0] - H_hi) - (v[1] - H_lo))

    def dG(delta: float) -> float:
        v = _h(link, [hi + delta, lo + delta])
        return float(v[0] - v[1])

    # shifts that keep S_m + delta and S_M + delta inside the link's domain
    dom_lo, dom_hi = link.domain
    min_shift = (dom_lo - lo) * (1 - 1e-12) if math.isfinite(dom_lo) else -math.inf
    max_shift = (dom_hi - hi) * (1 - 1e-12) if math.isfinite(dom_hi) else math.inf
    if target == 0.0:
        return 0.0
    # bracket the root, starting from the first-order estimate of [13]
    step = max(abs(target) / span, 1e-300)
    a, b = 0.0, 0.0
    if target > 0:
        b = min(step, max_shift)
        while G(b) < target:
            if b >= max_shift:
                raise ValueError(f"{owner}: no offset inside the domain of {link!r} solves [12]")
            a, b = b, min(2.0 * b, max_shift)
    else:
        a = max(-step, min_shift)
        while G(a) > target:
            if a <= min_shift:
                raise ValueError(f"{owner}: no offset inside the domain of {link!r} solves [12]")
            a, b = max(2.0 * a, min_shift), a
    x = 0.5 * (a + b)
    scale = abs(target)
    for _ in range(max_iter):
        f = G(x) - target
        if f == 0.0 or abs(f) <= 4e-16 * max(scale, abs(H_hi) + abs(H_lo)):
            return x
        if f > 0:
            b = x
        else:
            a = x
        slope = dG(x)
        newton = x - f / slope if slope > 0 else math.nan
        x_new = newton if a < newton < b else 0.5 * (a + b)
        if abs(x_new - x) <= 2e-16 * max(1.0, abs(x)) or (b - a) <= 4e-16 * max(
            1.0, abs(a), abs(b)
        ):
            return x_new
        x = x_new
    return x


# ======================================================================================
# Fitting a linear model with a matching loss (Newton on the link)
# ======================================================================================


@dataclass(frozen=True, eq=False)
class LinearFit:
    """Result of :func:`fit_linear`.

    Attributes
    ----------
    coef : ndarray, shape (n_features,)
    n_iter : int
    converged : bool
        The last Newton step was below the tolerance.
    loss : float
        Weighted mean matching loss at ``coef``.
    gradient : ndarray
        Mean gradient :math:`X^\\top (h(\\hat z) - h(z)) / n` at ``coef`` (≈ 0 at the optimum).
    """

    coef: np.ndarray
    n_iter: int
    converged: bool
    loss: float
    gradient: np.ndarray


def fit_linear(
    link: Link | str,
    X: Array,
    y: Array,
    *,
    offset: Array | None = None,
    sample_weight: Array | None = None,
    coef0: Array | None = None,
    max_iter: int = 200,
    tol: float = 1e-12,
) -> LinearFit:
    r"""Fit :math:`\hat z = X\theta + \text{offset}` by minimising the matching loss of ``link``.

    Damped Newton on the pointwise loss (:class:`~selrank.losses.Pointwise`, whose per-row
    gradient :math:`w\,(h(\hat z) - h(y))` and Hessian :math:`w\,h'(\hat z)` it chains through
    :math:`X`): gradient :math:`X^\top g`, Hessian :math:`X^\top \mathrm{diag}(h)\,X` (plus a
    tiny Levenberg–Marquardt ridge, so links that are flat on some rows still give a step), a
    backtracking line search on the summed loss, and a gradient step where the Hessian vanishes.
    The loss is convex in :math:`\theta`, so this finds the global minimum.

    Parameters
    ----------
    link : Link or str
    X : array-like, shape (n, p)
        Features (add a column of ones for an intercept).
    y : array-like, shape (n,)
        Observed scores.
    offset : array-like, shape (n,), optional
        Fixed part of the prediction (e.g. ``w`` in Theorem 1's model ``ŵ = w + δ``).
    sample_weight : array-like, shape (n,), optional
    coef0 : array-like, shape (p,), optional
        Starting point (zeros by default).
    max_iter : int
    tol : float
        Stop when the Newton step is below ``tol · (1 + max|θ|)``.

    Returns
    -------
    LinearFit

    Examples
    --------
    >>> X = np.ones((4, 1))
    >>> fit = fit_linear("exp", X, np.array([0.0, 0.0, 0.0, 2.0]))
    >>> round(float(fit.coef[0]), 6), round(math.log((3 + math.exp(2)) / 4), 6)   # h^-1(mean h(y))
    (0.954459, 0.954459)
    """
    link = get_link(link)
    Xa = np.asarray(to_numpy(X), dtype=np.float64)
    if Xa.ndim != 2:
        raise ValueError(f"`X` must be 2-D (n, p); got shape {Xa.shape}")
    ya = _np(y).reshape(-1)
    n, p = Xa.shape
    if ya.shape != (n,):
        raise ValueError(f"`y` must have shape ({n},) to match `X` {Xa.shape}; got {ya.shape}")
    off = np.zeros(n) if offset is None else _np(offset).reshape(-1)
    if off.shape != (n,):
        raise ValueError(f"`offset` must have shape ({n},); got {off.shape}")
    w = np.ones(n) if sample_weight is None else _np(sample_weight).reshape(-1)
    if w.shape != (n,) or np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError(f"`sample_weight` must be finite, >= 0 and of shape ({n},)")
    for arr, nm in ((Xa, "X"), (ya, "y"), (off, "offset")):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"`{nm}` must be finite")
    link.check_domain(ya, "y")
    # the pointwise matching loss with normalised weights: its gradient and Hessian per row,
    # chained through X below
    bound = Pointwise(link).bind(ya, sample_weight=w / w.sum())
    theta = np.zeros(p) if coef0 is None else _np(coef0).reshape(-1).copy()
    if theta.shape != (p,):
        raise ValueError(f"`coef0` must have shape ({p},); got {theta.shape}")

    def loss(th):
        return float(bound.loss(Xa @ th + off, reduction="sum"))

    f = loss(theta)
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        g_rows, h_rows = (_np(v) for v in bound.grad_hess(Xa @ theta + off))
        g = Xa.T @ g_rows
        hess = (Xa * h_rows[:, None]).T @ Xa
        scale = float(np.trace(hess)) / p
        step = None
        if scale > 0:  # a tiny ridge keeps rows on flat stretches of h from making it singular
            try:
                step = -np.linalg.solve(hess + 1e-12 * scale * np.eye(p), g)
            except np.linalg.LinAlgError:
                step = None
        if step is None or not np.all(np.isfinite(step)) or float(g @ step) >= 0:
            step = -g  # flat link on every row, or a singular Hessian: steepest descent
        gs = float(g @ step)
        if gs == 0.0:
            converged = True
            break
        t = 1.0
        while True:
            cand = theta + t * step
            fc = loss(cand)
            if np.isfinite(fc) and fc <= f + 1e-4 * t * gs:
                break
            t *= 0.5
            if t < 1e-30:
                break
        if t < 1e-30:  # no decrease possible: at the minimum to rounding
            converged = True
            break
        theta, f = cand, fc
        if np.max(np.abs(t * step)) <= tol * (1.0 + np.max(np.abs(theta))):
            converged = True
            break
    grad = Xa.T @ _np(bound.grad_hess(Xa @ theta + off)[0])
    return LinearFit(coef=theta, n_iter=n_iter, converged=converged, loss=f, gradient=grad)


# ======================================================================================
# Theorem 1: theory vs the exact optimum vs a fitted model
# ======================================================================================


@dataclass(frozen=True, eq=False)
class Theorem1Result:
    r"""Result of :func:`check_theorem1`. Offsets are normalised by :math:`\tau` (BUST units).

    Attributes
    ----------
    link : Link
    s_min, s_max, w_u, d, tau : float
        The construction.
    n, n_in_interval : int
        Sample size and rows inside the interval.
    bust, blust : float
        Closed forms [10].
    numeric : float
        :math:`\hat\delta(\tau)/\tau` from the exact equation [12].
    numeric_half : float
        The same at :math:`\tau/2`.
    extrapolated : float
        Richardson extrapolation :math:`2\,\mathrm{numeric\_half} - \mathrm{numeric}` to
        :math:`\tau \to 0`: the finite-width error of [12] is :math:`O(\tau)`, so this agrees
        with ``bust`` to :math:`O(\tau^2)`.
    blust_numeric : float
        :math:`[\hat\delta(\tau, d_\epsilon) - \hat\delta(\tau, -d_\epsilon)] / (2\tau d_\epsilon)`
        from [12] with a small bias :math:`d_\epsilon`.
    fitted, fitted_se : float
        Offset learned by the one-offset model :math:`\hat z = w + \delta` on the sampled data
        with the matching loss (:func:`fit_linear`), and its standard error (sandwich
        formula; 0 for ``grid`` data, which has no sampling error).
    tol_limit, tol_blust, tol_fit : float
        Tolerances: ``rtol·|bust| + atol``, ``rtol·|blust| + atol``, and
        ``n_sigma·fitted_se + discreteness + atol`` where *discreteness* bounds the error of
        counting the interval's rows on a finite sample (``2 (S_M − S_m) / (τ n)`` relative).
    """

    link: Link
    s_min: float
    s_max: float
    w_u: float
    d: float
    tau: float
    n: int
    n_in_interval: int
    bust: float
    blust: float
    numeric: float
    numeric_half: float
    extrapolated: float
    blust_numeric: float
    fitted: float
    fitted_se: float
    tol_limit: float
    tol_blust: float
    tol_fit: float

    @property
    def agree_limit(self) -> bool:
        """Theory [10] = the τ → 0 limit of the exact optimum [12], and the finite-τ error is first order."""
        first_order = (
            abs(self.numeric - self.bust)
            <= 3.0 * abs(self.numeric - self.numeric_half) + self.tol_limit
        )
        return bool(abs(self.extrapolated - self.bust) <= self.tol_limit and first_order)

    @property
    def agree_blust(self) -> bool:
        """BLUST [10] = the small-``d`` limit of [12]."""
        return bool(abs(self.blust_numeric - self.blust) <= self.tol_blust)

    @property
    def agree_fit(self) -> bool:
        """The fitted offset = the exact optimum [12] for this τ, within sampling error."""
        return bool(abs(self.fitted - self.numeric) <= self.tol_fit)

    @property
    def agree(self) -> bool:
        """All three checks pass."""
        return self.agree_limit and self.agree_blust and self.agree_fit

    def as_dict(self) -> dict[str, Any]:
        """Flat dict of the numbers (``link`` as its repr) and the verdicts."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["link"] = repr(self.link)
        out.update(
            agree_limit=self.agree_limit,
            agree_blust=self.agree_blust,
            agree_fit=self.agree_fit,
            agree=self.agree,
        )
        return out


def check_theorem1(
    link: Link | str,
    *,
    s_min: float = -3.0,
    s_max: float = 3.0,
    w_u: float = 1.5,
    d: float = 0.5,
    tau: float = 0.05,
    n: int = 200_000,
    grid: bool = False,
    seed: int = 0,
    n_sigma: float = 4.0,
    rtol: float = 2e-3,
    atol: float = 1e-9,
) -> Theorem1Result:
    r"""Check Theorem 1 for one link: closed form vs exact optimum vs a fitted model.

    1. :math:`\Delta_{\rm BUST}`, :math:`\Delta_{\rm BLUST}` from the closed forms [10];
    2. :math:`\hat\delta` solving [12] exactly at :math:`\tau` and :math:`\tau/2`
       (:func:`solve_bust_offset`), Richardson-extrapolated to :math:`\tau \to 0`;
       BLUST from [12] with a small bias :math:`d_\epsilon = 10^{-3}(S_M - S_m)` by central
       differences;
    3. the offset learned on Theorem-1 data (:func:`selrank.datasets.make_bust_data`:
       ``w ~ U[s_min, s_max]`` — or midpoints of ``n`` cells with ``grid=True`` — and
       ``z = w + d`` on the interval) by the model :math:`\hat z = w + \delta`, which cannot
       see the interval, trained with the matching loss of ``link`` (:func:`fit_linear`).

    Tolerances (see :class:`Theorem1Result`): the extrapolated optimum must match BUST within
    ``rtol·|BUST| + atol`` and BLUST likewise; the fitted offset must match the exact optimum
    at the same :math:`\tau` within ``n_sigma`` standard errors plus the discreteness of a
    finite sample.

    Parameters
    ----------
    link : Link or str
    s_min, s_max, w_u, d, tau : float
        The construction (the interval must lie in the range).
    n : int
        Sample size of the fitted model.
    grid : bool
        Deterministic midpoint "sample" instead of random draws.
    seed : int
    n_sigma, rtol, atol : float
        Tolerances.

    Returns
    -------
    Theorem1Result

    Examples
    --------
    >>> r = check_theorem1("exp", n=50_000)
    >>> round(r.bust, 4), round(r.extrapolated, 4), r.agree
    (0.1451, 0.1451, True)
    """
    from ..datasets.synthetic import make_bust_data

    link = get_link(link)
    owner = "check_theorem1"
    lo, hi, span = _check_range(link, s_min, s_max, owner)
    n_sigma = positive_float(n_sigma, "n_sigma", owner)
    rtol = positive_float(rtol, "rtol", owner, allow_zero=True)
    atol = positive_float(atol, "atol", owner, allow_zero=True)
    b = float(bust(link, w_u, d=d, s_min=lo, s_max=hi))
    bl = float(blust(link, w_u, s_min=lo, s_max=hi))
    kw: dict[str, Any] = {"w_u": w_u, "s_min": lo, "s_max": hi}
    numeric = solve_bust_offset(link, d=d, tau=tau, **kw) / tau
    numeric_half = solve_bust_offset(link, d=d, tau=tau / 2, **kw) / (tau / 2)
    d_eps = 1e-3 * (hi - lo)
    blust_num = (
        solve_bust_offset(link, d=d_eps, tau=tau, **kw)
        - solve_bust_offset(link, d=-d_eps, tau=tau, **kw)
    ) / (2 * tau * d_eps)

    data = make_bust_data(n, s_min=lo, s_max=hi, w_u=w_u, tau=tau, d=d, grid=grid, seed=seed)
    w, z = data.w, data.y
    fit = fit_linear(link, np.ones((w.size, 1)), z, offset=w, coef0=[numeric * tau])
    delta = float(fit.coef[0])
    g = _h(link, w + delta) - _h(link, z)
    slope = float(np.mean(_dh(link, w + delta)))
    se = 0.0 if grid else float(np.std(g) / math.sqrt(w.size) / slope) / tau
    discreteness = 2.0 * (hi - lo) / (tau * w.size) * abs(numeric)
    return Theorem1Result(
        link=link,
        s_min=lo,
        s_max=hi,
        w_u=float(w_u),
        d=float(d),
        tau=float(tau),
        n=int(w.size),
        n_in_interval=int(data.in_interval.sum()),
        bust=b,
        blust=bl,
        numeric=numeric,
        numeric_half=numeric_half,
        extrapolated=2.0 * numeric_half - numeric,
        blust_numeric=blust_num,
        fitted=delta / tau,
        fitted_se=se,
        tol_limit=rtol * abs(b) + atol,
        tol_blust=rtol * abs(bl) + atol,
        tol_fit=n_sigma * se + discreteness + atol,
    )


def theorem1_catalogue() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The Theorem-1 cases and exclusions of the links registered in :data:`selrank.links.LINKS`.

    Read from each link class's :attr:`~selrank.links.Link.theorem1` (so a new link brings its
    own cases); a case is ``{"link": registry name, "params", "w_u", "d", ...}``. Returns
    ``(cases, excluded)``; a registered link with no entry appears in neither.
    """
    cases: dict[str, dict[str, Any]] = {}
    excluded: dict[str, str] = {}
    for name, factory in LINKS.items():
        entry = getattr(factory, "theorem1", None)  # LINKS holds Link classes (or factories)
        if isinstance(entry, str):
            excluded[name] = entry
        elif entry:
            cases.update({case: {"link": name, **spec} for case, spec in entry.items()})
    return cases, excluded


#: Theorem-1 cases: one or more per link family of :data:`selrank.links.LINKS`, each a dict of
#: ``link`` (registry name), ``params``, and the construction (``w_u``, ``d``, ``s_min``,
#: ``s_max``, and ``tau`` where the default 0.05 is too wide for the link's curvature), from
#: the link classes' ``theorem1`` (at import; :func:`theorem1_catalogue` reads them again).
#: Cases whose interval sits where the link is flat have BUST = 0.
THEOREM1_CASES: dict[str, dict[str, Any]] = theorem1_catalogue()[0]

#: Link families left out of :data:`THEOREM1_CASES`, with the reason (from the link classes'
#: ``theorem1``).
THEOREM1_EXCLUDED: dict[str, str] = theorem1_catalogue()[1]


def theorem1_table(
    cases: Mapping[str, Mapping[str, Any]] | None = None, *, as_frame: bool = True, **kwargs: Any
) -> pl.DataFrame | list[dict[str, Any]]:
    """Run :func:`check_theorem1` for each case (default :data:`THEOREM1_CASES`).

    Parameters
    ----------
    cases : mapping, optional
        ``name -> {"link", "params", "w_u", "d", ["s_min", "s_max", ...]}``.
    as_frame : bool
        Return a polars DataFrame (needs polars) instead of a list of dicts.
    **kwargs
        Defaults for :func:`check_theorem1` (``tau``, ``n``, ``grid``, ...); a case's own
        entries win.

    Returns
    -------
    polars.DataFrame or list of dict
        One row per case: ``case`` plus the fields of :meth:`Theorem1Result.as_dict`.
    """
    cases = theorem1_catalogue()[0] if cases is None else cases
    rows = []
    for name, spec in cases.items():
        spec = dict(spec)
        link = get_link(spec.pop("link"), **spec.pop("params", {}))
        res = check_theorem1(link, **{**kwargs, **spec})
        rows.append({"case": name, **res.as_dict()})
    if not as_frame:
        return rows
    try:
        import polars as pl
    except ImportError:
        raise ImportError(
            "theorem1_table(as_frame=True) requires polars: pip install 'selrank[data]'"
        ) from None
    return pl.DataFrame(rows)


# ======================================================================================
# Appendix F: two features, a misspecified linear model
# ======================================================================================

#: Links of the Appendix-F reproduction (Figure F.1): right-shifted, left-shifted and centred
#: sigmoids. The paper does not give ``alpha``/``beta``; these centre the sensitive region on
#: the high labels (6..10), the low labels (-10..-1), and 0.
APPENDIX_F_LINKS: dict[str, tuple[str, dict[str, float]]] = {
    "high score": ("sigmoid", {"alpha": 1.0, "beta": 8.0}),
    "low score": ("sigmoid", {"alpha": 1.0, "beta": -5.5}),
    "low norm": ("sigmoid", {"alpha": 1.0, "beta": 0.0}),
}


@dataclass(frozen=True, eq=False)
class TwoFeatureResult:
    r"""A linear model :math:`\hat s = w_1 x_1 + w_2 x_2` fit with one matching loss (App. F).

    Attributes
    ----------
    link : Link
    X : ndarray, shape (n, 2)
    y : ndarray, shape (n,)
    coef : ndarray, shape (2,)
        Learned weights :math:`(w_1, w_2)`.
    y_pred : ndarray, shape (n,)
    split : float
        Labels above ``split`` are "high" (governed by :math:`x_1`), the others "low".
    fit : LinearFit
    """

    link: Link
    X: np.ndarray
    y: np.ndarray
    coef: np.ndarray
    y_pred: np.ndarray
    split: float
    fit: LinearFit

    @property
    def high(self) -> np.ndarray:
        """Mask of the high-label rows."""
        return self.y > self.split

    def _mae(self, mask: np.ndarray) -> float:
        return float(np.mean(np.abs(self.y_pred[mask] - self.y[mask]))) if mask.any() else math.nan

    def _pair_gap(self, mask: np.ndarray) -> float:
        """Mean spread (max - min) of the predictions of rows sharing a label."""
        if not mask.any():
            return math.nan
        labels, inv = np.unique(self.y[mask], return_inverse=True)
        pmax = np.full(labels.size, -np.inf)
        pmin = np.full(labels.size, np.inf)
        np.maximum.at(pmax, inv, self.y_pred[mask])
        np.minimum.at(pmin, inv, self.y_pred[mask])
        return float(np.mean(pmax - pmin))

    @property
    def mae_high(self) -> float:
        """Mean absolute error on the high labels."""
        return self._mae(self.high)

    @property
    def mae_low(self) -> float:
        """Mean absolute error on the low labels."""
        return self._mae(~self.high)

    @property
    def pair_gap_high(self) -> float:
        """Mean prediction spread among repeats of a high label (0: the pairs are merged)."""
        return self._pair_gap(self.high)

    @property
    def pair_gap_low(self) -> float:
        """Mean prediction spread among repeats of a low label."""
        return self._pair_gap(~self.high)

    def summary(self) -> dict[str, float]:
        """Weights, errors and pair spreads as a flat dict."""
        return {
            "w1": float(self.coef[0]),
            "w2": float(self.coef[1]),
            "mae_high": self.mae_high,
            "mae_low": self.mae_low,
            "pair_gap_high": self.pair_gap_high,
            "pair_gap_low": self.pair_gap_low,
        }


def two_feature_experiment(
    link: Link | str, X: Array | None = None, y: Array | None = None, *, split: float = 0.0
) -> TwoFeatureResult:
    r"""Fit :math:`\hat s = w \cdot x` (no intercept, as in the paper) with the matching loss of ``link``.

    Parameters
    ----------
    link : Link or str
    X, y : array-like, optional
        Two-feature data; by default :func:`selrank.datasets.make_two_feature_data` (low labels
        -10..-1 follow :math:`x_2` and repeat for :math:`x_1 \in \{1, 3\}`; high labels 6..10
        follow :math:`x_1` and repeat for :math:`x_2 \in \{1, 3\}`).
    split : float
        Labels above it count as high.

    Returns
    -------
    TwoFeatureResult

    Examples
    --------
    >>> r = two_feature_experiment(get_link("sigmoid", beta=8.0))
    >>> r.coef.round(3).tolist()          # x1 (the high labels' feature) dominates
    [0.972, 0.111]
    >>> r.mae_high < 0.2 < 5.0 < r.mae_low
    True
    """
    link = get_link(link)
    if X is None or y is None:
        if X is not None or y is not None:
            raise ValueError("give both `X` and `y`, or neither (for the default Appendix-F data)")
        from ..datasets.synthetic import make_two_feature_data

        X, y = make_two_feature_data()
    Xa = np.asarray(to_numpy(X), dtype=np.float64)
    ya = _np(y).reshape(-1)
    if Xa.ndim != 2 or Xa.shape[1] != 2:
        raise ValueError(f"`X` must have shape (n, 2); got {Xa.shape}")
    fit = fit_linear(link, Xa, ya)
    return TwoFeatureResult(
        link=link,
        X=Xa,
        y=ya,
        coef=fit.coef,
        y_pred=Xa @ fit.coef,
        split=finite_float(split, "split", "two_feature_experiment"),
        fit=fit,
    )


def appendix_f(
    links: Mapping[str, Any] | None = None, X: Array | None = None, y: Array | None = None
) -> dict[str, TwoFeatureResult]:
    """Appendix F: the two-feature experiment for each link (default :data:`APPENDIX_F_LINKS`).

    Returns
    -------
    dict
        ``name -> TwoFeatureResult``.

    Examples
    --------
    >>> res = appendix_f()
    >>> {k: v.coef.round(2).tolist() for k, v in res.items()}
    {'high score': [0.97, 0.11], 'low score': [0.02, 1.01], 'low norm': [0.37, 1.39]}
    """
    links = APPENDIX_F_LINKS if links is None else links
    out = {}
    for name, spec in links.items():
        link = get_link(spec[0], **spec[1]) if isinstance(spec, tuple) else get_link(spec)
        out[name] = two_feature_experiment(link, X, y)
    return out


# ======================================================================================
# Appendix I: stochastic labels
# ======================================================================================


def stochastic_optimum(link: Link | str, y: Array, group: Array) -> np.ndarray:
    r"""Proper optimum :math:`h^{-1}(\overline{h(y)})` of each group of observed scores (Prop. 1).

    Parameters
    ----------
    link : Link or str
    y : array-like
        Scores, group after group.
    group : array-like of int
        Group sizes.

    Examples
    --------
    >>> stochastic_optimum("identity", [0.0, 1.0, 5.0], [2, 1]).tolist()
    [0.5, 5.0]
    """
    link = get_link(link)
    ya = _np(y).reshape(-1)
    sizes = np.asarray(group, dtype=np.int64).reshape(-1)
    if np.any(sizes <= 0) or int(sizes.sum()) != ya.size:
        raise ValueError(
            f"`group` sizes must be positive and add up to len(y) = {ya.size}; got {sizes.tolist()}"
        )
    link.check_domain(ya, "y")
    inv = np.repeat(np.arange(sizes.size), sizes)
    return cell_optimum(link, ya, inv, sizes.size, np.ones_like(ya))[1]


#: Exponential-link scales of the Appendix-I reproduction (the paper does not list its own).
APPENDIX_I_ALPHAS: tuple[float, ...] = (1.0, 5.0, 10.0, 20.0)
#: Deviations of the right panel of Figure I.1 (our choice; the paper's axis runs over [0, 1]).
APPENDIX_I_DEVIATIONS: tuple[float, ...] = tuple(float(v) for v in np.linspace(0.0, 1.0, 11))


@dataclass(frozen=True, eq=False)
class AppendixIResult:
    r"""Result of :func:`appendix_i` (Figure I.1), for exponential links :math:`h = e^{\alpha(z - \beta)}`.

    Attributes
    ----------
    alphas : ndarray, shape (a,)
    beta : float
    left_x : ndarray, shape (k,)
        The large score of each group (left panel), every group having mean ``left_mean``.
    left_mean : float
    left_estimates : ndarray, shape (a, k)
        Optimal prediction per α and group.
    right_x : ndarray, shape (m,)
        Deviation Δ of the two scores ``mean ± Δ`` (right panel).
    right_means : ndarray, shape (r,)
    right_estimates : ndarray, shape (a, r, m)
    """

    alphas: np.ndarray
    beta: float
    left_x: np.ndarray
    left_mean: float
    left_estimates: np.ndarray
    right_x: np.ndarray
    right_means: np.ndarray
    right_estimates: np.ndarray

    def to_frame(self) -> pl.DataFrame:
        """Long polars DataFrame: ``panel, alpha, mean, x, estimate``."""
        try:
            import polars as pl
        except ImportError:
            raise ImportError(
                "AppendixIResult.to_frame requires polars: pip install 'selrank[data]'"
            ) from None
        a, k = self.left_estimates.shape
        left = pl.DataFrame(
            {
                "panel": ["one large score"] * (a * k),
                "alpha": np.repeat(self.alphas, k),
                "mean": np.full(a * k, self.left_mean),
                "x": np.tile(self.left_x, a),
                "estimate": self.left_estimates.reshape(-1),
            }
        )
        _, r, m = self.right_estimates.shape
        right = pl.DataFrame(
            {
                "panel": ["mean ± deviation"] * (a * r * m),
                "alpha": np.repeat(self.alphas, r * m),
                "mean": np.tile(np.repeat(self.right_means, m), a),
                "x": np.tile(self.right_x, a * r),
                "estimate": self.right_estimates.reshape(-1),
            }
        )
        return pl.concat([left, right])


def appendix_i(
    *,
    alphas: Sequence[float] = APPENDIX_I_ALPHAS,
    beta: float = 0.0,
    mean: float = 0.1,
    small: float = 0.05,
    k_max: int = 18,
    means: Sequence[float] = (0.0, 1.0),
    deviations: Sequence[float] | np.ndarray = APPENDIX_I_DEVIATIONS,
) -> AppendixIResult:
    r"""Appendix I (Figure I.1): proper optima of stochastic scores under exponential links.

    Left: one large score and ``k = 1..k_max`` scores ``small``, all groups with mean ``mean``
    (:func:`selrank.datasets.make_one_large_score_data`). Right: two scores ``m ± Δ``
    (:func:`selrank.datasets.make_symmetric_score_data`). Each estimate is
    :math:`h^{-1}(\overline{h(S)})` for :math:`h = e^{\alpha(z - \beta)}` (:func:`stochastic_optimum`);
    the right panel's excess over the mean is :math:`\log\cosh(\alpha\Delta)/\alpha` for every
    mean and shift.

    Examples
    --------
    >>> r = appendix_i(alphas=[1.0, 10.0], k_max=18)
    >>> r.left_estimates[:, -1].round(3).tolist()     # large score 1.0 among 18 scores 0.05
    [0.13, 0.706]
    """
    from ..datasets.synthetic import make_one_large_score_data, make_symmetric_score_data

    al = np.asarray(alphas, dtype=np.float64).reshape(-1)
    if al.size == 0 or np.any(~np.isfinite(al)) or np.any(al <= 0):
        raise ValueError(f"`alphas` must be positive and finite; got {al.tolist()}")
    beta = finite_float(beta, "beta", "appendix_i")
    left = make_one_large_score_data(mean=mean, small=small, k_max=k_max)
    right = make_symmetric_score_data(means=means, deviations=deviations)
    mm = np.asarray(means, dtype=np.float64)
    left_est = np.empty((al.size, left.x.size))
    right_est = np.empty((al.size, mm.size, right.x.size // mm.size))
    for i, a in enumerate(al):
        link = get_link("exp", alpha=float(a), beta=beta, cap=None)
        left_est[i] = stochastic_optimum(link, left.y, left.group)
        right_est[i] = stochastic_optimum(link, right.y, right.group).reshape(mm.size, -1)
    return AppendixIResult(
        alphas=al,
        beta=beta,
        left_x=left.x,
        left_mean=float(mean),
        left_estimates=left_est,
        right_x=right.x[: right.x.size // mm.size],
        right_means=mm,
        right_estimates=right_est,
    )


# ======================================================================================
# Sensitivity reports
# ======================================================================================


@dataclass(frozen=True, eq=False)
class SensitivityReport:
    r"""Numbers behind a sensitivity figure (Figures 2 and 3 of the paper).

    Attributes
    ----------
    link : Link
        The link (a :class:`~selrank.links.CompositeSigmoid` for a scaling).
    z : ndarray, shape (m,)
        Score grid (also the prediction axis :math:`\hat s` of the loss curves).
    h, dh : ndarray, shape (m,)
        Link and slope (the loss sensitivity).
    observed : ndarray, shape (k,)
        Observed scores :math:`s` of the loss curves.
    loss : ndarray, shape (k, m)
        :math:`L(\hat s = z, s)` for each observed score.
    d : float
        Bias of the BUST curve.
    bust, blust : ndarray, shape (m,)
        :math:`\Delta_{\rm BUST}(w_u = z)` and :math:`\Delta_{\rm BLUST}(z)` on
        :math:`[S_m, S_M]` = the grid's range.
    scaling : Scaling or None
    q, p : ndarray or None
        Scaling :math:`q(z)` and composite probability :math:`p(z) = \sigma(Q(z)/\gamma)` when the
        report was built from a scaling.
    """

    link: Link
    z: np.ndarray
    h: np.ndarray
    dh: np.ndarray
    observed: np.ndarray
    loss: np.ndarray
    d: float
    bust: np.ndarray
    blust: np.ndarray
    scaling: Scaling | None = None
    q: np.ndarray | None = None
    p: np.ndarray | None = None
    name: str = field(default="")

    def as_dict(self) -> dict[str, np.ndarray]:
        """Columns keyed ``z, h, dh, bust, blust, loss(s=...)`` (and ``q, p``)."""
        out = {"z": self.z, "h": self.h, "dh": self.dh, "bust": self.bust, "blust": self.blust}
        for s, row in zip(self.observed, self.loss):
            out[f"loss(s={s:g})"] = row
        if self.q is not None and self.p is not None:  # set together
            out["q"] = self.q
            out["p"] = self.p
        return out

    def to_frame(self) -> pl.DataFrame:
        """The columns of :meth:`as_dict` as a polars DataFrame."""
        try:
            import polars as pl
        except ImportError:
            raise ImportError(
                "SensitivityReport.to_frame requires polars: pip install 'selrank[data]'"
            ) from None
        return pl.DataFrame(self.as_dict())

    def figure(self, *, title: str | None = None, **kwargs: Any) -> Figure:
        """A matplotlib Figure of the report (as :func:`selrank.paper.figures.plot_sensitivity`)."""
        from .._display import enable_inline

        # other keywords configure a new report in plot_sensitivity; a report ignores them
        enable_inline()
        return draw_sensitivity(self, title=title)

    def summary(self) -> list[tuple[str, object]]:
        """``(field, value)`` pairs of the report: the link, grid, where it is sensitive, BUST.

        Examples
        --------
        >>> dict(sensitivity_report("exp").summary())["h' max at z"]
        5.0
        """
        z = self.z
        dh = np.asarray(self.dh, dtype=np.float64)
        rows: list[tuple[str, object]] = [("link", repr(self.link))]
        if self.scaling is not None:
            rows.append(("scaling", repr(self.scaling)))
        rows += [
            ("grid", f"{z.size} points on [{z[0]:.4g}, {z[-1]:.4g}]"),
            ("h' range", f"[{dh.min():.4g}, {dh.max():.4g}]"),
            ("h' max at z", float(z[int(np.argmax(dh))])),
            ("observed s", tuple(float(v) for v in self.observed)),
            ("BUST d", float(self.d)),
            ("BUST range", f"[{np.nanmin(self.bust):.4g}, {np.nanmax(self.bust):.4g}]"),
        ]
        return rows

    def __repr__(self) -> str:
        z = self.z
        peak = float(z[int(np.argmax(np.asarray(self.dh, dtype=np.float64)))])
        obs = ", ".join(f"{v:g}" for v in self.observed)
        return (
            f"SensitivityReport(name={self.name!r}, grid={z.size} points on [{z[0]:g}, {z[-1]:g}], "
            f"h' max at z={peak:g}, observed=({obs}), d={self.d:g})"
        )

    def _repr_html_(self) -> str:
        from .._repr import html_table

        return html_table(self.summary(), title=f"SensitivityReport {self.name}")


def sensitivity_report(
    link: Link | Scaling | str,
    *,
    z: Array | None = None,
    observed: Sequence[float] | None = None,
    d: float | None = None,
    gamma: float = 1.0,
    name: str | None = None,
) -> SensitivityReport:
    r"""Tabulate :math:`h`, :math:`h'`, loss curves, BUST and BLUST for a link or a scaling.

    Parameters
    ----------
    link : Link, Scaling or str
        A link, a link registry name, or a :class:`~selrank.scalings.Scaling` (used through its
        composite sigmoid :math:`h = q\,\sigma(Q/\gamma)`, eq. [22]).
    z : array-like, optional
        Score grid; default 401 points on ``[-5, 5]`` (or across a bounded domain).
    observed : sequence of float, optional
        Observed scores of the loss curves; default ``(-3, 0, 3)`` as in the paper's figures
        (10 %, 50 % and 90 % of a bounded domain).
    d : float, optional
        Bias of the BUST curve :math:`\Delta_{\rm BUST}(w_u)`, evaluated at every grid point
        with :math:`[S_m, S_M]` the grid's range (NaN where :math:`w_u + d` leaves the link's
        domain). Default 0.5, or 5 % of a bounded domain.
    gamma : float
        Regulariser of the composite sigmoid when ``link`` is a scaling.
    name : str, optional
        Title for figures (default: the link's repr).

    Returns
    -------
    SensitivityReport

    Examples
    --------
    >>> rep = sensitivity_report("sigmoid", z=np.linspace(-3, 3, 7))
    >>> rep.dh.round(3).tolist()
    [0.045, 0.105, 0.197, 0.25, 0.197, 0.105, 0.045]
    >>> rep.loss[:, 3].round(4).tolist()          # L(0, s) for s = -3, 0, 3
    [0.5023, 0.0, 0.5023]
    """
    scaling = None
    composite: CompositeSigmoid | None = None  # the link built from a scaling
    if isinstance(link, Scaling):
        scaling = link
        link = composite = CompositeSigmoid(scaling, gamma=gamma)
    else:
        link = get_link(link)
    lo_d, hi_d = link.domain
    if z is None:
        if math.isfinite(lo_d) and math.isfinite(hi_d):
            pad = 1e-3 * (hi_d - lo_d)
            z = np.linspace(lo_d + pad, hi_d - pad, 401)
        else:
            z = np.linspace(-5.0, 5.0, 401)
    za = _np(z).reshape(-1)
    if za.size < 2 or np.any(np.diff(za) <= 0):
        raise ValueError("`z` must be a strictly increasing grid of at least 2 points")
    link.check_domain(za, "z")
    if observed is None:
        if math.isfinite(lo_d) and math.isfinite(hi_d):
            observed = [lo_d + f * (hi_d - lo_d) for f in (0.1, 0.5, 0.9)]
        else:
            observed = [-3.0, 0.0, 3.0]
    obs = _np(observed).reshape(-1)
    if obs.size == 0:
        raise ValueError("`observed` must hold at least one score")
    link.check_domain(obs, "observed")
    if d is None:
        d = 0.05 * (hi_d - lo_d) if math.isfinite(lo_d) and math.isfinite(hi_d) else 0.5
    d = finite_float(d, "d", "sensitivity_report")
    h, dh = (_np(v) for v in link.h_dh(za))
    loss = np.stack([_np(link.bregman(za, np.full_like(za, s))) for s in obs])
    span = float(h[-1] - h[0])
    if span > 0:
        zd = za + d
        ok = (zd > lo_d) & (zd < hi_d)  # w_u + d must stay in the link's domain
        hd = np.full_like(za, np.nan)
        hd[ok] = _h(link, zd[ok])
        b = (hd - h) / span
        bl = dh / span
    else:  # flat on the whole grid: BUST is undefined
        b = np.full_like(za, np.nan)
        bl = np.full_like(za, np.nan)
    q = p = None
    if scaling is not None and composite is not None:
        q = _np(scaling.q(za))
        p = _np(composite.p(za))
    return SensitivityReport(
        link=link,
        z=za,
        h=h,
        dh=dh,
        observed=obs,
        loss=loss,
        d=d,
        bust=b,
        blust=bl,
        scaling=scaling,
        q=q,
        p=p,
        name=name if name is not None else repr(link),
    )
