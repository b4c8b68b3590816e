r"""The classic multi-class baselines (``003``) and the re-weighted square loss (App. E.1 of ``000``).

Multiclass SVM hinge, softmax cross entropy with the max-subtraction trick, mean squared
error, and the re-weighted square loss; see :mod:`selrank.losses.classification`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ... import _array as A
from ..._array import Array
from ..._validation import finite_float, positive_float
from .._base import BoundLoss, Loss, as_target_array, as_weight, shape_error
from ._base import LabelLoss, label_class_means, log_frequencies, relu, step

__all__ = ["SoftmaxCrossEntropy", "MulticlassHinge", "MeanSquaredError", "ReweightedSquare"]


class SoftmaxCrossEntropy(LabelLoss):
    r"""Softmax cross entropy (``003`` softmax classifier; ``001`` eq. 1) — not PoLS-aligned.

    .. math::
        \ell(z, t) = -\sum_k t_k \log p_k, \qquad
        \log p_k = z_k - \max_j z_j - \log\sum_j e^{z_j - \max_j z_j}

    (the max-subtraction trick of ``003``: no ``exp`` of a large number). ``y_true``: class
    indices, one-hot rows or label distributions. Gradient :math:`p_k - t_k`; Hessian diagonal
    :math:`p_k(1 - p_k)`; convex. Equals ``torch.nn.functional.cross_entropy`` (class indices
    or probabilities) per sample.

    Not aligned with the PoLS (``001`` §3.1): it depends on logit differences per sample only,
    so ``z(x1) = (2a, a)``, ``z(x2) = (-2a, -a)`` with labels 0, 1 has loss
    :math:`2\log(1 + e^{-a}) \to 0` while the true logit of ``x2`` stays below a false logit of ``x1``.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([[1.0, 2.0, 3.0], [1e4, 0.0, -1e4]])
    >>> SoftmaxCrossEntropy().loss(z, np.array([2, 0]), reduction="none").round(6).tolist()
    [0.407606, 0.0]
    """

    name = "softmax_cross_entropy"
    labels = "distribution"
    min_classes = 1
    examples = [{}]

    def __init__(self):
        self._params = {}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return -xp.sum(t * A.log_softmax(z, xp), axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        p = xp.exp(A.log_softmax(z, xp))
        return p - t, p * (1.0 - p)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r""":math:`\log\pi` of the weighted class frequencies, zero mean (the loss is shift invariant).

        Absent classes, whose optimum is :math:`-\infty`, are floored at :math:`\pi = e^{-30}`.
        """
        pi = label_class_means(y_true, sample_weight, n_classes, "SoftmaxCrossEntropy", self.labels)
        c = log_frequencies(pi)
        return c - c.mean()


class MulticlassHinge(LabelLoss):
    r"""Multiclass SVM hinge loss (Weston–Watkins; ``003``) — not PoLS-aligned.

    .. math:: \ell(s, y) = \sum_{j\neq y}\max(0,\ s_j - s_y + \Delta)

    Gradient (a.e.): :math:`a_j = 1[s_j - s_y + \Delta > 0]` for :math:`j \neq y` and
    :math:`-\sum_{j\neq y} a_j` on the true class (0 at a kink, as autograd of ``relu``).
    Piecewise linear: the Hessian is 0 almost everywhere and is returned as 0.
    ``torch.nn.functional.multi_margin_loss(margin=Δ)`` divides the same sum by ``K``.

    Parameters
    ----------
    margin : float
        :math:`\Delta > 0`.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[3.2, 5.1, -1.7], [1.3, 4.9, 2.0]])      # the example of 003
    >>> MulticlassHinge().loss(s, np.array([0, 1]), reduction="none").round(6).tolist()
    [2.9, 0.0]
    """

    name = "multiclass_hinge"
    labels = "one_hot"
    examples = [{}, {"margin": 0.25}]

    def __init__(self, *, margin: float = 1.0):
        self.margin = positive_float(margin, "margin", "MulticlassHinge")
        self._params = {"margin": margin}

    def _slack(self, z, t, xp):
        return z - xp.sum(t * z, axis=-1, keepdims=True) + self.margin

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        return xp.sum((1.0 - t) * relu(self._slack(z, t, xp), xp), axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        a = (1.0 - t) * step(self._slack(z, t, xp), xp)
        g = a - t * xp.sum(a, axis=-1, keepdims=True)
        return g, xp.zeros_like(g)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        """Zeros (``[K]``), a documented choice.

        The expected hinge of a constant is a piecewise-linear program in ``c``; its minimiser
        is in general not unique, not the class frequencies' ordering alone, and not in closed
        form (the Weston–Watkins hinge is not Fisher consistent). Boosting starts from 0.
        """
        return self._zeros_constant(y_true, sample_weight, n_classes)


class MeanSquaredError(LabelLoss):
    r"""Mean squared error over the classes of a sample (``003``).

    .. math:: \ell(s, y) = \frac1K\,\|s - y\|_2^2 = \frac1K\sum_j (s_j - y_j)^2

    ``y_true``: real ``[n, K]`` targets or class indices (one-hot). Gradient
    :math:`2(s_j - y_j)/K`; Hessian diagonal :math:`2/K`. The mean over samples equals
    ``torch.nn.functional.mse_loss`` (mean over all entries).

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([[1.5, -2.0, 1.0]])                  # 003: case 1, label "cat" = 0
    >>> round(float(MeanSquaredError().loss(s, np.array([0]))), 6)
    1.75
    """

    name = "mean_squared_error"
    labels = "real"
    min_classes = 1
    target = "score"
    examples = [{}]

    def __init__(self):
        self._params = {}

    def row_values(self, z: Array, t: Array, xp: Any) -> Array:
        d = z - t
        return xp.mean(d * d, axis=-1)

    def row_derivatives(self, z: Array, t: Array, xp: Any) -> tuple[Array, Array]:
        K = z.shape[-1]
        return 2.0 * (z - t) / K, xp.full_like(z, 2.0 / K)

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        """The weighted mean target row, ``[K]``."""
        return label_class_means(y_true, sample_weight, n_classes, "MeanSquaredError", self.labels)


_WEIGHTINGS = ("observed", "predicted", "both")


class ReweightedSquare(Loss):
    r"""Re-weighted square loss of App. E.1 (``000``, Figure E.1) — a baseline, not selective.

    .. math::
        L(\hat s, s) = \tfrac12\,w\,(\hat s - s)^2, \qquad
        w = \begin{cases}
            \kappa\,(s - b) & \text{weighting="observed" (Fig. E.1 left)}\\
            \kappa\,(\hat s - b) & \text{"predicted" (middle)}\\
            \kappa^2 (s - b)(\hat s - b) & \text{"both" (right)}
        \end{cases}
        \qquad b = \min_k s_k - \delta,

    the paper's linear weight :math:`\kappa\,[z - \min_k s_k + \delta]` of the re-weighting
    score :math:`z` (its figure: :math:`\kappa = \delta = 0.5`). With unit weight it is the
    identity-link matching loss :math:`\tfrac12(\hat s - s)^2`.

    What the appendix shows, and the tests check numerically:

    * ``"observed"``: convex, high scores get high sensitivity, but a low score's loss is a
      small *symmetric* parabola: predicting a low score as high is penalised no more than the
      same error downwards, and its pull back, :math:`\kappa(s - b)(\hat s - s)`, is far weaker
      than a high-score-sensitive matching loss's :math:`h(\hat s) - h(s)`.
    * ``"predicted"`` / ``"both"``: :math:`w` changes sign below :math:`b`; the loss is not
      convex (Hessian :math:`\kappa w_s (3\hat s - 2s - b)`, negative for small :math:`\hat s`)
      and under-estimating a high score can even be *rewarded* (negative loss).

    Gradient and Hessian, with :math:`r = \hat s - s` and :math:`w_s = \kappa(s - b)` ("both")
    or 1 ("predicted"): "observed" :math:`g = w r`, :math:`h = w`; the others
    :math:`g = \kappa w_s (\tfrac12 r^2 + (\hat s - b)\,r)`,
    :math:`h = \kappa w_s (2r + \hat s - b)`.

    Parameters
    ----------
    weighting : {"observed", "predicted", "both"}
        Which score the weight is linear in.
    kappa : float
        Slope :math:`\kappa > 0` of the weight.
    delta : float
        Offset :math:`\delta > 0` below the smallest score.
    score_min : float or None
        :math:`\min_k s_k`; ``None`` takes the minimum of the bound ``y_true`` (so the loss
        of a pair depends on the data it is bound with, as in the paper's figure).

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([-3.0, 0.0, 3.0])
    >>> loss = ReweightedSquare()                            # b = -3.5, weights 0.25, 1.75, 3.25
    >>> loss.loss(s + 1.0, s, reduction="none").tolist()
    [0.125, 0.875, 1.625]
    """

    name = "reweighted_square"
    structure = "pointwise"
    target = "score"
    is_matching = False
    couples_samples: ClassVar[bool] = False
    examples = [
        {},
        {"weighting": "predicted"},
        {"weighting": "both", "kappa": 1.0, "delta": 1.0, "score_min": -5.0},
    ]

    def __init__(
        self,
        *,
        weighting: str = "observed",
        kappa: float = 0.5,
        delta: float = 0.5,
        score_min: float | None = None,
    ):
        if weighting not in _WEIGHTINGS:
            raise ValueError(
                f"`weighting` of ReweightedSquare must be one of {_WEIGHTINGS}; got {weighting!r}"
            )
        self.weighting = weighting
        self.kappa = positive_float(kappa, "kappa", "ReweightedSquare")
        self.delta = positive_float(delta, "delta", "ReweightedSquare")
        self.score_min = (
            None if score_min is None else finite_float(score_min, "score_min", "ReweightedSquare")
        )
        self._params = {
            "weighting": weighting,
            "kappa": kappa,
            "delta": delta,
            "score_min": score_min,
        }

    def _bias(self, y: np.ndarray) -> float:
        lo = float(y.min())
        if self.score_min is None:
            return lo - self.delta
        if lo < self.score_min:
            raise ValueError(
                f"`y_true` of ReweightedSquare goes down to {lo!r}, below `score_min`={self.score_min!r}"
            )
        return self.score_min - self.delta

    def _scores(self, y_true) -> np.ndarray:
        y = as_target_array(y_true)
        if y.ndim != 1 or y.shape[0] == 0:
            raise ValueError(
                f"`y_true` of ReweightedSquare must be a non-empty 1-D array of scores; got shape {tuple(y.shape)}"
            )
        return y

    def _bind(
        self, y_true: Array, *, group: Array | None = None, sample_weight: Array | None = None
    ) -> BoundLoss:
        y = self._scores(y_true)
        b = self._bias(np.asarray(A.to_numpy(y), dtype=np.float64))
        return _BoundReweighted(self, y, as_weight(sample_weight, int(y.shape[0])), b)

    def optimal_constant(
        self, y_true: Array, sample_weight: Array | None = None, *, group: Array | None = None
    ) -> float:
        r"""The constant minimising the weighted loss.

        "observed": the mean of :math:`s` weighted by :math:`\kappa(s - b)` (and the sample
        weights). "predicted" / "both": the loss is cubic in the constant and unbounded below
        (:math:`c \to -\infty`), so this returns the *local* minimiser, the larger root of the
        quadratic :math:`\tfrac32 V c^2 - (2S_1 + bV)c + \tfrac12 S_2 + bS_1 = 0` (weighted
        moments :math:`V, S_1, S_2` of :math:`s`), and raises ``ValueError`` when there is none.
        """
        y = np.asarray(A.to_numpy(self._scores(y_true)), dtype=np.float64)
        b = self._bias(y)
        sw = as_weight(sample_weight, y.size)
        v = np.ones_like(y) if sw is None else sw
        if self.weighting != "predicted":
            v = v * self.kappa * (y - b)
        if self.weighting == "observed":
            return float(np.sum(v * y) / np.sum(v))
        V, S1, S2 = v.sum(), (v * y).sum(), (v * y * y).sum()
        a2, a1, a0 = 1.5 * V, -(2.0 * S1 + b * V), 0.5 * S2 + b * S1
        disc = a1 * a1 - 4.0 * a2 * a0
        if disc < 0:
            raise ValueError(
                f"ReweightedSquare(weighting={self.weighting!r}) has no local minimum over constants for these scores "
                "(their weighted variance exceeds (mean - b)^2 / 3): the loss decreases without bound as the constant falls"
            )
        return float((-a1 + np.sqrt(disc)) / (2.0 * a2))


class _BoundReweighted(BoundLoss):
    weigh_elements = True  # one weight per row, applied by BoundLoss.grad_hess
    loss_fn: ReweightedSquare

    def __init__(self, loss: ReweightedSquare, y, w, b: float):
        super().__init__(loss, int(y.shape[0]), w)
        self.y = y
        self.b = b

    def _pred(self, y_pred):
        if hasattr(y_pred, "to_numpy") and not A.is_numpy(y_pred) and not A.is_torch(y_pred):
            y_pred = y_pred.to_numpy()
        z = A.as_float_array(y_pred, A.get_namespace(y_pred), name="y_pred")
        if tuple(z.shape) != tuple(self.y.shape):
            raise shape_error(z.shape, self.y.shape)
        return z, self._like("y", self.y, z)

    def _parts(self, z, s):
        k = self.loss_fn.kappa
        mode = self.loss_fn.weighting
        ws = k * (s - self.b) if mode != "predicted" else 1.0
        r = z - s
        if mode == "observed":
            return 0.5 * ws * r * r, ws * r, ws
        wp = k * (z - self.b)
        return (
            0.5 * ws * wp * r * r,
            ws * k * (0.5 * r * r + (z - self.b) * r),
            ws * k * (2.0 * r + z - self.b),
        )

    def _values(self, y_pred):
        z, s = self._pred(y_pred)
        return self._parts(z, s)[0]

    def _grad_hess(self, y_pred):
        z, s = self._pred(y_pred)
        _, g, h = self._parts(z, s)
        return g, h
