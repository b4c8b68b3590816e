r"""The capped links of the pairwise numba kernels, their parameters and the pair sampler's mixer.

One definition of the link inside the kernels (:func:`_capped`: exact inside the caps, linear
or flat beyond them, as :class:`selrank._affine.Capped`) and of its primitive
(:func:`_capped_F`), for the four link classes the kernels are tested equal to:
:class:`~selrank.links.Identity`, :class:`~selrank.links.Exp`, :class:`~selrank.links.Sinh`
and :class:`~selrank.links.Sigmoid` — exactly these classes (``selrank.fast.FAST_PATHS``), with
any ``alpha``, ``beta`` and caps. :func:`kernel_link` turns a link object into the kernels'
parameter tuple, taking the values at the caps from the link itself (its ``exact_triple``:
``_F``), so the kernels never re-derive them. Used by :mod:`selrank.fast._pairwise`,
:mod:`selrank.fast._sampled` and :mod:`selrank.fast._weighted_pairwise`.

splitmix64 (:func:`mix64`, :func:`draw_key`) draws the sampled pairs of ``pair_method="mean"``
for the NumPy sampler of :mod:`selrank.losses.pairwise` and the kernels alike.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._array import Array
from ..links import Exp, Identity, Sigmoid, Sinh

__all__ = [
    "available",
    "kernel_link",
    "kernel_fcaps",
    "draw_key",
    "mix64",
    "IDENTITY",
    "EXP",
    "SINH",
    "SIGMOID",
    "KINDS",
]

from .._numba import available as _numba_available
from .._numba import installed as _numba_installed
from .._numba import numba

# numba is optional (the "fast" extra) and imported only when a kernel first runs
# (selrank._numba): the decorations below are lazy, and cached where a location is writable
_NUMBA = _numba_installed()

# splitmix64 (Steele, Lea & Flood 2014): the counter-based generator of the sampled pairs. The
# partner of draw t of row r is a pure function of (seed, draw, r, t), so the NumPy sampler of
# selrank.losses.pairwise and the kernel below draw the same pairs in any order or thread.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(x: Array) -> Array:
    """splitmix64's output function on uint64 (NumPy arrays or, jitted, scalars); wraps mod 2**64."""
    x = x ^ (x >> _S30)
    x = x * _MIX1
    x = x ^ (x >> _S27)
    x = x * _MIX2
    return x ^ (x >> _S31)


def draw_key(seed: int, draw: int) -> np.uint64:
    """The stream key of one draw of sampled pairs: row ``r``'s ``t``-th partner comes from
    ``mix64(key + (r * m + t) * golden)`` (``m`` partners per row)."""
    with np.errstate(over="ignore"):
        s = mix64(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
        d = mix64(np.array([int(draw) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64) + _GOLDEN)
        return np.uint64(mix64(s ^ d)[0])


# link kinds understood by the kernel
IDENTITY, EXP, SINH, SIGMOID = 0, 1, 2, 3
_SAFE_EXPONENT = 600.0  # factorised exponentials stay below e**600 (float64 max is about e**709)


#: The link classes the kernels implement, exactly (``type(link) is cls``: the kernels
#: re-implement their ``_f``, ``_df`` and ``_F``, which a subclass could change), with the
#: kernels' code for each; ``selrank.fast.FAST_PATHS`` registers these classes from here.
KINDS: dict[type, int] = {Identity: IDENTITY, Exp: EXP, Sinh: SINH, Sigmoid: SIGMOID}


def available() -> bool:
    """True when numba is installed (the kernel can run); imports numba, compiles nothing."""
    return _NUMBA and _numba_available()


def kernel_link(link: Any) -> tuple | None:
    """The kernel's description of ``link``, or ``None`` if the kernel does not cover it.

    Returns ``(kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)``: the kind, the
    standardisation ``x = alpha (z - beta)``, the caps on ``x`` with the continuation mode, and
    the link's standardised value and slope at the caps — taken from the link object itself
    (:meth:`~selrank._affine.Capped.exact_triple` at the caps), so the kernel never re-derives them.
    """
    kind = KINDS.get(type(link))
    if kind is None:
        return None
    lo, hi = (float(c) for c in link.caps)
    flat = link.cap_mode == "flat"

    def at(v):
        if not math.isfinite(v):
            return 0.0, 0.0
        f, df, _ = link.exact_triple(np.array([v]), np)
        return float(f[0]), float(df[0])

    f_lo, df_lo = at(lo)
    f_hi, df_hi = at(hi)
    return (kind, float(link.alpha), float(link.beta), lo, hi, flat, f_lo, df_lo, f_hi, df_hi)


def _f_df(kind, x, e, ie):
    """Standardised link value and slope at ``x`` inside the caps; ``e = exp(x)``, ``ie = exp(-x)``."""
    if kind == IDENTITY:
        return x, 1.0
    if kind == EXP:
        return e, e
    if kind == SINH:
        return 0.5 * (e - ie), 0.5 * (e + ie)
    # SIGMOID: e / (1 + e) and its complement 1 / (1 + e) are both accurate at either end
    p = e / (1.0 + e) if e <= 1.0 else 1.0 / (1.0 + ie)
    q = 1.0 / (1.0 + e) if e <= 1.0 else ie / (1.0 + ie)
    return p, p * q


def _capped(kind, x, e, ie, lo, hi, flat, f_lo, df_lo, f_hi, df_hi):
    """The link with caps (``selrank._affine.Capped``): exact inside, linear or flat outside."""
    if x > hi:
        if flat:
            return f_hi, 0.0
        return f_hi + df_hi * (x - hi), df_hi
    if x < lo:
        if flat:
            return f_lo, 0.0
        return f_lo + df_lo * (x - lo), df_lo
    return _f_df(kind, x, e, ie)


def _check_query(start, stop, rows, scratch):  # pragma: no cover - jitted
    """Bounds of one query before a kernel writes into its preallocated arrays: rows
    ``[start, stop)`` inside the ``rows`` of the output, at most ``scratch`` long (the per-query
    buffers). Raises instead of writing out of bounds (a bad ``offsets`` is a caller's bug)."""
    if start < 0 or stop < start or stop > rows or stop - start > scratch:
        raise IndexError("pairwise kernel: query offsets out of bounds of the arrays")


def _check_rows(pred, y, offsets, qweight, grad, hess):  # pragma: no cover - jitted
    """Sizes of a kernel's per-row and per-query arrays, checked once before it writes."""
    n = grad.size
    if pred.size != n or y.size != n or hess.size != n or offsets.size < 1:
        raise IndexError("pairwise kernel: row arrays of different lengths")
    if qweight.size != 0 and qweight.size != offsets.size - 1:
        raise IndexError("pairwise kernel: one query weight per query expected")


def _query_exponentials(
    pred, y, start, stop, alpha, beta, shift, ep, iep, ey, iey
):  # pragma: no cover - jitted
    """Fill the factorised exponentials of one query (scores and targets, centred on their
    mid-range); False when the query's range would overflow them (one exponential per pair)."""
    if shift <= 0.0:
        return False
    pmin, pmax = pred[start], pred[start]
    ymin, ymax = y[start], y[start]
    for r in range(start + 1, stop):
        pmin = min(pmin, pred[r])
        pmax = max(pmax, pred[r])
        ymin = min(ymin, y[r])
        ymax = max(ymax, y[r])
    if not (
        alpha * (pmax - pmin) + abs(alpha * beta) < _SAFE_EXPONENT
        and alpha * (ymax - ymin) + abs(alpha * beta) < _SAFE_EXPONENT
    ):
        return False
    pm = 0.5 * (pmin + pmax)
    ym = 0.5 * (ymin + ymax)
    for r in range(start, stop):
        ep[r - start] = math.exp(alpha * (pred[r] - pm))
        iep[r - start] = 1.0 / ep[r - start]
        ey[r - start] = math.exp(alpha * (y[r] - ym))
        iey[r - start] = 1.0 / ey[r - start]
    return True


def _capped_F(
    kind, x, e, ie, lo, hi, flat, F_lo, f_lo, df_lo, F_hi, f_hi, df_hi
):  # pragma: no cover - jitted
    """The link's standardised primitive ``F`` with caps (``selrank._affine.Capped._cF``)."""
    if x > hi:
        t = x - hi
        return F_hi + f_hi * t + (0.0 if flat else 0.5 * df_hi * t * t)
    if x < lo:
        t = x - lo
        return F_lo + f_lo * t + (0.0 if flat else 0.5 * df_lo * t * t)
    if kind == IDENTITY:
        return 0.5 * x * x
    if kind == EXP:
        return e
    if kind == SINH:
        return 0.5 * (e + ie)
    return math.log1p(e) if e <= 1.0 else x + math.log1p(ie)  # SIGMOID: softplus


def kernel_fcaps(link: Any) -> tuple:
    """The link's standardised primitive ``F`` at its caps ``(F_lo, F_hi)`` (0 where uncapped),
    taken from the link object (:meth:`~selrank._affine.Capped.exact_triple`), for the loss values of :func:`pairwise_sampled`."""

    def at(v):
        return float(link.exact_triple(np.array([v]), np)[2][0]) if math.isfinite(v) else 0.0

    return tuple(at(float(c)) for c in link.caps)


if _NUMBA:
    _f_df = numba.njit(inline="always")(_f_df)
    _capped = numba.njit(inline="always")(_capped)
    _capped_F = numba.njit(inline="always")(_capped_F)
    _check_query = numba.njit(_check_query)
    _check_rows = numba.njit(_check_rows)
    _mix64 = numba.njit(inline="always")(mix64)
    _query_exponentials = numba.njit(inline="always")(_query_exponentials)
else:  # pragma: no cover
    _mix64 = mix64
