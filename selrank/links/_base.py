"""The base class :class:`Link` and the generic numerical fallbacks (quadrature, bisection)
that links without closed forms use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .. import _array as A
from .._affine import Params
from .._array import Array
from .._functions import (
    bregman_threshold,
)

# DEFAULT_CAP (the default cap of the exponential links) and the Taylor-form threshold of the
# Bregman divergence live in selrank._functions, shared with the scalings; the old private
# name stays for code that imported it from here.
_eps_threshold = bregman_threshold


def _clip_at_zero(value, xp):
    """``max(value, 0)`` whose derivatives at ``value == 0`` are those of ``value``.

    A divergence is 0 at its minimum; ``maximum(value, 0)`` would split the gradient between
    the two equal arguments there and halve autograd's Hessian (``h'`` at ``z_hat == z``).
    A NaN stays NaN (``value < 0`` is false for it): a NaN score gives a NaN loss.
    """
    return xp.where(value < 0, xp.zeros_like(value), value)


class Link(Params):
    """Base class of all links.

    Subclasses must implement :meth:`h`. The base class derives the rest generically:

    * :meth:`dh` by central differences (or torch autograd where the link supports it);
    * :meth:`H` by composite Gauss–Legendre quadrature of ``h`` from a reference point;
    * :meth:`h_inv` by vectorised bisection (``h`` is monotone);
    * :meth:`bregman` (the loss), :meth:`conjugate` and :meth:`optimal_constant`.

    Concrete links override these with closed forms, which are faster and more accurate.

    **Hooks.** Beyond ``h`` (required) and the derived methods above (override any with a closed
    form), a link may supply *optional hooks*: closed forms that the generic code uses when
    present. The base class declares each one as a method that raises
    ``NotImplementedError``; a class supplies a hook by defining that method (itself or
    through a mixin of :mod:`selrank._functions`), and :attr:`hooks` then lists its name.
    Code that uses a hook tests ``name in link.hooks`` — one mechanism, never ``hasattr``,
    ``getattr(..., None)`` or a comparison of methods:

    * ``_finv(y, xp)``: the inverse of the standardized ``f`` (affine links): :meth:`h_inv`
      without bisection;
    * ``_Fconj(y, xp)``: the conjugate of the standardized primitive ``F`` (affine links):
      :meth:`conjugate` without an inversion, where no cap acts;
    * ``_log_mean_constants(x, cells, n_cells, w)``: the log-space optimal constants of
      :meth:`optimal_constants` (links whose ``h`` underflows towards a range end);
    * ``_df_midpoint(df_a, df_b)``: ``f'`` at the midpoint from ``f'`` at both ends (an
      exponential ``f'``: the Taylor branch of the Bregman divergence without a third
      exponential);
    * ``bregman``: the class overrides :meth:`bregman` with its own closed form, so the
      fused paths that repeat the base class's operations do not apply to it.

    Attributes
    ----------
    domain : tuple of float
        Open interval of scores on which ``h`` is defined.
    odd : bool
        ``h(-z) = -h(z)``: the pairwise loss is then independent of pair order.
    smooth : bool
        ``h`` is smooth (the Bregman divergence may use its Taylor form near the minimum).
    hooks : frozenset of str
        The optional hooks this class supplies (set for every subclass when it is defined).

    Examples
    --------
    >>> from selrank.links import Exp, Identity
    >>> sorted(Exp.hooks)
    ['_Fconj', '_df_midpoint', '_finv', '_log_mean_constants']
    >>> "bregman" in Identity.hooks
    True
    """

    #: The names of the optional hooks (see "Hooks" above).
    HOOKS: ClassVar[tuple[str, ...]] = (
        "_finv",
        "_Fconj",
        "_log_mean_constants",
        "_df_midpoint",
        "bregman",
    )
    hooks: ClassVar[frozenset[str]] = frozenset()

    name: str = "link"  # an instance may rename itself (CallableLink)
    domain: tuple[float, float] = (-math.inf, math.inf)
    odd: bool = False
    smooth: bool = True
    #: Parameter sets used by the registry-driven tests (and as documentation).
    examples: ClassVar[list[dict[str, Any]]] = [{}]
    #: The link's entry in the Theorem-1 catalogue (:mod:`selrank.paper.underspecification`):
    #: cases ``{case name: {"params", "w_u", "d"[, "s_min", "s_max", "tau"]}}`` (``params``
    #: build the link; the rest is the construction of :func:`~selrank.paper.check_theorem1`),
    #: or a str: why the link is outside the theorem's hypotheses. A registered link needs
    #: one (a test fails without it).
    theorem1: ClassVar[dict[str, dict[str, Any]] | str | None] = None

    _scale: float = 1.0  # how many x-units one score unit is (alpha); for thresholds

    @property
    def taylor_scale(self) -> float:
        """How many units of the standardized argument one score unit is (``alpha``): the
        Taylor threshold of :meth:`bregman` is in those units (read by the fast paths too)."""
        return self._scale

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the hooks this class supplies: those it defines differently from Link
        cls.hooks = frozenset(n for n in Link.HOOKS if getattr(cls, n) is not getattr(Link, n))

    # ---- the definition ------------------------------------------------------------------
    def h(self, z: Array) -> Array:
        """Link value :math:`h(z)`."""
        raise NotImplementedError

    def dh(self, z: Array) -> Array:
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

    def H(self, z: Array) -> Array:
        """Primitive :math:`H(z) = \\int_{z_0}^{z} h` (quadrature here; closed forms override)."""
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        z0 = xp.full_like(z, self._reference_point())
        return _quad(self.h, z0, z, xp)

    def h_inv(self, y: Array) -> Array:
        """Inverse link :math:`h^{-1}(y)` by vectorised bisection.

        For flat stretches of ``h`` the left-most preimage is returned; at the lower end of
        the range, the right-most.
        """
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        return _bisect_inverse(self.h, y, self.domain, xp)

    def h_dh(self, z: Array) -> tuple[Array, Array]:
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

    def bregman(self, z_hat: Array, z: Array) -> Array:
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

    def bregman_grad(self, z_hat: Array, z: Array) -> Array:
        """``(bregman(z_hat, z), h(z_hat) - h(z))``: the loss and its gradient together.

        Links whose triple ``f, f', F`` shares work override it (one evaluation per
        argument instead of one per quantity) with the same values.
        """
        return self.bregman(z_hat, z), self.h(z_hat) - self.h(z)

    def conjugate(self, y: Array) -> Array:
        r"""Convex conjugate :math:`H^*(y) = \sup_z\, z y - H(z) = z y - H(z)` at :math:`z = h^{-1}(y)`.

        Used for targets given in the link's output space (``target="link"``).
        """
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        z = self.h_inv(y)
        return z * y - self.H(z)

    def bregman_link_target(self, z_hat: Array, y: Array) -> Array:
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

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, target: str = "score"
    ) -> float:
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
        self,
        y_true: Array,
        cells: Array,
        n_cells: int,
        sample_weight: Array | None = None,
        *,
        target: str = "score",
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
        >>> from selrank.links import get_link
        >>> c = get_link("exp").optimal_constants([-40.0, -40.0, 1.0, 3.0], [0, 0, 1, 1], 2)
        >>> c.round(4).tolist()
        [-40.0, 2.4338]
        """
        y, w, cells = self._cell_inputs(y_true, cells, n_cells, sample_weight)
        if target != "score" or "_log_mean_constants" not in self.hooks:
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

    # ---- optional hooks (see "Hooks" in the class docstring) -------------------------------
    def _log_mean_constants(self, x, cells, n_cells, w):
        """Hook: per-cell optimum in log space from standardized ``x`` (links that define one)."""
        raise NotImplementedError(f"{type(self).__name__} does not supply _log_mean_constants")

    def _finv(self, y, xp):
        """Hook: inverse of the standardized ``f`` on its range (affine links with a closed form)."""
        raise NotImplementedError(f"{type(self).__name__} does not supply _finv")

    def _Fconj(self, y, xp):
        """Hook: convex conjugate of the standardized primitive ``F`` (affine links)."""
        raise NotImplementedError(f"{type(self).__name__} does not supply _Fconj")

    def _df_midpoint(self, df_a, df_b):
        """Hook: ``f'`` at the midpoint of two points from ``f'`` at both (torch, in place)."""
        raise NotImplementedError(f"{type(self).__name__} does not supply _df_midpoint")

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
    def check_domain(self, z: Array, name: str = "y_true") -> None:
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

    def check_range(self, y: Array, name: str = "y_true") -> None:
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
