"""SelectiveRegressor: regression with a selective matching loss."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _array as A
from ..gbdt._objective import DEFAULT_HESSIAN_FLOOR
from ..losses import Loss
from ._validation import _as_features, _as_float_labels, _as_group, _as_sample_weight, _eval_list
from .base import RegressorMixin, _SelectiveEstimator


class SelectiveRegressor(RegressorMixin, _SelectiveEstimator):
    r"""Regression (e.g. dwell time) with a selective matching loss.

    The default is the pointwise loss with the identity link (squared error, identical to
    LightGBM's ``regression``); a selective link focuses accuracy where it matters, e.g.
    ``link="smelu", loss_params={"beta": 60.0, "c": 45.0, "alpha": 1 / 60}`` for dwell
    times around a minute, or ``link="exp"`` for high values. Parameters are those of
    :class:`SelectiveRanker`; ``group`` in :meth:`fit` is needed only by group losses, and
    early stopping uses the loss itself on the first ``eval_set``.

    ``predict`` returns values in the space of ``y``: the score divided by ``label_scale``,
    or ``h(score)`` for ``target="link"``.
    """

    _kind = "regressor"
    _default_loss = "pointwise"

    def __init__(self, loss="pointwise", *, link="identity", scaling=None, target=None, loss_params=None,
                 label_scale: float = 1.0, hessian: str = "floor", hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
                 backend: str = "lightgbm", n_estimators=None, learning_rate=None, early_stopping_rounds=None,
                 eval_at=10, random_state=None, verbose: bool = False, **backend_params):
        super().__init__(loss, link=link, scaling=scaling, target=target, loss_params=loss_params,
                         label_scale=label_scale, hessian=hessian, hessian_floor=hessian_floor, backend=backend,
                         n_estimators=n_estimators, learning_rate=learning_rate,
                         early_stopping_rounds=early_stopping_rounds, eval_at=eval_at, random_state=random_state,
                         verbose=verbose, **backend_params)

    def _loss_arguments(self) -> dict[str, Any]:
        params = super()._loss_arguments()
        loss = self.loss if self.loss is not None else self._default_loss
        # the default link belongs to the default loss: it does not apply to a scaling-based
        # loss (listwise) nor to a Loss object, which carries its own link
        if self.link == "identity" and (isinstance(loss, Loss) or (isinstance(loss, str) and loss.lower() == "listwise")):
            params.pop("link", None)
        return params

    def fit(self, X, y, *, group=None, sample_weight=None, eval_set=None, eval_group=None, eval_sample_weight=None):
        """Fit ``y`` on ``X``; ``group`` only for group losses. Returns ``self``."""
        self._check_config()
        X = _as_features(X)
        y = _as_float_labels(y, X.shape[0])
        loss = self._build_loss()
        if loss.structure == "multiclass":
            raise ValueError(f"SelectiveRegressor takes pointwise or group losses; {loss.name!r} is multi-class")
        groups = _as_group(group, X.shape[0]) if loss.structure == "group" else None
        w = _as_sample_weight(sample_weight, X.shape[0])
        eval_sets = []
        if eval_set is not None:
            if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
                eval_set = [eval_set]
            gs = _eval_list(eval_group, len(eval_set), "eval_group")
            ws = _eval_list(eval_sample_weight, len(eval_set), "eval_sample_weight")
            for k, ((Xe, ye), g, we) in enumerate(zip(eval_set, gs, ws)):
                Xe = _as_features(Xe, f"eval_set[{k}][0]")
                if Xe.shape[1] != X.shape[1]:
                    raise ValueError(f"`eval_set[{k}]` has {Xe.shape[1]} features; X has {X.shape[1]}")
                ye = _as_float_labels(ye, Xe.shape[0], f"eval_set[{k}][1]")
                ge = _as_group(g, Xe.shape[0], f"eval_group[{k}]") if groups is not None else None
                eval_sets.append({"X": Xe, "y": ye, "group": ge, "weight": _as_sample_weight(we, Xe.shape[0])})
        self.n_features_in_ = int(X.shape[1])
        return self._fit(X, y, group=groups, sample_weight=w, eval_sets=eval_sets, loss=loss, n_classes=None,
                         metric="loss")

    def predict(self, X):
        """Predictions in the space of ``y`` (``h(score)`` for ``target="link"``)."""
        s = self.decision_function(X)
        if getattr(self.loss_, "target", "score") == "link" and self.loss_.structure == "pointwise":
            return np.asarray(A.to_numpy(self.loss_.link.h(s)), dtype=np.float64)
        return s / float(self.label_scale)  # targets were label_scale * y
