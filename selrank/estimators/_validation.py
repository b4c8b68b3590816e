"""Input checks of the estimators: features, labels, groups, weights, eval lists."""

from __future__ import annotations

import numpy as np

from .. import _array as A
from .._groups import Groups, as_groups


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

