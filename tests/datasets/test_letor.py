"""Packaged LETOR data (counts, fold protocol, cards) and reading users' LETOR directories."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from selrank.datasets import (
    fold_subsets,
    load_letor,
    read_svmlight,
    write_svmlight,
)
from selrank.datasets._paths import packaged_file

pl = pytest.importorskip("polars")
pytest.importorskip("numba")

# Counts documented with the original data (shared/data/README.md).
EXPECTED = {
    "mq2008": {"rows": 15_211, "queries": 784, "features": 46, "labels": [12_279, 2_001, 931]},
    "ohsumed": {"rows": 16_140, "queries": 106, "features": 45, "labels": [11_303, 2_585, 2_252]},
}
# The official LETOR 4.0 rotation, as printed in the dataset's readme.
PROTOCOL = {
    1: ((1, 2, 3), 4, 5),
    2: ((2, 3, 4), 5, 1),
    3: ((3, 4, 5), 1, 2),
    4: ((4, 5, 1), 2, 3),
    5: ((5, 1, 2), 3, 4),
}
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "letor"


def test_fold_table():
    assert {k: fold_subsets(k) for k in range(1, 6)} == PROTOCOL


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_packaged_counts(name):
    exp = EXPECTED[name]
    ds = load_letor(name.upper(), fold=1)  # names are case-insensitive
    splits = [ds.train, ds.validation, ds.test]
    assert sum(s.n_rows for s in splits) == exp["rows"]
    assert sum(s.n_queries for s in splits) == exp["queries"]
    y = np.concatenate([s.y for s in splits])
    np.testing.assert_array_equal(np.bincount(y.astype(int)), exp["labels"])
    for s in splits:
        assert s.X.shape == (s.n_rows, exp["features"]) and s.X.dtype == np.float32
        assert s.X.flags.c_contiguous
        assert s.feature_names == tuple(f"f{j}" for j in range(1, exp["features"] + 1))
        assert s.group.dtype == np.int64 and int(s.group.sum()) == s.n_rows
        assert s.docid is not None and s.docid.shape == (s.n_rows,) and np.all(s.docid != "")
        # group sizes are the runs of qid, in row order
        starts = np.concatenate(([0], np.cumsum(s.group)[:-1]))
        np.testing.assert_array_equal(np.repeat(s.qid[starts], s.group), s.qid)
        assert np.all(np.isfinite(s.X))


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("fold", range(1, 6))
def test_fold_protocol(name, fold):
    frame = pl.read_parquet(packaged_file(f"{name}/{name}.parquet"))
    ds = load_letor(name, fold=fold)
    train, vali, test = PROTOCOL[fold]
    for split, subsets in ((ds.train, train), (ds.validation, (vali,)), (ds.test, (test,))):
        # rows come subset by subset in protocol order
        expected = pl.concat([frame.filter(pl.col("subset") == k) for k in subsets])
        np.testing.assert_array_equal(split.qid, expected["qid"].to_numpy())
        np.testing.assert_array_equal(split.docid, expected["docid"].to_numpy())
        np.testing.assert_array_equal(split.y, expected["label"].to_numpy())
    q = [set(s.qid.tolist()) for s in ds]
    assert not (q[0] & q[1] or q[0] & q[2] or q[1] & q[2])  # query-disjoint


def test_float64_and_unpacking():
    ds = load_letor("mq2008", fold=2, dtype=np.float64)
    train, vali, test = ds
    X, y, group = test
    assert X.dtype == np.float64 and X is ds.test.X
    X32 = load_letor("mq2008", fold=2).test.X
    np.testing.assert_array_equal(X.astype(np.float32), X32)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_card_matches_files(name):
    card = packaged_file(f"{name}/README.md").read_text()
    parquet = packaged_file(f"{name}/{name}.parquet")
    digest = hashlib.sha256(parquet.read_bytes()).hexdigest()
    assert f"`{name}.parquet` `{digest}`" in card
    exp = EXPECTED[name]
    assert f"{exp['rows']:,} rows, {exp['queries']:,} queries, {exp['features']} features" in card
    assert parquet.stat().st_size < 5_000_000
    for term in ("## Source", "## Terms", "Cite", "SHA256"):
        assert term in card


@pytest.mark.skipif(not SHARED.is_dir(), reason="original LETOR files not present")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_packaged_equals_original_text(name):
    frame = pl.read_parquet(packaged_file(f"{name}/{name}.parquet"))
    folder = SHARED / {"mq2008": "MQ2008", "ohsumed": "OHSUMED"}[name]
    for k in (1, 4):
        s = read_svmlight(folder / f"S{k}.txt", dtype=np.float64, keep_comments=True)
        part = frame.filter(pl.col("subset") == k)
        np.testing.assert_array_equal(part.select(s.feature_names).to_numpy(), s.X)
        np.testing.assert_array_equal(part["comment"].to_numpy().astype(str), s.comment)


def test_bad_arguments():
    with pytest.raises(
        ValueError, match=r"unknown LETOR collection 'mslr'; choose one of \['mq2008', 'ohsumed'\]"
    ):
        load_letor("mslr")
    with pytest.raises(ValueError, match="exactly one of `name`"):
        load_letor()
    with pytest.raises(ValueError, match="exactly one of `name`"):
        load_letor("mq2008", path=".")
    with pytest.raises(ValueError, match=r"`fold` must be in 1\.\.5; got 6"):
        load_letor("mq2008", fold=6)
    with pytest.raises(TypeError, match="`fold` must be an int"):
        load_letor("mq2008", fold="1")
    with pytest.raises(TypeError, match="float32 or float64"):
        load_letor("mq2008", dtype=np.int64)
    with pytest.raises(TypeError, match="`name` must be a string"):
        load_letor(3)


# -- users' directories --------------------------------------------------------------------


def _write_split(path, rng, n_queries, n_features, qid0):
    sizes = rng.integers(2, 9, size=n_queries)
    qid = np.repeat(np.arange(qid0, qid0 + n_queries), sizes)
    X = rng.random((qid.size, n_features)).astype(np.float32)
    y = rng.integers(0, 5, size=qid.size)
    write_svmlight(path, X, y, qid, sparse=True)
    return X, y, qid


def test_mslr_layout(tmp_path, rng):
    written = {}
    for fold in (1, 2):
        d = tmp_path / f"Fold{fold}"
        d.mkdir()
        for j, (file, width) in enumerate((("train.txt", 7), ("vali.txt.gz", 5), ("test.txt", 6))):
            written[fold, file] = _write_split(d / file, rng, 4, width, 100 * j)
    ds = load_letor(path=tmp_path, fold=2)
    assert ds.fold == 2 and ds.name == tmp_path.name
    for split, file in zip(ds, ("train.txt", "vali.txt.gz", "test.txt")):
        X, y, qid = written[2, file]
        assert split.X.shape == (X.shape[0], 7)  # narrower splits padded to the widest
        np.testing.assert_array_equal(split.X[:, : X.shape[1]], X)
        np.testing.assert_array_equal(split.y, y)
        np.testing.assert_array_equal(split.qid, qid)
    assert load_letor(path=tmp_path, fold=1, n_features=9).train.X.shape[1] == 9


def test_yahoo_istella_and_flat_layouts(tmp_path, rng):
    yahoo = tmp_path / "yahoo"
    yahoo.mkdir()
    for part in ("train", "valid", "test"):
        _write_split(yahoo / f"set2.{part}.txt", rng, 3, 4, 0)
    assert load_letor(path=yahoo, fold=2).validation.n_queries == 3
    istella = tmp_path / "istella" / "Fold1"
    istella.mkdir(parents=True)
    for part in ("train", "test"):
        _write_split(istella / f"{part}.txt", rng, 3, 4, 0)
    ds = load_letor(path=istella.parent)
    assert ds.validation is None and ds.test.n_queries == 3
    flat = load_letor(path=istella)  # a folder with train.txt directly reads as fold 1
    np.testing.assert_array_equal(flat.train.X, ds.train.X)


def test_user_directory_errors(tmp_path, rng):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_letor(path=tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=re.escape(f"no fold 3 under {tmp_path}")):
        load_letor(path=tmp_path, fold=3)
    d = tmp_path / "Fold1"
    d.mkdir()
    _write_split(d / "train.txt", rng, 2, 3, 0)
    with pytest.raises(FileNotFoundError, match="lacks test.txt"):
        load_letor(path=tmp_path)
    (d / "test.txt").write_text("1 qid:1 1:x\n")
    with pytest.raises(ValueError, match=re.escape(f"{d / 'test.txt'}, line 1")):
        load_letor(path=tmp_path)


def test_data_dir_override(tmp_path, monkeypatch):
    monkeypatch.setenv("SELRANK_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        load_letor("ohsumed")
    msg = str(err.value)
    assert str(tmp_path / "ohsumed" / "ohsumed.parquet") in msg and "SELRANK_DATA_DIR" in msg
    monkeypatch.delenv("SELRANK_DATA_DIR")
    src = packaged_file("ohsumed/ohsumed.parquet")
    (tmp_path / "ohsumed").mkdir()
    shutil.copy(src, tmp_path / "ohsumed" / "ohsumed.parquet")
    monkeypatch.setenv("SELRANK_DATA_DIR", str(tmp_path))
    ds = load_letor("ohsumed", fold=3)
    assert ds.source == str(tmp_path / "ohsumed" / "ohsumed.parquet")
    assert ds.test.n_queries == 21
