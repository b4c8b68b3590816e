"""The shared machinery of the estimators: parameters, loss resolution, label scale, persistence.

Everything that depends on the training library goes through the estimator's backend object
(:mod:`selrank.estimators.backends`): ``self._backend()`` for training, ``self._fitted_backend()``
for a fitted model.
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any, ClassVar

import numpy as np

from .._files import open_write
from .._validation import positive_float
from ..gbdt import DEFAULT_HESSIAN_FLOOR, HESSIAN_POLICIES
from ..losses import Loss, get_loss
from ._backend import Backend, BackendEstimator
from ._codec import _decode, _encode
from ._validation import (
    Features,
    as_features,
    check_parameter_names,
    resolve_label_scale,
)
from .backends import BACKENDS, GBDT_DEFAULTS, get_backend
from .persistence import (
    _FORMAT,
    _FORMAT_VERSION,
    ESTIMATOR_CLASSES,
    document_checksum,
    load,
)

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

#: Target scores of a ranker are ``RANKER_LABEL_SCALE * label`` for labels whose largest value
#: is 2 (chosen on the LETOR validation splits, see docs/estimators.md); the default
#: ``label_scale="auto"`` is ``2 * RANKER_LABEL_SCALE / max|y|``, the same on LETOR grades.
RANKER_LABEL_SCALE = 0.25

#: Loss parameters a ranker uses unless given (chosen on the LETOR validation splits): the
#: listwise composite softmax with a temperature of 4.
RANKER_LOSS_DEFAULTS: dict[str, dict[str, Any]] = {"listwise": {"gamma": 4.0}}


#: The ``fit`` options the estimators take as ``lightgbm.sklearn``'s ``fit`` does, with their
#: defaults (backend "lightgbm" only; ``docs/estimators.md``, "LightGBM's fit conventions").
LIGHTGBM_FIT_OPTIONS: dict[str, Any] = {
    "eval_names": None,
    "eval_metric": None,
    "init_score": None,
    "eval_init_score": None,
    "feature_name": "auto",
    "categorical_feature": "auto",
}


def lightgbm_fit_options(**given: Any) -> dict[str, Any]:
    """The LightGBM ``fit`` options that differ from their defaults (:data:`LIGHTGBM_FIT_OPTIONS`)."""
    out = {}
    for name, value in given.items():
        default = LIGHTGBM_FIT_OPTIONS[name]
        if not (value is default or (isinstance(value, str) and value == default)):
            out[name] = value
    return out


# ----------------------------------------------------------------------------------------------
# the shared estimator
# ----------------------------------------------------------------------------------------------
class _SelectiveEstimator(BaseEstimator, BackendEstimator):
    """Shared machinery: parameters, loss resolution, the label scale, persistence.

    The training library is the backend object of ``backend=`` (:meth:`_backend`); the
    estimator owns its parameters and the label scale: ``label_scale_``, resolved once per
    fit (:meth:`_resolve_label_scale`), is the one factor from labels to target scores that
    the objective, the network's targets, ``predict`` and the saved file use.
    """

    kind: ClassVar[str] = "estimator"
    _default_loss: str | None = "pointwise"

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
        label_scale: float | str = 1.0,
        hessian: str = "floor",
        hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
        backend: str = "lightgbm",
        n_estimators: int | None = None,
        learning_rate: float | None = None,
        early_stopping_rounds: int | None = None,
        eval_at=10,
        random_state: int | None = None,
        verbose: bool = False,
        importance_type: str | None = None,
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
        self.importance_type = importance_type
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
        self._backend()  # a known backend
        if self.hessian not in HESSIAN_POLICIES:
            raise ValueError(f"`hessian` must be one of {HESSIAN_POLICIES}; got {self.hessian!r}")
        if not (self.label_scale == "auto" and self.kind == "ranker"):
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
        self.eval_ks()
        self._check_backend_params()

    def _check_backend_params(self) -> None:
        """Refuse keyword arguments the backend does not know (typos), with the closest valid name."""
        if not self._backend_params:
            return
        names = self._backend().parameter_names(self._backend_params)
        check_parameter_names(
            type(self).__name__, self._backend_params, self._get_param_names(), self.backend, names
        )

    def _backend(self) -> Backend:
        """The backend object of ``backend=`` (training)."""
        return get_backend(self.backend)

    def _fitted_backend(self) -> Backend:
        """The backend that trained the fitted model (``backend=`` may have changed since)."""
        self._check_fitted()
        objective = getattr(self, "objective_", None)
        return get_backend("torch" if objective is None else objective.backend)

    # -- the label scale: labels -> target scores ---------------------------------------------------
    def _resolve_label_scale(self, y) -> float:
        """Set ``label_scale_`` from ``label_scale`` (``"auto"``: from the labels ``y``).

        Called once per fit, before the loss is built; the objective (GBDT), the network's
        targets (torch), ``predict`` (regressor), the class link values (classifier) and the
        saved file read ``label_scale_`` and nothing else.
        """
        self.label_scale_ = resolve_label_scale(self.label_scale, y)
        return self.label_scale_

    def eval_ks(self) -> list[int]:
        """The checked cut-offs of ``eval_at`` (the first drives early stopping); a backend hook."""
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

    def backend_kwargs(self) -> dict[str, Any]:
        """The keyword arguments given for the backend (a copy); a backend hook."""
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
    def rounds_without_eval(self) -> int:
        """Boosting rounds without ``n_estimators`` and without an ``eval_set``; a backend hook."""
        return 300

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
    def parameter_default(self, name: str) -> Any:
        """The default of the constructor parameter ``name`` (a backend hook)."""
        return inspect.signature(type(self)).parameters[name].default

    def network_estimator_class(self) -> type:
        """:class:`~selrank.estimators.NeuralRanker`, which ``backend="torch"`` fits as
        ``model_`` (imported here, on first use: it needs torch); a backend hook."""
        try:
            from .neural import NeuralRanker
        except ImportError as exc:
            raise ImportError(
                f"backend='torch' needs selrank.estimators.NeuralRanker ({exc}): pip install 'selrank[torch]'"
            ) from None
        return NeuralRanker

    def check_fitted(self) -> None:
        """Raise scikit-learn's ``NotFittedError`` unless fitted (a backend hook)."""
        self._check_fitted()

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
        return self._fitted_backend().predict(self, data)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Feature importances as ``importance_type`` asks.

        ``None`` (default): the total gain of the splits on each feature, normalised to sum
        to 1 (zeros if no split). ``"split"`` / ``"gain"``: as LightGBM's
        ``LGBMModel.feature_importances_`` — the number of splits on each feature, or their
        total gain, not normalised (XGBoost: ``"weight"`` / ``"total_gain"``).
        """
        kind = self.importance_type
        if kind not in (None, "split", "gain"):
            raise ValueError(
                f"`importance_type` must be None, 'split' or 'gain' (as LightGBM's); got {kind!r}"
            )
        values = self._fitted_backend().feature_gain(self, kind or "gain")
        if kind is not None:
            return values
        total = values.sum()
        return values / total if total > 0 else values

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
        model = self._fitted_backend().model_fields(self)
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
            **model,  # "model", "intercept_in_model"
        }
        doc["checksum"] = document_checksum(doc)
        with open_write(path, text=True) as fh:  # gzip when the name ends in .gz
            json.dump(doc, fh)

    def _fitted_extra(self) -> tuple[str, ...]:
        """Fitted attributes saved beside the model (besides intercept, rounds, features)."""
        return ("label_scale_",)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read an estimator written by :meth:`save`; it predicts exactly as the saved one."""
        return load(path, expected=cls)

    def restore_fitted(self, doc: dict) -> None:
        """Set the fitted state from a saved file's document (called by
        :func:`selrank.estimators.persistence.load` on an estimator built from the file's
        parameters); the backend then reads its model field."""
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
        if not hasattr(self, "label_scale_"):  # files of regressors / classifiers before 0.3
            self.label_scale_ = positive_float(self.label_scale, "label_scale", type(self).__name__)
        self._backend().restore(self, doc)

    # -- eval sets ----------------------------------------------------------------------------------------
    def _eval_sets(
        self,
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
                feats = self._features(Xe, reset=False, name=f"eval_set[{k}][0]")
            except ValueError as exc:
                raise ValueError(f"eval_set[{k}]: {exc}") from None
            n = feats.n_rows
            y = labels(ye, n, f"eval_set[{k}][1]")
            groups = None
            if groups_needed:
                groups = _as_group(
                    g,
                    n,
                    f"eval_group[{k}]",
                    qid=q,
                    qid_name=f"eval_qid[{k}]",
                    required=groups_required,
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
        backend = get_backend(self.backend) if self.backend in BACKENDS else get_backend("lightgbm")
        tags.input_tags.sparse = backend.sparse
        tags.non_deterministic = not backend.deterministic(self)
        return tags
