"""SelectiveClassifier: classification with a selective matching loss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .. import _array as A
from .._array import Array
from ..gbdt import DEFAULT_HESSIAN_FLOOR
from ..losses import Loss, get_loss
from ..losses.multiclass import CompositeSoftmax
from ._validation import _as_labels, _as_sample_weight, refuse_dask
from .base import ClassifierMixin, _SelectiveEstimator, lightgbm_fit_options


class SelectiveClassifier(ClassifierMixin, _SelectiveEstimator):
    r"""Classification with a selective matching loss.

    ``loss=None`` picks the logistic case for two classes (pointwise, ``link="sigmoid"``,
    ``target="link"``: LightGBM's ``cross_entropy``) and the softmax for more
    (``composite_softmax`` with ``scaling="constant"``, ``target="link"``). Selective choices:
    a shifted sigmoid or ``exp`` link for two classes, ``scaling="exp"`` / ``"sinh"`` /
    ``"relu"`` (with ``target="score"``) or ``loss="decomposed"`` for more (docs/math.md §3).
    Parameters are those of :class:`SelectiveRanker`; early stopping uses the loss.

    Class probabilities follow from properness: the model's link value estimates the mean
    link value of the targets, :math:`h(\hat s) \approx \sum_k P(k)\,h(s_k)`, which is solved
    for :math:`P` (for the logistic and softmax defaults this is the usual sigmoid / softmax).

    Attributes
    ----------
    classes_ : ndarray
    n_classes_ : int
    """

    kind = "classifier"
    _default_loss = None

    def __init__(
        self,
        loss: Loss | str | None = None,
        *,
        link: Any = None,
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

    def _classifier_loss(self, n_classes: int) -> Loss:
        if self.loss is None:
            params = self._loss_arguments()
            if n_classes == 2:
                params.setdefault("link", "sigmoid")
                if (
                    "target" not in params
                ):  # 0/1 labels are link values when the link's range is [0, 1]
                    from ..links import get_link

                    link_params = {k: v for k, v in params.items() if k != "link"}
                    lo, hi = get_link(params["link"], **link_params).range
                    params["target"] = "link" if lo >= 0.0 and hi <= 1.0 else "score"
                return get_loss("pointwise", **params)
            params.setdefault("scaling", "constant")
            params.setdefault("target", "link" if params["scaling"] == "constant" else "score")
            return get_loss("composite_softmax", **params)
        loss = self._build_loss()
        if loss.structure == "group":
            raise ValueError(
                f"SelectiveClassifier takes pointwise or multi-class losses; {loss.name!r} is a group loss"
            )
        if n_classes > 2 and loss.structure != "multiclass":
            raise ValueError(
                f"{n_classes} classes need a multi-class loss ('composite_softmax', 'decomposed'); got {loss.name!r}"
            )
        return loss

    def fit(
        self,
        X: Array,
        y: Array,
        *,
        sample_weight: Array | None = None,
        eval_set: Any = None,
        eval_sample_weight: Any = None,
        callbacks: Sequence[Any] | None = None,
        init_model: Any = None,
        eval_names: Sequence[str] | None = None,
        eval_metric: Any = None,
        init_score: Array | None = None,
        eval_init_score: Any = None,
        feature_name: Any = "auto",
        categorical_feature: Any = "auto",
    ) -> SelectiveClassifier:
        """Fit class labels ``y`` (any hashable values; NaN and continuous targets are refused).

        ``X`` as in :meth:`SelectiveRanker.fit`; ``callbacks`` are LightGBM's / XGBoost's training
        callbacks (``[lightgbm.early_stopping(20), lightgbm.log_evaluation(10)]``);
        ``init_model`` a fitted estimator of the same class (or a LightGBM booster) to continue
        training from (backend ``"lightgbm"``; a path: a LightGBM model file). ``eval_names``,
        ``eval_metric``, ``init_score``, ``eval_init_score``, ``feature_name`` and
        ``categorical_feature`` are LightGBM's ``fit`` options (backend ``"lightgbm"``), as in
        :meth:`SelectiveRanker.fit`. Returns ``self``.
        """
        from sklearn.utils.multiclass import check_classification_targets

        self._check_config()
        refuse_dask(
            f"{type(self).__name__}.fit",
            X=X,
            y=y,
            sample_weight=sample_weight,
            eval_set=eval_set,
            eval_sample_weight=eval_sample_weight,
        )
        feats = self._features(X, reset=True)
        n = feats.n_rows
        labels = _as_labels(y, n)
        check_classification_targets(
            labels
        )  # NaN, continuous or multi-output y: scikit-learn's message
        classes, yi = np.unique(labels, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"SelectiveClassifier needs at least 2 classes in `y`; got one class {classes.tolist()}"
            )
        self.classes_ = classes
        self.n_classes_ = int(classes.size)
        self._resolve_label_scale(yi)  # a number for classifiers: the class targets' scale
        loss = self._classifier_loss(self.n_classes_)
        n_classes = self.n_classes_ if loss.structure == "multiclass" else None
        w = _as_sample_weight(sample_weight, n)

        def class_index(ye, n_rows, name):
            le = _as_labels(ye, n_rows, name)
            unknown = ~np.isin(le, classes)
            if np.any(unknown):
                raise ValueError(
                    f"`{name}` holds labels not seen in training: {np.unique(le[unknown]).tolist()[:5]}"
                )
            return np.searchsorted(classes, le).astype(np.float64)

        eval_sets = self._eval_sets(
            eval_set,
            eval_sample_weight=eval_sample_weight,
            labels=class_index,
            groups_needed=False,
        )
        # straight to the backend (config checked above): one frame fewer to the link
        self._backend().fit(
            self,
            feats,
            yi.reshape(-1).astype(np.float64),
            group=None,
            sample_weight=w,
            eval_sets=eval_sets,
            loss=loss,
            n_classes=n_classes,
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

    def _fitted_extra(self) -> tuple[str, ...]:
        return (*super()._fitted_extra(), "classes_", "n_classes_")

    def _class_link_values(self) -> np.ndarray:
        """Link value of each class's target: rows ``k`` of the matrix solved for probabilities."""
        loss, K = self.loss_, self.n_classes_
        if loss.structure == "pointwise":
            if loss.target == "link":
                return np.array([[0.0], [1.0]])
            s = np.array([0.0, 1.0]) * self.label_scale_
            return np.asarray(A.to_numpy(loss.link.h(s)), dtype=np.float64).reshape(2, 1)
        eye = np.eye(K)
        if loss.target == "link":
            value = cast(Any, loss).scaling.alpha if isinstance(loss, CompositeSoftmax) else 1.0
            return eye * value
        return self._link_values(eye * self.label_scale_)

    def _link_values(self, scores: np.ndarray) -> np.ndarray:
        loss = self.loss_
        if isinstance(loss, CompositeSoftmax):
            return np.asarray(A.to_numpy(loss.link(scores)), dtype=np.float64)
        return np.asarray(A.to_numpy(loss.link.h(scores)), dtype=np.float64)

    def predict_proba(self, X: Array) -> np.ndarray:
        """Class probabilities, shape ``(n_rows, n_classes)`` (see the class docstring)."""
        s = self.decision_function(X)
        M = self._class_link_values()
        if self.loss_.structure == "pointwise":
            hv = self._link_values(s)
            lo, hi = float(M[0, 0]), float(M[1, 0])
            p1 = np.clip((hv - lo) / (hi - lo), 0.0, 1.0)
            return np.column_stack([1.0 - p1, p1])
        hv = self._link_values(s.reshape(-1, self.n_classes_))
        P = np.linalg.solve(M.T, hv.T).T  # hv = P @ M
        P = np.clip(P, 0.0, None)
        total = P.sum(axis=1, keepdims=True)
        return np.where(total > 0, P / np.where(total > 0, total, 1.0), 1.0 / self.n_classes_)

    def predict(self, X: Array) -> np.ndarray:
        """The most probable class."""
        proba = self.predict_proba(X)  # NotFittedError before classes_ is looked up
        return self.classes_[np.argmax(proba, axis=1)]
