r"""In-place torch copy of the composite softmax loss and gradient (the listwise head).

:func:`softmax_terms_fast` is the direct form of :func:`selrank.scalings.composite_softmax_bregman`
and the gradient :math:`q(\hat s)p(\hat s) - q(s)p(s)` on dense ``[batch, list]`` tensors
outside an autograd graph: the operations of :func:`~selrank.scalings.composite_softmax` in
the same order (so the same values), minus ``log p`` and ``q'``, with the softmax computed in
place. Lists near their target (the Taylor range of the loss) make it return None: the caller's
generic path. It calls the scaling's own ``q_dq_Q``, so it serves every
:class:`~selrank.scalings.Scaling` (``selrank.fast.FAST_PATHS``: ``composite_softmax``,
``torch``), and is tested equal to the generic definition by ``tests/fast/``.
"""

from __future__ import annotations

import math

from .._functions import bregman_threshold

__all__ = ["softmax_terms_fast"]


def _softmax_side(scaling, gamma: float, z, lists):
    """``(h, H)`` of :func:`~selrank.scalings.composite_softmax` without the rest of its dict.

    The same operations in the same order (so the same values), minus ``log p`` and ``q'``,
    with the softmax computed in place; for tensors outside an autograd graph only. The
    padded entries of ``e`` are multiplied by 0 before the sum (the general path's masked
    sum, the same products), so ``h`` is 0 there. ``lists`` is the head's
    :class:`~selrank.torch._masking.MaskedLists` (``max``, ``full``, ``weight``).
    """
    import torch

    q, _, Q = scaling.q_dq_Q(z)
    a = Q if gamma == 1.0 else Q / gamma  # x / 1.0 is x
    m = lists.max(a)
    if not math.isfinite(m.sum().item()):  # (a finite sum: every maximum is finite)
        m = torch.where(torch.isfinite(m), m, torch.zeros((), dtype=m.dtype, device=m.device))
    e = torch.sub(a, m[..., None]).exp_()
    if not lists.full:
        e.mul_(lists.weight(e.dtype))
    s = e.sum(dim=-1)
    lse = torch.log(s).add_(m)
    h = e.div_(s[..., None]).mul_(q)  # h = q * p
    return h, (lse if gamma == 1.0 else gamma * lse)


def softmax_terms_fast(scaling, gamma: float, z, y, lists, with_grad: bool):
    """The direct form of :func:`~selrank.scalings.composite_softmax_bregman` per list and
    (with ``with_grad``) the gradient, or None where a list needs its Taylor form (then the
    general path runs)."""
    import torch

    d = z - y
    if scaling.smooth:  # the largest |d| of each list (from its extremes: no |d| tensor)
        # two row reductions: torch.aminmax(d, dim=-1) takes about 12x as long on CPU
        # (0.38 ms against 0.03 ms at [131 x 1000], torch 2.13)
        lo, hi = d.amin(dim=-1), d.amax(dim=-1)
        dmax = torch.maximum(lo.neg_(), hi).amin()
        if (dmax if scaling.alpha == 1.0 else dmax * scaling.alpha).item() < bregman_threshold(
            d, torch
        ):
            return None
    h, H = _softmax_side(scaling, gamma, z, lists)
    hy, Hy = _softmax_side(scaling, gamma, y, lists)
    # hy is 0 at padding: the plain sum is the masked one
    direct = (H - Hy).sub_(d.mul_(hy).sum(dim=-1))
    values = direct.clamp_min_(0.0)
    return values, (h.sub_(hy) if with_grad else None)
