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
from ..._functions import bregman_threshold
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

    Outside an autograd graph the same pairs are evaluated by :func:`_pairwise_tiles`
    instead: broadcast tiles of the pair matrix, no index arrays, the sums by matrix-vector
    products (and for the links of the affine catalogue, one capped ``(f, f', F)``
    evaluation per pair difference).
    """
    n, L = z.shape
    if L < 2:
        return torch.zeros(n, dtype=z.dtype, device=z.device), (
            torch.zeros_like(z) if with_grad else None
        )
    if not (z.requires_grad and torch.is_grad_enabled()) and _tiled_link(link):
        out = _pairwise_tiles(link, odd, distinct, z, y, lists, with_grad, chunk)
        if out is not None:
            return out
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


def _tiled_link(link: Link) -> bool:
    """Whether :func:`_pairwise_tiles` serves ``link`` (every link does; tests switch it off)."""
    return True


def _affine_generic(link: Link) -> bool:
    """Whether ``link`` is of the affine catalogue with the catalogue's ``h``, ``dh``, ``H``
    and the generic loss :meth:`~selrank.links.Link.bregman` (``h`` the capped ``f`` of
    ``alpha (z - beta)``), as ``selrank.fast``'s torch ``bregman_grad`` path requires: then
    :func:`_pair_bregman_grad` evaluates the pairs."""
    kind = type(link)
    hit = _TILED.get(kind)
    if hit is None:
        from ...links import Exp

        hit = _TILED[kind] = fast.lookup(
            link, "bregman_grad", "torch", warn=False
        ) is not None and all(
            getattr(kind, name) is getattr(Exp, name) for name in ("h", "dh", "H", "_x")
        )
    return hit


_TILED: dict[type, bool] = {}
_TRIANGLES: dict = {}


def _strict_upper(T: int, dtype, device) -> torch.Tensor:
    """``[T, T]`` 0/1 of ``dtype``: 1 strictly above the diagonal (cached)."""
    key = (T, dtype, str(device))
    tri = _TRIANGLES.get(key)
    if tri is None:
        tri = _TRIANGLES[key] = torch.ones(T, T, dtype=dtype, device=device).triu_(1)
    return tri


def _capped_triple(link, x: torch.Tensor):
    """``Capped._c_triple(x)`` (the capped ``(f, f', F)``) and ``t = x - clip(x)`` (None inside
    the caps), the continuation by ``addcmul`` (one pass per product and sum)."""
    xp = A.get_namespace(x)  # (the array API namespace the link functions expect)
    if link.inside_caps(x):
        return link.exact_triple(x, xp), None
    lo, hi = link.caps
    xc = torch.clamp(x, None if math.isinf(lo) else lo, None if math.isinf(hi) else hi)
    f, df, F = link.exact_triple(xc, xp)
    t = x - xc
    if link.cap_mode == "flat":
        zero = torch.zeros((), dtype=df.dtype, device=df.device)
        return (f, torch.where(t == 0, df, zero), torch.addcmul(F, f, t)), t
    # f + f' t and F + (f + f' t / 2) t
    return (torch.addcmul(f, df, t), df, torch.addcmul(F, torch.addcmul(f, df, t, value=0.5), t)), t


def _pair_bregman_grad(link: Any, dz: torch.Tensor, dy: torch.Tensor, with_grad: bool):
    """``(link.bregman(dz, dy), link.h(dz) - link.h(dy))`` on contiguous tensors outside a
    graph, from one capped ``(f, f', F)`` evaluation per argument instead of one per quantity;
    the Taylor form of :meth:`~selrank.links.Link.bregman` at its near pairs (``|d|`` below
    the threshold, both arguments on one smooth piece), evaluated at those pairs only."""
    a = link.alpha
    plain = a == 1.0 and link.beta == 0.0
    xh = dz if plain else a * (dz - link.beta)
    x = dy if plain else a * (dy - link.beta)
    (fh, _, Fh), th = _capped_triple(link, xh)
    (f, _, F), t = _capped_triple(link, x)
    grad = fh - f if with_grad else None
    d = dz - dy  # ẑ - z
    # H(ẑ) - H(z) - d h(z), H = F / alpha (Link.bregman)
    direct = Fh - F if a == 1.0 else Fh / a - F / a
    direct.addcmul_(d, f, value=-1.0)
    if link.smooth:
        near = d.abs()
        if link.taylor_scale != 1.0:
            near.mul_(link.taylor_scale)
        near = A.less_as_float(near, bregman_threshold(d, torch), inplace=True)
        (idx,) = torch.nonzero(near.view(-1), as_tuple=True)
        if th is not None or t is not None:  # Link._same_piece: both on one smooth piece
            zero = torch.zeros((), dtype=d.dtype, device=d.device)
            ph = (zero if th is None else th.view(-1)[idx]).sign()
            p = (zero if t is None else t.view(-1)[idx]).sign()
            idx = idx[ph == p]
        if idx.numel():
            ds = d.view(-1)[idx]
            z0 = dy.view(-1)[idx]
            taylor = (ds * ds / 6.0) * (link.dh(z0) + 2.0 * link.dh(z0 + 0.5 * ds))
            direct.view(-1).index_copy_(0, idx, taylor)
    # max(·, 0); a NaN stays NaN
    return direct.clamp_min_(0.0), grad


def _pairwise_tiles(
    link: Link,
    odd: bool,
    distinct: bool,
    z: torch.Tensor,
    y: torch.Tensor,
    lists: MaskedLists,
    with_grad: bool,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    r""":func:`pairwise_terms` outside an autograd graph, by broadcast tiles of the pair matrix.

    Rows ``a0:a1`` of each list's pair matrix against columns ``a0:L`` (the pairs ``a < b``
    and, in the leading ``[T, T]`` block, those below its diagonal, which a 0/1 triangle
    drops) are evaluated for about ``chunk`` pairs of lists at a time as ``z_a - z_b`` by
    broadcasting: no index arrays, no gather or ``index_add``, and every temporary stays
    small. The pair losses and gradients are those of :func:`pairwise_terms` (the same
    orientation, :meth:`~selrank.links.Link.bregman` and ``h(d̂) - h(d)`` per pair); the
    padding weights enter the list sums as matrix-vector products. The sums run in another
    order, so values agree to rounding. None (the caller's index path) where a list's loss
    or an item's gradient is not finite.
    """
    n, L = z.shape
    dtype, device = z.dtype, z.device
    w = None if lists.full else lists.weight(dtype)
    affine = _affine_generic(link)
    T = min(L, max(16, -(-L // 8)))  # rows per tile: the triangle's waste is about T / L
    rows = max(1, chunk // (T * L))
    values = torch.zeros(n, dtype=dtype, device=device)
    grad = torch.zeros_like(z) if with_grad else None
    for s in range(0, n, rows):
        e = min(n, s + rows)
        zs, ys = z[s:e], y[s:e]
        ws = None if w is None else w[s:e]
        for a0 in range(0, L - 1, T):
            a1 = min(L, a0 + T)
            Tk = a1 - a0
            dz = zs[:, a0:a1, None] - zs[:, None, a0:]
            dy = ys[:, a0:a1, None] - ys[:, None, a0:]
            sign = None
            if not odd:  # orient each pair so that dy >= 0; ties (dy = +0) keep a before b
                sign = torch.copysign(torch.ones((), dtype=dtype, device=device), dy)
                dz.mul_(sign)
                dy.mul_(sign)
            if affine:
                pair, G = _pair_bregman_grad(link, dz, dy, with_grad)
            else:  # the link's own loss and h, on [lists, pairs] like the index path
                flat_z, flat_y = dz.view(e - s, -1), dy.view(e - s, -1)
                pair = link.bregman(flat_z, flat_y).view(dz.shape)
                G = (link.h(flat_z) - link.h(flat_y)).view(dz.shape) if with_grad else None
            sel = None
            if distinct:
                sel = torch.ne(dy, 0.0, out=torch.empty_like(dy))  # 0/1 floats
            tri = _strict_upper(Tk, dtype, device)
            pair[:, :, :Tk].mul_(tri)
            if sel is not None:
                pair.mul_(sel)
            if ws is None:
                values[s:e] += pair.sum(dim=(1, 2))
            else:
                wr, wc = ws[:, a0:a1], ws[:, a0:]
                values[s:e] += (torch.matmul(pair, wc[:, :, None])[..., 0] * wr).sum(dim=-1)
            if G is None:
                continue
            assert grad is not None  # (G is computed with_grad)
            G[:, :, :Tk].mul_(tri)
            if sel is not None:
                G.mul_(sel)
            if sign is not None:
                G.mul_(sign)
            if ws is None:
                grad[s:e, a0:a1] += G.sum(dim=-1)
                grad[s:e, a0:] -= G.sum(dim=-2)
            else:
                grad[s:e, a0:a1] += torch.matmul(G, wc[:, :, None])[..., 0] * wr
                grad[s:e, a0:] -= torch.matmul(wr[:, None, :], G)[:, 0] * wc
    # a pair loss or gradient beyond the dtype's range would meet the 0/1 weights here as
    # inf * 0 = NaN where the index path leaves it out of the sums: that path decides then
    if not math.isfinite(values.sum().item()) or (
        grad is not None and not math.isfinite(grad.sum().item())
    ):
        return None
    return values, grad


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
