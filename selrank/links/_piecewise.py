"""A monotone piecewise-linear link through user knots."""

from __future__ import annotations

import math

import numpy as np

from .. import _array as A
from .._array import Array
from ._catalogue import _AffineLink


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
    #: Theorem-1 cases (see Link.theorem1).
    theorem1 = {
        "piecewise (staircase)": {
            "params": {"knots": [-2.0, -1.0, 1.0, 2.0], "values": [0.0, 1.0, 1.0, 2.0]},
            "w_u": -1.5,
            "d": 0.3,
        },
        "piecewise (flat step)": {
            "params": {"knots": [-2.0, -1.0, 1.0, 2.0], "values": [0.0, 1.0, 1.0, 2.0]},
            "w_u": 0.0,
            "d": 0.5,
        },
    }
    _f_open_low = _f_open_high = False

    def __init__(
        self,
        *,
        knots: Array,
        values: Array,
        extrapolation: str = "flat",
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> None:
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
            return xp.take(xp.asarray(a, dtype=x.dtype, **dev), xp.reshape(seg, (-1,)), axis=0)

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
