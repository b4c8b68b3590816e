r"""Numba kernel of :class:`selrank.losses.weighted_pairwise.WeightedPairwise` (grouped NumPy rows).

Per query: the current ranking (a stable sort by decreasing score, as LightGBM's), the
:math:`|\Delta\mathrm{NDCG}|` weight of each selected pair from the ranks, the link's capped
value and slope at the predicted difference (the exponentials factorised per row as in
:mod:`selrank.fast._pairwise`: ``2n`` per query instead of one per pair), and LightGBM's
``lambdarank_norm``. It covers the links of :func:`selrank.fast._links.kernel_link` (exactly
the classes registered for it in ``selrank.fast.FAST_PATHS``) and is tested equal to the
generic NumPy path (``tests/fast/``, ``tests/losses/test_weighted_pairwise.py``).

Three kernels, each compiled (or loaded from numba's disk cache) on its first call, so that a
fit compiles only what its link and pair method use: :func:`_kernel_odd` (``"all"`` /
``"topk"`` with an odd link matched to score differences: the default ``Sinh(cap=3)``),
:func:`_kernel_pairs` (``"all"`` / ``"topk"``, any link and target: the lambdarank twin) and
:func:`_kernel_mean` (``"mean"``). The ranking is :func:`selrank.fast._sampled._rank_order`,
written out: numba's library sorts cost about 6 CPU s of compilation.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import numba
from ._links import _GOLDEN, IDENTITY, SINH
from ._links import _SAFE_EXPONENT as _SAFE
from ._links import _capped as _link  # the capped link of the pairwise kernels: one definition
from ._links import _mix64 as _mix  # splitmix64's output
from ._sampled import _rank_order  # the stable ranking, written out (no library sort)

__all__ = ["weighted_pairwise"]


def _pair(params, sup, order_target, w, dp, dy, e, ie, et, iet, fact):  # pragma: no cover - jitted
    """Weighted gradient and Hessian terms of one oriented pair (``dp``, ``dy``: upper minus
    lower); ``e``, ``ie``, ``et``, ``iet``: the factorised exponentials when ``fact``."""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    xh = alpha * (dp - beta)
    if kind != IDENTITY and not fact and lo <= xh <= hi:
        e = math.exp(xh)
        ie = math.exp(-xh)
    f, df = _link(kind, xh, e, ie, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
    if order_target:
        ft = sup
    else:
        xt = alpha * (dy - beta)
        if kind != IDENTITY and not fact and lo <= xt <= hi:
            et = math.exp(xt)
            iet = math.exp(-xt)
        ft, _ = _link(kind, xt, et, iet, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
    return w * (f - ft), w * alpha * df


def _rerank(x, order, prev, start, n, have_prev):  # pragma: no cover - jitted
    """:func:`selrank.fast._sampled._rank_order` of ``x`` (positions by decreasing
    value, ties in position order) into ``order``, starting from the previous call's ranking
    ``prev[start:start + n]`` when there is one: an insertion sort on the exact order
    (decreasing value, ties by position) costs O(n + moves), and a boosting round moves
    few documents. More than ``8n`` moves: a full sort instead."""
    if have_prev:
        moves = 0
        for s in range(n):
            order[s] = prev[start + s]
        for i in range(1, n):
            k = order[i]
            xk = x[k]
            j = i - 1
            while j >= 0 and (x[order[j]] < xk or (x[order[j]] == xk and order[j] > k)):
                order[j + 1] = order[j]
                j -= 1
                moves += 1
            order[j + 1] = k
            if moves > 8 * n:
                have_prev = False
                break
    if not have_prev:
        full = _rank_order(x)
        for s in range(n):
            order[s] = full[s]
    for s in range(n):
        prev[start + s] = order[s]


def _scratch(offsets):  # pragma: no cover - jitted
    """The longest query's length and the DCG discounts up to it."""
    longest = 1
    for q in range(offsets.size - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    disc = np.empty(longest)
    for r in range(longest):
        disc[r] = 1.0 / math.log2(r + 2.0)
    return longest, disc


def _gather(
    pred, y, gain, start, n, order, prev, have_prev, rid, pos, ps, ys, gs, ga, ha
):  # pragma: no cover - jitted
    """Rank one query (:func:`_rerank`) and copy its rows into the scratch arrays in ranked
    order; returns the labels' range ``(ymin, ymax)``."""
    _rerank(pred[start : start + n], order, prev, start, n, have_prev)
    ymin, ymax = y[start], y[start]
    for s in range(n):
        o = order[s]
        rid[s] = start + o
        pos[o] = s
        ps[s] = pred[start + o]
        ys[s] = y[start + o]
        gs[s] = gain[start + o]
        ga[s] = 0.0
        ha[s] = 0.0
        ymin = min(ymin, ys[s])
        ymax = max(ymax, ys[s])
    return ymin, ymax


def _exponentials(
    kind, alpha, beta, shift, ps, ys, ymin, ymax, n, ep, iep, ey, iey
):  # pragma: no cover - jitted
    """Per-row exponentials centred on the mid-range (scores and targets): e^(x) of a pair
    is then a product, 2n exponentials per query instead of 2 per pair. False (nothing
    filled) where the query's range would overflow them."""
    fact = (
        kind != IDENTITY
        and shift > 0.0
        and alpha * (ps[0] - ps[n - 1]) + abs(alpha * beta) < _SAFE
        and alpha * (ymax - ymin) + abs(alpha * beta) < _SAFE
    )
    if fact:
        pm = 0.5 * (ps[0] + ps[n - 1])
        ym = 0.5 * (ymin + ymax)
        for s in range(n):
            ep[s] = math.exp(alpha * (ps[s] - pm))
            iep[s] = 1.0 / ep[s]
            ey[s] = math.exp(alpha * (ys[s] - ym))
            iey[s] = 1.0 / ey[s]
    return fact


def _finish(grad, hess, rid, ga, ha, n, total, norm, qweight, q):  # pragma: no cover - jitted
    """LightGBM's ``lambdarank_norm`` and the query weight, written to the rows."""
    total *= 2.0
    factor = math.log2(1.0 + total) / total if norm and total > 0.0 else 1.0
    if qweight.size:
        factor *= qweight[q]
    for s in range(n):
        grad[rid[s]] = ga[s] * factor
        hess[rid[s]] = ha[s] * factor


def _kernel_odd(
    pred, y, gain, offsets, qweight, inv_max, params, m, norm, prev, have_prev, grad, hess
):  # pragma: no cover - jitted
    """``"all"`` / ``"topk"`` (``m`` outer ranks, 0: all) for an odd link (sinh, identity:
    ``beta = 0``, symmetric caps) matched to score differences: the same pair terms in either
    orientation, so no branch on the labels' order (equal labels have equal gains: weight
    0), the caps by clamping as in :mod:`selrank.fast._pairwise`, and the exponentials
    factorised (``e^(+-hi)`` at the caps)."""
    kind, alpha, hi, flat = params[0], params[1], params[4], params[5]
    e_hi = math.exp(min(hi, _SAFE)) if kind == SINH else 0.0
    ie_hi = 1.0 / e_hi if kind == SINH else 0.0
    longest, disc = _scratch(offsets)
    ps, ys, gs = np.empty(longest), np.empty(longest), np.empty(longest)
    ep, iep = np.ones(longest), np.ones(longest)
    ey, iey = np.ones(longest), np.ones(longest)
    ga, ha = np.empty(longest), np.empty(longest)
    rid = np.empty(longest, dtype=np.int64)
    pos = np.empty(longest, dtype=np.int64)
    order = np.empty(longest, dtype=np.int64)
    shift = 1.0 if kind != IDENTITY else 0.0
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        n = stop - start
        if n < 2:
            continue
        ymin, ymax = _gather(
            pred, y, gain, start, n, order, prev, have_prev, rid, pos, ps, ys, gs, ga, ha
        )
        fact = _exponentials(kind, alpha, 0.0, shift, ps, ys, ymin, ymax, n, ep, iep, ey, iey)
        normed = norm and ps[0] != ps[n - 1]
        inv = inv_max[q]
        total = 0.0
        n_outer = min(m, n - 1) if m > 0 else n - 1
        for r in range(n_outer):
            yr, pr, gr, dr = ys[r], ps[r], gs[r], disc[r]
            a1, b1, a2, b2 = ep[r], iep[r], ey[r], iey[r]
            gi = 0.0
            hsum = 0.0
            for s in range(r + 1, n):
                if not fact and yr == ys[s]:
                    continue  # (an exponential per pair below may overflow: no 0 * inf)
                dp = pr - ps[s]
                w = abs(gr - gs[s]) * (dr - disc[s]) * inv
                if normed:
                    w = w / (0.01 + abs(dp))
                xh = alpha * dp
                xt = alpha * (yr - ys[s])
                th = xh - min(max(xh, -hi), hi)
                tt = xt - min(max(xt, -hi), hi)
                if kind == IDENTITY:
                    fh, dfh, ft, dft = xh - th, 1.0, xt - tt, 1.0
                else:  # SINH
                    if fact:
                        eh = a1 * iep[s] if xh <= hi else e_hi
                        eh = eh if xh >= -hi else ie_hi
                        ieh = b1 * ep[s] if xh <= hi else ie_hi
                        ieh = ieh if xh >= -hi else e_hi
                        et = a2 * iey[s] if xt <= hi else e_hi
                        et = et if xt >= -hi else ie_hi
                        iet = b2 * ey[s] if xt <= hi else ie_hi
                        iet = iet if xt >= -hi else e_hi
                    else:  # a query too wide for the factorised exponentials
                        eh, ieh = math.exp(xh - th), math.exp(th - xh)
                        et, iet = math.exp(xt - tt), math.exp(tt - xt)
                    fh, dfh = 0.5 * (eh - ieh), 0.5 * (eh + ieh)
                    ft, dft = 0.5 * (et - iet), 0.5 * (et + iet)
                if flat:
                    dfh = dfh if th == 0.0 else 0.0
                else:
                    fh += dfh * th
                    ft += dft * tt
                g = w * (fh - ft)
                h = w * alpha * dfh
                gi += g
                ga[s] -= g
                hsum += h
                ha[s] += h
                total += abs(g)
            ga[r] += gi
            ha[r] += hsum
        _finish(grad, hess, rid, ga, ha, n, total, norm, qweight, q)


def _kernel_pairs(
    pred, y, gain, offsets, qweight, inv_max, params, order_target, sup, m, norm, prev,
    have_prev, grad, hess,
):  # pragma: no cover - jitted  # fmt: skip
    """``"all"`` / ``"topk"`` (``m`` outer ranks, 0: all) for any kernel link and target:
    each pair oriented by its labels."""
    kind, alpha, beta = params[0], params[1], params[2]
    longest, disc = _scratch(offsets)
    ps, ys, gs = np.empty(longest), np.empty(longest), np.empty(longest)
    ep, iep = np.ones(longest), np.ones(longest)
    ey, iey = np.ones(longest), np.ones(longest)
    ga, ha = np.empty(longest), np.empty(longest)
    rid = np.empty(longest, dtype=np.int64)
    pos = np.empty(longest, dtype=np.int64)
    order = np.empty(longest, dtype=np.int64)
    shift = math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE else 0.0
    ishift = 1.0 / shift if shift > 0.0 else 0.0
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        n = stop - start
        if n < 2:
            continue
        ymin, ymax = _gather(
            pred, y, gain, start, n, order, prev, have_prev, rid, pos, ps, ys, gs, ga, ha
        )
        fact = _exponentials(kind, alpha, beta, shift, ps, ys, ymin, ymax, n, ep, iep, ey, iey)
        normed = norm and ps[0] != ps[n - 1]
        inv = inv_max[q]
        total = 0.0
        n_outer = min(m, n - 1) if m > 0 else n - 1
        for r in range(n_outer):
            yr, pr, gr, dr = ys[r], ps[r], gs[r], disc[r]
            a1, b1, a2, b2 = ep[r], iep[r], ey[r], iey[r]
            gi = 0.0
            hsum = 0.0
            for s in range(r + 1, n):
                ysv = ys[s]
                if yr == ysv:
                    continue
                up = yr > ysv
                sgn = 1.0 if up else -1.0
                dp = sgn * (pr - ps[s])
                w = abs(gr - gs[s]) * (dr - disc[s]) * inv
                if normed:
                    w /= 0.01 + abs(dp)
                if up:
                    e, ie = a1 * iep[s] * shift, b1 * ep[s] * ishift
                    et, iet = a2 * iey[s] * shift, b2 * ey[s] * ishift
                else:
                    e, ie = b1 * ep[s] * shift, a1 * iep[s] * ishift
                    et, iet = b2 * ey[s] * shift, a2 * iey[s] * ishift
                g, h = _pair(
                    params, sup, order_target, w, dp, sgn * (yr - ysv), e, ie, et, iet, fact
                )
                g *= sgn
                gi += g
                ga[s] -= g
                hsum += h
                ha[s] += h
                total += abs(g)
            ga[r] += gi
            ha[r] += hsum
        _finish(grad, hess, rid, ga, ha, n, total, norm, qweight, q)


def _kernel_mean(
    pred, y, gain, offsets, qweight, inv_max, params, order_target, sup, m, key, norm, prev,
    have_prev, grad, hess,
):  # pragma: no cover - jitted  # fmt: skip
    """``"mean"``: ``m`` partners per document, uniform over the other rows (Pairwise's draws)."""
    kind, alpha, beta = params[0], params[1], params[2]
    longest, disc = _scratch(offsets)
    ps, ys, gs = np.empty(longest), np.empty(longest), np.empty(longest)
    ep, iep = np.ones(longest), np.ones(longest)
    ey, iey = np.ones(longest), np.ones(longest)
    ga, ha = np.empty(longest), np.empty(longest)
    rid = np.empty(longest, dtype=np.int64)
    pos = np.empty(longest, dtype=np.int64)
    order = np.empty(longest, dtype=np.int64)
    shift = math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE else 0.0
    ishift = 1.0 / shift if shift > 0.0 else 0.0
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        n = stop - start
        if n < 2:
            continue
        ymin, ymax = _gather(
            pred, y, gain, start, n, order, prev, have_prev, rid, pos, ps, ys, gs, ga, ha
        )
        fact = _exponentials(kind, alpha, beta, shift, ps, ys, ymin, ymax, n, ep, iep, ey, iey)
        normed = norm and ps[0] != ps[n - 1]
        inv = inv_max[q]
        total = 0.0
        for i in range(start, stop):
            pi = i - start
            si = pos[pi]
            for t in range(m):
                u = _mix(key + np.uint64(i * m + t) * _GOLDEN)
                c = np.int64(u % np.uint64(n - 1))
                sj = pos[c if c < pi else c + 1]
                if ys[si] == ys[sj]:
                    continue
                a, b = (si, sj) if ys[si] > ys[sj] else (sj, si)
                w = abs(gs[a] - gs[b]) * abs(disc[a] - disc[b]) * inv
                dp = ps[a] - ps[b]
                if normed:
                    w /= 0.01 + abs(dp)
                g, h = _pair(
                    params, sup, order_target, w, dp, ys[a] - ys[b],
                    ep[a] * iep[b] * shift, iep[a] * ep[b] * ishift,
                    ey[a] * iey[b] * shift, iey[a] * ey[b] * ishift, fact,
                )  # fmt: skip
                ga[a] += g
                ga[b] -= g
                ha[a] += h
                ha[b] += h
                total += abs(g)
        _finish(grad, hess, rid, ga, ha, n, total, norm, qweight, q)


def _is_odd(params: tuple, order_target: bool) -> bool:
    """Whether :func:`_kernel_odd` serves the link: sinh or identity, ``beta = 0``, symmetric
    caps, matched to score differences."""
    kind, _, beta, lo, hi = params[:5]
    return kind in (IDENTITY, SINH) and beta == 0.0 and lo == -hi and not order_target


# numba is optional (the "fast" extra): the decorations are lazy, and a kernel is compiled (or
# loaded from the disk cache) on its first call, for the one signature it is called with
# (selrank._numba); the link, the mixer and the ranking inlined or called here are
# selrank.fast._links' and selrank.fast._sampled's own (one definition each)
_pair = numba.njit(inline="always")(_pair)
_rerank = numba.njit(_rerank)
_scratch = numba.njit(_scratch)
_gather = numba.njit(_gather)
_exponentials = numba.njit(_exponentials)
_finish = numba.njit(_finish)
# reassociation lets LLVM vectorise the sums (results move by rounding only)
_kernel_odd = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(_kernel_odd)
_kernel_pairs = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(_kernel_pairs)
_kernel_mean = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(_kernel_mean)


def weighted_pairwise(
    pred: np.ndarray,
    y: np.ndarray,
    gain: np.ndarray,
    offsets: np.ndarray,
    qweight: np.ndarray | None,
    inv_max: np.ndarray,
    params: tuple,
    order_target: bool,
    sup: float,
    method: str,
    m: int,
    key: int | np.integer,
    norm: bool,
    ranking: np.ndarray | None = None,
    have_prev: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian diagonal (grouped order) of the weighted pairwise loss.

    ``pred``, ``y``, ``gain`` float64 in grouped order; ``offsets`` the query starts;
    ``qweight`` per-query weights or ``None``; ``inv_max`` ``1 / maxDCG`` per query;
    ``params`` from :func:`selrank.fast._links.kernel_link`; ``order_target`` with ``sup``
    the link's supremum; ``method`` ``"all"``, ``"topk"`` (``m`` = k) or ``"mean"`` (``m``
    partners, draw ``key``); ``norm`` LightGBM's ``lambdarank_norm``. ``ranking``: an int64
    array of the rows' count that keeps each query's ranking between calls (positions within
    the query) between calls: written by each call, and read when ``have_prev`` (the next
    call starts sorting from it).
    """
    n = pred.shape[0]
    grad = np.zeros(n, dtype=np.float64)
    hess = np.zeros(n, dtype=np.float64)
    qw = (
        np.zeros(0, dtype=np.float64)
        if qweight is None
        else np.ascontiguousarray(qweight, dtype=np.float64)
    )
    prev = np.zeros(n, dtype=np.int64) if ranking is None else ranking
    have_prev = bool(have_prev and ranking is not None)
    pred = np.ascontiguousarray(pred, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    gain = np.ascontiguousarray(gain, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    inv_max = np.ascontiguousarray(inv_max, dtype=np.float64)
    outer = int(m) if method == "topk" else 0
    if method == "mean":
        _kernel_mean(
            pred, y, gain, offsets, qw, inv_max, params, bool(order_target), float(sup),
            int(m), np.uint64(key), bool(norm), prev, have_prev, grad, hess,
        )  # fmt: skip
    elif _is_odd(params, bool(order_target)):
        _kernel_odd(
            pred, y, gain, offsets, qw, inv_max, params, outer, bool(norm), prev, have_prev,
            grad, hess,
        )  # fmt: skip
    else:
        _kernel_pairs(
            pred, y, gain, offsets, qw, inv_max, params, bool(order_target), float(sup),
            outer, bool(norm), prev, have_prev, grad, hess,
        )  # fmt: skip
    return grad, hess
