r"""Fused NumPy copy of the composite softmax's ``h`` and Hessian diagonal on grouped rows.

:func:`segment_softmax_h_hess` repeats the arithmetic of
:func:`selrank.scalings.composite_softmax` and :func:`~selrank.scalings.composite_softmax_hess_diag`
for NumPy scores in grouped order (the arrays of :class:`selrank.losses.Listwise`), in place and
without what the gradient does not need. It calls the scaling's own ``q_dq_Q``, so it serves
every :class:`~selrank.scalings.Scaling` (registered for subclasses in ``selrank.fast.FAST_PATHS``)
and is tested equal to the generic definition by ``tests/fast/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .._groups import Groups
    from ..scalings import Scaling

__all__ = ["segment_softmax_h_hess"]


def segment_softmax_h_hess(
    scaling: Scaling, gamma: float, z: np.ndarray, groups: Groups, hess: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """``h = q p`` and, with ``hess``, the Hessian diagonal [C.6] of the composite softmax of NumPy
    scores in grouped order: the arithmetic of :func:`~selrank.scalings.composite_softmax` and
    :func:`~selrank.scalings.composite_softmax_hess_diag` in the same order, fused in place and
    without ``log p`` and ``H``, which the gradient does not need. ``h`` is the same to the bit;
    ``1 - p`` is ``-expm1(log p)`` only where ``p > 1/2`` (at most one document per query) and
    ``1 - p`` elsewhere, exact to rounding there since it is at least 1/2 (``expm1`` over every
    document was the costliest step of a call: issue 13).
    """
    q, dq, Q = scaling.q_dq_Q(z)
    starts, sizes = groups.offsets[:-1], groups.sizes
    e = Q / gamma  # a fresh array: Q may be q itself (exp scaling)
    m = np.maximum.reduceat(e, starts)
    m[~np.isfinite(m)] = 0.0
    e -= np.repeat(m, sizes)  # shifted
    np.exp(e, out=e)
    s = np.add.reduceat(e, starts)
    p = e
    p /= np.repeat(s, sizes)
    h = q * p
    if not hess:
        return h, None
    out = 1.0 - p
    # p > 1/2 for at most one document per query, and only in a query whose shifted sum is below
    # 2 (its top document has p = 1/s): search the rows of those queries only
    few = np.flatnonzero(s < 2.0)
    if few.size:
        lens = sizes[few]
        rows = np.arange(int(lens.sum())) + np.repeat(starts[few] - (np.cumsum(lens) - lens), lens)
        near = rows[p[rows] > 0.5]
        g = groups.row_group[near]
        out[near] = -np.expm1((Q[near] / gamma - m[g]) - np.log(s)[g])
    out *= q
    out *= q
    out /= gamma
    out += dq
    out *= p
    return h, out
