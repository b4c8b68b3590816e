r"""Single-logit classification losses of Keren, Sabato & Schuller (2019), docs/math.md §6.

The *Principle of Logit Separation* (PoLS, Definition 1 of ``001``): every true logit
:math:`z_{y}(x)` is above every false logit :math:`z_{y''}(x')` across the whole sample, so
that one logit alone, thresholded, answers "is ``x`` of class ``j``?". A loss is *aligned*
with the PoLS if a small enough loss guarantees the separation.

========================== =========== ======================================= ==========
name                       class       definition                               aligned
========================== =========== ======================================= ==========
``softmax_cross_entropy``  (003 file)  :math:`-\log p_y`  (eq. 1)               no
``max_margin``             MaxMargin   Crammer–Singer (eq. 2)                   no
``softmax_cauchy_schwarz`` ...         :math:`-\log p_y/\|p\|` (eq. 4)          no
``sigmoid_cauchy_schwarz`` ...         :math:`-\log\sigma_y/\|\sigma\|` (eq. 5) no
``softmax_tanimoto``       ...         eq. 7                                    no
``self_normalization``     ...         :math:`-\log p_y + \alpha\log^2 Z`       yes
``nce``                    NCE         eq. 8, expectation form                  yes
``binary_cross_entropy``   ...         one-vs-all sigmoid CE (§4.3)             yes
``sigmoid_tanimoto``       ...         eq. 9                                    yes
``batch_cross_entropy``    ...         Definition 2                             yes
``batch_max_margin``       ...         Definition 3                             yes
========================== =========== ======================================= ==========

Targets are class indices ``[n]`` or label rows ``[n, K]``; ``y_pred`` are the ``[n, K]``
logits. Everything is computed in log space (log-sum-exp, log-sigmoid) and stays finite for
logits of magnitude ``1e4`` in float32 and float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _array as A
from ..._array import Array
from ..._groups import Groups, as_groups
from ..._validation import positive_float
from .._base import group_weights
from ._base import (
    BatchLabelLoss,
    LabelLoss,
    _const,
    check_bool,
    check_positive_int,
    group_hits,
    label_class_means,
    log_frequencies,
    log_softmax,
    masked_max,
    relu,
    step,
)

__all__ = [
    "MaxMargin",
    "SoftmaxCauchySchwarz",
    "SigmoidCauchySchwarz",
    "SoftmaxTanimoto",
    "SigmoidTanimoto",
    "SelfNormalization",
    "NCE",
    "BinaryCrossEntropy",
    "BatchCrossEntropy",
    "BatchMaxMargin",
]


def _max_margin_parts(z, t, xp, margin):
    """Crammer–Singer pieces: true logit, max false logit, its selector, the hinge argument."""
    zy = xp.sum(t * z, axis=-1)
    zf, sel = masked_max(z, t == 0, xp)
    return zy, zf, sel, margin - zy + zf


class MaxMargin(LabelLoss):
    r"""Crammer–Singer multiclass max-margin loss (``001`` eq. 2) — not PoLS-aligned.

    .. math:: \ell(z, y) = \max\bigl(0,\ \gamma - z_y + \max_{j\ne y} z_j\bigr)

    Gradient (a.e.): with :math:`a = 1[\gamma - z_y + \max_{j\neq y} z_j > 0]`,
    :math:`-a` on the true logit and :math:`+a` on the largest false logit (split evenly
    between tied maxima, as autograd of ``amax`` does). Piecewise linear: the Hessian is 0
    almost everywhere (returned as 0).

    Parameters
    ----------
    margin : float
        :math:`\gamma > 0`, the separation demanded between the true and the best false logit.

    Examples
    --------
    >>> import numpy as np
    >>> loss = MaxMargin(margin=1.0)
    >>> loss.loss(np.array([[2.0, 1.5, -1.0]]), np.array([0]), reduction="none").tolist()
    [0.5]
    >>> g, h = loss.grad_hess(np.array([[2.0, 1.5, -1.0]]), np.array([0]))
    >>> g.tolist(), h.tolist()
    ([[-1.0, 1.0, 0.0]], [[0.0, 0.0, 0.0]])
    """

    name = "max_margin"
    labels = "one_hot"
    examples = [{}, {"margin": 0.5}]

    def __init__(self, *, margin: float = 1.0):
        self.margin = positive_float(margin, "margin", "MaxMargin")
        self._params = {"margin": margin}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return relu(_max_margin_parts(z, t, xp, self.margin)[3], xp)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        _, _, sel, u = _max_margin_parts(z, t, xp, self.margin)
        g = step(u, xp)[:, None] * (sel - t)
        return g, xp.zeros_like(g)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r"""Best constant logits: :math:`\gamma\,e_{\text{mode}}` if the modal class has weight > 1/2, else 0.

        With class frequencies :math:`\pi`, :math:`c = \gamma e_m` costs
        :math:`2\gamma(1 - \pi_m)` and :math:`c = 0` costs :math:`\gamma`; no other constant
        does better (the risk is a linear program over :math:`c`, checked against an LP
        solver in the tests). The minimiser is unique only up to a common shift.
        """
        pi = label_class_means(y_true, sample_weight, n_classes, "MaxMargin", self.labels)
        c = np.zeros(pi.shape)
        m = int(np.argmax(pi))
        if pi[m] > 0.5:
            c[m] = self.margin
        return c


class SoftmaxCauchySchwarz(LabelLoss):
    r"""Softmax Cauchy–Schwarz divergence (``001`` eq. 3–4) — not PoLS-aligned.

    .. math::
        \ell(z, y) = -\log\frac{p_y}{\|p\|_2}, \quad p = \mathrm{softmax}(z)
        \;=\; \tfrac12\,\mathrm{logsumexp}(2z) - z_y

    (the second form, exact, is what is computed: it needs one log-sum-exp and never forms
    :math:`p`). Gradient :math:`r - t` with :math:`r = \mathrm{softmax}(2z)`; Hessian diagonal
    :math:`2 r_k (1 - r_k)`; convex. Infimum 0, approached as :math:`z_y - z_j \to \infty`.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[1.0, 0.0, -1.0]])
    >>> p = np.exp(z) / np.exp(z).sum()
    >>> v = SoftmaxCauchySchwarz().loss(z, np.array([0]))
    >>> bool(np.isclose(v, -np.log(p[0, 0] / np.linalg.norm(p))))
    True
    """

    name = "softmax_cauchy_schwarz"
    labels = "one_hot"
    examples = [{}]

    def __init__(self):
        self._params = {}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        # = -1/2 log softmax(2z)_y for one-hot t, formed around the maximum (float32-exact)
        return -0.5 * xp.sum(t * log_softmax(2.0 * z, xp), axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        r = xp.exp(log_softmax(2.0 * z, xp))
        return r - t, 2.0 * r * (1.0 - r)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r""":math:`c = \tfrac12\log\pi` (zero mean): :math:`\mathrm{softmax}(2c) = \pi`; absent classes floored at :math:`e^{-30}`."""
        pi = label_class_means(
            y_true, sample_weight, n_classes, "SoftmaxCauchySchwarz", self.labels
        )
        c = 0.5 * log_frequencies(pi)
        return c - c.mean()


class SigmoidCauchySchwarz(LabelLoss):
    r"""Sigmoid Cauchy–Schwarz divergence (``001`` eq. 5) — not PoLS-aligned.

    .. math::
        \ell(z, y) = -\log\frac{\sigma(z_y)}{\|\sigma(z)\|_2}
        = -\log\sigma(z_y) + \tfrac12\,\mathrm{logsumexp}_k\bigl(2\log\sigma(z_k)\bigr)

    computed with ``log_sigmoid`` (finite for any logit). With :math:`r =
    \mathrm{softmax}(2\log\sigma(z))` and :math:`\bar\sigma = 1 - \sigma = \sigma(-z)`:

    .. math::
        g_k = (r_k - t_k)\,\bar\sigma_k, \qquad
        h_k = 2 r_k (1 - r_k)\,\bar\sigma_k^2 + (t_k - r_k)\,\sigma_k\bar\sigma_k .

    Not convex (:math:`h_k < 0` is possible). Infimum 0.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[1.0, -2.0]])
    >>> s = 1 / (1 + np.exp(-z))
    >>> v = SigmoidCauchySchwarz().loss(z, np.array([0]))
    >>> bool(np.isclose(v, -np.log(s[0, 0] / np.linalg.norm(s))))
    True
    """

    name = "sigmoid_cauchy_schwarz"
    labels = "one_hot"
    examples = [{}]

    def __init__(self):
        self._params = {}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        # = -1/2 log softmax(2 log σ(z))_y for one-hot t (no large log-sum-exp is subtracted)
        return -0.5 * xp.sum(t * log_softmax(2.0 * A.log_sigmoid(z, xp), xp), axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        r = xp.exp(log_softmax(2.0 * A.log_sigmoid(z, xp), xp))
        s, sb = A.sigmoid(z, xp), A.sigmoid(-z, xp)
        return (r - t) * sb, 2.0 * r * (1.0 - r) * sb * sb + (t - r) * s * sb

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        """Zeros (``[K]``): the risk of a constant is not convex and has no closed-form minimiser; 0 is the neutral start."""
        return self._zeros_constant(y_true, sample_weight, n_classes)


def _tanimoto(a, a1, a2, N, N1, N2):
    r"""Value, gradient and Hessian diagonal of :math:`\ell = -a / (1 + N - a)`.

    ``a``, ``N`` per row; ``a1, a2, N1, N2`` their first and second partial derivatives per
    logit. :math:`D = 1 + N - a \ge 1` (the norm bounds every coordinate), so no division
    can blow up.
    """
    D = 1.0 + N - a
    Dc = D[:, None]
    ac = a[:, None]
    D1, D2 = N1 - a1, N2 - a2
    value = -a / D
    g = -(a1 * (1.0 + N[:, None]) - ac * N1) / (Dc * Dc)
    h = (
        -a2 / Dc
        + 2.0 * a1 * D1 / (Dc * Dc)
        + ac * D2 / (Dc * Dc)
        - 2.0 * ac * D1 * D1 / (Dc * Dc * Dc)
    )
    return value, g, h


class _Tanimoto(LabelLoss):
    labels = "one_hot"
    examples = [{}, {"squared_norm": True}]

    def __init__(self, *, squared_norm: bool = False):
        self.squared_norm = check_bool(squared_norm, "squared_norm", type(self).__name__)
        self._params = {"squared_norm": squared_norm}

    def _parts(self, z, t, xp):
        """``(value, gradient, Hessian diagonal)`` of the subclass's normalisation."""
        raise NotImplementedError

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return self._parts(z, t, xp)[0]

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        _, g, h = self._parts(z, t, xp)
        return g, h

    def optimal_constant(
        self, y_true, sample_weight=None, *, group=None, n_classes: int | None = None
    ):
        """Zeros (``[K]``): the Tanimoto risk of a constant is not convex and has no closed-form minimiser; 0 is the neutral start."""
        return self._zeros_constant(y_true, sample_weight, n_classes)


class SoftmaxTanimoto(_Tanimoto):
    r"""Softmax Tanimoto loss (``001`` eq. 6–7) — not PoLS-aligned; values in :math:`[-1, 0)`.

    .. math::
        \ell(z, y) = -\frac{p_y}{1 + \|p\| - p_y}, \qquad p = \mathrm{softmax}(z),

    with :math:`\|p\| = \|p\|_2` as the paper writes it, or :math:`\|p\|_2^2` (Janocha &
    Czarnecki's Tanimoto coefficient) with ``squared_norm=True``. Minimum :math:`-1` at
    :math:`p_y = 1` — negative, which only shifts the loss (the paper keeps it so).

    Gradient and exact Hessian diagonal by the quotient rule on :math:`-a/D`,
    :math:`D = 1 + N - a \ge 1`, from :math:`a = p_y`, :math:`a'_k = p_y (t_k - p_k)`,
    :math:`a''_k = p_y[(t_k - p_k)^2 - p_k(1 - p_k)]` and :math:`S = \sum p_j^2`,
    :math:`S'_k = 2 p_k (p_k - S)`,
    :math:`S''_k = 4 p_k^2 (1 - p_k) - 2 p_k (1 - p_k) S - 4 p_k^2 (p_k - S)`
    (:math:`N = \sqrt S`: :math:`N' = S'/2N`, :math:`N'' = S''/2N - S'^2/4N^3`). Not convex.

    Parameters
    ----------
    squared_norm : bool
        Use :math:`\|p\|_2^2` instead of :math:`\|p\|_2`.

    Examples
    --------
    >>> import numpy as np
    >>> loss = SoftmaxTanimoto()
    >>> round(float(loss.loss(np.array([[30.0, 0.0]]), np.array([0]))), 6)   # p_y -> 1
    -1.0
    """

    name = "softmax_tanimoto"

    def _parts(self, z, t, xp):
        p = xp.exp(log_softmax(z, xp))
        py = xp.sum(t * p, axis=-1)
        pyc = py[:, None]
        d = t - p
        a1 = pyc * d
        a2 = pyc * (d * d - p * (1.0 - p))
        S = xp.sum(p * p, axis=-1)
        Sc = S[:, None]
        S1 = 2.0 * p * (p - Sc)
        S2 = 4.0 * p * p * (1.0 - p) - 2.0 * p * (1.0 - p) * Sc - 4.0 * p * p * (p - Sc)
        if self.squared_norm:
            return _tanimoto(py, a1, a2, S, S1, S2)
        N = xp.sqrt(S)  # >= 1/sqrt(K): no division problem
        Nc = N[:, None]
        return _tanimoto(
            py, a1, a2, N, S1 / (2.0 * Nc), S2 / (2.0 * Nc) - S1 * S1 / (4.0 * Nc * Nc * Nc)
        )


class SigmoidTanimoto(_Tanimoto):
    r"""Sigmoid Tanimoto loss (``001`` eq. 9) — PoLS-aligned; values in :math:`[-1, 0)`.

    .. math::
        \ell(z, y) = -\frac{\sigma(z_y)}{1 + \|\sigma(z)\| - \sigma(z_y)}

    (:math:`\|\cdot\|_2`, or its square with ``squared_norm=True``). The infimum :math:`-1`
    needs :math:`\sigma(z_y) \to 1` and :math:`\sigma(z_j) \to 0`, i.e. true logits above 0 and
    false ones below: alignment.

    Gradient and exact Hessian diagonal by the quotient rule (see :class:`SoftmaxTanimoto`)
    with :math:`a = \sigma_y`, :math:`a' = t\,\sigma'`, :math:`a'' = t\,\sigma''`,
    :math:`\sigma' = \sigma\bar\sigma`, :math:`\sigma'' = \sigma'(\bar\sigma - \sigma)`. For the
    plain norm, :math:`N' = \rho\sigma'` and
    :math:`N'' = \rho\bar\sigma\sigma'(1 - \rho^2) + \rho\sigma''` with
    :math:`\rho_k = \sigma_k / N = \exp(\log\sigma_k - \tfrac12\mathrm{logsumexp}(2\log\sigma))`,
    which stays finite even when every :math:`\sigma_k` underflows to 0. Not convex.

    Examples
    --------
    >>> import numpy as np
    >>> loss = SigmoidTanimoto()
    >>> round(float(loss.loss(np.array([[40.0, -40.0]]), np.array([0]))), 6)
    -1.0
    >>> round(float(loss.loss(np.array([[40.0, 40.0]]), np.array([0]))), 6)  # false logit high: -1/sqrt(2)
    -0.707107
    """

    name = "sigmoid_tanimoto"

    def _parts(self, z, t, xp):
        s, sb = A.sigmoid(z, xp), A.sigmoid(-z, xp)
        s1 = s * sb
        s2 = s1 * (sb - s)
        a = xp.sum(t * s, axis=-1)
        a1, a2 = t * s1, t * s2
        if self.squared_norm:
            S = xp.sum(s * s, axis=-1)
            return _tanimoto(a, a1, a2, S, 2.0 * s * s1, 2.0 * s1 * s1 + 2.0 * s * s2)
        ls = A.log_sigmoid(z, xp)
        log_n = 0.5 * A.logsumexp(2.0 * ls, xp)
        rho = xp.exp(0.5 * log_softmax(2.0 * ls, xp))  # = σ / N, without subtracting log N
        N1 = rho * s1
        N2 = rho * sb * s1 * (1.0 - rho * rho) + rho * s2
        return _tanimoto(a, a1, a2, xp.exp(log_n), N1, N2)


class SelfNormalization(LabelLoss):
    r"""Self-normalization loss (Devlin et al. 2014; ``001`` §4.1) — PoLS-aligned.

    .. math::
        \ell(z, t) = -\sum_k t_k \log p_k + \alpha\,\ell_Z^2, \qquad
        \ell_Z = \log\sum_j e^{z_j}

    (one-hot :math:`t` gives the paper's :math:`-\log p_y + \alpha\log^2 Z`; soft label rows
    are accepted). The penalty pulls the normaliser to 1, so that :math:`e^{z_j}` is itself
    a probability: true logits tend to 0, false ones to :math:`-\infty` (App. A: a small
    loss gives true > −1 > false).

    Gradient :math:`p_k (1 + 2\alpha\ell_Z) - t_k`; Hessian diagonal
    :math:`p_k (1 - p_k)(1 + 2\alpha\ell_Z) + 2\alpha p_k^2` (negative where
    :math:`\ell_Z < -1/2\alpha`: not convex there).

    Parameters
    ----------
    alpha : float
        Weight :math:`\alpha > 0` of the squared log-normaliser (Devlin et al. use 0.1; the
        paper does not fix it).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.log(np.array([[0.7, 0.2, 0.1]]))       # normaliser 1: only cross entropy left
    >>> bool(np.isclose(SelfNormalization(alpha=0.5).loss(z, np.array([0])), -np.log(0.7)))
    True
    """

    name = "self_normalization"
    labels = "distribution"
    min_classes = 1
    examples = [{}, {"alpha": 1.0}]

    def __init__(self, *, alpha: float = 0.1):
        self.alpha = positive_float(alpha, "alpha", "SelfNormalization")
        self._params = {"alpha": alpha}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        lz = A.logsumexp(z, xp)
        return -xp.sum(t * log_softmax(z, xp), axis=-1) + self.alpha * lz * lz

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        lz = A.logsumexp(z, xp, keepdims=True)
        p = xp.exp(log_softmax(z, xp))
        f = 1.0 + 2.0 * self.alpha * lz
        return p * f - t, p * (1.0 - p) * f + 2.0 * self.alpha * p * p

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r""":math:`c = \log\pi` exactly (normaliser 1): the stationarity :math:`p(1 + 2\alpha\ell_Z) = \pi` forces :math:`\ell_Z = 0`.

        Absent classes are floored at :math:`e^{-30}` and the floor renormalised away.
        """
        pi = label_class_means(y_true, sample_weight, n_classes, "SelfNormalization", self.labels)
        c = log_frequencies(pi)
        return c - np.log(np.exp(c).sum())


class NCE(LabelLoss):
    r"""Noise-contrastive estimation loss (Mnih & Teh 2012; ``001`` eq. 8) — PoLS-aligned.

    .. math::
        \ell(z, y) = -\log g_y - \tau\,\mathbb E_{j\sim q}\bigl[\log(1 - g_j)\bigr],
        \qquad g_j = \frac{1}{1 + \tau q_j e^{-z_j}} = \sigma(z_j - \log(\tau q_j)).

    This is the **expectation form**: the expectation over the :math:`\tau` noise samples
    is taken exactly, :math:`\tau\sum_j q_j\,\mathrm{softplus}(z_j - b_j)` with
    :math:`b_j = \log(\tau q_j)`, instead of the Monte-Carlo average of :math:`\tau` sampled
    classes used to speed up training (its expectation). The sum runs over all classes,
    the true one included, as in eq. 8. Soft label rows :math:`t` replace
    :math:`-\log g_y` by :math:`\sum_k t_k\,\mathrm{softplus}(b_k - z_k)`.

    Gradient :math:`-t_k\,\sigma(b_k - z_k) + \tau q_k\,\sigma(z_k - b_k)`; Hessian diagonal
    :math:`(t_k + \tau q_k)\,\sigma(z_k - b_k)\,\sigma(b_k - z_k)`; convex.

    Parameters
    ----------
    n_noise : int
        :math:`\tau`, the number of noise samples per example (a positive integer; the paper
        leaves its value open).
    noise : array-like of shape (K,) or None
        The noise distribution :math:`q` (positive, summing to 1). ``None``: uniform over
        the ``K`` classes of ``y_pred``.

    Examples
    --------
    >>> import numpy as np
    >>> loss = NCE(n_noise=2)                      # uniform q over 2 classes: tau*q_j = 1
    >>> z = np.array([[1.0, -1.0]])
    >>> sp = lambda x: np.log1p(np.exp(x))
    >>> bool(np.isclose(loss.loss(z, np.array([0])), sp(-1.0) + 0.5 * 2 * (sp(1.0) + sp(-1.0))))
    True
    """

    name = "nce"
    labels = "distribution"
    min_classes = 1
    examples = [{}, {"n_noise": 5}, {"n_noise": 2, "noise": [0.1, 0.2, 0.3, 0.4]}]

    def __init__(self, *, n_noise: int = 1, noise: Array | None = None):
        self.n_noise = check_positive_int(n_noise, "n_noise", "NCE")
        if noise is None:
            self.noise = None
        else:
            q = np.asarray(A.to_numpy(noise), dtype=np.float64)
            if q.ndim != 1 or q.size == 0:
                raise ValueError(
                    f"`noise` of NCE must be a 1-D distribution over the classes; got shape {q.shape}"
                )
            if not np.all(np.isfinite(q)) or np.any(q <= 0):
                raise ValueError(f"`noise` of NCE must be positive and finite; got {q.tolist()!r}")
            if abs(q.sum() - 1.0) > 1e-6:
                raise ValueError(f"`noise` of NCE must sum to 1; got sum {q.sum()!r}")
            self.noise = q
        self._params = {"n_noise": n_noise, "noise": noise}

    def check_classes(self, K: int) -> None:
        super().check_classes(K)
        if self.noise is not None and self.noise.size != K:
            raise ValueError(f"`noise` of NCE has {self.noise.size} classes but `y_pred` has {K}")

    def _tau_q(self, z):
        K = z.shape[-1]
        q = np.full(K, 1.0 / K) if self.noise is None else self.noise
        return A.as_float_array(self.n_noise * q, like=z)

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        tq = self._tau_q(z)
        d = z - xp.log(tq)
        return xp.sum(t * A.softplus(-d, xp) + tq * A.softplus(d, xp), axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        tq = self._tau_q(z)
        d = z - xp.log(tq)
        g_, gb = A.sigmoid(d, xp), A.sigmoid(-d, xp)
        return -t * gb + tq * g_, (t + tq) * g_ * gb

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r""":math:`c = \log\pi`, per class in closed form: :math:`g_k = \pi_k/(\pi_k + \tau q_k)` gives :math:`c_k = \log\pi_k` whatever :math:`\tau, q`.

        The NCE optimum is self-normalised; absent classes are floored at :math:`e^{-30}`.
        """
        pi = label_class_means(y_true, sample_weight, n_classes, "NCE", self.labels)
        return log_frequencies(pi)


class BinaryCrossEntropy(LabelLoss):
    r"""One-vs-all sigmoid (binary) cross entropy (``001`` §4.3) — PoLS-aligned.

    .. math::
        \ell(z, r) = -\sum_k \bigl[r_k\log\sigma(z_k) + (1 - r_k)\log(1 - \sigma(z_k))\bigr]
        = \sum_k r_k\,\mathrm{softplus}(-z_k) + (1 - r_k)\,\mathrm{softplus}(z_k)

    for label rows :math:`r \in [0, 1]^K` (multi-label) or class indices
    (:math:`r = e_y`). The paper's multiclass form prints ``+ Σ_{j≠y} log(1 − σ(z_j))``; the
    sign there is a typo for the negative log-likelihood implemented here (its App. C uses
    the NCE-like form). Gradient :math:`\sigma(z_k) - r_k`; Hessian diagonal
    :math:`\sigma(z_k)\sigma(-z_k)`; convex. Equals ``torch``'s
    ``binary_cross_entropy_with_logits`` summed over classes.

    Examples
    --------
    >>> import numpy as np
    >>> loss = BinaryCrossEntropy()
    >>> bool(np.isclose(loss.loss(np.zeros((1, 3)), np.array([1])), 3 * np.log(2)))
    True
    """

    name = "binary_cross_entropy"
    labels = "probability"
    min_classes = 1
    examples = [{}]

    def __init__(self):
        self._params = {}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return xp.sum(t * A.softplus(-z, xp) + (1.0 - t) * A.softplus(z, xp), axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        return A.sigmoid(z, xp) - t, A.sigmoid(z, xp) * A.sigmoid(-z, xp)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r"""Per class :math:`\mathrm{logit}(\pi_k)`, with :math:`\pi_k` floored/capped at :math:`e^{-30}` from 0 and 1."""
        pi = label_class_means(y_true, sample_weight, n_classes, "BinaryCrossEntropy", self.labels)
        return log_frequencies(pi) - log_frequencies(1.0 - pi)


# --------------------------------------------------------------------------------------
# Batch losses (§5)
# --------------------------------------------------------------------------------------


class BatchCrossEntropy(BatchLabelLoss):
    r"""Batch cross entropy (``001`` Definition 2) — PoLS-aligned.

    For a batch :math:`B` of :math:`m` samples (all rows, or each group of ``group``):

    .. math::
        L_c(B) = \mathrm{KL}(P_B \,\|\, Q_B)
        = \mathrm{logsumexp}_{i\in B,\,k}\,z_{ik} - \frac1m\sum_{i\in B} z_{i y_i} - \log m,

    :math:`P_B(i, j) = 1/m` on the true pairs, :math:`Q_B` the softmax over all
    :math:`m \times K` logits of the batch. A small loss makes every true logit carry
    :math:`\approx 1/m` of the batch mass and every false one ≈ 0: alignment.

    Gradient :math:`Q_B(i, k) - P_B(i, k)`, Hessian diagonal :math:`Q_B(i,k)(1 - Q_B(i,k))`
    (w.r.t. every logit of the batch; the normaliser couples the rows). Batches, weights and
    ``reduction="none"`` as in :class:`~selrank.losses.classification._base.BatchLabelLoss`.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[3.0, -1.0], [-2.0, 1.0]])
    >>> loss = BatchCrossEntropy()
    >>> q = np.exp(z) / np.exp(z).sum()
    >>> bool(np.isclose(loss.loss(z, np.array([0, 1])), 0.5 * np.log(0.5 / q[0, 0]) + 0.5 * np.log(0.5 / q[1, 1])))
    True
    >>> loss.loss(np.zeros((4, 3)), np.array([0, 1, 2, 0]), group=[2, 2], reduction="none").shape
    (2,)
    """

    name = "batch_cross_entropy"
    examples = [{}]

    def __init__(self):
        self._params = {}

    def _shifted(self, z, xp, groups):
        """Logits minus their batch maximum (exact differences) and the batch ``log Σ e^{z - m}``.

        The loss and ``Q_B`` are formed from these, never from ``m + log Σ``: subtracting a
        log-sum-exp of ``1e4`` would cost ``1e-3`` absolute accuracy in float32.
        """
        m = groups.max(_const(xp.max(z, axis=-1)))  # cancels: no gradient path through it
        d = z - groups.broadcast(m)[:, None]
        return d, xp.log(groups.sum(xp.sum(xp.exp(d), axis=-1)))

    def batch_values(self, z: Array, t: Array, xp: Any, groups: Groups) -> Array:
        sizes = A.as_float_array(groups.sizes, like=z)
        d, log_s = self._shifted(z, xp, groups)
        # one-hot rows: the batch maximum cancels between the two terms exactly
        true_sum = groups.sum(xp.sum(t * d, axis=-1))
        return log_s - true_sum / sizes - xp.log(sizes)

    def batch_derivatives(self, z: Array, t: Array, xp: Any, groups: Groups) -> tuple[Array, Array]:
        sizes = A.as_float_array(groups.sizes, like=z)
        d, log_s = self._shifted(z, xp, groups)
        q = xp.exp(d - groups.broadcast(log_s)[:, None])
        p = t / groups.broadcast(sizes)[:, None]
        return q - p, q * (1.0 - q)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r""":math:`c = \log\pi` (zero mean), :math:`\pi` the class frequencies averaged over batches.

        A constant row repeated over a batch costs :math:`\mathrm{logsumexp}(c) - \pi_B\cdot c`
        + const, the cross entropy's risk. Within a batch every sample counts ``1/m``; batch
        weights (per batch, or per-row weights averaged per batch) weight the batches.
        """
        y = self._host_labels(y_true)
        groups = as_groups(group, int(y.shape[0]))
        wb = group_weights(groups, sample_weight)
        row_w = (1.0 if wb is None else wb[groups.row_group]) / groups.sizes[groups.row_group]
        pi = label_class_means(
            groups.to_grouped(y), row_w, n_classes, "BatchCrossEntropy", self.labels
        )
        c = log_frequencies(pi)
        return c - c.mean()


class BatchMaxMargin(BatchLabelLoss):
    r"""Batch max-margin loss (``001`` Definition 3) — PoLS-aligned.

    .. math::
        L_m(B) = \frac1m\max\bigl(0,\ \gamma - z_+^B + z_-^B\bigr)
        + \frac1m\sum_{(x, y)\in B}\ell_{\text{CS}}(z(x), y),

    :math:`z_+^B` the smallest true logit of the batch, :math:`z_-^B` its largest false
    logit, :math:`\ell_{\text{CS}}` the :class:`MaxMargin` loss. The first term separates
    every true logit of the batch from every false one; the second keeps gradients flowing
    through all samples.

    Gradient (a.e.): :math:`-1/m` on the minimal true and :math:`+1/m` on the maximal false
    logit when the batch hinge is active (split evenly over ties), plus :math:`1/m` times the
    per-sample max-margin gradients. Hessian 0 almost everywhere (returned as 0). Batches,
    weights and ``reduction="none"`` as in
    :class:`~selrank.losses.classification._base.BatchLabelLoss`.

    Parameters
    ----------
    margin : float
        :math:`\gamma > 0`.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[2.0, 0.0], [-1.0, 1.0]])    # true logits 2, 1; false 0, -1
    >>> float(BatchMaxMargin(margin=1.0).loss(z, np.array([0, 1])))   # (1 - 1 + 0)/2 + (0 + 0)/2
    0.0
    >>> float(BatchMaxMargin(margin=2.0).loss(z, np.array([0, 1])))   # (2 - 1 + 0)/2 + (0 + 0)/2
    0.5
    """

    name = "batch_max_margin"
    examples = [{}, {"margin": 0.5}]

    def __init__(self, *, margin: float = 1.0):
        self.margin = positive_float(margin, "margin", "BatchMaxMargin")
        self._params = {"margin": margin}

    def _parts(self, z, t, xp, groups):
        zy, zf, sel, u = _max_margin_parts(z, t, xp, self.margin)
        z_plus = -groups.max(-zy)
        z_minus = groups.max(zf)
        sizes = A.as_float_array(groups.sizes, like=z)
        return zy, zf, sel, u, z_plus, z_minus, sizes

    def batch_values(self, z: Array, t: Array, xp: Any, groups: Groups) -> Array:
        _, _, _, u, z_plus, z_minus, sizes = self._parts(z, t, xp, groups)
        return (relu(self.margin - z_plus + z_minus, xp) + groups.sum(relu(u, xp))) / sizes

    def batch_derivatives(self, z: Array, t: Array, xp: Any, groups: Groups) -> tuple[Array, Array]:
        _, _, sel, u, z_plus, z_minus, sizes = self._parts(z, t, xp, groups)
        g = step(u, xp)[:, None] * (sel - t)
        active = step(self.margin - z_plus + z_minus, xp)
        plus = group_hits(groups, -z, -groups.broadcast(z_plus), t > 0, xp)
        minus = group_hits(groups, z, groups.broadcast(z_minus), t == 0, xp)
        g = (g + groups.broadcast(active)[:, None] * (minus - plus)) / groups.broadcast(sizes)[
            :, None
        ]
        return g, xp.zeros_like(g)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        """Zeros (``[K]``): a constant row cannot separate a batch holding two classes (the batch term is then at least γ/m), and the best constant depends on ``m``; 0 is the neutral start."""
        return self._zeros_constant(y_true, sample_weight, n_classes)
