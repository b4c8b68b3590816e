"""LightGBM's own ranking files: ``rank.train`` (LibSVM lines without query ids) beside
``rank.train.query`` (one query size a line), read as LightGBM reads them.

LightGBM's data files carry no query ids: "if the name of data file is ``train.txt``, the query
file should be named as ``train.txt.query``", each line of it the number of consecutive rows of
one query, adding up to the file's rows. Feature indices are **column indices** as LightGBM
uses them: ``j:v`` is column ``j`` of ``X`` (LightGBM's example ``rank.train`` starts at ``1:``,
so column 0 is all zeros, exactly as in a LightGBM model trained on the file), and ``0:`` is
accepted. A model selrank trains on these arrays therefore takes the same columns as one
LightGBM trains on the file, and a LightGBM model scores selrank's ``X`` unchanged.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._files import open_read
from ._containers import RankingSplit, float_dtype
from .svmlight import read_svmlight

__all__ = ["lightgbm_query_file", "read_lightgbm_ranking"]

_ID_ZERO = re.compile(rb"(?:^|[ \t])0:", re.MULTILINE)
_ID = re.compile(rb"(?<=[ \t])(\d+):")


def lightgbm_query_file(path: str | os.PathLike) -> Path | None:
    """LightGBM's query file of a data file (``<name>.query``, or ``<name>.query.gz`` /
    ``<stem>.query`` for ``<stem>.gz``) when it exists, else ``None``."""
    p = Path(path).expanduser()
    candidates = [Path(f"{p}.query"), Path(f"{p}.query.gz")]
    if p.suffix.lower() == ".gz":
        candidates.append(p.with_suffix("").with_name(p.with_suffix("").name + ".query"))
    return next((c for c in candidates if c.is_file()), None)


def is_lightgbm_ranking_file(path: str | os.PathLike) -> bool:
    """A data file with a LightGBM query file beside it and no ``qid:`` on its first data line."""
    p = Path(path).expanduser()
    if lightgbm_query_file(p) is None or not p.is_file():
        return False
    with open_read(p) as fh:
        for raw in fh:
            line = raw.strip()
            if line and not line.startswith(b"#"):
                return b"qid:" not in line
    return True


def _query_sizes(qfile: Path) -> np.ndarray:
    sizes = []
    with open_read(qfile) as fh:
        for lineno, raw in enumerate(fh, 1):
            text = raw.strip()
            if not text:
                continue
            try:
                size = int(text)
            except ValueError:
                size = -1
            if size < 1:
                shown = text[:60].decode("utf-8", "replace")
                raise ValueError(
                    f"{qfile}, line {lineno}: expected a query size (a positive integer: the "
                    f"number of consecutive rows of one query); got {shown!r}"
                )
            sizes.append(size)
    if not sizes:
        raise ValueError(f"{qfile} holds no query sizes")
    return np.asarray(sizes, dtype=np.int64)


def read_lightgbm_ranking(
    path: str | os.PathLike,
    *,
    query: str | os.PathLike | None = None,
    n_features: int | None = None,
    dtype: Any = np.float32,
) -> RankingSplit:
    """Read a LightGBM ranking data file and its query file as LightGBM does.

    Parameters
    ----------
    path : str or path-like
        LibSVM lines ``<label> <index>:<value> ...`` without ``qid:`` (plain or gzip).
    query : str or path-like, optional
        The query file; by default ``<path>.query`` (LightGBM's rule).
    n_features : int, optional
        Columns of ``X`` (LightGBM's: the largest index + 1); a larger index is an error.
    dtype : float32 or float64

    Returns
    -------
    RankingSplit
        ``X`` with column ``j`` = index ``j`` (LightGBM's columns), ``y``, ``group`` from the
        query file, ``qid`` = 1, 2, ... (the query's number in the file).

    Raises
    ------
    FileNotFoundError
        The data file or its query file is missing.
    ValueError
        Naming the file and line: a query file line that is not a positive size, query sizes
        that do not add up to the data's rows (LightGBM refuses them too), a data line that
        already holds ``qid:`` or is in LightGBM's CSV / TSV layout, and every error of
        :func:`~selrank.datasets.read_svmlight` (a label or value that is not a number, ...).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "rank.train").write_text("2 1:0.5 3:1\\n0 2:4\\n1 1:-1\\n")
    >>> _ = (d / "rank.train.query").write_text("2\\n1\\n")
    >>> s = read_lightgbm_ranking(d / "rank.train")
    >>> s.X.tolist(), s.group.tolist()
    ([[0.0, 0.5, 0.0, 1.0], [0.0, 0.0, 4.0, 0.0], [0.0, -1.0, 0.0, 0.0]], [2, 1])
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"LightGBM data file {path} does not exist")
    qfile = Path(query).expanduser() if query is not None else lightgbm_query_file(path)
    if qfile is None or not qfile.is_file():
        raise FileNotFoundError(
            f"{path}: LightGBM keeps the query sizes of a ranking file in {path}.query (one "
            "size a line); it does not exist"
        )
    sizes = _query_sizes(qfile)
    dt = float_dtype(dtype)
    sidecars = [Path(f"{path}.{x}") for x in ("weight", "init")]
    ignored = [f.name for f in sidecars if f.is_file()]
    if ignored:  # LightGBM would use them: say so rather than drop them silently
        warnings.warn(
            f"{path}: LightGBM would also read {' and '.join(ignored)} (row weights / initial "
            "scores); read_lightgbm_ranking reads the data and query files only: load them "
            "with numpy and pass sample_weight= / init_score= yourself",
            UserWarning,
            stacklevel=2,
        )
    with tempfile.TemporaryDirectory(prefix="selrank_lgb_") as tmp:
        converted = Path(tmp) / "data.txt"
        n_rows, shifted = _with_query_ids(path, sizes, qfile, converted)
        width = None if n_features is None else int(n_features) - (0 if shifted else 1)
        try:
            split = read_svmlight(converted, n_features=width, dtype=dt)
        except ValueError as exc:  # name the user's file, not the converted copy
            raise ValueError(str(exc).replace(str(converted), str(path))) from None
    X = split.X
    if not shifted:  # index j was read into column j - 1: put it at column j, as LightGBM
        X = np.zeros((split.n_rows, split.n_features + 1), dtype=dt)
        X[:, 1:] = split.X
    return RankingSplit(
        X=X,
        y=split.y,
        group=sizes,
        qid=np.repeat(np.arange(1, sizes.size + 1, dtype=np.int64), sizes),
        feature_names=tuple(f"Column_{j}" for j in range(X.shape[1])),
    )


def _with_query_ids(path: Path, sizes: np.ndarray, qfile: Path, out: Path) -> tuple[int, bool]:
    """Copy ``path`` to ``out`` with ``qid:<k>`` after each label (blank lines kept, so line
    numbers stay); when an index 0 occurs every index is shifted by one (column = index)."""
    with open_read(path) as fh:
        shift = any(_ID_ZERO.search(line.split(None, 1)[1]) for line in fh if _data(line))
    owner = np.repeat(np.arange(1, sizes.size + 1), sizes)
    total = int(sizes.sum())
    row = 0
    with open_read(path) as src, open(out, "wb") as dst:
        for lineno, raw in enumerate(src, 1):
            if not _data(raw):
                dst.write(b"\n")
                continue
            if row >= total:
                raise ValueError(
                    f"{path}, line {lineno}: the query file {qfile.name} has sizes for "
                    f"{total} rows ({sizes.size} queries), but the data file has more rows; "
                    "LightGBM refuses this too"
                )
            label, _, rest = raw.strip().partition(b" ")
            if b"\t" in label:
                label, _, more = label.partition(b"\t")
                rest = more + b" " + rest
            if b"qid:" in rest:
                raise ValueError(
                    f"{path}, line {lineno}: holds a qid: token, yet {qfile.name} gives the "
                    "query sizes; LightGBM's files carry no qid (use one or the other)"
                )
            first = rest.split(None, 1)[0] if rest.strip() else b""
            if first and b":" not in first:
                raise ValueError(
                    f"{path}, line {lineno}: expected LibSVM tokens <index>:<value>; got "
                    f"{first[:40].decode('utf-8', 'replace')!r} (LightGBM's CSV / TSV layout is "
                    "not read: convert it, or load it with numpy and pass group=)"
                )
            if shift:
                rest = _ID.sub(lambda m: b"%d:" % (int(m.group(1)) + 1), b" " + rest)
            dst.write(b"%s qid:%d %s\n" % (label, owner[row], rest.strip()))
            row += 1
    if row != total:
        raise ValueError(
            f"{path}: the query file {qfile.name} gives {sizes.size} queries of {total} rows "
            f"in all, but the data file has {row} rows; LightGBM refuses this too"
        )
    return row, shift


def _data(line: bytes) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith(b"#")
