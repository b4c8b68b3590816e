"""LETOR collections: the packaged MQ2008 and OHSUMED data and users' own LETOR directories.

Packaged data (see ``datasets/<name>/README.md`` for source, terms, counts and checksums) is one
compressed Parquet file per collection holding the five query-disjoint subsets ``S1 … S5``;
a fold is assembled from them by the official LETOR rotation:

====  ===============  ==========  ====
fold  train            validation  test
====  ===============  ==========  ====
1     S1, S2, S3       S4          S5
2     S2, S3, S4       S5          S1
3     S3, S4, S5       S1          S2
4     S4, S5, S1       S2          S3
5     S5, S1, S2       S3          S4
====  ===============  ==========  ====
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._groups import Groups
from ._containers import RankingDataset, RankingSplit, float_dtype, import_optional
from ._paths import packaged_file
from .svmlight import read_svmlight

__all__ = ["LETOR_DATASETS", "fold_subsets", "load_letor"]

#: Packaged collections: name -> Parquet file under the data folder.
LETOR_DATASETS = {
    "mq2008": "mq2008/mq2008.parquet",
    "ohsumed": "ohsumed/ohsumed.parquet",
}

_N_SUBSETS = 5


def _check_fold(fold: Any) -> int:
    if isinstance(fold, bool) or not isinstance(fold, int | np.integer):
        raise TypeError(f"`fold` must be an int in 1..{_N_SUBSETS}; got {fold!r}")
    if not 1 <= fold <= _N_SUBSETS:
        raise ValueError(f"`fold` must be in 1..{_N_SUBSETS}; got {fold}")
    return int(fold)


def fold_subsets(fold: int) -> tuple[tuple[int, ...], int, int]:
    """Subsets (1-based) that form ``(train, validation, test)`` of a LETOR fold.

    Examples
    --------
    >>> fold_subsets(1)
    ((1, 2, 3), 4, 5)
    >>> fold_subsets(4)
    ((4, 5, 1), 2, 3)
    """
    k = _check_fold(fold) - 1
    s = [(k + j) % _N_SUBSETS + 1 for j in range(_N_SUBSETS)]
    return (s[0], s[1], s[2]), s[3], s[4]


@functools.lru_cache(maxsize=4)
def _frame(path: Path):
    pl = import_optional("polars", "load_letor", "data")
    return pl.read_parquet(path)


def _packaged_split(frame, subsets: tuple[int, ...], dtype: np.dtype) -> RankingSplit:
    pl = import_optional("polars", "load_letor", "data")
    part = pl.concat([frame.filter(pl.col("subset") == s) for s in subsets])
    features = [c for c in part.columns if c.startswith("f") and c[1:].isdigit()]
    X = np.ascontiguousarray(part.select(features).to_numpy(), dtype=dtype)
    qid = part["qid"].to_numpy().astype(np.int64)
    groups = Groups.from_ids(qid, require_contiguous=True)
    return RankingSplit(
        X=X,
        y=part["label"].to_numpy().astype(np.float64),
        group=groups.sizes,
        qid=qid,
        feature_names=tuple(features),
        docid=part["docid"].to_numpy().astype(str),
        comment=part["comment"].to_numpy().astype(str),
    )


def _find(base: Path, names: list[str]) -> Path | None:
    for name in names:
        for candidate in (base / name, base / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    return None


def _lightgbm_stem(root: Path) -> str | None:
    """``rank`` when ``root`` holds LightGBM's ``rank.train`` and ``rank.train.query``."""
    for f in sorted(root.glob("*.train")):
        if Path(f"{f}.query").is_file():
            return f.name[: -len(".train")]
    return None


def _user_files(root: Path, fold: int) -> tuple[Path, Path | None, Path]:
    """Train / validation / test files of ``fold`` under ``root`` (several layouts)."""
    if not root.is_dir():
        raise FileNotFoundError(f"LETOR directory {root} does not exist")
    fold_dir = root / f"Fold{fold}"
    yahoo = [f"set{fold}.train.txt"], [f"set{fold}.valid.txt"], [f"set{fold}.test.txt"]
    plain = ["train.txt"], ["vali.txt", "valid.txt", "validation.txt"], ["test.txt"]
    if fold_dir.is_dir():
        base, names = fold_dir, plain
    elif _find(root, yahoo[0]) is not None:
        base, names = root, yahoo
    elif fold == 1 and _find(root, plain[0]) is not None:
        base, names = root, plain  # a single split without Fold folders reads as fold 1
    elif fold == 1 and _lightgbm_stem(root) is not None:
        stem = _lightgbm_stem(root)  # LightGBM's rank.train / rank.test (+ .query files)
        base = root
        names = (
            [f"{stem}.train"],
            [f"{stem}.{v}" for v in ("vali", "valid", "validation")],
            [f"{stem}.test"],
        )
    else:
        raise FileNotFoundError(
            f"no fold {fold} under {root}: expected {fold_dir}/train.txt (MSLR, Istella, LETOR), "
            f"{root}/set{fold}.train.txt (Yahoo), or, for fold 1, {root}/train.txt "
            "(each optionally .gz) or LightGBM's rank.train with rank.train.query"
        )
    train, vali, test = (_find(base, n) for n in names)
    if train is None or test is None:
        missing = [n[0] for n, f in ((names[0], train), (names[2], test)) if f is None]
        raise FileNotFoundError(f"{base} lacks {' and '.join(missing)} (plain or .gz)")
    return train, vali, test


def _pad(split: RankingSplit, width: int) -> RankingSplit:
    if split.n_features == width:
        return split
    X = np.zeros((split.n_rows, width), dtype=split.X.dtype)
    X[:, : split.n_features] = split.X
    names = tuple(f"f{j + 1}" for j in range(width))
    return RankingSplit(X, split.y, split.group, split.qid, names, split.docid, split.comment)


def load_letor(
    name: str | None = None,
    fold: int = 1,
    *,
    path: str | os.PathLike | None = None,
    dtype: Any = np.float32,
    n_features: int | None = None,
    keep_comments: bool = False,
) -> RankingDataset:
    """Load one fold of a LETOR collection as train / validation / test splits.

    Parameters
    ----------
    name : {"mq2008", "ohsumed"}, optional
        A packaged collection (case-insensitive); see :data:`LETOR_DATASETS`.
    fold : int, 1..5
        Fold of the official rotation (module docstring). With ``path``, the folder
        ``Fold{fold}`` (MSLR-WEB10K/30K, Istella, LETOR 3.0/4.0 downloads) or the files
        ``set{fold}.train.txt, set{fold}.valid.txt, set{fold}.test.txt`` (Yahoo! LTR set 1
        or 2); a folder holding ``train.txt`` directly reads as fold 1.
    path : str or path-like, optional
        A directory of SVMlight files (plain or .gz) to read instead of a packaged collection.
        ``vali.txt`` (or ``valid.txt``) may be absent, as in Istella's full release; then
        ``validation`` is ``None``.
    dtype : float32 or float64
        Dtype of the feature matrices. The packaged files keep the source values exactly, so
        float64 reproduces the original text.
    n_features : int, optional
        Width of ``X`` for files read from ``path`` (default: the largest feature id in any of
        the three files; narrower splits are padded with zero columns).
    keep_comments : bool
        For files read from ``path``: keep the ``#`` comments and the docids they name
        (packaged collections always carry both).

    Returns
    -------
    RankingDataset
        ``.train``, ``.validation``, ``.test``: :class:`RankingSplit` objects with ``X``,
        ``y``, ``group``, ``qid``, ``docid``, ``feature_names``; each unpacks as
        ``X, y, group``.

    Examples
    --------
    >>> ds = load_letor("MQ2008", fold=1)
    >>> ds.train.n_queries + ds.validation.n_queries + ds.test.n_queries
    784
    >>> X, y, group = ds.test
    >>> X.shape[1], X.dtype, int(group.sum()) == X.shape[0]
    (46, dtype('float32'), True)
    """
    dt = float_dtype(dtype)
    fold = _check_fold(fold)
    if (name is None) == (path is None):
        raise ValueError(
            "load_letor needs exactly one of `name` (a packaged collection: "
            f"{sorted(LETOR_DATASETS)}) or `path` (a directory of LETOR files); "
            f"got name={name!r}, path={path!r}"
        )
    if path is not None:
        root = Path(path).expanduser()  # "~/data/MSLR-WEB30K" as a shell reads it
        train_file, vali_file, test_file = _user_files(root, fold)

        def read(f: Path) -> RankingSplit:
            return read_svmlight(f, n_features=n_features, keep_comments=keep_comments, dtype=dt)

        train = read(train_file)
        vali = None if vali_file is None else read(vali_file)
        test = read(test_file)
        width = max(s.n_features for s in (train, vali, test) if s is not None)
        return RankingDataset(
            root.name,
            fold,
            _pad(train, width),
            None if vali is None else _pad(vali, width),
            _pad(test, width),
            source=str(root),
        )

    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string; got {type(name).__name__}")
    key = name.lower()
    if key not in LETOR_DATASETS:
        raise ValueError(
            f"unknown LETOR collection {name!r}; choose one of {sorted(LETOR_DATASETS)}"
        )
    file = packaged_file(LETOR_DATASETS[key])
    frame = _frame(file)
    train_sets, vali_set, test_set = fold_subsets(fold)
    return RankingDataset(
        key,
        fold,
        _packaged_split(frame, train_sets, dt),
        _packaged_split(frame, (vali_set,), dt),
        _packaged_split(frame, (test_set,), dt),
        source=str(file),
    )
