r"""The computations the heads share: per-item loss terms and closed-form gradients on padded
``[batch, list]`` tensors (pointwise, composite softmax, pairwise), each calling the core for
all link and scaling maths.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ... import _array as A
from ... import fast
from ..._groups import Groups
from ..._numba import installed as _numba_installed
from ...links import Link
from ...losses import (
    Pairwise,
)
from ...losses.listwise import link_target_lists
from ...losses.pairwise import target_runs
from ...scalings import Scaling, composite_softmax, composite_softmax_bregman
from .._masking import (
    MaskedLists,
)

# ======================================================================================
# The three computations, shared by the heads (each calls the core for all link maths)
# ======================================================================================


def pointwise_terms(
    link: Link, target: str, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists, with_grad: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-item matching loss ``L(ŝ, s)`` and gradient ``h(ŝ) − h(s)`` (or ``h(ŝ) − y``)."""
    if target == "score":
        link.check_domain(y, "y_true")
        if not with_grad:
            return link.bregman(z, y), None
        quick = fast_bregman_grad(link, z, y)
        values, grad = link.bregman_grad(z, y) if quick is None else quick
    else:
        link.check_range(y, "y_true")
        values = link.bregman_link_target(z, y)
        grad = link.h(z) - y if with_grad else None
    # padded slots hold copies of real items; the backward of neutralize() discards their
    # gradient, so it needs no mask here (list sums do: see softmax_terms, pairwise_terms)
    return values, grad


def fast_bregman_grad(link: Link, z, y):
    """``link.bregman_grad(z, y)`` through :mod:`selrank.fast`, or None (the link's own path):
    the numba pass of the exp link on CPU tensors, else the in-place torch copy of the affine
    links. The pointwise head's one dispatch decision; no warning, since a link without these
    paths has its own ``bregman`` or a generic one that no copy would make faster."""
    for backend in ("numba", "torch"):
        path = fast.lookup(link, "bregman_grad", backend, warn=False)
        if path is not None:
            out = path.load()(link, z, y)
            if out is not None:
                return out
    return None


def softmax_terms(
    scaling: Scaling,
    gamma: float,
    target: str,
    z: torch.Tensor,
    y: torch.Tensor,
    lists: MaskedLists,
    with_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-list composite softmax loss [29] and gradient ``q(ŝ)p(ŝ) − q(s)p(s)`` [30].

    Scores far beyond the scaling's cap (``|ŝ|`` about 1e20 in float32) overflow the
    primitive :math:`Q` of a linearly continued scaling, and the softmax of an infinite
    logit is NaN. The lists where that happens are evaluated again in float64 (where the
    same scores stay finite) and the gradient is brought back clamped to the dtype's finite
    range: finite gradients (the loss itself may exceed the dtype and read ``inf``), for one
    extra reduction over the gradient (or the values) when nothing overflows. A NaN (or
    infinite) score gives NaN in float64 as well, and stays NaN.
    """
    values, grad = _softmax_terms(scaling, gamma, target, z, y, lists, with_grad)
    check = grad if with_grad else values
    if z.dtype == torch.float64 or math.isfinite(check.sum().item()):
        return values, grad
    bad = ~torch.isfinite(check)
    if bad.dim() > 1:
        bad = bad.any(dim=-1)
    sub = MaskedLists(lists.mask[bad], full=lists.full, neutralized=lists.neutralized)
    v64, g64 = _softmax_terms(
        scaling, gamma, target, z[bad].double(), y[bad].double(), sub, with_grad
    )
    (rows,) = torch.nonzero(bad, as_tuple=True)
    if with_grad:
        big = torch.finfo(z.dtype).max
        # clamped into the dtype's range; a NaN stays NaN (a NaN or infinite score at a real
        # item gives a NaN gradient in float64 too: float32 must not hide it as 0)
        g64 = g64.clamp(-big, big)
        return values.index_put((rows,), v64.to(z.dtype)), grad.index_put((rows,), g64.to(z.dtype))
    # through autograd: the overflowing lists leave the float32 graph (their NaN partials
    # would reach the other lists' gradient through 0 * NaN), the rest is evaluated again
    safe = torch.where(bad[:, None], torch.zeros((), dtype=z.dtype, device=z.device), z)
    values, _ = _softmax_terms(scaling, gamma, target, safe, y, lists, False)
    return values.index_put((rows,), v64.to(z.dtype)), None


def _softmax_terms(scaling, gamma: float, target: str, z, y, lists: MaskedLists, with_grad: bool):
    if target == "score" and not (z.requires_grad and torch.is_grad_enabled()):
        # the in-place copy of selrank.fast, or None where a list needs the Taylor form
        path = fast.lookup(scaling, "composite_softmax", "torch")
        quick = None if path is None else path.load()(scaling, gamma, z, y, lists, with_grad)
        if quick is not None:
            return quick
    parts = composite_softmax(scaling, gamma, z, lists)
    if target == "score":
        parts_y = composite_softmax(scaling, gamma, y, lists)
        values = composite_softmax_bregman(scaling, gamma, z, y, lists, parts, parts_y)
        hy = parts_y["h"]
    else:
        valid = lists.valid
        rows = valid.any(dim=-1)
        link_target_lists(y[rows], MaskedLists(valid[rows]).sum, scaling.alpha, "list")
        pi = y / scaling.alpha
        values = gamma * lists.sum(A.xlogx(pi) - pi * parts["logp"])
        hy = y
    # padded items are left out of every list sum (p = 0 for them); their own gradient
    # entries are discarded by the backward of neutralize()
    return values, (parts["h"] - hy if with_grad else None)


def is_odd(link: Link) -> bool:
    """``h(−z) = −h(z)`` on a grid reaching far beyond any cap (checked, not assumed)."""
    z = np.concatenate([np.linspace(-60.0, 60.0, 1201), np.geomspace(1e-6, 1e6, 61)])
    with np.errstate(all="ignore"):
        hp = np.asarray(A.to_numpy(link.h(z)), dtype=np.float64)
        hm = np.asarray(A.to_numpy(link.h(-z)), dtype=np.float64)
    ok = np.isfinite(hp) & np.isfinite(hm)
    return bool(np.all(ok) and np.allclose(hm, -hp, rtol=1e-12, atol=1e-12))


_PAIR_INDEX: dict = {}


def _upper_pairs(L: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices ``(i, j)``, ``i < j``, of all pairs of a list of length ``L`` (cached)."""
    key = (L, str(device))
    hit = _PAIR_INDEX.get(key)
    if hit is None:
        ij = torch.triu_indices(L, L, 1, device=device)
        hit = _PAIR_INDEX[key] = (ij[0].contiguous(), ij[1].contiguous())
    return hit


def pairwise_terms(
    link: Link,
    odd: bool,
    distinct: bool,
    z: torch.Tensor,
    y: torch.Tensor,
    lists: MaskedLists,
    with_grad: bool,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    r"""Per-list pairwise matching loss and per-document gradient on dense lists.

    Every unordered pair of real items is evaluated once (upper triangle, ``i < j``) and
    oriented so that its target difference :math:`d = s_a - s_b \ge 0` (ties keep the earlier
    item first), as :class:`selrank.losses.Pairwise` does; for an odd link the orientation
    does not change the pair's loss or its gradient, and is skipped. Pair gradients
    :math:`h(\hat d) - h(d)` are accumulated onto both items with ``index_add``. Lists are
    processed about ``chunk`` pairs at a time to bound memory.
    """
    n, L = z.shape
    if L < 2:
        return torch.zeros(n, dtype=z.dtype, device=z.device), (
            torch.zeros_like(z) if with_grad else None
        )
    I, J = _upper_pairs(L, z.device)
    P = I.numel()
    # 0/1 float pair weights and +-1 orientation signs: inputs are finite everywhere
    # (neutralized), so products replace the slower boolean selections
    w = None if lists.full else lists.weight(z.dtype)
    step = max(1, chunk // max(P, 1))
    vals, grads = [], []
    for s in range(0, n, step):
        zc, yc = z[s : s + step], y[s : s + step]
        dz = zc.index_select(-1, I) - zc.index_select(-1, J)
        dy = yc.index_select(-1, I) - yc.index_select(-1, J)
        sel = (
            None
            if w is None
            else w[s : s + step].index_select(-1, I) * w[s : s + step].index_select(-1, J)
        )
        if distinct:
            differ = torch.sign(dy).abs()
            sel = differ if sel is None else sel * differ
        sign = None
        if not odd:  # orient each pair so that dy >= 0; ties (dy = +0) keep i before j
            sign = torch.copysign(torch.ones_like(dy), dy)
            dz, dy = dz * sign, dy * sign
        pair = link.bregman(dz, dy)
        vals.append((pair if sel is None else pair * sel).sum(dim=-1))
        if with_grad:
            G = link.h(dz) - link.h(dy)
            if sel is not None:
                G = G * sel
            if sign is not None:
                G = G * sign
            g = torch.zeros(zc.shape, dtype=z.dtype, device=z.device)
            grads.append(g.index_add_(-1, I, G).index_add_(-1, J, G, alpha=-1))
    values = torch.cat(vals)
    return values, (torch.cat(grads) if with_grad else None)


def _valid_items(x, lists: MaskedLists):
    """The real items of ``x`` ``[batch, list]``, list by list (a view when there is no padding)."""
    return x.reshape(-1) if lists.full else x[lists.valid]


def _scatter_items(flat, like, lists: MaskedLists):
    """Per-item values of the real items back onto a ``[batch, list]`` tensor (0 at padding)."""
    if lists.full:
        return flat.reshape(like.shape)
    return torch.zeros_like(like).masked_scatter(lists.valid, flat)


def _list_sizes(lists: MaskedLists, shape) -> np.ndarray:
    if lists.full:
        return np.full(shape[0], shape[1], dtype=np.int64)
    return lists.valid.sum(dim=-1).cpu().numpy().astype(np.int64)


def pairwise_kernel_params(link: Link) -> tuple | None:
    """The pairwise numba kernel's parameters for ``link`` (:mod:`selrank.fast`), or None: the
    pairwise head's one dispatch decision on the link (numba installed, a registered class; a
    link without the kernel is reported once, :class:`selrank.fast.FastPathWarning`)."""
    # numba is imported when the kernel first runs (the kernel policy, selrank._numba.use_kernel)
    if not _numba_installed() or fast.lookup(link, "pairwise", "numba") is None:
        return None
    return fast.kernel_link(link)


def pairwise_kernel_terms(
    core: Pairwise,
    params: tuple,
    fcaps: tuple,
    draw: int,
    z: torch.Tensor,
    y: torch.Tensor,
    lists: MaskedLists,
    with_grad: bool,
    sizes: np.ndarray | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    r""":func:`pairwise_terms` on the CPU through the numba kernel (:func:`selrank.fast.pairwise_list_terms`).

    The real items are gathered list by list into flat float64 arrays, the kernel walks each
    list's selected pairs (``core.pair_method``) once for the loss, gradient and Hessian, and
    the gradient is scattered back: time O(pairs), memory O(batch × list) — no pair tensor
    is built. ``draw`` numbers the ``"mean"`` draw (:func:`selrank.fast.draw_key`).
    ``sizes``: the real items per list, where the caller has them already.
    """
    if sizes is None:
        sizes = _list_sizes(lists, z.shape)
    zf = _valid_items(z.detach(), lists).to(torch.float64).numpy()
    yf = _valid_items(y, lists).to(torch.float64).numpy()
    distinct = core.pairs == "distinct"
    runs = None
    if core.pair_method == "mean" and distinct:
        runs = target_runs(yf, Groups(sizes))
    key = fast.draw_key(core.seed, draw) if core.pair_method == "mean" else 0
    v, g = fast.pairwise_list_terms(
        zf,
        yf,
        sizes,
        params,
        fcaps,
        distinct,
        core.pair_method,
        core.num_pair_per_sample or 0,
        key,
        runs,
    )
    values = torch.from_numpy(v).to(z.dtype)
    if not with_grad:
        return values, None
    return values, _scatter_items(torch.from_numpy(g).to(z.dtype), z, lists)


def pairwise_core_terms(
    core: Pairwise, draw: int, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists, with_grad: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`pairwise_terms` for any ``pair_method`` through the core loss on the real items
    (generic path: index arrays of the selected pairs; differentiable by autograd)."""
    sizes = _list_sizes(lists, z.shape)
    rows = sizes > 0
    bound: Any = core.bind(_valid_items(y, lists), group=Groups(sizes[rows]))  # pairwise: .draw
    bound.draw = draw
    zf = _valid_items(z, lists)
    vals = bound.loss(zf, reduction="none")
    values = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
    values = values.masked_scatter(torch.as_tensor(rows, device=z.device), vals.to(z.dtype))
    if not with_grad:
        return values, None
    g, _ = bound.grad_hess(zf.detach())
    return values, _scatter_items(g.to(z.dtype), z, lists)
