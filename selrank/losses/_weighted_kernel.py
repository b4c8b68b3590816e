r"""Numba kernel of :class:`selrank.losses.weighted_pairwise.WeightedPairwise` (grouped NumPy rows).

Per query: the current ranking (a stable sort by decreasing score, as LightGBM's), the
:math:`|\Delta\mathrm{NDCG}|` weight of each selected pair from the ranks, the link's capped
value and slope at the predicted difference (the exponentials factorised per row as in
:mod:`selrank.losses._kernels`: ``2n`` per query instead of one per pair), and LightGBM's
``lambdarank_norm``. It covers the links of :func:`selrank.losses._kernels.kernel_link` and is
tested equal to the generic NumPy path (``tests/test_h21_weighted_pairwise.py``). numba is
imported and the kernel compiled on first use.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["weighted_pairwise"]

IDENTITY, EXP, SINH, SIGMOID = 0, 1, 2, 3  # as selrank.losses._kernels
_SAFE = 600.0
_MODES = {"all": 0, "topk": 1, "mean": 2}
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix(x):  # pragma: no cover - jitted; splitmix64's output (selrank.losses._kernels.mix64)
    x = x ^ (x >> _S30)
    x = x * _MIX1
    x = x ^ (x >> _S27)
    x = x * _MIX2
    return x ^ (x >> _S31)


def _link(kind, x, e, ie, lo, hi, flat, f_lo, df_lo, f_hi, df_hi):  # pragma: no cover - jitted
    """Capped standardised link value and slope at ``x`` (``e = exp(x)``, ``ie = exp(-x)``)."""
    if x > hi:
        return (f_hi, 0.0) if flat else (f_hi + df_hi * (x - hi), df_hi)
    if x < lo:
        return (f_lo, 0.0) if flat else (f_lo + df_lo * (x - lo), df_lo)
    if kind == IDENTITY:
        return x, 1.0
    if kind == EXP:
        return e, e
    if kind == SINH:
        return 0.5 * (e - ie), 0.5 * (e + ie)
    p = e / (1.0 + e) if e <= 1.0 else 1.0 / (1.0 + ie)
    q = 1.0 / (1.0 + e) if e <= 1.0 else ie / (1.0 + ie)
    return p, p * q


def _pair(
    params, sup, order_target, w, dp, dy, epa, iepa, epb, iepb, fact, shift, ishift
):  # pragma: no cover - jitted
    """Weighted gradient term and Hessian term of one oriented pair (upper minus lower)."""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    xh = alpha * (dp - beta)
    e = ie = 0.0
    if kind != IDENTITY:
        if fact:
            e = epa * iepb * shift
            ie = iepa * epb * ishift
        elif lo <= xh <= hi:
            e = math.exp(xh)
            ie = math.exp(-xh)
    f, df = _link(kind, xh, e, ie, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
    if order_target:
        ft = sup
    else:
        xt = alpha * (dy - beta)
        et = iet = 0.0
        if kind != IDENTITY and lo <= xt <= hi:
            et = math.exp(xt)
            iet = math.exp(-xt)
        ft, _ = _link(kind, xt, et, iet, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
    return w * (f - ft), w * alpha * df


def _kernel(
    pred,
    y,
    gain,
    offsets,
    qweight,
    inv_max,
    params,
    order_target,
    sup,
    mode,
    m,
    key,
    norm,
    grad,
    hess,
):  # pragma: no cover - jitted
    kind, alpha, beta = params[0], params[1], params[2]
    longest = 1
    for q in range(offsets.size - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    disc = np.empty(longest)
    for r in range(longest):
        disc[r] = 1.0 / math.log2(r + 2.0)
    ps, ys, gs = np.empty(longest), np.empty(longest), np.empty(longest)
    ep, iep = np.empty(longest), np.empty(longest)
    ga, ha = np.empty(longest), np.empty(longest)
    rid = np.empty(longest, dtype=np.int64)
    pos = np.empty(longest, dtype=np.int64)
    shift = math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE else 0.0
    ishift = 1.0 / shift if shift > 0.0 else 0.0
    for q in range(offsets.size - 1):
        start, stop = offsets[q], offsets[q + 1]
        n = stop - start
        if n < 2:
            continue
        order = np.argsort(-pred[start:stop], kind="mergesort")  # stable: ties keep row order
        for s in range(n):
            o = order[s]
            rid[s] = start + o
            pos[o] = s
            ps[s] = pred[start + o]
            ys[s] = y[start + o]
            gs[s] = gain[start + o]
            ga[s] = 0.0
            ha[s] = 0.0
        spread = ps[0] != ps[n - 1]
        fact = False
        if (
            kind != IDENTITY
            and shift > 0.0
            and alpha * (ps[0] - ps[n - 1]) + abs(alpha * beta) < _SAFE
        ):
            fact = True
            mid = 0.5 * (ps[0] + ps[n - 1])
            for s in range(n):
                ep[s] = math.exp(alpha * (ps[s] - mid))
                iep[s] = 1.0 / ep[s]
        inv = inv_max[q]
        total = 0.0
        if mode != 2:
            n_outer = min(m, n - 1) if mode == 1 else n - 1
            for r in range(n_outer):
                yr, pr, gr, dr = ys[r], ps[r], gs[r], disc[r]
                gi = 0.0
                hsum = 0.0
                for s in range(r + 1, n):
                    ysv = ys[s]
                    if yr == ysv:
                        continue
                    w = abs(gr - gs[s]) * (dr - disc[s]) * inv
                    if yr > ysv:
                        dp = pr - ps[s]
                        if norm and spread:
                            w /= 0.01 + abs(dp)
                        g, h = _pair(
                            params, sup, order_target, w, dp, yr - ysv,
                            ep[r], iep[r], ep[s], iep[s], fact, shift, ishift,
                        )  # fmt: skip
                        gi += g
                        ga[s] -= g
                    else:
                        dp = ps[s] - pr
                        if norm and spread:
                            w /= 0.01 + abs(dp)
                        g, h = _pair(
                            params, sup, order_target, w, dp, ysv - yr,
                            ep[s], iep[s], ep[r], iep[r], fact, shift, ishift,
                        )  # fmt: skip
                        gi -= g
                        ga[s] += g
                    hsum += h
                    ha[s] += h
                    total += 2.0 * abs(g)
                ga[r] += gi
                ha[r] += hsum
        else:  # "mean": m partners per document, uniform over the other rows (Pairwise's draws)
            for i in range(start, stop):
                pi = i - start
                si = pos[pi]
                for t in range(m):
                    u = _mix(key + np.uint64(i * m + t) * _GOLDEN)
                    c = np.int64(u % np.uint64(n - 1))
                    pj = c if c < pi else c + 1
                    sj = pos[pj]
                    if ys[si] == ys[sj]:
                        continue
                    a, b = (si, sj) if ys[si] > ys[sj] else (sj, si)
                    w = abs(gs[a] - gs[b]) * abs(disc[a] - disc[b]) * inv
                    dp = ps[a] - ps[b]
                    if norm and spread:
                        w /= 0.01 + abs(dp)
                    g, h = _pair(
                        params, sup, order_target, w, dp, ys[a] - ys[b],
                        ep[a], iep[a], ep[b], iep[b], fact, shift, ishift,
                    )  # fmt: skip
                    ga[a] += g
                    ga[b] -= g
                    ha[a] += h
                    ha[b] += h
                    total += 2.0 * abs(g)
        factor = math.log2(1.0 + total) / total if norm and total > 0.0 else 1.0
        if qweight.size:
            factor *= qweight[q]
        for s in range(n):
            grad[rid[s]] = ga[s] * factor
            hess[rid[s]] = ha[s] * factor


_compiled = None


def _compile():
    global _compiled
    if _compiled is None:
        import numba

        jit = numba.njit(inline="always")
        g = globals()
        g["_mix"] = jit(_mix)
        g["_link"] = jit(_link)
        g["_pair"] = jit(_pair)
        _compiled = numba.njit(nogil=True, cache=True)(_kernel)
    return _compiled


def weighted_pairwise(
    pred, y, gain, offsets, qweight, inv_max, params, order_target, sup, method, m, key, norm
):
    """Gradient and Hessian diagonal (grouped order) of the weighted pairwise loss.

    ``pred``, ``y``, ``gain`` float64 in grouped order; ``offsets`` the query starts;
    ``qweight`` per-query weights or ``None``; ``inv_max`` ``1 / maxDCG`` per query;
    ``params`` from :func:`selrank.losses._kernels.kernel_link`; ``order_target`` with ``sup``
    the link's supremum; ``method`` ``"all"``, ``"topk"`` (``m`` = k) or ``"mean"`` (``m``
    partners, draw ``key``); ``norm`` LightGBM's ``lambdarank_norm``.
    """
    n = pred.shape[0]
    grad = np.zeros(n, dtype=np.float64)
    hess = np.zeros(n, dtype=np.float64)
    qw = (
        np.zeros(0, dtype=np.float64)
        if qweight is None
        else np.ascontiguousarray(qweight, dtype=np.float64)
    )
    _compile()(
        np.ascontiguousarray(pred, dtype=np.float64),
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(gain, dtype=np.float64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        qw,
        np.ascontiguousarray(inv_max, dtype=np.float64),
        params,
        bool(order_target),
        float(sup),
        _MODES[method],
        int(m),
        np.uint64(key),
        bool(norm),
        grad,
        hess,
    )
    return grad, hess
