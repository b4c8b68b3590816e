r"""Numba kernel: the pairwise loss's gradient and Hessian on NumPy arrays without pair lists.

The generic pairwise path (:mod:`selrank.losses.pairwise`) enumerates every within-query pair
once per binding and keeps index, target and link arrays for all of them (about 40 bytes per
pair: 2.4 GB for an MSLR-sized set with 60 million pairs), then evaluates the link on the
whole pair array each round. This kernel walks the pairs of each query on the fly instead,
in the same order, and needs no per-pair memory.

It is restricted to the links it is tested equal to (``tests/fast/``, generated from ``selrank.fast.FAST_PATHS``; ``tests/gbdt/test_pairwise_kernel.py``): :class:`~selrank.links.Identity`, :class:`~selrank.links.Exp`,
:class:`~selrank.links.Sinh` and :class:`~selrank.links.Sigmoid` — exactly these classes,
with any ``alpha``, ``beta`` and caps (linear or flat continuation, as in
:class:`selrank._affine.Capped`). Every other link takes the generic path. For the exponential
family the link needs :math:`e^{\hat x}` with :math:`\hat x = \alpha(\hat s_a - \hat s_b - \beta)`;
the kernel factorises it as :math:`e^{\alpha(\hat s_a - m)} \cdot e^{-\alpha(\hat s_b - m)}
\cdot e^{-\alpha\beta}` (``m`` the query's mid-range score), so a query of ``n`` documents
costs ``2n`` exponentials instead of ``n(n-1)`` (queries whose score range would overflow the
factors use one exponential per pair). Results agree with the generic path to a few units in
the last place of the link values.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["pairwise_grad_hess", "pairwise_target_grad"]

from .._numba import numba
from ._links import (
    _NUMBA,
    _SAFE_EXPONENT,
    IDENTITY,
    SINH,
    _capped,
    _check_query,
    _check_rows,
)


def _kernel(
    pred, y, offsets, qweight, distinct, params, side, grad, hess, ep, iep, ey, iey
):  # pragma: no cover - jitted
    """Accumulate ``side`` 0: ``h(d_hat) - h(d)`` and ``h'(d_hat)``; 1: the prediction terms
    only; 2: the target terms ``h(d)`` only (into ``grad``, subtracted)."""
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    _check_rows(pred, y, offsets, qweight, grad, hess)
    if not (ep.size == iep.size == ey.size == iey.size):
        raise IndexError("pairwise kernel: scratch buffers of different lengths")
    odd = (kind == IDENTITY or kind == SINH) and beta == 0.0 and lo == -hi
    n_groups = offsets.size - 1
    shift = (
        math.exp(-alpha * beta) if kind != IDENTITY and abs(alpha * beta) < _SAFE_EXPONENT else 0.0
    )
    ishift = 1.0 / shift if shift > 0.0 else 0.0
    for q in range(n_groups):
        start, stop = offsets[q], offsets[q + 1]
        _check_query(start, stop, grad.size, ep.size)
        if stop - start < 2:
            continue
        w = qweight[q] if qweight.size else 1.0
        factorised = False
        if kind != IDENTITY and shift > 0.0:
            # per-row exponentials centred on the mid-range of the query (scores and targets)
            pmin, pmax = pred[start], pred[start]
            ymin, ymax = y[start], y[start]
            for r in range(start + 1, stop):
                pmin = min(pmin, pred[r])
                pmax = max(pmax, pred[r])
                ymin = min(ymin, y[r])
                ymax = max(ymax, y[r])
            if (
                alpha * (pmax - pmin) + abs(alpha * beta) < _SAFE_EXPONENT
                and alpha * (ymax - ymin) + abs(alpha * beta) < _SAFE_EXPONENT
            ):
                factorised = True
                pm = 0.5 * (pmin + pmax)
                ym = 0.5 * (ymin + ymax)
                for r in range(start, stop):
                    if side != 2:
                        ep[r - start] = math.exp(alpha * (pred[r] - pm))
                        iep[r - start] = 1.0 / ep[r - start]
                    if side != 1:
                        ey[r - start] = math.exp(alpha * (y[r] - ym))
                        iey[r - start] = 1.0 / ey[r - start]
        if side == 1 and odd and not distinct and (kind == IDENTITY or factorised):
            # the common GBDT case (an odd link on all pairs, predictions only): when no pair of
            # the query reaches the caps, the loop has no branches at all and vectorises
            pmin, pmax = pred[start], pred[start]
            for r in range(start + 1, stop):
                pmin = min(pmin, pred[r])
                pmax = max(pmax, pred[r])
            if alpha * (pmax - pmin) <= hi:
                for i in range(start, stop):
                    gi = 0.0
                    hi_sum = 0.0
                    pi = pred[i]
                    ai = ep[i - start]
                    bi = iep[i - start]
                    for j in range(i + 1, stop):
                        if kind == IDENTITY:
                            f = alpha * (pi - pred[j])
                            df = 1.0
                        else:  # SINH
                            e1 = ai * iep[j - start]
                            e2 = bi * ep[j - start]
                            f = 0.5 * (e1 - e2)
                            df = 0.5 * (e1 + e2)
                        g = f * w
                        h = alpha * df * w
                        gi += g
                        hi_sum += h
                        grad[j] -= g
                        hess[j] += h
                    grad[i] += gi
                    hess[i] += hi_sum
                continue
        for i in range(start, stop):
            # row i's sums stay in registers; row j is updated per pair
            gi = 0.0
            hi_sum = 0.0
            pi = pred[i]
            yi = y[i]
            for j in range(i + 1, stop):
                yj = y[j]
                # branch-free (labels are random, so branches would be mispredicted): m = 0 drops
                # tied pairs for pairs="distinct"; the pair (a, b) has y_a >= y_b and sgn = +1 when
                # a = i. An odd link (beta = 0, symmetric caps) gives the same sums either way.
                m = 0.0 if distinct and yi == yj else w
                sgn = -1.0 if (not odd) and yi < yj else 1.0
                up = 0.5 * (1.0 + sgn)
                g = 0.0
                if side != 2:
                    xh = alpha * (sgn * (pi - pred[j]) - beta)
                    eh = ieh = 0.0
                    if kind != IDENTITY:
                        if factorised:
                            e1 = ep[i - start] * iep[j - start]
                            e2 = iep[i - start] * ep[j - start]
                            if odd:  # beta = 0: no shift, sgn = 1
                                eh = e1
                                ieh = e2
                            else:
                                eh = (up * e1 + (1.0 - up) * e2) * shift
                                ieh = (up * e2 + (1.0 - up) * e1) * ishift
                        elif lo <= xh <= hi:  # one exponential per pair, only where needed
                            eh = math.exp(xh)
                            ieh = math.exp(-xh)
                    fh, dfh = _capped(kind, xh, eh, ieh, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
                    g = fh
                    h = alpha * dfh * m
                    hi_sum += h
                    hess[j] += h
                if side != 1:
                    xt = alpha * (sgn * (yi - yj) - beta)
                    et = iet = 0.0
                    if kind != IDENTITY:
                        if factorised:
                            e1 = ey[i - start] * iey[j - start]
                            e2 = iey[i - start] * ey[j - start]
                            et = (up * e1 + (1.0 - up) * e2) * shift
                            iet = (up * e2 + (1.0 - up) * e1) * ishift
                        elif lo <= xt <= hi:
                            et = math.exp(xt)
                            iet = math.exp(-xt)
                    ft, _ = _capped(kind, xt, et, iet, lo, hi, flat, f_lo, df_lo, f_hi, df_hi)
                    g -= ft
                g *= sgn * m
                gi += g
                grad[j] -= g
            grad[i] += gi
            hess[i] += hi_sum


if _NUMBA:
    # reassociation lets LLVM vectorise the inner loop's sums (results move by rounding only)
    _kernel = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(_kernel)


def pairwise_grad_hess(
    pred: np.ndarray,
    y: np.ndarray,
    offsets: np.ndarray,
    qweight: np.ndarray | None,
    distinct: bool,
    params: tuple,
    target_grad: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian diagonal of the pairwise loss for grouped rows (see the module docstring).

    ``pred`` and ``y`` are float64 in grouped order, ``offsets`` the query starts (int64,
    ``n_groups + 1``), ``qweight`` per-query weights or ``None``, ``params`` from
    :func:`kernel_link`. ``target_grad`` is the target side's constant part of the gradient
    (:func:`pairwise_target_grad`, computed once per binding); without it both sides are
    evaluated. Releases the GIL.
    """
    if target_grad is None:
        return _run(pred, y, offsets, qweight, distinct, params, 0)
    grad, hess = _run(pred, y, offsets, qweight, distinct, params, 1)
    grad -= target_grad
    return grad, hess


def pairwise_target_grad(
    y: np.ndarray, offsets: np.ndarray, qweight: np.ndarray | None, distinct: bool, params: tuple
) -> np.ndarray:
    """``sum over pairs of w h(d_ab)`` per row (+ for the upper, - for the lower document): the part
    of the gradient that does not change between boosting rounds."""
    grad, _ = _run(y, y, offsets, qweight, distinct, params, 2)
    return -grad


def _run(pred, y, offsets, qweight, distinct, params, side):
    if not _NUMBA:
        raise RuntimeError("the pairwise kernel needs numba: pip install 'selrank[fast]'")
    n = pred.shape[0]
    grad = np.zeros(n, dtype=np.float64)
    hess = np.zeros(n, dtype=np.float64)
    longest = int(np.max(np.diff(offsets))) if offsets.size > 1 else 0
    scratch = [np.empty(max(longest, 1), dtype=np.float64) for _ in range(4)]
    qw = (
        np.zeros(0, dtype=np.float64)
        if qweight is None
        else np.ascontiguousarray(qweight, dtype=np.float64)
    )
    _kernel(
        np.ascontiguousarray(pred, dtype=np.float64),
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(offsets),
        qw,
        bool(distinct),
        params,
        int(side),
        grad,
        hess,
        *scratch,
    )
    return grad, hess
