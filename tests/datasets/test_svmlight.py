"""SVMlight / LETOR reader and writer: round trips, format corner cases, every error."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from selrank.datasets import read_svmlight, write_svmlight

pytest.importorskip("numba")
pytest.importorskip("polars")


def _ranking_arrays(rng, n_rows=300, n_features=12, dtype=np.float32):
    sizes = rng.integers(1, 20, size=n_rows)  # more than enough queries
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_rows) + 1]
    sizes[-1] -= sizes.sum() - n_rows
    qid = np.repeat(rng.permutation(10 * sizes.size)[: sizes.size], sizes)  # unsorted ids
    X = rng.standard_normal((n_rows, n_features)) * 10.0 ** rng.integers(-3, 4, n_features)
    X[rng.random(X.shape) < 0.3] = 0.0
    y = rng.integers(0, 5, size=n_rows).astype(np.float64)
    return X.astype(dtype), y, qid, sizes


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
@pytest.mark.parametrize("sparse", [False, True])
def test_round_trip(tmp_path, rng, suffix, sparse):
    X, y, qid, sizes = _ranking_arrays(rng)
    comments = np.array([f"docid = d{i} extra = {i % 7}" for i in range(X.shape[0])])
    path = tmp_path / f"data{suffix}"
    write_svmlight(path, X, y, qid, comments=comments, sparse=sparse, chunk_rows=37)
    if suffix.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    s = read_svmlight(path, keep_comments=True, n_features=X.shape[1])
    np.testing.assert_array_equal(s.X, X)
    np.testing.assert_array_equal(s.y, y)
    np.testing.assert_array_equal(s.qid, qid)
    np.testing.assert_array_equal(s.group, sizes)
    np.testing.assert_array_equal(s.comment, comments)
    np.testing.assert_array_equal(s.docid, [f"d{i}" for i in range(X.shape[0])])
    assert s.X.dtype == np.float32 and s.y.dtype == np.float64 and s.group.dtype == np.int64
    assert s.feature_names == tuple(f"f{j}" for j in range(1, X.shape[1] + 1))
    Xs, ys, gs = s
    assert Xs is s.X and ys is s.y and gs is s.group


def test_round_trip_float64_exact(tmp_path, rng):
    # doubles of every magnitude need up to 17 digits: exercises the exact slow path
    X = rng.standard_normal((200, 5)) * 10.0 ** rng.integers(-300, 300, size=(200, 5))
    X[0, 0], X[1, 1] = np.nan, -np.inf
    y = rng.normal(size=200)
    qid = np.repeat(np.arange(20), 10)
    path = tmp_path / "f64.txt"
    write_svmlight(path, X, y, qid)
    s = read_svmlight(path, dtype=np.float64)
    np.testing.assert_array_equal(s.X, X)  # NaN == NaN for assert_array_equal
    np.testing.assert_array_equal(s.y, y)


def test_number_formats_match_python_float(tmp_path):
    tokens = [
        "0",
        "-0",
        "+3",
        ".5",
        "5.",
        "1E-3",
        "1e+20",
        "-2.5e-7",
        "NaN",
        "inf",
        "-Infinity",
        "0.12345678901234567890123",
        "123456789012345678901234567890",
        "1e-320",
        "1e400",
        "0.000000000000000000000000001234",
        "007",
    ]
    line = "1 qid:1 " + " ".join(f"{j + 1}:{t}" for j, t in enumerate(tokens))
    path = tmp_path / "numbers.txt"
    path.write_text(line + "\n")
    got = read_svmlight(path, dtype=np.float64).X[0]
    np.testing.assert_array_equal(got, [float(t) for t in tokens])


def test_layout_corner_cases(tmp_path):
    text = (
        "# a comment line\r\n"
        "\r\n"
        "2\tqid:5\t3:1.5  1:2 # docid = a\r\n"
        "   \n"
        "0 qid:5 #no features at all\n"
        "1 qid:-3 2:4"  # last line without newline
    )
    path = tmp_path / "corner.txt"
    path.write_bytes(text.encode())
    for chunk in (1, 5, 16, 1 << 20):
        s = read_svmlight(path, keep_comments=True, chunk_bytes=chunk)
        np.testing.assert_array_equal(s.X, [[2, 0, 1.5], [0, 0, 0], [0, 4, 0]])
        np.testing.assert_array_equal(s.qid, [5, 5, -3])
        np.testing.assert_array_equal(s.group, [2, 1])
        np.testing.assert_array_equal(s.comment, ["docid = a", "no features at all", ""])
        np.testing.assert_array_equal(s.docid, ["a", "", ""])


def test_width_grows_in_a_later_chunk_and_n_features_pads(tmp_path):
    lines = [f"0 qid:{i // 3} 1:{i} 2:1" for i in range(50)] + ["1 qid:99 40:7 2:2"]
    path = tmp_path / "widen.txt"
    path.write_text("\n".join(lines) + "\n")
    s = read_svmlight(path, chunk_bytes=64)  # the first chunk only knows ids 1 and 2
    assert s.X.shape == (51, 40)
    np.testing.assert_array_equal(s.X[:50, 0], np.arange(50))
    np.testing.assert_array_equal(s.X[50, [1, 39]], [2, 7])
    assert np.count_nonzero(s.X[:, 2:39]) == 0
    wide = read_svmlight(path, n_features=45)
    assert wide.X.shape == (51, 45)
    np.testing.assert_array_equal(wide.X[:, :40], s.X)


def test_matches_scikit_learn(tmp_path, rng):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    X, y, qid, _ = _ranking_arrays(rng, n_rows=500, n_features=30, dtype=np.float64)
    path = tmp_path / "ref.txt"
    write_svmlight(path, X, y, qid, sparse=True)
    Xr, yr, qr = sklearn_datasets.load_svmlight_file(
        str(path), n_features=30, query_id=True, zero_based=False
    )
    s = read_svmlight(path, n_features=30, dtype=np.float64)
    np.testing.assert_array_equal(s.X, Xr.toarray())
    np.testing.assert_array_equal(s.y, yr)
    np.testing.assert_array_equal(s.qid, qr)


GOOD = "0 qid:1 1:0.5 2:1\n# a comment line does not count as data\n"
BAD_LINES = [
    ("x qid:1 1:1", "label is not a number", "'x'"),
    ("1 1:0.5", "missing query id", "'1:0.5'"),
    ("1 qid:a 1:1", "query id is not an integer", "'qid:a'"),
    ("1 qid:1.5 1:1", "query id is not an integer", "'qid:1.5'"),
    ("1 qid:1 1:abc", "value of feature 1 is not a number", "'1:abc'"),
    ("1 qid:1 1:", "value of feature 1 is not a number", "'1:'"),
    ("1 qid:1 1:1.5.2", "value of feature 1 is not a number", "'1:1.5.2'"),
    ("1 qid:1 1:1e", "value of feature 1 is not a number", "'1:1e'"),
    ("1 qid:1 2:0.5 2:0.25", "duplicate feature id 2", "2:0.5 2:0.25"),
    ("1 qid:1 0:0.5", "positive integer (ids are 1-based)", "'0:0.5'"),
    ("1 qid:1 -1:0.5", "positive integer (ids are 1-based)", "'-1:0.5'"),
    ("1 qid:1 1:2 :3", "positive integer (ids are 1-based)", "':3'"),
    ("1 qid:1 a1:3", "positive integer (ids are 1-based)", "'a1:3'"),
    ("1 qid:1 abc", "malformed feature: expected '<id>:<value>'", "'abc'"),
    ("1 qid:1 1:2\r3:4", "malformed feature", "1:2"),
]


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(("bad", "why", "shown"), BAD_LINES)
def test_malformed_line_names_file_and_line(tmp_path, bad, why, shown, compress):
    text = (GOOD + bad + "\n0 qid:1 1:1\n").encode()
    path = tmp_path / ("bad.txt.gz" if compress else "bad.txt")
    path.write_bytes(gzip.compress(text) if compress else text)
    with pytest.raises(ValueError) as err:
        read_svmlight(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}, line 3: "), msg
    assert why in msg and shown in msg, msg


def test_non_contiguous_query_names_line(tmp_path):
    path = tmp_path / "order.txt"
    path.write_text("0 qid:1 1:1\n0 qid:2 1:1\n\n0 qid:2 1:1\n0 qid:1 1:1\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 5: query id 1 reappears")):
        read_svmlight(path)


def test_feature_id_above_n_features(tmp_path):
    path = tmp_path / "range.txt"
    path.write_text("0 qid:1 1:1\n0 qid:1 5:1\n")
    with pytest.raises(
        ValueError, match=re.escape(f"{path}, line 2: feature id 5 is larger than n_features=3")
    ):
        read_svmlight(path, n_features=3)


def test_huge_feature_id_asks_for_n_features(tmp_path):
    path = tmp_path / "huge.txt"
    path.write_text("0 qid:1 1:1\n0 qid:1 999999999999999:1\n")
    with pytest.raises(ValueError, match=r"cannot allocate .* Pass `n_features=`"):
        read_svmlight(path)
    with pytest.raises(
        ValueError, match=re.escape(f"{path}, line 2: feature id 999999999999999 is larger")
    ):
        read_svmlight(path, n_features=10)


def test_empty_file_and_bad_arguments(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    with pytest.raises(ValueError, match="holds no data lines"):
        read_svmlight(empty)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        read_svmlight(tmp_path / "missing.txt")
    good = tmp_path / "good.txt"
    good.write_text(GOOD)
    with pytest.raises(TypeError, match="float32 or float64"):
        read_svmlight(good, dtype=np.int32)
    with pytest.raises(TypeError, match="n_features"):
        read_svmlight(good, n_features=2.0)
    with pytest.raises(ValueError, match="n_features"):
        read_svmlight(good, n_features=0)


def test_writer_validates(tmp_path):
    path = tmp_path / "w.txt"
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"`X` must be 2-D"):
        write_svmlight(path, np.ones(3), [0, 1, 2], [1, 1, 1])
    with pytest.raises(TypeError, match="`X` must be a numeric array"):
        write_svmlight(path, np.array([["a", "b"]]), [0], [1])
    with pytest.raises(ValueError, match=r"`y` must have shape \(3,\)"):
        write_svmlight(path, X, [0, 1], [1, 1, 1])
    with pytest.raises(ValueError, match=r"`qid` must have shape \(3,\)"):
        write_svmlight(path, X, [0, 1, 2], [1, 1])
    with pytest.raises(ValueError, match="whole numbers"):
        write_svmlight(path, X, [0, 1, 2], [1.5, 1.5, 1.5])
    with pytest.raises(ValueError, match="contiguous"):
        write_svmlight(path, X, [0, 1, 2], [1, 2, 1])
    with pytest.raises(ValueError, match="line breaks; row 1"):
        write_svmlight(path, X, [0, 1, 2], [1, 1, 1], comments=["a", "b\nc", "d"])
    with pytest.raises(ValueError, match="one string per row"):
        write_svmlight(path, X, [0, 1, 2], [1, 1, 1], comments=["a"])


def test_writer_format(tmp_path):
    path = tmp_path / "fmt.txt"
    write_svmlight(
        path, np.array([[0.1, 0.0], [2.0, -3.5]], np.float32), [1.5, 0.0], [7, 7], sparse=True
    )
    assert path.read_text() == "1.5 qid:7 1:0.1\n0 qid:7 1:2 2:-3.5\n"
