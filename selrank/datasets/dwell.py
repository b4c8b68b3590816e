"""Per-click dwell-time data from session click logs (YOOCHOOSE / RecSys Challenge 2015).

The dwell time of a click is the gap to the next click in the same session. The last click of
a session has no next click, so it has no dwell and gives no row (it still counts towards item
popularity). Every feature of a row is computed from information available at the moment of
the click: nothing uses the row's own dwell or anything later (see :func:`dwell_dataset`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._containers import float_dtype, import_optional
from ._paths import packaged_file

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "DWELL_DATASETS",
    "DWELL_FEATURES",
    "DwellDataset",
    "DwellSplit",
    "dwell_dataset",
    "load_dwell",
    "MAX_CLICK_ROWS",
    "read_session_clicks",
]

#: Packaged click logs: name -> Parquet file under the data folder.
DWELL_DATASETS = {"yoochoose-100k": "yoochoose-100k/clicks.parquet"}

#: Columns of ``X``, in order.
DWELL_FEATURES = (
    "position",
    "session_elapsed_s",
    "prev_log_dwell",
    "hour",
    "item_repeat",
    "item_clicks_before",
    "item_dwell_count",
    "item_mean_log_dwell",
)


def _pl():
    return import_optional("polars", "selrank.datasets dwell data", "data")


@dataclass(frozen=True, eq=False)
class DwellSplit:
    """Per-click dwell rows of one period; unpacks as ``X, y``.

    Rows of a session are contiguous and in time order, sessions ordered by their first click,
    so ``qid=split.session`` gives within-session ranking.

    Attributes
    ----------
    X : ndarray of float64, shape (n_rows, 8)
        Features named by ``feature_names`` (:data:`DWELL_FEATURES`); ``NaN`` marks a
        feature with no history (``prev_log_dwell`` on a session's first click,
        ``item_mean_log_dwell`` for an item with no earlier finished dwell).
    y : ndarray of float64
        ``log1p(seconds)``.
    seconds : ndarray of float64
        Raw dwell in seconds (millisecond resolution; 0 for two clicks in the same instant).
    session, item : ndarray of int64
    time : ndarray of float64
        Unix time of the click in seconds.
    feature_names : tuple of str
    frame : polars.DataFrame
        All of the above as columns (``split, session, item, time, seconds, y`` and the
        features).
    """

    X: np.ndarray
    y: np.ndarray
    seconds: np.ndarray
    session: np.ndarray
    item: np.ndarray
    time: np.ndarray
    feature_names: tuple[str, ...]
    frame: Any = field(repr=False)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.X, self.y))

    @property
    def n_rows(self) -> int:
        return int(self.y.size)

    def __repr__(self) -> str:
        n_sessions = int(np.count_nonzero(np.diff(self.session))) + 1 if self.n_rows else 0
        return f"DwellSplit(n_rows={self.n_rows}, n_sessions={n_sessions}, n_features={self.X.shape[1]})"


@dataclass(frozen=True, eq=False)
class DwellDataset:
    """Time-split dwell data; unpacks as ``train, test``."""

    name: str
    train: DwellSplit
    test: DwellSplit
    source: str = ""

    def __iter__(self) -> Iterator[DwellSplit]:
        return iter((self.train, self.test))


#: Default row limit of :func:`read_session_clicks` (24 bytes a row: 240 MB of output).
MAX_CLICK_ROWS = 10_000_000

_CLICK_CHUNK = 8 << 20  # bytes parsed per step
_CLICK_MAX_LINE = _CLICK_CHUNK  # a click line holds three numbers: the buffer never grows
_HEADER = b"SessionId\tItemId\tTime"
_FIELD_NAMES = ("SessionId", "ItemId", "Time")
# Unix times from 1973 to 5138: 1e8 to 1e11 in seconds, 1e11 to 1e14 in milliseconds
_UNIX_S = (1e8, 1e11)
_UNIX_MS = (1e11, 1e14)
_MAX_TIME_MS = 2.0**53  # beyond this milliseconds are no longer exact in float64


def _click_line_error(path: Path, buf: np.ndarray, line: int, offset: int, why: str) -> ValueError:
    """``path, line L, column C: why; the line reads '...'`` (column counted in characters)."""
    lo = max(0, offset - _CLICK_MAX_LINE)
    before = buf[lo:offset].tobytes()
    start = lo + before.rfind(b"\n") + 1
    raw = buf[start : offset + 200].tobytes()
    stop = raw.find(b"\n")
    text = raw[: len(raw) if stop < 0 else stop].decode("utf-8", "replace").rstrip("\r")
    column = len(raw[: offset - start].decode("utf-8", "replace")) + 1
    shown = text if len(text) <= 120 else text[:117] + "..."
    return ValueError(f"{path}, line {line}, column {column}: {why}; the line reads {shown!r}")


def _click_field(buf: np.ndarray, offset: int) -> str:
    raw = buf[offset : offset + 200].tobytes()
    for sep in (b"\t", b"\n"):
        raw = raw.split(sep, 1)[0]
    return raw.rstrip(b"\r").decode("utf-8", "replace")


def read_session_clicks(
    path: str | os.PathLike,
    *,
    time_unit: str = "auto",
    max_rows: int | None = MAX_CLICK_ROWS,
) -> pl.DataFrame:
    """Read a tab-separated ``SessionId ItemId Time`` click log (the YOOCHOOSE 100k format).

    The file (plain or gzip-compressed, recognised by its first bytes) starts with the header
    line ``SessionId<TAB>ItemId<TAB>Time``; each further line is one click: two integer ids
    and a Unix time. Blank lines are skipped; spaces around a field are ignored.

    Parameters
    ----------
    path : str or path-like
    time_unit : {"auto", "s", "ms"}
        Unit of ``Time``. ``"auto"`` (default) reads Unix times from 1973 to 5138, which are
        1e8 to 1e11 in seconds and 1e11 to 1e14 in milliseconds, so the two never overlap;
        a column that is not all in one of those ranges (times relative to the start of the
        log, or a mixture of units) is refused: name the unit.
    max_rows : int or None
        Most clicks read (default :data:`MAX_CLICK_ROWS`, ten million: 240 MB of output); a
        longer log is an error naming the line where the limit is reached. ``None`` reads
        any number.

    Returns
    -------
    polars.DataFrame
        ``session`` (int64), ``item`` (int64) and ``time_ms`` (int64 Unix milliseconds: the
        source has millisecond resolution, so this is exact) in file order.

    Raises
    ------
    ValueError
        Naming the file, line and column: a wrong header, a line without exactly three
        tab-separated fields, an id that is not an integer (or does not fit into int64), a
        time that is not a finite number (text that is not UTF-8 is reported the same way), a
        line longer than 8 MB, more than ``max_rows`` clicks; naming the file: a time unit
        that cannot be told, truncated or corrupt gzip data.
    FileNotFoundError
        When ``path`` does not exist.

    Notes
    -----
    Memory: the file is parsed in 8 MB steps by a compiled kernel, so the working memory is
    fixed; the output holds 24 bytes a click, at most ``24 * max_rows`` bytes. Blank lines
    cost nothing, and a line longer than the 8 MB buffer (e.g. a file without line breaks) is
    refused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "clicks.txt"
    >>> _ = f.write_text("SessionId\\tItemId\\tTime\\n1\\t10\\t1396860669.277\\n1\\t11\\t1396860670\\n")
    >>> read_session_clicks(f)["time_ms"].to_list()
    [1396860669277, 1396860670000]
    >>> _ = f.write_text("SessionId\\tItemId\\tTime\\n1\\t10\\t1396860669277\\n")
    >>> read_session_clicks(f)["time_ms"].to_list()  # milliseconds, recognised as such
    [1396860669277]
    """
    from .svmlight import _chunks, _LongLine

    pl = _pl()
    kernel = import_optional("selrank.datasets._clicks_kernel", "read_session_clicks", "data")
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"click log {path} does not exist")
    if time_unit not in ("auto", "s", "ms"):
        raise ValueError(f"`time_unit` must be 'auto', 's' or 'ms'; got {time_unit!r}")
    if max_rows is not None and (
        isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 1
    ):
        raise ValueError(f"`max_rows` must be a positive integer or None; got {max_rows!r}")
    limit = None if max_rows is None else int(max_rows)

    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    total = 0
    line = 1
    lo: tuple[float, int] | None = None  # (time, line) of the smallest time
    hi: tuple[float, int] | None = None  # ... and of the largest
    try:
        for k, buf in enumerate(_chunks(path, _CLICK_CHUNK, kernel, _CLICK_MAX_LINE)):
            start = 0
            if k == 0:
                nl = int(buf.tobytes().find(b"\n")) if buf.size else -1
                first = buf[: len(buf) if nl < 0 else nl].tobytes().rstrip(b"\r").strip(b" ")
                if first.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
                    first = first[3:]
                if first != _HEADER:
                    got = first[:120].decode("utf-8", "replace")
                    raise ValueError(
                        f"{path}, line 1: expected the header "
                        f"{_HEADER.decode()!r} (tab-separated); got {got!r}"
                    )
                start, line = (len(buf) if nl < 0 else nl + 1), 2
            rows = int(kernel.count_rows(buf, start))
            room = rows if limit is None else min(rows, limit - total)
            session = np.empty(room, np.int64)
            item = np.empty(room, np.int64)
            time = np.empty(room, np.float64)
            line_of_row = np.empty(room, np.int64)
            code, n, next_line, offset, fld = kernel.parse_clicks(
                buf, start, line, session, item, time, line_of_row
            )
            if code == kernel.NO_ROOM:
                raise ValueError(
                    f"{path}, line {next_line}: the click log has more than max_rows={limit} "
                    "clicks. Pass a larger `max_rows=` (the output takes 24 bytes a click) or "
                    "`max_rows=None` to read it all"
                )
            if code == kernel.ERR_FIELDS:
                why = f"expected 3 tab-separated fields (SessionId, ItemId, Time), got {fld}"
                raise _click_line_error(path, buf, next_line, offset, why)
            if code != kernel.OK:
                what = (
                    "an integer"
                    if code == kernel.ERR_INT
                    else "a finite number"
                    if code == kernel.ERR_TIME_FINITE
                    else "a number (Unix time)"
                )
                why = f"{_FIELD_NAMES[fld]} must be {what}; got {_click_field(buf, offset)!r}"
                raise _click_line_error(path, buf, next_line, offset, why)
            if n:
                i, j = int(np.argmin(time)), int(np.argmax(time))
                if lo is None or time[i] < lo[0]:
                    lo = (float(time[i]), int(line_of_row[i]))
                if hi is None or time[j] > hi[0]:
                    hi = (float(time[j]), int(line_of_row[j]))
                parts.append((session[:n], item[:n], time[:n]))
            total += n
            line = next_line
    except _LongLine:
        raise ValueError(
            f"{path}, line {line}: the line is longer than {_CLICK_MAX_LINE} bytes (no line "
            "break within it): the file is not a click log or has lost its line breaks"
        ) from None
    if line == 1:  # no line at all: not even the header
        raise ValueError(
            f"{path}, line 1: expected the header {_HEADER.decode()!r}; the file is empty"
        )
    if lo is None or hi is None:  # no rows (set with the first one): a valid log without clicks
        return pl.DataFrame(schema={"session": pl.Int64, "item": pl.Int64, "time_ms": pl.Int64})
    scale = _click_time_scale(path, time_unit, lo, hi)
    frames = []
    for k, (session, item, time) in enumerate(parts):
        ms = np.rint(time * scale)
        if np.abs(ms).max() > _MAX_TIME_MS:
            bad = lo if abs(lo[0]) > abs(hi[0]) else hi
            raise ValueError(
                f"{path}, line {bad[1]}: Time {bad[0]:.17g} is beyond {_MAX_TIME_MS:.3g} "
                "milliseconds (285,000 years): not a Unix time"
            )
        frames.append(
            pl.DataFrame({"session": session, "item": item, "time_ms": ms.astype(np.int64)})
        )
        parts[k] = (session[:0], item[:0], time[:0])  # free each chunk once converted
    return pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]


def _click_time_scale(
    path: Path, time_unit: str, lo: tuple[float, int], hi: tuple[float, int]
) -> float:
    """Milliseconds per unit of ``Time``: 1000 for seconds, 1 for milliseconds."""
    if time_unit != "auto":
        return 1000.0 if time_unit == "s" else 1.0
    for unit, (a, b) in (("s", _UNIX_S), ("ms", _UNIX_MS)):
        if a <= lo[0] and hi[0] < b:
            return 1000.0 if unit == "s" else 1.0
    raise ValueError(
        f"{path}: cannot tell whether Time is in seconds or milliseconds: it runs from "
        f"{lo[0]:.17g} (line {lo[1]}) to {hi[0]:.17g} (line {hi[1]}), and Unix times (1973 to "
        "5138) are 1e8 to 1e11 in seconds and 1e11 to 1e14 in milliseconds: these are not all "
        "in one of the two. Pass time_unit='s' or time_unit='ms' (a log with times relative "
        "to its start needs one; a log that mixes units needs fixing first)"
    )


#: A ``time`` column (Unix seconds) above this is in milliseconds or finer (1e11 s is the year 5138).
_MAX_UNIX_SECONDS = 1e11


def _time_ms(clicks, name: str):
    """``time_ms`` (int64 Unix milliseconds) from a ``time`` column of Unix seconds or datetimes."""
    pl = _pl()
    col = clicks.schema["time"]
    if col == pl.Date or isinstance(col, pl.Datetime):
        # datetimes: milliseconds since the epoch, rounded as numeric seconds are
        return clicks.with_columns(
            (pl.col("time").dt.epoch("us") / 1000.0).round(0).cast(pl.Int64).alias("time_ms")
        )
    if not col.is_numeric():
        raise TypeError(
            f"`{name}` column 'time' must be Unix seconds (numbers) or datetimes; got {col}"
        )
    top = clicks.select(pl.col("time").abs().max()).item()
    if top is not None and top > _MAX_UNIX_SECONDS:
        raise ValueError(
            f"`{name}` column 'time' must be Unix seconds, but it reaches {top:.6g} (after the year "
            "5000 as seconds): it looks like milliseconds or finer. Name a millisecond column "
            "'time_ms', or divide by 1000"
        )
    return clicks.with_columns((pl.col("time") * 1000.0).round(0).cast(pl.Int64).alias("time_ms"))


def _refuse_missing_ids(clicks, column: str, name: str) -> None:
    """Refuse an id column with a missing id, naming the first row: the same check for every
    kind of id (integer, float, string, categorical), before any conversion.

    Missing is a null (``None``, pandas' ``NaN`` / ``pd.NA``), a float ``NaN``, or a string
    that is empty or only spaces. Such clicks have no session (or item): hashing or casting
    them would make every id-less click one session, and their dwell times would be gaps
    between unrelated users.
    """
    pl = _pl()
    dt = clicks.schema[column]
    col = pl.col(column)
    missing = col.is_null()
    if dt.is_float():
        missing = missing | col.is_nan()
    elif dt in (pl.String, pl.Categorical) or isinstance(dt, pl.Enum):
        missing = missing | (col.cast(pl.String).str.strip_chars() == "")
    bad = clicks.select(missing.fill_null(True).arg_true().first()).item()
    if bad is None:
        return
    n_bad = clicks.select(missing.fill_null(True).sum()).item()
    value = clicks[column][bad]
    raise ValueError(
        f"`{name}` column {column!r} has a missing id at row {bad} ({value!r}; {n_bad} of "
        f"{clicks.height} rows have none): a click without a {column} id cannot be placed, and "
        "treating the id-less clicks as one session would make their dwell times gaps between "
        "unrelated users. Drop those rows (e.g. clicks.drop_nulls(...)) or give them ids"
    )


def _ids(clicks, column: str, name: str):
    """An int64 id column, every kind of id through one path: a missing id is refused (naming
    the row) first; integers are kept, whole floats (pandas turns integer ids with missing
    values into floats) become integers, strings and categoricals that all read as integers
    become those integers, and other strings (e.g. UUIDs) a stable 64-bit hash (the same id,
    the same hash, in both logs)."""
    pl = _pl()
    dt = clicks.schema[column]
    if not (
        dt.is_integer()
        or dt.is_float()
        or dt in (pl.String, pl.Categorical)
        or isinstance(dt, pl.Enum)
    ):
        raise TypeError(f"`{name}` column {column!r} must hold integer or string ids; got {dt}")
    _refuse_missing_ids(clicks, column, name)
    if dt.is_integer():
        return pl.col(column).cast(pl.Int64)
    if dt.is_float():
        col = pl.col(column)
        frac = clicks.select((col != col.round(0)) | (col.abs() >= 2.0**53)).to_series()
        if frac.any():
            bad = int(frac.arg_true()[0])
            raise ValueError(
                f"`{name}` column {column!r} must hold integer or string ids; row {bad} holds "
                f"{clicks[column][bad]!r}"
            )
        return col.cast(pl.Int64)
    as_int = clicks.select(
        pl.col(column).cast(pl.String).str.strip_chars().cast(pl.Int64, strict=False)
    )
    if as_int.null_count().item() == 0:
        return pl.col(column).cast(pl.String).str.strip_chars().cast(pl.Int64)
    # opaque ids (e.g. UUIDs): a stable 64-bit hash keeps equal ids equal across both logs
    return pl.col(column).cast(pl.String).hash(seed=0).reinterpret(signed=True)


def _as_polars(clicks: Any, name: str):
    """A polars DataFrame from a polars or pandas DataFrame (the pandas index is dropped)."""
    pl = _pl()
    if isinstance(clicks, pl.DataFrame):
        return clicks
    if type(clicks).__module__.split(".")[0] == "pandas" and hasattr(clicks, "columns"):
        if not hasattr(clicks, "iloc") or getattr(clicks, "ndim", 2) != 2:
            raise TypeError(f"`{name}` must be a DataFrame; got a pandas {type(clicks).__name__}")
        try:
            return pl.from_pandas(clicks)
        except ImportError as exc:  # pragma: no cover - pyarrow missing for some dtypes
            raise ImportError(
                f"converting the pandas DataFrame `{name}` needs pyarrow for its column types "
                f"({exc}): pip install pyarrow, or pass a polars DataFrame"
            ) from exc
    raise TypeError(
        f"`{name}` must be a polars or pandas DataFrame with columns session, item and time "
        f"(seconds) or time_ms; got {type(clicks).__name__}"
    )


def _check_finite(clicks, column: str, name: str) -> None:
    """Refuse NaN or infinite values of a float column, naming the first row."""
    pl = _pl()
    if not clicks.schema[column].is_float():
        return
    bad = clicks.select(pl.col(column).is_finite().not_().arg_true().first()).item()
    if bad is not None:
        value = clicks[column][bad]
        raise ValueError(
            f"`{name}` column {column!r} must hold finite times; row {bad} holds {value}"
        )


def _clicks_frame(clicks: Any, name: str):
    """Validate a click table: polars or pandas DataFrame with session, item and time or time_ms."""
    pl = _pl()
    clicks = _as_polars(clicks, name)
    if clicks.height == 0:
        raise ValueError(f"`{name}` holds no clicks")
    if "time_ms" not in clicks.columns and "time" in clicks.columns:
        _check_finite(clicks, "time", name)
        clicks = _time_ms(clicks, name)
    missing = [c for c in ("session", "item", "time_ms") if c not in clicks.columns]
    if missing:
        raise ValueError(
            f"`{name}` needs columns session, item and time (seconds) or time_ms; "
            f"missing {missing}; got {clicks.columns}"
        )
    ms = clicks.schema["time_ms"]
    if not ms.is_numeric():
        raise TypeError(
            f"`{name}` column 'time_ms' must hold Unix milliseconds (numbers); got {ms}"
        )
    _check_finite(clicks, "time_ms", name)
    time_ms = pl.col("time_ms")
    out = clicks.select(
        _ids(clicks, "session", name).alias("session"),
        _ids(clicks, "item", name).alias("item"),
        (time_ms.round(0) if ms.is_float() else time_ms).cast(pl.Int64, strict=False),
    )
    if out.null_count().sum_horizontal().item():
        raise ValueError(
            f"`{name}` holds missing values in session, item or time (or a time_ms that does "
            "not fit into int64)"
        )
    return out


def _refuse_no_rows(clicks, name: str) -> None:
    """Refuse a log with no row: no clicks, or no session with a second click."""
    pl = _pl()
    if clicks.height == 0:
        raise ValueError(f"`{name}` holds no clicks")
    n_sessions = clicks.select(pl.col("session").n_unique()).item()
    raise ValueError(
        f"`{name}` gives no dwell rows: none of its {n_sessions} sessions has a second click "
        f"({clicks.height} clicks in all). A dwell is the gap to the next click in the same "
        "session, so a session of one click has none. Check the session column: an id per "
        "click (e.g. a click or event id instead of a session id) gives this"
    )


def _per_click(clicks):
    """Session-local columns; rows sorted by session start, session, time (file order on ties)."""
    pl = _pl()
    ordered = (
        clicks.with_row_index("_order")
        .with_columns(pl.col("time_ms").min().over("session").alias("_start"))
        .sort(["_start", "session", "time_ms", "_order"])
    )
    nxt = pl.col("time_ms").shift(-1).over("session")
    prv = pl.col("time_ms").shift(1).over("session")
    return ordered.with_columns(
        pl.int_range(pl.len()).over("session").alias("position"),
        ((pl.col("time_ms") - pl.col("_start")) / 1000.0).alias("session_elapsed_s"),
        ((pl.col("time_ms") - prv) / 1000.0).log1p().alias("prev_log_dwell"),
        ((pl.col("time_ms") // 3_600_000) % 24).cast(pl.Float64).alias("hour"),
        pl.int_range(pl.len()).over(["session", "item"]).alias("item_repeat"),
        ((nxt - pl.col("time_ms")) / 1000.0).alias("seconds"),
        nxt.alias("_end_ms"),
    )


def _history(events, queries):
    """Item statistics of ``events`` strictly before each query's time.

    ``events`` holds per click ``item, time_ms`` and, where its dwell is finished, the time
    it finished (``_end_ms``: the next click) and its ``log_dwell``. A click counts from its own
    time; a dwell counts only from the time it ended, so no query sees a dwell that was still
    running. At equal times the query sorts first: strictly earlier only.
    """
    pl = _pl()
    clicks = events.select(
        "item",
        pl.col("time_ms").alias("t"),
        pl.lit(1, pl.Int64).alias("c"),
        pl.lit(0, pl.Int64).alias("n"),
        pl.lit(0.0).alias("s"),
    )
    dwells = events.filter(pl.col("_end_ms").is_not_null()).select(
        "item",
        pl.col("_end_ms").alias("t"),
        pl.lit(0, pl.Int64).alias("c"),
        pl.lit(1, pl.Int64).alias("n"),
        pl.col("log_dwell").alias("s"),
    )
    asks = queries.select(
        "item",
        pl.col("time_ms").alias("t"),
        pl.lit(0, pl.Int64).alias("c"),
        pl.lit(0, pl.Int64).alias("n"),
        pl.lit(0.0).alias("s"),
        pl.col("_row"),
    )
    stacked = pl.concat(
        [
            asks,
            clicks.with_columns(pl.lit(None, pl.UInt32).alias("_row")),
            dwells.with_columns(pl.lit(None, pl.UInt32).alias("_row")),
        ],
    ).with_columns(pl.col("_row").is_null().alias("_event"))
    acc = stacked.sort(["item", "t", "_event"]).with_columns(
        pl.col(c).cum_sum().over("item").alias(c) for c in ("c", "n", "s")
    )
    return (
        acc.filter(~pl.col("_event"))
        .select(
            "_row",
            pl.col("c").cast(pl.Float64).alias("item_clicks_before"),
            pl.col("n").cast(pl.Float64).alias("item_dwell_count"),
            pl.when(pl.col("n") > 0)
            .then(pl.col("s") / pl.col("n"))
            .otherwise(float("nan"))
            .alias("item_mean_log_dwell"),
        )
        .sort("_row")
    )


def _split(frame, split_name: str, dtype: np.dtype) -> DwellSplit:
    pl = _pl()
    frame = frame.select(
        pl.lit(split_name).alias("split"),
        "session",
        "item",
        (pl.col("time_ms") / 1000.0).alias("time"),
        "seconds",
        "y",
        *[pl.col(c).cast(pl.Float64) for c in DWELL_FEATURES],
    )
    X = np.ascontiguousarray(frame.select(DWELL_FEATURES).to_numpy(), dtype=dtype)
    return DwellSplit(
        X=X,
        y=frame["y"].to_numpy(),
        seconds=frame["seconds"].to_numpy(),
        session=frame["session"].to_numpy(),
        item=frame["item"].to_numpy(),
        time=frame["time"].to_numpy(),
        feature_names=DWELL_FEATURES,
        frame=frame,
    )


def dwell_dataset(
    train_clicks: Any, test_clicks: Any, *, dtype: Any = np.float64, name: str = "clicks"
) -> DwellDataset:
    """Build per-click dwell-time splits from two click logs (train period, later test period).

    Each click with a next click in its session becomes a row with dwell
    ``seconds = next click time − click time``, target ``y = log1p(seconds)`` and features:

    ==================  =========================================================================
    position            index of the click in its session (0 = first); the session length so far
    session_elapsed_s   seconds since the session's first click
    prev_log_dwell      ``log1p`` of the gap since the previous click in the session (NaN first)
    hour                UTC hour of day of the click
    item_repeat         earlier clicks on the same item in this session
    item_clicks_before  item popularity: clicks on the item strictly before this click
    item_dwell_count    finished dwells on the item strictly before this click
    item_mean_log_dwell mean ``log1p`` dwell of those (NaN when there are none)
    ==================  =========================================================================

    The item statistics of a **training** row use only training clicks strictly earlier than
    it (expanding statistics), and a dwell enters them only once it has *finished* (at the
    next click of its session), so no row sees its own dwell or any later one. For a **test**
    row they come from the training period only (training clicks and dwells, frozen), and the
    session features from the test session's own past.

    Why ``log1p``: clicks in the same instant have a dwell of exactly 0 s; ``log1p`` maps them
    to 0 and keeps sub-second differences (noise at this resolution) small, whereas
    ``log(seconds + ε)`` would turn them into outliers at ``log ε`` whose size depends on the
    arbitrary ε and would dominate a squared or matching loss. Above a few seconds
    ``log1p(s) ≈ log(s)``, so the usual log-normal view of dwell is kept.

    Parameters
    ----------
    train_clicks, test_clicks : polars.DataFrame or pandas.DataFrame
        Columns ``session``, ``item`` and ``time`` (Unix seconds, or datetimes) or
        ``time_ms``, e.g. from :func:`read_session_clicks`. Session ids of the two logs are
        treated separately.
    dtype : float32 or float64
        Dtype of ``X``.
    name : str

    Returns
    -------
    DwellDataset

    Raises
    ------
    TypeError
        A table that is not a polars or pandas DataFrame; ids that are not integers or
        strings; times that are not numbers or datetimes.
    ValueError
        A missing column, a missing or non-finite value (naming the column and row), a
        ``time`` column that looks like milliseconds; and a log that gives no row at all
        (no clicks, or no session with a second click), which would otherwise surface only
        later as an empty training set.

    Examples
    --------
    >>> import polars as pl
    >>> tr = pl.DataFrame({"session": [1, 1, 1, 2, 2], "item": [5, 6, 5, 5, 7],
    ...                    "time": [0.0, 10.0, 40.0, 20.0, 22.0]})
    >>> te = pl.DataFrame({"session": [9, 9], "item": [5, 7], "time": [100.0, 160.0]})
    >>> ds = dwell_dataset(tr, te)
    >>> ds.train.seconds.tolist(), ds.train.session.tolist()
    ([10.0, 30.0, 2.0], [1, 1, 2])
    >>> ds.train.frame["item_clicks_before"].to_list()  # clicks on the item before each click
    [0.0, 0.0, 1.0]
    >>> ds.test.frame.select("item_clicks_before", "item_dwell_count").row(0)
    (3.0, 2.0)
    """
    pl = _pl()
    dt = float_dtype(dtype)
    checked = {
        "train_clicks": _clicks_frame(train_clicks, "train_clicks"),
        "test_clicks": _clicks_frame(test_clicks, "test_clicks"),
    }
    train, test = (_per_click(c) for c in checked.values())
    log_dwell = pl.col("seconds").log1p().alias("log_dwell")
    events = train.with_columns(log_dwell)
    out = {}
    for split_name, part in (("train", train), ("test", test)):
        part = part.with_row_index("_row")
        hist = _history(events, part)
        rows = (
            part.join(hist, on="_row", how="left")
            .filter(pl.col("seconds").is_not_null())
            .with_columns(pl.col("seconds").log1p().alias("y"))
        )
        if rows.height == 0:
            _refuse_no_rows(checked[f"{split_name}_clicks"], f"{split_name}_clicks")
        out[split_name] = _split(rows, split_name, dt)
    return DwellDataset(name, out["train"], out["test"])


def load_dwell(name: str = "yoochoose-100k", *, dtype: Any = np.float64) -> DwellDataset:
    """Load a packaged dwell-time dataset (see :func:`dwell_dataset` for the features).

    ``"yoochoose-100k"``: the RecSys Challenge 2015 click sample, 1–8 April 2014; the training
    log (``yoochoose-clicks-100k_train_full.txt``) is the train split, the later sessions of
    ``yoochoose-clicks-100k_test.txt`` the test split. Card: ``datasets/yoochoose-100k/``.

    Examples
    --------
    >>> dw = load_dwell("yoochoose-100k")
    >>> dw.train.n_rows, dw.test.n_rows
    (52484, 10152)
    >>> bool(dw.train.time.max() < dw.test.time.min())
    True
    """
    pl = _pl()
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string; got {type(name).__name__}")
    key = name.lower()
    if key not in DWELL_DATASETS:
        raise ValueError(f"unknown dwell dataset {name!r}; choose one of {sorted(DWELL_DATASETS)}")
    file = packaged_file(DWELL_DATASETS[key])
    clicks = pl.read_parquet(file)
    ds = dwell_dataset(
        clicks.filter(pl.col("split") == "train"),
        clicks.filter(pl.col("split") == "test"),
        dtype=dtype,
        name=key,
    )
    return DwellDataset(ds.name, ds.train, ds.test, source=str(file))
