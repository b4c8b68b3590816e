"""Reading and writing LETOR / SVMlight ranking files.

The format, one document per line::

    <label> qid:<query id> <feature id>:<value> <feature id>:<value> ... [# comment]

Feature ids are 1-based (column ``j`` of ``X`` holds feature ``j + 1``); a feature absent from a
line is 0, so sparse and dense files read the same. Rows of one query must be contiguous.
Blank lines and lines that start with ``#`` are skipped. Files may be gzip-compressed (detected
from their first bytes, whatever the name).

:func:`read_svmlight` parses the file in fixed-size chunks with a compiled (numba) kernel
straight into the output arrays: peak memory is the dense output plus one chunk (64 MB by
default), and the speed is that of a few passes over the bytes.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._files import open_write
from .._groups import Groups
from ._containers import RankingSplit, float_dtype, import_optional

__all__ = ["read_svmlight", "write_svmlight"]

_CHUNK_BYTES = 64 << 20
_MAX_LINE_BYTES = 64 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_strings = getattr(np, "strings", np.char)  # NumPy >= 2 string ufuncs, else the legacy module


def _kernel():
    return import_optional("selrank.datasets._svmlight_kernel", "read_svmlight", "fast")


def _open(path: Path):
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == _GZIP_MAGIC else open(path, "rb")


def _read_into(fh, view, path: Path, done: int) -> int:
    """``fh.readinto(view)``; a truncated or corrupt gzip stream is reported with the file name."""
    try:
        return fh.readinto(view)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(
            f"{path}: the gzip stream is truncated or corrupt after {done} decompressed bytes "
            f"({type(exc).__name__}: {exc}); download or copy the file again, or check it with "
            "`gzip -t`"
        ) from exc


class _LongLine(Exception):
    """Raised by :func:`_chunks` for a line longer than ``max_line_bytes``."""


def _chunks(path: Path, chunk_bytes: int, kernel, max_line_bytes: int) -> Iterator[np.ndarray]:
    """Buffers of whole lines (the last one may lack its newline), as uint8 arrays.

    The buffer is reused: each one is valid until the next is requested. A line longer than
    the buffer grows it, up to ``max_line_bytes``; a longer line raises :class:`_LongLine`
    (memory stays bounded on a file with no line breaks).
    """
    buf = np.empty(chunk_bytes, dtype=np.uint8)
    carry = 0  # bytes of an unfinished line kept at the start of `buf`
    done = 0  # bytes read so far (decompressed), for error messages
    with _open(path) as fh:
        while True:
            if carry == buf.size:
                if buf.size >= max_line_bytes:
                    raise _LongLine
                wider = np.empty(min(2 * buf.size, max_line_bytes), dtype=np.uint8)
                wider[:carry] = buf[:carry]
                buf = wider
            got = _read_into(fh, buf.data[carry:], path, done)  # memoryview of buf
            done += got
            if not got:
                if carry:
                    yield buf[:carry]
                return
            stop = carry + got
            cut = int(kernel.last_newline(buf, carry, stop))
            if cut < 0:
                carry = stop
                continue
            yield buf[: cut + 1]
            carry = stop - cut - 1
            buf[:carry] = buf[cut + 1 : stop]


def _long_line(path: Path, line: int, max_line_bytes: int) -> ValueError:
    return ValueError(
        f"{path}, line {line}: the line is longer than max_line_bytes={max_line_bytes} bytes "
        "(no line break within it): the file is not in SVMlight format or has lost its line "
        "breaks. If such long lines are real, pass a larger `max_line_bytes=`"
    )


_MESSAGES = {
    1: "the label is not a number; expected '<label> qid:<id> <feature>:<value> ...', got {tok!r}",
    2: "missing query id: expected 'qid:<integer>' after the label, got {tok!r}",
    3: "the query id is not an integer: expected 'qid:<integer>', got {tok!r}",
    4: "malformed feature: expected '<id>:<value>', got {tok!r}",
    5: "feature id must be a positive integer (ids are 1-based); got {tok!r}",
    6: "the value of feature {fid} is not a number; got {tok!r}",
    7: "duplicate feature id {fid}: each feature may appear once per line",
    8: "feature id {fid} is larger than n_features={n_features}",
}


def _fail(
    path: Path,
    code: int,
    line: int,
    buf: np.ndarray,
    offset: int,
    fid: int,
    n_features: int | None,
    kernel,
) -> ValueError:
    start = int(kernel.last_newline(buf, 0, offset)) + 1  # the line may be long: no copy of it
    head = buf[start : start + 200].tobytes().split(b"\n", 1)[0]
    text = head.decode("utf-8", "replace").rstrip("\r")
    tok = buf[offset : offset + 200].tobytes().split(b"\n", 1)[0].split(maxsplit=1)
    tok_text = tok[0].decode("utf-8", "replace") if tok else ""
    shown = text if len(text) <= 120 else text[:117] + "..."
    why = _MESSAGES[code].format(tok=tok_text, fid=fid, n_features=n_features)
    return ValueError(f"{path}, line {line}: {why}; the line reads {shown!r}")


def _changed(path: Path, line: int, n_rows: int, how: str) -> ValueError:
    return ValueError(
        f"{path}, line {line}: the file changed while it was read: the first pass counted "
        f"{n_rows} data lines and the second finds {how}. Read a copy that is no longer being "
        "written"
    )


def _first_reappearance(qid: np.ndarray) -> int:
    """Index of the first row whose query id already occurred in an earlier, separate run."""
    starts = np.flatnonzero(np.concatenate(([True], qid[1:] != qid[:-1])))
    run_ids = qid[starts]
    order = np.argsort(run_ids, kind="stable")
    s = run_ids[order]
    repeat = order[1:][s[1:] == s[:-1]]  # later runs of an id seen before
    return int(starts[repeat.min()])


def _available_memory() -> int | None:
    """Bytes of memory the process may still use (``MemAvailable``; physical memory elsewhere)."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for raw in fh:
                if raw.startswith(b"MemAvailable:"):
                    return int(raw.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _width_bytes(n_rows: int, width: int, dt: np.dtype) -> int:
    """Memory of the output: the dense ``X``, the per-column duplicate tracker (int64), the
    ``feature_names`` tuple of ``"f<j>"`` strings and the per-row ``y``, ``qid`` and line
    numbers (8 bytes each)."""
    name = sys.getsizeof(f"f{width}") + 8  # the longest name plus its tuple slot
    return n_rows * width * dt.itemsize + width * 8 + width * name + 24 * n_rows


def _line_of(buf: np.ndarray, offset: int, first_line: int, kernel) -> int:
    return first_line + int(kernel.count_lines(buf[:offset]))


def _check_width(
    path: Path, line: int | None, width: int, n_rows: int, dt: np.dtype, held: int = 0
) -> None:
    """Refuse, before allocating, a width whose arrays do not fit into the available memory.

    ``line`` is the line of the feature id that set the width (``None`` when the width comes
    from ``n_features=``); ``held`` is memory already allocated that stays alive while the
    wider arrays are built.
    """
    need = _width_bytes(n_rows, width, dt) + held
    avail = _available_memory()
    if avail is None or need <= avail:
        return
    if line is None:
        where, fix = (
            f"{path}: cannot allocate the dense output for n_features={width}",
            "Pass a smaller `n_features=`",
        )
    else:
        where = f"{path}, line {line}: cannot allocate the dense output for feature id {width}"
        fix = (
            "If the id is a typo, fix that line. Pass `n_features=` to fix the width (a larger id "
            "is then reported with its line)"
        )
    raise ValueError(
        f"{where}: {n_rows} rows x {width} features need, with the per-feature names and "
        f"bookkeeping, {need / 1e9:.1f} GB and {avail / 1e9:.1f} GB of memory are available. "
        f"{fix}. read_svmlight has no sparse output: for genuinely sparse data use a sparse "
        "reader such as sklearn.datasets.load_svmlight_file(path, query_id=True)"
    )


def _dense(path: Path, n_rows: int, width: int, dt: np.dtype) -> np.ndarray:
    """Zero output array; a clear error when a (malformed) huge feature id makes it too big."""
    try:
        return np.zeros((n_rows, width), dtype=dt)
    except (MemoryError, ValueError) as exc:
        size = n_rows * width * dt.itemsize / 1e9
        raise ValueError(
            f"{path}: cannot allocate the dense output of {n_rows} rows x {width} features "
            f"({size:.1f} GB): the largest feature id in the file is {width}. Pass "
            "`n_features=` to bound the width (a larger id is then reported with its line)."
        ) from exc


def read_svmlight(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    keep_comments: bool = False,
    dtype: Any = np.float32,
    chunk_bytes: int = _CHUNK_BYTES,
    max_line_bytes: int = _MAX_LINE_BYTES,
) -> RankingSplit:
    """Read a LETOR / SVMlight file with query ids into dense arrays.

    Parameters
    ----------
    path : str or path-like
        Plain or gzip-compressed file.
    n_features : int, optional
        Number of columns of ``X``. By default the largest feature id in the file; give it to
        read several files into the same width (a feature id above it is an error).
    keep_comments : bool
        Keep the text after ``#`` on each line as ``comment`` and, where it names one
        (``docid = GX008-86-4444840``), the document id as ``docid``.
    dtype : float32 or float64
        Dtype of ``X``. Values are parsed exactly (correctly rounded) to float64 first.
    chunk_bytes : int
        Bytes read per step; peak memory is the output plus about this much.
    max_line_bytes : int
        Longest line accepted where it exceeds ``chunk_bytes`` (64 MiB by default: about
        five million dense features). A line longer than both, e.g. a file with no line
        breaks, is an error naming its line, so memory stays at the output plus
        ``max(chunk_bytes, max_line_bytes)``.

    Returns
    -------
    RankingSplit
        ``X`` (dense, absent features are 0), ``y`` (float64 labels), ``group`` (query sizes
        in row order), ``qid``, ``feature_names`` (``"f1"``, ``"f2"``, ...), and ``comment`` /
        ``docid`` when asked for. Unpacks as ``X, y, group``.

    Raises
    ------
    ValueError
        Naming the file and line: a label, query id or value that is not a number, a missing
        ``qid:``, a token that is not ``<id>:<value>``, a feature id below 1 or above
        ``n_features``, a feature repeated on one line, or a query whose rows are not
        contiguous. Also, before anything is allocated, a feature id (or ``n_features``)
        whose dense output, duplicate tracker and feature names would not fit into the
        available memory (naming the line of the id); a line longer than
        ``max_line_bytes``; a file that changed while it was read; and a truncated or
        corrupt gzip stream (naming the file).
    FileNotFoundError
        When ``path`` does not exist.

    Notes
    -----
    Memory: the output is sized from the number of *data* lines (blank and comment lines
    cost nothing) counted in a first pass; the parser checks every write against that size,
    so a file that grows or shrinks between the passes (a log still being written) is an
    error, never a write past the arrays or a silently different result.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.txt"
    >>> _ = f.write_text("2 qid:1 1:0.5 3:1 #docid = a\\n0 qid:1 2:4\\n1 qid:7 1:-1\\n")
    >>> X, y, group = read_svmlight(f)
    >>> X
    array([[ 0.5,  0. ,  1. ],
           [ 0. ,  4. ,  0. ],
           [-1. ,  0. ,  0. ]], dtype=float32)
    >>> y.tolist(), group.tolist()
    ([2.0, 0.0, 1.0], [2, 1])
    >>> read_svmlight(f, keep_comments=True).docid.tolist()
    ['a', '', '']
    """
    kernel = _kernel()
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"SVMlight file {path} does not exist")
    dt = float_dtype(dtype)
    fixed = n_features is not None
    if fixed:
        if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer):
            raise TypeError(f"`n_features` must be an int or None; got {n_features!r}")
        if n_features < 1:
            raise ValueError(f"`n_features` must be >= 1; got {n_features}")
    for arg, value in (("chunk_bytes", chunk_bytes), ("max_line_bytes", max_line_bytes)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"`{arg}` must be an integer >= 1; got {value!r}")
    chunk_bytes, max_line_bytes = int(chunk_bytes), max(int(max_line_bytes), int(chunk_bytes))

    # Pass 1: count the data lines (blank and comment lines are not rows) and size the width
    # from the first chunk, so the output is allocated once, at its final size.
    n_rows = 0
    n_newlines = 0
    width = 0 if n_features is None else int(n_features)
    width_line = 1  # line of the largest id of the first chunk (for the memory guard)
    try:
        for k, buf in enumerate(_chunks(path, chunk_bytes, kernel, max_line_bytes)):
            rows, newlines = kernel.count_rows(buf)
            if k == 0 and not fixed:
                fid, at = kernel.max_feature_id(buf)
                width = int(fid)
                width_line = _line_of(buf, int(at), 1, kernel) if at >= 0 else 1
            n_rows += int(rows)
            n_newlines += int(newlines)
    except _LongLine:
        raise _long_line(path, n_newlines + 1, max_line_bytes) from None
    if n_rows == 0:
        raise ValueError(
            f"{path} holds no data lines (expected '<label> qid:<id> <id>:<value> ...')"
        )
    _check_width(path, None if fixed else width_line, width, n_rows, dt)
    X = _dense(path, n_rows, width, dt)
    y = np.empty(n_rows, dtype=np.float64)
    qid = np.empty(n_rows, dtype=np.int64)
    line_of_row = np.empty(n_rows, dtype=np.int64)
    seen = np.full(width, -1, dtype=np.int64)
    c_start = np.zeros(n_rows if keep_comments else 0, dtype=np.int64)
    c_stop = np.zeros_like(c_start)
    comments: list[np.ndarray] = []

    # Pass 2: parse.
    row = 0
    line = 1
    try:
        for buf in _chunks(path, chunk_bytes, kernel, max_line_bytes):
            while True:
                code, n_done, next_line, offset, fid = kernel.parse_chunk(
                    buf,
                    line,
                    row,
                    X,
                    y,
                    qid,
                    line_of_row,
                    seen,
                    fixed,
                    c_start,
                    c_stop,
                    keep_comments,
                )
                if code != kernel.NEED_WIDTH:
                    break
                # A later chunk holds a larger feature id than the first one: widen once for it.
                top, at = kernel.max_feature_id(buf)
                if int(top) > int(fid):
                    width, bad_line = int(top), _line_of(buf, int(at), line, kernel)
                else:
                    width, bad_line = int(fid), next_line
                _check_width(path, bad_line, width, n_rows, dt, held=X.nbytes + seen.nbytes)
                wider = _dense(path, n_rows, width, dt)
                wider[:, : X.shape[1]] = X
                X = wider
                seen = np.full(width, -1, dtype=np.int64)
            if code == kernel.NO_ROOM:
                raise _changed(path, next_line, n_rows, "more")
            if code != kernel.OK:
                raise _fail(path, code, next_line, buf, offset, fid, n_features, kernel)
            if keep_comments:
                s, e = c_start[row : row + n_done], c_stop[row : row + n_done]
                out = np.zeros((n_done, max(1, int(kernel.comment_length(buf, s, e)))), np.uint8)
                kernel.gather_comments(buf, s, e, out)
                comments.append(out.view(f"S{out.shape[1]}").reshape(-1))
            row += n_done
            line = next_line
    except _LongLine:
        raise _long_line(path, line, max_line_bytes) from None
    if row != n_rows:
        raise _changed(path, line, n_rows, "fewer")
    X, y, qid, line_of_row = X[:row], y[:row], qid[:row], line_of_row[:row]

    groups = Groups.from_ids(qid)
    if not groups.is_grouped:
        bad = _first_reappearance(qid)
        raise ValueError(
            f"{path}, line {int(line_of_row[bad])}: query id {int(qid[bad])} reappears after "
            "other queries; the rows of a query must be contiguous (sort the file by qid)"
        )
    comment = docid = None
    if keep_comments:
        comment = _strings.decode(np.concatenate(comments), "utf-8", "replace")
        docid = _docids(comment)
    return RankingSplit(
        X=X,
        y=y,
        group=groups.sizes,
        qid=qid,
        feature_names=tuple(f"f{j + 1}" for j in range(X.shape[1])),
        docid=docid,
        comment=comment,
    )


def _docids(comment: np.ndarray) -> np.ndarray | None:
    """``docid = X`` from LETOR comments ('' where a row names none); None if no row does."""
    pl = import_optional("polars", "extracting document ids", "data")
    ids = pl.Series(comment).str.extract(r"docid\s*=\s*(\S+)", 1)
    if ids.null_count() == ids.len():
        return None
    return ids.fill_null("").to_numpy().astype(str)


def _as_2d_numeric(X: Any) -> np.ndarray:
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`X` must be a numeric array; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"`X` must be 2-D (n_rows, n_features); got shape {arr.shape}")
    return arr


def write_svmlight(
    path: str | os.PathLike,
    X: Any,
    y: Any,
    qid: Any,
    *,
    comments: Sequence[str] | np.ndarray | None = None,
    sparse: bool = False,
    chunk_rows: int = 50_000,
) -> None:
    """Write ranking data as a LETOR / SVMlight file (gzip-compressed if ``path`` ends in .gz).

    Parameters
    ----------
    path : str or path-like
    X : array-like, shape (n_rows, n_features)
        Features; column ``j`` is written as feature id ``j + 1``. Each value is written in
        the shortest form that reads back to the same number in the dtype of ``X``.
    y : array-like, shape (n_rows,)
        Labels (written as integers when they all are).
    qid : array-like of int, shape (n_rows,)
        Query id per row; the rows of a query must be contiguous.
    comments : sequence of str, optional
        Written after ``#`` on each line (no newlines allowed).
    sparse : bool
        Leave out zero values (they read back as 0).
    chunk_rows : int
        Rows formatted per step (bounds the memory used).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> write_svmlight(f, [[0.5, 0.0], [1.25, 3.0]], [1, 0], [4, 4], comments=["a", "b"])
    >>> print(f.read_text(), end="")
    1 qid:4 1:0.5 2:0 #a
    0 qid:4 1:1.25 2:3 #b
    >>> read_svmlight(f).X.tolist()
    [[0.5, 0.0], [1.25, 3.0]]
    """
    pl = import_optional("polars", "write_svmlight", "data")
    X = _as_2d_numeric(X)
    n = X.shape[0]
    y = np.asarray(y)
    if y.dtype.kind not in "biuf":
        raise TypeError(f"`y` must be numeric; got dtype {y.dtype}")
    if y.shape != (n,):
        raise ValueError(f"`y` must have shape ({n},) to match `X` {X.shape}; got {y.shape}")
    q = np.asarray(qid)
    if q.dtype.kind not in "biuf":
        raise TypeError(f"`qid` must hold integers; got dtype {q.dtype}")
    if q.shape != (n,):
        raise ValueError(f"`qid` must have shape ({n},) to match `X` {X.shape}; got {q.shape}")
    if q.dtype.kind == "f":
        if not np.all(np.isfinite(q) & (q == np.round(q))):
            raise ValueError("`qid` must hold whole numbers; got non-integer values")
        q = q.astype(np.int64)
    if n:
        Groups.from_ids(q, require_contiguous=True)
    if comments is not None:
        c = np.asarray(comments, dtype=str)
        if c.shape != (n,):
            raise ValueError(f"`comments` must have one string per row ({n}); got shape {c.shape}")
        broken = (_strings.find(c, "\n") >= 0) | (_strings.find(c, "\r") >= 0)
        if broken.any():
            bad = int(np.flatnonzero(broken)[0])
            raise ValueError(f"`comments` must not contain line breaks; row {bad} does")
    else:
        c = None
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    label_int = y.dtype.kind in "biu" or bool(np.all(np.isfinite(y) & (y == np.round(y))))
    if y.dtype.kind == "b" or (y.dtype.kind == "f" and label_int):
        y = y.astype(np.int64)
    if int(chunk_rows) < 1:
        raise ValueError(f"`chunk_rows` must be >= 1; got {chunk_rows}")

    names = [f"c{j}" for j in range(X.shape[1])]

    def number(col: Any) -> Any:
        # shortest round-trip text of the column's own dtype, without a trailing ".0"
        return col.cast(pl.String).str.strip_suffix(".0")

    parts = [number(pl.col("y")), pl.lit("qid:") + pl.col("qid").cast(pl.String)]
    for j, name in enumerate(names):
        token = pl.lit(f"{j + 1}:") + number(pl.col(name))
        parts.append(pl.when(pl.col(name) != 0).then(token) if sparse else token)
    if c is not None:
        parts.append(pl.lit("#") + pl.col("comment"))
    line = pl.concat_str(parts, separator=" ", ignore_nulls=True).alias("line")

    path = Path(path).expanduser()
    with open_write(path) as fh:  # gzip when the name ends in .gz (selrank._files)
        for lo in range(0, n, int(chunk_rows)):
            hi = min(n, lo + int(chunk_rows))
            frame = pl.from_numpy(X[lo:hi], schema=names, orient="row").with_columns(
                pl.Series("y", y[lo:hi]), pl.Series("qid", q[lo:hi])
            )
            if c is not None:
                frame = frame.with_columns(pl.Series("comment", c[lo:hi]))
            text = io.BytesIO()
            frame.select(line).write_csv(text, include_header=False, quote_style="never")
            fh.write(text.getvalue())
