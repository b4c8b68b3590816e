"""Result containers shared by the readers, loaders and generators."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["RankingSplit", "RankingDataset", "float_dtype", "import_optional"]


def import_optional(module: str, what: str, extra: str):
    """Import ``module`` or raise an ``ImportError`` that says which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what} requires {module}: pip install 'selrank[{extra}]'") from exc


def float_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as float32 or float64, else a ``TypeError``."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"`dtype` must be float32 or float64; got {dtype!r}") from exc
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"`dtype` must be float32 or float64; got {dt}")
    return dt


@dataclass(frozen=True, eq=False)
class RankingSplit:
    """One split of a learning-to-rank dataset: rows grouped by query, in file order.

    Unpacks as ``X, y, group = split`` (the three arguments a ranker's ``fit`` takes).

    Attributes
    ----------
    X : ndarray of float32, shape (n_rows, n_features)
        Dense features. Column ``j`` holds feature id ``j + 1`` of the SVMlight file
        (LETOR ids are 1-based); a feature absent from a sparse line is 0.
    y : ndarray of float64, shape (n_rows,)
        Relevance labels.
    group : ndarray of int64, shape (n_queries,)
        Query sizes in row order (LightGBM's ``group``); rows of a query are contiguous.
    qid : ndarray of int64, shape (n_rows,)
        Query id of each row (XGBoost's ``qid``).
    feature_names : tuple of str
        ``("f1", "f2", ...)``: the 1-based feature ids of the source format.
    docid : ndarray of str or None
        Document id of each row where the source names one (``#docid = ...`` comments).
    comment : ndarray of str or None
        The raw trailing comment of each row when it was kept.

    Examples
    --------
    >>> import numpy as np
    >>> s = RankingSplit(np.zeros((3, 2), np.float32), np.array([1.0, 0.0, 2.0]),
    ...                  np.array([2, 1]), np.array([7, 7, 9]), ("f1", "f2"))
    >>> X, y, group = s
    >>> s.n_rows, s.n_queries, group.tolist()
    (3, 2, [2, 1])
    """

    X: np.ndarray
    y: np.ndarray
    group: np.ndarray
    qid: np.ndarray
    feature_names: tuple[str, ...]
    docid: np.ndarray | None = None
    comment: np.ndarray | None = field(default=None, repr=False)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.X, self.y, self.group))

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.group.size)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def __repr__(self) -> str:
        return (
            f"RankingSplit(n_rows={self.n_rows}, n_queries={self.n_queries}, "
            f"n_features={self.n_features}, docid={'yes' if self.docid is not None else 'no'})"
        )


@dataclass(frozen=True, eq=False)
class RankingDataset:
    """Train / validation / test splits of one fold of a learning-to-rank dataset.

    Unpacks as ``train, validation, test = dataset``. ``validation`` is ``None`` for
    collections that ship without one (Istella's full release).

    Attributes
    ----------
    name : str
    fold : int or None
    train, validation, test : RankingSplit
    source : str
        Where the data came from (packaged Parquet file or the user's directory).
    """

    name: str
    fold: int | None
    train: RankingSplit
    validation: RankingSplit | None
    test: RankingSplit
    source: str = ""

    def __iter__(self) -> Iterator[RankingSplit | None]:
        return iter((self.train, self.validation, self.test))

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("train", "validation", "test"))
        return f"RankingDataset(name={self.name!r}, fold={self.fold}, {parts})"
