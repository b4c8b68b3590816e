r"""In-place torch copy of an affine link's matching loss and gradient (the pointwise head).

:func:`bregman_grad_torch` is :meth:`selrank.links.Link.bregman_grad` — ``(bregman(z_hat, z),
h(z_hat) - h(z))`` — for the affine links (:class:`selrank.links._AffineLink` and its
subclasses that keep the generic :meth:`~selrank.links.Link.bregman`), on tensors of one
floating dtype, with its temporaries written in place: one ``(f, f', F)`` evaluation per
argument gives ``H``, ``h`` and ``h'`` (the exp link: 2 exponentials per item instead of 7),
in the order of operations of :meth:`~selrank.links.Link.bregman`, so the same values. Scores
beyond the caps take the generic path. Registered in ``selrank.fast.FAST_PATHS``
(``bregman_grad``, ``torch``) and tested equal to the generic definition by ``tests/fast/``.
"""

from __future__ import annotations

import math

from .. import _array as A
from .._functions import bregman_threshold
from ..links import Link

__all__ = ["bregman_grad_torch"]


def bregman_grad_torch(link, z_hat, z):
    """``link.bregman_grad(z_hat, z)`` on tensors of one floating dtype, its temporaries in
    place; None where the arguments are not such tensors (the caller's generic path)."""
    import torch

    if not (
        A.is_torch(z_hat) and A.is_torch(z) and z_hat.dtype == z.dtype and z_hat.is_floating_point()
    ):
        return None
    plain = link.alpha == 1.0 and link.beta == 0.0
    xh = z_hat if plain else link.alpha * (z_hat - link.beta)
    x = z if plain else link.alpha * (z - link.beta)
    if not (link.inside_caps(xh) and link.inside_caps(x)):
        return Link.bregman_grad(link, z_hat, z)
    xp = A.get_namespace(xh)
    fh, dfh, Fh = link.exact_triple(xh, xp)
    f, df, F = link.exact_triple(x, xp)
    d = z_hat - z
    grad = fh - f
    if link.alpha == 1.0:
        # F is f (the exp link): F̂ - F is the gradient already computed
        diff = grad if (Fh is fh and F is f) else Fh - F
    else:
        diff = Fh / link.alpha - F / link.alpha
    direct = d * f
    direct = torch.sub(diff, direct, out=direct)  # diff - d * f
    if link.smooth:
        # (f̂, F̂ are used: the midpoint derivative may overwrite f̂')
        direct = _taylor_near(link, direct, d, z, dfh, df, bregman_threshold(d, xp))
        if direct is None:  # a value is not finite: bregman() itself
            return Link.bregman(link, z_hat, z), grad
    return direct.clamp_min_(0.0), grad


def _taylor_near(link, direct, d, z, dfh, df, thr: float):
    """``direct`` with the Taylor form of :meth:`~selrank.links.Link.bregman` at the near pairs.

    The near pairs are selected by a 0/1 factor and ``lerp`` (exact at weights 0 and 1
    for finite values) instead of a boolean mask or their indices: on CPU a boolean
    select, ``nonzero`` or indexing costs several float passes, more than evaluating
    the midpoint derivative at every item (at ``ds = 0`` away from the near pairs).
    The operations on the near pairs are those of :meth:`~selrank.links.Link.bregman`, except
    that links whose ``f'`` is an exponential take ``f'`` at the midpoint as the geometric mean
    of ``f'`` at both ends (:meth:`~selrank._functions.ExpFunction._df_midpoint`; equal to
    a few ulps, no third exponential). Temporaries are written in place (``direct``,
    ``d``, and for those links ``dfh`` and ``df``, this call's own exponentials); None
    where a value is not finite (``lerp`` would have met ``inf · 0``), for the caller
    to take :meth:`~selrank.links.Link.bregman`.
    """
    import torch

    mid = link._df_midpoint if "_df_midpoint" in link.hooks else None
    dfs = df if link.alpha == 1.0 else link.alpha * df
    if mid is not None:
        # the midpoint term first (h'(z) + 2 h'(mid), into f̂'), then |d| into f''s memory
        dh = torch.add(dfs, mid(dfh, df), alpha=2.0 * link.alpha, out=dfh)
        sel = torch.abs(d, out=df)
    else:
        sel = d.abs()
    if link.taylor_scale != 1.0:
        sel.mul_(link.taylor_scale)
    sel = A.less_as_float(sel, thr, inplace=True)
    if not sel.amax().item() > 0:
        return direct
    ds = d.mul_(sel)  # d at the near pairs, 0 elsewhere (d is finite inside the caps)
    if mid is None:
        dh = link.dh(z + 0.5 * ds)
        dh = torch.add(dfs, dh, alpha=2.0, out=dh)  # h'(z) + 2 h'(z + ds / 2)
    near = ds.mul_(ds).div_(6.0).mul_(dh)  # (ds² / 6) (h'(z) + 2 h'(z + ds / 2))
    direct.lerp_(near, sel)
    # a finite result: every input of lerp was finite, so it selected exactly
    return direct if math.isfinite(direct.sum().item()) else None
