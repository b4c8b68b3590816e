"""The shared machinery of the estimators: loss resolution, backend dispatch, persistence."""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import warnings
from typing import Any

import numpy as np

from .. import _array as A
from .._files import open_write
from .._groups import Groups
from .._validation import positive_float
from ..gbdt._objective import DEFAULT_HESSIAN_FLOOR, HESSIAN_POLICIES
from ..losses import Loss, get_loss
from ._validation import (
    Features,
    as_features,
    as_seed,
    check_parameter_names,
    is_verbose,
)
from .persistence import (
    _FORMAT,
    _FORMAT_VERSION,
    ESTIMATOR_CLASSES,
    _decode,
    _encode,
    document_checksum,
    load,
)

logger = logging.getLogger("selrank")

_WEIGHT_REASON = (
    "a weight is not a row count in gradient boosting: LightGBM's min_data_in_leaf and the feature "
    "binning count rows whatever their weight, so weight 2 differs from a repeated row"
)

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin  # noqa: F401 (re-exported)
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError(
        "selrank's estimators require scikit-learn: pip install 'selrank[gbdt]' (LightGBM/XGBoost "
        "estimators) or 'selrank[torch]' (NeuralRanker)"
    ) from exc

__all__ = ["BACKENDS", "GBDT_DEFAULTS", "RANKER_LABEL_SCALE", "RANKER_LOSS_DEFAULTS", "load"]

BACKENDS = ("lightgbm", "xgboost", "torch")

#: Defaults of the GBDT backends when the estimator's own parameter is left at ``None``.
GBDT_DEFAULTS = {"n_estimators": 1000, "learning_rate": 0.05, "early_stopping_rounds": 50}

#: Target scores of a ranker are ``RANKER_LABEL_SCALE * label`` for labels whose largest value
#: is 2 (chosen on the LETOR validation splits, see docs/estimators.md); the default
#: ``label_scale="auto"`` is ``2 * RANKER_LABEL_SCALE / max|y|``, the same on LETOR grades.
RANKER_LABEL_SCALE = 0.25

#: Loss parameters a ranker uses unless given (chosen on the LETOR validation splits): the
#: listwise composite softmax with a temperature of 4.
RANKER_LOSS_DEFAULTS: dict[str, dict[str, Any]] = {"listwise": {"gamma": 4.0}}


# ----------------------------------------------------------------------------------------------
# the shared estimator
# ----------------------------------------------------------------------------------------------
class _SelectiveEstimator(BaseEstimator):
    """Shared machinery: loss resolution, backend dispatch, early stopping, persistence."""

    _kind = "estimator"
    _default_loss = "pointwise"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            ESTIMATOR_CLASSES[cls.__name__] = cls  # what `load` may rebuild

    def __init__(
        self,
        loss=None,
        *,
        link=None,
        scaling=None,
        target: str | None = None,
        loss_params=None,
        label_scale: float = 1.0,
        hessian: str = "floor",
        hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
        backend: str = "lightgbm",
        n_estimators: int | None = None,
        learning_rate: float | None = None,
        early_stopping_rounds: int | None = None,
        eval_at=10,
        random_state: int | None = None,
        verbose: bool = False,
        **backend_params,
    ):
        self.loss = loss
        self.link = link
        self.scaling = scaling
        self.target = target
        self.loss_params = loss_params
        self.label_scale = label_scale
        self.hessian = hessian
        self.hessian_floor = hessian_floor
        self.backend = backend
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.random_state = random_state
        self.verbose = verbose
        self._backend_params: dict[str, Any] = {}
        self.set_params(**backend_params)

    # -- scikit-learn parameter protocol (backend parameters pass through, as in LightGBM) -------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        params = super().get_params(deep=deep)
        params.update(self._backend_params)
        return params

    def set_params(self, **params):
        own = set(self._get_param_names())
        for key, value in params.items():
            if key in own:
                setattr(self, key, value)
            else:
                if key.endswith("_") or key.startswith("_"):
                    raise ValueError(f"invalid backend parameter {key!r} for {type(self).__name__}")
                self._backend_params[key] = value
        return self

    def __getattr__(self, name: str):
        # backend parameters read like attributes (est.num_leaves), as in LightGBM's estimators,
        # without being instance attributes that __init__ would set
        params = self.__dict__.get("_backend_params", {})
        if name in params:
            return params[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- configuration ------------------------------------------------------------------------------
    def _check_config(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"`backend` must be one of {BACKENDS}; got {self.backend!r}")
        if self.hessian not in HESSIAN_POLICIES:
            raise ValueError(f"`hessian` must be one of {HESSIAN_POLICIES}; got {self.hessian!r}")
        if not (self.label_scale == "auto" and self._kind == "ranker"):
            positive_float(self.label_scale, "label_scale", type(self).__name__)
        positive_float(self.hessian_floor, "hessian_floor", type(self).__name__, allow_zero=True)
        for name in ("n_estimators", "early_stopping_rounds"):
            v = getattr(self, name)
            if v is not None and (
                isinstance(v, bool)
                or not isinstance(v, int | np.integer)
                or v < (1 if name == "n_estimators" else 0)
            ):
                raise ValueError(f"`{name}` must be a positive integer or None; got {v!r}")
        if self.learning_rate is not None:
            positive_float(self.learning_rate, "learning_rate", type(self).__name__)
        self._eval_ks()
        self._check_backend_params()

    def _check_backend_params(self) -> None:
        """Refuse keyword arguments the backend does not know (typos), with the closest valid name."""
        if not self._backend_params:
            return
        if self.backend == "torch":
            from .neural import NeuralRanker

            names = set(NeuralRanker._get_param_names())  # noqa: SLF001
        else:
            names = self._objective_class().parameter_names(self._backend_params)
        check_parameter_names(
            type(self).__name__, self._backend_params, self._get_param_names(), self.backend, names
        )

    def _objective_class(self):
        from ..gbdt import LightGBMObjective, XGBoostObjective

        return XGBoostObjective if self.backend == "xgboost" else LightGBMObjective

    def _eval_ks(self) -> list[int]:
        ks = (
            [self.eval_at]
            if isinstance(self.eval_at, int | np.integer)
            else list(self.eval_at or [])
        )
        if not ks or any(
            isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in ks
        ):
            raise ValueError(
                f"`eval_at` must be a positive int or a non-empty sequence of them; got {self.eval_at!r}"
            )
        return [int(k) for k in ks]

    def _loss_arguments(self) -> dict[str, Any]:
        params = dict(self.loss_params or {})
        if not isinstance(params, dict):
            raise TypeError(f"`loss_params` must be a dict; got {type(self.loss_params).__name__}")
        for name in ("link", "scaling", "target"):
            value = getattr(self, name)
            if value is not None:
                params[name] = value
        return params

    _loss_defaults: dict[str, dict[str, Any]] = {}

    def _build_loss(self, loss=None) -> Loss:
        loss = (
            self._default_loss
            if loss is None and self.loss is None
            else (loss if loss is not None else self.loss)
        )
        params = self._loss_arguments()
        if isinstance(loss, Loss):
            if params:
                raise ValueError(
                    f"`loss` is a Loss object; link/scaling/target/loss_params {sorted(params)} must be set on it"
                )
            return loss
        if not isinstance(loss, str):
            raise TypeError(f"`loss` must be a name or a Loss; got {type(loss).__name__}")
        for key, value in self._loss_defaults.get(loss.lower(), {}).items():
            params.setdefault(key, value)
        return get_loss(loss, **params)

    def _backend_kwargs(self) -> dict[str, Any]:
        return dict(self._backend_params)

    # -- features --------------------------------------------------------------------------------------
    def _features(self, X, *, reset: bool, name: str = "X") -> Features:
        """Checked features; ``feature_names_in_`` / ``n_features_in_`` are set (fit) or compared (predict).

        Columns of a data frame must come in the order and with the names seen in ``fit``
        (scikit-learn's message lists the missing, unexpected or reordered ones).
        """
        from sklearn.utils.validation import validate_data

        feats = as_features(X, name)
        validate_data(self, X, reset=reset, skip_check_array=True)
        return feats

    # -- training -----------------------------------------------------------------------------------------
    def _make_objective(self, loss: Loss, params: dict | None = None):
        from ..gbdt import lightgbm_objective, xgboost_objective

        options = {
            "hessian": self.hessian,
            "hessian_floor": self.hessian_floor,
            "label_scale": getattr(self, "label_scale_", self.label_scale),  # "auto" resolved
        }
        if self.backend == "xgboost":
            options["min_leaf_hessian"] = float((params or {}).get("min_child_weight", 1e-3))
            return xgboost_objective(loss, **options)
        return lightgbm_objective(loss, **options)

    def _fit(
        self,
        X: Features,
        y,
        *,
        group: Groups | None,
        sample_weight,
        eval_sets: list[dict],
        loss: Loss,
        n_classes: int | None,
        metric: str,
        callbacks=None,
        init_model=None,
    ):
        """Train the backend; ``y`` are the labels the objective sees (class indices for classifiers)."""
        self._check_config()
        callbacks = _user_callbacks(callbacks)
        init_booster = _init_booster(self, init_model)
        if self.backend == "torch":
            raise ValueError(
                f"backend='torch' is available for SelectiveRanker only; got it for {type(self).__name__}"
            )
        params = self._backend_kwargs()
        if self.backend == "xgboost":
            params.setdefault("min_child_weight", 1e-3)
        objective = self._make_objective(loss, params)
        # validation of labels, weights, groups and the link's domain, before anything is built
        fit_group = group if loss.structure == "group" else None
        objective.fit_intercept(
            y, group=fit_group, sample_weight=sample_weight, n_classes=n_classes
        )
        for k, ev in enumerate(eval_sets):
            self._validate_eval(objective, loss, ev, n_classes, k, metric)
        n_rounds = (
            self.n_estimators if self.n_estimators is not None else GBDT_DEFAULTS["n_estimators"]
        )
        lr = (
            self.learning_rate if self.learning_rate is not None else GBDT_DEFAULTS["learning_rate"]
        )
        esr = (
            self.early_stopping_rounds
            if self.early_stopping_rounds is not None
            else GBDT_DEFAULTS["early_stopping_rounds"]
        )
        if not eval_sets:
            esr = 0
            if self.n_estimators is None:
                n_rounds = self._rounds_without_eval()
        fit = self._fit_lightgbm if self.backend == "lightgbm" else self._fit_xgboost
        booster, best, history = fit(
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
            user_callbacks=callbacks,
            init_model=init_booster,
        )
        if init_booster is not None:  # the init model's intercept is in its first trees
            objective._write_intercept(booster, np.zeros_like(np.asarray(objective.intercept_)))  # noqa: SLF001
        self.objective_ = objective
        self.loss_ = loss
        self.booster_ = booster
        self.best_iteration_ = best
        self.evals_result_ = history
        self.intercept_ = objective.booster_intercept(booster)
        self.n_estimators_ = objective.n_rounds(booster) if best is None else best
        return self

    def _rounds_without_eval(self) -> int:
        return 300

    def _validate_eval(self, objective, loss, ev, n_classes, k, metric):
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

    def _metric_fn(self, metric: str, ev: dict):
        """``f(scores) -> (name, value, higher_is_better)`` on one eval set (intercept added)."""
        if metric == "ndcg":
            from ..metrics import ndcg

            k = self._eval_ks()[0]
            y, groups = ev["y"], ev["group"]

            def fn(scores):
                return f"ndcg@{k}", float(ndcg(y, scores, groups, k=k)), True

            return fn
        bound = ev["bound"]
        n_classes = bound.n_classes

        def fn(scores):
            # eval scores start from the intercept too (init_score / base_margin of the eval set)
            s = scores.reshape(-1, n_classes) if n_classes else scores
            return "selrank_loss", float(A.to_numpy(bound.full.loss(s, reduction="mean"))), False

        return fn

    def _progress_enabled(self) -> bool:
        """A progress bar with ``verbose=True`` when stderr is a terminal (never in logs or CI)."""
        return is_verbose(self.verbose) and sys.stderr.isatty()

    def _fit_lightgbm(
        self,
        objective,
        X: Features,
        y,
        *,
        group,
        sample_weight,
        eval_sets,
        n_classes,
        params,
        n_rounds,
        lr,
        esr,
        metric,
        user_callbacks=(),
        init_model=None,
    ):
        from ..gbdt._lightgbm import _MIN_ROWS_ALIASES, _param, import_lightgbm

        lgb = import_lightgbm()
        p = {
            "learning_rate": lr,
            "verbosity": 1 if is_verbose(self.verbose) else -1,
            "metric": "None",
        }
        if self.random_state is not None:
            p["seed"] = as_seed(self.random_state)
        if n_classes:
            p["num_class"] = int(n_classes)
        p.update(params)
        if _param(params, _MIN_ROWS_ALIASES) is None and X.n_rows < 40:
            # LightGBM's default min_data_in_leaf=20 allows no split below 40 rows
            p["min_data_in_leaf"] = max(1, X.n_rows // 10)
            logger.info(
                "%s: %d rows < 2 x min_data_in_leaf=20; training with min_data_in_leaf=%d",
                type(self).__name__,
                X.n_rows,
                p["min_data_in_leaf"],
            )
        names = _lightgbm_names(X.names)
        ds_params = {"verbosity": p["verbosity"]}
        train = lgb.Dataset(
            X.data,
            label=y,
            group=None if group is None else group.sizes,
            weight=sample_weight,
            params=ds_params,
            free_raw_data=False,
            feature_name=names or "auto",
        )
        valids = [
            lgb.Dataset(
                ev["X"].data,
                label=ev["y"],
                group=None if ev["group"] is None else ev["group"].sizes,
                weight=ev["weight"],
                reference=train,
                feature_name=names or "auto",
            )
            for ev in eval_sets
        ]
        callbacks, feval = [], None
        history: dict = {}
        names_v = None
        if valids:
            fns = [self._metric_fn(metric, ev) for ev in eval_sets]
            names_v = [f"valid_{k}" for k in range(len(valids))]
            index = {id(v): k for k, v in enumerate(valids)}

            def feval(preds, data):
                name, value, higher = fns[index[id(data)]](np.asarray(preds))
                return name, value, higher

            callbacks.append(lgb.record_evaluation(history))
            if esr and not _stops_early(user_callbacks):  # the user's early stopping replaces it
                callbacks.append(
                    lgb.early_stopping(
                        esr, first_metric_only=True, verbose=is_verbose(self.verbose)
                    )
                )
        if self._progress_enabled():
            from ..gbdt._progress import lightgbm_progress

            callbacks.append(lightgbm_progress(n_rounds, type(self).__name__))
        callbacks.extend(user_callbacks)
        booster = objective.train(
            p,
            train,
            n_rounds,
            valid_sets=valids or None,
            valid_names=names_v,
            feval=feval,
            callbacks=callbacks,
            init_model=init_model,
        )
        stops = esr or _stops_early(user_callbacks)
        best = (
            int(booster.best_iteration) if valids and stops and booster.best_iteration > 0 else None
        )
        return booster, best, history

    def _fit_xgboost(
        self,
        objective,
        X: Features,
        y,
        *,
        group,
        sample_weight,
        eval_sets,
        n_classes,
        params,
        n_rounds,
        lr,
        esr,
        metric,
        user_callbacks=(),
        init_model=None,
    ):
        from ..gbdt._xgboost import import_xgboost

        xgb = import_xgboost()
        p = {
            "eta": lr,
            "verbosity": 1 if is_verbose(self.verbose) else 0,
            "tree_method": "hist",
            "disable_default_eval_metric": 1,
        }
        if self.random_state is not None:
            p["seed"] = as_seed(self.random_state)
        if n_classes:
            p["num_class"] = int(n_classes)
        p.update(params)
        device = str(p.get("device", "cpu"))
        data = None
        if device.startswith("cuda") and isinstance(X.data, np.ndarray | type(None)) is not False:
            try:
                import cupy

                data = cupy.asarray(X.data)
            except ImportError:
                warnings.warn(
                    "device='cuda' without CuPy: trees are built on the GPU but gradients are computed on "
                    "the host (pip install cupy for the device-resident loop)",
                    UserWarning,
                    stacklevel=3,
                )
        group_loss = objective.structure == "group"
        names = _xgboost_names(X.names)

        def dmatrix(Xm, ym, groups, weight):
            d = xgb.DMatrix(Xm, label=ym, feature_names=names, enable_categorical=True)
            if groups is not None and group_loss:
                d.set_group(groups.sizes)
                if (
                    weight is not None
                ):  # XGBoost ranking weights are per query: the mean of its rows
                    d.set_weight(groups.mean_per_group(weight))
            elif weight is not None:
                d.set_weight(weight)
            return d

        dtrain = dmatrix(X.data, y, group, sample_weight)
        evals = [
            (dmatrix(ev["X"].data, ev["y"], ev["group"], ev["weight"]), f"valid_{k}")
            for k, ev in enumerate(eval_sets)
        ]
        custom_metric = None
        history: dict = {}
        if evals:
            fns = [self._metric_fn(metric, ev) for ev in eval_sets]
            index = {id(d): k for k, (d, _) in enumerate(evals)}

            def custom_metric(preds, d):
                name, value, _ = fns[index[id(d)]](np.asarray(preds))
                return name, value

        callbacks = []
        if self._progress_enabled():
            from ..gbdt._progress import xgboost_progress

            callbacks.append(xgboost_progress(n_rounds, type(self).__name__))
        callbacks.extend(user_callbacks)
        higher = metric == "ndcg"
        booster = objective.train(
            p,
            dtrain,
            n_rounds,
            data=data,
            evals=evals,
            custom_metric=custom_metric,
            early_stopping_rounds=esr or None,
            maximize=higher if esr else None,
            evals_result=history,
            callbacks=callbacks or None,
        )
        best = getattr(booster, "best_iteration", None) if evals and esr else None
        if best is not None and int(best) + 1 < objective.n_rounds(booster):
            # keep the best rounds only (LightGBM's booster is cut the same way), so that plain
            # XGBoost, which predicts every tree of a saved model, scores what predict scores
            booster = booster[: int(best) + 1]
        return booster, (None if best is None else int(best) + 1), history

    # -- notebook display ----------------------------------------------------------------------------------
    def _fitted_summary(self) -> list[tuple[str, object]]:
        """``(field, value)`` pairs of the fitted state (empty before ``fit``)."""
        if not (hasattr(self, "booster_") or hasattr(self, "model_")):
            return []
        rows: list[tuple[str, object]] = [("backend", getattr(self, "backend", None))]
        loss = getattr(self, "loss_", None)
        if loss is not None:
            rows.append(("loss", repr(loss)))
        for attr in ("n_features_in_", "best_iteration_", "best_score_", "intercept_"):
            value = getattr(self, attr, None)
            if value is not None:
                rows.append((attr, value))
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            shown = ", ".join(map(str, list(names)[:8])) + (" …" if len(names) > 8 else "")
            rows.append(("feature_names_in_", shown))
        return rows

    def _repr_html_(self) -> str:
        """Notebook display: scikit-learn's parameter view, plus the fitted state once fitted."""
        from sklearn.utils import estimator_html_repr

        from .._repr import html_table

        fitted = self._fitted_summary()
        params = estimator_html_repr(self)
        if not fitted:
            return params
        return html_table(fitted, title=f"fitted {type(self).__name__}") + params

    # -- prediction ----------------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "booster_") and not hasattr(self, "model_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet: call fit(...) first"
            )

    def decision_function(self, X):
        """Model scores (score space, intercept included).

        A 2-D float NumPy array with the fitted number of columns (and a model fitted without
        column names) goes straight to the booster (online scoring: ``docs/benchmarks.md``);
        anything else is checked as in ``fit``.
        """
        self._check_fitted()
        if (
            type(X) is np.ndarray
            and X.ndim == 2
            and X.dtype.kind == "f"
            and X.shape[0] > 0
            and X.shape[1] == self.n_features_in_
            and getattr(self, "feature_names_in_", None) is None
        ):
            data = X  # the fast path: what _features would return unchanged
        else:
            # names, order and width as in fit, on every backend
            data = self._features(X, reset=False).data
        if hasattr(self, "model_"):
            return np.asarray(A.to_numpy(self.model_.predict(data)), dtype=np.float64)
        return np.asarray(
            self.objective_.predict(self.booster_, data, n_iterations=self.best_iteration_),
            dtype=np.float64,
        )

    @property
    def feature_importances_(self) -> np.ndarray:
        """Total gain of the splits on each feature, normalised to sum to 1 (zeros if no split)."""
        self._check_fitted()
        if hasattr(self, "model_"):
            raise AttributeError(
                "feature_importances_ is defined for the GBDT backends, not backend='torch'"
            )
        gain = np.asarray(
            self.objective_.feature_gain(self.booster_, self.n_features_in_), dtype=np.float64
        )
        total = gain.sum()
        return gain / total if total > 0 else gain

    # -- persistence ----------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted estimator to a JSON file (parameters, intercept, the booster's own model).

        A ``path`` ending in ``.gz`` is written gzip-compressed (the package's one rule for the
        files it writes); :meth:`load` recognises gzip from the file's first bytes. The file
        appears only once it is complete (written to a temporary file, then renamed).

        Losses, links and scalings from the registries are stored by name and parameters; a
        user-defined callable link cannot be, and raises ``TypeError`` (pickle works instead).
        ``backend="torch"`` models are saved with :meth:`selrank.estimators.NeuralRanker.save`
        (``est.model_.save(path)``).
        """
        self._check_fitted()
        if self.backend == "torch":
            raise ValueError(
                "save() covers the GBDT backends; for backend='torch' save the network with "
                "est.model_.save(path) (NeuralRanker.save) or pickle the estimator"
            )
        model = self.objective_.save_model(self.booster_)
        if isinstance(model, bytes):
            model = base64.b64encode(model).decode("ascii")
        fitted = {k: getattr(self, k) for k in self._fitted_extra() if hasattr(self, k)}
        if hasattr(self, "feature_names_in_"):
            fitted["feature_names_in_"] = list(self.feature_names_in_)
        doc = {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "estimator": type(self).__name__,
            "params": _encode(self.get_params(deep=False)),
            "loss": _encode(self.loss_),
            "intercept": np.asarray(self.intercept_).tolist(),
            "best_iteration": self.best_iteration_,
            "n_features_in": int(self.n_features_in_),
            "fitted": _encode(
                {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in fitted.items()}
            ),
            "model": model,
            "intercept_in_model": bool(self.objective_.intercept_in_model(self.booster_)),
        }
        doc["checksum"] = document_checksum(doc)
        with open_write(path, text=True) as fh:  # gzip when the name ends in .gz
            json.dump(doc, fh)

    def _fitted_extra(self) -> tuple[str, ...]:
        return ()

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read an estimator written by :meth:`save`; it predicts exactly as the saved one."""
        return load(path, expected=cls)

    def _restore(self, doc: dict) -> None:
        self.loss_ = _decode(doc["loss"])
        c = np.asarray(doc["intercept"], dtype=np.float64)
        self.intercept_ = float(c) if c.ndim == 0 else c
        self.best_iteration_ = doc["best_iteration"]
        self.n_features_in_ = int(doc["n_features_in"])
        for k, v in _decode(doc.get("fitted", {})).items():
            value = (
                np.asarray(v, dtype=object if k == "feature_names_in_" else None)
                if isinstance(v, list)
                else v
            )
            setattr(self, k, value)
        self.objective_ = self._make_objective(self.loss_, self._backend_kwargs())
        model = doc["model"] if self.backend == "lightgbm" else base64.b64decode(doc["model"])
        self.booster_ = self.objective_.load_model(model)
        self.objective_._write_intercept(self.booster_, self.intercept_)  # noqa: SLF001 (files before 0.2)
        self.objective_.fold_intercept(self.booster_)  # format 1: the model lacked it (no-op in 2)

    # -- scikit-learn tags ----------------------------------------------------------------------------------
    #: scikit-learn checks that cannot apply, with the reason (scikit-learn >= 1.6 has no tag for
    #: them: pass ``expected_failed_checks=est._expected_failed_checks()`` to ``check_estimator``).
    _EXPECTED_FAILED_CHECKS = {
        "check_sample_weight_equivalence_on_dense_data": _WEIGHT_REASON,
        "check_sample_weight_equivalence_on_sparse_data": _WEIGHT_REASON,
    }

    def _expected_failed_checks(self) -> dict[str, str]:
        """scikit-learn estimator checks that do not apply, each with a one-line reason."""
        return dict(self._EXPECTED_FAILED_CHECKS)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values go down the trees' default branches
        tags.input_tags.sparse = self.backend != "torch"
        tags.non_deterministic = self.backend == "torch" and self.random_state is None
        return tags


def _init_booster(est, init_model):
    """``init_model=`` of ``fit`` (LightGBM's continued training) as a booster whose raw scores
    include its intercept, or ``None``."""
    if init_model is None:
        return None
    if est.backend != "lightgbm":
        raise ValueError(
            f"`init_model` (continued training) is supported on backend='lightgbm'; got backend={est.backend!r}"
        )
    from ..gbdt._lightgbm import booster_with_intercept, import_lightgbm

    lgb = import_lightgbm()
    if isinstance(init_model, _SelectiveEstimator):
        if type(init_model) is not type(est) or getattr(init_model, "backend", None) != "lightgbm":
            raise TypeError(
                f"`init_model` must be a fitted {type(est).__name__} with backend='lightgbm' or a "
                f"lightgbm.Booster; got a {type(init_model).__name__} (backend={init_model.backend!r})"
            )
        init_model._check_fitted()  # noqa: SLF001
        n_iter = init_model.best_iteration_
        booster = init_model.booster_
        # a model that holds its intercept in its first trees (selrank >= 0.3) scores with it
        held = init_model.objective_.intercept_in_model(booster)
        if n_iter is not None and n_iter < booster.current_iteration():
            booster = lgb.Booster(model_str=booster.model_to_string(num_iteration=n_iter))
        return booster_with_intercept(booster, 0.0 if held else init_model.intercept_)
    if isinstance(init_model, lgb.Booster):
        # a plain booster: raw scores as they are (plus selrank's intercept where it is not
        # already inside the trees)
        held = bool(getattr(init_model, "_selrank_in_model", False))
        c = 0.0 if held else getattr(init_model, "_selrank_intercept", 0.0)
        return booster_with_intercept(init_model, c)
    raise TypeError(
        f"`init_model` must be a fitted {type(est).__name__} or a lightgbm.Booster; "
        f"got {type(init_model).__name__}"
    )


def _user_callbacks(callbacks) -> list:
    """The ``callbacks=`` of ``fit`` (LightGBM's / XGBoost's training callbacks) as a list."""
    if callbacks is None:
        return []
    if callable(callbacks) or not isinstance(callbacks, list | tuple):
        raise TypeError(
            "`callbacks` must be a list of training callbacks, e.g. [lightgbm.early_stopping(20), "
            f"lightgbm.log_evaluation(10)]; got {type(callbacks).__name__}"
        )
    return list(callbacks)


def _stops_early(callbacks) -> bool:
    """Whether the user's callbacks include LightGBM's early stopping (it replaces the built-in one)."""
    return any(type(cb).__name__ == "_EarlyStoppingCallback" for cb in callbacks)


def _lightgbm_names(names: list[str] | None) -> list[str] | None:
    """Column names LightGBM accepts as feature names (it refuses JSON special characters)."""
    if not names or len(set(names)) != len(names):
        return None
    if any(any(ch in n for ch in '[]{}:,"') or not n for n in names):
        return None
    return names


def _xgboost_names(names: list[str] | None) -> list[str] | None:
    """Column names XGBoost accepts as feature names (no ``[``, ``]`` or ``<``)."""
    if not names or len(set(names)) != len(names):
        return None
    if any(any(ch in n for ch in "[]<") or not n for n in names):
        return None
    return names


def _eval_sets(
    est,
    eval_set,
    *,
    eval_group=None,
    eval_qid=None,
    eval_sample_weight=None,
    labels,
    groups_needed: bool,
    groups_required: bool = False,
) -> list[dict]:
    """Checked ``eval_set`` items: features like the training ones, labels, groups, weights."""
    from ._validation import _as_group, _as_sample_weight, _eval_list, _eval_pairs

    if eval_set is None:
        for name, value in (
            ("eval_group", eval_group),
            ("eval_qid", eval_qid),
            ("eval_sample_weight", eval_sample_weight),
        ):
            if value is not None:
                raise ValueError(f"`{name}` was given without `eval_set`")
        return []
    pairs = _eval_pairs(eval_set)
    gs = _eval_list(eval_group, len(pairs), "eval_group")
    qs = _eval_list(eval_qid, len(pairs), "eval_qid")
    ws = _eval_list(eval_sample_weight, len(pairs), "eval_sample_weight")
    out = []
    for k, ((Xe, ye), g, q, w) in enumerate(zip(pairs, gs, qs, ws)):
        try:
            feats = est._features(Xe, reset=False, name=f"eval_set[{k}][0]")  # noqa: SLF001
        except ValueError as exc:
            raise ValueError(f"eval_set[{k}]: {exc}") from None
        n = feats.n_rows
        y = labels(ye, n, f"eval_set[{k}][1]")
        groups = None
        if groups_needed:
            groups = _as_group(
                g, n, f"eval_group[{k}]", qid=q, qid_name=f"eval_qid[{k}]", required=groups_required
            )
        out.append(
            {
                "X": feats,
                "y": y,
                "group": groups,
                "weight": _as_sample_weight(w, n, f"eval_sample_weight[{k}]"),
            }
        )
    return out
