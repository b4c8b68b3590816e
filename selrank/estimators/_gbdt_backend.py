"""What the two gradient-boosting backends share: objective, eval sets, early stopping, files."""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _array as A
from .._numba import planned_calls
from ._backend import Backend
from ._validation import Features, is_verbose

if TYPE_CHECKING:
    from ..gbdt import LightGBMObjective, XGBoostObjective
    from ..losses import Loss

#: Defaults of the GBDT backends when the estimator's own parameter is left at ``None``.
GBDT_DEFAULTS = {"n_estimators": 1000, "learning_rate": 0.05, "early_stopping_rounds": 50}


class GBDTBackend(Backend):
    """A gradient-boosting library trained through a selrank objective (:mod:`selrank.gbdt`).

    Subclasses give the objective factory and :meth:`train` (datasets, parameters, callbacks
    and the boosting call of their library); the rest is shared: the objective and its checks
    of labels, groups and weights (eval sets too, before boosting starts), the defaults of
    :data:`GBDT_DEFAULTS`, early stopping on NDCG or the loss, prediction and the model field
    of the estimator's file.
    """

    #: The model field of the estimator's file holds text (LightGBM) or base64 bytes (XGBoost).
    model_is_text: ClassVar[bool] = True

    # -- parameters ----------------------------------------------------------------------------
    def objective_class(self) -> type[LightGBMObjective] | type[XGBoostObjective]:
        raise NotImplementedError

    def parameter_names(self, params: dict[str, Any]) -> set[str]:
        return set(self.objective_class().parameter_names(params))

    def train_params(self, est: Any) -> dict[str, Any]:
        """The estimator's backend keyword arguments with this library's defaults added."""
        return dict(est.backend_kwargs())

    def objective_options(self, params: dict[str, Any]) -> dict[str, Any]:
        """Options of the objective that follow from the training parameters."""
        return {}

    def make_objective(
        self, est: Any, loss: Loss, params: dict[str, Any]
    ) -> LightGBMObjective | XGBoostObjective:
        """The selrank objective of ``loss`` with the estimator's Hessian policy and label scale."""
        options = {
            "hessian": est.hessian,
            "hessian_floor": est.hessian_floor,
            "label_scale": est.label_scale_,  # resolved by the estimator ("auto" included)
            **self.objective_options(params),
        }
        return self.objective_class()(loss, **options)

    def init_booster(self, est: Any, init_model: Any) -> Any:
        """``init_model=`` of ``fit`` as the library's booster (continued training), or ``None``."""
        if init_model is None:
            return None
        raise ValueError(
            f"`init_model` (continued training) is supported on backend='lightgbm'; got backend={self.name!r}"
        )

    # -- training ------------------------------------------------------------------------------
    def fit(
        self,
        est: Any,
        X: Features,
        y: np.ndarray,
        *,
        group: Any,
        sample_weight: np.ndarray | None,
        eval_sets: list[dict],
        loss: Loss,
        n_classes: int | None,
        metric: str,
        callbacks: Sequence[Any] | None = None,
        init_model: Any = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        options = self.check_options(options or {}, X, y, eval_sets, n_classes)
        user_callbacks = user_callback_list(callbacks)
        init_booster = self.init_booster(est, init_model)
        params = self.train_params(est)
        objective = self.make_objective(est, loss, params)
        n_rounds, lr, esr = _rounds(est)
        if not eval_sets:
            esr = 0
            if est.n_estimators is None:
                n_rounds = est.rounds_without_eval()
        # validation of labels, weights, groups and the link's domain, before anything is
        # built; under the fit's plan, so that its loss evaluation takes the fit's kernel choice
        fit_group = group if loss.structure == "group" else None
        with planned_calls(n_rounds):
            objective.fit_intercept(
                y, group=fit_group, sample_weight=sample_weight, n_classes=n_classes
            )
        for k, ev in enumerate(eval_sets):
            self.validate_eval(objective, loss, ev, n_classes, k, metric)
        booster, best, history = self.train(
            est,
            objective,
            X,
            y,
            group=group,
            sample_weight=sample_weight,
            eval_sets=eval_sets,
            n_classes=n_classes,
            params=params,
            n_rounds=n_rounds,
            lr=lr,
            esr=esr,
            metric=metric,
            user_callbacks=user_callbacks,
            init_model=init_booster,
            options=options,
        )
        if (
            init_booster is not None or "init_score" in options
        ):  # the init model's intercept is in its first trees
            objective.write_intercept(booster, np.zeros_like(np.asarray(objective.intercept_)))
        est.objective_ = objective
        est.loss_ = loss
        est.booster_ = booster
        est.best_iteration_ = best
        est.evals_result_ = history
        est.best_score_ = best_scores(history, best)
        est.intercept_ = objective.booster_intercept(booster)
        est.n_estimators_ = objective.n_rounds(booster) if best is None else best

    def check_options(
        self,
        options: dict[str, Any],
        X: Features,
        y: np.ndarray,
        eval_sets: list[dict],
        n_classes: int | None,
    ) -> dict[str, Any]:
        """The LightGBM ``fit`` options, checked (refused by a backend without them)."""
        self.refuse_options(options)
        return {}

    def train(
        self,
        est: Any,
        objective: Any,
        X: Features,
        y: np.ndarray,
        *,
        group: Any,
        sample_weight: np.ndarray | None,
        eval_sets: list[dict],
        n_classes: int | None,
        params: dict[str, Any],
        n_rounds: int,
        lr: float,
        esr: int,
        metric: str,
        user_callbacks: Sequence[Any] = (),
        init_model: Any = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, int | None, dict]:
        """Boost: ``(booster, rounds kept by early stopping or None, metric history)``."""
        raise NotImplementedError

    @staticmethod
    def validate_eval(
        objective: Any, loss: Loss, ev: dict, n_classes: int | None, k: int, metric: str
    ) -> None:
        """Labels, groups and weights of ``eval_set[k]``, checked before boosting starts."""
        try:
            b = objective.bind(
                ev["y"],
                group=ev["group"] if loss.structure == "group" else None,
                sample_weight=ev["weight"],
                n_classes=n_classes,
            )
            if metric == "ndcg" and np.any(ev["y"] < 0):
                bad = int(np.flatnonzero(ev["y"] < 0)[0])
                raise ValueError(
                    f"NDCG (early stopping) needs labels >= 0; row {bad} holds {float(ev['y'][bad])!r}"
                )
        except ValueError as exc:
            raise ValueError(f"eval_set[{k}]: {exc}") from None
        ev["bound"] = b

    @staticmethod
    def metric_fn(
        est: Any, metric: str, ev: dict
    ) -> Callable[[np.ndarray], tuple[str, float, bool]]:
        """``f(scores) -> (name, value, higher_is_better)`` on one eval set (intercept added)."""
        if metric == "ndcg":
            return ndcg_metric(ev["y"], ev["group"], est.eval_ks()[0])
        bound = ev["bound"]
        n_classes = bound.n_classes

        def fn(scores):
            # eval scores start from the intercept too (init_score / base_margin of the eval set)
            s = scores.reshape(-1, n_classes) if n_classes else scores
            return "selrank_loss", float(A.to_numpy(bound.full.loss(s, reduction="mean"))), False

        return fn

    @staticmethod
    def progress_enabled(est: Any) -> bool:
        """A progress bar with ``verbose=True`` when stderr is a terminal (never in logs or CI)."""
        return is_verbose(est.verbose) and sys.stderr.isatty()

    # -- prediction ----------------------------------------------------------------------------
    def predict(self, est: Any, data: Features) -> np.ndarray:
        return np.asarray(
            est.objective_.predict(est.booster_, data, n_iterations=est.best_iteration_),
            dtype=np.float64,
        )

    def feature_gain(self, est: Any, importance_type: str = "gain") -> np.ndarray:
        return np.asarray(
            est.objective_.feature_gain(
                est.booster_, est.n_features_in_, importance_type=importance_type
            ),
            dtype=np.float64,
        )

    # -- the estimator's file ------------------------------------------------------------------
    def model_fields(self, est: Any) -> dict[str, Any]:
        model = est.objective_.save_model(est.booster_)
        if isinstance(model, bytes):
            model = base64.b64encode(model).decode("ascii")
        return {
            "model": model,
            "intercept_in_model": bool(est.objective_.intercept_in_model(est.booster_)),
        }

    def restore(self, est: Any, doc: dict) -> None:
        objective: Any = self.make_objective(est, est.loss_, est.backend_kwargs())
        model = doc["model"] if self.model_is_text else base64.b64decode(doc["model"])
        est.objective_ = objective
        est.booster_ = objective.load_model(model)
        objective.write_intercept(est.booster_, est.intercept_)  # files before 0.2
        objective.fold_intercept(est.booster_)  # format 1: the model lacked it (no-op in 2)


def best_scores(history: dict, best: int | None) -> dict[str, dict[str, float]]:
    """``{eval set: {metric: value}}`` at the kept round (``best``, else the last), as
    LightGBM's ``best_score_``."""
    out: dict[str, dict[str, float]] = {}
    for name, metrics in history.items():
        out[name] = {}
        for metric, values in metrics.items():
            if len(values):
                at = len(values) - 1 if best is None else min(int(best), len(values)) - 1
                out[name][metric] = float(values[at])
    return out


def ndcg_metric(
    y: np.ndarray, groups: Any, k: int
) -> Callable[[np.ndarray], tuple[str, float, bool]]:
    """The early-stopping score of the rankers (and of the CLI's LightGBM baselines): NDCG@k."""
    from ..metrics import ndcg

    def fn(scores):
        return f"ndcg@{k}", float(ndcg(y, scores, groups, k=k)), True

    return fn


def _rounds(est) -> tuple[int, float, int]:
    """Boosting rounds, learning rate and early-stopping patience (``GBDT_DEFAULTS`` for None)."""

    def default(name: str):
        value = getattr(est, name)
        return GBDT_DEFAULTS[name] if value is None else value

    return (
        int(default("n_estimators")),
        float(default("learning_rate")),
        int(default("early_stopping_rounds")),
    )


def user_callback_list(callbacks) -> list:
    """The ``callbacks=`` of ``fit`` (LightGBM's / XGBoost's training callbacks) as a list."""
    if callbacks is None:
        return []
    if callable(callbacks) or not isinstance(callbacks, list | tuple):
        raise TypeError(
            "`callbacks` must be a list of training callbacks, e.g. [lightgbm.early_stopping(20), "
            f"lightgbm.log_evaluation(10)]; got {type(callbacks).__name__}"
        )
    return list(callbacks)
