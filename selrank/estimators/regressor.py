"""SelectiveRegressor: regression with a selective matching loss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _array as A
from .._array import Array
from ..gbdt import DEFAULT_HESSIAN_FLOOR
from ..losses import Loss
from ._validation import _as_float_labels, _as_group, _as_sample_weight, refuse_dask
from .base import RegressorMixin, _SelectiveEstimator, lightgbm_fit_options


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

    kind = "regressor"
    _default_loss = "pointwise"

    def __init__(
        self,
        loss: Loss | str = "pointwise",
        *,
        link: Any = "identity",
        scaling: Any = None,
        target: str | None = None,
        loss_params: dict[str, Any] | None = None,
        label_scale: float = 1.0,
        hessian: str = "floor",
        hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
        backend: str = "lightgbm",
        n_estimators: int | None = None,
        learning_rate: float | None = None,
        early_stopping_rounds: int | None = None,
        eval_at: int | Sequence[int] = 10,
        random_state: int | None = None,
        verbose: bool = False,
        importance_type: str | None = None,
        **backend_params: Any,
    ) -> None:
        super().__init__(
            loss,
            link=link,
            scaling=scaling,
            target=target,
            loss_params=loss_params,
            label_scale=label_scale,
            hessian=hessian,
            hessian_floor=hessian_floor,
            backend=backend,
            n_estimators=n_estimators,
            learning_rate=learning_rate,
            early_stopping_rounds=early_stopping_rounds,
            eval_at=eval_at,
            random_state=random_state,
            verbose=verbose,
            importance_type=importance_type,
            **backend_params,
        )

    def _loss_arguments(self) -> dict[str, Any]:
        params = super()._loss_arguments()
        loss = self.loss if self.loss is not None else self._default_loss
        # the default link belongs to the default loss: it does not apply to a scaling-based
        # loss (listwise) nor to a Loss object, which carries its own link
        if self.link == "identity" and (
            isinstance(loss, Loss) or (isinstance(loss, str) and loss.lower() == "listwise")
        ):
            params.pop("link", None)
        return params

    _EXPECTED_FAILED_CHECKS = {
        **_SelectiveEstimator._EXPECTED_FAILED_CHECKS,
        "check_regressors_no_decision_function": "decision_function is the documented score-space output (before "
        "the link and label_scale); predict is in the space of y",
    }

    def fit(
        self,
        X: Array,
        y: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        eval_set: Any = None,
        eval_group: Any = None,
        eval_qid: Any = None,
        eval_sample_weight: Any = None,
        callbacks: Sequence[Any] | None = None,
        init_model: Any = None,
        eval_names: Sequence[str] | None = None,
        eval_metric: Any = None,
        init_score: Array | None = None,
        eval_init_score: Any = None,
        feature_name: Any = "auto",
        categorical_feature: Any = "auto",
    ) -> SelectiveRegressor:
        """Fit ``y`` on ``X``; ``group`` (query sizes) or ``qid`` (per-row ids) only for group losses.

        ``X`` as in :meth:`SelectiveRanker.fit`; ``callbacks`` are LightGBM's / XGBoost's training
        callbacks (``[lightgbm.early_stopping(20), lightgbm.log_evaluation(10)]``);
        ``init_model`` a fitted estimator of the same class (or a LightGBM booster) to continue
        training from (backend ``"lightgbm"``; a path: a LightGBM model file). ``eval_names``,
        ``eval_metric``, ``init_score``, ``eval_init_score``, ``feature_name`` and
        ``categorical_feature`` are LightGBM's ``fit`` options (backend ``"lightgbm"``), as in
        :meth:`SelectiveRanker.fit`. Returns ``self``.
        """
        self._check_config()
        refuse_dask(
            f"{type(self).__name__}.fit",
            X=X,
            y=y,
            group=group,
            qid=qid,
            sample_weight=sample_weight,
            eval_set=eval_set,
            eval_group=eval_group,
            eval_qid=eval_qid,
            eval_sample_weight=eval_sample_weight,
        )
        feats = self._features(X, reset=True)
        n = feats.n_rows
        y = _as_float_labels(y, n)
        self._resolve_label_scale(y)
        loss = self._build_loss()
        if loss.structure == "multiclass":
            raise ValueError(
                f"SelectiveRegressor takes pointwise or group losses; {loss.name!r} is multi-class"
            )
        group_loss = loss.structure == "group"
        groups = _as_group(group, n, qid=qid) if group_loss else None
        w = _as_sample_weight(sample_weight, n)
        eval_sets = self._eval_sets(
            eval_set,
            eval_group=eval_group,
            eval_qid=eval_qid,
            eval_sample_weight=eval_sample_weight,
            labels=_as_float_labels,
            groups_needed=group_loss,
            groups_required=group_loss,
        )
        # straight to the backend (config checked above): one frame fewer to the link
        self._backend().fit(
            self,
            feats,
            y,
            group=groups,
            sample_weight=w,
            eval_sets=eval_sets,
            loss=loss,
            n_classes=None,
            metric="loss",
            callbacks=callbacks,
            init_model=init_model,
            options=lightgbm_fit_options(
                eval_names=eval_names,
                eval_metric=eval_metric,
                init_score=init_score,
                eval_init_score=eval_init_score,
                feature_name=feature_name,
                categorical_feature=categorical_feature,
            ),
        )
        return self

    def predict(self, X: Array) -> np.ndarray:
        """Predictions in the space of ``y`` (``h(score)`` for ``target="link"``)."""
        s = self.decision_function(X)
        if getattr(self.loss_, "target", "score") == "link" and self.loss_.structure == "pointwise":
            return np.asarray(A.to_numpy(self.loss_.link.h(s)), dtype=np.float64)
        return s / float(self.label_scale_)  # targets were label_scale_ * y
