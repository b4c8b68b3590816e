"""Bad files given to the SVMlight reader (issue 11): a feature id that would need more memory
than there is, refused before anything is allocated and named by file and line; truncated or
corrupt gzip streams reported with the file name."""

from __future__ import annotations

import gzip
import re
import time

import numpy as np
import pytest

pytest.importorskip("numba")

from selrank.datasets import read_svmlight, svmlight


@pytest.fixture(autouse=True)
def _compiled(tmp_path_factory):
    # load the numba kernel first, so that the timings below measure the guard, not the JIT
    read_svmlight(_two_lines(tmp_path_factory.mktemp("warm") / "warm.txt", 2))


def _two_lines(path, fid):
    path.write_text(f"0 qid:1 1:1\n1 qid:1 {fid}:2\n")
    return path


def test_feature_id_1e9_is_refused_at_once_with_file_line_and_id(tmp_path, monkeypatch):
    path = _two_lines(tmp_path / "wide.txt", 10**9)
    monkeypatch.setattr(svmlight, "_available_memory", lambda: 32 * 10**9)  # any ordinary machine
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as info:
        read_svmlight(path)
    assert time.perf_counter() - t0 < 10.0  # before: minutes, then killed for memory
    msg = str(info.value)
    assert msg.startswith(
        f"{path}, line 2: cannot allocate the dense output for feature id 1000000000: "
        "2 rows x 1000000000 features"
    )
    assert "32.0 GB of memory are available" in msg
    assert "n_features=" in msg and "load_svmlight_file" in msg


def test_guard_counts_the_feature_names_not_only_x(tmp_path, monkeypatch):
    # 2 x 1e7 float32 is 80 MB; the per-column names and bookkeeping add ~0.7 GB
    path = _two_lines(tmp_path / "names.txt", 10**7)
    x_bytes = 2 * 10**7 * 4
    monkeypatch.setattr(svmlight, "_available_memory", lambda: 4 * x_bytes)
    with pytest.raises(
        ValueError, match=r"line 2: cannot allocate the dense output for feature id 10000000:"
    ) as info:
        read_svmlight(path)
    need = float(re.search(r"bookkeeping, ([\d.]+) GB", str(info.value)).group(1)) * 1e9
    assert need > 8 * x_bytes  # the names dominate


def test_an_impossible_width_is_refused_on_any_machine(tmp_path):
    path = _two_lines(tmp_path / "absurd.txt", 10**11)  # terabytes for the names alone
    t0 = time.perf_counter()
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}, line 2: cannot allocate the dense output for feature id 100000000000:"
        ),
    ):
        read_svmlight(path)
    assert time.perf_counter() - t0 < 10.0


def test_huge_id_in_a_later_chunk_names_its_line(tmp_path, monkeypatch):
    path = tmp_path / "late.txt"
    lines = [f"{i % 3} qid:{i // 4} 1:{i} 2:0.5" for i in range(40)]
    lines[31] = f"1 qid:7 1:1 {10**9}:3"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(svmlight, "_available_memory", lambda: 32 * 10**9)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{path}, line 32: cannot allocate the dense output for feature id 1000000000:"
        ),
    ):
        read_svmlight(path, chunk_bytes=64)  # the first chunk only sees ids 1 and 2


def test_n_features_too_large_for_memory(tmp_path, monkeypatch):
    path = _two_lines(tmp_path / "ok.txt", 3)
    monkeypatch.setattr(svmlight, "_available_memory", lambda: 10**9)
    with pytest.raises(
        ValueError,
        match=re.escape(f"{path}: cannot allocate the dense output for n_features={10**9}:"),
    ):
        read_svmlight(path, n_features=10**9)


def test_a_width_that_fits_still_reads(tmp_path, monkeypatch):
    path = _two_lines(tmp_path / "fits.txt", 1000)
    monkeypatch.setattr(svmlight, "_available_memory", lambda: 10**9)
    X, y, group = read_svmlight(path)
    assert X.shape == (2, 1000) and X[1, 999] == 2.0 and group.tolist() == [2]


def _gz_file(tmp_path, n_lines=2000):
    rng = np.random.default_rng(4)
    text = "".join(
        f"{i % 3} qid:{i // 10} 1:{rng.normal():.6f} 2:{rng.normal():.6f}\n" for i in range(n_lines)
    )
    raw = gzip.compress(text.encode())
    return raw


def test_truncated_gzip_names_the_file(tmp_path):
    raw = _gz_file(tmp_path)
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(
        ValueError, match=re.escape(f"{path}: the gzip stream is truncated or corrupt")
    ) as info:
        read_svmlight(path)
    assert isinstance(info.value.__cause__, EOFError)  # before: a bare EOFError


def test_corrupt_gzip_names_the_file(tmp_path):
    raw = bytearray(_gz_file(tmp_path))
    mid = len(raw) // 2
    raw[mid : mid + 64] = bytes(64)  # zeroed block inside the deflate stream
    path = tmp_path / "corrupt.gz"
    path.write_bytes(bytes(raw))
    with pytest.raises(
        ValueError, match=re.escape(f"{path}: the gzip stream is truncated or corrupt")
    ):
        read_svmlight(path)


def test_bad_gzip_header_names_the_file(tmp_path):
    path = tmp_path / "header.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * 30)  # gzip magic, then no valid header
    with pytest.raises(
        ValueError, match=re.escape(f"{path}: the gzip stream is truncated or corrupt")
    ):
        read_svmlight(path)


def test_intact_gzip_still_reads(tmp_path):
    path = tmp_path / "fine.gz"
    path.write_bytes(_gz_file(tmp_path))
    X, y, group = read_svmlight(path)
    assert X.shape == (2000, 2) and int(group.sum()) == 2000
