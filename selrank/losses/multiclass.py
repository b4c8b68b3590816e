r"""Multi-class selective matching losses on ``[n, K]`` score arrays (docs/math.md §3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _array as A
from .._array import Array
from .._groups import DenseLists
from ..links import Link, get_link
from ..scalings import (
    Scaling,
    composite_softmax,
    composite_softmax_bregman,
    composite_softmax_hess_diag,
)
from ._base import (
    BoundLoss,
    Loss,
    as_target_array,
    as_weight,
    check_class_indices,
    check_target,
    one_hot,
)
from .listwise import configure_softmax, link_target_lists, widen_on_overflow

__all__ = ["Decomposed", "CompositeSoftmax", "class_targets"]

_LISTS = DenseLists()


def class_targets(y: Array, n_classes: int, value: float = 1.0) -> np.ndarray:
    """One-hot ``[n, K]`` targets (times ``value``) from integer class indices ``y``."""
    labels = np.asarray(A.to_numpy(y))
    if labels.ndim != 1:
        raise ValueError(f"class indices must be 1-D; got shape {labels.shape}")
    return one_hot(check_class_indices(labels, "a multi-class loss", n_classes), n_classes, value)


class _MultiClassLoss(Loss):
    """Shared binding for ``[n, K]`` losses: targets ``[n, K]`` or class indices ``[n]``."""

    structure = "multiclass"
    #: The :class:`BoundLoss` subclass :meth:`bind` returns (set below each concrete class).
    _bound_class: type[_BoundMultiClass]

    def link_value_of_one_hot(self) -> float:
        """The link-space target of a class index's one-hot row (1; the composite softmax's is
        ``scaling.alpha``): read by the bound loss and by the torch head over this loss."""
        return 1.0

    def _bind(self, y_true, *, group=None, sample_weight=None):
        y = as_target_array(y_true)
        if y.ndim == 1:
            if self.target != "link":
                raise ValueError(
                    f"{type(self).__name__} with target='score' needs observed scores of shape [n, K]; "
                    "class indices of shape [n] are only accepted with target='link' (one-hot targets)"
                )
            self._check_class_indices(y)
        elif y.ndim != 2:
            raise ValueError(
                f"`y_true` of {type(self).__name__} must have shape [n, K] (or [n] class indices); got {tuple(y.shape)}"
            )
        w = as_weight(sample_weight, int(y.shape[0]))
        return self._bound_class(self, y, w)

    def _check_class_indices(self, y):
        check_class_indices(y, type(self).__name__)

    def hessian(self, y_pred: Array) -> Array:
        """Exact Hessian ``[n, K, K]`` of the per-sample loss w.r.t. ``y_pred``."""
        raise NotImplementedError


class _BoundMultiClass(BoundLoss):
    loss_fn: _MultiClassLoss
    weigh_elements = True  # one weight per row of [n, K], applied by BoundLoss.grad_hess

    def __init__(self, loss: _MultiClassLoss, y: Any, w: np.ndarray | None) -> None:
        super().__init__(loss, int(y.shape[0]), w)
        self.raw = y
        self.K: int | None = int(y.shape[1]) if y.ndim == 2 else None
        self._prepared_for: int | None = None
        if self.K is not None:
            self._prepare(y)

    def _targets_for(self, y_pred):
        y_pred = A.as_float_array(y_pred, A.get_namespace(y_pred), name="y_pred")
        if y_pred.ndim != 2 or y_pred.shape[0] != self.n_rows:
            raise ValueError(
                f"`y_pred` must have shape [{self.n_rows}, K]; got {tuple(y_pred.shape)}"
            )
        K = int(y_pred.shape[1])
        if self.K is not None and K != self.K:
            raise ValueError(
                f"`y_pred` and `y_true` must have the same shape; got {tuple(y_pred.shape)} and {tuple(self.raw.shape)}"
            )
        if self.K is None and self._prepared_for != K:
            self._prepare(class_targets(self.raw, K, self.loss_fn.link_value_of_one_hot()))
            self._prepared_for = K
            self._cache.clear()
        return y_pred

    def _prepare(self, y):
        raise NotImplementedError


class Decomposed(_MultiClassLoss):
    r"""Decomposed ("diagonal") multi-class loss: a scalar matching loss per class [28].

    .. math:: L(\hat{\mathbf s}, \mathbf s) = \sum_k H(\hat s_k) - H(s_k) - (\hat s_k - s_k)\,h(s_k)

    The only way to get *low-norm* sensitivity in the multi-class case (a sigmoid link:
    one-vs-all logistic loss with ``target="link"``); it has no ranking sensitivity across
    classes (Table 1 / H.2). The Hessian is diagonal, :math:`h'(\hat s_k)`.

    Parameters
    ----------
    link : Link or str
        Default ``"sigmoid"``; keyword parameters build a link given by name.
    target : {"score", "link"}
        ``"link"`` also accepts class indices ``[n]`` (one-hot targets).

    Examples
    --------
    >>> import numpy as np
    >>> loss = Decomposed("sigmoid", target="link")
    >>> g, h = loss.grad_hess(np.zeros((2, 3)), np.array([0, 2]))
    >>> g.tolist()    # sigmoid(0) - one_hot
    [[-0.5, 0.5, 0.5], [0.5, 0.5, -0.5]]
    """

    name = "decomposed"
    separable = True
    examples = [
        {},
        {"link": "sigmoid", "target": "link"},
        {"link": "exp", "alpha": 0.5},
        {"link": "identity"},
    ]

    def __init__(self, link: Link | str = "sigmoid", *, target: str = "score", **link_params: Any):
        self.link = get_link(link, **link_params)
        self.target = check_target(target, "Decomposed")
        self._params = {"link": self.link, "target": target}

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        """Per-class :math:`h^{-1}` of the weighted mean of :math:`h(y_{:,k})` — shape ``[K]``."""
        y = as_target_array(y_true)
        if y.ndim == 1:
            self._check_class_indices(y)
            K = n_classes if n_classes is not None else int(np.max(A.to_numpy(y))) + 1
            y = class_targets(y, K)
        w = as_weight(sample_weight, int(y.shape[0]))
        Y = np.asarray(A.to_numpy(y), dtype=np.float64)
        return np.array(
            [self.link.optimal_constant(Y[:, k], w, target=self.target) for k in range(Y.shape[1])]
        )

    def hessian(self, y_pred: Array) -> Array:
        """Exact Hessian: diagonal ``h'(ŝ_k)`` embedded in ``[n, K, K]``."""
        xp = A.get_namespace(y_pred)
        d = self.link.dh(y_pred)
        eye = xp.eye(d.shape[-1], dtype=d.dtype, **({"device": d.device} if A.is_torch(d) else {}))
        return d[..., None] * eye


class _BoundDecomposed(_BoundMultiClass):
    loss_fn: Decomposed

    def _prepare(self, y):
        link = self.loss_fn.link
        if self.loss_fn.target == "score":
            link.check_domain(y, "y_true")
            self.hy = link.h(y)
        else:
            link.check_range(y, "y_true")
            self.hy = y
        self.y = y

    def _values(self, y_pred):
        y_pred = self._targets_for(y_pred)
        xp = A.get_namespace(y_pred)
        y = self._like("y", self.y, y_pred)
        link = self.loss_fn.link
        if self.loss_fn.target == "score":
            per = link.bregman(y_pred, y)
        else:
            per = link.bregman_link_target(y_pred, y)
        return xp.sum(per, axis=1)

    def _grad_hess(self, y_pred):
        y_pred = self._targets_for(y_pred)
        h, dh = self.loss_fn.link.h_dh(y_pred)
        g = h - self._like("hy", self.hy, y_pred)
        return g, dh


Decomposed._bound_class = _BoundDecomposed


class CompositeSoftmax(_MultiClassLoss):
    r"""Composite softmax multi-class selective matching loss [29–30].

    .. math::
        p_k(z) = \mathrm{softmax}(Q(z)/\gamma)_k, \quad H(z) = \gamma\,\mathrm{logsumexp}(Q(z)/\gamma),
        \quad h_k(z) = q(z_k)\,p_k(z),

        L = H(\hat s) - H(s) - \sum_k (\hat s_k - s_k)\,h_k(s), \qquad g_k = h_k(\hat s) - h_k(s).

    Region *and* ranking (constellation-shift-invariant) sensitivity: ``scaling="exp"`` for
    high scores, ``"negexp"`` for low scores, ``"sinh"`` for high norms, ``"relu"``/``"smelu"``
    to clip low scores (Table 1 / H.2); ``"constant"`` is the standard softmax. The exact
    Hessian [B.2] is :meth:`hessian`; :meth:`BoundLoss.grad_hess` gives its diagonal [C.6].

    Parameters
    ----------
    scaling : Scaling or str
    gamma : float
    target : {"score", "link"}
        ``"link"`` (constant scaling only): rows of ``y_true`` are distributions times
        ``alpha``, or class indices (one-hot times ``alpha``); the loss is
        :math:`\gamma\,\mathrm{KL}(y/\alpha\,\|\,p(\hat s))` — with ``alpha = gamma = 1``
        softmax cross entropy minus the target entropy.

    Examples
    --------
    >>> import numpy as np
    >>> loss = CompositeSoftmax("constant", target="link")
    >>> z = np.array([[2.0, 0.0, -1.0]])
    >>> ce = -np.log(np.exp(2.0) / np.exp(z).sum())
    >>> bool(np.isclose(float(loss.loss(z, np.array([0]))), ce))
    True
    """

    name = "composite_softmax"
    separable = True
    examples = [
        {},
        {"scaling": "constant"},
        {"scaling": "constant", "target": "link"},
        {"scaling": "negexp", "gamma": 0.5},
        {"scaling": "sinh", "cap": 3.0},
        {"scaling": "relu"},
        {"scaling": "sigmoid", "alpha": 2.0},
    ]
    scaling: Scaling  # set by configure_softmax
    gamma: float

    def __init__(
        self,
        scaling: Scaling | str = "exp",
        *,
        gamma: float = 1.0,
        target: str = "score",
        **scaling_params: Any,
    ):
        self._params = configure_softmax(
            self, "CompositeSoftmax", scaling, gamma, target, scaling_params
        )

    def link_value_of_one_hot(self) -> float:
        return self.scaling.alpha

    def link(self, z: Array) -> Array:
        """The vector link :math:`h(z) = q(z)\\odot p(z)` of ``[n, K]`` scores."""
        return composite_softmax(self.scaling, self.gamma, A.as_float_array(z), _LISTS)["h"]

    def hessian(self, y_pred: Array) -> Array:
        r"""Exact Hessian [B.2]: :math:`p_k\{\delta_{kj} q'_k + [\delta_{kj} - p_j]\,q_k q_j/\gamma\}`, ``[n, K, K]``."""
        xp = A.get_namespace(y_pred)
        z = A.as_float_array(y_pred, xp)
        parts = composite_softmax(self.scaling, self.gamma, z, _LISTS)
        p, q, dq = parts["p"], parts["q"], parts["dq"]
        K = z.shape[-1]
        eye = xp.eye(K, dtype=z.dtype, **({"device": z.device} if A.is_torch(z) else {}))
        pq = p * q
        diag = (p * dq + pq * q / self.gamma)[..., None] * eye
        return diag - (pq[..., :, None] * pq[..., None, :]) / self.gamma

    def optimal_constant(
        self,
        y_true: Array,
        sample_weight: Array | None = None,
        *,
        group: Array | None = None,
        n_classes: int | None = None,
    ) -> np.ndarray:
        r"""Constant score vector :math:`c` with :math:`h(c) = \bar y` (weighted mean link target), ``[K]``.

        Solved by damped Newton steps with the exact Hessian (least squares where it is
        singular, as for the constant scaling whose solution is defined up to a shift; the
        returned vector then has zero mean). Scores stay within the scaling's standardized
        range ``[-30, 30]``, which bounds classes that never occur.
        """
        y = as_target_array(y_true)
        if y.ndim == 1:
            self._check_class_indices(y)
            K = n_classes if n_classes is not None else int(np.max(A.to_numpy(y))) + 1
            y = class_targets(y, K, self.link_value_of_one_hot())
        Y = np.asarray(A.to_numpy(y), dtype=np.float64)
        w = as_weight(sample_weight, Y.shape[0])
        target = np.average(self.link(Y) if self.target == "score" else Y, axis=0, weights=w)
        s = self.scaling
        lo, hi = -30.0 / s.alpha - s.beta, 30.0 / s.alpha - s.beta
        c = np.zeros(Y.shape[1])
        c = np.clip(c, lo, hi)

        def objective(v):
            parts = composite_softmax(s, self.gamma, v[None, :], _LISTS)
            return float(parts["H"][0] - v @ target)

        f = objective(c)
        for _ in range(100):
            parts = composite_softmax(s, self.gamma, c[None, :], _LISTS)
            grad = parts["h"][0] - target
            if np.max(np.abs(grad)) < 1e-12 * max(1.0, np.max(np.abs(target))):
                break
            Hm = self.hessian(c[None, :])[0] + 1e-12 * np.eye(c.size)
            step = np.linalg.lstsq(Hm, grad, rcond=None)[0]
            t = 1.0
            while t > 1e-8:
                cand = np.clip(c - t * step, lo, hi)
                fc = objective(cand)
                if fc <= f + 1e-15 * abs(f):
                    break
                t *= 0.5
            if t <= 1e-8:
                break
            c, f = cand, fc
        if s.constant:
            c = c - c.mean()
        return c


class _BoundCompositeSoftmax(_BoundMultiClass):
    loss_fn: CompositeSoftmax

    def _prepare(self, y):
        loss = self.loss_fn
        if loss.target == "link":
            link_target_lists(y, _LISTS.sum, loss.scaling.alpha, "row")
            self.parts_y = None
            self.hy = y
        else:
            self.parts_y = composite_softmax(loss.scaling, loss.gamma, y, _LISTS)
            self.hy = self.parts_y["h"]
        self.y = y

    def _values(self, y_pred):
        y_pred = self._targets_for(y_pred)
        return widen_on_overflow(self._values_of, y_pred, "CompositeSoftmax", self.loss_fn.scaling)[
            0
        ]

    def _values_of(self, z):
        loss = self.loss_fn
        parts = composite_softmax(loss.scaling, loss.gamma, z, _LISTS)
        y = self._like("y", self.y, z)
        if loss.target == "link":
            xp = A.get_namespace(z)
            pi = y / loss.scaling.alpha
            return (loss.gamma * xp.sum(A.xlogx(pi, xp) - pi * parts["logp"], axis=-1),)
        assert self.parts_y is not None  # target="score": set by _prepare
        parts_y = {k: self._like(f"parts_y.{k}", v, z) for k, v in self.parts_y.items()}
        return (composite_softmax_bregman(loss.scaling, loss.gamma, z, y, _LISTS, parts, parts_y),)

    def _grad_hess(self, y_pred):
        y_pred = self._targets_for(y_pred)
        return widen_on_overflow(
            self._grad_hess_of, y_pred, "CompositeSoftmax", self.loss_fn.scaling
        )

    def _grad_hess_of(self, z):
        loss = self.loss_fn
        parts = composite_softmax(loss.scaling, loss.gamma, z, _LISTS)
        g = parts["h"] - self._like("hy", self.hy, z)
        h = composite_softmax_hess_diag(parts, loss.gamma)
        return g, h


CompositeSoftmax._bound_class = _BoundCompositeSoftmax
