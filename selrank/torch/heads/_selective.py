r"""The selective heads: pointwise, listwise, pairwise and multiclass selective matching losses."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import torch

from ... import _array as A
from ... import fast
from ..._numba import pair_work, use_kernel
from ...links import Link
from ...losses import (
    CompositeSoftmax,
    Decomposed,
    Listwise,
    Loss,
    Pairwise,
    Pointwise,
    get_loss,
)
from ...losses.inputs import check_class_indices
from .._base import AnalyticHead
from .._masking import MaskedLists
from ._terms import (
    _list_sizes,
    is_odd,
    pairwise_core_terms,
    pairwise_kernel_params,
    pairwise_kernel_terms,
    pairwise_terms,
    pointwise_terms,
    softmax_terms,
)

_L = TypeVar("_L", bound=Loss)


def _core(cls: type[_L], first: Any, owner: str, build: Callable[[], _L]) -> _L:
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
        ignore_index: float | None = None,
        grad: str = "analytic",
        **link_params: Any,
    ) -> None:
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index, grad=grad
        )
        self.core = _core(
            Pointwise,
            link,
            "PointwiseLoss",
            lambda: Pointwise(cast("Link | str", link), target=target, **link_params),
        )

    fused = True

    def fused_neutralizes(self) -> bool:
        # the padding needs no copies where every target is in the link's domain
        return not (self.core.target == "score" and self.core.link.domain == (-math.inf, math.inf))

    def terms(
        self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists, with_grad: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
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
        ignore_index: float | None = None,
        grad: str = "analytic",
        **scaling_params: Any,
    ) -> None:
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index, grad=grad
        )
        self.core = _core(
            Listwise,
            scaling,
            "ListwiseLoss",
            lambda: Listwise(scaling, gamma=gamma, target=target, **scaling_params),
        )

    fused = True

    def terms(
        self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists, with_grad: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
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
    exp, sinh, sigmoid with any caps: :mod:`selrank.fast`), the loss and its
    gradient come from one fused kernel pass over the pairs (:func:`pairwise_kernel_terms`
    inside :class:`~selrank.torch._base.ClosedFormGradient`): no pair tensor, memory
    O(batch × list). Otherwise (other links, GPU tensors, kernel policy ``"never"`` or
    before the switch, ``grad="autograd"``) pair tensors are built — for all pairs in chunks
    of ``chunk_pairs`` (memory and time grow with ``batch × list²``): without an autograd
    graph as broadcast tiles of each list's pair matrix (:func:`_pairwise_tiles`, faster
    than a broadcast RankNet), under autograd through index arrays of the pairs; for the
    sampled methods through the core loss's index arrays of the selected pairs.

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
        ignore_index: float | None = None,
        grad: str = "analytic",
        chunk_pairs: int = 1 << 18,
        **link_params: Any,
    ) -> None:
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index, grad=grad
        )
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
        self._kernel = pairwise_kernel_params(self.core.link)
        self._fcaps = None if self._kernel is None else fast.kernel_fcaps(self.core.link)
        self.draws = 0  # forward passes so far: the "mean" draw of the next one

    def uses_kernel(self, z: torch.Tensor) -> bool:
        """Whether ``terms`` runs the fused numba kernel for scores ``z`` (CPU, covered link, no
        autograd graph through the terms)."""
        return (
            self._kernel is not None
            and z.device.type == "cpu"
            and not (z.requires_grad and torch.is_grad_enabled())
            # a NaN score takes the tensor path, where it stays NaN in the loss and gradient
            and not math.isnan(z.sum().item())
        )

    def terms(
        self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists, with_grad: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        c = self.core
        draw = self.draws
        self.draws += 1
        # the kernel once the torch path has done a compile's worth of pairs (kernel policy)
        if self.uses_kernel(z):
            sizes = _list_sizes(lists, z.shape)  # (computed once: the kernel path needs them too)
            work = pair_work(sizes, c.pair_method, c.num_pair_per_sample)
            if use_kernel("pairwise_sampled", draw, work) and fast.available():
                kernel, fcaps = cast(tuple, self._kernel), cast(tuple, self._fcaps)  # uses_kernel
                return pairwise_kernel_terms(c, kernel, fcaps, draw, z, y, lists, with_grad, sizes)
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
        ignore_index: float | None = None,
        grad: str = "analytic",
        **params: Any,
    ) -> None:
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index, grad=grad
        )
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
        y = one_hot * self.core.link_value_of_one_hot()
        if self.padding_value is not None:
            y = torch.where(ignore[:, None], torch.full_like(y, self.padding_value), y)
        return y

    def terms(
        self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists, with_grad: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        c = self.core
        if isinstance(c, CompositeSoftmax):
            return softmax_terms(c.scaling, c.gamma, c.target, z, y, lists, with_grad)
        values, grad = pointwise_terms(c.link, c.target, z, y, lists, with_grad)
        return lists.sum(values), grad

    def extra_repr(self) -> str:
        return f"{self.core!r}, {super().extra_repr()}"


def _ndim(x) -> int:
    return x.dim() if torch.is_tensor(x) else np.ndim(x)
