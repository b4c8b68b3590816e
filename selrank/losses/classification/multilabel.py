r"""Multi-label "softmax + cross entropy" and its n-way m-class generalisations (``002``).

Su Jianlin's multi-label loss puts the positive and the negative classes of a sample each
inside one log: the loss of a class set is roughly the *log* of its size, which balances
few positives against many negatives, and its decision threshold is 0 (positives above,
negatives below). Seen as an "n-way 2-class" problem it generalises to "n-way m-class"
(``W`` ways per sample, ``M`` classes per way) in two ways, both kept here as baselines:

* the hard-label generalisation, eq. (loss-1)
  :math:`\sum_j \log\bigl(1 + \sum_{i,k\neq j} t_{ij}\,e^{s_{ik} - s_{ij}}\bigr)`,
  fine for hard labels, without a known closed-form optimum for soft ones;
* the mean-centred variant, eq. (loss-3)
  :math:`\sum_j \log\bigl(1 + \sum_i t_{ij}\,e^{\bar s_i - s_{ij}}\bigr)`, whose soft-label
  optimum is :math:`t_i = \mathrm{softmax}(s_i)` but which *fails on hard labels*: any
  :math:`s_{iy} \gg \bar s_i` makes it ≈ 0 without :math:`s_{iy}` being the largest score.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _array as A
from ..._array import Array
from .._base import as_target_array, as_weight
from ._base import (
    LabelLoss,
    check_bool,
    check_labels,
    label_class_means,
    log1p_sum_exp,
    log_frequencies,
    log_softmax,
    loo_logsumexp,
)

__all__ = ["MultiLabelSoftmaxCrossEntropy", "NWaySoftmaxCrossEntropy"]


class MultiLabelSoftmaxCrossEntropy(LabelLoss):
    r"""Multi-label "softmax + cross entropy" (``002``; docs/math.md §6).

    .. math::
        \ell(s, t) = \log\Bigl(1 + \sum_{j\in\Omega_{neg}} e^{s_j}\Bigr)
                   + \log\Bigl(1 + \sum_{i\in\Omega_{pos}} e^{-s_i}\Bigr)

    for multi-hot rows :math:`t \in \{0, 1\}^K` (:math:`\Omega_{pos} = \{t = 1\}`), or class
    indices (one positive). Each term is a log-sum-exp with an extra zero logit, so an empty
    class set contributes exactly 0 and nothing overflows. With
    :math:`w_k = e^{\pm s_k}/(1 + \sum e^{\pm s})` the weight of class ``k`` in its term,
    the gradient is :math:`w_k` for negatives and :math:`-w_k` for positives; the Hessian
    diagonal is :math:`w_k (1 - w_k)`. Convex. The natural threshold is 0.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[2.0, -1.0, 0.5]])
    >>> t = np.array([[1.0, 0.0, 1.0]])
    >>> v = MultiLabelSoftmaxCrossEntropy().loss(s, t)
    >>> bool(np.isclose(v, np.log(1 + np.exp(-1.0)) + np.log(1 + np.exp(-2.0) + np.exp(-0.5))))
    True
    """

    name = "multilabel_softmax_cross_entropy"
    labels = "multi_hot"
    min_classes = 1
    examples = [{}]

    def __init__(self):
        self._params = {}

    def _parts(self, z, t, xp):
        neg, wn = log1p_sum_exp(z, t == 0, xp)
        pos, wp = log1p_sum_exp(-z, t > 0, xp)
        return neg + pos, wn, wp

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return self._parts(z, t, xp)[0]

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        _, wn, wp = self._parts(z, t, xp)
        return wn - wp, wn * (1.0 - wn) + wp * (1.0 - wp)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        """Zeros (``[K]``), the loss's decision threshold: the classes of a sample share a log, so the risk of a constant has no closed-form minimiser."""
        return self._zeros_constant(y_true, sample_weight, n_classes)


class NWaySoftmaxCrossEntropy(LabelLoss):
    r"""n-way m-class generalisation of the multi-label softmax cross entropy (``002``).

    Scores :math:`s_{ij}` of ``y_pred`` of shape ``[n, W, M]`` (``W`` ways of ``M`` classes
    per sample; ``[n, M]`` is one way) and label distributions :math:`t_{ij}` per way (or
    class indices of shape ``y_pred.shape[:-1]``). Per sample:

    ``centered=False`` — eq. (loss-1), hard labels:

    .. math::
        \ell = \sum_j \log\bigl(1 + A_j\bigr), \qquad
        A_j = \sum_i t_{ij}\sum_{k\neq j} e^{s_{ik} - s_{ij}} = \sum_i t_{ij}\,\frac{1 - p_{ij}}{p_{ij}},

    :math:`p_i = \mathrm{softmax}(s_i)`. With one way and hard labels it *is* softmax cross
    entropy; with ``M = 2`` it is the multi-label loss of the score differences. Computed
    from a leave-one-out log-sum-exp (stable for any scores). With
    :math:`\beta_{ij} = t_{ij} / (p_{ij}(1 + A_j)) \in [0, 1]` and
    :math:`B_i = \sum_j \beta_{ij}`:

    .. math::
        g_{ik} = p_{ik} B_i - \beta_{ik}, \qquad
        h_{ik} = p_{ik}(1 - p_{ik}) B_i + \gamma_{ik}(1 - 2 p_{ik}) + p_{ik}^2\,\Gamma_i,

    :math:`\gamma = \beta(1 - \beta)`, :math:`\Gamma_i = \sum_j \gamma_{ij}` (derived from
    :math:`\beta_{ij} = t_{ij}/(t_{ij} + p_{ij}c_{ij})` with :math:`c_{ij}` free of way ``i``).

    ``centered=True`` — eq. (loss-3), the mean-centred variant:

    .. math::
        \ell = \sum_j \log\Bigl(1 + \sum_i t_{ij}\,e^{\bar s_i - s_{ij}}\Bigr), \qquad
        g_{ik} = P_i / M - \rho_{ik}, \quad h_{ik} = \Gamma_i / M^2 + \gamma_{ik}(1 - 2/M),

    :math:`\rho_{ij} = t_{ij}e^{\bar s_i - s_{ij}} / (1 + \sum_{i'} t_{i'j}e^{\bar s_{i'} - s_{i'j}})`,
    :math:`P_i = \sum_j\rho_{ij}`, :math:`\gamma = \rho(1-\rho)`, :math:`\Gamma_i = \sum_j\gamma_{ij}`.
    Its soft-label optimum is :math:`\mathrm{softmax}(s_i) = t_i` (the gradient vanishes there
    and the loss is convex), but **it fails on hard labels**: the loss is ≈ 0 as soon as
    :math:`s_{iy} \gg \bar s_i`, which does not make :math:`s_{iy}` the largest score of its
    way (e.g. ``s = [10, 20, -100]``, ``y = 0``: loss ``≈ e^{-33}``, argmax 1). Kept as a
    baseline, as the source does.

    Both are convex; with ``M = 2`` both reduce to
    :class:`MultiLabelSoftmaxCrossEntropy` (the centred one of half the score difference).

    Parameters
    ----------
    centered : bool
        Use the mean-centred variant (eq. loss-3).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[10.0, 20.0, -100.0]])
    >>> float(NWaySoftmaxCrossEntropy().loss(z, np.array([0]))) > 9      # = softmax CE, ~10
    True
    >>> float(NWaySoftmaxCrossEntropy(centered=True).loss(z, np.array([0]))) < 1e-12
    True
    """

    name = "nway_softmax_cross_entropy"
    labels = "distribution"
    pred_ndims = (2, 3)
    examples = [{}, {"centered": True}]

    def __init__(self, *, centered: bool = False):
        self.centered = check_bool(centered, "centered", "NWaySoftmaxCrossEntropy")
        self._params = {"centered": centered}

    @staticmethod
    def _ways(a):
        return a[:, None, :] if a.ndim == 2 else a

    def _parts(self, z, t, xp):
        z3, t3 = self._ways(z), self._ways(t)
        pos = t3 > 0
        logt = xp.log(xp.where(pos, t3, xp.ones_like(t3)))
        if self.centered:
            # x = log t + mean(s) - s_j cancels terms of up to 2e4 where scores sit near
            # +-1e4 (even as differences to the maximum): formed in float64 from the exact
            # scores (4.8e-4 relative error of a float32 loss otherwise), then cast back
            if A.is_torch(z3):  # (MPS has no float64: there the float32 difference stays)
                z64 = z3 if z3.device.type == "mps" else z3.double()
            else:
                z64 = z3.astype(np.float64)
            centred = xp.mean(z64, axis=-1, keepdims=True) - z64
            x = logt + (centred.to(z3.dtype) if A.is_torch(z3) else centred.astype(z3.dtype))
            l1pa, rho = log1p_sum_exp(x, pos, xp, axis=-2)
            return z3, t3, xp.sum(l1pa, axis=-1), rho
        logp = log_softmax(z3, xp)
        x = logt + loo_logsumexp(z3, xp, minus_self=True)  # log(t (1 - p) / p)
        l1pa, _ = log1p_sum_exp(x, pos, xp, axis=-2)
        ninf = xp.full_like(x, -np.inf)
        beta = xp.exp(xp.where(pos, logt - logp - l1pa[:, None, :], ninf))
        return z3, logp, xp.sum(l1pa, axis=-1), beta

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return self._parts(z, t, xp)[2]

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        z3, aux, _, w = self._parts(z, t, xp)
        gam = w * (1.0 - w)
        Gam = xp.sum(gam, axis=-1, keepdims=True)
        if self.centered:
            M = z3.shape[-1]
            g = xp.sum(w, axis=-1, keepdims=True) / M - w
            h = Gam / (M * M) + gam * (1.0 - 2.0 / M)
        else:
            p = xp.exp(aux)
            B = xp.sum(w, axis=-1, keepdims=True)
            g = p * B - w
            h = p * (1.0 - p) * B + gam * (1.0 - 2.0 * p) + p * p * Gam
        if z.ndim == 2:
            g, h = g[:, 0, :], h[:, 0, :]
        return g, h

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r"""Constant scores, ``[M]`` (one way) or ``[W, M]``.

        One way, ``centered=False``: the loss is softmax cross entropy and the optimum is
        :math:`\log\pi` (zero mean; absent classes floored at :math:`e^{-30}`). Otherwise the
        ways share logs and no closed form is known: zeros, the uninformative start.
        ``y_true``: class indices ``[n]`` (one way) or label rows ``[n, M]`` / ``[n, W, M]``.
        """
        y = np.asarray(A.to_numpy(as_target_array(y_true)), dtype=np.float64)
        if y.ndim == 3:
            check_labels(y, self.labels, "NWaySoftmaxCrossEntropy")
            as_weight(sample_weight, y.shape[0])
            return np.zeros(y.shape[1:])
        pi = label_class_means(y, sample_weight, n_classes, "NWaySoftmaxCrossEntropy", self.labels)
        if self.centered:
            return np.zeros(pi.shape)
        c = log_frequencies(pi)
        return c - c.mean()
