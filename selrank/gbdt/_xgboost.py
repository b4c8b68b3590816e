r"""XGBoost adapter: a selrank loss as ``xgboost.train(obj=...)`` and a device-resident training loop."""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _array as A
from .._array import Array
from .._numba import planned_calls
from ..losses import Loss
from ._objective import GBDTObjective, _Binding

if TYPE_CHECKING:
    import xgboost as xgb

__all__ = ["XGBoostObjective", "xgboost_objective", "import_xgboost"]

#: Booster attribute holding the intercept (saved with the model by XGBoost itself).
_INTERCEPT_ATTR = "selrank_intercept"
#: Booster attribute (estimator file format 2): ``base_score`` holds the intercept. Models without it
#: (older files) are folded when loaded.
_IN_MODEL_ATTR = "selrank_intercept_in_model"


def import_xgboost() -> ModuleType:
    try:
        import xgboost
    except ImportError:
        raise ImportError(
            "the XGBoost objective requires xgboost: pip install 'selrank[gbdt]'"
        ) from None
    return xgboost


def _is_dmatrix(x: Any) -> bool:
    return (
        type(x).__module__.startswith("xgboost")
        and hasattr(x, "get_uint_info")
        and hasattr(x, "num_row")
    )


def _dmatrix_info(dtrain):
    """Label, per-row or per-query weight and group sizes of a DMatrix (``None`` when absent)."""
    label = np.asarray(dtrain.get_label(), dtype=np.float64)
    if label.size == 0:
        raise ValueError("the DMatrix has no label")
    weight = np.asarray(dtrain.get_weight(), dtype=np.float64)
    ptr = np.asarray(dtrain.get_uint_info("group_ptr"), dtype=np.int64)
    group = np.diff(ptr) if ptr.size > 1 else None
    return label, (weight if weight.size else None), group


class XGBoostObjective(GBDTObjective):
    r"""A selrank loss as an XGBoost custom objective (see :func:`xgboost_objective`).

    Called as ``obj(preds, dtrain)`` by :func:`xgboost.train`: label, weights (per row, or
    per query for ranking data as XGBoost stores them) and groups (``group_ptr``, from
    ``qid`` or ``set_group``) come from the DMatrix. Called as
    ``obj(y_true, y_pred, sample_weight=...)`` by ``XGBRegressor`` / ``XGBClassifier``
    (which pass no groups: pointwise and multi-class losses only, or give ``group=`` to
    the objective). ``XGBRanker`` refuses callable objectives (XGBoost 3.2: "custom
    objective function not supported by XGBRanker"): use :func:`xgboost.train`,
    :meth:`train` or ``selrank.SelectiveRanker(backend="xgboost")``.

    Multi-class predictions are ``[n, K]`` (flat row-major ``[n * K]`` in old releases);
    multi-target labels ``[n, K]`` (score targets, e.g. teacher logits) are accepted.
    Gradients come back in the namespace of the predictions: NumPy from
    :func:`xgboost.train`; CuPy in the device loop of :meth:`train`.
    """

    backend = "xgboost"
    _default_min_leaf_hessian = 1.0  # XGBoost's default min_child_weight
    _start_hint = "obj.set_base_margin(dtrain, *dvalid) before xgboost.train"

    def __init__(self, loss: Loss | str = "listwise", **options: Any):
        super().__init__(loss, **options)

    def __call__(
        self, y_true: Array, y_pred: Array, sample_weight: Array | None = None
    ) -> tuple[Array, Array]:
        """Gradient and Hessian; ``(preds, dtrain)`` or ``(y_true, y_pred, sample_weight=None)``."""
        if _is_dmatrix(y_pred):
            return self._from_dmatrix(y_true, y_pred)
        preds = (
            y_pred if not isinstance(y_pred, list | tuple) else np.asarray(y_pred, dtype=np.float64)
        )
        label = np.asarray(A.to_numpy(y_true), dtype=np.float64)
        preds, n_classes = self._layout(preds, label.size)
        label = self._label_layout(label, preds)
        b = self._binding_for_arrays(label, None, sample_weight, n_classes)
        return self._run(b, preds)

    # -- internals ---------------------------------------------------------------------------------
    @staticmethod
    def _layout(preds, n_labels: int):
        shape = tuple(preds.shape)
        if len(shape) == 2:
            return preds, (int(shape[1]) if shape[1] > 1 else None)
        if len(shape) == 1 and n_labels and shape[0] != n_labels and shape[0] % n_labels == 0:
            k = shape[0] // n_labels  # old XGBoost: flat row-major [n * K]
            return preds.reshape(n_labels, k), k
        return preds, None

    def _label_layout(self, label: np.ndarray, preds) -> np.ndarray:
        """Multi-target labels arrive flat ``[n * K]``: reshape to ``[n, K]`` score targets."""
        if preds.ndim == 2 and label.size == preds.shape[0] * preds.shape[1] and preds.shape[1] > 1:
            return label.reshape(preds.shape)
        return label

    def _from_dmatrix(self, preds, dtrain):
        preds = (
            preds if not isinstance(preds, list | tuple) else np.asarray(preds, dtype=np.float64)
        )
        n = int(dtrain.num_row())
        preds, n_classes = self._layout(preds, n)
        with self._lock:
            b = self._bindings.get(id(dtrain))
            if b is None or b.source is not dtrain:
                b = self._bind_dmatrix(dtrain, n_classes)
                self._bindings = {k: v for k, v in self._bindings.items() if k == "arrays"}
                self._bindings[id(dtrain)] = b
        return self._run(b, preds)

    def _bind_dmatrix(self, dtrain, n_classes) -> _Binding:
        label, weight, group = _dmatrix_info(dtrain)
        if n_classes is not None and label.size == dtrain.num_row() * n_classes:
            label = label.reshape(-1, n_classes)
        if self.structure == "multiclass" and n_classes is None:
            raise ValueError(
                f"the {self.loss.name} loss is multi-class: set params['num_class'] to the number of classes"
            )
        if group is None and self.group is None and self.qid is None and self.structure == "group":
            raise ValueError(
                f"the {self.loss.name} loss needs query groups: build the DMatrix with qid=... (sorted) or "
                "call dtrain.set_group(sizes)"
            )
        b = self.bind(label, group=group, sample_weight=weight, n_classes=n_classes)
        b.source = dtrain
        return b

    def _run(self, b: _Binding, preds):
        xp = A.get_namespace(preds)
        preds = A.as_float_array(preds, xp, name="y_pred")
        if A.is_numpy(preds) and preds.dtype != np.float64:
            preds = preds.astype(np.float64)
        self._check_start(b, preds)
        return self._evaluate(b, preds)

    # -- intercept and prediction ---------------------------------------------------------------------
    def fit_intercept(
        self,
        label: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        n_classes: int | None = None,
    ) -> float | np.ndarray:
        """Optimal constant from a DMatrix or from label arrays; stores ``intercept_``."""
        if _is_dmatrix(label):
            y, w, g = _dmatrix_info(label)
            n = int(label.num_row())
            if y.size != n:  # multi-target
                n_classes = y.size // n
                y = y.reshape(n, n_classes)
            elif self.structure == "multiclass" and n_classes is None:
                n_classes = int(np.max(y)) + 1
            if g is not None:
                group, qid = g, None
            return super().fit_intercept(
                y, group=group, qid=qid, sample_weight=w, n_classes=n_classes
            )
        return super().fit_intercept(
            label, group=group, qid=qid, sample_weight=sample_weight, n_classes=n_classes
        )

    def set_base_margin(self, *dmatrices: xgb.DMatrix) -> xgb.DMatrix:
        """Set ``base_margin`` of DMatrices to the optimal constant; returns the first.

        Fitted on the first (training) DMatrix, whose labels are validated here;
        evaluation DMatrices get the same constant.

        Examples
        --------
        >>> import numpy as np, xgboost as xgb
        >>> from selrank.gbdt import xgboost_objective
        >>> obj = xgboost_objective("pointwise", link="exp")
        >>> d = obj.set_base_margin(xgb.DMatrix(np.zeros((2, 1)), label=[0.0, 2.0]))
        >>> np.round(d.get_base_margin(), 6).tolist()
        [1.433781, 1.433781]
        """
        if not dmatrices:
            raise TypeError("set_base_margin() needs at least one xgboost.DMatrix")
        for d in dmatrices:
            if not _is_dmatrix(d):
                raise TypeError(
                    f"set_base_margin() takes xgboost.DMatrix objects; got {type(d).__name__}"
                )
        self.fit_intercept(dmatrices[0])
        c = np.asarray(self.intercept_)
        for d in dmatrices:
            d.set_base_margin(self.init_score(int(d.num_row()), None if c.ndim == 0 else c.size))
        return dmatrices[0]

    def predict(
        self,
        booster: xgb.Booster,
        X: Array,
        *,
        iteration_range: tuple[int, int] | None = None,
        intercept: float | Array | None = None,
        n_iterations: int | None = None,
    ) -> Array:
        """Scores on ``X`` (an array, CuPy array, DataFrame or DMatrix) including the intercept.

        Boosters from :meth:`train` hold the intercept as their ``base_score``: they are
        predicted as plain XGBoost predicts them. For other boosters (``base_score`` 0.5 or an
        estimate) the intercept (:meth:`~GBDTObjective.booster_intercept`) is passed as the base
        margin instead, so the scores are ``intercept + trees``. ``intercept=`` forces that
        base margin.
        """
        xgb = import_xgboost()
        if n_iterations is not None:
            iteration_range = (0, int(n_iterations))
        kw: dict[str, Any] = {} if iteration_range is None else {"iteration_range": iteration_range}
        if intercept is None and self.intercept_in_model(booster):
            c = None  # base_score holds it: what plain XGBoost predicts
        else:
            c = np.asarray(self.booster_intercept(booster, intercept))
        if isinstance(X, xgb.DMatrix):
            n = int(X.num_row())
            X.set_base_margin(
                _margin(np.asarray(self.booster_intercept(booster)), n)
                if c is None
                else _margin(c, n)
            )
            return np.asarray(booster.predict(X, output_margin=True, **kw), dtype=np.float64)
        margin = None if c is None else _margin(c, int(X.shape[0]))
        if margin is not None and not A.is_numpy(X) and hasattr(X, "__cuda_array_interface__"):
            margin = _device_like(margin, X)
        if hasattr(X, "dtypes") and not A.is_numpy(X):  # a DataFrame: categories need a DMatrix
            d = xgb.DMatrix(X, base_margin=margin, enable_categorical=True)
            return np.asarray(booster.predict(d, output_margin=True, **kw), dtype=np.float64)
        if margin is not None:
            kw["base_margin"] = margin
        out = booster.inplace_predict(X, predict_type="margin", **kw)
        return out if not A.is_numpy(out) else np.asarray(out, dtype=np.float64)

    def intercept_in_model(self, booster: xgb.Booster) -> bool:
        if super().intercept_in_model(booster):
            return True
        return hasattr(booster, "attr") and booster.attr(_IN_MODEL_ATTR) == "1"

    def _mark_in_model(self, booster) -> None:
        booster.set_attr(**{_IN_MODEL_ATTR: "1"})

    def _fold(self, booster, c: np.ndarray) -> bool:
        """Set ``base_score`` to the intercept (checked on a probe row against a base margin)."""
        xgb = import_xgboost()
        config = json.loads(booster.save_config())
        old = config["learner"]["learner_model_param"].get("base_score")
        value = repr(float(c)) if c.ndim == 0 else "[" + ",".join(map(repr, c.tolist())) + "]"
        try:
            booster.set_param({"base_score": value})
            n_feat = int(booster.num_features())
            probe = xgb.DMatrix(
                np.zeros((1, n_feat), dtype=np.float32),
                feature_names=booster.feature_names,
                feature_types=booster.feature_types,
                enable_categorical=True,
            )
            plain = np.asarray(booster.predict(probe, output_margin=True), dtype=np.float64)
            probe.set_base_margin(_margin(c, 1))
            ref = np.asarray(booster.predict(probe, output_margin=True), dtype=np.float64)
            if plain.shape == ref.shape and np.allclose(plain, ref, rtol=1e-6, atol=1e-6):
                return True
        except Exception:  # XGBoostError, or a probe XGBoost cannot build
            pass
        if old is not None:
            booster.set_param({"base_score": old})
        return False

    def _read_intercept(self, booster):
        value = booster.attr(_INTERCEPT_ATTR) if hasattr(booster, "attr") else None
        if value is None:
            return super()._read_intercept(booster)
        from ._objective import _intercept_value

        return _intercept_value(json.loads(value))

    def write_intercept(self, booster: xgb.Booster, intercept: Any) -> None:
        """Record ``intercept`` as a booster attribute (saved with the model)."""
        booster.set_attr(
            **{_INTERCEPT_ATTR: json.dumps(np.asarray(intercept, dtype=np.float64).tolist())}
        )

    @staticmethod
    def n_rounds(booster: xgb.Booster) -> int:
        """Boosting rounds in ``booster``."""
        return int(booster.num_boosted_rounds())

    @staticmethod
    def parameter_names(params: dict | None = None) -> frozenset[str]:
        """XGBoost parameter names for ``params["booster"]`` (see :func:`_parameter_names`)."""
        return _parameter_names(str((params or {}).get("booster", "gbtree")))

    @staticmethod
    def feature_gain(
        booster: xgb.Booster, n_features: int, importance_type: str = "gain"
    ) -> np.ndarray:
        """Total split gain (``"gain"``) or number of splits (``"split"``) of each feature."""
        kind = {"gain": "total_gain", "split": "weight"}[importance_type]
        scores = booster.get_score(importance_type=kind)
        names = booster.feature_names or [f"f{i}" for i in range(n_features)]
        # tree scores are floats (only gblinear's "weight" gives lists)
        gains = cast("dict[str, float]", scores)
        return np.array([float(gains.get(name, 0.0)) for name in names[:n_features]])

    def save_model(self, booster: xgb.Booster, raw_format: str = "ubj") -> bytes:
        """The booster as XGBoost saves it (``save_raw``), its intercept as ``base_score``.

        The intercept is folded in first (:meth:`~GBDTObjective.fold_intercept`), so plain
        ``xgboost.Booster(model_file=...)`` predicts :meth:`predict`'s margins; it is also
        kept as the booster attribute ``selrank_intercept``.
        """
        if booster.attr(_INTERCEPT_ATTR) is None:
            self.write_intercept(booster, self.booster_intercept(booster))
        self.fold_intercept(booster)
        return bytes(booster.save_raw(raw_format))

    def load_model(self, raw: bytes | bytearray | str | os.PathLike) -> Any:
        """A booster from :meth:`save_model`'s bytes (or a file name), with its intercept.

        Models written before the intercept went into ``base_score`` are folded now.
        """
        xgb = import_xgboost()
        booster = xgb.Booster()
        booster.load_model(bytearray(raw) if isinstance(raw, bytes | bytearray) else raw)
        if booster.attr(_INTERCEPT_ATTR) is not None and not self.intercept_in_model(booster):
            self.fold_intercept(booster)
        return booster

    # -- training -----------------------------------------------------------------------------------------
    def train(
        self,
        params: dict,
        dtrain: xgb.DMatrix,
        num_boost_round: int = 10,
        *,
        data: Any = None,
        evals: Sequence[tuple[xgb.DMatrix, str]] = (),
        custom_metric: Callable[..., Any] | None = None,
        early_stopping_rounds: int | None = None,
        maximize: bool | None = None,
        verbose_eval: bool | int = False,
        callbacks: Sequence[Any] | None = None,
        evals_result: dict | None = None,
    ) -> xgb.Booster:
        """Train with this objective, starting from the optimal constant.

        Without ``data`` this is :func:`xgboost.train` with ``obj=self`` (base margins set on
        ``dtrain`` and the ``evals`` first). With ``data`` — the feature matrix of ``dtrain``
        in the same row order, as a CuPy array (or anything with ``__cuda_array_interface__``,
        e.g. a CUDA torch tensor) for ``device="cuda"`` — the loop keeps the training margins
        on the device: each round adds the new trees' output
        (``inplace_predict(data, iteration_range=(i, i + 1))``), computes gradients and
        Hessians there with the core loss, and hands them to ``Booster.boost`` without a host
        round trip. A NumPy ``data`` runs the same loop on the host (that is how it is tested
        without a GPU). Evaluation and early stopping use XGBoost's callbacks as
        :func:`xgboost.train` does.

        The intercept is stored in the booster (attribute ``selrank_intercept``, saved with
        the model), so :meth:`predict` uses the right one for each booster.

        The intercept is also set as the booster's ``base_score``, so plain XGBoost predicts
        :meth:`predict`'s margins. Each call trains with a private copy of the objective, so
        one objective may train in several threads at once.

        Returns
        -------
        xgboost.Booster
        """
        twin = self._private_copy()
        # the rounds it plans: the kernel policy may compile the loss's kernel at once
        with planned_calls(int(num_boost_round)):
            bst = twin._train(
                params,
                dtrain,
                num_boost_round,
                data=data,
                evals=evals,
                custom_metric=custom_metric,
                early_stopping_rounds=early_stopping_rounds,
                maximize=maximize,
                verbose_eval=verbose_eval,
                callbacks=callbacks,
                evals_result=evals_result,
            )
        self._adopt(twin)
        return bst

    def _train(
        self,
        params: dict,
        dtrain,
        num_boost_round: int,
        *,
        data,
        evals,
        custom_metric,
        early_stopping_rounds,
        maximize,
        verbose_eval,
        callbacks,
        evals_result,
    ):
        xgb = import_xgboost()
        evals = list(evals) if evals else []
        self.set_base_margin(dtrain, *[d for d, _ in evals])
        if data is None:
            bst = xgb.train(
                params,
                dtrain,
                num_boost_round,
                evals=evals,
                obj=self,
                custom_metric=custom_metric,
                early_stopping_rounds=early_stopping_rounds,
                maximize=maximize,
                verbose_eval=verbose_eval,
                callbacks=callbacks,
                evals_result=evals_result,
            )
            self.adopt_booster(bst, self.intercept_)
            return bst
        if str(params.get("booster", "gbtree")) == "dart":
            raise ValueError(
                "the device loop adds each round's trees to the margins; the dart booster drops trees: "
                "train dart with data=None"
            )
        if int(data.shape[0]) != int(dtrain.num_row()):
            raise ValueError(
                f"`data` must hold the rows of dtrain: got {int(data.shape[0])} rows for {int(dtrain.num_row())}"
            )
        from xgboost.callback import CallbackContainer, EarlyStopping, EvaluationMonitor

        cbs = [] if callbacks is None else copy.copy(list(callbacks))
        if verbose_eval:
            cbs.append(EvaluationMonitor(period=1 if verbose_eval is True else int(verbose_eval)))
        if early_stopping_rounds:
            cbs.append(EarlyStopping(rounds=early_stopping_rounds, maximize=maximize))
        container = CallbackContainer(cbs, metric=custom_metric, output_margin=True)
        bst = xgb.Booster(params, [dtrain] + [d for d, _ in evals])
        bst = container.before_training(bst)
        label, _, _ = _dmatrix_info(dtrain)
        c = np.asarray(self.intercept_)
        n = int(dtrain.num_row())
        margin = self.init_score(n, None if c.ndim == 0 else c.size)
        if not A.is_numpy(data):
            margin = _device_like(margin, data)
        zeros = margin * 0
        for i in range(num_boost_round):
            if container.before_iteration(bst, i, dtrain, evals):
                break
            g, h = self(margin, dtrain)
            _boost(bst, dtrain, i, g, h)
            delta = bst.inplace_predict(
                data, iteration_range=(i, i + 1), predict_type="margin", base_margin=zeros
            )
            margin = margin + _device_like(delta, margin).reshape(margin.shape)
            if container.after_iteration(bst, i, dtrain, evals):
                break
        bst = container.after_training(bst)
        if evals_result is not None:
            evals_result.update(container.history)
        self.adopt_booster(bst, self.intercept_)
        return bst


@functools.cache
def _parameter_names(booster: str = "gbtree") -> frozenset[str]:
    """XGBoost's parameter names: the configuration a booster of this kind reports
    (``Booster.save_config``), the scikit-learn wrapper's names and the declared aliases."""
    import inspect

    xgb = import_xgboost()
    d = xgb.DMatrix(np.zeros((2, 1)), label=np.zeros(2))
    names: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if not isinstance(v, dict | list):
                    names.add(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for kind in {booster, "gbtree"} if booster in ("gbtree", "dart", "gblinear") else {"gbtree"}:
        walk(json.loads(xgb.train({"booster": kind, "verbosity": 0}, d, 1).save_config()))
    names.update(
        p
        for p in inspect.signature(xgb.XGBModel.__init__).parameters
        if p not in ("self", "kwargs")
    )
    # aliases of XGBoost's parameter structures (DMLC_DECLARE_ALIAS) and the global configuration
    names.update(
        {
            "learning_rate",
            "eta",
            "gamma",
            "min_split_loss",
            "reg_lambda",
            "lambda",
            "reg_alpha",
            "alpha",
            "nthread",
            "n_jobs",
            "seed",
            "random_state",
            "verbosity",
            "eval_metric",
            "use_rmm",
            "max_bin",
        }
    )
    return frozenset(names)


def _margin(c: np.ndarray, n: int) -> np.ndarray:
    return np.full(n, float(c)) if c.ndim == 0 else np.tile(c, (n, 1))


def _boost(bst, dtrain, iteration: int, grad, hess) -> None:
    """``Booster.boost`` with given gradients (keyword form since XGBoost 3.2, positional before)."""
    try:
        bst.boost(dtrain, iteration, grad=grad, hess=hess)
    except TypeError:
        bst.boost(dtrain, iteration, grad, hess)


def _device_like(arr, like):
    """``arr`` as an array of ``like``'s kind (NumPy, CuPy, or CuPy for CUDA-interface objects)."""
    if A.is_numpy(like):
        return np.asarray(A.to_numpy(arr))
    if A.is_torch(like):
        import torch

        if A.is_torch(arr):
            return arr.to(like.device)
        if hasattr(arr, "__cuda_array_interface__"):
            return torch.as_tensor(arr, device=like.device)
        return torch.as_tensor(np.asarray(arr), device=like.device)
    import cupy

    return cupy.asarray(arr)


def xgboost_objective(loss: Loss | str = "listwise", **options: Any) -> XGBoostObjective:
    r"""A selrank loss as an XGBoost custom objective.

    Parameters
    ----------
    loss : Loss or str
        A core loss or its registry name; keyword arguments that are not objective options
        build the loss.
    **options
        ``hessian``, ``hessian_floor``, ``label_scale``, ``group`` or ``qid``, ``min_leaf_hessian``
        (set it to the ``min_child_weight`` you train with; default XGBoost's 1),
        ``min_leaf_rows``, ``n_jobs``, ``block_rows`` — see :class:`~selrank.gbdt.GBDTObjective`.

    Returns
    -------
    XGBoostObjective
        For ``xgboost.train(params, dtrain, obj=obj)`` (call
        :meth:`~XGBoostObjective.set_base_margin` on the DMatrices first), for
        :meth:`~XGBoostObjective.train` (does that for you and has a device-resident loop
        for ``device="cuda"``), and for ``XGBRegressor`` / ``XGBClassifier(objective=obj)``.

    Examples
    --------
    >>> import numpy as np, xgboost as xgb
    >>> from selrank.gbdt import xgboost_objective
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0)
    >>> obj = xgboost_objective("listwise", scaling="exp", min_leaf_hessian=1e-3)
    >>> dtrain = xgb.DMatrix(X, y, qid=np.repeat([0, 1, 2], [50, 50, 100]))
    >>> booster = obj.train({"min_child_weight": 1e-3}, dtrain, 5)
    >>> obj.predict(booster, X).shape
    (200,)
    """
    return XGBoostObjective(loss, **options)
