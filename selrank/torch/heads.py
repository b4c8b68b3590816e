r"""Selective matching losses as ``torch.nn.Module`` heads over the core definitions.

Each head holds a core loss from :mod:`selrank.losses` (``Pointwise``, ``Pairwise``,
``Listwise``, ``CompositeSoftmax``/``Decomposed``) and evaluates it on dense, padded
``[batch, list]`` tensors with the core's own link and scaling maths
(:meth:`~selrank.links.Link.bregman`, :meth:`~selrank.links.Link.h`,
:func:`~selrank.scalings.composite_softmax`, :func:`~selrank.scalings.composite_softmax_bregman`);
only the padding (:mod:`selrank.torch._masking`) is added here. Nothing about a link is
written twice, except in numba kernels tested equal to the core's maths: the pairwise
kernel of :mod:`selrank.losses._kernels` and the exp link's pointwise loss
(:mod:`selrank.torch._pointwise_kernel`).

The gradient of a selective matching loss is the closed form :math:`h(\hat s) - h(s)`
(eq. [1], [30]); with ``grad="analytic"`` (default) the heads compute it in the forward
pass and the backward just scales it (:class:`~selrank.torch._base.ClosedFormGradient`):
cheaper than differentiating the loss value and exact at the minimum, where the loss value
itself is evaluated through a cancellation-free Taylor form; the pointwise and listwise
heads reduce it in the same pass (:class:`~selrank.torch._base.FusedGradient`). Double
backward works in both modes; ``grad="autograd"`` differentiates the value instead.

:func:`get_head` builds any head by name — the selective heads, the torch-only baselines of
:mod:`selrank.torch.baselines` and, through :class:`CoreLoss`, every loss registered in
:data:`selrank.losses.LOSSES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .. import _array as A
from .._functions import bregman_threshold
from .._groups import Groups
from .._validation import lookup, positive_float
from ..links import Link
from ..losses import (
    LOSSES,
    Combined,
    CompositeSoftmax,
    Decomposed,
    Listwise,
    Loss,
    Pairwise,
    Pointwise,
    _kernels,
    get_loss,
)
from ..losses._base import check_class_indices
from ..losses.listwise import link_target_lists
from ..losses.pairwise import target_runs
from ..scalings import composite_softmax, composite_softmax_bregman
from . import baselines as B
from ._base import AnalyticHead, RankingHead
from ._masking import (
    MaskedLists,
    as_target_tensor,
    check_reduction,
    compute_dtype,
    neutralize,
    padding_mask,
)
from ._pointwise_kernel import exp_bregman_grad

__all__ = [
    "PointwiseLoss",
    "PairwiseLoss",
    "ListwiseLoss",
    "MulticlassLoss",
    "CoreLoss",
    "CombinedLoss",
    "HEADS",
    "get_head",
    "head_for",
]


# ======================================================================================
# The three computations, shared by the heads (each calls the core for all link maths)
# ======================================================================================


def pointwise_terms(link: Link, target: str, z, y, lists: MaskedLists, with_grad: bool):
    """Per-item matching loss ``L(ŝ, s)`` and gradient ``h(ŝ) − h(s)`` (or ``h(ŝ) − y``)."""
    if target == "score":
        link.check_domain(y, "y_true")
        if not with_grad:
            return link.bregman(z, y), None
        # the default exp link on CPU: one kernel pass after the exponentials, or None
        fast = exp_bregman_grad(link, z, y)
        values, grad = link.bregman_grad(z, y) if fast is None else fast
    else:
        link.check_range(y, "y_true")
        values = link.bregman_link_target(z, y)
        grad = link.h(z) - y if with_grad else None
    # padded slots hold copies of real items; the backward of neutralize() discards their
    # gradient, so it needs no mask here (list sums do: see softmax_terms, pairwise_terms)
    return values, grad


def softmax_terms(scaling, gamma: float, target: str, z, y, lists: MaskedLists, with_grad: bool):
    """Per-list composite softmax loss [29] and gradient ``q(ŝ)p(ŝ) − q(s)p(s)`` [30].

    Scores far beyond the scaling's cap (``|ŝ|`` about 1e20 in float32) overflow the
    primitive :math:`Q` of a linearly continued scaling, and the softmax of an infinite
    logit is NaN. The lists where that happens are evaluated again in float64 (where the
    same scores stay finite) and the gradient is brought back clamped to the dtype's finite
    range: finite gradients (the loss itself may exceed the dtype and read ``inf``), for one
    extra reduction over the gradient (or the values) when nothing overflows.
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
        g64 = torch.nan_to_num(g64, nan=0.0, posinf=big, neginf=-big).clamp(-big, big)
        return values.index_put((rows,), v64.to(z.dtype)), grad.index_put((rows,), g64.to(z.dtype))
    # through autograd: the overflowing lists leave the float32 graph (their NaN partials
    # would reach the other lists' gradient through 0 * NaN), the rest is evaluated again
    safe = torch.where(bad[:, None], torch.zeros((), dtype=z.dtype, device=z.device), z)
    values, _ = _softmax_terms(scaling, gamma, target, safe, y, lists, False)
    return values.index_put((rows,), v64.to(z.dtype)), None


def _softmax_side(scaling, gamma: float, z, lists: MaskedLists):
    """``(h, H)`` of :func:`~selrank.scalings.composite_softmax` without the rest of its dict.

    The same operations in the same order (so the same values), minus ``log p`` and ``q'``,
    with the softmax computed in place; for tensors outside an autograd graph only. The
    padded entries of ``e`` are multiplied by 0 before the sum (the general path's masked
    sum, the same products), so ``h`` is 0 there.
    """
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


def _softmax_terms_fast(scaling, gamma: float, z, y, lists: MaskedLists, with_grad: bool):
    """The direct form of :func:`~selrank.scalings.composite_softmax_bregman`, or None where
    a list needs its Taylor form (then the general path runs)."""
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


def _softmax_terms(scaling, gamma: float, target: str, z, y, lists: MaskedLists, with_grad: bool):
    if target == "score" and not (z.requires_grad and torch.is_grad_enabled()):
        fast = _softmax_terms_fast(scaling, gamma, z, y, lists, with_grad)
        if fast is not None:
            return fast
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
    link: Link, odd: bool, distinct: bool, z, y, lists: MaskedLists, with_grad: bool, chunk: int
):
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


def pairwise_kernel_terms(
    core: Pairwise,
    params: tuple,
    fcaps: tuple,
    draw: int,
    z,
    y,
    lists: MaskedLists,
    with_grad: bool,
):
    r""":func:`pairwise_terms` on the CPU through the numba kernel of :mod:`selrank.losses._kernels`.

    The real items are gathered list by list into flat float64 arrays, the kernel walks each
    list's selected pairs (``core.pair_method``) once for the loss, gradient and Hessian, and
    the gradient is scattered back: time O(pairs), memory O(batch × list) — no pair tensor
    is built. ``draw`` numbers the ``"mean"`` draw (:func:`selrank.losses._kernels.draw_key`).
    """
    sizes = _list_sizes(lists, z.shape)
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    zf = _valid_items(z.detach(), lists).to(torch.float64).numpy()
    yf = _valid_items(y, lists).to(torch.float64).numpy()
    distinct = core.pairs == "distinct"
    runs = None
    if core.pair_method == "mean" and distinct:
        runs = target_runs(yf, Groups(sizes))
    key = _kernels.draw_key(core.seed, draw) if core.pair_method == "mean" else 0
    g, _, v = _kernels.pairwise_sampled(
        zf,
        yf,
        offsets,
        None,
        distinct,
        params,
        core.pair_method,
        core.num_pair_per_sample or 0,
        key,
        runs,
        fcaps,
    )
    values = torch.from_numpy(v).to(z.dtype)
    if not with_grad:
        return values, None
    return values, _scatter_items(torch.from_numpy(g).to(z.dtype), z, lists)


def pairwise_core_terms(core: Pairwise, draw: int, z, y, lists: MaskedLists, with_grad: bool):
    """:func:`pairwise_terms` for any ``pair_method`` through the core loss on the real items
    (generic path: index arrays of the selected pairs; differentiable by autograd)."""
    sizes = _list_sizes(lists, z.shape)
    rows = sizes > 0
    bound = core.bind(_valid_items(y, lists), group=Groups(sizes[rows]))
    bound.draw = draw
    zf = _valid_items(z, lists)
    vals = bound.loss(zf, reduction="none")
    values = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
    values = values.masked_scatter(torch.as_tensor(rows, device=z.device), vals.to(z.dtype))
    if not with_grad:
        return values, None
    g, _ = bound.grad_hess(zf.detach())
    return values, _scatter_items(g.to(z.dtype), z, lists)


def _core(cls, first, owner: str, build: Callable[[], Loss]) -> Loss:
    """The core loss of a head: an instance of ``cls`` passed in, or built from parameters."""
    if isinstance(first, Loss):
        if not isinstance(first, cls):
            raise TypeError(
                f"{owner} needs a {cls.__name__} loss; got {type(first).__name__} (see get_head)"
            )
        return first
    return build()


# ======================================================================================
# Selective heads
# ======================================================================================


class PointwiseLoss(AnalyticHead):
    r"""Pointwise selective matching loss per item (:class:`selrank.losses.Pointwise`).

    .. math:: L(\hat s, s) = H(\hat s) - H(s) - (\hat s - s)\,h(s), \qquad
              \partial L / \partial \hat s = h(\hat s) - h(s).

    Parameters
    ----------
    link : Link, str or Pointwise
        The link (default ``"exp"``) or a ready :class:`~selrank.losses.Pointwise`.
    target : {"score", "link"}
        Space of ``y_true`` (``"link"``: e.g. probabilities for a sigmoid link).
    reduction, padding_value
        See :class:`~selrank.torch._base.RankingHead`; the unit is an item.
    grad : {"analytic", "autograd"}
    **link_params
        Parameters of a link given by name (``alpha``, ``beta``, ``cap``, ...).

    Examples
    --------
    >>> import torch
    >>> head = PointwiseLoss("identity")
    >>> y_pred = torch.tensor([[1.0, 3.0, 0.0]], requires_grad=True)
    >>> y_true = torch.tensor([[0.0, 1.0, -1.0]])          # -1: padding
    >>> loss = head(y_pred, y_true)                        # mean of 1/2 and 2
    >>> loss.backward()
    >>> round(loss.item(), 6), y_pred.grad.tolist()        # (h(ŝ) − h(s)) / 2 items
    (1.25, [[0.5, 1.0, 0.0]])
    """

    unit = "item"
    ndims = (1, 2)
    #: Items reduce over no list: one pass over the whole batch has the fewest operations.
    chunk_items = None

    def __init__(
        self,
        link: Link | str | Pointwise = "exp",
        *,
        target: str = "score",
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        grad: str = "analytic",
        **link_params,
    ):
        super().__init__(reduction=reduction, padding_value=padding_value, grad=grad)
        self.core = _core(
            Pointwise, link, "PointwiseLoss", lambda: Pointwise(link, target=target, **link_params)
        )

    fused = True

    def fused_neutralizes(self) -> bool:
        # the padding needs no copies where every target is in the link's domain
        return not (self.core.target == "score" and self.core.link.domain == (-math.inf, math.inf))

    def terms(self, z, y, lists, with_grad):
        return pointwise_terms(self.core.link, self.core.target, z, y, lists, with_grad)

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"


class ListwiseLoss(AnalyticHead):
    r"""Listwise selective matching loss: composite softmax over each list (:class:`selrank.losses.Listwise`).

    .. math::
        p_k(z) = \mathrm{softmax}(Q(z)/\gamma)_k, \quad h_k(z) = q(z_k)\,p_k(z), \quad
        L(\hat s, s) = H(\hat s) - H(s) - \sum_k (\hat s_k - s_k)\,h_k(s)

    with gradient :math:`q(\hat s_k)p_k(\hat s) - q(s_k)p_k(s)` (eq. [29–30]). Targets are
    graded labels or soft teacher scores (distillation): ``scaling="exp"`` (default)
    emphasises the top of the list, ``"smelu"``/``"relu"`` clip low teacher scores — every
    teacher score below the clip point has :math:`q = 0` and the same (zero) link value
    (docs/math.md §3–4). Padded items get :math:`p = 0` and zero gradient.

    Parameters
    ----------
    scaling : Scaling, str or Listwise
        The scaling (default ``"exp"``) or a ready :class:`~selrank.losses.Listwise`.
    gamma : float
        Regulariser (temperature) :math:`\gamma > 0`.
    target : {"score", "link"}
        ``"link"`` (constant scaling only): each list of ``y_true`` is a distribution times
        ``alpha``; the loss is :math:`\gamma\,\mathrm{KL}(y/\alpha \,\|\, p(\hat s))`.
    reduction, padding_value, grad
        See :class:`~selrank.torch._base.AnalyticHead`; the unit is a list.
    **scaling_params
        Parameters of a scaling given by name.

    Examples
    --------
    >>> import torch
    >>> head = ListwiseLoss("exp")
    >>> y_true = torch.tensor([[2.0, 0.0, 1.0, -1.0]])
    >>> float(head(y_true.clone(), y_true))        # zero at the target
    0.0
    >>> y_pred = torch.zeros(1, 4, requires_grad=True)
    >>> head(y_pred, y_true).backward()
    >>> g = y_pred.grad[0]
    >>> bool(g[0] < 0 < g[1]), float(g[3])          # raise the relevant, lower the rest; padding: 0
    (True, 0.0)
    """

    unit = "list"

    def __init__(
        self,
        scaling: Any = "exp",
        *,
        gamma: float = 1.0,
        target: str = "score",
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        grad: str = "analytic",
        **scaling_params,
    ):
        super().__init__(reduction=reduction, padding_value=padding_value, grad=grad)
        self.core = _core(
            Listwise,
            scaling,
            "ListwiseLoss",
            lambda: Listwise(scaling, gamma=gamma, target=target, **scaling_params),
        )

    fused = True

    def terms(self, z, y, lists, with_grad):
        c = self.core
        return softmax_terms(c.scaling, c.gamma, c.target, z, y, lists, with_grad)

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"


class PairwiseLoss(AnalyticHead):
    r"""Pairwise (contrastive) selective matching loss per list (:class:`selrank.losses.Pairwise`).

    For every pair of real items of a list, oriented so that the target difference
    :math:`d_{ab} = s_a - s_b \ge 0`, the score difference :math:`\hat d_{ab}` is matched to
    :math:`d_{ab}` by the link's matching loss; a list's loss is the sum over its pairs and
    item :math:`a` receives :math:`\sum_b h(\hat d_{ab}) - h(d_{ab})` (minus the same for
    pairs where it is the lower item). The default capped ``sinh`` link is odd, so the
    loss does not depend on pair orientation.

    Parameters
    ----------
    link : Link, str or Pairwise, optional
        Default ``Sinh(cap=3.0)``, or a ready :class:`~selrank.losses.Pairwise`.
    pairs : {"all", "distinct"}
        Include pairs with equal targets (matched to a zero difference) or not.
    pair_method : {"all", "topk", "mean"}
        Which pairs of each list enter the loss, as :class:`selrank.losses.Pairwise`
        (XGBoost's ``lambdarank_pair_method``): every pair; those whose better-ranked item by
        the current scores is among the top ``num_pair_per_sample``; or
        ``num_pair_per_sample`` partners drawn per item (a new draw every forward pass).
    num_pair_per_sample : int, optional
        ``k`` of ``"topk"`` (default 32) or ``m`` of ``"mean"`` (default 1).
    seed : int
        Seed of the ``"mean"`` draws.
    reduction, padding_value, grad
        See :class:`~selrank.torch._base.AnalyticHead`; the unit is a list.
    chunk_pairs : int
        Pair matrices of the tensor path are built for at most about this many pairs at a time.
    **link_params
        Parameters of a link given by name.

    Notes
    -----
    On the CPU with the analytic gradient and a link the numba kernel covers (identity,
    exp, sinh, sigmoid with any caps: :mod:`selrank.losses._kernels`), the loss and its
    gradient come from one fused kernel pass over the pairs (:func:`pairwise_kernel_terms`
    inside :class:`~selrank.torch._base.ClosedFormGradient`): no pair tensor, memory
    O(batch × list). Otherwise (other links, GPU tensors, ``grad="autograd"``) pair tensors
    are built — for all pairs in chunks of ``chunk_pairs`` (memory and time grow with
    ``batch × list²``), for the sampled methods through the core loss's index arrays of the
    selected pairs.

    Examples
    --------
    >>> import torch
    >>> head = PairwiseLoss("identity", reduction="sum")
    >>> y_pred = torch.zeros(1, 3, requires_grad=True)
    >>> head(y_pred, torch.tensor([[2.0, 0.0, 1.0]])).backward()
    >>> y_pred.grad.tolist()                       # as selrank.losses.Pairwise
    [[-3.0, 3.0, 0.0]]
    """

    unit = "list"

    def __init__(
        self,
        link: Any = None,
        *,
        pairs: str = "all",
        pair_method: str = "all",
        num_pair_per_sample: int | None = None,
        seed: int = 0,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        grad: str = "analytic",
        chunk_pairs: int = 1 << 18,
        **link_params,
    ):
        super().__init__(reduction=reduction, padding_value=padding_value, grad=grad)
        self.core = _core(
            Pairwise,
            link,
            "PairwiseLoss",
            lambda: Pairwise(
                link,
                pairs=pairs,
                pair_method=pair_method,
                num_pair_per_sample=num_pair_per_sample,
                seed=seed,
                **link_params,
            ),
        )
        if (
            isinstance(chunk_pairs, bool)
            or not isinstance(chunk_pairs, int | np.integer)
            or chunk_pairs < 1
        ):
            raise ValueError(
                f"`chunk_pairs` of PairwiseLoss must be a positive integer; got {chunk_pairs!r}"
            )
        self.chunk_pairs = int(chunk_pairs)
        self.chunk_items = None  # chunked by pairs instead
        self.odd = is_odd(self.core.link)
        self._kernel = _kernels.kernel_link(self.core.link) if _kernels.available() else None
        self._fcaps = None if self._kernel is None else _kernels.kernel_fcaps(self.core.link)
        self.draws = 0  # forward passes so far: the "mean" draw of the next one

    def uses_kernel(self, z) -> bool:
        """Whether ``terms`` runs the fused numba kernel for scores ``z`` (CPU, covered link, no
        autograd graph through the terms)."""
        return (
            self._kernel is not None
            and z.device.type == "cpu"
            and not (z.requires_grad and torch.is_grad_enabled())
        )

    def terms(self, z, y, lists, with_grad):
        c = self.core
        draw = self.draws
        self.draws += 1
        if self.uses_kernel(z):
            return pairwise_kernel_terms(c, self._kernel, self._fcaps, draw, z, y, lists, with_grad)
        if c.pair_method != "all":
            return pairwise_core_terms(c, draw, z, y, lists, with_grad)
        return pairwise_terms(
            c.link, self.odd, c.pairs == "distinct", z, y, lists, with_grad, self.chunk_pairs
        )

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"


class MulticlassLoss(AnalyticHead):
    r"""Multi-class selective matching loss on ``[n, K]`` scores.

    ``loss="composite_softmax"`` (default, :class:`selrank.losses.CompositeSoftmax`):
    region *and* ranking sensitivity across classes [29–30]; ``loss="decomposed"``
    (:class:`selrank.losses.Decomposed`): a scalar matching loss per class [28], the only
    way to get low-norm sensitivity. One loss per row.

    ``y_true`` is ``[n, K]`` observed scores (padded classes hold ``padding_value``, or pass
    ``mask``/``lengths``) or, with ``target="link"``, ``[n]`` class indices (rows whose
    index equals ``padding_value`` are ignored, like ``ignore_index``).

    Parameters
    ----------
    loss : {"composite_softmax", "decomposed"} or CompositeSoftmax or Decomposed
    reduction, padding_value, grad
        See :class:`~selrank.torch._base.AnalyticHead`; the unit is a row.
    **params
        Parameters of the core loss (``scaling``, ``gamma``, ``link``, ``target``, ...).

    Examples
    --------
    >>> import torch
    >>> head = MulticlassLoss("composite_softmax", scaling="constant", target="link")
    >>> z = torch.tensor([[2.0, 0.0, -1.0]])
    >>> ce = torch.nn.functional.cross_entropy(z, torch.tensor([0]))
    >>> bool(torch.isclose(head(z, torch.tensor([0])), ce))   # softmax cross entropy
    True
    """

    unit = "list"

    def __init__(
        self,
        loss: str | Loss = "composite_softmax",
        *,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        grad: str = "analytic",
        **params,
    ):
        super().__init__(reduction=reduction, padding_value=padding_value, grad=grad)
        core = get_loss(loss, **params)
        if not isinstance(core, CompositeSoftmax | Decomposed):
            raise TypeError(
                f"MulticlassLoss needs a CompositeSoftmax or Decomposed loss; got {core!r} "
                "(other losses: CoreLoss or get_head)"
            )
        self.core = core

    def _targets(self, y_true, z):
        y = super()._targets(y_true, z) if _ndim(y_true) == z.dim() else None
        if y is not None:
            return y
        idx = torch.as_tensor(
            np.asarray(A.to_numpy(y_true)) if not torch.is_tensor(y_true) else y_true
        )
        if idx.dim() != 1 or z.dim() != 2 or idx.shape[0] != z.shape[0]:
            raise ValueError(
                f"`y_true` of MulticlassLoss must be [n, K] scores or [n] class indices for `y_pred` of "
                f"shape {tuple(z.shape)}; got shape {tuple(idx.shape)}"
            )
        if self.core.target != "link":
            raise ValueError(
                "class indices need target='link' (one-hot targets); give [n, K] scores otherwise"
            )
        idx = idx.to(z.device)
        ignore = (
            idx == self.padding_value
            if self.padding_value is not None
            else torch.zeros_like(idx, dtype=torch.bool)
        )
        K = z.shape[1]
        check_class_indices(A.to_numpy(idx[~ignore]), "MulticlassLoss", K)
        one_hot = torch.nn.functional.one_hot(torch.where(ignore, 0, idx).long(), K).to(z.dtype)
        y = one_hot * self.core._link_value_of_one_hot()
        if self.padding_value is not None:
            y = torch.where(ignore[:, None], torch.full_like(y, self.padding_value), y)
        return y

    def terms(self, z, y, lists, with_grad):
        c = self.core
        if isinstance(c, CompositeSoftmax):
            return softmax_terms(c.scaling, c.gamma, c.target, z, y, lists, with_grad)
        values, grad = pointwise_terms(c.link, c.target, z, y, lists, with_grad)
        return lists.sum(values), grad

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"


def _ndim(x) -> int:
    return x.dim() if torch.is_tensor(x) else np.ndim(x)


# ======================================================================================
# Any registered core loss, through autograd
# ======================================================================================


class CoreLoss(RankingHead):
    """Any loss of :data:`selrank.losses.LOSSES` as a head (the core's baselines included).

    The real items of the padded batch are handed to the core loss in its own layout —
    one row per item (``structure="pointwise"``), ragged query groups (``"group"``) or one
    ``[n, K]`` row per sample (``"multiclass"``: class indices ``[n]`` or label rows
    ``[n, K]``; whole rows are padding) — and autograd differentiates the core loss (every
    core loss is written against the array namespace, so it runs on tensors). Losses that
    couple the samples of a batch (``couples_samples``, e.g. batch cross entropy) give one
    value per call (unit ``"batch"``).

    Parameters
    ----------
    loss : str or Loss
        A registry name (parameters in ``**params``) or a core loss instance.
    reduction, padding_value
        See :class:`~selrank.torch._base.RankingHead`.

    Examples
    --------
    >>> import torch
    >>> head = CoreLoss("multiclass_hinge")
    >>> z = torch.tensor([[2.0, 1.5, -1.0], [0.0, 3.0, 0.0]], requires_grad=True)
    >>> head(z, torch.tensor([0, -1]), reduction="none")     # row 1 is padding
    tensor([0.5000, 0.0000], grad_fn=<WhereBackward0>)
    """

    def __init__(
        self,
        loss: str | Loss,
        *,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        **params,
    ):
        super().__init__(reduction=reduction, padding_value=padding_value)
        self.core = get_loss(loss, **params)
        self.structure = self.core.structure
        if self.structure == "pointwise":
            self.unit, self.ndims = "item", (1, 2)
        elif self.structure in ("group", "multiclass"):
            self.unit, self.ndims = "list", (2,)
            if getattr(self.core, "couples_samples", False):
                self.unit = "batch"
        else:
            raise ValueError(
                f"CoreLoss supports losses of structure 'pointwise', 'group' or 'multiclass'; "
                f"{self.core!r} has structure {self.structure!r}"
            )

    def _prepare(self, y_pred, y_true, mask, lengths):
        if self.structure == "multiclass" and _ndim(y_true) == 1:
            # class indices [n]: a row is padding when its index is the sentinel (or masked)
            z = self._check_pred(y_pred)
            z = z.to(compute_dtype(z.dtype))
            y = as_target_tensor(y_true, z)
            if tuple(y.shape) != (z.shape[0],):
                raise ValueError(
                    f"class indices must have shape ({z.shape[0]},) for `y_pred` of shape "
                    f"{tuple(z.shape)}; got {tuple(y.shape)}"
                )
            rows = padding_mask(y, mask=mask, lengths=None, padding_value=self.padding_value)
            valid = rows[:, None].expand(z.shape)
            full = bool(rows.all())
            if not full:
                (z,) = neutralize(valid, z)
            y = torch.where(rows, y, torch.zeros((), dtype=y.dtype, device=y.device))
            return z, y, MaskedLists(valid, full=full, neutralized=True)
        z, y, lists = super()._prepare(y_pred, y_true, mask, lengths)
        valid = lists.valid
        if (
            self.structure == "multiclass"
            and not lists.full
            and bool((valid.any(dim=-1) & ~valid.all(dim=-1)).any())
        ):
            raise ValueError(
                f"{self.core!r} cannot mask single classes; mark whole rows as padding "
                "(or use MulticlassLoss, which masks classes)"
            )
        return z, y, lists

    def unit_values(self, z, y, lists):
        valid = lists.valid
        if self.structure == "pointwise":
            vals = self.core.bind(y[valid]).loss(z[valid], reduction="none")
            return torch.zeros_like(z).masked_scatter(valid, vals.to(z.dtype))
        rows = valid.any(dim=-1)
        if self.structure == "group":
            groups = Groups.from_sizes(A.to_numpy(valid.sum(dim=-1)[rows]))
            vals = self.core.bind(y[valid], group=groups).loss(z[valid], reduction="none")
        else:
            vals = self.core.bind(y[rows]).loss(z[rows], reduction="none")
        if self.unit == "batch":
            return vals.to(z.dtype).reshape(1)
        out = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        return out.masked_scatter(rows, vals.to(z.dtype))

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"


# ======================================================================================
# Weighted sums of heads
# ======================================================================================


class CombinedLoss(RankingHead):
    """A weighted sum of heads evaluated on the same scores and targets.

    The torch counterpart of :class:`selrank.losses.Combined` (e.g. a pointwise loss that
    fixes the level of each score plus a listwise loss that fixes the order within each
    list); any heads may be combined, baselines included. As for the core's ``Combined``,
    ``"sum"`` adds the components' sums with the weights and ``"mean"`` divides that by the
    first component's units (the sum of its unit weights), so the mean is proportional to
    the optimised sum whatever the mix of units; ``"none"`` needs components with the same
    unit.

    Parameters
    ----------
    losses : Combined or sequence of (head, name or Loss)
        A core :class:`~selrank.losses.Combined`, or the components (built by
        :func:`get_head` with this head's ``padding_value``).
    weights : sequence of float, optional
        Non-negative component weights (default: all 1, or the ``Combined``'s).

    Examples
    --------
    >>> import torch
    >>> head = CombinedLoss(["pointwise", "listwise"], weights=[1.0, 0.5])
    >>> z, y = torch.zeros(2, 3), torch.tensor([[2.0, 0.0, 1.0], [1.0, 0.0, -1.0]])
    >>> parts = PointwiseLoss()(z, y, reduction="sum") + 0.5 * ListwiseLoss()(z, y, reduction="sum")
    >>> bool(torch.isclose(head(z, y, reduction="sum"), parts)), bool(torch.isclose(head(z, y), parts / 5))
    (True, True)
    """

    def __init__(
        self,
        losses: Any,
        *,
        weights=None,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
    ):
        super().__init__(reduction=reduction, padding_value=padding_value)
        if isinstance(losses, Combined):
            if weights is None:
                weights = losses.weights
            losses = losses.losses
        if (
            isinstance(losses, str | Loss | RankingHead)
            or not isinstance(losses, list | tuple)
            or not losses
        ):
            raise ValueError(
                f"`losses` of CombinedLoss must be a non-empty sequence or a Combined; got {losses!r}"
            )
        heads = [
            get_head(h) if isinstance(h, RankingHead) else get_head(h, padding_value=padding_value)
            for h in losses
        ]
        w = (
            [1.0] * len(heads)
            if weights is None
            else [positive_float(v, "weights", "CombinedLoss", allow_zero=True) for v in weights]
        )
        if len(w) != len(heads):
            raise ValueError(
                f"`weights` of CombinedLoss must have one entry per loss ({len(heads)}); got {len(w)}"
            )
        if not sum(w) > 0:
            raise ValueError("`weights` of CombinedLoss must not all be 0")
        self.heads = torch.nn.ModuleList(heads)
        self.weights = w
        units = {h.unit for h in heads}
        self.unit = units.pop() if len(units) == 1 else "mixed"

    def forward(
        self, y_pred, y_true, *, mask=None, lengths=None, sample_weight=None, reduction=None
    ):
        reduction = (
            self.reduction if reduction is None else check_reduction(reduction, "CombinedLoss")
        )
        if reduction == "none" and self.unit == "mixed":
            raise ValueError(
                "reduction='none' is undefined for a CombinedLoss whose heads have different units "
                f"({sorted({h.unit for h in self.heads})}); use 'sum' or 'mean'"
            )
        kw = {"mask": mask, "lengths": lengths, "sample_weight": sample_weight}
        total = None
        for w, head in zip(self.weights, self.heads):
            if w == 0:
                continue
            part = w * head(
                y_pred, y_true, reduction="sum" if reduction == "mean" else reduction, **kw
            )
            total = part if total is None else total + part
        if reduction == "mean":
            denom = self.total_weight(y_pred, y_true, **kw)
            total = total / torch.where(denom > 0, denom, torch.ones_like(denom))
        return total

    def total_weight(self, y_pred, y_true, *, mask=None, lengths=None, sample_weight=None):
        """The denominator of ``"mean"``: the first component's summed unit weights."""
        return self.heads[0].total_weight(
            y_pred, y_true, mask=mask, lengths=lengths, sample_weight=sample_weight
        )

    def extra_repr(self) -> str:
        return f"weights={self.weights!r}, {super().extra_repr()}"


# ======================================================================================
# Registry
# ======================================================================================

#: Heads by name: the selective heads and the torch-only baselines. Names of
#: :data:`selrank.losses.LOSSES` not listed here resolve through :func:`head_for`.
HEADS: dict[str, Callable[..., RankingHead]] = {
    "pointwise": PointwiseLoss,
    "pairwise": PairwiseLoss,
    "listwise": ListwiseLoss,
    "multiclass": MulticlassLoss,
    "combined": CombinedLoss,
    "softmax_ce": B.SoftmaxCrossEntropyLoss,
    "listnet": B.ListNetLoss,
    "listmle": B.ListMLELoss,
    "ranknet": B.RankNetLoss,
    "lambdaloss": B.LambdaLoss,
    "approxndcg": B.ApproxNDCGLoss,
}

#: The head that evaluates each core loss class on padded batches.
_HEAD_OF_CORE: dict[type, Callable[..., RankingHead]] = {
    Pointwise: PointwiseLoss,
    Pairwise: PairwiseLoss,
    Listwise: ListwiseLoss,
    CompositeSoftmax: MulticlassLoss,
    Decomposed: MulticlassLoss,
    Combined: CombinedLoss,
}


def head_for(loss: Loss, **head_params) -> RankingHead:
    """The head of a core loss instance: its selective head, else :class:`CoreLoss`."""
    if not isinstance(loss, Loss):
        raise TypeError(f"head_for needs a selrank.losses.Loss; got {type(loss).__name__}")
    cls = _HEAD_OF_CORE.get(type(loss), CoreLoss)
    return cls(loss, **head_params)


_HEAD_OPTIONS = ("reduction", "padding_value", "grad", "chunk_pairs")
# (CombinedLoss takes reduction and padding_value only)


def get_head(name: str | Loss | RankingHead, **params) -> RankingHead:
    """Build a head by name, from a core loss, or pass a head through.

    Parameters
    ----------
    name : str, Loss or RankingHead
        A name of :data:`HEADS` (selective heads and torch baselines) or of
        :data:`selrank.losses.LOSSES` (core losses and their baselines); a core
        :class:`~selrank.losses.Loss` instance; or a head.
    **params
        Parameters of the head (or of the core loss, for a name of ``LOSSES``).

    Examples
    --------
    >>> get_head("listwise", scaling="exp", gamma=0.5)
    ListwiseLoss(Listwise(scaling=ExpScaling(alpha=1.0, beta=0.0, cap=(None, 30.0), cap_mode='linear'), gamma=0.5, target='score'), reduction='mean', padding_value=-1.0, grad='analytic')
    >>> type(get_head("ranknet")).__name__
    'RankNetLoss'
    >>> get_head("lambdamart")
    Traceback (most recent call last):
    ...
    ValueError: unknown head 'lambdamart'; choose one of [...]
    """
    if isinstance(name, Loss) and not isinstance(name, RankingHead):
        return head_for(name, **params)
    registry = {**{key: _loss_head(key) for key in LOSSES}, **HEADS}  # HEADS first on a clash
    return lookup(
        registry,
        name,
        "head",
        instance_of=RankingHead,
        accepts="a name, a selrank Loss or a RankingHead",
        **params,
    )


def _loss_head(key: str) -> Callable[..., RankingHead]:
    """The head of the core loss ``LOSSES[key]``: head options go to the head, the rest to the loss."""

    def build(**params: Any) -> RankingHead:
        head_params = {k: params.pop(k) for k in _HEAD_OPTIONS if k in params}
        return head_for(get_loss(key, **params), **head_params)

    return build
