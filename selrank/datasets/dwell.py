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
from typing import Any

import numpy as np

from ._containers import float_dtype, import_optional
from ._paths import packaged_file

__all__ = [
    "DWELL_DATASETS",
    "DWELL_FEATURES",
    "DwellDataset",
    "DwellSplit",
    "dwell_dataset",
    "load_dwell",
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


def read_session_clicks(path: str | os.PathLike):
    """Read a tab-separated ``SessionId ItemId Time`` click log (the YOOCHOOSE 100k format).

    Returns a polars DataFrame with ``session`` (int64), ``item`` (int64) and ``time_ms``
    (int64 Unix milliseconds: the source has millisecond resolution, so this is exact) in file
    order.

    Raises
    ------
    ValueError
        Naming the file and line, for a wrong header, a missing field or a value that is not a
        number.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "clicks.txt"
    >>> _ = f.write_text("SessionId\\tItemId\\tTime\\n1\\t10\\t1396860669.277\\n1\\t11\\t1396860670\\n")
    >>> read_session_clicks(f)["time_ms"].to_list()
    [1396860669277, 1396860670000]
    """
    pl = _pl()
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"click log {path} does not exist")
    # One string per line (no field splitting by polars), so that every malformed line can be
    # reported with its number; blank lines are skipped.
    lines = pl.read_csv(
        path,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        infer_schema=False,
        new_columns=["line"],
        raise_if_empty=False,
    ).with_row_index("line_no", offset=1)
    header = "SessionId\tItemId\tTime"
    first = lines["line"][0] if lines.height else None
    if first is None or first.strip() != header:
        raise ValueError(f"{path}, line 1: expected the header {header!r}; got {first!r}")
    fields = pl.col("line").str.strip_chars_end("\r").str.split("\t")

    def field(k: int, dtype: Any) -> Any:
        return fields.list.get(k, null_on_oob=True).str.strip_chars().cast(dtype, strict=False)

    body = lines.slice(1).filter(pl.col("line").str.strip_chars().str.len_bytes() > 0)
    parsed = body.select(
        "line_no",
        "line",
        fields.list.len().alias("n_fields"),
        field(0, pl.Int64).alias("session"),
        field(1, pl.Int64).alias("item"),
        (field(2, pl.Float64) * 1000.0).round(0).cast(pl.Int64).alias("time_ms"),
    )
    bad = parsed.filter(
        (pl.col("n_fields") != 3)
        | pl.any_horizontal(pl.col("session", "item", "time_ms").is_null())
    )
    if bad.height:
        line_no, text = bad.row(0)[:2]
        raise ValueError(
            f"{path}, line {line_no}: expected integer SessionId, integer ItemId and numeric "
            f"Time separated by tabs; got {text!r}"
        )
    return parsed.select("session", "item", "time_ms")


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


def _ids(clicks, column: str, name: str):
    """An int64 id column; string ids that are not integers are hashed (the same id, the same hash)."""
    pl = _pl()
    dt = clicks.schema[column]
    if dt.is_integer():
        return pl.col(column).cast(pl.Int64)
    if dt in (pl.String, pl.Categorical) or isinstance(dt, pl.Enum):
        as_int = clicks.select(pl.col(column).cast(pl.String).cast(pl.Int64, strict=False))
        if as_int.null_count().item() == clicks.select(pl.col(column).null_count()).item():
            return pl.col(column).cast(pl.String).cast(pl.Int64)
        # opaque ids (e.g. UUIDs): a stable 64-bit hash keeps equal ids equal across both logs
        return pl.col(column).cast(pl.String).hash(seed=0).reinterpret(signed=True)
    raise TypeError(f"`{name}` column {column!r} must hold integer or string ids; got {dt}")


def _clicks_frame(clicks: Any, name: str):
    """Validate a click table: polars DataFrame with session, item and time or time_ms."""
    pl = _pl()
    if not isinstance(clicks, pl.DataFrame):
        raise TypeError(f"`{name}` must be a polars DataFrame; got {type(clicks).__name__}")
    if "time_ms" not in clicks.columns and "time" in clicks.columns:
        clicks = _time_ms(clicks, name)
    missing = [c for c in ("session", "item", "time_ms") if c not in clicks.columns]
    if missing:
        raise ValueError(
            f"`{name}` needs columns session, item and time (seconds) or time_ms; "
            f"missing {missing}; got {clicks.columns}"
        )
    out = clicks.select(
        _ids(clicks, "session", name).alias("session"),
        _ids(clicks, "item", name).alias("item"),
        pl.col("time_ms").cast(pl.Int64),
    )
    if out.null_count().sum_horizontal().item():
        raise ValueError(f"`{name}` holds missing values in session, item or time")
    return out


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
    train_clicks, test_clicks : polars.DataFrame
        Columns ``session``, ``item`` and ``time`` (Unix seconds) or ``time_ms``, e.g. from
        :func:`read_session_clicks`. Session ids of the two logs are treated separately.
    dtype : float32 or float64
        Dtype of ``X``.
    name : str

    Returns
    -------
    DwellDataset

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
    train = _per_click(_clicks_frame(train_clicks, "train_clicks"))
    test = _per_click(_clicks_frame(test_clicks, "test_clicks"))
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
