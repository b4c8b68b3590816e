"""Fuzzing every file reader and the dwell loader (issue 20): generated valid files read back
the values that were written, and arbitrary or mutated bytes (plain or gzip) end in a result
or in a ``ValueError`` that names the file -- never another exception, a crash or a hang.

Bounded time: a few dozen examples per reader, no deadline per example (the first calls
compile the numba kernels); the whole module runs in well under a minute.
"""

from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
pl = pytest.importorskip("polars")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from selrank.datasets import (  # noqa: E402
    dwell_dataset,
    read_session_clicks,
    read_svmlight,
    write_svmlight,
)
from selrank.metrics.trec import read_qrels, read_run  # noqa: E402

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_DIR = Path(tempfile.mkdtemp(prefix="selrank-fuzz-"))


def _write(name: str, data: bytes, compress: bool) -> Path:
    path = _DIR / (name + (".gz" if compress else ""))
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return path


def _outcome(reader, path: Path, **kwargs):
    """The reader's result, or None after a ValueError that names the file; anything else fails."""
    try:
        return reader(path, **kwargs)
    except ValueError as exc:
        assert str(exc).startswith(str(path)), f"error does not name the file: {exc}"
        assert "changed while it was read" not in str(exc)  # the two passes agree on the rows
        return None


# Mutations of a valid file: flip, insert, delete bytes, cut the tail (also of the gzip).
_noise = st.sampled_from(b"0123456789:#.-+eE \t\r\nqid\x00\xff\xe9infa_x")


@st.composite
def _mutated(draw, valid: bytes) -> bytes:
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(_noise)
        elif kind == "insert":
            data[at:at] = bytes(draw(st.lists(_noise, min_size=1, max_size=8)))
        elif kind == "delete" and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "cut":
            del data[at:]
    return bytes(data)


# --------------------------------------------------------------------------------------
# SVMlight
# --------------------------------------------------------------------------------------

_finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def _svmlight_data(draw):
    n_rows = draw(st.integers(1, 12))
    n_features = draw(st.integers(1, 6))
    X = np.array(
        draw(st.lists(_finite, min_size=n_rows * n_features, max_size=n_rows * n_features))
    )
    y = np.array(draw(st.lists(st.integers(-3, 30), min_size=n_rows, max_size=n_rows)), float)
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=n_rows))
    qid = np.repeat(np.arange(len(sizes)) * 7 - 3, sizes)[:n_rows]
    qid = np.concatenate([qid, np.full(n_rows - qid.size, qid[-1] + 1)])
    return X.reshape(n_rows, n_features), y, qid.astype(np.int64)


@FUZZ
@given(_svmlight_data(), st.booleans(), st.booleans(), st.sampled_from([8, 64, 1 << 16]))
def test_svmlight_written_files_read_back(data, sparse, compress, chunk):
    X, y, qid = data
    path = _DIR / ("w.txt.gz" if compress else "w.txt")
    write_svmlight(path, X, y, qid, sparse=sparse)
    s = read_svmlight(path, n_features=X.shape[1], dtype=np.float64, chunk_bytes=chunk)
    np.testing.assert_array_equal(s.X, X)
    np.testing.assert_array_equal(s.y, y)
    np.testing.assert_array_equal(s.qid, qid)


_SVM_VALID = b"2 qid:1 1:0.5 3:1 # docid = a\n0 qid:1 2:4\n\n1 qid:7 1:-1e-3 2:inf\n"


@FUZZ
@given(st.data(), st.booleans(), st.sampled_from([8, 1 << 16]))
def test_svmlight_mutated_files(data, compress, chunk):
    raw = data.draw(_mutated(_SVM_VALID))
    if compress and data.draw(st.booleans()):
        blob = gzip.compress(raw, mtime=0)
        path = _write("m.txt", blob[: data.draw(st.integers(2, len(blob)))], False)
    else:
        path = _write("m.txt", raw, compress)
    s = _outcome(read_svmlight, path, chunk_bytes=chunk, keep_comments=True)
    if s is not None:
        assert s.X.shape[0] == s.y.shape[0] == s.qid.shape[0] == int(s.group.sum())
        assert s.X.shape[0] <= raw.count(b"\n") + 1


@FUZZ
@given(st.binary(max_size=300))
def test_svmlight_arbitrary_bytes(raw):
    _outcome(read_svmlight, _write("b.txt", raw, False), chunk_bytes=16)


# --------------------------------------------------------------------------------------
# TREC
# --------------------------------------------------------------------------------------

_token = st.text(st.sampled_from("abcXYZ019-_./"), min_size=1, max_size=6)


@FUZZ
@given(
    st.dictionaries(_token, st.dictionaries(_token, st.integers(-2, 20), min_size=1), min_size=1),
    st.booleans(),
)
def test_qrels_generated_files_read_back(qrels, compress):
    text = "".join(f"{q}\t0 {d}  {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    assert read_qrels(_write("g.qrels", text.encode(), compress)).to_dict() == qrels


@FUZZ
@given(
    st.dictionaries(
        _token,
        st.dictionaries(_token, st.floats(allow_nan=False, width=64), min_size=1),
        min_size=1,
    ),
    st.booleans(),
)
def test_run_generated_files_read_back(run, compress):
    text = "".join(
        f"{q} Q0 {d} {k + 1} {s!r} tag\n"
        for q, docs in run.items()
        for k, (d, s) in enumerate(docs.items())
    )
    assert read_run(_write("g.run", text.encode(), compress)).to_dict() == run


def _atol(field: bytes) -> int:
    digits = field.lstrip(b"+-")
    n = len(digits) - len(digits.lstrip(b"0123456789"))
    value = int(digits[:n] or b"0")
    return -value if field.startswith(b"-") else value


@FUZZ
@given(st.data(), st.booleans())
def test_trec_mutated_files(data, compress):
    qrels_valid = b"q1 0 d1 2\nq1 0 d2 0\n# note\nq2 0 d7 1\n"
    run_valid = b"q1 Q0 d1 1 1.5 bm25\nq1 Q0 d3 2 0.2 bm25\nq2 Q0 d7 1 -1 bm25\n"
    qrels = _outcome(read_qrels, _write("m.qrels", data.draw(_mutated(qrels_valid)), compress))
    raw = data.draw(_mutated(run_valid))
    run = _outcome(read_run, _write("m.run", raw, compress))
    # what is accepted is what trec_eval reads: every relevance equals C's atol of its field
    if qrels is not None:
        path = _DIR / ("m.qrels.gz" if compress else "m.qrels")
        text = gzip.decompress(path.read_bytes()) if compress else path.read_bytes()
        for line in text.split(b"\n"):
            f = line.split()
            if len(f) == 4 and not f[0].startswith(b"#"):
                assert qrels[f[0].decode()][f[2].decode()] == _atol(f[3])
    if run is not None:
        assert all(not math.isnan(s) for docs in run.values() for s in docs.values())


@FUZZ
@given(st.binary(max_size=300))
def test_trec_arbitrary_bytes(raw):
    _outcome(read_qrels, _write("b.qrels", raw, False))
    _outcome(read_run, _write("b.run", raw, False))


# --------------------------------------------------------------------------------------
# Click logs and dwell_dataset
# --------------------------------------------------------------------------------------

_HEADER = b"SessionId\tItemId\tTime\n"


@st.composite
def _click_rows(draw):
    n = draw(st.integers(1, 15))
    session = draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n))
    item = draw(st.lists(st.integers(0, 2**62), min_size=n, max_size=n))
    ms = draw(st.lists(st.integers(10**12, 2 * 10**12), min_size=n, max_size=n))
    return session, item, ms


@FUZZ
@given(_click_rows(), st.booleans(), st.booleans())
def test_clicks_generated_files_read_back(rows, in_ms, compress):
    session, item, ms = rows
    times = [str(t) if in_ms else f"{t // 1000}.{t % 1000:03d}" for t in ms]
    body = "".join(f"{s}\t{i}\t{t}\n" for s, i, t in zip(session, item, times))
    out = read_session_clicks(_write("g.clicks", _HEADER + body.encode(), compress))
    assert out["session"].to_list() == session
    assert out["item"].to_list() == item
    assert out["time_ms"].to_list() == ms


_CLICKS_VALID = _HEADER + b"1\t10\t1396860669.277\n1\t11\t1396860670\n\n2\t10\t1396860700.5\n"


@FUZZ
@given(st.data(), st.booleans(), st.sampled_from(["auto", "s", "ms"]))
def test_clicks_mutated_files(data, compress, unit):
    raw = data.draw(_mutated(_CLICKS_VALID))
    out = _outcome(read_session_clicks, _write("m.clicks", raw, compress), time_unit=unit)
    if out is not None:
        assert out.schema == {"session": pl.Int64, "item": pl.Int64, "time_ms": pl.Int64}
        assert out.height <= raw.count(b"\n")


@FUZZ
@given(st.binary(max_size=200))
def test_clicks_arbitrary_bytes(raw):
    _outcome(read_session_clicks, _write("b.clicks", raw, False))
    _outcome(read_session_clicks, _write("h.clicks", _HEADER + raw, False))


_values = st.one_of(
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.text(max_size=3),
)


@settings(FUZZ, max_examples=12)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.floats(0, 1e6)), max_size=12),
    st.lists(st.tuples(_values, _values, _values), max_size=4),
    st.booleans(),
)
def test_dwell_dataset_on_generated_frames(clicks, junk, as_pandas):
    """A valid log gives one row per click but the last of each session; junk rows (NaN,
    None, text, infinities) are refused with a ValueError or TypeError."""
    schema = {"session": pl.Int64, "item": pl.Int64, "time": pl.Float64}
    good = pl.DataFrame(clicks, schema=schema, orient="row")
    frame = good.to_pandas() if as_pandas else good
    try:
        ds = dwell_dataset(frame, frame)
    except ValueError as exc:
        assert "no dwell rows" in str(exc) or "holds no clicks" in str(exc)
        assert good.height == good["session"].n_unique()
    else:
        assert ds.train.n_rows == good.height - good["session"].n_unique()
        assert np.all(ds.train.seconds >= 0) and np.all(np.isfinite(ds.train.y))
    if junk:
        mixed = pl.DataFrame(
            {
                k: [str(r[j]) for r in clicks + junk]
                for j, k in enumerate(["session", "item", "time"])
            }
        )
        with pytest.raises((ValueError, TypeError)):
            dwell_dataset(mixed, mixed)
