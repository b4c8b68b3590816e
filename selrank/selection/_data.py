"""The data of a selection run: train / validation / test parts of one or more folds."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Packaged LETOR collections a selection run reads by name.
PACKAGED = ("mq2008", "ohsumed")


@dataclass(frozen=True, eq=False)
class Part:
    """One split of a fold: dense features, labels and query sizes (rows of a query contiguous).

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of float64, shape (n_rows,)
    group : ndarray of int64, shape (n_queries,)
        Query sizes in row order (LightGBM's ``group``); for regression, ones.
    """

    X: np.ndarray
    y: np.ndarray
    group: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of queries (rows for regression)."""
        return int(self.group.size)

    @property
    def qid(self) -> np.ndarray:
        """Per-row query index (0, 0, 1, ...), as XGBoost's ``qid``."""
        return np.repeat(np.arange(self.group.size), self.group)

    def query_rows(self, q: int) -> slice:
        """The rows of query ``q``."""
        start = int(self.group[:q].sum())
        return slice(start, start + int(self.group[q]))


@dataclass(frozen=True, eq=False)
class Fold:
    """One fold: the model is fitted on ``train``, early-stopped and chosen on ``valid``,
    and scores ``test``. Folds with the same ``test_id`` share one test part (grouped K-fold
    validation): their test scores are averaged, so each test query counts once."""

    train: Part
    valid: Part
    test: Part
    name: str
    test_id: int


@dataclass(frozen=True, eq=False)
class Folds:
    """The folds of a selection run and how they were made (written in the report)."""

    name: str
    load: Callable[[int], Fold]
    n_folds: int
    protocol: str
    notes: list[str] = field(default_factory=list)


def _dense(X: Any, what: str) -> np.ndarray:
    """Features as a 2-D float array from NumPy, pandas or polars."""
    if hasattr(X, "to_numpy"):  # pandas / polars frames
        X = X.to_numpy()
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be 2-D (rows x features); got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number) and arr.dtype != np.bool_:
        raise TypeError(f"{what} must hold numbers; got dtype {arr.dtype}")
    return np.asarray(arr, dtype=np.float64 if arr.dtype == np.float64 else np.float32)


def _vector(v: Any, n: int, what: str) -> np.ndarray:
    if hasattr(v, "to_numpy"):
        v = v.to_numpy()
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(f"{what} must be 1-D with one value per row ({n}); got shape {arr.shape}")
    return arr


def part_from_arrays(X: Any, y: Any, qid: Any | None, what: str = "data") -> Part:
    """A :class:`Part` from ``X, y, qid`` (rows sorted by query, stably, when they are not
    contiguous); ``qid=None`` makes every row its own query (regression)."""
    Xd = _dense(X, f"{what} X")
    yd = np.asarray(_vector(y, Xd.shape[0], f"{what} y"), dtype=np.float64)
    if not np.all(np.isfinite(yd)):
        bad = int(np.flatnonzero(~np.isfinite(yd))[0])
        raise ValueError(f"{what} y must be finite; row {bad} holds {yd[bad]!r}")
    if qid is None:
        return Part(Xd, yd, np.ones(Xd.shape[0], dtype=np.int64))
    q = _vector(qid, Xd.shape[0], f"{what} qid")
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    starts = np.concatenate([[0], change])
    if np.unique(q[starts]).size != starts.size:  # a query split over several runs of rows
        order = np.argsort(q, kind="stable")
        Xd, yd, q = Xd[order], yd[order], q[order]
        starts = np.concatenate([[0], np.flatnonzero(q[1:] != q[:-1]) + 1])
    sizes = np.diff(np.concatenate([starts, [q.size]])).astype(np.int64)
    return Part(Xd, yd, sizes)


def _take_queries(part: Part, queries: np.ndarray) -> Part:
    offsets = np.concatenate([[0], np.cumsum(part.group)])
    rows = np.concatenate(
        [np.arange(offsets[q], offsets[q + 1]) for q in queries] or [np.zeros(0, np.int64)]
    )
    return Part(part.X[rows], part.y[rows], part.group[queries])


def _query_folds(n_queries: int, n_splits: int, seed: int) -> list[np.ndarray]:
    """Queries shuffled (seeded) and cut into ``n_splits`` parts of near-equal size."""
    order = np.random.default_rng(seed).permutation(n_queries)
    return [np.sort(p) for p in np.array_split(order, n_splits)]


def _split_of(ds: Any, name: str, fold: int) -> Fold:
    if ds.validation is None:
        raise ValueError(
            f"{name} fold {fold} has no validation split: the selection needs one to stop and "
            "choose on (give validation=..., or let select() cut grouped folds from train)"
        )
    parts = [Part(s.X, np.asarray(s.y, np.float64), np.asarray(s.group, np.int64)) for s in ds]
    return Fold(parts[0], parts[1], parts[2], f"fold {fold}", fold)


def resolve_folds(
    data: Any,
    y: Any = None,
    qid: Any = None,
    *,
    validation: Any = None,
    test: Any = None,
    folds: Sequence[int] | None = None,
    cv: int = 5,
    test_size: float = 0.2,
    seed: int = 0,
    task: str = "ranking",
) -> Folds:
    """The folds of ``select``'s data argument (see :func:`selrank.selection.select`)."""
    from ..datasets import RankingDataset, load_letor, load_ranking_folder, ranking_folder_folds

    if isinstance(data, str) and data.lower() in PACKAGED:
        name = data.lower()
        ks = list(folds) if folds else [1, 2, 3, 4, 5]
        bad = [k for k in ks if k not in (1, 2, 3, 4, 5)]
        if bad:
            raise ValueError(f"`folds` of {name} must be in 1..5; got {bad}")
        return Folds(
            name,
            lambda i: _split_of(load_letor(name, fold=ks[i]), name, ks[i]),
            len(ks),
            f"the official folds {ks}; each fold's validation split stops and chooses, "
            "its test split is pooled (each test query once)",
        )
    if (
        isinstance(data, str | os.PathLike)
        and not isinstance(data, str)
        or (isinstance(data, str) and (os.sep in data or Path(data).expanduser().exists()))
    ):
        root = Path(data).expanduser()
        if not root.is_dir():
            raise ValueError(
                f"data {str(root)!r}: no such folder (give a LETOR / MSLR folder holding Fold1 ... "
                f"or train.txt / vali.txt / test.txt, a packaged name {PACKAGED}, or arrays)"
            )
        ks = list(folds) if folds else (ranking_folder_folds(root) or [1])
        return Folds(
            root.name,
            lambda i: _split_of(load_ranking_folder(root, ks[i]), root.name, ks[i]),
            len(ks),
            f"folds {ks} of the folder; each fold's validation split stops and "
            "chooses, its test split is pooled",
        )
    if isinstance(data, str):
        raise ValueError(
            f"unknown data {data!r}: give a packaged name {PACKAGED}, a LETOR / MSLR folder, "
            "arrays X, y, qid, or RankingDataset objects"
        )
    if isinstance(data, RankingDataset):
        data = [data]
    if isinstance(data, list | tuple) and data and all(isinstance(d, RankingDataset) for d in data):
        dss = list(data)
        return Folds(
            dss[0].name,
            lambda i: _split_of(dss[i], dss[i].name, dss[i].fold or i + 1),
            len(dss),
            f"{len(dss)} given split(s); each fold's validation split stops and chooses",
        )
    if y is None:
        raise ValueError("with arrays, give X and y (and qid for ranking): select(X, y, qid, ...)")
    if task == "ranking" and qid is None:
        raise ValueError(
            "ranking needs `qid` (one query id per row); for regression use task='regression'"
        )
    train = part_from_arrays(data, y, qid if task == "ranking" else None, "train")
    notes: list[str] = []

    def as_part(value: Any, what: str) -> Part:
        if not isinstance(value, list | tuple) or len(value) not in (2, 3):
            raise TypeError(f"`{what}` must be a tuple (X, y, qid) (or (X, y) for regression)")
        q = value[2] if len(value) == 3 and task == "ranking" else None
        if task == "ranking" and q is None:
            raise ValueError(f"`{what}` needs its qid for ranking: (X, y, qid)")
        p = part_from_arrays(value[0], value[1], q, what)
        if p.X.shape[1] != train.X.shape[1]:
            raise ValueError(
                f"`{what}` has {p.X.shape[1]} features; the training data {train.X.shape[1]}"
            )
        return p

    if test is not None:
        test_part = as_part(test, "test")
    else:
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"`test_size` must be in (0, 1); got {test_size!r}")
        order = np.random.default_rng(seed + 1).permutation(train.n_queries)
        n_test = max(1, int(round(test_size * train.n_queries)))
        test_part = _take_queries(train, np.sort(order[:n_test]))
        train = _take_queries(train, np.sort(order[n_test:]))
        unit = "queries" if task == "ranking" else "rows"
        notes.append(
            f"no test data given: {n_test} {unit} ({test_size:.0%}, seeded) held out as the test part"
        )
    if validation is not None:
        valid_part = as_part(validation, "validation")
        return Folds(
            "data",
            lambda i: Fold(train, valid_part, test_part, "given split", 0),
            1,
            "the given train / validation / test split",
            notes,
        )
    if not isinstance(cv, int) or cv < 2:
        raise ValueError(
            f"`cv` must be an int >= 2 (grouped K-fold on the training queries); got {cv!r}"
        )
    if train.n_queries < cv:
        raise ValueError(
            f"grouped {cv}-fold validation needs >= {cv} training queries; got {train.n_queries}"
        )
    parts = _query_folds(train.n_queries, cv, seed)

    def kfold(i: int) -> Fold:
        rest = np.sort(np.concatenate([p for j, p in enumerate(parts) if j != i]))
        return Fold(
            _take_queries(train, rest), _take_queries(train, parts[i]), test_part, f"cv {i + 1}", 0
        )

    unit = "queries" if task == "ranking" else "rows"
    return Folds(
        "data",
        kfold,
        cv,
        f"grouped {cv}-fold cross-validation on the training {unit} (validation: the out-of-fold "
        f"{unit}, each once); test scores: the mean of the {cv} fold models",
        notes,
    )
