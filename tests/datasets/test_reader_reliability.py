"""Readers and loaders on damaged, growing and oversized files (issue 20), and the dwell
loader's refusals and pandas input (issue 18).

Each test names the failure it guards against: a kernel writing past its arrays when a file
grows between passes, buffers sized by raw line counts, unbounded memory on one unterminated
line, numbers read differently from trec_eval, raw polars exceptions, seconds/milliseconds
confusion, and an empty training set returned without a word.
"""

from __future__ import annotations

import gzip
import re
import tracemalloc

import numpy as np
import pytest

pytest.importorskip("numba")
pl = pytest.importorskip("polars")

from selrank.datasets import dwell_dataset, read_session_clicks, read_svmlight  # noqa: E402
from selrank.datasets import svmlight as svm  # noqa: E402
from selrank.metrics import trec  # noqa: E402
from selrank.metrics.trec import read_qrels, read_run  # noqa: E402

HEADER = "SessionId\tItemId\tTime\n"


def _peak_mb(fn):
    """Peak of Python and NumPy allocations while ``fn`` runs (MB), and its result or error."""
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as exc:  # returned to the caller to inspect
            out = exc
        return tracemalloc.get_traced_memory()[1] / 1e6, out
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------------------
# read_svmlight
# --------------------------------------------------------------------------------------


def _growing(monkeypatch, extra: str | None):
    """Make the second pass of read_svmlight see a file that changed after the first."""
    real = svm._chunks
    calls = []

    def chunks(path, *args):
        calls.append(path)
        if len(calls) == 2:
            if extra is None:
                path.write_bytes(path.read_bytes().split(b"\n", 1)[1])  # drop the first line
            else:
                with open(path, "a") as fh:
                    fh.write(extra)
        yield from real(path, *args)

    monkeypatch.setattr(svm, "_chunks", chunks)


@pytest.mark.parametrize("chunk_bytes", [16, 1 << 20])
def test_svmlight_file_growing_between_passes_is_an_error_not_a_write_past_the_arrays(
    tmp_path, monkeypatch, chunk_bytes
):
    path = tmp_path / "log.txt"
    path.write_text("".join(f"{i % 3} qid:{i // 4} 1:{i} 2:0.5\n" for i in range(40)))
    _growing(monkeypatch, "".join(f"1 qid:99 1:{i}\n" for i in range(50)))
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 41: the file changed while")):
        read_svmlight(path, chunk_bytes=chunk_bytes)


def test_svmlight_file_shrinking_between_passes_is_an_error(tmp_path, monkeypatch):
    path = tmp_path / "log.txt"
    path.write_text("".join(f"{i % 3} qid:{i // 4} 1:{i}\n" for i in range(10)))
    _growing(monkeypatch, None)
    with pytest.raises(ValueError, match="counted 10 data lines and the second finds fewer"):
        read_svmlight(path)


def test_svmlight_kernel_checks_its_bounds():
    from selrank.datasets import _svmlight_kernel as k

    buf = np.frombuffer(b"1 qid:1 1:2\n0 qid:1 1:3\n2 qid:2 1:4\n", dtype=np.uint8)
    X = np.zeros((2, 1), np.float32)  # room for two of the three rows
    y, q, lines = np.zeros(2), np.zeros(2, np.int64), np.zeros(2, np.int64)
    seen = np.full(1, -1, np.int64)
    none = np.zeros(0, np.int64)
    code, n, line, *_ = k.parse_chunk(buf, 1, 0, X, y, q, lines, seen, False, none, none, False)
    assert (code, n, line) == (k.NO_ROOM, 2, 3)
    assert X.ravel().tolist() == [2.0, 3.0]


def test_svmlight_blank_lines_cost_no_memory(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_bytes(b"\n" * 2_000_000 + b"1 qid:1 1:1 2:2\n" + b"  \r\n#c\n" * 100_000)
    peak, s = _peak_mb(lambda: read_svmlight(path, chunk_bytes=1 << 20))
    assert s.X.shape == (1, 2)
    assert peak < 8  # before: arrays for 2.2 million rows (about 80 MB)


def test_svmlight_newlines_only_refused_after_one_pass(tmp_path):
    path = tmp_path / "nl.txt.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"\n" * 3_000_000)
    peak, err = _peak_mb(lambda: read_svmlight(path, chunk_bytes=1 << 20))
    assert isinstance(err, ValueError) and str(err).startswith(f"{path} holds no data lines")
    assert peak < 8  # before: 3 million rows of arrays


def test_svmlight_one_long_line_is_refused_with_its_line(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"1 qid:1 1:1\n2 qid:1 " + b"1" * 5_000_000)  # no line break
    peak, err = _peak_mb(lambda: read_svmlight(path, chunk_bytes=4096, max_line_bytes=1 << 20))
    assert isinstance(err, ValueError)
    assert str(err).startswith(f"{path}, line 2: the line is longer than max_line_bytes=1048576")
    assert peak < 6
    # below the limit a long line still reads, whatever the chunk size
    path.write_bytes(b"1 qid:1 " + b" ".join(b"%d:1" % j for j in range(1, 30_001)) + b"\n")
    assert read_svmlight(path, chunk_bytes=64).X.shape == (1, 30_000)


def test_svmlight_bad_size_arguments(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("1 qid:1 1:1\n")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_line_bytes"):
            read_svmlight(path, max_line_bytes=bad)


def test_svmlight_error_in_a_long_line_shows_the_line_start(tmp_path):
    path = tmp_path / "e.txt"
    tokens = " ".join(f"{j}:1" for j in range(1, 5000))
    path.write_text(f"1 qid:1 {tokens} 5000:x\n")
    with pytest.raises(ValueError) as info:
        read_svmlight(path)
    msg = str(info.value)
    assert msg.startswith(
        f"{path}, line 1: the value of feature 5000 is not a number; got '5000:x'"
    )
    assert "the line reads '1 qid:1 1:1 2:1" in msg


# --------------------------------------------------------------------------------------
# TREC readers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "reads"), [("1_0", "1"), ("2e1", "2"), ("1.5", "1"), ("high", "0"), ("0x1", "0")]
)
def test_qrels_relevance_that_trec_eval_reads_otherwise_is_refused(tmp_path, rel, reads):
    path = tmp_path / "q.qrels"
    path.write_text(f"q1 0 d1 2\nq1 0 d2 {rel}\n")
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}, line 2: the relevance (4th field) must be an integer, got {rel!r} "
            f"(trec_eval would read it as {reads})"
        ),
    ):
        read_qrels(path)


def test_qrels_relevance_forms_trec_eval_reads_the_same(tmp_path):
    path = tmp_path / "q.qrels"
    path.write_text("q1 0 a 1.0\nq1 0 b +2\nq1 0 c -1\nq1 0 d 03\nq1 0 e 1.\n")
    assert read_qrels(path).to_dict() == {"q1": {"a": 1, "b": 2, "c": -1, "d": 3, "e": 1}}


@pytest.mark.parametrize(
    ("score", "reads"), [("1_0", "1.0"), ("1e", "1.0"), ("0x1p3", "0.0"), ("2.5x", "2.5")]
)
def test_run_score_that_trec_eval_reads_otherwise_is_refused(tmp_path, score, reads):
    path = tmp_path / "r.run"
    path.write_text(f"q1 Q0 d1 1 {score} t\n")
    with pytest.raises(
        ValueError,
        match=re.escape(f"got {score!r} (trec_eval would read it as {reads})"),
    ):
        read_run(path)
    path.write_text("q1 Q0 d1 1_0 1 t\n")
    with pytest.raises(ValueError, match="the rank"):
        read_run(path)


def test_run_score_forms(tmp_path):
    path = tmp_path / "r.run"
    path.write_text("q Q0 a 1 1e3 t\nq Q0 b 2 -.5 t\nq Q0 c 3 +2. t\nq Q0 d 4 -Infinity t\n")
    assert read_run(path).to_dict() == {"q": {"a": 1e3, "b": -0.5, "c": 2.0, "d": -np.inf}}


def test_trec_unterminated_line_is_linear_and_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(trec, "_BLOCK", 1024)
    monkeypatch.setattr(trec, "_MAX_LINE", 1 << 30)
    path = tmp_path / "q.qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 " + b"d" * 3_000_000 + b" 1")  # before: ~4 GB copied
    assert len(read_qrels(path)["q1"]) == 2
    monkeypatch.setattr(trec, "_MAX_LINE", 1 << 20)
    peak, err = _peak_mb(lambda: read_qrels(path))
    assert isinstance(err, ValueError) and str(err).startswith(
        f"{path}, line 2: the line is longer than 1 MiB"
    )
    assert peak < 8


# --------------------------------------------------------------------------------------
# read_session_clicks
# --------------------------------------------------------------------------------------


def _clicks(path, rows, header=HEADER, compress=False):
    data = (header + "".join(rows)).encode()
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def test_clicks_milliseconds_are_recognised(tmp_path):
    s = _clicks(tmp_path / "s.txt", ["1\t5\t1396860669.277\n", "1\t6\t1396860699.277\n"])
    ms = _clicks(tmp_path / "ms.txt", ["1\t5\t1396860669277\n", "1\t6\t1396860699277\n"])
    a, b = read_session_clicks(s), read_session_clicks(ms)
    assert a.equals(b)
    assert dwell_dataset(b, b).train.seconds.tolist() == [30.0]  # before: 30,000 s


def test_clicks_relative_or_mixed_times_are_refused_unless_the_unit_is_named(tmp_path):
    rel = _clicks(tmp_path / "rel.txt", ["1\t5\t0\n", "1\t6\t30\n", "2\t6\t45.5\n"])
    with pytest.raises(ValueError) as info:
        read_session_clicks(rel)
    msg = str(info.value)
    assert msg.startswith(f"{rel}: cannot tell whether Time is in seconds or milliseconds")
    assert "from 0 (line 2) to 45.5 (line 4)" in msg and "time_unit='s'" in msg
    assert read_session_clicks(rel, time_unit="s")["time_ms"].to_list() == [0, 30_000, 45_500]
    assert read_session_clicks(rel, time_unit="ms")["time_ms"].to_list() == [0, 30, 46]
    mixed = _clicks(tmp_path / "mixed.txt", ["1\t5\t1396860669\n", "1\t6\t1396860699000\n"])
    with pytest.raises(ValueError, match=r"from 1396860669 \(line 2\) to 1396860699000 \(line 3\)"):
        read_session_clicks(mixed)
    with pytest.raises(ValueError, match="time_unit"):
        read_session_clicks(mixed, time_unit="seconds")
    with pytest.raises(ValueError, match="beyond"):
        read_session_clicks(_clicks(tmp_path / "far.txt", ["1\t1\t1e300\n"]), time_unit="s")


@pytest.mark.parametrize(
    ("line", "where", "why"),
    [
        ("1\t\xe9\t1396860669\n", "column 3", "ItemId must be an integer; got '\xe9'"),
        ("1\t5\t13968x\n", "column 5", "Time must be a number (Unix time); got '13968x'"),
        ("1\t5\tnan\n", "column 5", "Time must be a finite number; got 'nan'"),
        ("1\t5\t\n", "column 5", "Time must be a number (Unix time); got ''"),
        ("1 5 1396860669\n", "column 15", "expected 3 tab-separated fields"),
        ("99999999999999999999\t5\t1\n", "column 1", "SessionId must be an integer"),
        (
            "1\t5\t1\t\n",
            "column 7",
            "expected 3 tab-separated fields (SessionId, ItemId, Time), got 4",
        ),
    ],
)
def test_clicks_errors_name_file_line_and_column(tmp_path, line, where, why):
    path = _clicks(tmp_path / "c.txt", ["1\t5\t1396860669\n", "\n", line])
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 4, {where}: {why}")):
        read_session_clicks(path)


def test_clicks_invalid_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "u.txt"
    path.write_bytes(HEADER.encode() + b"1\t5\t1396860669\n12\t\xff\xfe\t1396860670\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 3, column 4: ItemId must")):
        read_session_clicks(path)  # before: polars ComputeError: invalid utf-8 sequence


def test_clicks_row_limit(tmp_path):
    path = _clicks(
        tmp_path / "c.txt.gz", [f"1\t{i}\t{1396860669 + i}\n" for i in range(50)], compress=True
    )
    assert read_session_clicks(path, max_rows=50).height == 50
    with pytest.raises(
        ValueError, match=re.escape(f"{path}, line 12: the click log has more than max_rows=10")
    ):
        read_session_clicks(path, max_rows=10)
    assert read_session_clicks(path, max_rows=None).height == 50
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_rows"):
            read_session_clicks(path, max_rows=bad)


def test_clicks_layout_corner_cases(tmp_path):
    rows = ["\n", " 1 \t 5\t1396860669.5 \r\n", "\t \n", "-2\t+7\t1396860670\n", "3\t8\t1396860671"]
    path = _clicks(tmp_path / "c.txt", rows, header="\ufeffSessionId\tItemId\tTime\r\n")
    out = read_session_clicks(path)
    assert out.rows() == [(1, 5, 1396860669500), (-2, 7, 1396860670000), (3, 8, 1396860671000)]
    assert out.schema == {"session": pl.Int64, "item": pl.Int64, "time_ms": pl.Int64}
    empty = read_session_clicks(_clicks(tmp_path / "h.txt", []))
    assert empty.height == 0 and empty.columns == ["session", "item", "time_ms"]
    (tmp_path / "z.txt").write_bytes(b"")
    with pytest.raises(ValueError, match="line 1: expected the header .* the file is empty"):
        read_session_clicks(tmp_path / "z.txt")


def test_clicks_long_line_refused(tmp_path, monkeypatch):
    from selrank.datasets import dwell

    monkeypatch.setattr(dwell, "_CLICK_CHUNK", 1 << 16)
    monkeypatch.setattr(dwell, "_CLICK_MAX_LINE", 1 << 16)
    path = tmp_path / "c.txt"
    path.write_bytes(HEADER.encode() + b"1\t5\t" + b"1" * 3_000_000)
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: the line is longer than")):
        read_session_clicks(path)


def test_clicks_truncated_gzip_names_the_file(tmp_path):
    path = _clicks(
        tmp_path / "c.gz", [f"1\t{i}\t{1396860669 + i}\n" for i in range(3000)], compress=True
    )
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(ValueError, match=re.escape(f"{path}: the gzip stream is truncated")):
        read_session_clicks(path)


# --------------------------------------------------------------------------------------
# dwell_dataset
# --------------------------------------------------------------------------------------


def _log(n_sessions=30, per_session=3, seed=0):
    rng = np.random.default_rng(seed)
    session = np.repeat(np.arange(n_sessions), per_session)
    t = 1.4e9 + np.cumsum(rng.integers(1, 100, session.size)).astype(float)
    return pl.DataFrame({"session": session, "item": rng.integers(0, 7, session.size), "time": t})


@pytest.mark.parametrize("side", ["train", "test"])
def test_dwell_dataset_with_single_click_sessions_is_refused_at_the_source(side):
    good, single = _log(), _log(per_session=1)
    args = (single, good) if side == "train" else (good, single)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"`{side}_clicks` gives no dwell rows: none of its 30 sessions has a second click "
            "(30 clicks in all)"
        ),
    ):
        dwell_dataset(*args)
    with pytest.raises(ValueError, match=f"`{side}_clicks` holds no clicks"):
        dwell_dataset(*((good.head(0), good) if side == "train" else (good, good.head(0))))


def test_dwell_dataset_accepts_pandas_frames_like_polars():
    train, test = _log(seed=1), _log(seed=2)
    a = dwell_dataset(train, test)
    b = dwell_dataset(train.to_pandas(), test.to_pandas())
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.X, y.X)
        np.testing.assert_array_equal(x.y, y.y)
    # datetimes and string ids, with a non-default index, convert too
    user = train.with_columns(
        pl.from_epoch(pl.col("time"), time_unit="s").alias("time"),
        pl.col("item").cast(pl.String),
    ).to_pandas()
    user.index = user.index * 7 + 3
    c = dwell_dataset(user, test.to_pandas())
    np.testing.assert_array_equal(c.train.X, a.train.X)
    with pytest.raises(TypeError, match="polars or pandas DataFrame"):
        dwell_dataset(train.to_pandas()["time"], test)


@pytest.mark.parametrize("column", ["time", "time_ms"])
def test_dwell_dataset_non_finite_or_text_times_are_clear_errors(column):
    log = _log()
    if column == "time_ms":
        log = log.with_columns((pl.col("time") * 1000).alias("time_ms")).drop("time")
    bad = log.with_columns(
        pl.when(pl.int_range(pl.len()) == 4)
        .then(float("nan"))
        .otherwise(pl.col(column))
        .alias(column)
    )
    with pytest.raises(
        ValueError, match=f"column '{column}' must hold finite times; row 4 holds nan"
    ):
        dwell_dataset(bad, log)  # before: polars InvalidOperationError
    text = log.with_columns(pl.col(column).cast(pl.String))
    with pytest.raises(TypeError, match=f"column '{column}' must"):
        dwell_dataset(text, log)


@pytest.mark.parametrize("block", [1, 3, 7, 1 << 22])
def test_trec_line_numbers_across_blank_runs_and_blocks(tmp_path, monkeypatch, block):
    monkeypatch.setattr(trec, "_BLOCK", block)
    path = tmp_path / "q.qrels"
    path.write_bytes(b"\n\nq1 0 d1 1\n\n\n \r\nq1 0 d2 0\n" + b"\n" * 50 + b"q2 0 d3 x\n\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 58: the relevance")):
        read_qrels(path)
    path.write_bytes(path.read_bytes().replace(b"d3 x", b"d3 2"))
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
