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

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import _array as A
from ._affine import Capped, Params
from ._functions import (
    DEFAULT_CAP,
    ExpFunction,
    NegExpFunction,
    SigmoidFunction,
    SinhFunction,
    SmeLUFunction,
    StepFunction,
    bregman_threshold,
)
from ._validation import lookup, positive_float
from .scalings import Scaling, check_convexity, composite_sigmoid_h, get_scaling

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

# DEFAULT_CAP (the default cap of the exponential links) and the Taylor-form threshold of the
# Bregman divergence live in selrank._functions, shared with the scalings; the old private
# name stays for code that imported it from here.
_eps_threshold = bregman_threshold


def _clip_at_zero(value, xp):
    """``max(value, 0)`` whose derivatives at ``value == 0`` are those of ``value``.

    A divergence is 0 at its minimum; ``maximum(value, 0)`` would split the gradient between
    the two equal arguments there and halve autograd's Hessian (``h'`` at ``z_hat == z``).
    """
    return xp.where(value >= 0, value, xp.zeros_like(value))


class Link(Params):
    """Base class of all links.

    Subclasses must implement :meth:`h`. The base class derives the rest generically:

    * :meth:`dh` by central differences (or torch autograd where the link supports it);
    * :meth:`H` by composite Gauss–Legendre quadrature of ``h`` from a reference point;
    * :meth:`h_inv` by vectorised bisection (``h`` is monotone);
    * :meth:`bregman` (the loss), :meth:`conjugate` and :meth:`optimal_constant`.

    Concrete links override these with closed forms, which are faster and more accurate.

    Attributes
    ----------
    domain : tuple of float
        Open interval of scores on which ``h`` is defined.
    odd : bool
        ``h(-z) = -h(z)``: the pairwise loss is then independent of pair order.
    smooth : bool
        ``h`` is smooth (the Bregman divergence may use its Taylor form near the minimum).
    """

    name: str = "link"  # an instance may rename itself (CallableLink)
    domain: tuple[float, float] = (-math.inf, math.inf)
    odd: bool = False
    smooth: bool = True
    #: Parameter sets used by the registry-driven tests (and as documentation).
    examples: ClassVar[list[dict[str, Any]]] = [{}]

    _scale: float = 1.0  # how many x-units one score unit is (alpha); for thresholds

    # ---- the definition ------------------------------------------------------------------
    def h(self, z):
        """Link value :math:`h(z)`."""
        raise NotImplementedError

    def dh(self, z):
        """Link derivative :math:`h'(z)` (the loss sensitivity); central differences here."""
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        eps = float(xp.finfo(z.dtype).eps)
        hstep = eps ** (1.0 / 3.0) * xp.maximum(xp.abs(z), xp.ones_like(z))
        zl, zh = z - hstep, z + hstep
        lo, hi = self.domain
        if math.isfinite(lo):
            zl = xp.maximum(zl, xp.full_like(zl, lo + eps * max(1.0, abs(lo))))
        if math.isfinite(hi):
            zh = xp.minimum(zh, xp.full_like(zh, hi - eps * max(1.0, abs(hi))))
        return (self.h(zh) - self.h(zl)) / (zh - zl)

    def H(self, z):
        """Primitive :math:`H(z) = \\int_{z_0}^{z} h` (quadrature here; closed forms override)."""
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        z0 = xp.full_like(z, self._reference_point())
        return _quad(self.h, z0, z, xp)

    def h_inv(self, y):
        """Inverse link :math:`h^{-1}(y)` by vectorised bisection.

        For flat stretches of ``h`` the left-most preimage is returned; at the lower end of
        the range, the right-most.
        """
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        return _bisect_inverse(self.h, y, self.domain, xp)

    def h_dh(self, z):
        """``(h(z), h'(z))`` together; links that share work between the two override it."""
        return self.h(z), self.dh(z)

    # ---- derived quantities --------------------------------------------------------------
    @property
    def range(self) -> tuple[float, float]:
        """Limits of ``h`` over the domain (infinite where ``h`` is unbounded)."""
        lo, hi = self.domain
        with np.errstate(all="ignore"):
            vals = A.to_numpy(self.h(np.array([_inward(lo, 1.0), _inward(hi, -1.0)])))
        out = [float(v) for v in vals]
        # an unbounded domain end with a huge value is an infinite end of the range
        if math.isinf(lo) and (not math.isfinite(out[0]) or abs(out[0]) > 1e200):
            out[0] = -math.inf
        if math.isinf(hi) and (not math.isfinite(out[1]) or abs(out[1]) > 1e200):
            out[1] = math.inf
        return (out[0], out[1])

    def _same_piece(self, z_a, z_b, xp):
        """Where both scores lie on one smooth piece of ``h`` (None: everywhere)."""
        return None

    def _reference_point(self) -> float:
        lo, hi = self.domain
        if math.isinf(lo) and math.isinf(hi):
            return 0.0
        if math.isinf(lo):
            return hi - 1.0
        if math.isinf(hi):
            return lo + 1.0
        return 0.5 * (lo + hi)

    def bregman(self, z_hat, z):
        r"""The matching loss :math:`L(\hat z, z) = H(\hat z) - H(z) - (\hat z - z) h(z) \ge 0`.

        Near the minimum the direct difference cancels catastrophically; for
        :math:`|\alpha(\hat z - z)|` below about ``eps**0.2`` smooth links use Simpson's rule
        on :math:`\int_0^d (d - u) h'(z + u)\,du`, exact to rounding there. The result is
        clipped at 0 (a Bregman divergence is non-negative).
        """
        xp = A.get_namespace(z_hat, z)
        z_hat = A.as_float_array(z_hat, xp)
        z = A.as_float_array(z, xp, like=z_hat)
        d = z_hat - z
        direct = self.H(z_hat) - self.H(z) - d * self.h(z)
        if self.smooth:
            small = xp.abs(d) * self._scale < bregman_threshold(d, xp)
            same = self._same_piece(z_hat, z, xp)
            if same is not None:
                small = small & same
            if bool(xp.any(small)):  # the Taylor branch costs two more dh: only when needed
                # differences outside the branch are zeroed first: d * d of a huge d would
                # overflow and poison the (unselected) branch's derivatives with inf * 0
                ds = xp.where(small, d, xp.zeros_like(d))
                near = (ds * ds / 6.0) * (self.dh(z) + 2.0 * self.dh(z + 0.5 * ds))
                direct = xp.where(small, near, direct)
        return _clip_at_zero(direct, xp)

    def bregman_grad(self, z_hat, z):
        """``(bregman(z_hat, z), h(z_hat) - h(z))``: the loss and its gradient together.

        Links whose triple ``f, f', F`` shares work override it (one evaluation per
        argument instead of one per quantity) with the same values.
        """
        return self.bregman(z_hat, z), self.h(z_hat) - self.h(z)

    def conjugate(self, y):
        r"""Convex conjugate :math:`H^*(y) = \sup_z\, z y - H(z) = z y - H(z)` at :math:`z = h^{-1}(y)`.

        Used for targets given in the link's output space (``target="link"``).
        """
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        z = self.h_inv(y)
        return z * y - self.H(z)

    def bregman_link_target(self, z_hat, y):
        r"""Matching loss for a target ``y`` in link space: :math:`H(\hat z) - \hat z y + H^*(y)`.

        Equals :meth:`bregman` at :math:`z = h^{-1}(y)`; used where ``y`` sits on the boundary
        of the range (e.g. 0/1 labels for the sigmoid link, App. E.2), where ``h^{-1}(y)`` is
        infinite but the loss is finite.
        """
        xp = A.get_namespace(z_hat, y)
        z_hat = A.as_float_array(z_hat, xp)
        y = A.as_float_array(y, xp, like=z_hat)
        lo, hi = self.range
        interior = xp.ones_like(y, dtype=xp.bool)
        if math.isfinite(lo):
            interior = interior & (y > lo)
        if math.isfinite(hi):
            interior = interior & (y < hi)
        if bool(xp.all(interior)):
            return self.bregman(z_hat, self.h_inv(y))
        # boundary targets: conjugate form (interior ones still use the stable Bregman form)
        mid = 0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else 0.0
        y_in = xp.where(interior, y, xp.full_like(y, self._interior_value(mid)))
        inner = self.bregman(z_hat, self.h_inv(y_in))
        outer = self.H(z_hat) - z_hat * y + self.conjugate(y)
        out = xp.where(interior, inner, outer)
        return _clip_at_zero(out, xp)

    def _interior_value(self, mid: float) -> float:
        lo, hi = self.range
        if math.isfinite(lo) and math.isfinite(hi):
            return mid
        if math.isfinite(lo):
            return lo + 1.0
        if math.isfinite(hi):
            return hi - 1.0
        return 0.0

    def optimal_constant(self, y_true, sample_weight=None, *, target: str = "score"):
        r"""Optimal constant prediction :math:`h^{-1}(\bar y)` (properness, Prop. 1).

        :math:`\bar y` is the weighted mean of :math:`h(y)` (``target="score"``) or of
        :math:`y` (``target="link"``). Only a mean that lies *on* the boundary of a bounded
        range (all labels 0 for a sigmoid link with ``target="link"``) is pulled inside, by a
        relative ``1e-12``, so the constant is finite; a mean merely close to the boundary is
        inverted as it is. With ``target="score"`` the constant is kept in
        ``[min y, max y]``, where a preimage of the mean always lies. Links whose ``h``
        underflows towards a range end (exp, negexp, sigmoid) use a log-space closed form
        that stays exact there. The weights must sum to a positive number. One cell of
        :meth:`optimal_constants`.
        """
        y, w = self._constant_inputs(y_true, sample_weight)
        cells = np.zeros(y.size, dtype=np.intp)
        return float(self.optimal_constants(y, cells, 1, w, target=target)[0])

    def optimal_constants(
        self, y_true, cells, n_cells: int, sample_weight=None, *, target: str = "score"
    ) -> np.ndarray:
        r""":meth:`optimal_constant` of every cell at once, vectorised.

        Parameters
        ----------
        y_true : array-like, shape (n,)
            Targets.
        cells : array-like of int, shape (n,)
            The cell (``0 .. n_cells-1``) of each row.
        n_cells : int
            Number of cells; each must carry a positive total weight.
        sample_weight : array-like, shape (n,), optional
        target : {"score", "link"}

        Returns
        -------
        ndarray, shape (n_cells,)
            Equal to ``optimal_constant(y[cells == j], w[cells == j])`` for every ``j`` (up
            to the rounding of the sums).

        Examples
        --------
        >>> c = get_link("exp").optimal_constants([-40.0, -40.0, 1.0, 3.0], [0, 0, 1, 1], 2)
        >>> c.round(4).tolist()
        [-40.0, 2.4338]
        """
        y, w, cells = self._cell_inputs(y_true, cells, n_cells, sample_weight)
        if target != "score" or type(self)._log_mean_constants is Link._log_mean_constants:
            return self._generic_constants(y, w, cells, n_cells, target)
        # links whose h underflows towards a range end: the log-space closed form, exact
        # there, in every cell where no cap acts; the generic inverse only in the others
        # the links with the hook are affine (alpha, beta); Link itself declares neither
        x = getattr(self, "alpha") * (y - getattr(self, "beta"))  # noqa: B009
        with np.errstate(all="ignore"):
            exact = self._log_mean_constants(x, cells, n_cells, w)
        uncapped = self._uncapped_cells(x, cells, n_cells)
        if uncapped.all():
            return exact
        return np.where(uncapped, exact, self._generic_constants(y, w, cells, n_cells, target))

    def _log_mean_constants(self, x, cells, n_cells, w):
        """Per-cell optimum in log space from standardized ``x`` (links that define one)."""
        raise NotImplementedError

    def _cell_inputs(self, y_true, cells, n_cells, sample_weight):
        y, w = self._constant_inputs(y_true, sample_weight)
        w = (
            np.ones_like(y)
            if w is None
            else np.broadcast_to(w.reshape(-1) if w.ndim else w, y.shape)
        )
        cells = np.asarray(cells).reshape(-1)
        if cells.shape != y.shape or (cells.size and cells.dtype.kind not in "iu"):
            raise ValueError(
                f"`cells` must hold one integer cell id per target ({y.size}); got "
                f"{cells.dtype} of shape {cells.shape}"
            )
        cells = cells.astype(np.intp, copy=False)
        n_cells = int(n_cells)
        if cells.size and (cells.min() < 0 or cells.max() >= n_cells):
            raise ValueError(
                f"cell ids must lie in [0, {n_cells}); got {cells.min()}..{cells.max()}"
            )
        total = np.bincount(cells, weights=w, minlength=n_cells)
        if not np.all(total > 0):
            j = int(np.flatnonzero(~(total > 0))[0])
            raise ValueError(
                "weights must sum to a positive number in every cell; got sum "
                f"{float(total[j])!r} in cell {j}"
                + (" (no rows)" if not np.any(cells == j) else "")
            )
        return y, w, cells

    def _generic_constants(self, y, w, cells, n_cells, target):
        with np.errstate(all="ignore"):
            v = np.asarray(A.to_numpy(self.h(y)), dtype=np.float64) if target == "score" else y
            mean = np.bincount(cells, weights=w * v, minlength=n_cells) / np.bincount(
                cells, weights=w, minlength=n_cells
            )
            lo, hi = self.range
            span = (hi - lo) if math.isfinite(lo) and math.isfinite(hi) else 1.0
            if math.isfinite(lo):
                mean = np.where(mean <= lo, lo + 1e-12 * span, mean)
            if math.isfinite(hi):
                mean = np.where(mean >= hi, hi - 1e-12 * span, mean)
            c = np.asarray(A.to_numpy(self.h_inv(mean)), dtype=np.float64).reshape(-1)
        if target == "score" and y.size:
            # a weighted mean of h(y) has a preimage in [min y, max y] (monotone h); where h
            # has underflowed to its range end that bound is all that is left, and it is exact
            # for identical targets
            seen = w != 0
            ys, cs = y[seen], cells[seen]
            lo_y = np.full(n_cells, np.inf)
            hi_y = np.full(n_cells, -np.inf)
            np.minimum.at(lo_y, cs, ys)
            np.maximum.at(hi_y, cs, ys)
            n_seen = np.bincount(cs, minlength=n_cells)
            n_bad = np.bincount(cs, weights=~np.isfinite(ys), minlength=n_cells)
            clamp = (n_seen > 0) & (n_bad == 0)
            c = np.where(clamp, np.minimum(np.maximum(c, lo_y), hi_y), c)
        return c

    def _uncapped_cells(self, x, cells, n_cells) -> np.ndarray:
        """Per cell: every standardized argument ``x`` lies where no cap acts."""
        out = ~((x >= getattr(self, "_lo", -math.inf)) & (x <= getattr(self, "_hi", math.inf)))
        return np.bincount(cells, weights=out, minlength=n_cells) == 0

    @staticmethod
    def _constant_inputs(y_true, sample_weight):
        y = np.asarray(A.to_numpy(y_true), dtype=np.float64).reshape(-1)
        w = (
            None
            if sample_weight is None
            else np.asarray(A.to_numpy(sample_weight), dtype=np.float64)
        )
        return y, w

    # ---- validation and presentation -----------------------------------------------------
    def check_domain(self, z, name: str = "y_true") -> None:
        """Raise ``ValueError`` if any ``z`` lies outside the link's domain."""
        lo, hi = self.domain
        if math.isinf(lo) and math.isinf(hi):
            return
        arr = A.to_numpy(z)
        bad = ~((arr > lo) & (arr < hi))
        if np.any(bad):
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(
                f"`{name}` must lie in the domain ({lo}, {hi}) of the {self.name} link; "
                f"{int(bad.sum())} value(s) do not, the first {arr.reshape(-1)[i]!r} at index {i}"
            )

    def check_range(self, y, name: str = "y_true") -> None:
        """Raise ``ValueError`` if any ``y`` lies outside the closed range of ``h``."""
        lo, hi = self.range
        arr = A.to_numpy(y)
        bad = (arr < lo) | (arr > hi)
        if np.any(bad):
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(
                f"`{name}` is given in link space (target='link') and must lie in the range "
                f"[{lo}, {hi}] of the {self.name} link; {int(bad.sum())} value(s) do not, "
                f"the first {arr.reshape(-1)[i]!r} at index {i}"
            )

    # get_params, repr, equality and hashing come from Params (selrank._affine)


def _inward(v: float, direction: float) -> float:
    """A point just inside an interval end (``±1e300`` for infinite ends)."""
    if math.isinf(v):
        return -1e300 if v < 0 else 1e300
    return v + direction * 1e-12 * max(1.0, abs(v))


# ======================================================================================
# Generic numerical fallbacks (used by user-defined links and composite links)
# ======================================================================================

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _quad(fun: Callable, a, b, xp, *, panels: int = 32):
    """∫_a^b fun(t) dt elementwise, composite 8-point Gauss–Legendre on ``panels`` panels."""
    nodes = (np.arange(panels)[:, None] + 0.5 * (_GL_NODES[None, :] + 1.0)).reshape(-1) / panels
    weights = np.tile(_GL_WEIGHTS, panels) / (2.0 * panels)
    t_nodes = xp.asarray(nodes, dtype=a.dtype)
    w_nodes = xp.asarray(weights, dtype=a.dtype)
    if A.is_torch(a):
        t_nodes, w_nodes = t_nodes.to(a.device), w_nodes.to(a.device)
    width = b - a
    t = xp.reshape(a, (-1, 1)) + xp.reshape(width, (-1, 1)) * t_nodes[None, :]
    vals = fun(t)
    out = xp.sum(vals * w_nodes[None, :], axis=1) * xp.reshape(width, (-1,))
    return xp.reshape(out, a.shape)


def _bisect_inverse(h: Callable, y, domain, xp, *, max_iter: int = 200):
    """Vectorised bisection for ``h(z) = y`` with ``h`` monotone non-decreasing.

    Returns the left-most root where ``h`` is flat at level ``y``, except at the lower end
    of the range (``h(z) <= y`` for a whole half-line), where the right-most is returned.
    """
    lo_d, hi_d = domain
    dt = y.dtype
    one = xp.ones_like(y)
    if math.isfinite(lo_d) and math.isfinite(hi_d):
        a = xp.full_like(y, _inward(lo_d, 1.0))
        b = xp.full_like(y, _inward(hi_d, -1.0))
    else:
        ref = (
            0.0
            if math.isinf(lo_d) and math.isinf(hi_d)
            else (hi_d - 1.0 if math.isinf(lo_d) else lo_d + 1.0)
        )
        a = xp.full_like(y, ref - 1.0)
        b = xp.full_like(y, ref + 1.0)
        for _ in range(1100):
            need_a = h(a) > y
            need_b = h(b) < y
            if not bool(xp.any(need_a)) and not bool(xp.any(need_b)):
                break
            if math.isinf(lo_d):
                a = xp.where(need_a, ref - (ref - a) * 2.0, a)
            else:
                a = xp.where(need_a, lo_d + (a - lo_d) * 0.5, a)
            if math.isinf(hi_d):
                b = xp.where(need_b, ref + (b - ref) * 2.0, b)
            else:
                b = xp.where(need_b, hi_d - (hi_d - b) * 0.5, b)
            if not bool(xp.all(xp.isfinite(a) & xp.isfinite(b))):
                a = xp.where(xp.isfinite(a), a, xp.full_like(a, float(xp.finfo(dt).min)))
                b = xp.where(xp.isfinite(b), b, xp.full_like(b, float(xp.finfo(dt).max)))
                break
    # at the lower end of the range search for the right-most preimage instead
    low_end = h(a) >= y
    eps = float(xp.finfo(dt).eps)
    for _ in range(max_iter):
        mid = a + 0.5 * (b - a)
        hm = h(mid)
        go_right = xp.where(low_end, hm <= y, hm < y)
        a = xp.where(go_right, mid, a)
        b = xp.where(go_right, b, mid)
        if bool(xp.all((b - a) <= 4 * eps * xp.maximum(one, xp.maximum(xp.abs(a), xp.abs(b))))):
            break
    return xp.where(low_end, a, b)


# ======================================================================================
# The catalogue: links of a standardized argument x = alpha (z - beta)
# ======================================================================================


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

    def h(self, z):
        xp, x = self._x(z)
        return self._cf(x, xp)

    def dh(self, z):
        xp, x = self._x(z)
        return self.alpha * self._cdf(x, xp)

    def H(self, z):
        xp, x = self._x(z)
        return self._cF(x, xp) / self.alpha

    def h_dh(self, z):
        xp, x = self._x(z)
        f, df = self._c_pair(x, xp)
        if self.alpha != 1.0:
            df = self.alpha * df
        return f, df

    def bregman_grad(self, z_hat, z):
        # fast path: with both arguments inside the caps, one (f, f', F) evaluation per
        # argument gives H, h and h' — the operations of bregman() and h() in the same order,
        # so the same values (the exp link: 2 exponentials per item, instead of 7)
        if type(self).bregman is not Link.bregman:
            return Link.bregman_grad(self, z_hat, z)
        if A.is_torch(z_hat) and A.is_torch(z) and z_hat.dtype == z.dtype:
            if z_hat.is_floating_point():
                return self._bregman_grad_torch(z_hat, z)
        xp, xh = self._x(z_hat)
        _, x = self._x(A.as_float_array(z, xp, like=xh))
        if not (self._inside_caps(xh) and self._inside_caps(x)):
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

    def _bregman_grad_torch(self, z_hat, z):
        """:meth:`bregman_grad` on tensors of one floating dtype, its temporaries in place."""
        import torch

        plain = self.alpha == 1.0 and self.beta == 0.0
        xh = z_hat if plain else self.alpha * (z_hat - self.beta)
        x = z if plain else self.alpha * (z - self.beta)
        if not (self._inside_caps(xh) and self._inside_caps(x)):
            return Link.bregman_grad(self, z_hat, z)
        xp = A.get_namespace(xh)
        fh, dfh, Fh = self._f_df_F(xh, xp)
        f, df, F = self._f_df_F(x, xp)
        d = z_hat - z
        grad = fh - f
        if self.alpha == 1.0:
            # F is f (the exp link): F̂ - F is the gradient already computed
            diff = grad if (Fh is fh and F is f) else Fh - F
        else:
            diff = Fh / self.alpha - F / self.alpha
        direct = d * f
        direct = torch.sub(diff, direct, out=direct)  # diff - d * f
        if self.smooth:
            # (f̂, F̂ are used: the midpoint derivative may overwrite f̂')
            direct = self._taylor_near_torch(direct, d, z, dfh, df, bregman_threshold(d, xp))
            if direct is None:  # a value is not finite: bregman() itself
                return Link.bregman(self, z_hat, z), grad
        return direct.clamp_min_(0.0), grad

    def _taylor_near_torch(self, direct, d, z, dfh, df, thr: float):
        """``direct`` with the Taylor form of :meth:`bregman` at the near pairs (torch).

        The near pairs are selected by a 0/1 factor and ``lerp`` (exact at weights 0 and 1
        for finite values) instead of a boolean mask or their indices: on CPU a boolean
        select, ``nonzero`` or indexing costs several float passes, more than evaluating
        the midpoint derivative at every item (at ``ds = 0`` away from the near pairs).
        The operations on the near pairs are those of :meth:`bregman`, except that links
        whose ``f'`` is an exponential take ``f'`` at the midpoint as the geometric mean of
        ``f'`` at both ends (:meth:`~selrank._functions.ExpFunction._df_midpoint`; equal to
        a few ulps, no third exponential). Temporaries are written in place (``direct``,
        ``d``, and for those links ``dfh`` and ``df``, this call's own exponentials); None
        where a value is not finite (``lerp`` would have met ``inf · 0``), for the caller
        to take :meth:`bregman`.
        """
        import torch

        mid = getattr(self, "_df_midpoint", None)
        dfs = df if self.alpha == 1.0 else self.alpha * df
        if mid is not None:
            # the midpoint term first (h'(z) + 2 h'(mid), into f̂'), then |d| into f''s memory
            dh = torch.add(dfs, mid(dfh, df), alpha=2.0 * self.alpha, out=dfh)
            sel = torch.abs(d, out=df)
        else:
            sel = d.abs()
        if self._scale != 1.0:
            sel.mul_(self._scale)
        sel = A.less_as_float(sel, thr, inplace=True)
        if not sel.amax().item() > 0:
            return direct
        ds = d.mul_(sel)  # d at the near pairs, 0 elsewhere (d is finite inside the caps)
        if mid is None:
            dh = self.dh(z + 0.5 * ds)
            dh = torch.add(dfs, dh, alpha=2.0, out=dh)  # h'(z) + 2 h'(z + ds / 2)
        near = ds.mul_(ds).div_(6.0).mul_(dh)  # (ds² / 6) (h'(z) + 2 h'(z + ds / 2))
        direct.lerp_(near, sel)
        # a finite result: every input of lerp was finite, so it selected exactly
        return direct if math.isfinite(direct.sum().item()) else None

    def _same_piece(self, z_a, z_b, xp):
        if not self.capped:
            return None
        return Capped._same_piece(
            self, self.alpha * (z_a - self.beta), self.alpha * (z_b - self.beta), xp
        )

    def h_inv(self, y):
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        if not hasattr(self, "_finv"):
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
        tiny = float(xp.finfo(y.dtype).tiny)
        # strictly inside an open range so that closed-form inverses stay finite-or-inf
        return xp.clip(
            y,
            (lo + tiny)
            if math.isfinite(lo) and self._f_open_low
            else (lo if math.isfinite(lo) else None),
            (hi - tiny)
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

    def conjugate(self, y):
        r""":math:`H^*(y) = \beta y + F^*(y)/\alpha` with :math:`F^*` the conjugate of the standardized primitive."""
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        if hasattr(self, "_Fconj") and not self.capped:
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

    def bregman(self, z_hat, z):
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
    _default_cap = DEFAULT_CAP

    def _finv(self, y, xp):
        return xp.asinh(y)

    def _Fconj(self, y, xp):
        return y * xp.asinh(y) - xp.sqrt(1.0 + y * y)


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

    def __init__(self, *, alpha: float = 1.0):
        self.alpha = positive_float(alpha, "alpha", "Logit")
        self._params = {"alpha": alpha}

    def _clip(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        eps = float(xp.finfo(z.dtype).eps)
        return xp, xp.clip(z, eps, 1.0 - eps)

    def h(self, z):
        xp, z = self._clip(z)
        return self.alpha * (xp.log(z) - xp.log1p(-z))

    def dh(self, z):
        xp, z = self._clip(z)
        return self.alpha / (z * (1.0 - z))

    def H(self, z):
        xp, z = self._clip(z)
        return self.alpha * (A.xlogx(z, xp) + A.xlogx(1.0 - z, xp))

    def h_inv(self, y):
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        return A.sigmoid(y / self.alpha, xp)

    def conjugate(self, y):
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        return self.alpha * A.softplus(y / self.alpha, xp)

    @property
    def range(self) -> tuple[float, float]:
        return (-math.inf, math.inf)


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
    odd = True
    _f_range = (-1.0, 1.0)

    def _f(self, x, xp):
        return xp.sign(x)

    def _F(self, x, xp):
        return xp.abs(x)


class Piecewise(_AffineLink):
    r"""Monotone piecewise-linear link through user knots; primitive piecewise quadratic.

    Parameters
    ----------
    knots : sequence of float
        Strictly increasing knot positions (standardized argument ``x``; with the defaults
        ``alpha=1, beta=0`` these are scores).
    values : sequence of float
        Link values at the knots, non-decreasing.
    extrapolation : {"flat", "linear"}
        Continue flat (bounded link, default) or with the end slopes beyond the knots.

    Notes
    -----
    A staircase (e.g. ``knots=[0, 1, 2, 3]``, ``values=[0, 1, 1, 2]``) distinguishes several
    score regions while ignoring differences inside each.

    Examples
    --------
    >>> link = Piecewise(knots=[0.0, 1.0, 2.0], values=[0.0, 1.0, 3.0])
    >>> [float(v) for v in link.h(np.array([-1.0, 0.5, 1.5, 5.0]))]
    [0.0, 0.5, 2.0, 3.0]
    >>> float(link.H(2.0))  # 0.5 + (1 + 3) / 2
    2.5
    """

    name = "piecewise"
    smooth = False
    examples = [
        {"knots": [-1.0, 0.0, 1.0], "values": [0.0, 0.2, 1.0]},
        {"knots": [0.0, 1.0, 2.0, 3.0], "values": [0.0, 1.0, 1.0, 2.0], "extrapolation": "linear"},
    ]
    _f_open_low = _f_open_high = False

    def __init__(
        self, *, knots, values, extrapolation: str = "flat", alpha: float = 1.0, beta: float = 0.0
    ):
        super().__init__(alpha=alpha, beta=beta, cap=None)
        kx = np.asarray(knots, dtype=np.float64).reshape(-1)
        ky = np.asarray(values, dtype=np.float64).reshape(-1)
        if kx.size < 2:
            raise ValueError(f"`knots` of Piecewise needs at least 2 knots; got {kx.size}")
        if ky.shape != kx.shape:
            raise ValueError(
                f"`values` of Piecewise must match `knots` in length; got {ky.size} values for {kx.size} knots"
            )
        if not (np.all(np.isfinite(kx)) and np.all(np.isfinite(ky))):
            raise ValueError("`knots` and `values` of Piecewise must be finite")
        if np.any(np.diff(kx) <= 0):
            raise ValueError(f"`knots` of Piecewise must be strictly increasing; got {kx.tolist()}")
        if np.any(np.diff(ky) < 0):
            raise ValueError(
                f"`values` of Piecewise must be non-decreasing (a monotone link); got {ky.tolist()}"
            )
        if extrapolation not in ("flat", "linear"):
            raise ValueError(
                f"`extrapolation` of Piecewise must be 'flat' or 'linear'; got {extrapolation!r}"
            )
        slopes = np.diff(ky) / np.diff(kx)
        left = slopes[0] if extrapolation == "linear" else 0.0
        right = slopes[-1] if extrapolation == "linear" else 0.0
        # segment j (0..K) starts at base point bx[j]; segment 0 is the left extrapolation
        self._bx = np.concatenate([[kx[0]], kx])
        self._by = np.concatenate([[ky[0]], ky])
        self._slope = np.concatenate([[left], slopes, [right]])
        seg_int = 0.5 * (ky[:-1] + ky[1:]) * np.diff(kx)
        self._bF = np.concatenate([[0.0, 0.0], np.cumsum(seg_int)])  # F at base points, F(kx0)=0
        self._kx, self._ky = kx, ky
        self._f_range = (
            float(ky[0]) if left == 0 else -math.inf,
            float(ky[-1]) if right == 0 else math.inf,
        )
        self._params = {
            "knots": knots,
            "values": values,
            "extrapolation": extrapolation,
            "alpha": alpha,
            "beta": beta,
        }

    def _tables(self, x, xp):
        dev = {"device": x.device} if A.is_torch(x) else {}
        kx = xp.asarray(self._kx, dtype=x.dtype, **dev)
        seg = xp.searchsorted(kx, x, side="right")  # 0 .. K

        def take(a):
            return xp.take(xp.asarray(a, dtype=x.dtype, **dev), xp.reshape(seg, (-1,)), axis=0)  # noqa: E731

        shape = x.shape
        return (
            xp.reshape(take(self._bx), shape),
            xp.reshape(take(self._by), shape),
            xp.reshape(take(self._slope), shape),
            xp.reshape(take(self._bF), shape),
        )

    def _f(self, x, xp):
        bx, by, s, _ = self._tables(x, xp)
        return by + s * (x - bx)

    def _df(self, x, xp):
        _, _, s, _ = self._tables(x, xp)
        return s

    def _F(self, x, xp):
        bx, by, s, bF = self._tables(x, xp)
        t = x - bx
        return bF + by * t + 0.5 * s * t * t

    def _finv(self, y, xp):
        dev = {"device": y.device} if A.is_torch(y) else {}
        ky = xp.asarray(self._ky, dtype=y.dtype, **dev)
        # left-most x with f(x) >= y: segment where y first reached
        seg = xp.searchsorted(ky, y, side="left")  # 0..K
        flat = xp.reshape(seg, (-1,))
        kxa = xp.asarray(self._kx, dtype=y.dtype, **dev)
        K = self._kx.size
        idx_hi = xp.clip(flat, 0, K - 1)
        idx_lo = xp.clip(flat - 1, 0, K - 1)
        x1 = xp.reshape(xp.take(kxa, idx_hi, axis=0), y.shape)
        x0 = xp.reshape(xp.take(kxa, idx_lo, axis=0), y.shape)
        y1 = xp.reshape(xp.take(ky, idx_hi, axis=0), y.shape)
        y0 = xp.reshape(xp.take(ky, idx_lo, axis=0), y.shape)
        span = y1 - y0
        safe = xp.where(span > 0, span, xp.ones_like(span))
        inner = xp.where(span > 0, x0 + (y - y0) * (x1 - x0) / safe, x1)
        # beyond the knots (only reachable with linear extrapolation)
        s_left, s_right = self._slope[0], self._slope[-1]
        left = (
            (self._kx[0] + (y - self._ky[0]) / s_left)
            if s_left > 0
            else xp.full_like(y, self._kx[0])
        )
        right = (
            (self._kx[-1] + (y - self._ky[-1]) / s_right)
            if s_right > 0
            else xp.full_like(y, self._kx[-1])
        )
        out = xp.where(y < self._ky[0], left, inner)
        return xp.where(y > self._ky[-1], right, out)


class CallableLink(Link):
    r"""A user-defined link from a callable ``h`` alone.

    Parameters
    ----------
    h : callable
        Monotone non-decreasing function of an array. Written with array-API functions
        (or torch functions) it also works on tensors; written with NumPy, on NumPy arrays.
    dh, H, h_inv : callable, optional
        Closed forms where known. Otherwise ``dh`` comes from torch autograd when ``h``
        accepts tensors (``derivative="autodiff"``) or central differences, ``H`` from
        composite Gauss–Legendre quadrature (slower: 256 evaluations of ``h`` per point) and
        ``h_inv`` from bisection.
    domain : (float, float)
        Open interval of valid scores.
    derivative : {"auto", "autodiff", "differences"}
        How ``dh`` is obtained when not given.
    name : str
        The link's name (in its repr and parameters).

    Notes
    -----
    Only the gradient ``h(ẑ) − h(s)`` is needed to train — "losses with analytical gradients
    even if there is no analytical expression for the loss".

    Examples
    --------
    >>> link = CallableLink(lambda z: z ** 3 + z)
    >>> round(float(link.dh(1.0)), 5), round(float(link.H(1.0)), 6)
    (4.0, 0.75)
    """

    name = "callable"

    def __init__(
        self,
        h: Callable,
        *,
        dh: Callable | None = None,
        H: Callable | None = None,
        h_inv: Callable | None = None,
        domain: tuple[float, float] = (-math.inf, math.inf),
        derivative: str = "auto",
        name: str = "callable",
        smooth: bool = True,
    ):
        if not callable(h):
            raise TypeError(f"`h` of CallableLink must be callable; got {type(h).__name__}")
        for nm, f in (("dh", dh), ("H", H), ("h_inv", h_inv)):
            if f is not None and not callable(f):
                raise TypeError(
                    f"`{nm}` of CallableLink must be callable or None; got {type(f).__name__}"
                )
        if derivative not in ("auto", "autodiff", "differences"):
            raise ValueError(
                f"`derivative` of CallableLink must be 'auto', 'autodiff' or 'differences'; got {derivative!r}"
            )
        lo, hi = (float(domain[0]), float(domain[1]))
        if not lo < hi:
            raise ValueError(
                f"`domain` of CallableLink must be an interval (low < high); got {domain!r}"
            )
        self._h, self._dh, self._H, self._hinv = h, dh, H, h_inv
        self.domain = (lo, hi)
        self.name = name
        self.smooth = smooth
        self._derivative = derivative
        self._autodiff_ok: bool | None = None if derivative != "differences" else False
        self._params = {
            "h": h,
            "dh": dh,
            "H": H,
            "h_inv": h_inv,
            "domain": domain,
            "derivative": derivative,
            "name": name,
            "smooth": smooth,
        }

    def h(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        out = self._h(z)
        return A.as_float_array(out, xp, like=z)

    def dh(self, z):
        if self._dh is not None:
            xp = A.get_namespace(z)
            z = A.as_float_array(z, xp)
            return A.as_float_array(self._dh(z), xp, like=z)
        if self._autodiff_ok is not False:
            out = self._autodiff(z)
            if out is not None:
                return out
        return Link.dh(self, z)

    def _autodiff(self, z):
        try:
            import torch
        except ImportError:
            if self._derivative == "autodiff":
                raise ImportError(
                    "derivative='autodiff' requires torch: pip install 'selrank[torch]'"
                ) from None
            self._autodiff_ok = False
            return None
        xp = A.get_namespace(z)
        zt = torch.as_tensor(A.to_numpy(A.as_float_array(z, xp)) if not A.is_torch(z) else z)
        create = bool(A.is_torch(z) and z.requires_grad)
        leaf = zt if create else zt.detach().clone().requires_grad_(True)
        try:
            with torch.enable_grad():
                val = self._h(leaf)
                if not (torch.is_tensor(val) and val.requires_grad):
                    raise TypeError("h did not return a differentiable tensor")
                (g,) = torch.autograd.grad(val.sum(), leaf, create_graph=create)
        except Exception:
            if self._derivative == "autodiff":
                raise
            self._autodiff_ok = False
            return None
        self._autodiff_ok = True
        if A.is_torch(z):
            return g
        return A.as_float_array(g.detach().numpy(), xp, like=A.as_float_array(z, xp))

    def H(self, z):
        if self._H is not None:
            xp = A.get_namespace(z)
            z = A.as_float_array(z, xp)
            return A.as_float_array(self._H(z), xp, like=z)
        return Link.H(self, z)

    def h_inv(self, y):
        if self._hinv is not None:
            xp = A.get_namespace(y)
            y = A.as_float_array(y, xp)
            return A.as_float_array(self._hinv(y), xp, like=y)
        return Link.h_inv(self, y)

    def bregman(self, z_hat, z):
        if self._H is not None:
            return Link.bregman(self, z_hat, z)
        # integrate h(t) - h(z) over [z, z_hat] directly: no cancellation, no reference point
        xp = A.get_namespace(z_hat, z)
        z_hat = A.as_float_array(z_hat, xp)
        z = A.as_float_array(z, xp, like=z_hat)
        hz = self.h(z)
        flat_hz = xp.reshape(hz, (-1, 1))
        out = _quad(
            lambda t: self.h(t) - flat_hz, xp.reshape(z, (-1,)), xp.reshape(z_hat, (-1,)), xp
        )
        out = xp.reshape(out, z.shape)
        return _clip_at_zero(out, xp)


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

    def __init__(
        self,
        scaling: Scaling | str = "exp",
        *,
        gamma: float = 1.0,
        check: bool = True,
        **scaling_params,
    ):
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

    def h(self, z):
        return composite_sigmoid_h(self.scaling, self.gamma, z)

    def dh(self, z):
        return self.h_dh(z)[1]

    def h_dh(self, z):
        xp, q, dq, Q = self._parts(z)
        a = Q / self.gamma
        p = A.sigmoid(a, xp)
        # 1 - p as sigmoid(-a): exact where p rounds to 1
        return q * p, p * (dq + A.sigmoid(-a, xp) * q * q / self.gamma)

    def H(self, z):
        xp, _, _, Q = self._parts(z)
        return self.gamma * A.softplus(Q / self.gamma, xp)

    def _same_piece(self, z_a, z_b, xp):
        s = self.scaling
        if not s.capped:
            return None
        return Capped._same_piece(s, s.alpha * (z_a + s.beta), s.alpha * (z_b + s.beta), xp)

    def p(self, z):
        """Composite probability :math:`p(z) = \\sigma(Q(z)/\\gamma)`."""
        xp, _, _, Q = self._parts(z)
        return A.sigmoid(Q / self.gamma, xp)

    def __repr__(self) -> str:
        return f"CompositeSigmoid({self.scaling!r}, gamma={self.gamma!r})"


#: Registry of links by name. Values build a link from keyword parameters.
LINKS: dict[str, Callable[..., Link]] = {
    "identity": Identity,
    "sigmoid": Sigmoid,
    "exp": Exp,
    "negexp": NegExp,
    "sinh": Sinh,
    "logit": Logit,
    "smelu": SmeLU,
    "huber": Huber,
    "step": Step,
    "sign": Sign,
    "piecewise": Piecewise,
    "composite_sigmoid": CompositeSigmoid,
}


def get_link(name: str | Link | Callable, **params) -> Link:
    """Build a link by registry name, or pass a :class:`Link` / callable through.

    Parameters
    ----------
    name : str, Link or callable
        A key of :data:`LINKS`, a link instance (returned unchanged; ``params`` must then be
        empty) or a callable ``h`` (wrapped in :class:`CallableLink` with ``params``).
    **params
        Constructor parameters (``alpha``, ``beta``, ``cap``, ``c``, ``delta``, ...).

    Raises
    ------
    ValueError
        Unknown name, or bad parameters (the message names the parameter).

    Examples
    --------
    >>> get_link("sigmoid", beta=1.0)
    Sigmoid(alpha=1.0, beta=1.0)
    >>> get_link("tanh")
    Traceback (most recent call last):
    ...
    ValueError: unknown link 'tanh'; choose one of ['composite_sigmoid', 'exp', 'huber', 'identity', 'logit', 'negexp', 'piecewise', 'sigmoid', 'sign', 'sinh', 'smelu', 'step']
    """
    if callable(name) and not isinstance(name, str | Link):
        return CallableLink(name, **params)
    return lookup(
        LINKS, name, "link", instance_of=Link, accepts="a name, a Link or a callable", **params
    )
