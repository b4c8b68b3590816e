r"""LightGBM adapter: a selrank loss as ``params["objective"]`` or an ``LGBM*`` ``objective=``."""

from __future__ import annotations

import inspect
import json
import os
import sys
import uuid
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _array as A
from .._array import Array
from .._numba import planned_calls
from ..losses import Loss
from ._lightgbm_params import PARAMETER_ALIASES
from ._objective import GBDTObjective, _Binding, _intercept_value, distinct_constants

if TYPE_CHECKING:
    import lightgbm as lgb

__all__ = ["LightGBMObjective", "lightgbm_objective", "import_lightgbm"]

# LightGBM parameter aliases (the local copy of LightGBM's table, _lightgbm_params.py) for the
# two leaf minimums the floor uses and the class count
_MIN_HESS_ALIASES = PARAMETER_ALIASES["min_sum_hessian_in_leaf"]
_MIN_ROWS_ALIASES = PARAMETER_ALIASES["min_data_in_leaf"]
_NUM_CLASS_ALIASES = PARAMETER_ALIASES["num_class"]
_NUM_THREADS_ALIASES = PARAMETER_ALIASES["num_threads"]
_MAX_BINDINGS = 16
#: Trailer line of :meth:`LightGBMObjective.save_model` (LightGBM's parser skips it).
_INTERCEPT_LINE = "selrank_intercept:"
#: Second trailer line (estimator file format 2): the trees already hold the intercept. Model text
#: without it (older files) is folded when loaded.
_IN_MODEL_LINE = "selrank_intercept_in_model:"


def import_lightgbm() -> ModuleType:
    try:
        import lightgbm
    except ImportError:
        raise ImportError(
            "the LightGBM objective requires lightgbm: pip install 'selrank[gbdt]'"
        ) from None
    return lightgbm


def _is_dataset(x: Any) -> bool:
    lgb = sys.modules.get("lightgbm")
    if lgb is not None and isinstance(x, lgb.Dataset):  # subclasses too
        return True
    return type(x).__name__ == "Dataset" and type(x).__module__.startswith("lightgbm")


def _param(params: dict | None, aliases: tuple[str, ...]) -> Any:
    if not params:
        return None
    for key in aliases:
        if key in params and params[key] is not None:
            return params[key]
    return None


def _training_threads(booster, kwargs: dict | None = None) -> dict:
    """``kwargs`` for :meth:`lightgbm.Booster.predict` with the thread count ``booster`` was
    trained with, unless ``kwargs`` names one.

    LightGBM keeps one thread count for the whole process, set by every call that takes
    parameters (LightGBM issue #4705). A prediction with OpenMP's default while another thread
    trains with ``num_threads=1`` lets that training run more threads than it sized its
    buffers for, and the process crashes. selrank's own predictions therefore use the
    booster's training count, as ``LGBMModel.predict`` passes its ``n_jobs``.
    """
    kwargs = dict(kwargs or {})
    if _param(kwargs, _NUM_THREADS_ALIASES) is not None:
        return kwargs
    n = _param(getattr(booster, "params", None), _NUM_THREADS_ALIASES)
    # (a model file from a larger machine keeps LightGBM's default here)
    if n is not None and 0 < int(n) <= (os.cpu_count() or 1):
        kwargs["num_threads"] = int(n)
    return kwargs


def _passes_group() -> bool:
    """LightGBM >= 4.7's scikit-learn classes call a 4-argument objective with the group."""
    lgb = import_lightgbm()
    parts = lgb.__version__.split(".")[:2]
    try:
        return (int(parts[0]), int(parts[1])) >= (4, 7)
    except ValueError:
        return True


class LightGBMObjective(GBDTObjective):
    r"""A selrank loss as a LightGBM custom objective (see :func:`lightgbm_objective`).

    The object is called in two ways:

    * ``obj(preds, train_set)`` by :func:`lightgbm.train` (``params["objective"] = obj``):
      label, group, weight and the leaf minimums come from the :class:`lightgbm.Dataset`;
    * ``obj(y_true, y_pred, weight, group)`` by ``LGBMRanker`` / ``LGBMRegressor`` /
      ``LGBMClassifier`` (``objective=obj``). LightGBM < 4.7 passes no group to a callable
      objective: give it to the objective instead, ``lightgbm_objective(loss, group=sizes)``.

    Multi-class predictions arrive as ``[n, K]`` (LightGBM >= 4) or flat class-major
    ``[K * n]`` (LightGBM 3) and gradients are returned in the same layout.
    """

    backend = "lightgbm"
    _start_hint = "obj.set_init_score(train_set, *valid_sets) before lightgbm.train"

    def __init__(self, loss: Loss | str = "listwise", **options: Any):
        super().__init__(loss, **options)
        self._starts_key()
        if not _passes_group():
            # LightGBM < 4.7 accepts only 2 or 3 arguments; a group then comes from the options
            params = [
                inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                for n in ("y_true", "y_pred", "weight")
            ]
            self.__signature__ = inspect.Signature(params)

    def __call__(
        self, y_true: Array, y_pred: Array, weight: Array | None = None, group: Array | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian; ``(preds, train_set)`` or ``(y_true, y_pred[, weight[, group]])``."""
        if _is_dataset(y_pred):
            return self._from_dataset(y_true, y_pred)
        preds = np.asarray(y_pred, dtype=np.float64)
        n_classes = self._n_classes(preds, np.size(y_true))
        b = self._binding_for_arrays(y_true, group, weight, n_classes)
        return self._run(b, preds)

    # -- internals -----------------------------------------------------------------------------------
    @staticmethod
    def _n_classes(preds: np.ndarray, n_labels: int) -> int | None:
        if preds.ndim == 2:
            return int(preds.shape[1]) if preds.shape[1] > 1 else None
        if n_labels and preds.size != n_labels and preds.size % n_labels == 0:
            return preds.size // n_labels  # LightGBM 3 flat class-major layout
        return None

    def _from_dataset(self, preds, dataset):
        preds = np.asarray(preds, dtype=np.float64)
        label = dataset.get_label()
        n_classes = self._n_classes(preds, np.size(label))
        with self._lock:
            b = self._bindings.get(id(dataset))
            if b is not None and b.source is dataset and b.label is not None:
                # bound by fit_intercept before LightGBM built the Dataset: kept if LightGBM
                # holds the same labels and weights (it stores them as float32)
                if not _same_fields(b, label, dataset):
                    b = None
                else:
                    _require_checked_labels(dataset)
                    b.label = b.weight = None
            if b is None or b.source is not dataset:
                b = self._bind_dataset(dataset, n_classes)
                self._keep_binding(dataset, b)
        return self._run(b, preds)

    def _keep_binding(self, dataset, b: _Binding) -> None:
        """Cache ``b`` for ``dataset``, keeping a few recent data sets (``lgb.cv`` trains its
        folds round-robin)."""
        keep = [k for k in self._bindings if k != "arrays"][-(_MAX_BINDINGS - 1) :]
        self._bindings = {k: v for k, v in self._bindings.items() if k == "arrays" or k in keep}
        self._bindings[id(dataset)] = b

    def _bind_dataset(self, dataset, n_classes=None, *, checked: bool = True) -> _Binding:
        """Bind a Dataset's labels, groups and weights with its parameters' leaf minimums;
        ``checked``: refuse labels selrank never validated (else the caller validates)."""
        params = getattr(dataset, "params", None) or {}
        if self.structure == "group":
            _check_subset_keeps_queries(dataset)
        if n_classes is None:
            nc = _param(params, _NUM_CLASS_ALIASES)
            n_classes = int(nc) if nc is not None and int(nc) > 1 else None
        if self.structure == "multiclass" and n_classes is None:
            raise ValueError(
                f"the {self.loss.name} loss is multi-class: set params['num_class'] to the number of classes"
            )
        mlh = _param(params, _MIN_HESS_ALIASES)
        mlr = _param(params, _MIN_ROWS_ALIASES)
        b = self.bind(
            _label_of(dataset),
            group=_group_of(dataset),
            sample_weight=_weight_of(dataset),
            n_classes=n_classes,
            min_leaf_hessian=None if mlh is None else float(mlh),
            min_leaf_rows=None if mlr is None else int(mlr),
        )
        if checked:
            _require_checked_labels(dataset)  # after the checks the built Dataset still allows
        b.source = dataset
        return b

    def _run(self, b: _Binding, preds: np.ndarray):
        k = b.n_classes
        flat = k is not None and preds.ndim == 1
        if flat and k is not None:  # LightGBM 3: class-major [K * n]
            preds = preds.reshape(k, b.n_rows).T
        self._check_start(b, preds)
        g, h = self._evaluate(b, preds)
        if flat:
            return np.ascontiguousarray(g.T).reshape(-1), np.ascontiguousarray(h.T).reshape(-1)
        return g, h

    # -- intercept and prediction ----------------------------------------------------------------------
    def _check_start(self, b: _Binding, y_pred) -> None:
        """Also record the constant a training actually started from (the intercept its trees
        were grown on): 0 on LightGBM's scikit-learn route without ``init_score``."""
        if not b.calls and A.is_numpy(y_pred) and y_pred.size:
            flat = y_pred.reshape(y_pred.shape[0], -1)
            if np.all(flat == flat[:1]):
                starts = _TRAINING_STARTS.setdefault(self._starts_key(), [])
                c = np.asarray(flat[0], dtype=np.float64).copy()
                if not any(c.shape == d.shape and np.array_equal(c, d) for d in starts):
                    starts.append(c)  # distinct constants only
        if not self.__dict__.get("_start_chosen", False):
            super()._check_start(b, y_pred)

    def _starts_key(self) -> str:
        # LightGBM's scikit-learn API trains a deep copy of the objective: the copies share
        # this key, so the objective the user holds sees where training started
        key = self.__dict__.get("_starts_token")
        if key is None:
            key = self.__dict__["_starts_token"] = uuid.uuid4().hex
        return key

    def booster_intercept(
        self, booster: lgb.Booster, intercept: float | Array | None = None
    ) -> float | np.ndarray:
        """The intercept ``booster`` was trained from (a float, or one value per class).

        Stored in the booster by :meth:`train`; for a booster LightGBM trained directly
        (``lightgbm.train`` or ``LGBMRegressor(objective=obj)``) the constant its training
        started from, as this objective saw it (0 without an ``init_score``), so predictions
        match the trees whenever ``fit_intercept`` is called; a ``ValueError`` when it saw
        trainings start from different constants.
        """
        if intercept is not None or self._read_intercept(booster) is not None:
            return super().booster_intercept(booster, intercept)
        starts = distinct_constants(_TRAINING_STARTS.get(self._starts_key(), []))
        if len(starts) == 1:
            return _intercept_value(starts[0])
        if len(starts) > 1:
            shown = ", ".join(str(np.round(d, 6).tolist()) for d in starts[:4])
            raise ValueError(
                f"this booster carries no intercept (it was not trained with obj.train) and the objective saw "
                f"trainings start from {len(starts)} different constants ({shown}): which one this booster "
                "started from is unknown. Train with obj.train(...), which stores the intercept in the booster, "
                "or pass intercept="
            )
        return super().booster_intercept(booster, intercept)

    def fit_intercept(
        self,
        label: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        n_classes: int | None = None,
    ) -> float | np.ndarray:
        """Optimal constant from a :class:`lightgbm.Dataset` or from label arrays; stores ``intercept_``."""
        if _is_dataset(label):
            dataset = label
            params = getattr(dataset, "params", None) or {}
            if n_classes is None:
                nc = _param(params, _NUM_CLASS_ALIASES)
                n_classes = int(nc) if nc is not None and int(nc) > 1 else None
            if self.structure == "multiclass" and n_classes is None:
                n_classes = int(np.max(_label_of(dataset))) + 1
            self.hessian_scale_ = None
            b = self._bind_dataset(dataset, n_classes, checked=False)
            label = _label_of(dataset)
            out = self._take_intercept(b, label, n_classes)
            _mark_checked(dataset)
            # training on this Dataset reuses the binding if LightGBM keeps these values
            b.label, b.weight = label, _weight_of(dataset)
            with self._lock:
                self._keep_binding(dataset, b)
            return out
        return super().fit_intercept(
            label, group=group, qid=qid, sample_weight=sample_weight, n_classes=n_classes
        )

    def set_init_score(self, *datasets: lgb.Dataset) -> lgb.Dataset:
        """Set ``init_score`` of LightGBM Datasets to the optimal constant; returns the first.

        The intercept is fitted on the first data set (the training set: its labels are
        validated here, before training); validation sets get the same constant, so metrics
        see the same starting point.

        :func:`lightgbm.train` keeps ``init_score`` outside the booster it returns: call
        :meth:`~GBDTObjective.fold_intercept` on that booster before saving or serving it
        (:meth:`train` does both steps and folds the intercept itself).

        Examples
        --------
        >>> import numpy as np, lightgbm as lgb
        >>> from selrank.gbdt import lightgbm_objective
        >>> obj = lightgbm_objective("pointwise", link="exp")
        >>> train = obj.set_init_score(lgb.Dataset(np.zeros((2, 1)), label=[0.0, 2.0]))
        >>> np.round(train.get_init_score(), 6).tolist()
        [1.433781, 1.433781]
        """
        if not datasets:
            raise TypeError("set_init_score() needs at least one lightgbm.Dataset")
        for ds in datasets:
            if not _is_dataset(ds):
                raise TypeError(
                    f"set_init_score() takes lightgbm.Dataset objects; got {type(ds).__name__}"
                )
        self.fit_intercept(datasets[0])
        c = np.asarray(self.intercept_)
        for ds in datasets:
            n = _n_rows(ds)
            ds.set_init_score(self.init_score(n, None if c.ndim == 0 else c.size))
        return datasets[0]

    def predict(
        self,
        booster: lgb.Booster,
        X: Array,
        *,
        intercept: float | Array | None = None,
        n_iterations: int | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Scores of ``booster`` on ``X`` including the intercept it was trained from.

        The raw score of a booster from :meth:`train` (whose first trees hold the intercept:
        :meth:`~GBDTObjective.intercept_in_model`); for other boosters the raw score plus
        :meth:`~GBDTObjective.booster_intercept`. ``intercept=`` replaces the booster's
        intercept (as a base margin does in XGBoost). From the first ``n_iterations`` rounds (all: ``None``); further keyword
        arguments go to :meth:`lightgbm.Booster.predict`. Without ``num_threads`` the
        prediction uses the thread count the booster was trained with (as
        ``LGBMModel.predict`` uses its ``n_jobs``): LightGBM's thread count is one setting of
        the whole process, and training in one thread while another predicts with a
        different count can crash it (docs/reliability.md, "Thread safety").
        """
        c = self.booster_offset(booster, intercept)
        if n_iterations is not None:
            kwargs["num_iteration"] = int(n_iterations)
        kwargs = _training_threads(booster, kwargs)
        raw = np.asarray(booster.predict(X, raw_score=True, **kwargs), dtype=np.float64)
        return raw if np.ndim(c) == 0 and c == 0.0 else raw + np.asarray(c)

    def _fold(self, booster, c: np.ndarray) -> bool:
        """Add the intercept to every leaf of the first tree of each class (checked on a probe row)."""
        return _add_to_first_trees(booster, c)

    # -- training and persistence -----------------------------------------------------------------
    def train(
        self,
        params: dict | None,
        train_set: lgb.Dataset,
        num_boost_round: int = 100,
        *,
        valid_sets: Sequence[lgb.Dataset] | None = None,
        valid_names: Sequence[str] | None = None,
        feval: Any = None,
        init_model: str | os.PathLike | lgb.Booster | None = None,
        callbacks: Sequence[Callable[..., Any]] | None = None,
        keep_training_booster: bool = False,
        init_scores: Sequence[Array | None] | None = None,
    ) -> lgb.Booster:
        """Train with this objective from the optimal constant; the booster keeps its intercept.

        :func:`lightgbm.train` with ``params["objective"] = self``, after
        :meth:`set_init_score` on ``train_set`` and ``valid_sets``. The intercept is stored in
        the returned booster (:meth:`predict`, :meth:`save_model`), so one objective can train
        several boosters. When LightGBM keeps no feature to split on (all constant or all
        missing, or fewer than ``2 * min_data_in_leaf`` rows) a custom objective would crash
        LightGBM; a constant model (the intercept) is returned instead, with a warning that
        names the cause, as LightGBM's built-in objectives do.

        The intercept is also folded into the model (the leaf values of the first tree of each
        class, unless ``init_model`` continues a model or ``keep_training_booster=True``), so
        plain ``lightgbm.Booster(model_file=...)`` predicts :meth:`predict`'s scores.

        Thread safety: each call trains with a private copy of the objective, so one objective
        may train in several threads at once; ``intercept_`` then holds the intercept of the
        call that finished last (each booster keeps its own).

        ``init_scores`` (LightGBM's ``init_score`` of ``train_set``, then one per valid set
        or None): training starts from these scores instead of the intercept; the booster's
        intercept is then 0 and its predictions exclude them, as LightGBM's do.

        Returns
        -------
        lightgbm.Booster
        """
        p = dict(params or {})
        if p.get("objective", self) is not self:
            raise ValueError(
                f"params['objective'] is {p['objective']!r}; LightGBMObjective.train trains with itself"
            )
        p.pop("objective", None)
        twin = self._private_copy()
        # the rounds it plans: the kernel policy may compile the loss's kernel at once
        with planned_calls(int(num_boost_round)):
            booster = twin._train(
                p,
                train_set,
                num_boost_round,
                valid_sets=valid_sets,
                valid_names=valid_names,
                feval=feval,
                init_model=init_model,
                callbacks=callbacks,
                keep_training_booster=keep_training_booster,
                init_scores=init_scores,
            )
        self._adopt(twin)
        return booster

    def _train(
        self,
        p: dict,
        train_set,
        num_boost_round: int,
        *,
        valid_sets,
        valid_names,
        feval,
        init_model,
        callbacks,
        keep_training_booster: bool,
        init_scores=None,
    ):
        lgb = import_lightgbm()
        valid_sets = list(valid_sets or [])
        others = [v for v in valid_sets if v is not train_set]
        self.set_init_score(train_set, *others)  # validates the labels, fits the intercept
        intercept = self.intercept_
        if init_scores is not None:  # the user's start scores replace the intercept
            scores = list(init_scores) + [None] * (1 + len(others) - len(init_scores))
            for ds, start in zip([train_set, *others], scores):
                ds.set_init_score(start)
            intercept = np.zeros_like(np.asarray(intercept, dtype=np.float64))
        # a chosen start draws no advice to start from the intercept (kept in the state:
        # LightGBM may copy the objective, which resets the warnings already given)
        self._start_chosen = init_scores is not None
        # construct with the training parameters (as lightgbm.train would) to see which features
        # remain (continued training sets a predictor on the unconstructed data set)
        if init_model is None:
            _construct_with(train_set, p)
        if init_model is None and _usable_features(train_set) == 0:
            _warn(
                _no_feature_message(train_set, train_set.params or {})
                + "; the model is the constant intercept"
            )
            booster = _constant_booster(lgb, train_set, p)
        else:
            p["objective"] = self
            self._share_bindings = True  # lightgbm.train's copy of self reuses the binding
            try:
                booster = lgb.train(
                    p,
                    train_set,
                    num_boost_round,
                    valid_sets=valid_sets or None,
                    valid_names=valid_names,
                    feval=feval,
                    init_model=init_model,
                    callbacks=callbacks,
                    keep_training_booster=keep_training_booster,
                )
            finally:
                self._share_bindings = False
        self.adopt_booster(
            booster, intercept, fold=init_model is None and not keep_training_booster
        )
        return booster

    @staticmethod
    def n_rounds(booster: lgb.Booster) -> int:
        """Boosting rounds in ``booster``."""
        return int(booster.current_iteration())

    @staticmethod
    def parameter_names(params: dict | None = None) -> frozenset[str]:
        """Every LightGBM parameter name and alias (a copy of LightGBM's own table,
        ``selrank/gbdt/_lightgbm_params.py``; no private LightGBM name is read)."""
        return _LIGHTGBM_PARAMETER_NAMES

    @staticmethod
    def feature_gain(
        booster: lgb.Booster, n_features: int, importance_type: str = "gain"
    ) -> np.ndarray:
        """Total split gain (``"gain"``) or number of splits (``"split"``) of each feature."""
        return np.asarray(
            booster.feature_importance(importance_type=importance_type), dtype=np.float64
        )[:n_features]

    def save_model(self, booster: lgb.Booster, **kwargs: Any) -> str:
        """LightGBM's model text with the booster's intercept (lines LightGBM's parser skips).

        The intercept is folded into the trees first (:meth:`~GBDTObjective.fold_intercept`),
        so ``lightgbm.Booster(model_str=...)`` predicts the same scores as :meth:`predict`;
        :meth:`load_model` restores the intercept as metadata. Keyword arguments go to
        :meth:`lightgbm.Booster.model_to_string`.
        """
        c = self.booster_intercept(booster)
        self.fold_intercept(booster, c)
        text = booster.model_to_string(**kwargs)
        line = f"{_INTERCEPT_LINE}{json.dumps(np.asarray(c).tolist())}\n"
        if self.intercept_in_model(booster):
            line += f"{_IN_MODEL_LINE}true\n"
        cut = text.rfind("pandas_categorical:")  # LightGBM reads that one from the last line
        return text[:cut] + line + text[cut:] if cut >= 0 else text + line

    def load_model(self, model_str: str) -> lgb.Booster:
        """A booster from :meth:`save_model`'s text, with its intercept.

        Text written before the intercept went into the trees (no
        ``selrank_intercept_in_model`` line) is folded now: the booster scores as before.
        """
        lgb = import_lightgbm()
        booster = lgb.Booster(model_str=model_str)
        intercept, in_model = None, False
        for line in model_str[model_str.rfind("end of trees") :].splitlines():
            if line.startswith(_INTERCEPT_LINE):
                intercept = _checked_intercept(json.loads(line[len(_INTERCEPT_LINE) :]))
            elif line.startswith(_IN_MODEL_LINE):
                in_model = line[len(_IN_MODEL_LINE) :].strip() == "true"
        if intercept is not None:
            self.write_intercept(booster, intercept)
            if in_model:
                self._mark_in_model(booster)
            else:
                self.fold_intercept(booster, intercept)
        return booster


def _checked_intercept(value):
    """A stored intercept: finite numbers (a float or one per class), else ``ValueError``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"the stored intercept must be finite numbers; got {value!r}")
    return value


def _check_subset_keeps_queries(dataset) -> None:
    """Refuse a row subset (``Dataset.subset``, as :func:`lightgbm.cv` makes) that cuts queries.

    With a custom objective ``lightgbm.cv`` splits rows, not queries: a query's documents land
    on both sides and the held-out scores are optimistic (MQ2008: NDCG@10 0.94 instead of 0.77).
    """
    used = getattr(dataset, "used_indices", None)
    parent = getattr(dataset, "reference", None)
    if used is None or parent is None:
        return
    sizes = _group_of(parent)
    if sizes is None or np.size(sizes) == 0:
        return
    sizes = np.asarray(sizes, dtype=np.int64)
    counts = np.bincount(
        np.repeat(np.arange(sizes.size), sizes)[np.asarray(used, dtype=np.int64)],
        minlength=sizes.size,
    )
    cut = np.flatnonzero((counts > 0) & (counts < sizes))
    if cut.size:
        q = int(cut[0])
        raise ValueError(
            f"this training set is a row subset that cuts {cut.size} queries (query {q} keeps {int(counts[q])} of "
            f"its {int(sizes[q])} rows): lightgbm.cv splits rows, not queries, with a custom objective. Use "
            "selrank.gbdt.cv(params, train_set, ...) or lightgbm.cv(..., folds=GroupKFold(n)), whose folds keep "
            "whole queries"
        )


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


_LIGHTGBM_PARAMETER_NAMES = frozenset(
    name for aliases in PARAMETER_ALIASES.values() for name in aliases
)


def _construct_with(dataset, params: dict) -> None:
    """Construct ``dataset`` with the training parameters, as :func:`lightgbm.train` would.

    Public API only: an unconstructed data set takes the parameters through its public
    ``params`` attribute (the one ``lightgbm.Dataset(params=...)`` sets); one constructed
    already keeps its own, and :func:`lightgbm.train` checks them against ``params`` as usual.
    """
    lgb = import_lightgbm()
    try:
        dataset.num_data()  # raises before construction
        return
    except lgb.basic.LightGBMError:
        pass
    given = {k: v for k, v in params.items() if not callable(v)}
    dataset.params = {**(dataset.params or {}), **given, "objective": "none"}
    dataset.construct()


def _usable_features(dataset) -> int:
    """Features LightGBM kept after binning (constant, all-missing and pre-filtered ones are dropped)."""
    return sum(dataset.feature_num_bin(i) > 0 for i in range(dataset.num_feature()))


def _no_feature_message(dataset, params: dict) -> str:
    mdl = _param(params, _MIN_ROWS_ALIASES)
    mdl = 20 if mdl is None else int(mdl)
    n = dataset.num_data()
    return (
        f"LightGBM kept none of the {dataset.num_feature()} features to split on: each is constant or missing, "
        f"or the data has fewer than 2 x min_data_in_leaf = {2 * mdl} rows ({n}); lower min_data_in_leaf "
        "(and min_data_in_bin), or set feature_pre_filter=False"
    )


def _constant_booster(lgb, train_set, params: dict):
    """A booster of the data set's features whose raw output is 0 (the model is its intercept)."""
    k = _param(params, _NUM_CLASS_ALIASES)
    k = int(k) if k is not None and int(k) > 1 else 1
    n_feat = train_set.num_feature()
    X = np.zeros((max(2, k), n_feat))
    p: dict[str, Any] = {"verbosity": -1, "num_leaves": 2, "boost_from_average": False}
    p.update({"objective": "multiclass", "num_class": k} if k > 1 else {"objective": "regression"})
    threads = _param(params, _NUM_THREADS_ALIASES)  # (LightGBM's thread count is process-wide)
    if threads is not None:
        p["num_threads"] = threads
    data = lgb.Dataset(
        X, label=np.arange(X.shape[0]) % k, feature_name=train_set.get_feature_name(), params=p
    )
    booster = lgb.train(p, data, 1)
    for tree in range(booster.num_trees()):
        booster.set_leaf_output(tree, 0, 0.0)
    return booster


def _add_to_first_trees(booster, c) -> bool:
    """Add ``c`` (one value per class) to every leaf of the first tree of each class, in place;
    checked on a probe row, and undone (returns False) where the leaf values are not the
    output (linear trees) or the booster has no trees."""
    k = int(booster.num_model_per_iteration())
    if booster.num_trees() < k:
        return False
    c = np.broadcast_to(c, (k,)).astype(np.float64)
    probe = np.zeros((1, booster.num_feature()))
    threads = _training_threads(booster)  # (LightGBM's thread count is process-wide)
    before = np.asarray(booster.predict(probe, raw_score=True, **threads), dtype=np.float64)
    before = before.reshape(-1)
    info = booster.dump_model(num_iteration=1)["tree_info"]
    old = {}
    for t in range(k):
        for leaf in range(int(info[t]["num_leaves"])):
            old[t, leaf] = booster.get_leaf_output(t, leaf)
            booster.set_leaf_output(t, leaf, old[t, leaf] + float(c[t]))
    after = np.asarray(booster.predict(probe, raw_score=True, **threads), dtype=np.float64)
    after = after.reshape(-1)
    if np.allclose(after - before, c, rtol=1e-9, atol=1e-9):
        return True
    for (t, leaf), v in old.items():  # e.g. linear trees: leaf values are not the output
        booster.set_leaf_output(t, leaf, v)
    return False


def booster_with_intercept(booster: lgb.Booster, intercept: float | Array) -> lgb.Booster:
    """A copy of ``booster`` whose raw scores include ``intercept`` (added to the leaves of the
    first tree of each class, as :meth:`LightGBMObjective.fold_intercept` does), for continued
    training: LightGBM continues from an init model's raw scores, which otherwise lack the
    intercept selrank adds at prediction."""
    lgb = import_lightgbm()
    c = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
    text = booster.model_to_string()
    if "is_linear=1" in text:
        raise ValueError("continued training from a linear-tree booster is not supported")
    copy = lgb.Booster(model_str=text)
    if np.any(c != 0.0) and not _add_to_first_trees(copy, c):
        raise ValueError(
            "the init model has no trees to carry its intercept; train at least one round"
        )
    return copy


_CHECKED = "_selrank_labels_checked"
#: constant starting scores of trainings, per objective (and its copies); see _check_start
_TRAINING_STARTS: dict[str, list] = {}


def _mark_checked(dataset) -> None:
    """Record that selrank validated this Dataset's labels (and whether before LightGBM built it)."""
    try:
        setattr(dataset, _CHECKED, "raw" if not _constructed(dataset) else "constructed")
    except AttributeError:  # pragma: no cover - a Dataset-like object without attributes
        pass


def _require_checked_labels(dataset) -> None:
    """Refuse a training Dataset whose raw labels selrank never saw.

    LightGBM replaces NaN labels with 0 (and infinite ones with +-1e300) when it builds a
    Dataset, before a custom objective is called: a plain ``lightgbm.train(params, train)``
    would train on the replaced values silently. :meth:`LightGBMObjective.set_init_score`
    and :meth:`LightGBMObjective.train` check the labels before LightGBM builds the Dataset.
    """
    source, seen = dataset, set()
    while source is not None and id(source) not in seen:  # lgb.cv folds are subsets
        if getattr(source, _CHECKED, None) is not None:
            return
        seen.add(id(source))
        source = (
            getattr(source, "reference", None)
            if getattr(source, "used_indices", None) is not None
            else None
        )
    raise ValueError(
        "this lightgbm.Dataset reached the selrank objective without its labels checked: LightGBM "
        "replaces NaN labels with 0 (and infinite ones with +-1e300) when it builds the Dataset, "
        "so the objective cannot see them. Train with obj.train(params, train_set, ...): it "
        "checks the labels, starts from the optimal constant and puts that intercept inside the "
        "booster, so its saved file serves the right scores. With lightgbm.train, call "
        "obj.set_init_score(train_set, *valid_sets) before it (checks the labels, sets the "
        "starting constant) and obj.fold_intercept(booster) after it, before saving or serving "
        "the booster: lightgbm.train keeps init_score outside the model, and its file alone "
        "would serve scores without the intercept"
    )


def _constructed(dataset) -> bool:
    return (
        getattr(dataset, "_handle", None) is not None
        or getattr(dataset, "handle", None) is not None
    )


def _field(dataset, name: str):
    """A field of a Dataset: from LightGBM when constructed, else what the user passed."""
    if _constructed(dataset):
        return getattr(dataset, f"get_{name}")()
    return getattr(dataset, name, None)


def _as_numpy(x, dtype=None):
    if x is None:
        return None
    x = x.to_numpy() if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray) else x
    return np.asarray(A.to_numpy(x) if not isinstance(x, list | tuple) else x, dtype=dtype)


def _same_fields(b: _Binding, label: np.ndarray, dataset) -> bool:
    """Whether ``dataset`` (now built) holds the labels and weights ``b`` was bound from."""
    if not np.array_equal(np.asarray(label, dtype=np.float64), b.label):
        return False
    w = _weight_of(dataset)
    if (w is None) != (b.weight is None):
        return False
    return w is None or np.array_equal(w, b.weight)


def _label_of(dataset) -> np.ndarray:
    label = _field(dataset, "label")
    if label is None:
        raise ValueError("the lightgbm.Dataset has no label")
    return _as_numpy(label, np.float64)


def _group_of(dataset):
    return _as_numpy(_field(dataset, "group"))


def _none_if_empty(w):
    w = _as_numpy(w, np.float64)
    return None if w is None or w.size == 0 else w


def _weight_of(dataset):
    return _none_if_empty(_field(dataset, "weight"))


def _n_rows(dataset) -> int:
    if _constructed(dataset):
        return int(dataset.num_data())
    label = dataset.label
    if label is not None:
        return int(np.size(_as_numpy(label)))
    return int(dataset.data.shape[0])


def lightgbm_objective(loss: Loss | str = "listwise", **options: Any) -> LightGBMObjective:
    r"""A selrank loss as a LightGBM custom objective.

    Parameters
    ----------
    loss : Loss or str
        A core loss or its registry name; keyword arguments that are not objective options
        build the loss (``link="sigmoid"``, ``scaling="exp"``, ``target="link"``, ...).
    **options
        ``hessian`` (``"floor"`` | ``"exact"`` | ``"upper"`` | ``"constant"``),
        ``hessian_floor``, ``label_scale``, ``group`` (query sizes) or ``qid``, ``min_leaf_hessian``,
        ``min_leaf_rows``, ``n_jobs``, ``block_rows`` — see :class:`~selrank.gbdt.GBDTObjective`.

    Returns
    -------
    LightGBMObjective
        Use it as ``params["objective"]`` in :func:`lightgbm.train` (it reads label, group,
        weight from the Dataset) or as ``objective=`` of ``LGBMRanker`` / ``LGBMRegressor``
        / ``LGBMClassifier``. Call :meth:`~LightGBMObjective.set_init_score` on the data sets
        first so training starts from the optimal constant, and
        :meth:`~LightGBMObjective.predict` to get scores that include it.

    Examples
    --------
    >>> import numpy as np, lightgbm as lgb
    >>> from selrank.gbdt import lightgbm_objective
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0)
    >>> obj = lightgbm_objective("listwise", scaling="exp")
    >>> train = obj.set_init_score(lgb.Dataset(X, y, group=[50, 50, 100]))
    >>> booster = lgb.train({"objective": obj, "verbose": -1}, train, num_boost_round=5)
    >>> obj.predict(booster, X).shape
    (200,)
    """
    return LightGBMObjective(loss, **options)
