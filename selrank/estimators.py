r"""scikit-learn style estimators over the GBDT adapters (and the torch head).

:class:`SelectiveRanker`, :class:`SelectiveRegressor` and :class:`SelectiveClassifier`
train LightGBM (default) or XGBoost with a selective matching loss, starting from the loss's
optimal constant; ``SelectiveRanker(backend="torch")`` trains
:class:`selrank.torch.NeuralRanker` with the same loss. They follow scikit-learn's
conventions: ``__init__`` only stores parameters (backend parameters pass through as extra
keyword arguments, as in LightGBM's own estimators), ``get_params`` / ``set_params`` /
:func:`sklearn.base.clone` work, fitted attributes end in ``_`` and ``fit`` returns ``self``.

Losses are chosen by name or object: ``loss="listwise"`` with ``scaling="exp"``,
``loss="pointwise"`` with ``link="sigmoid"``, ``target="link"``, and any further loss, link or
scaling parameter in ``loss_params`` (``{"alpha": 0.5, "gamma": 2.0}``). Labels become target
scores ``label_scale * label`` for losses whose targets are scores.

Defaults (``docs/estimators.md`` explains how they were chosen on the LETOR validation
splits): the ranker uses the listwise composite softmax with the exponential scaling.

Examples
--------
>>> import numpy as np
>>> from selrank import SelectiveRanker
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 5)); group = np.full(20, 30)
>>> y = np.clip(np.round(X[:, 0] + 0.3 * rng.normal(size=600) + 1), 0, 3)
>>> ranker = SelectiveRanker(n_estimators=20).fit(X, y, group=group)
>>> ranker.predict(X[:3]).shape
(3,)
"""

from __future__ import annotations

import base64
import inspect
import json
import os
import warnings
from typing import Any

import numpy as np

from . import _array as A
from ._groups import Groups, as_groups
from .gbdt._objective import DEFAULT_HESSIAN_FLOOR, HESSIAN_POLICIES
from .losses import LOSSES, Loss, get_loss
from .losses.multiclass import CompositeSoftmax

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("selrank's estimators require scikit-learn: pip install 'selrank[gbdt]'") from exc

__all__ = ["SelectiveRanker", "SelectiveRegressor", "SelectiveClassifier", "BACKENDS", "load"]

BACKENDS = ("lightgbm", "xgboost", "torch")

#: Defaults of the GBDT backends when the estimator's own parameter is left at ``None``.
GBDT_DEFAULTS = {"n_estimators": 1000, "learning_rate": 0.05, "early_stopping_rounds": 50}

#: Target scores of a ranker are ``RANKER_LABEL_SCALE * label`` by default (chosen on the LETOR
#: validation splits, see docs/estimators.md).
RANKER_LABEL_SCALE = 0.25

#: Loss parameters a ranker uses unless given (chosen on the LETOR validation splits): the
#: listwise composite softmax with a temperature of 4.
RANKER_LOSS_DEFAULTS: dict[str, dict[str, Any]] = {"listwise": {"gamma": 4.0}}

_FORMAT = "selrank-estimator"
_FORMAT_VERSION = 1


# ----------------------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------------------
def _as_features(X, name: str = "X"):
    """2-D numeric features; scipy sparse matrices pass through, data frames become arrays."""
    if X is None:
        raise TypeError(f"`{name}` is required; got None")
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse
        if X.ndim != 2:
            raise ValueError(f"`{name}` must be 2-D; got shape {X.shape}")
        return X
    if hasattr(X, "__cuda_array_interface__") and not A.is_numpy(X):
        if len(X.shape) != 2:
            raise ValueError(f"`{name}` must be 2-D (rows, features); got shape {tuple(X.shape)}")
        return X  # CuPy / CUDA tensors go to XGBoost's device path unchanged
    if hasattr(X, "to_numpy") and not A.is_numpy(X):
        X = X.to_numpy()
    if A.is_torch(X):
        X = A.to_numpy(X)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"`{name}` must be a numeric 2-D array; got {type(X).__name__}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (rows, features); got shape {arr.shape}")
    return arr


def _as_labels(y, n_rows: int, name: str = "y") -> np.ndarray:
    if y is None:
        raise TypeError(f"`{name}` is required; got None")
    if hasattr(y, "to_numpy") and not A.is_numpy(y):
        y = y.to_numpy()
    arr = np.asarray(A.to_numpy(y))
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (one label per row); got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"`{name}` has {arr.shape[0]} labels but X has {n_rows} rows")
    return arr


def _as_float_labels(y, n_rows: int, name: str = "y") -> np.ndarray:
    arr = _as_labels(y, n_rows, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"`{name}` must be finite; row {bad} holds {arr[bad]!r}")
    return arr


def _as_group(group, n_rows: int, name: str = "group") -> Groups:
    """Query sizes or per-row ids; ids must keep each query's rows together."""
    if group is None:
        raise ValueError(f"`{name}` is required for ranking: query sizes or one query id per row")
    if isinstance(group, Groups):
        return as_groups(group, n_rows)
    if hasattr(group, "to_numpy") and not A.is_numpy(group):
        group = group.to_numpy()
    g = np.asarray(A.to_numpy(group))
    if g.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (query sizes or per-row query ids); got shape {g.shape}")
    try:
        groups = as_groups(g, n_rows, require_contiguous=True)
    except ValueError as exc:
        raise ValueError(f"{exc} (in `{name}`; sort the rows by query id first)") from None
    return groups


def _as_sample_weight(w, n_rows: int, name: str = "sample_weight"):
    if w is None:
        return None
    if hasattr(w, "to_numpy") and not A.is_numpy(w):
        w = w.to_numpy()
    arr = np.asarray(A.to_numpy(w), dtype=np.float64).reshape(-1)
    if arr.shape != (n_rows,):
        raise ValueError(f"`{name}` must have one weight per row, shape ({n_rows},); got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"`{name}` must be finite; row {bad} holds {arr[bad]!r}")
    if np.any(arr < 0):
        bad = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"`{name}` must be non-negative; row {bad} holds {arr[bad]!r}")
    if not arr.sum() > 0:
        raise ValueError(f"`{name}` must have a positive sum")
    return arr


def _eval_list(value, n: int, name: str) -> list:
    if value is None:
        return [None] * n
    if not isinstance(value, list | tuple):
        raise TypeError(f"`{name}` must be a list with one entry per eval_set item; got {type(value).__name__}")
    if len(value) != n:
        raise ValueError(f"`{name}` has {len(value)} entries for {n} eval_set items")
    return list(value)


# ----------------------------------------------------------------------------------------------
# (de)serialisation of losses, links and scalings for save()/load()
# ----------------------------------------------------------------------------------------------
def _encode(value):
    from .links import LINKS, Link
    from .scalings import SCALINGS, Scaling

    if isinstance(value, Loss):
        kind, registry, name = "loss", LOSSES, value.name
    elif isinstance(value, Link):
        kind, registry, name = "link", LINKS, value.name
    elif isinstance(value, Scaling):
        kind, registry, name = "scaling", SCALINGS, value.name
    elif isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    elif isinstance(value, np.generic):
        return value.item()
    elif value is None or isinstance(value, bool | int | float | str):
        return value
    else:
        raise TypeError(f"cannot save a parameter of type {type(value).__name__} ({value!r}); pickle the estimator instead")
    if name not in registry:
        raise TypeError(f"cannot save the {kind} {value!r}: it is not a registry entry; pickle the estimator instead")
    out = {"__selrank__": kind, "name": name, "params": _encode(value.get_params())}
    if _decode(out) != value:
        raise TypeError(f"cannot save the {kind} {value!r}: it does not rebuild from its parameters; pickle the estimator instead")
    return out


def _decode(value):
    if isinstance(value, dict):
        kind = value.get("__selrank__")
        if kind is None:
            return {k: _decode(v) for k, v in value.items()}
        params = {k: _decode(v) for k, v in value["params"].items()}
        params = {k: tuple(v) if k == "cap" and isinstance(v, list) else v for k, v in params.items()}
        if kind == "loss":
            return get_loss(value["name"], **params)
        if kind == "link":
            from .links import get_link

            return get_link(value["name"], **params)
        from .scalings import get_scaling

        return get_scaling(value["name"], **params)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# ----------------------------------------------------------------------------------------------
# the shared estimator
# ----------------------------------------------------------------------------------------------
class _SelectiveEstimator(BaseEstimator):
    """Shared machinery: loss resolution, backend dispatch, early stopping, persistence."""

    _kind = "estimator"
    _default_loss = "pointwise"

    def __init__(self, loss=None, *, link=None, scaling=None, target: str | None = None, loss_params=None,
                 label_scale: float = 1.0, hessian: str = "floor", hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
                 backend: str = "lightgbm", n_estimators: int | None = None, learning_rate: float | None = None,
                 early_stopping_rounds: int | None = None, eval_at=10, random_state: int | None = None,
                 verbose: bool = False, **backend_params):
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
                setattr(self, key, value)
        return self

    # -- configuration ------------------------------------------------------------------------------
    def _check_config(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"`backend` must be one of {BACKENDS}; got {self.backend!r}")
        if self.hessian not in HESSIAN_POLICIES:
            raise ValueError(f"`hessian` must be one of {HESSIAN_POLICIES}; got {self.hessian!r}")
        A.positive_float(self.label_scale, "label_scale", type(self).__name__)
        A.positive_float(self.hessian_floor, "hessian_floor", type(self).__name__, allow_zero=True)
        for name in ("n_estimators", "early_stopping_rounds"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | np.integer) or v < (1 if name == "n_estimators" else 0)):
                raise ValueError(f"`{name}` must be a positive integer or None; got {v!r}")
        if self.learning_rate is not None:
            A.positive_float(self.learning_rate, "learning_rate", type(self).__name__)
        self._eval_ks()

    def _eval_ks(self) -> list[int]:
        ks = [self.eval_at] if isinstance(self.eval_at, int | np.integer) else list(self.eval_at or [])
        if not ks or any(isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in ks):
            raise ValueError(f"`eval_at` must be a positive int or a non-empty sequence of them; got {self.eval_at!r}")
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
        loss = self._default_loss if loss is None and self.loss is None else (loss if loss is not None else self.loss)
        params = self._loss_arguments()
        if isinstance(loss, Loss):
            if params:
                raise ValueError(f"`loss` is a Loss object; link/scaling/target/loss_params {sorted(params)} must be set on it")
            return loss
        if not isinstance(loss, str):
            raise TypeError(f"`loss` must be a name or a Loss; got {type(loss).__name__}")
        for key, value in self._loss_defaults.get(loss.lower(), {}).items():
            params.setdefault(key, value)
        return get_loss(loss, **params)

    def _backend_kwargs(self) -> dict[str, Any]:
        return dict(self._backend_params)

    # -- training -----------------------------------------------------------------------------------------
    def _fit(self, X, y, *, group: Groups | None, sample_weight, eval_sets: list[dict], loss: Loss,
             n_classes: int | None, metric: str):
        """Train the backend; ``y`` are the labels the objective sees (class indices for classifiers)."""
        self._check_config()
        if self.backend == "torch":
            raise ValueError(f"backend='torch' is available for SelectiveRanker only; got it for {type(self).__name__}")
        from .gbdt import lightgbm_objective, xgboost_objective

        options = {"hessian": self.hessian, "hessian_floor": self.hessian_floor, "label_scale": self.label_scale}
        params = self._backend_kwargs()
        if self.backend == "xgboost":
            params.setdefault("min_child_weight", 1e-3)
            options["min_leaf_hessian"] = float(params["min_child_weight"])
            objective = xgboost_objective(loss, **options)
        else:
            objective = lightgbm_objective(loss, **options)
        # validation of labels, weights, groups and the link's domain, before anything is built
        fit_group = group if loss.structure == "group" else None
        objective.fit_intercept(y, group=fit_group, sample_weight=sample_weight, n_classes=n_classes)
        for k, ev in enumerate(eval_sets):
            self._validate_eval(objective, loss, ev, n_classes, k)
        n_rounds = self.n_estimators if self.n_estimators is not None else GBDT_DEFAULTS["n_estimators"]
        lr = self.learning_rate if self.learning_rate is not None else GBDT_DEFAULTS["learning_rate"]
        esr = self.early_stopping_rounds if self.early_stopping_rounds is not None else GBDT_DEFAULTS["early_stopping_rounds"]
        if not eval_sets:
            esr = 0
            if self.n_estimators is None:
                n_rounds = self._rounds_without_eval()
        self.objective_ = objective
        self.loss_ = loss
        fit = self._fit_lightgbm if self.backend == "lightgbm" else self._fit_xgboost
        fit(objective, X, y, group=group, sample_weight=sample_weight, eval_sets=eval_sets, n_classes=n_classes,
            params=params, n_rounds=n_rounds, lr=lr, esr=esr, metric=metric)
        self.intercept_ = objective.intercept_
        return self

    def _rounds_without_eval(self) -> int:
        return 300

    def _validate_eval(self, objective, loss, ev, n_classes, k):
        try:
            b = objective.bind(ev["y"], group=ev["group"] if loss.structure == "group" else None,
                               sample_weight=ev["weight"], n_classes=n_classes)
        except ValueError as exc:
            raise ValueError(f"eval_set[{k}]: {exc}") from None
        ev["bound"] = b

    def _metric_fn(self, metric: str, ev: dict):
        """``f(scores) -> (name, value, higher_is_better)`` on one eval set (intercept added)."""
        if metric == "ndcg":
            from .metrics import ndcg

            k = self._eval_ks()[0]
            y, sizes = ev["y"], ev["group"].sizes if ev["group"] is not None else None

            def fn(scores):
                return f"ndcg@{k}", float(ndcg(y, scores, sizes, k=k)), True

            return fn
        bound = ev["bound"]
        n_classes = bound.n_classes

        def fn(scores):
            # eval scores start from the intercept too (init_score / base_margin of the eval set)
            s = scores.reshape(-1, n_classes) if n_classes else scores
            return "selrank_loss", float(A.to_numpy(bound.full.loss(s, reduction="mean"))), False

        return fn

    def _fit_lightgbm(self, objective, X, y, *, group, sample_weight, eval_sets, n_classes, params, n_rounds, lr, esr,
                      metric):
        from .gbdt._lightgbm import import_lightgbm

        lgb = import_lightgbm()
        p = {"learning_rate": lr, "verbosity": 1 if self.verbose else -1, "metric": "None"}
        if self.random_state is not None:
            p["seed"] = int(self.random_state)
        if n_classes:
            p["num_class"] = int(n_classes)
        p.update(params)
        p["objective"] = objective
        sizes = None if group is None else group.sizes
        train = lgb.Dataset(X, label=y, group=sizes, weight=sample_weight, params={"verbosity": p["verbosity"]},
                            free_raw_data=False)
        valids = [lgb.Dataset(ev["X"], label=ev["y"], group=None if ev["group"] is None else ev["group"].sizes,
                              weight=ev["weight"], reference=train) for ev in eval_sets]
        objective.set_init_score(train, *valids)
        callbacks, feval = [], None
        history: dict = {}
        if valids:
            fns = [self._metric_fn(metric, ev) for ev in eval_sets]
            names = [f"valid_{k}" for k in range(len(valids))]
            index = {id(v): k for k, v in enumerate(valids)}

            def feval(preds, data):
                name, value, higher = fns[index[id(data)]](np.asarray(preds))
                return name, value, higher

            callbacks.append(lgb.record_evaluation(history))
            if esr:
                callbacks.append(lgb.early_stopping(esr, first_metric_only=True, verbose=bool(self.verbose)))
        booster = lgb.train(p, train, num_boost_round=n_rounds, valid_sets=valids or None,
                            valid_names=names if valids else None, feval=feval, callbacks=callbacks)
        self.booster_ = booster
        self.best_iteration_ = int(booster.best_iteration) if valids and esr and booster.best_iteration > 0 else None
        self.evals_result_ = history
        self.n_estimators_ = booster.current_iteration() if self.best_iteration_ is None else self.best_iteration_

    def _fit_xgboost(self, objective, X, y, *, group, sample_weight, eval_sets, n_classes, params, n_rounds, lr, esr,
                     metric):
        from .gbdt._xgboost import import_xgboost

        xgb = import_xgboost()
        p = {"eta": lr, "verbosity": 1 if self.verbose else 0, "tree_method": "hist", "disable_default_eval_metric": 1}
        if self.random_state is not None:
            p["seed"] = int(self.random_state)
        if n_classes:
            p["num_class"] = int(n_classes)
        p.update(params)
        device = str(p.get("device", "cpu"))
        data = None
        if device.startswith("cuda"):
            try:
                import cupy

                data = cupy.asarray(X)
            except ImportError:
                warnings.warn("device='cuda' without CuPy: trees are built on the GPU but gradients are computed on "
                              "the host (pip install cupy for the device-resident loop)", UserWarning, stacklevel=3)
        group_loss = objective.structure == "group"

        def dmatrix(Xm, ym, groups, weight):
            d = xgb.DMatrix(Xm, label=ym)
            if groups is not None and group_loss:
                d.set_group(groups.sizes)
                if weight is not None:  # XGBoost ranking weights are per query: the mean of its rows
                    d.set_weight(groups.mean_per_group(weight))
            elif weight is not None:
                d.set_weight(weight)
            return d

        dtrain = dmatrix(X, y, group, sample_weight)
        evals = [(dmatrix(ev["X"], ev["y"], ev["group"], ev["weight"]), f"valid_{k}") for k, ev in enumerate(eval_sets)]
        custom_metric = None
        history: dict = {}
        if evals:
            fns = [self._metric_fn(metric, ev) for ev in eval_sets]
            index = {id(d): k for k, (d, _) in enumerate(evals)}

            def custom_metric(preds, d):
                name, value, _ = fns[index[id(d)]](np.asarray(preds))
                return name, value

        higher = metric == "ndcg"
        booster = objective.train(p, dtrain, n_rounds, data=data, evals=evals, custom_metric=custom_metric,
                                  early_stopping_rounds=esr or None, maximize=higher if esr else None,
                                  evals_result=history)
        self.booster_ = booster
        best = getattr(booster, "best_iteration", None) if evals and esr else None
        self.best_iteration_ = None if best is None else int(best) + 1
        self.evals_result_ = history
        self.n_estimators_ = int(booster.num_boosted_rounds()) if self.best_iteration_ is None else self.best_iteration_

    # -- prediction ----------------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "intercept_") and not hasattr(self, "model_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(...) first")

    def decision_function(self, X):
        """Model scores (score space, intercept included)."""
        self._check_fitted()
        if hasattr(self, "model_"):
            return np.asarray(A.to_numpy(self.model_.predict(X)), dtype=np.float64)
        X = _as_features(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; the model was fitted with {self.n_features_in_}")
        c = np.asarray(self.intercept_)
        if self.backend == "lightgbm":
            kw = {} if self.best_iteration_ is None else {"num_iteration": self.best_iteration_}
            raw = np.asarray(self.booster_.predict(X, raw_score=True, **kw), dtype=np.float64)
            return raw + c
        from .gbdt._xgboost import import_xgboost

        xgb = import_xgboost()
        d = xgb.DMatrix(X)
        d.set_base_margin(np.tile(c, (X.shape[0], 1)) if c.ndim else np.full(X.shape[0], float(c)))
        kw = {} if self.best_iteration_ is None else {"iteration_range": (0, self.best_iteration_)}
        return np.asarray(self.booster_.predict(d, output_margin=True, **kw), dtype=np.float64)

    # -- persistence ----------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted estimator to a JSON file (parameters, intercept, the booster's own model text).

        Losses, links and scalings from the registries are stored by name and parameters; a
        user-defined callable link cannot be, and raises ``TypeError`` (pickle works instead).
        """
        self._check_fitted()
        if self.backend == "torch":
            raise ValueError("save() covers the GBDT backends; pickle a torch-backed estimator (or use NeuralRanker's own format)")
        if self.backend == "lightgbm":
            model = self.booster_.model_to_string()
        else:
            model = base64.b64encode(bytes(self.booster_.save_raw("ubj"))).decode("ascii")
        fitted = {k: getattr(self, k) for k in self._fitted_extra() if hasattr(self, k)}
        doc = {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "estimator": type(self).__name__,
            "params": _encode(self.get_params(deep=False)),
            "loss": _encode(self.loss_),
            "intercept": np.asarray(self.intercept_).tolist(),
            "best_iteration": self.best_iteration_,
            "n_features_in": int(self.n_features_in_),
            "fitted": _encode({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in fitted.items()}),
            "model": model,
        }
        with open(path, "w", encoding="utf-8") as fh:
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
            setattr(self, k, np.asarray(v) if isinstance(v, list) else v)
        if self.backend == "lightgbm":
            from .gbdt._lightgbm import import_lightgbm

            self.booster_ = import_lightgbm().Booster(model_str=doc["model"])
        else:
            from .gbdt._xgboost import import_xgboost

            booster = import_xgboost().Booster()
            booster.load_model(bytearray(base64.b64decode(doc["model"])))
            self.booster_ = booster


def load(path: str | os.PathLike, *, expected: type | None = None):
    """Read an estimator saved with ``save()``.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from selrank import SelectiveRegressor
    >>> from selrank.estimators import load
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(100, 3)); y = X[:, 0]
    >>> model = SelectiveRegressor(n_estimators=5).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json"); model.save(path)
    >>> bool(np.array_equal(load(path).predict(X), model.predict(X)))
    True
    """
    with open(path, encoding="utf-8") as fh:
        try:
            doc = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{os.fspath(path)!r} is not a saved selrank estimator (not JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a saved selrank estimator (format {_FORMAT!r} expected)")
    if doc.get("version") != _FORMAT_VERSION:
        raise ValueError(f"{os.fspath(path)!r} has format version {doc.get('version')!r}; this selrank reads {_FORMAT_VERSION}")
    classes = {c.__name__: c for c in (SelectiveRanker, SelectiveRegressor, SelectiveClassifier)}
    cls = classes.get(doc.get("estimator"))
    if cls is None:
        raise ValueError(f"{os.fspath(path)!r} holds an unknown estimator {doc.get('estimator')!r}")
    if expected is not None and cls is not expected:
        raise ValueError(f"{os.fspath(path)!r} holds a {cls.__name__}, not a {expected.__name__}")
    est = cls(**_decode(doc["params"]))
    est._restore(doc)
    return est


# ----------------------------------------------------------------------------------------------
# the three estimators
# ----------------------------------------------------------------------------------------------
class SelectiveRanker(_SelectiveEstimator):
    r"""Learning to rank with a selective matching loss (LightGBM, XGBoost or a torch network).

    Parameters
    ----------
    loss : str or Loss, default "listwise"
        ``"listwise"`` (composite softmax over each query), ``"pairwise"``, ``"pointwise"``,
        or a :class:`~selrank.losses.Loss`.
    link, scaling : str or object, optional
        The link (pointwise, pairwise) or scaling (listwise) by name or object; ``None``
        keeps the loss's default (``scaling="exp"``, ``Sinh(cap=3)``, ``link="exp"``).
    target : {"score", "link"}, optional
        Space of the targets (default: the loss's, ``"score"``).
    loss_params : dict, optional
        Further loss / link / scaling parameters (``alpha``, ``beta``, ``gamma``, ``cap``,
        ``pairs``, ...). Unless given, the listwise loss uses ``gamma=4``
        (:data:`RANKER_LOSS_DEFAULTS`).
    label_scale : float, default 0.25
        Target scores are ``label_scale * label``.
    hessian : {"floor", "exact", "upper", "constant"}
        Hessian policy (:class:`selrank.gbdt.GBDTObjective`).
    hessian_floor : float
        Floor as a fraction of the loss's reference Hessian.
    backend : {"lightgbm", "xgboost", "torch"}
    n_estimators : int, optional
        Boosting rounds (default 1000 with an ``eval_set`` and early stopping, else 300).
    learning_rate : float, optional
        Default 0.05 for the GBDT backends; ``backend="torch"`` uses NeuralRanker's default.
    early_stopping_rounds : int, optional
        Rounds without improvement of NDCG@``eval_at`` on the first ``eval_set`` before
        stopping (default 50; 0 disables).
    eval_at : int or sequence of int
        Cut-off ``k`` of NDCG@k for early stopping (the first one).
    random_state : int, optional
    verbose : bool
    **backend_params
        Passed to the backend unchanged: LightGBM / XGBoost parameters (``num_leaves``,
        ``min_data_in_leaf``, ``max_depth``, ``device="cuda"``, ...) or NeuralRanker's
        (``hidden_layers``, ``epochs``, ``batch_queries``, ``device``, ...).

    Attributes
    ----------
    booster_ : lightgbm.Booster or xgboost.Booster
    model_ : selrank.torch.NeuralRanker
        (``backend="torch"``)
    loss_ : Loss
    objective_ : LightGBMObjective or XGBoostObjective
    intercept_ : float
        The optimal constant training started from (included in predictions).
    best_iteration_ : int or None
        Rounds kept by early stopping.
    evals_result_ : dict
        Metric history on the eval sets.
    n_features_in_ : int
    """

    _kind = "ranker"
    _default_loss = "listwise"
    _loss_defaults = RANKER_LOSS_DEFAULTS

    def __init__(self, loss="listwise", *, link=None, scaling=None, target=None, loss_params=None,
                 label_scale: float = RANKER_LABEL_SCALE, hessian: str = "floor", hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
                 backend: str = "lightgbm", n_estimators=None, learning_rate=None, early_stopping_rounds=None,
                 eval_at=10, random_state=None, verbose: bool = False, **backend_params):
        super().__init__(loss, link=link, scaling=scaling, target=target, loss_params=loss_params,
                         label_scale=label_scale, hessian=hessian, hessian_floor=hessian_floor, backend=backend,
                         n_estimators=n_estimators, learning_rate=learning_rate,
                         early_stopping_rounds=early_stopping_rounds, eval_at=eval_at, random_state=random_state,
                         verbose=verbose, **backend_params)

    def fit(self, X, y, *, group, sample_weight=None, eval_set=None, eval_group=None, eval_sample_weight=None):
        """Fit on rows ``X`` with graded labels ``y`` partitioned into queries by ``group``.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
        y : array-like of shape (n_rows,)
            Relevance labels (or teacher scores).
        group : array-like
            Query sizes (summing to ``n_rows``) or one query id per row (each query's rows
            contiguous).
        sample_weight : array-like of shape (n_rows,), optional
            Per-row weights; a query's loss is weighted by the mean of its rows' weights.
        eval_set : list of (X, y), optional
            Validation data; the first drives early stopping on NDCG@``eval_at``.
        eval_group : list of group arrays
            One per ``eval_set`` item.
        eval_sample_weight : list, optional

        Returns
        -------
        self
        """
        self._check_config()
        X = _as_features(X)
        y = _as_float_labels(y, X.shape[0])
        groups = _as_group(group, X.shape[0])
        w = _as_sample_weight(sample_weight, X.shape[0])
        eval_sets = self._eval_sets(eval_set, eval_group, eval_sample_weight, X.shape[1])
        self.n_features_in_ = int(X.shape[1])
        if self.backend == "torch":
            return self._fit_torch(X, y, groups, w, eval_sets)
        loss = self._build_loss()
        return self._fit(X, y, group=groups, sample_weight=w, eval_sets=eval_sets, loss=loss, n_classes=None,
                         metric="ndcg")

    def _eval_sets(self, eval_set, eval_group, eval_sample_weight, n_features: int) -> list[dict]:
        if eval_set is None:
            if eval_group is not None:
                raise ValueError("`eval_group` was given without `eval_set`")
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
            eval_set = [eval_set]
        if not isinstance(eval_set, list | tuple):
            raise TypeError(f"`eval_set` must be a list of (X, y) pairs; got {type(eval_set).__name__}")
        groups = _eval_list(eval_group, len(eval_set), "eval_group")
        weights = _eval_list(eval_sample_weight, len(eval_set), "eval_sample_weight")
        out = []
        for k, (item, g, w) in enumerate(zip(eval_set, groups, weights)):
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise TypeError(f"`eval_set[{k}]` must be an (X, y) pair")
            Xe = _as_features(item[0], f"eval_set[{k}][0]")
            if Xe.shape[1] != n_features:
                raise ValueError(f"`eval_set[{k}]` has {Xe.shape[1]} features; X has {n_features}")
            ye = _as_float_labels(item[1], Xe.shape[0], f"eval_set[{k}][1]")
            ge = _as_group(g, Xe.shape[0], f"eval_group[{k}]")
            we = _as_sample_weight(w, Xe.shape[0], f"eval_sample_weight[{k}]")
            out.append({"X": Xe, "y": ye, "group": ge, "weight": we})
        return out

    def _fit_torch(self, X, y, groups: Groups, w, eval_sets):
        try:
            from .torch import NeuralRanker
        except ImportError as exc:
            raise ImportError(f"backend='torch' needs selrank.torch.NeuralRanker ({exc}): pip install 'selrank[torch]'") from None
        if self.n_estimators is not None:
            raise ValueError("`n_estimators` applies to the GBDT backends; give `epochs=` for backend='torch'")
        accepted = inspect.signature(NeuralRanker).parameters
        kwargs = {"loss": self._build_loss()}
        optional = {"learning_rate": self.learning_rate, "early_stopping_rounds": self.early_stopping_rounds,
                    "eval_at": self.eval_at, "random_state": self.random_state, "verbose": self.verbose}
        for name, value in optional.items():
            if value is not None and name in accepted:
                kwargs[name] = value
        for name in ("hessian", "hessian_floor"):
            if getattr(self, name) != inspect.signature(type(self)).parameters[name].default:
                raise ValueError(f"`{name}` applies to the GBDT backends, not to backend='torch'")
        kwargs.update(self._backend_params)
        # target scores are label_scale * label on every backend
        scale = 1.0 if "label_scale" in accepted else float(self.label_scale)
        if "label_scale" in accepted:
            kwargs.setdefault("label_scale", self.label_scale)
        model = NeuralRanker(**kwargs)
        fit_kw: dict[str, Any] = {"group": groups.sizes, "sample_weight": w}
        if eval_sets:
            fit_kw["eval_set"] = [(ev["X"], ev["y"] * scale) for ev in eval_sets]
            fit_kw["eval_group"] = [ev["group"].sizes for ev in eval_sets]
        model.fit(X, y * scale, **fit_kw)
        self.model_ = model
        self.loss_ = kwargs["loss"]
        return self

    def predict(self, X):
        """Ranking scores (higher ranks first), intercept included."""
        return self.decision_function(X)

    def score(self, X, y, *, group, sample_weight=None):
        """Mean NDCG@k (the first ``eval_at``) of the predictions; exponential gain, ties averaged."""
        from .metrics import ndcg

        X = _as_features(X)
        y = _as_float_labels(y, X.shape[0])
        groups = _as_group(group, X.shape[0])
        return float(ndcg(y, self.predict(X), groups.sizes, k=self._eval_ks()[0]))


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


class SelectiveClassifier(ClassifierMixin, _SelectiveEstimator):
    r"""Classification with a selective matching loss.

    ``loss=None`` picks the logistic case for two classes (pointwise, ``link="sigmoid"``,
    ``target="link"``: LightGBM's ``cross_entropy``) and the softmax for more
    (``composite_softmax`` with ``scaling="constant"``, ``target="link"``). Selective choices:
    a shifted sigmoid or ``exp`` link for two classes, ``scaling="exp"`` / ``"sinh"`` /
    ``"relu"`` (with ``target="score"``) or ``loss="decomposed"`` for more (MATH.md §3).
    Parameters are those of :class:`SelectiveRanker`; early stopping uses the loss.

    Class probabilities follow from properness: the model's link value estimates the mean
    link value of the targets, :math:`h(\hat s) \approx \sum_k P(k)\,h(s_k)`, which is solved
    for :math:`P` (for the logistic and softmax defaults this is the usual sigmoid / softmax).

    Attributes
    ----------
    classes_ : ndarray
    n_classes_ : int
    """

    _kind = "classifier"
    _default_loss = None

    def __init__(self, loss=None, *, link=None, scaling=None, target=None, loss_params=None,
                 label_scale: float = 1.0, hessian: str = "floor", hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
                 backend: str = "lightgbm", n_estimators=None, learning_rate=None, early_stopping_rounds=None,
                 eval_at=10, random_state=None, verbose: bool = False, **backend_params):
        super().__init__(loss, link=link, scaling=scaling, target=target, loss_params=loss_params,
                         label_scale=label_scale, hessian=hessian, hessian_floor=hessian_floor, backend=backend,
                         n_estimators=n_estimators, learning_rate=learning_rate,
                         early_stopping_rounds=early_stopping_rounds, eval_at=eval_at, random_state=random_state,
                         verbose=verbose, **backend_params)

    def _classifier_loss(self, n_classes: int) -> Loss:
        if self.loss is None:
            params = self._loss_arguments()
            if n_classes == 2:
                params.setdefault("link", "sigmoid")
                if "target" not in params:  # 0/1 labels are link values when the link's range is [0, 1]
                    from .links import get_link

                    link_params = {k: v for k, v in params.items() if k != "link"}
                    lo, hi = get_link(params["link"], **link_params).range
                    params["target"] = "link" if lo >= 0.0 and hi <= 1.0 else "score"
                return get_loss("pointwise", **params)
            params.setdefault("scaling", "constant")
            params.setdefault("target", "link" if params["scaling"] == "constant" else "score")
            return get_loss("composite_softmax", **params)
        loss = self._build_loss()
        if loss.structure == "group":
            raise ValueError(f"SelectiveClassifier takes pointwise or multi-class losses; {loss.name!r} is a group loss")
        if n_classes > 2 and loss.structure != "multiclass":
            raise ValueError(f"{n_classes} classes need a multi-class loss ('composite_softmax', 'decomposed'); got {loss.name!r}")
        return loss

    def fit(self, X, y, *, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Fit class labels ``y`` (any hashable values). Returns ``self``."""
        self._check_config()
        X = _as_features(X)
        labels = _as_labels(y, X.shape[0])
        classes, yi = np.unique(labels, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"SelectiveClassifier needs at least 2 classes in `y`; got {classes.tolist()}")
        self.classes_ = classes
        self.n_classes_ = int(classes.size)
        loss = self._classifier_loss(self.n_classes_)
        n_classes = self.n_classes_ if loss.structure == "multiclass" else None
        w = _as_sample_weight(sample_weight, X.shape[0])
        eval_sets = []
        if eval_set is not None:
            if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
                eval_set = [eval_set]
            ws = _eval_list(eval_sample_weight, len(eval_set), "eval_sample_weight")
            for k, ((Xe, ye), we) in enumerate(zip(eval_set, ws)):
                Xe = _as_features(Xe, f"eval_set[{k}][0]")
                le = _as_labels(ye, Xe.shape[0], f"eval_set[{k}][1]")
                unknown = ~np.isin(le, classes)
                if np.any(unknown):
                    raise ValueError(f"`eval_set[{k}]` holds labels not seen in training: {np.unique(le[unknown]).tolist()[:5]}")
                eval_sets.append({"X": Xe, "y": np.searchsorted(classes, le).astype(np.float64), "group": None,
                                  "weight": _as_sample_weight(we, Xe.shape[0])})
        self.n_features_in_ = int(X.shape[1])
        return self._fit(X, yi.astype(np.float64), group=None, sample_weight=w, eval_sets=eval_sets, loss=loss,
                         n_classes=n_classes, metric="loss")

    def _fitted_extra(self) -> tuple[str, ...]:
        return ("classes_", "n_classes_")

    def _class_link_values(self) -> np.ndarray:
        """Link value of each class's target: rows ``k`` of the matrix solved for probabilities."""
        loss, K = self.loss_, self.n_classes_
        if loss.structure == "pointwise":
            if loss.target == "link":
                return np.array([[0.0], [1.0]])
            s = np.array([0.0, 1.0]) * self.label_scale
            return np.asarray(A.to_numpy(loss.link.h(s)), dtype=np.float64).reshape(2, 1)
        eye = np.eye(K)
        if loss.target == "link":
            value = loss.scaling.alpha if isinstance(loss, CompositeSoftmax) else 1.0
            return eye * value
        return self._link_values(eye * self.label_scale)

    def _link_values(self, scores: np.ndarray) -> np.ndarray:
        loss = self.loss_
        if isinstance(loss, CompositeSoftmax):
            return np.asarray(A.to_numpy(loss.link(scores)), dtype=np.float64)
        return np.asarray(A.to_numpy(loss.link.h(scores)), dtype=np.float64)

    def predict_proba(self, X):
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

    def predict(self, X):
        """The most probable class."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

