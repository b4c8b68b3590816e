r"""LightGBM adapter: a selrank loss as ``params["objective"]`` or an ``LGBM*`` ``objective=``."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import _array as A
from ..losses import Loss
from ._objective import GBDTObjective, _Binding

__all__ = ["LightGBMObjective", "lightgbm_objective", "import_lightgbm"]

# LightGBM parameter aliases (docs: Parameters.rst) for the two leaf minimums the floor uses
_MIN_HESS_ALIASES = ("min_sum_hessian_in_leaf", "min_sum_hessian_per_leaf", "min_sum_hessian", "min_hessian",
                     "min_child_weight")
_MIN_ROWS_ALIASES = ("min_data_in_leaf", "min_data_per_leaf", "min_data", "min_child_samples", "min_samples_leaf")
_NUM_CLASS_ALIASES = ("num_class", "num_classes")


def import_lightgbm():
    try:
        import lightgbm
    except ImportError:
        raise ImportError("the LightGBM objective requires lightgbm: pip install 'selrank[gbdt]'") from None
    return lightgbm


def _is_dataset(x: Any) -> bool:
    return type(x).__name__ == "Dataset" and type(x).__module__.startswith("lightgbm")


def _param(params: dict | None, aliases: tuple[str, ...]):
    if not params:
        return None
    for key in aliases:
        if key in params and params[key] is not None:
            return params[key]
    return None


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

    def __init__(self, loss: Loss | str = "listwise", **options):
        super().__init__(loss, **options)
        if not _passes_group():
            # LightGBM < 4.7 accepts only 2 or 3 arguments; a group then comes from the options
            params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("y_true", "y_pred", "weight")]
            self.__signature__ = inspect.Signature(params)

    def __call__(self, y_true, y_pred, weight=None, group=None):
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
            if b is None or b.source is not dataset:
                b = self._bind_dataset(dataset, n_classes)
                self._bindings = {k: v for k, v in self._bindings.items() if k == "arrays"}
                self._bindings[id(dataset)] = b
        return self._run(b, preds)

    def _bind_dataset(self, dataset, n_classes=None) -> _Binding:
        params = getattr(dataset, "params", None) or {}
        if n_classes is None:
            nc = _param(params, _NUM_CLASS_ALIASES)
            n_classes = int(nc) if nc is not None and int(nc) > 1 else None
        if self.structure == "multiclass" and n_classes is None:
            raise ValueError(f"the {self.loss.name} loss is multi-class: set params['num_class'] to the number of classes")
        mlh = _param(params, _MIN_HESS_ALIASES)
        mlr = _param(params, _MIN_ROWS_ALIASES)
        b = self.bind(
            _label_of(dataset), group=_group_of(dataset), sample_weight=_weight_of(dataset),
            n_classes=n_classes, min_leaf_hessian=None if mlh is None else float(mlh),
            min_leaf_rows=None if mlr is None else int(mlr),
        )
        b.source = dataset
        return b

    def _run(self, b: _Binding, preds: np.ndarray):
        flat = b.n_classes is not None and preds.ndim == 1
        if flat:  # LightGBM 3: class-major [K * n]
            preds = preds.reshape(b.n_classes, b.n_rows).T
        self._check_start(b, preds)
        g, h = self._evaluate(b, preds)
        if flat:
            return np.ascontiguousarray(g.T).reshape(-1), np.ascontiguousarray(h.T).reshape(-1)
        return g, h

    # -- intercept and prediction ----------------------------------------------------------------------
    def fit_intercept(self, label, *, group=None, sample_weight=None, n_classes: int | None = None):
        """Optimal constant from a :class:`lightgbm.Dataset` or from label arrays; stores ``intercept_``."""
        if _is_dataset(label):
            dataset = label
            params = getattr(dataset, "params", None) or {}
            if n_classes is None:
                nc = _param(params, _NUM_CLASS_ALIASES)
                n_classes = int(nc) if nc is not None and int(nc) > 1 else None
            if self.structure == "multiclass" and n_classes is None:
                n_classes = int(np.max(_label_of(dataset))) + 1
            return super().fit_intercept(_label_of(dataset), group=_group_of(dataset),
                                         sample_weight=_weight_of(dataset), n_classes=n_classes)
        return super().fit_intercept(label, group=group, sample_weight=sample_weight, n_classes=n_classes)

    def set_init_score(self, *datasets):
        """Set ``init_score`` of LightGBM Datasets to the optimal constant; returns the first.

        The intercept is fitted on the first data set (the training set: its labels are
        validated here, before training); validation sets get the same constant, so metrics
        see the same starting point.

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
                raise TypeError(f"set_init_score() takes lightgbm.Dataset objects; got {type(ds).__name__}")
        self.fit_intercept(datasets[0])
        c = np.asarray(self.intercept_)
        for ds in datasets:
            n = _n_rows(ds)
            ds.set_init_score(self.init_score(n, None if c.ndim == 0 else c.size))
        return datasets[0]

    def predict(self, booster, X, **kwargs):
        """Scores of ``booster`` on ``X`` including the intercept (``raw_score`` plus ``intercept_``)."""
        if self.intercept_ is None:
            raise ValueError("the intercept is not known: call fit_intercept / set_init_score before training")
        raw = np.asarray(booster.predict(X, raw_score=True, **kwargs), dtype=np.float64)
        return raw + np.asarray(self.intercept_)


def _constructed(dataset) -> bool:
    return getattr(dataset, "_handle", None) is not None or getattr(dataset, "handle", None) is not None


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


def lightgbm_objective(loss: Loss | str = "listwise", **options) -> LightGBMObjective:
    r"""A selrank loss as a LightGBM custom objective.

    Parameters
    ----------
    loss : Loss or str
        A core loss or its registry name; keyword arguments that are not objective options
        build the loss (``link="sigmoid"``, ``scaling="exp"``, ``target="link"``, ...).
    **options
        ``hessian`` (``"floor"`` | ``"exact"`` | ``"upper"`` | ``"constant"``),
        ``hessian_floor``, ``label_scale``, ``group``, ``min_leaf_hessian``,
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
