"""Loaders of the public benchmarks (MSLR-WEB10K/30K, Istella-S, MQ2007) from a user's
download, on synthetic folders written in exactly those formats, and the binary cache."""

from __future__ import annotations

import gzip
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from selrank.datasets import (
    BENCHMARKS,
    Benchmark,
    benchmark_files,
    load_benchmark,
    load_ranking_files,
    load_ranking_folder,
    read_svmlight,
    read_svmlight_cached,
    write_svmlight,
)

pytest.importorskip("numba")
pytest.importorskip("polars")


def _subset(rng, n_queries: int, first_qid: int, n_features: int, labels, sparse=False):
    sizes = rng.integers(3, 9, size=n_queries)
    qid = np.repeat(np.arange(first_qid, first_qid + n_queries), sizes)
    X = rng.integers(0, 50, size=(qid.size, n_features)).astype(np.float64)
    X[:, ::3] = np.round(rng.random((qid.size, X[:, ::3].shape[1])) * 100, 6)
    if sparse:
        X[rng.random(X.shape) < 0.7] = 0.0
    y = rng.choice(labels, size=qid.size)
    return X, y, qid


def write_fold_folder(
    root: Path,
    rng,
    *,
    folds=(1,),
    n_features=136,
    labels=(0, 1, 2, 3, 4),
    inner=None,
    gz=(),
    docids=False,
    sparse=False,
):
    """MSLR / MQ2007 layout: Fold{k}/{train,vali,test}.txt, five query-disjoint subsets in the
    official rotation (fold 1: S1-S3 / S4 / S5). Returns the subsets (X, y, qid)."""
    subsets = [_subset(rng, 4, 100 * s + 1, n_features, labels, sparse) for s in range(5)]
    for fold in folds:
        order = [(fold - 1 + j) % 5 for j in range(5)]
        parts = {"train": order[:3], "vali": [order[3]], "test": [order[4]]}
        base = root / (inner or "") / f"Fold{fold}"
        base.mkdir(parents=True, exist_ok=True)
        for name, idx in parts.items():
            X = np.concatenate([subsets[i][0] for i in idx])
            y = np.concatenate([subsets[i][1] for i in idx])
            q = np.concatenate([subsets[i][2] for i in idx])
            comments = [f"docid = GX{i:03d}-{r} inc = 1 prob = 0.5" for r, i in enumerate(q)]
            suffix = ".txt.gz" if name in gz else ".txt"
            write_svmlight(
                base / f"{name}{suffix}",
                X,
                y,
                q,
                comments=comments if docids else None,
                sparse=sparse,
            )
    return subsets


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SELRANK_CACHE_DIR", str(folder))
    return folder


def test_registry_holds_the_official_counts():
    b = BENCHMARKS
    assert (b["mslr-web10k"].n_rows, b["mslr-web10k"].n_queries) == (1_200_192, 10_000)
    assert (b["mslr-web30k"].n_rows, b["mslr-web30k"].n_queries) == (3_771_125, 31_531)
    assert (b["istella-s"].n_rows, b["istella-s"].n_queries) == (3_408_630, 33_018)
    assert (b["mq2007"].n_rows, b["mq2007"].n_queries) == (69_623, 1_692)
    assert [b[k].n_features for k in ("mslr-web10k", "istella-s", "mq2007")] == [136, 220, 46]
    assert b["istella-s"].subdir == "sample" and b["istella-s"].n_folds == 1


def test_mslr_folder_every_fold_plain_and_gzip(tmp_path, rng, cache):
    subsets = write_fold_folder(tmp_path, rng, folds=(1, 2), gz=("test",))
    ds = load_benchmark("MSLR-WEB10K", tmp_path, fold=2, verify=False)
    assert ds.name == "mslr-web10k" and ds.fold == 2
    # fold 2: train S2, S3, S4 / vali S5 / test S1
    np.testing.assert_array_equal(ds.test.qid, subsets[0][2])
    np.testing.assert_allclose(ds.test.X, subsets[0][0].astype(np.float32))
    np.testing.assert_array_equal(ds.validation.y, subsets[4][1])
    assert ds.train.X.shape == (sum(s[0].shape[0] for s in subsets[1:4]), 136)
    assert ds.train.X.dtype == np.float32
    f64 = load_benchmark("mslr_web10k", tmp_path, fold=1, dtype="float64", verify=False)
    np.testing.assert_array_equal(f64.test.X, subsets[4][0])  # exact values in float64
    assert (tmp_path / "Fold1" / "test.txt.gz").read_bytes()[:2] == b"\x1f\x8b"


def test_folder_named_after_the_release_is_found(tmp_path, rng, cache):
    write_fold_folder(tmp_path, rng, inner="MSLR-WEB30K")
    ds = load_benchmark("mslr-web30k", tmp_path, verify=False)
    assert ds.source.endswith(os.path.join("MSLR-WEB30K", "Fold1"))


def test_istella_sample_layout_sparse_lines_and_huge_values(tmp_path, rng, cache):
    sample = tmp_path / "sample"
    sample.mkdir()
    for name, first in (("train", 1), ("vali", 101), ("test", 201)):
        X, y, q = _subset(rng, 5, first, 220, (0, 1, 2, 3, 4), sparse=True)
        X[0, 119] = 1.79769313486e308  # Istella's DBL_MAX sentinel
        write_svmlight(sample / f"{name}.txt", X, y, q, sparse=True)
    ds = load_benchmark("istella-s", tmp_path, verify=False)
    assert ds.train.X.shape[1] == 220 and ds.validation is not None
    assert np.isinf(ds.train.X[0, 119])  # beyond float32: documented
    assert load_benchmark("istella-s", tmp_path, dtype="float64", verify=False).train.X[
        0, 119
    ] == pytest.approx(1.79769313486e308)
    # the `sample` folder itself works too; Istella-S has one split only
    assert load_benchmark("istella-s", sample, verify=False).test.n_rows == ds.test.n_rows
    with pytest.raises(ValueError, match="1 split"):
        load_benchmark("istella-s", tmp_path, fold=2)


def test_mq2007_keeps_docids_through_the_cache(tmp_path, rng, cache):
    write_fold_folder(tmp_path, rng, n_features=46, labels=(0, 1, 2), docids=True)
    first = load_benchmark("mq2007", tmp_path, verify=False)
    again = load_benchmark("mq2007", tmp_path, verify=False)
    assert first.test.docid is not None and first.test.docid[0].startswith("GX")
    np.testing.assert_array_equal(first.test.docid, again.test.docid)
    np.testing.assert_array_equal(first.train.X, again.train.X)
    assert any(cache.rglob("docid.npy"))


def test_missing_folder_file_and_unknown_name(tmp_path, rng, cache):
    with pytest.raises(FileNotFoundError, match="does not exist; download the data set from"):
        load_benchmark("mslr-web10k", tmp_path / "nowhere")
    write_fold_folder(tmp_path, rng)
    with pytest.raises(FileNotFoundError, match=r"no Fold3 under .*The folder holds: Fold1/"):
        load_benchmark("mslr-web10k", tmp_path, fold=3)
    (tmp_path / "Fold1" / "vali.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"lacks vali.txt .*holds: test.txt, train.txt"):
        load_benchmark("mslr-web10k", tmp_path)
    with pytest.raises(FileNotFoundError, match="lacks vali.txt"):
        benchmark_files("mslr-web10k", tmp_path)
    with pytest.raises(ValueError, match="unknown benchmark 'yahoo'"):
        load_benchmark("yahoo", tmp_path)


def test_counts_differing_from_the_release_are_refused(tmp_path, rng, cache):
    write_fold_folder(tmp_path, rng)
    with pytest.raises(ValueError, match=r"official MSLR-WEB10K has 1,200,192 rows in 10,000"):
        load_benchmark("mslr-web10k", tmp_path)


def _tiny(monkeypatch, tmp_path, rng, **kw) -> tuple[str, list]:
    """A registry entry with the counts of a small synthetic release (the same checks)."""
    subsets = write_fold_folder(tmp_path, rng, n_features=12, **kw)
    n_rows = sum(s[0].shape[0] for s in subsets)
    spec = Benchmark("tiny", "TINY", n_rows, 20, 12, (0, 1, 2, 3, 4), 5, None, False, "u")
    monkeypatch.setitem(BENCHMARKS, "tiny", spec)
    return "tiny", subsets


def test_official_counts_pass_and_a_truncated_file_is_named(tmp_path, rng, cache, monkeypatch):
    name, _ = _tiny(monkeypatch, tmp_path, rng)
    ds = load_benchmark(name, tmp_path)  # exactly the release's counts: accepted
    assert ds.train.n_queries + ds.validation.n_queries + ds.test.n_queries == 20
    test = tmp_path / "Fold1" / "test.txt"
    raw = test.read_bytes()
    cut = raw.rfind(b"\n", 0, len(raw) - 1)  # drop the last line and half of the one before
    test.write_bytes(raw[: cut - 20])
    with pytest.raises(ValueError, match=r"test.txt ends in the middle of a line: the file is"):
        load_benchmark(name, tmp_path)
    relaxed = load_benchmark(name, tmp_path, verify=False)
    assert relaxed.test.n_rows < ds.test.n_rows


def test_labels_and_overlapping_queries_are_checked(tmp_path, rng, cache, monkeypatch):
    name, _ = _tiny(monkeypatch, tmp_path, rng)
    vali = tmp_path / "Fold1" / "vali.txt"
    lines = vali.read_text().splitlines()
    lines[2] = "7" + lines[2][1:]
    vali.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"vali.txt: data row 3 \(query \d+\) has label 7"):
        load_benchmark(name, tmp_path)
    lines[2] = "1" + lines[2][1:]
    train_first = (tmp_path / "Fold1" / "train.txt").read_text().splitlines()[0]
    vali.write_text(train_first + "\n" + "\n".join(lines) + "\n")  # a train query in vali
    with pytest.raises(ValueError, match="is in both train.txt and vali.txt"):
        load_benchmark(name, tmp_path)


def test_feature_id_above_the_release_names_file_and_line(tmp_path, rng, cache):
    write_fold_folder(tmp_path, rng, n_features=46, labels=(0, 1, 2))
    test = tmp_path / "Fold1" / "test.txt"
    lines = test.read_text().splitlines()
    lines[1] += " 47:1"
    test.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"test.txt, line 2: feature id 47 is larger than"):
        load_benchmark("mq2007", tmp_path, verify=False)


# ------------------------------------------------------------------------------------------
# the cache
# ------------------------------------------------------------------------------------------
def test_cache_equals_the_text_and_follows_file_changes(tmp_path, rng):
    cache = tmp_path / "c"
    f = tmp_path / "a.txt"
    X, y, q = _subset(rng, 6, 1, 5, (0, 1, 2))
    write_svmlight(f, X, y, q)
    plain = read_svmlight(f)
    first = read_svmlight_cached(f, cache=cache)
    second = read_svmlight_cached(f, cache=cache)
    for s in (first, second):
        np.testing.assert_array_equal(s.X, plain.X)
        np.testing.assert_array_equal(s.y, plain.y)
        np.testing.assert_array_equal(s.qid, plain.qid)
        np.testing.assert_array_equal(s.group, plain.group)
    assert len(list(cache.rglob("X.npy"))) == 1
    # same size and modification time put back: the content changed, so the cache follows
    # (before: the stale arrays were served without notice)
    st = f.stat()
    f.write_bytes(f.read_bytes().replace(b"qid:1 ", b"qid:9 ", 1))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_size == st.st_size
    assert int(read_svmlight_cached(f, cache=cache).qid[0]) == 9
    # the stale entry is removed when the new one is written
    assert len(list(cache.rglob("X.npy"))) == 1
    # the cache is keyed by dtype too
    assert read_svmlight_cached(f, cache=cache, dtype="float64").X.dtype == np.float64


def test_damaged_cache_entry_is_rebuilt_with_a_warning(tmp_path, rng):
    cache = tmp_path / "c"
    f = tmp_path / "a.txt.gz"
    X, y, q = _subset(rng, 6, 1, 5, (0, 1, 2))
    write_svmlight(f, X, y, q)
    want = read_svmlight_cached(f, cache=cache).X
    (x_file,) = cache.rglob("X.npy")
    x_file.write_bytes(x_file.read_bytes()[:100])
    with pytest.warns(RuntimeWarning, match="damaged cache entry"):
        got = read_svmlight_cached(f, cache=cache).X
    np.testing.assert_array_equal(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(read_svmlight_cached(f, cache=cache).X, want)  # repaired


def test_unwritable_cache_folder_warns_and_reads(tmp_path, rng):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    f = tmp_path / "a.txt"
    X, y, q = _subset(rng, 3, 1, 4, (0, 1))
    write_svmlight(f, X, y, q)
    with pytest.warns(RuntimeWarning, match="cannot write the cache"):
        s = read_svmlight_cached(f, cache=blocker / "cache")
    with pytest.warns(RuntimeWarning, match="cannot write the cache"):  # read: no entry
        s = read_svmlight_cached(f, cache=blocker / "cache")
    np.testing.assert_array_equal(s.X, read_svmlight(f).X)
    with pytest.raises(TypeError, match="`cache` must be"):
        read_svmlight_cached(f, cache=3)


def test_generic_folder_and_single_files(tmp_path, rng, cache):
    write_fold_folder(tmp_path / "mine", rng, folds=(1, 3), n_features=8)
    ds = load_ranking_folder(tmp_path / "mine", fold=3)
    assert ds.fold == 3 and ds.train.n_features == 8
    a, b = tmp_path / "a.txt", tmp_path / "b.txt.gz"
    Xa, ya, qa = _subset(rng, 3, 1, 6, (0, 1))
    Xb, yb, qb = _subset(rng, 3, 10, 4, (0, 1))
    write_svmlight(a, Xa, ya, qa)
    write_svmlight(b, Xb, yb, qb)
    with gzip.open(b) as fh:
        assert fh.read(1)
    three = load_ranking_files(a, b, b)
    assert three.train.n_features == three.test.n_features == 6  # padded to the widest
    np.testing.assert_array_equal(three.test.X[:, 4:], 0)
    with pytest.raises(FileNotFoundError, match="the validation file"):
        load_ranking_files(a, tmp_path / "none.txt", b)


@pytest.mark.slow
def test_mq2007_at_its_official_size_passes_verification(tmp_path, rng, cache):
    """A format-exact MQ2007 fold (69,623 rows, 1,692 queries, 46 features, docids)."""
    spec = BENCHMARKS["mq2007"]
    sizes = np.full(spec.n_queries, spec.n_rows // spec.n_queries)
    sizes[: spec.n_rows - int(sizes.sum())] += 1
    qid = np.repeat(np.arange(10_000, 10_000 + spec.n_queries), sizes)
    X = np.round(rng.random((spec.n_rows, 46)), 6)
    y = rng.choice([0, 1, 2], size=spec.n_rows)
    subset = np.repeat(np.arange(spec.n_queries) * 5 // spec.n_queries, sizes)
    fold = tmp_path / "MQ2007" / "Fold1"
    fold.mkdir(parents=True)
    for name, keep in (("train", subset <= 2), ("vali", subset == 3), ("test", subset == 4)):
        docs = [f"docid = GX{r:06d} inc = 1 prob = 0.1" for r in np.flatnonzero(keep)]
        write_svmlight(fold / f"{name}.txt", X[keep], y[keep], qid[keep], comments=docs)
    ds = load_benchmark("mq2007", tmp_path)
    assert sum(s.n_rows for s in ds) == 69_623 and ds.test.docid[0].startswith("GX")
