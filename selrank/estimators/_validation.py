"""Input checks of the estimators: features (arrays and data frames), labels, groups, weights,
eval lists and backend parameter names."""

from __future__ import annotations

import difflib
import warnings
from typing import Any

import numpy as np

from .. import _array as A
from .._groups import Groups, as_groups
from .._validation import as_numeric_array, as_weight


# ----------------------------------------------------------------------------------------------
# features
# ----------------------------------------------------------------------------------------------
class Features:
    """Features checked for a backend: ``data`` (a NumPy array, a scipy sparse matrix, a
    device array, or a pandas DataFrame when it has categorical columns) and the column
    names (``None`` for arrays)."""

    def __init__(self, data, names: list[str] | None):
        self.data = data
        self.names = names

    @property
    def shape(self) -> tuple[int, int]:
        n_rows, n_cols = (int(d) for d in self.data.shape)
        return n_rows, n_cols

    @property
    def n_rows(self) -> int:
        return self.shape[0]


def _is_pandas(X) -> bool:
    return (
        type(X).__module__.startswith("pandas") and hasattr(X, "columns") and hasattr(X, "dtypes")
    )


def _is_polars(X) -> bool:
    return (
        type(X).__module__.startswith("polars") and hasattr(X, "columns") and hasattr(X, "schema")
    )


def _pandas_features(X, name: str) -> Features:
    import pandas as pd

    if X.shape[1] and not all(isinstance(c, str) for c in X.columns):
        names = None  # scikit-learn keeps names only when every column name is a string
    else:
        names = [str(c) for c in X.columns]
    has_category = False
    columns = {}
    for col, dtype in X.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            has_category = True
            columns[col] = X[col]
        elif pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
            # nullable Int64 / Float64 / boolean: pd.NA becomes NaN (missing, as LightGBM reads it)
            columns[col] = (
                X[col].astype("float64") if pd.api.types.is_extension_array_dtype(dtype) else X[col]
            )
        else:
            raise TypeError(
                f"`{name}` column {col!r} has dtype {dtype}: features must be numeric, boolean or pandas "
                f"Categorical; encode it as numbers or X[{col!r}].astype('category')"
            )
    if has_category:
        return Features(pd.DataFrame(columns, index=X.index), names)
    data = (
        np.column_stack([np.asarray(c, dtype=np.float64) for c in columns.values()])
        if columns
        else np.zeros((X.shape[0], 0))
    )
    return Features(data, names)


def _polars_features(X, name: str) -> Features:
    numeric = {
        "Int8",
        "Int16",
        "Int32",
        "Int64",
        "UInt8",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float32",
        "Float64",
        "Boolean",
        "Decimal",
    }
    for col, dtype in X.schema.items():
        if str(dtype).split("(")[0] not in numeric:
            raise TypeError(
                f"`{name}` column {col!r} has dtype {dtype}: features must be numeric or boolean; encode it as "
                "numbers, or pass X.to_pandas() with the column as a pandas Categorical"
            )
    data = X.to_numpy().astype(np.float64) if X.shape[1] else np.zeros((X.shape[0], 0))
    return Features(data, [str(c) for c in X.columns])


def is_dask_collection(x: Any) -> bool:
    """Whether ``x`` is a Dask collection (``dask.array``, ``dask.dataframe``, dask-expr, dask-cuDF)."""
    return type(x).__module__.split(".")[0] in ("dask", "dask_expr", "dask_cudf")


def refuse_dask(owner: str, **given: Any) -> None:
    """Refuse Dask collections among ``given`` (name -> value; lists, e.g. ``eval_set``, are searched).

    The estimators train in this process: converting a Dask collection would compute it into
    local memory without notice. The message names the Dask training functions instead.
    """
    for name, value in given.items():
        items = (
            [(f"{name}[{i}]", v) for i, v in enumerate(value)]
            if isinstance(value, list | tuple)
            else [(name, value)]
        )
        for where, item in items:
            inner = item if isinstance(item, list | tuple) else (item,)
            if any(is_dask_collection(v) for v in inner):
                raise TypeError(
                    f"{owner} got a Dask collection for `{where}`; the estimators train in this process "
                    "and will not compute it into local memory. Train on the cluster with "
                    "selrank.gbdt.dask.lightgbm_dask_fit (lightgbm.DaskLGBMRanker / DaskLGBMRegressor / "
                    "DaskLGBMClassifier with a selrank objective) or selrank.gbdt.dask.xgboost_dask_train "
                    "(predict with xgboost_dask_predict); or call .compute() first to train locally "
                    "(docs/gbdt.md, Dask)"
                )


def as_features(X, name: str = "X") -> Features:
    """2-D features: arrays, scipy sparse, device arrays, pandas and polars frames.

    Raises ``TypeError`` for non-numeric data (naming the column of a data frame) and
    ``ValueError`` for a shape that is not 2-D or has no rows or no columns; a Dask
    collection is refused (:func:`refuse_dask`), not computed.
    """
    if X is None:
        raise TypeError(f"`{name}` is required; got None")
    refuse_dask("the estimator", **{name: X})
    if _is_pandas(X):
        out = _pandas_features(X, name)
    elif _is_polars(X):
        out = _polars_features(X, name)
    elif hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse
        if X.ndim != 2:
            raise ValueError(f"`{name}` must be 2-D; got shape {X.shape}")
        out = Features(X.tocsr() if X.format not in ("csr", "csc") else X, None)
    elif hasattr(X, "__cuda_array_interface__") and not A.is_numpy(X):
        if len(X.shape) != 2:
            raise ValueError(f"`{name}` must be 2-D (rows, features); got shape {tuple(X.shape)}")
        out = Features(X, None)  # CuPy / CUDA tensors go to XGBoost's device path unchanged
    else:
        if hasattr(X, "to_numpy") and not A.is_numpy(X):
            X = X.to_numpy()
        if A.is_torch(X):
            X = A.to_numpy(X)
        try:
            arr = np.asarray(X)
        except Exception as exc:
            raise TypeError(
                f"`{name}` must be a numeric 2-D array; got {type(X).__name__}"
            ) from exc
        if arr.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: `{name}` has dtype {arr.dtype}")
        if arr.dtype == object:
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"`{name}` must be numeric: {exc}") from None
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
        if arr.ndim != 2:
            hint = (
                " (one sample: X.reshape(1, -1); one feature: X.reshape(-1, 1))"
                if arr.ndim == 1
                else ""
            )
            raise ValueError(
                f"`{name}` must be 2-D (rows, features); got shape {arr.shape}. Reshape your data{hint}"
            )
        out = Features(arr, None)
    n_rows, n_cols = out.shape
    if n_rows == 0:
        raise ValueError(
            f"`{name}` has 0 sample(s) (shape={out.shape}) while a minimum of 1 is required."
        )
    if n_cols == 0:
        raise ValueError(
            f"`{name}` has 0 feature(s) (shape={out.shape}) while a minimum of 1 is required."
        )
    return out


# ----------------------------------------------------------------------------------------------
# labels, groups, weights
# ----------------------------------------------------------------------------------------------
def _as_labels(y, n_rows: int, name: str = "y") -> np.ndarray:
    if y is None:
        raise ValueError(
            f"this estimator requires y to be passed, but the target y is None (`{name}`)"
        )
    if hasattr(y, "to_numpy") and not A.is_numpy(y):
        y = y.to_numpy()
    arr = np.asarray(A.to_numpy(y))
    if arr.ndim == 2 and arr.shape[1] == 1:
        from sklearn.utils.validation import column_or_1d

        arr = column_or_1d(arr, warn=True)  # scikit-learn's DataConversionWarning
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (one label per row); got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"`{name}` has {arr.shape[0]} labels but X has {n_rows} rows")
    return arr


def _as_float_labels(y, n_rows: int, name: str = "y") -> np.ndarray:
    arr = as_numeric_array(_as_labels(y, n_rows, name), name).astype(np.float64)
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"`{name}` must be finite; row {bad} holds {arr[bad]!r}")
    return arr


def _as_group(
    group,
    n_rows: int,
    name: str = "group",
    *,
    qid=None,
    qid_name: str = "qid",
    required: bool | str = True,
) -> Groups | None:
    """Query groups from sizes (``group``) or per-row ids (``qid``); ids must keep each query's rows together.

    Neither given: ``None`` (``required=False``), an error (``True``) or, with
    ``required="warn"``, all rows as one query and a warning that says how to pass groups.
    """
    if group is None and qid is None:
        if not required:
            return None
        message = (
            f"pass `{name}` (query sizes, adding up to n_rows={n_rows}) or `{qid_name}` (one query id per row). "
            "With scikit-learn cross-validation or search, route qid per row: "
            "sklearn.set_config(enable_metadata_routing=True), est.set_fit_request(qid=True), "
            "est.set_score_request(qid=True) and a GroupKFold on the same ids (docs/estimators.md)"
        )
        if required == "warn":
            warnings.warn(
                f"no query groups given: all {n_rows} rows are ranked as one query; {message}",
                UserWarning,
                stacklevel=3,
            )
            return as_groups(None, n_rows)
        raise ValueError(f"ranking needs query groups: {message}")
    if qid is not None:
        if group is not None:
            raise ValueError(
                f"give either `{name}` (query sizes) or `{qid_name}` (per-row query ids), not both"
            )
        try:
            return as_groups(None, n_rows, qid=qid, require_contiguous=True)
        except ValueError as exc:
            msg = str(exc).replace("`qid`", f"`{qid_name}`")
            if "contiguous" in msg:  # the one case that sorting fixes
                msg += "; sort the rows by query id first"
            raise ValueError(msg) from None
    try:
        return as_groups(group, n_rows)
    except ValueError as exc:
        raise ValueError(
            str(exc).replace("`group`", f"`{name}`").replace("qid=", f"{qid_name}=")
        ) from None


def check_feature_names(est, X, *, reset: bool) -> None:
    """Set (``reset``) or compare ``est.feature_names_in_`` from a data frame's columns.

    The check scikit-learn's ``validate_data`` runs for the GBDT estimators, for estimators
    that are not scikit-learn ``BaseEstimator`` subclasses (:class:`NeuralRanker`): columns
    reordered, renamed or missing at prediction are refused with scikit-learn's message.
    """
    from sklearn.utils.validation import _check_feature_names

    _check_feature_names(est, X, reset=reset)


def refuse_ungrouped_scoring(who: str, n_rows: int | None = None) -> None:
    """Raise for a ranking score asked for without query groups (never one list of all rows).

    What scikit-learn's search and cross-validation do when ``qid`` is not routed: the
    scorer gets ``(y_true, y_score)`` of a whole fold and would rank it as one query.
    """
    rows = f"the {n_rows} rows" if n_rows is not None else "the rows"
    raise ValueError(
        f"{who} got no query groups: a ranking metric needs `qid=` (one query id per row) or "
        f"`group=` (query sizes) and never ranks {rows} as one list. In scikit-learn search or "
        "cross-validation, route qid per row: sklearn.set_config(enable_metadata_routing=True), "
        "est.set_fit_request(qid=True), scoring=selrank.estimators.ndcg_scorer(k) (it requests qid), "
        'cv=GroupKFold(n) and params={"qid": qid, "groups": qid} (docs/estimators.md)'
    )


#: with ``label_scale="auto"`` a ranker's largest target score is this (0.25 x grade 2, the
#: scale chosen on the LETOR grades 0-2)
AUTO_TARGET_TOP = 0.5


def resolve_label_scale(label_scale: Any, y: np.ndarray) -> float:
    """The factor from labels to target scores: ``label_scale``, or for ``"auto"``
    ``AUTO_TARGET_TOP / max|y|`` so that the targets span the same range whatever the label
    range (0-2 grades, 0-31 click counts, 0-100 scores); 1 when every label is 0."""
    if isinstance(label_scale, str):
        if label_scale != "auto":
            raise ValueError(
                f"`label_scale` must be a positive number or 'auto'; got {label_scale!r}"
            )
        top = float(np.max(np.abs(y))) if np.size(y) else 0.0
        return AUTO_TARGET_TOP / top if top > 0 else 1.0
    return float(label_scale)


def _as_sample_weight(w, n_rows: int, name: str = "sample_weight"):
    return as_weight(w, n_rows, name, unit="row")


def _as_query_or_row_weight(w, groups: Groups, name: str = "sample_weight"):
    """Per-row weights from one weight per row or, as XGBoost's rankers take it, one per query.

    A per-query weight is repeated over the query's rows, so that the query's loss (weighted
    by the mean of its rows' weights) carries exactly that weight.
    """
    if w is None:
        return None
    arr = np.asarray(as_numeric_array(w, name), dtype=np.float64).reshape(-1)
    if arr.size == groups.n_groups and arr.size != groups.n_rows:
        per_query = as_weight(arr, groups.n_groups, name, unit="query")
        return groups.from_grouped(np.repeat(per_query, groups.sizes))
    if arr.size != groups.n_rows:
        raise ValueError(
            f"`{name}` must hold one weight per row ({groups.n_rows}) or one per query "
            f"({groups.n_groups}, XGBoost's convention); got {arr.size}"
        )
    return as_weight(arr, groups.n_rows, name, unit="row")


def _eval_list(value, n: int, name: str) -> list:
    if value is None:
        return [None] * n
    if not isinstance(value, list | tuple):
        raise TypeError(
            f"`{name}` must be a list with one entry per eval_set item; got {type(value).__name__}"
        )
    if len(value) != n:
        raise ValueError(f"`{name}` has {len(value)} entries for {n} eval_set items")
    return list(value)


def _eval_pairs(eval_set) -> list:
    """``eval_set`` as a list of ``(X, y)`` pairs (a single pair is accepted)."""
    if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
        eval_set = [eval_set]
    if not isinstance(eval_set, list | tuple):
        raise TypeError(f"`eval_set` must be a list of (X, y) pairs; got {type(eval_set).__name__}")
    for k, item in enumerate(eval_set):
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise TypeError(f"`eval_set[{k}]` must be an (X, y) pair; got {type(item).__name__}")
    return list(eval_set)


# ----------------------------------------------------------------------------------------------
# backend parameter names (misspelled keywords are refused with the closest valid name)
# ----------------------------------------------------------------------------------------------
def suggest(name: str, valid) -> str:
    """`` (did you mean 'x'?)`` with the closest valid name, or an empty string."""
    close = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


#: LightGBM's names (and aliases) and XGBoost's for the training objective
_OBJECTIVE_NAMES = ("objective", "objective_type", "app", "application")


def _objective_hint(value: Any) -> str:
    text = str(value).lower()
    if "rank" in text or text in ("rank_xendcg", "xendcg"):
        return (
            "for ranking pass loss='listwise' (the default, a composite softmax over each query) "
            "or loss='pairwise' to SelectiveRanker"
        )
    if text.startswith(("binary", "multiclass", "softmax", "multi:", "binary:", "cross_entropy")):
        return "for classification use SelectiveClassifier(loss=...)"
    return "for regression use SelectiveRegressor(loss='pointwise', link=...) ('identity' is squared error)"


def refuse_objective(owner: str, given: dict[str, Any]) -> None:
    """Refuse LightGBM's / XGBoost's ``objective=`` (a habit from LGBMRanker / XGBRanker)."""
    for key in _OBJECTIVE_NAMES:
        if key in given:
            value = given[key]
            raise ValueError(
                f"{owner} got {key}={value!r}: a selrank estimator always trains a selective "
                f"matching loss, chosen with `loss=` (not LightGBM's / XGBoost's `objective`); "
                f"{_objective_hint(value)}. For LightGBM's or XGBoost's own {value!r} use "
                "lightgbm.LGBMRanker / xgboost.XGBRanker"
            )


def as_seed(random_state: Any, name: str = "random_state") -> int | None:
    """An integer seed from ``random_state`` as scikit-learn takes it.

    ``None`` (a fresh seed per fit), an int, or a ``numpy.random.RandomState`` /
    ``numpy.random.Generator`` (one seed drawn from it per fit, as scikit-learn's
    estimators draw from a shared ``RandomState``).
    """
    if random_state is None:
        return None
    top = int(np.iinfo(np.int32).max)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(top))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(top))
    if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
        raise TypeError(
            f"`{name}` must be None, an int, or a numpy.random.RandomState / Generator; "
            f"got {type(random_state).__name__}"
        )
    return int(random_state)


def is_verbose(verbose: Any) -> bool:
    """``verbose`` as LightGBM reads it: ``True`` or a positive number logs; ``False``, 0 and
    negative numbers (LightGBM's ``verbose=-1``) are silent."""
    if isinstance(verbose, bool):
        return verbose
    if isinstance(verbose, int | float | np.integer | np.floating):
        return float(verbose) > 0
    return bool(verbose)


def check_parameter_names(
    owner: str, given: dict[str, Any], own, backend: str, backend_names
) -> None:
    """Refuse keyword arguments that are neither the estimator's nor the backend's parameters."""
    refuse_objective(owner, given)
    valid = set(own) | set(backend_names)
    for key in given:
        if key not in valid:
            raise ValueError(
                f"{owner} got an unknown parameter {key!r}{suggest(key, valid)} (valid: the estimator's "
                f"parameters and {backend}'s parameters and aliases)"
            )
