r"""Torch-only ranking baselines as heads, for side-by-side comparison with the selective heads.

Each baseline uses its standard published definition (the source is cited in its
docstring), the same interface as the selective heads (``head(y_pred, y_true, *, mask=None,
lengths=None, sample_weight=None)``, padding by mask, lengths or sentinel, ``reduction``
and weights) and the same padding machinery (:mod:`selrank.torch._masking`). The unit of
every baseline is a list; pairwise baselines *sum* over the pairs of a list, as
:class:`~selrank.torch.PairwiseLoss` does. Gradients come from autograd.

===============================  =====================================================
head                             definition
===============================  =====================================================
:class:`SoftmaxCrossEntropyLoss` :math:`-\sum_i \frac{y_i}{\sum_j y_j}\log\mathrm{softmax}(\hat s)_i`
:class:`ListNetLoss`             :math:`-\sum_i \mathrm{softmax}(y)_i\log\mathrm{softmax}(\hat s)_i`
:class:`ListMLELoss`             Plackett–Luce negative log-likelihood of the label order
:class:`RankNetLoss`             :math:`\sum_{y_a > y_b}\log(1 + e^{-\sigma(\hat s_a - \hat s_b)})`
:class:`LambdaLoss`              NDCG-weighted pairwise logistic loss (LambdaLoss framework)
:class:`ApproxNDCGLoss`          minus a smooth NDCG with sigmoid-approximated ranks
===============================  =====================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import torch
import torch.nn.functional as F

from .._validation import positive_float
from ._base import RankingHead
from ._masking import MaskedLists

__all__ = [
    "SoftmaxCrossEntropyLoss",
    "ListNetLoss",
    "ListMLELoss",
    "RankNetLoss",
    "LambdaLoss",
    "ApproxNDCGLoss",
    "LAMBDA_WEIGHTINGS",
]

_LN2 = math.log(2.0)


def _zero(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros((), dtype=x.dtype, device=x.device)


def _check_nonnegative(y, valid, owner: str) -> None:
    if y.device.type == "cpu" and bool((valid & (y < 0)).any()):
        raise ValueError(
            f"{owner} needs non-negative relevance labels; found {float(y[valid].min())!r}"
        )


def _pair_mask(valid: torch.Tensor) -> torch.Tensor:
    return valid[:, :, None] & valid[:, None, :]


def _ndcg_gains(y: torch.Tensor, valid: torch.Tensor, k: int | None):
    r"""Gains :math:`(2^{y}-1)/\mathrm{maxDCG@k}` and the discounts :math:`\log_2(1 + i)`.

    Lists without a relevant item have maxDCG 0 and gain 0 (they contribute no loss).
    """
    L = y.shape[-1]
    disc = torch.log2(torch.arange(2, L + 2, dtype=y.dtype, device=y.device))
    gain = torch.where(valid, torch.exp2(y) - 1.0, _zero(y))
    ideal = gain.sort(dim=-1, descending=True).values
    if k is not None:
        ideal = ideal[..., :k]
    max_dcg = (ideal / disc[: ideal.shape[-1]]).sum(dim=-1, keepdim=True)
    return gain / torch.where(max_dcg > 0, max_dcg, torch.ones_like(max_dcg)), disc


class SoftmaxCrossEntropyLoss(RankingHead):
    r"""Softmax cross entropy over a list (TF-Ranking ``SoftmaxLoss``).

    .. math:: L = -\sum_i \frac{y_i}{\sum_j y_j}\,\log \frac{e^{\hat s_i}}{\sum_j e^{\hat s_j}}

    Labels are normalised to a distribution per list; lists without a positive label are
    left out (weight 0), as in TF-Ranking (Pasumarthi et al., "TF-Ranking: Scalable
    TensorFlow Library for Learning-to-Rank", KDD 2019; Bruch et al., "An Analysis of the
    Softmax Cross Entropy Loss for Learning-to-Rank with Binary Relevance", ICTIR 2019).
    Labels must be non-negative.

    Examples
    --------
    >>> import torch
    >>> head = SoftmaxCrossEntropyLoss()
    >>> z = torch.tensor([[2.0, 0.0, 5.0]]); y = torch.tensor([[1.0, 0.0, -1.0]])
    >>> bool(torch.isclose(head(z, y), torch.nn.functional.cross_entropy(z[:, :2], torch.tensor([0]))))
    True
    """

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        valid = lists.valid
        _check_nonnegative(y, valid, "SoftmaxCrossEntropyLoss")
        t = torch.where(valid, y, _zero(y))
        s = t.sum(dim=-1, keepdim=True)
        pi = t / torch.where(s > 0, s, torch.ones_like(s))
        return -lists.sum(pi * lists.log_softmax(z))

    def _unit_valid(self, y, valid):
        relevant = (torch.where(valid, y, _zero(y)) > 0).any(dim=-1, keepdim=True)
        return valid & relevant


class ListNetLoss(RankingHead):
    r"""ListNet: cross entropy between the top-one probabilities of labels and scores.

    .. math:: L = -\sum_i \mathrm{softmax}(y)_i \,\log\mathrm{softmax}(\hat s)_i

    Cao et al., "Learning to Rank: From Pairwise Approach to Listwise Approach", ICML 2007
    (top-one probability with the exponential); as allRank's ``listNet`` but with an exact
    log-softmax instead of ``log(softmax + eps)``.

    Examples
    --------
    >>> import torch
    >>> head = ListNetLoss()
    >>> y = torch.tensor([[1.0, 0.0]])
    >>> float(head(y, y)) == float(-(torch.softmax(y, -1) * torch.log_softmax(y, -1)).sum())
    True
    """

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        target = torch.exp(lists.log_softmax(y))
        return -lists.sum(target * lists.log_softmax(z))


class ListMLELoss(RankingHead):
    r"""ListMLE: negative Plackett–Luce log-likelihood of the order given by the labels.

    .. math:: L = \sum_{i=1}^{n} \Big[\log \sum_{j \ge i} e^{\hat s_{\pi_j}} - \hat s_{\pi_i}\Big]

    with :math:`\pi` the items sorted by decreasing label. Xia et al., "Listwise Approach to
    Learning to Rank: Theory and Algorithm", ICML 2008; ties are broken at random as in
    allRank's ``listMLE`` (``ties="random"``, from torch's global generator) or by position
    (``ties="stable"``). The suffix log-sum-exp is computed with ``torch.logcumsumexp``.

    Examples
    --------
    >>> import torch
    >>> head = ListMLELoss(ties="stable")
    >>> z = torch.tensor([[0.0, 0.0]]); y = torch.tensor([[1.0, 0.0]])
    >>> round(float(head(z, y)), 6)        # log 2 + log 1
    0.693147
    """

    def __init__(
        self,
        *,
        ties: str = "random",
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
    ):
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index
        )
        if ties not in ("random", "stable"):
            raise ValueError(f"`ties` of ListMLELoss must be 'random' or 'stable'; got {ties!r}")
        self.ties = ties

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        valid = lists.valid
        key = torch.where(valid, y, torch.tensor(-math.inf, dtype=y.dtype, device=y.device))
        if self.ties == "random":
            shuffle = torch.rand(key.shape, device=key.device).argsort(dim=-1)
            order = shuffle.gather(
                -1, key.gather(-1, shuffle).argsort(dim=-1, descending=True, stable=True)
            )
        else:
            order = key.argsort(dim=-1, descending=True, stable=True)
        zs, vs = z.gather(-1, order), valid.gather(-1, order)
        # work with differences to the list maximum (a constant that cancels): subtracting a
        # suffix log-sum-exp of 1e4 from a score of 1e4 would cost 1e-3 absolute in float32
        ninf = torch.tensor(-math.inf, dtype=z.dtype, device=z.device)
        top = torch.where(vs, zs, ninf).amax(dim=-1, keepdim=True).detach()
        top = torch.where(torch.isfinite(top), top, _zero(z))
        ds = zs - top
        # padded items sort last; e^(min - 1e4) = 0 keeps them out of every suffix sum exactly
        low = (
            torch.where(vs, ds, torch.tensor(math.inf, dtype=z.dtype, device=z.device)).amin(
                dim=-1, keepdim=True
            )
            - 1e4
        ).detach()
        suffix = torch.logcumsumexp(torch.where(vs, ds, low).flip(-1), dim=-1).flip(-1)
        return torch.where(vs, suffix - ds, _zero(z)).sum(dim=-1)

    def extra_repr(self) -> str:
        return f"ties={self.ties!r}, {super().extra_repr()}"


class RankNetLoss(RankingHead):
    r"""RankNet: logistic loss on the score differences of all pairs with different labels.

    .. math:: L = \sum_{(a,b):\, y_a > y_b} \log\big(1 + e^{-\sigma(\hat s_a - \hat s_b)}\big)

    Burges et al., "Learning to Rank using Gradient Descent", ICML 2005 (allRank's
    ``rankNet`` averages the same pair losses over the batch; here a list's loss is the sum
    over its pairs, as in :class:`~selrank.torch.PairwiseLoss`).

    Parameters
    ----------
    sigma : float
        Slope :math:`\sigma > 0` of the logistic.

    Examples
    --------
    >>> import torch
    >>> head = RankNetLoss()
    >>> round(float(head(torch.zeros(1, 3), torch.tensor([[2.0, 1.0, 1.0]]))), 6)   # 2 pairs · log 2
    1.386294
    """

    def __init__(
        self,
        *,
        sigma: float = 1.0,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
    ):
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index
        )
        self.sigma = positive_float(sigma, "sigma", "RankNetLoss")

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        pairs = _pair_mask(lists.valid) & (y[:, :, None] > y[:, None, :])
        pair_loss = F.softplus(-self.sigma * (z[:, :, None] - z[:, None, :]))
        return torch.where(pairs, pair_loss, _zero(z)).sum(dim=(-1, -2))

    def extra_repr(self) -> str:
        return f"sigma={self.sigma!r}, {super().extra_repr()}"


def _lambda_ndcg_loss2(G, disc, pos):
    # delta_ij = |1/D(|i-j|) - 1/D(|i-j|+1)|, D(n) = log2(1 + n); 0 on the diagonal
    d = (pos[:, None] - pos[None, :]).abs()
    inv = 1.0 / torch.log2(1.0 + d.clamp_min(1).to(G.dtype))
    inv_next = 1.0 / torch.log2(2.0 + d.to(G.dtype))
    delta = torch.where(
        d > 0, (inv - inv_next).abs(), torch.zeros((), dtype=G.dtype, device=G.device)
    )
    return delta[None] * (G[:, :, None] - G[:, None, :]).abs()


def _lambda_lambdarank(G, disc, pos):
    inv = 1.0 / disc
    return (inv[:, None] - inv[None, :]).abs()[None] * (G[:, :, None] - G[:, None, :]).abs()


#: Pair weightings of :class:`LambdaLoss` (Wang et al. 2018; allRank's scheme names in brackets).
LAMBDA_WEIGHTINGS = {
    "ndcg_loss2": _lambda_ndcg_loss2,  # ndcgLoss2_scheme: a bound on NDCG, the paper's recommendation
    "lambdarank": _lambda_lambdarank,  # lambdaRank_scheme: |ΔNDCG| of swapping the pair
    "ndcg_loss2pp": None,  # ndcgLoss2PP_scheme: mu · ndcg_loss2 + lambdarank
}


class LambdaLoss(RankingHead):
    r"""LambdaLoss with NDCG weighting: pairwise logistic losses weighted by rank-dependent NDCG terms.

    Items are ranked by the current scores; for every pair of ranks :math:`i, j` whose
    labels differ (:math:`y_i > y_j`, both within the top ``k`` if given),

    .. math:: L = \sum_{y_i > y_j} w_{ij}\,\log_2\big(1 + e^{-\sigma(\hat s_i - \hat s_j)}\big),

    with :math:`G_i = (2^{y_i} - 1)/\mathrm{maxDCG}`, :math:`D_i = \log_2(1 + i)` and
    :math:`w_{ij} = |1/D_{|i-j|} - 1/D_{|i-j|+1}|\,|G_i - G_j|` (``"ndcg_loss2"``, NDCG-Loss2
    of Wang et al., "The LambdaLoss Framework for Ranking Metric Optimization", CIKM 2018),
    :math:`|1/D_i - 1/D_j|\,|G_i - G_j|` (``"lambdarank"``) or ``mu`` times the first plus the
    second (``"ndcg_loss2pp"``, NDCG-Loss2++). As allRank's ``lambdaLoss`` with
    ``reduction_log="binary"``, except that :math:`-\log_2\sigma(x)` is computed as
    ``softplus(-x)/ln 2`` rather than through clamped probabilities. Labels must be
    non-negative.

    Parameters
    ----------
    weighting : {"ndcg_loss2", "lambdarank", "ndcg_loss2pp"}
    k : int, optional
        Truncation rank (NDCG@k); ``None`` for the whole list.
    sigma : float
        Slope of the logistic.
    mu : float
        Weight of NDCG-Loss2 in NDCG-Loss2++.

    Examples
    --------
    >>> import torch
    >>> head = LambdaLoss()
    >>> y = torch.tensor([[2.0, 0.0, 1.0]])
    >>> bool(head(torch.tensor([[3.0, 2.0, 1.0]]), y) < head(torch.tensor([[1.0, 2.0, 3.0]]), y))
    True
    """

    def __init__(
        self,
        *,
        weighting: str = "ndcg_loss2",
        k: int | None = None,
        sigma: float = 1.0,
        mu: float = 10.0,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
    ):
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index
        )
        if weighting not in LAMBDA_WEIGHTINGS:
            raise ValueError(
                f"`weighting` of LambdaLoss must be one of {sorted(LAMBDA_WEIGHTINGS)}; got {weighting!r}"
            )
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"`k` of LambdaLoss must be a positive integer or None; got {k!r}")
        self.weighting, self.k = weighting, k
        self.sigma = positive_float(sigma, "sigma", "LambdaLoss")
        self.mu = positive_float(mu, "mu", "LambdaLoss")

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        valid = lists.valid
        _check_nonnegative(y, valid, "LambdaLoss")
        L = z.shape[-1]
        key = torch.where(
            valid, z.detach(), torch.tensor(-math.inf, dtype=z.dtype, device=z.device)
        )
        order = key.argsort(dim=-1, descending=True, stable=True)
        zs, ys, vs = z.gather(-1, order), y.gather(-1, order), valid.gather(-1, order)
        G, disc = _ndcg_gains(ys, vs, self.k)
        pos = torch.arange(L, device=z.device)
        if self.weighting == "ndcg_loss2pp":
            w = self.mu * _lambda_ndcg_loss2(G, disc, pos) + _lambda_lambdarank(G, disc, pos)
        else:
            weigh = cast(
                Callable[..., torch.Tensor], LAMBDA_WEIGHTINGS[self.weighting]
            )  # not None here
            w = weigh(G, disc, pos)
        pairs = _pair_mask(vs) & (ys[:, :, None] > ys[:, None, :])
        if self.k is not None:
            top = pos < self.k
            pairs = pairs & (top[:, None] & top[None, :])[None]
        pair_loss = w * F.softplus(-self.sigma * (zs[:, :, None] - zs[:, None, :])) / _LN2
        return torch.where(pairs, pair_loss, _zero(z)).sum(dim=(-1, -2))

    def extra_repr(self) -> str:
        return f"weighting={self.weighting!r}, k={self.k!r}, sigma={self.sigma!r}, mu={self.mu!r}, {super().extra_repr()}"


class ApproxNDCGLoss(RankingHead):
    r"""ApproxNDCG: minus NDCG with ranks replaced by a sigmoid approximation.

    .. math::
        \hat\pi_i = 1 + \sum_{j \ne i} \sigma\big(\alpha(\hat s_j - \hat s_i)\big), \qquad
        L = -\sum_i \frac{2^{y_i} - 1}{\mathrm{maxDCG}\,\log_2(1 + \hat\pi_i)}

    Qin, Liu and Li, "A General Approximation Framework for Direct Optimization of
    Information Retrieval Measures", Information Retrieval 13 (2010), eq. 19–21; as
    allRank's ``approxNDCGLoss`` (no truncation, loss in ``[-1, 0]``; lists without a
    relevant item give 0). Labels must be non-negative.

    Parameters
    ----------
    alpha : float
        Sharpness of the rank approximation.

    Examples
    --------
    >>> import torch
    >>> head = ApproxNDCGLoss(alpha=50.0)
    >>> round(float(head(torch.tensor([[3.0, 2.0, 1.0]]), torch.tensor([[2.0, 1.0, 0.0]]))), 4)   # -NDCG
    -1.0
    """

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        reduction: str = "mean",
        padding_value: float | None = -1.0,
        ignore_index: float | None = None,
    ):
        super().__init__(
            reduction=reduction, padding_value=padding_value, ignore_index=ignore_index
        )
        self.alpha = positive_float(alpha, "alpha", "ApproxNDCGLoss")

    def unit_values(self, z: torch.Tensor, y: torch.Tensor, lists: MaskedLists) -> torch.Tensor:
        valid = lists.valid
        _check_nonnegative(y, valid, "ApproxNDCGLoss")
        G, _ = _ndcg_gains(y, valid, None)
        pairs = _pair_mask(valid)
        pairs = pairs & ~torch.eye(z.shape[-1], dtype=torch.bool, device=z.device)[None]
        above = torch.sigmoid(
            self.alpha * (z[:, None, :] - z[:, :, None])
        )  # [b, i, j] = σ(α(ŝ_j − ŝ_i))
        rank = 1.0 + torch.where(pairs, above, _zero(z)).sum(dim=-1)
        return -(G / torch.log2(1.0 + rank)).sum(dim=-1)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha!r}, {super().extra_repr()}"
