r"""Numba kernel: the pairwise loss, its gradient and Hessian over all, top-k or sampled pairs.

:func:`pairwise_sampled` serves :class:`selrank.losses.Pairwise` for ``pair_method="topk"``
and ``"mean"`` (and its loss values for every method) and the torch
:class:`~selrank.torch.PairwiseLoss` on CPU tensors: one pass per query over the selected
pairs for the loss, the gradient and the Hessian, without pair lists. The links are those of
:mod:`selrank.fast._links` (exactly :class:`~selrank.links.Identity`,
:class:`~selrank.links.Exp`, :class:`~selrank.links.Sinh`, :class:`~selrank.links.Sigmoid`),
the exponentials factorised per row as in :mod:`selrank.fast._pairwise`.

Three kernels, each compiled (or loaded from numba's disk cache) on its first call, so that a
fit compiles only the one its pair method and link use: :func:`_kernel_odd` (``"all"`` and
``"topk"`` with an odd link on all pairs: the default ``Sinh(cap=3)``),
:func:`_kernel_ranked` (``"all"`` and ``"topk"``, any link and either ``pairs``) and
:func:`_kernel_mean` (``"mean"``: sampled partners); :func:`_sampled_kernel` picks one.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MODES", "pairwise_sampled", "pairwise_list_terms"]

from .._numba import numba
from ._links import (
    _GOLDEN,
    _NUMBA,
    _SAFE_EXPONENT,
    IDENTITY,
    SINH,
    _capped,
    _capped_F,
    _check_query,
    _check_rows,
    _mix64,
    _query_exponentials,
)


def _before(a, b):  # pragma: no cover - jitted
    """Whether value ``a`` ranks strictly before ``b``: larger first, NaN last."""
    return a > b or (b != b and a == a)


def _rank_order(x):  # pragma: no cover - jitted
    """Positions of ``x`` by decreasing value, ties in position order, NaN last (a stable sort).

    Written out (insertion sort on short lists, a bottom-up merge sort otherwise) rather than
    through ``np.argsort`` / ``np.sort``: numba compiles its library sorts from a generic
    template, about 10 CPU seconds on a cold start, where these loops compile in a fraction."""
    n = x.size
    order = np.arange(n)
    if n <= 64:  # insertion sort: stable, and cheaper than a merge sort on short lists
        for i in range(1, n):
            k = order[i]
            j = i - 1
            while j >= 0 and _before(x[k], x[order[j]]):
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = k
        return order
    src = order
    dst = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(x[src[j]], x[src[i]]):  # strictly before: ties keep the left run first
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    return src


def _kth_largest(x, kk):  # pragma: no cover - jitted
    """The ``kk``-th largest value of ``x`` (no NaN; ``1 <= kk <= x.size``), through a min-heap
    of the ``kk`` largest: O(n log kk), written out for the same reason as :func:`_rank_order`."""
    heap = np.empty(kk, dtype=np.float64)
    size = 0
    for v in x:
        if size < kk:  # sift up
            c = size
            size += 1
            while c > 0 and heap[(c - 1) // 2] > v:
                heap[c] = heap[(c - 1) // 2]
                c = (c - 1) // 2
            heap[c] = v
        elif v > heap[0]:  # replace the smallest, sift down
            c = 0
            while True:
                child = 2 * c + 1
                if child >= kk:
                    break
                if child + 1 < kk and heap[child + 1] < heap[child]:
                    child += 1
                if heap[child] >= v:
                    break
                heap[c] = heap[child]
                c = child
            heap[c] = v
    return heap[0]


def _topk_order(x, kk):  # pragma: no cover - jitted
    """:func:`_rank_order`'s first ``kk`` positions, then the others in position order: all that
    the top-k pairs need (the order among documents below rank ``kk`` does not select pairs),
    in O(n log kk) instead of a full sort. Loops rather than array expressions (``-x``,
    ``np.isnan(x).any()``, ``x[top]``), which numba compiles into ufunc loops of their own:
    about 0.5 CPU s less to compile, the same positions."""
    n = x.size
    if 4 * kk >= n:
        return _rank_order(x)
    for i in range(n):
        if x[i] != x[i]:  # NaN
            return _rank_order(x)
    thr = -_kth_largest(x, kk)
    top = np.empty(kk, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    cnt = 0
    for i in range(n):
        if -x[i] < thr:
            top[cnt] = i
            cnt += 1
    rest = kk
    for i in range(n):
        if -x[i] == thr and cnt < kk:  # ties at the boundary: the earlier positions first
            top[cnt] = i
            cnt += 1
        elif -x[i] >= thr:
            out[rest] = i
            rest += 1
    xtop = np.empty(kk, dtype=np.float64)
    for r in range(kk):
        xtop[r] = x[top[r]]
    ranked = _rank_order(xtop)
    for r in range(kk):
        out[r] = top[ranked[r]]
    return out


def _pair_value(xh, xt, Fh, Ft, ft, alpha):  # pragma: no cover - jitted
    """``H(d_hat) - H(d) - (d_hat - d) h(d)`` from standardised values, clipped at 0."""
    v = (Fh - Ft - (xh - xt) * ft) / alpha
    return v if v > 0.0 else 0.0


def _pair_terms(
    params,
    F_lo,
    F_hi,
    shift,
    ishift,
    factorised,
    sgn,
    pred_i,
    pred_j,
    y_i,
    y_j,
    ep_i,
    iep_i,
    ep_j,
    iep_j,
    ey_i,
    iey_i,
    ey_j,
    iey_j,
    pred_side,
    target_side,
    with_value,
):  # pragma: no cover - jitted
    """The terms of one pair ``(i, j)`` oriented by ``sgn`` (+1: ``i`` is the upper document):
    ``(f(x_hat) - f(x), f'(x_hat), value)`` of the capped link, standardised, at
    ``x_hat = alpha (sgn (pred_i - pred_j) - beta)`` and ``x = alpha (sgn (y_i - y_j) - beta)``.
    With ``pred_side`` / ``target_side`` off that side's terms stay 0; ``value`` is
    :func:`_pair_value` when ``with_value``, else 0. The exponentials come from the query's
    factorised ones (``ep``, ``iep``, ``ey``, ``iey`` of both rows) when ``factorised``, else
    one ``exp`` per side inside the caps. Scalars only, inlined into the general pair loops
    of :func:`_kernel_ranked` and :func:`_kernel_mean`: a helper taking the arrays would cost
    reference counting per pair. (:mod:`selrank.fast._pairwise`'s ``_kernel`` loop keeps its own copy: through this
    helper it measured 1.4-1.6x slower, ``benchmarks/kernel_ab.py``.) ``params`` is :func:`kernel_link`'s tuple (a call with 30 or
    more arguments compiles to ``f(*args)``, which numba cannot inline)."""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    up = 0.5 * (1.0 + sgn)
    xh = xt = fh = dfh = ft = 0.0
    eh = ieh = et = iet = 0.0
    if pred_side:
        xh = alpha * (sgn * (pred_i - pred_j) - beta)
        if kind != IDENTITY:
            if factorised:
                e1 = ep_i * iep_j
                e2 = iep_i * ep_j
                eh = (up * e1 + (1.0 - up) * e2) * shift
                ieh = (up * e2 + (1.0 - up) * e1) * ishift
            elif lo <= xh <= hi:  # one exponential per pair, only where needed
                eh = math.exp(xh)
                ieh = math.exp(-xh)
        fh, dfh = _capped(kind, xh, eh, ieh, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
    if target_side:
        xt = alpha * (sgn * (y_i - y_j) - beta)
        if kind != IDENTITY:
            if factorised:
                e1 = ey_i * iey_j
                e2 = iey_i * ey_j
                et = (up * e1 + (1.0 - up) * e2) * shift
                iet = (up * e2 + (1.0 - up) * e1) * ishift
            elif lo <= xt <= hi:
                et = math.exp(xt)
                iet = math.exp(-xt)
        ft, _ = _capped(kind, xt, et, iet, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
    v = 0.0
    if with_value:
        v = _pair_value(
            xh,
            xt,
            _capped_F(kind, xh, eh, ieh, lo, hi, flat, F_lo, f_lo, df_lo, F_hi, f_hi, df_hi),
            _capped_F(kind, xt, et, iet, lo, hi, flat, F_lo, f_lo, df_lo, F_hi, f_hi, df_hi),
            ft,
            alpha,
        )
    return fh - ft, dfh, v


def _check_buffers(
    pred, y, offsets, qweight, values, grad, hess, ep, iep, ey, iey
):  # pragma: no cover - jitted
    """The sizes of the arrays a sampled-pairs kernel writes into, checked before it writes."""
    _check_rows(pred, y, offsets, qweight, grad, hess)
    if not (ep.size == iep.size == ey.size == iey.size):
        raise IndexError("pairwise kernel: scratch buffers of different lengths")
    if values.size != 0 and values.size != offsets.size - 1:
        raise IndexError("pairwise kernel: one loss value per query expected")


def _kernel_ranked(
    pred,
    y,
    offsets,
    qweight,
    distinct,
    params,
    fcaps,
    topk,
    m,
    values,
    grad,
    hess,
    ep,
    iep,
    ey,
    iey,
):  # pragma: no cover - jitted
    """``"all"`` (``topk`` False: every pair) and ``"topk"`` (the pairs whose better-ranked
    document by ``pred``, ties: the earlier row, is among the first ``m`` of the query, each
    unordered pair once): loss per query (into ``values`` when it has entries), gradient and
    Hessian, for any kernel link and either ``pairs``. The query is walked in ranking order,
    so the pairs of document ``r`` are a contiguous run. Each pair is oriented so that
    ``y_a >= y_b`` (ties: the earlier row first) — or not at all for an odd link, whose pair
    terms do not depend on the orientation — and its terms come from the inlined scalar
    helper :func:`_pair_terms`. ``fcaps`` holds the primitive's values at the caps
    ``(F_lo, F_hi)``. (An odd link on all pairs, the default, runs :func:`_kernel_odd`.)"""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    F_lo, F_hi = fcaps
    _check_buffers(pred, y, offsets, qweight, values, grad, hess, ep, iep, ey, iey)
    odd = (kind == IDENTITY or kind == SINH) and beta == 0.0 and lo == -hi
    shift = (
        math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE_EXPONENT else 0.0
    )
    ishift = 1.0 / shift if shift > 0.0 else 0.0
    with_values = values.size > 0
    longest = ep.size
    ps, ys, rid = np.empty(longest), np.empty(longest), np.empty(longest, dtype=np.int64)
    eps, ieps, eys, ieys = (
        np.empty(longest),
        np.empty(longest),
        np.empty(longest),
        np.empty(longest),
    )
    gs, hs = np.empty(longest), np.empty(longest)
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        _check_query(start, stop, grad.size, ep.size)
        n = stop - start
        if n < 2:
            continue
        w = qweight[q] if qweight.size else 1.0
        factorised = kind != IDENTITY and _query_exponentials(
            pred, y, start, stop, alpha, beta, shift, ep, iep, ey, iey
        )
        vq = 0.0
        if topk:
            order = _topk_order(pred[start:stop], min(m, n - 1))
            n_outer = min(m, n - 1)
        else:
            order = np.arange(n)
            n_outer = n - 1
        for s in range(n):
            o = order[s]
            rid[s] = start + o
            ps[s] = pred[start + o]
            ys[s] = y[start + o]
            if factorised:
                eps[s], ieps[s], eys[s], ieys[s] = ep[o], iep[o], ey[o], iey[o]
            gs[s] = 0.0
            hs[s] = 0.0
        for r in range(n_outer):
            gi = 0.0
            hi_sum = 0.0
            vi = 0.0
            pi, yi, ri = ps[r], ys[r], rid[r]
            for j in range(r + 1, n):
                yj = ys[j]
                mw = 0.0 if distinct and yi == yj else 1.0
                sgn = 1.0 if odd or yi > yj or (yi == yj and ri < rid[j]) else -1.0
                d, dfh, v = _pair_terms(
                    params,
                    F_lo,
                    F_hi,
                    shift,
                    ishift,
                    factorised,
                    sgn,
                    pi,
                    ps[j],
                    yi,
                    yj,
                    eps[r],
                    ieps[r],
                    eps[j],
                    ieps[j],
                    eys[r],
                    ieys[r],
                    eys[j],
                    ieys[j],
                    True,
                    True,
                    with_values and mw > 0.0,
                )
                vi += v
                g = sgn * d * mw * w
                h = alpha * dfh * mw * w
                gi += g
                hi_sum += h
                gs[j] -= g
                hs[j] += h
            gs[r] += gi
            hs[r] += hi_sum
            vq += vi
        for s in range(n):
            grad[rid[s]] += gs[s]
            hess[rid[s]] += hs[s]
        if with_values:
            values[q] = vq


def _kernel_odd(
    pred,
    y,
    offsets,
    qweight,
    params,
    topk,
    m,
    values,
    grad,
    hess,
    ep,
    iep,
    ey,
    iey,
    wide,
):  # pragma: no cover - jitted
    """:func:`_kernel_ranked` for an odd link (sinh or identity, ``beta = 0``, symmetric caps)
    and ``pairs="all"`` — the default link — and nothing else: its pair terms do not depend on
    the orientation, so the loop is branch-free and vectorisable. The exponentials are
    factorised; beyond a cap they are the constants e^(+-hi), and the capped value, slope and
    primitive follow from the clamped argument. A sinh query too wide for the factorised
    exponentials (``alpha`` times its score or target range near 600) is left untouched and
    flagged in ``wide`` (one entry per query), for :func:`_kernel_ranked`: this kernel then
    compiles without the general pair terms."""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    _check_buffers(pred, y, offsets, qweight, values, grad, hess, ep, iep, ey, iey)
    if wide.size != offsets.size - 1:
        raise IndexError("pairwise kernel: one wide flag per query expected")
    shift = (
        math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE_EXPONENT else 0.0
    )
    with_values = values.size > 0
    e_hi = math.exp(min(hi, _SAFE_EXPONENT)) if kind == SINH else 0.0
    ie_hi = 1.0 / e_hi if kind == SINH else 0.0
    longest = ep.size
    ps, ys, rid = np.empty(longest), np.empty(longest), np.empty(longest, dtype=np.int64)
    eps, ieps, eys, ieys = (
        np.empty(longest),
        np.empty(longest),
        np.empty(longest),
        np.empty(longest),
    )
    gs, hs = np.empty(longest), np.empty(longest)
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        _check_query(start, stop, grad.size, ep.size)
        n = stop - start
        if n < 2:
            continue
        w = qweight[q] if qweight.size else 1.0
        factorised = kind != IDENTITY and _query_exponentials(
            pred, y, start, stop, alpha, beta, shift, ep, iep, ey, iey
        )
        if kind != IDENTITY and not factorised:
            wide[q] = True
            continue
        vq = 0.0
        if topk:
            order = _topk_order(pred[start:stop], min(m, n - 1))
            n_outer = min(m, n - 1)
        else:
            order = np.arange(n)
            n_outer = n - 1
        pmin, pmax = pred[start], pred[start]
        ymin, ymax = y[start], y[start]
        for s in range(n):
            o = order[s]
            rid[s] = start + o
            ps[s] = pred[start + o]
            ys[s] = y[start + o]
            pmin = min(pmin, ps[s])
            pmax = max(pmax, ps[s])
            ymin = min(ymin, ys[s])
            ymax = max(ymax, ys[s])
            if factorised:
                eps[s], ieps[s], eys[s], ieys[s] = ep[o], iep[o], ey[o], iey[o]
            gs[s] = 0.0
            hs[s] = 0.0
        # every difference inside the caps (early boosting rounds): the leanest loop
        incap = not with_values and alpha * (pmax - pmin) <= hi and alpha * (ymax - ymin) <= hi
        for r in range(n_outer):
            gi = 0.0
            hi_sum = 0.0
            vi = 0.0
            pi, yi = ps[r], ys[r]
            if incap:
                a1, b1, a2, b2 = eps[r], ieps[r], eys[r], ieys[r]
                for j in range(r + 1, n):
                    if kind == IDENTITY:
                        g = alpha * ((pi - ps[j]) - (yi - ys[j])) * w
                        h = alpha * w
                    else:  # SINH, beta = 0
                        e1 = a1 * ieps[j]
                        e2 = b1 * eps[j]
                        g = 0.5 * ((e1 - e2) - (a2 * ieys[j] - b2 * eys[j])) * w
                        h = alpha * 0.5 * (e1 + e2) * w
                    gi += g
                    hi_sum += h
                    gs[j] -= g
                    hs[j] += h
            else:
                a1, b1, a2, b2 = eps[r], ieps[r], eys[r], ieys[r]
                for j in range(r + 1, n):
                    xh = alpha * (pi - ps[j])
                    xt = alpha * (yi - ys[j])
                    ch = min(max(xh, -hi), hi)
                    ct = min(max(xt, -hi), hi)
                    th = xh - ch
                    tt = xt - ct
                    if kind == IDENTITY:
                        fh, dfh, Fh = ch, 1.0, 0.5 * ch * ch
                        ft, Ft = ct, 0.5 * ct * ct
                        dft = 1.0
                    else:  # SINH: e^x inside the caps, e^(+-hi) at and beyond them
                        eh = a1 * ieps[j] if xh <= hi else e_hi
                        eh = eh if xh >= -hi else ie_hi
                        ieh = b1 * eps[j] if xh <= hi else ie_hi
                        ieh = ieh if xh >= -hi else e_hi
                        et = a2 * ieys[j] if xt <= hi else e_hi
                        et = et if xt >= -hi else ie_hi
                        iet = b2 * eys[j] if xt <= hi else ie_hi
                        iet = iet if xt >= -hi else e_hi
                        fh, dfh, Fh = 0.5 * (eh - ieh), 0.5 * (eh + ieh), 0.5 * (eh + ieh)
                        ft, dft, Ft = 0.5 * (et - iet), 0.5 * (et + iet), 0.5 * (et + iet)
                    if flat:
                        Fh += fh * th
                        Ft += ft * tt
                        dfh = dfh if th == 0.0 else 0.0
                    else:
                        Fh += (fh + 0.5 * dfh * th) * th
                        Ft += (ft + 0.5 * dft * tt) * tt
                        fh += dfh * th
                        ft += dft * tt
                    g = (fh - ft) * w
                    h = alpha * dfh * w
                    if with_values:
                        v = (Fh - Ft - (xh - xt) * ft) / alpha
                        vi += v if v > 0.0 else 0.0
                    gi += g
                    hi_sum += h
                    gs[j] -= g
                    hs[j] += h
            gs[r] += gi
            hs[r] += hi_sum
            vq += vi
        for s in range(n):
            grad[rid[s]] += gs[s]
            hess[rid[s]] += hs[s]
        if with_values:
            values[q] = vq


def _kernel_mean(
    pred,
    y,
    offsets,
    qweight,
    distinct,
    params,
    fcaps,
    m,
    key,
    ysort,
    blo,
    bhi,
    values,
    grad,
    hess,
    ep,
    iep,
    ey,
    iey,
):  # pragma: no cover - jitted
    """``"mean"``: ``m`` partners per document, drawn uniformly from the other documents of
    the query with stream ``key`` (``distinct``: from those with a different target, found
    through the target order ``ysort`` and each row's run of equal targets ``[blo, bhi)`` in
    it); loss per query (into ``values`` when it has entries), gradient and Hessian. Pairs
    oriented as in :func:`_kernel_ranked`."""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    F_lo, F_hi = fcaps
    _check_buffers(pred, y, offsets, qweight, values, grad, hess, ep, iep, ey, iey)
    if distinct and not (ysort.size == blo.size == bhi.size == grad.size):
        raise IndexError("pairwise kernel: target runs of another length than the rows")
    odd = (kind == IDENTITY or kind == SINH) and beta == 0.0 and lo == -hi
    shift = (
        math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE_EXPONENT else 0.0
    )
    ishift = 1.0 / shift if shift > 0.0 else 0.0
    with_values = values.size > 0
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        _check_query(start, stop, grad.size, ep.size)
        n = stop - start
        if n < 2:
            continue
        w = qweight[q] if qweight.size else 1.0
        factorised = kind != IDENTITY and _query_exponentials(
            pred, y, start, stop, alpha, beta, shift, ep, iep, ey, iey
        )
        vq = 0.0
        for i in range(start, stop):  # m draws per document
            lo_run = blo[i] if distinct else 0
            run = bhi[i] - lo_run if distinct else 1
            if lo_run < 0 or run < 0 or lo_run + run > n:  # ysort reads stay in the query
                raise IndexError("pairwise kernel: target runs outside their query")
            c = n - run
            if c <= 0:
                continue
            cu = np.uint64(c)
            yi = y[i]
            pi = pred[i]
            gi = 0.0
            hi_sum = 0.0
            for s in range(m):
                u = _mix64(key + np.uint64(i * m + s) * _GOLDEN)
                t = np.int64(u % cu)
                if distinct:
                    j = ysort[start + (t if t < lo_run else t + run)]
                else:
                    j = start + (t if t < i - start else t + 1)
                if j < start or j >= stop:  # ysort / runs from another grouping
                    raise IndexError("pairwise kernel: sampled partner outside its query")
                yj = y[j]
                mw = 0.0 if distinct and yi == yj else 1.0
                # sgn = +1 when i is the pair's upper document a
                sgn = 1.0 if odd or yi > yj or (yi == yj and i < j) else -1.0
                d, dfh, v = _pair_terms(
                    params,
                    F_lo,
                    F_hi,
                    shift,
                    ishift,
                    factorised,
                    sgn,
                    pi,
                    pred[j],
                    yi,
                    yj,
                    ep[i - start],
                    iep[i - start],
                    ep[j - start],
                    iep[j - start],
                    ey[i - start],
                    iey[i - start],
                    ey[j - start],
                    iey[j - start],
                    True,
                    True,
                    with_values and mw > 0.0,
                )
                vq += v
                g = sgn * d * mw * w
                h = alpha * dfh * mw * w
                gi += g
                hi_sum += h
                grad[j] -= g
                hess[j] += h
            grad[i] += gi
            hess[i] += hi_sum
        if with_values:
            values[q] = vq


def _is_odd(params: tuple) -> bool:
    """Whether the link is odd in the pair terms' sense (sinh or identity, ``beta = 0``,
    symmetric caps): the condition of :func:`_kernel_odd`, as the kernels test it."""
    kind, _, beta, lo, hi = params[:5]
    return (kind == IDENTITY or kind == SINH) and beta == 0.0 and lo == -hi


def _sampled_kernel(
    pred,
    y,
    offsets,
    qweight,
    distinct,
    params,
    fcaps,
    mode,
    m,
    key,
    ysort,
    blo,
    bhi,
    values,
    grad,
    hess,
    ep,
    iep,
    ey,
    iey,
):
    """The kernel of pair method ``mode`` (:data:`MODES`: 0 every pair, 1 top-k, 2 mean) and
    link: :func:`_kernel_mean`, :func:`_kernel_odd` (ranked, an odd link on all pairs) or
    :func:`_kernel_ranked` (ranked, any other), each compiled (or loaded from numba's disk
    cache) on its first call, so that a fit compiles only the one it uses. Plain Python; the
    arrays as the kernels take them (``key``, ``ysort``, ``blo``, ``bhi`` read by ``"mean"``
    only). The rare query too wide for :func:`_kernel_odd`'s factorised exponentials goes
    through :func:`_kernel_ranked` on its own, as it did within the one kernel before."""
    if mode == 2:
        _kernel_mean(
            pred, y, offsets, qweight, distinct, params, fcaps, m, key, ysort, blo, bhi,
            values, grad, hess, ep, iep, ey, iey,
        )  # fmt: skip
        return
    topk = mode == 1
    if distinct or not _is_odd(params):
        _kernel_ranked(
            pred, y, offsets, qweight, distinct, params, fcaps, topk, m, values, grad, hess,
            ep, iep, ey, iey,
        )  # fmt: skip
        return
    wide = np.zeros(max(offsets.size - 1, 0), dtype=np.bool_)
    _kernel_odd(
        pred, y, offsets, qweight, params, topk, m, values, grad, hess, ep, iep, ey, iey, wide
    )
    for q in np.flatnonzero(wide):  # (its rows untouched by _kernel_odd)
        start, stop = int(offsets[q]), int(offsets[q + 1])
        _kernel_ranked(
            pred[start:stop], y[start:stop], np.array([0, stop - start], dtype=np.int64),
            qweight[q : q + 1] if qweight.size else qweight, distinct, params, fcaps, topk, m,
            values[q : q + 1] if values.size else values, grad[start:stop], hess[start:stop],
            ep, iep, ey, iey,
        )  # fmt: skip


if _NUMBA:
    _before = numba.njit(inline="always")(_before)
    _rank_order = numba.njit(_rank_order)
    _kth_largest = numba.njit(_kth_largest)
    _topk_order = numba.njit(_topk_order)
    _pair_value = numba.njit(inline="always")(_pair_value)
    _pair_terms = numba.njit(inline="always")(_pair_terms)
    _check_buffers = numba.njit(_check_buffers)
    # one kernel per pair method and link family, each compiled on its first call;
    # reassociation lets LLVM vectorise the sums (results move by rounding only)
    _kernel_ranked = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(
        _kernel_ranked
    )
    _kernel_odd = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(_kernel_odd)
    _kernel_mean = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(
        _kernel_mean
    )


MODES = {"all": 0, "topk": 1, "mean": 2}


def pairwise_sampled(
    pred: np.ndarray,
    y: np.ndarray,
    offsets: np.ndarray,
    qweight: np.ndarray | None,
    distinct: bool,
    params: tuple,
    method: str,
    m: int = 0,
    key: int | np.integer = 0,
    runs: tuple | None = None,
    fcaps: tuple | None = None,
) -> tuple[np.ndarray, ...]:
    """Gradient and Hessian diagonal (and, with ``fcaps`` from :func:`kernel_fcaps`, the loss
    of each query) over the pairs of ``method``.

    ``"all"``: every pair (as :func:`pairwise_grad_hess`, plus the loss values); ``"topk"``: the
    pairs whose better-ranked document by ``pred`` (ties: the earlier row) is among the first
    ``m`` of its query; ``"mean"``: ``m`` partners per document drawn with ``key``
    (:func:`draw_key`), ``runs = (ysort, blo, bhi)`` from
    :func:`selrank.losses.pairwise.target_runs` when ``distinct``. Other arguments as
    :func:`pairwise_grad_hess`. Returns ``(grad, hess)`` or ``(grad, hess, values)``.
    """
    if not _NUMBA:
        raise RuntimeError("the pairwise kernel needs numba: pip install 'selrank[fast]'")
    n = pred.shape[0]
    grad = np.zeros(n, dtype=np.float64)
    hess = np.zeros(n, dtype=np.float64)
    values = np.zeros(offsets.size - 1 if fcaps is not None else 0, dtype=np.float64)
    longest = int(np.max(np.diff(offsets))) if offsets.size > 1 else 0
    scratch = [np.empty(max(longest, 1), dtype=np.float64) for _ in range(4)]
    qw = (
        np.zeros(0, dtype=np.float64)
        if qweight is None
        else np.ascontiguousarray(qweight, dtype=np.float64)
    )
    empty = np.zeros(0, dtype=np.int64)
    ysort, blo, bhi = (
        (empty, empty, empty)
        if runs is None
        else (np.ascontiguousarray(r, dtype=np.int64) for r in runs)
    )
    _sampled_kernel(
        np.ascontiguousarray(pred, dtype=np.float64),
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        qw,
        bool(distinct),
        params,
        (0.0, 0.0) if fcaps is None else tuple(float(v) for v in fcaps),
        MODES[method],
        int(m),
        np.uint64(key),
        ysort,
        blo,
        bhi,
        values,
        grad,
        hess,
        *scratch,
    )
    return (grad, hess) if fcaps is None else (grad, hess, values)


def pairwise_list_terms(
    pred: np.ndarray,
    y: np.ndarray,
    sizes: np.ndarray,
    params: tuple,
    fcaps: tuple,
    distinct: bool,
    method: str,
    m: int,
    key: int | np.integer = 0,
    runs: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Loss per list and gradient per item of the pairwise loss over lists laid end to end
    (the torch :class:`~selrank.torch.PairwiseLoss` on CPU tensors, gathered by the head):
    :func:`pairwise_sampled` with the loss values, for ``sizes`` items per list. ``pred`` and
    ``y`` float64; ``params`` from :func:`~selrank.fast._links.kernel_link`, ``fcaps`` from
    :func:`~selrank.fast._links.kernel_fcaps`; ``method``, ``m``, ``key`` and ``runs`` as
    :func:`pairwise_sampled`. Time O(pairs), memory O(items): no pair array is built."""
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    g, _, v = pairwise_sampled(
        pred, y, offsets, None, distinct, params, method, m, key, runs, fcaps
    )
    return v, g
