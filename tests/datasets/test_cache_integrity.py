"""The binary cache of the SVMlight readers (issue 30): keyed on content, every byte verified,
memory-mapped, written with the user's umask, and never a reason to fail or to serve wrong data
(damaged, stale, concurrent or unwritable)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

from selrank.datasets import read_svmlight, read_svmlight_cached, write_svmlight

pytest.importorskip("numba")


def _file(tmp_path: Path, seed: int = 0, n_queries: int = 30, n_features: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, size=n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1), sizes)
    X = np.round(rng.random((qid.size, n_features)) * 10, 3)
    y = rng.integers(0, 5, size=qid.size)
    f = tmp_path / "data.txt"
    write_svmlight(f, X, y, qid)
    return f


def _same(a, b) -> None:
    for name in ("X", "y", "qid", "group"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def _entry(cache: Path) -> Path:
    (manifest,) = cache.rglob("manifest.json")
    return manifest.parent


def _quiet_read(f, cache, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_svmlight_cached(f, cache=cache, **kw)


def test_a_second_load_is_memory_mapped_writable_and_equal(tmp_path):
    f = _file(tmp_path)
    cache = tmp_path / "c"
    want = read_svmlight(f)
    read_svmlight_cached(f, cache=cache)
    got = _quiet_read(f, cache)
    _same(got, want)
    assert isinstance(got.X.base, np.memmap) or isinstance(got.X.base.base, np.memmap)
    got.X[0, 0] = -1.0  # copy-on-write: writable, and the cache file does not change
    _same(_quiet_read(f, cache), want)


@pytest.mark.parametrize("where", ["header", "data", "last byte"])
@pytest.mark.parametrize("array", ["X", "y", "qid", "group"])
def test_a_damaged_byte_anywhere_is_never_served(tmp_path, where, array):
    """Before: a flipped header byte or data block of X.npy was served without notice."""
    f = _file(tmp_path)
    cache = tmp_path / "c"
    want = read_svmlight(f)
    read_svmlight_cached(f, cache=cache)
    npy = _entry(cache) / f"{array}.npy"
    raw = bytearray(npy.read_bytes())
    at = {"header": 20, "data": len(raw) // 2 + 1, "last byte": len(raw) - 1}[where]
    raw[at] ^= 0x10
    npy.write_bytes(bytes(raw))
    with pytest.warns(RuntimeWarning, match=f"damaged cache entry .*{array}.npy"):
        got = read_svmlight_cached(f, cache=cache)
    _same(got, want)
    _same(_quiet_read(f, cache), want)  # rebuilt


@pytest.mark.parametrize(
    "damage",
    ["truncated", "emptied", "manifest cut", "manifest edited", "array removed", "block zeroed"],
)
def test_every_kind_of_damaged_entry_is_rebuilt(tmp_path, damage):
    f = _file(tmp_path, n_queries=400)
    cache = tmp_path / "c"
    want = read_svmlight(f)
    read_svmlight_cached(f, cache=cache)
    entry = _entry(cache)
    x = entry / "X.npy"
    if damage == "truncated":
        x.write_bytes(x.read_bytes()[:-64])
    elif damage == "emptied":
        x.write_bytes(b"")
    elif damage == "manifest cut":
        m = entry / "manifest.json"
        m.write_text(m.read_text()[:50])
    elif damage == "manifest edited":
        m = entry / "manifest.json"
        doc = json.loads(m.read_text())
        doc["arrays"]["X"]["shape"][0] -= 1
        m.write_text(json.dumps(doc))
    elif damage == "array removed":
        (entry / "qid.npy").unlink()
    else:
        raw = bytearray(x.read_bytes())
        raw[4096 : 4096 + 4096] = bytes(4096)
        x.write_bytes(bytes(raw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = read_svmlight_cached(f, cache=cache)
    _same(got, want)
    if damage != "array removed":  # a file removed mid-read is taken for a concurrent writer
        assert any("damaged cache entry" in str(w.message) for w in caught)
    _same(_quiet_read(f, cache), want)


def test_a_same_size_rewrite_in_the_middle_is_seen(tmp_path):
    """The content key: a change deep inside a file, same size, old modification time."""
    f = _file(tmp_path, n_queries=8000)
    assert f.stat().st_size > 2 << 20  # beyond the hashed head and tail
    cache = tmp_path / "c"
    read_svmlight_cached(f, cache=cache)
    st = f.stat()
    raw = f.read_bytes()
    mid = raw.index(b"\n", len(raw) // 2) + 1
    label = raw[mid : mid + 1]
    raw = raw[:mid] + (b"4" if label != b"4" else b"3") + raw[mid + 1 :]
    f.write_bytes(raw)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    _same(read_svmlight_cached(f, cache=cache), read_svmlight(f))


def test_a_file_replaced_by_another_of_the_same_size_and_time_is_seen(tmp_path):
    a = _file(tmp_path, seed=1)
    other = tmp_path / "other"
    other.mkdir()
    b = _file(other, seed=1)
    raw = bytearray(b.read_bytes())
    raw[-2:-1] = b"9" if raw[-2:-1] != b"9" else b"8"  # one digit of the last line
    cache = tmp_path / "c"
    read_svmlight_cached(a, cache=cache)
    st = a.stat()
    tmp = tmp_path / "new.txt"
    tmp.write_bytes(bytes(raw))
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, a)  # a new inode under the old name
    _same(read_svmlight_cached(a, cache=cache), read_svmlight(a))


def _worker(args):
    f, cache, seed = args
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(5):
        if rng.random() < 0.3:
            import shutil

            shutil.rmtree(cache, ignore_errors=True)
        s = read_svmlight_cached(f, cache=cache)
        out.append((float(s.X.sum()), int(s.qid.sum()), s.n_rows))
    return out


def test_concurrent_readers_and_writers_always_get_the_right_data(tmp_path):
    f = _file(tmp_path, n_queries=300)
    cache = tmp_path / "c"
    want = read_svmlight(f)
    expect = (float(want.X.sum()), int(want.qid.sum()), want.n_rows)
    with mp.get_context("spawn").Pool(3) as pool:  # spawn: no fork of a threaded process
        results = pool.map(_worker, [(f, cache, k) for k in range(6)])
    for per_worker in results:
        for got in per_worker:
            assert got[1:] == expect[1:] and got[0] == pytest.approx(expect[0])
    assert not [p for p in cache.rglob("*") if p.name.startswith(".")]  # no leftovers


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_cache_still_serves_what_it_holds_and_parses_the_rest(tmp_path):
    f = _file(tmp_path)
    cache = tmp_path / "c"
    read_svmlight_cached(f, cache=cache)
    for p in [cache, *cache.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        _same(_quiet_read(f, cache), read_svmlight(f))
        g = _file(tmp_path, seed=5)  # the same name, new content
        with pytest.warns(RuntimeWarning, match="cannot write the cache"):
            _same(read_svmlight_cached(g, cache=cache), read_svmlight(g))
    finally:
        for p in [cache, *cache.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)


def test_cache_entries_follow_the_umask(tmp_path):
    f = _file(tmp_path)
    old = os.umask(0o027)
    try:
        read_svmlight_cached(f, cache=tmp_path / "c")
    finally:
        os.umask(old)
    entry = _entry(tmp_path / "c")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o750  # mkdtemp's 0700 before
    for p in entry.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o640, p.name
