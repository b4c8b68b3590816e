"""One rule for every file selrank writes: a name ending in .gz is gzip, any other name is
plain; readers recognise gzip by its bytes. Writes are atomic; output paths are checked."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from selrank._files import check_distinct_outputs, check_output_path, open_read, open_write

GZ = b"\x1f\x8b"


def test_every_writer_follows_the_suffix(tmp_path, rng):
    pytest.importorskip("lightgbm")
    from selrank import SelectiveRanker
    from selrank.datasets import read_svmlight, write_svmlight
    from selrank.estimators import load
    from selrank.metrics import read_qrels, read_run, write_qrels, write_run

    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(float)
    model = SelectiveRanker(n_estimators=2).fit(X, y, group=[20] * 10)
    for name in ("m.json", "m.json.gz", "m.JSON.GZ"):
        model.save(tmp_path / name)
        assert ((tmp_path / name).read_bytes()[:2] == GZ) == name.lower().endswith(".gz")
        np.testing.assert_array_equal(load(tmp_path / name).predict(X), model.predict(X))
    for name in ("r.txt", "r.txt.gz"):
        write_run({"q": {"d1": 1.0, "d2": 0.5}}, tmp_path / name)
        write_qrels({"q": {"d1": 1}}, tmp_path / f"q{name}")
        write_svmlight(tmp_path / f"s{name}", X[:4], y[:4], [1, 1, 2, 2])
        for f in (name, f"q{name}", f"s{name}"):
            assert ((tmp_path / f).read_bytes()[:2] == GZ) == name.endswith(".gz")
        assert read_run(tmp_path / name)["q"]["d2"] == 0.5
        assert read_qrels(tmp_path / f"q{name}")["q"]["d1"] == 1
        assert read_svmlight(tmp_path / f"s{name}").n_rows == 4
    # a gzip file under a plain name (compressed by hand) still reads
    (tmp_path / "hand.json").write_bytes(gzip.compress((tmp_path / "m.json").read_bytes()))
    np.testing.assert_array_equal(load(tmp_path / "hand.json").predict(X), model.predict(X))


def test_neural_ranker_file_follows_the_suffix(tmp_path, rng):
    pytest.importorskip("torch")
    from selrank.estimators import NeuralRanker

    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(float)
    net = NeuralRanker(epochs=1, random_state=0).fit(X, y, group=[10] * 6)
    for name in ("n.pt", "n.pt.gz"):
        net.save(tmp_path / name)
        assert ((tmp_path / name).read_bytes()[:2] == GZ) == name.endswith(".gz")
        np.testing.assert_array_equal(NeuralRanker.load(tmp_path / name).predict(X), net.predict(X))


def test_a_failed_write_keeps_the_old_file_and_leaves_no_partial_one(tmp_path):
    f = tmp_path / "out.json.gz"
    with open_write(f, text=True) as fh:
        fh.write("old")
    with pytest.raises(RuntimeError), open_write(f, text=True) as fh:
        fh.write("new, half")
        raise RuntimeError("interrupted")
    with open_read(f, text=True) as fh:
        assert fh.read() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json.gz"]


def test_output_path_checks(tmp_path):
    assert check_output_path(tmp_path / "a.json") == tmp_path / "a.json"
    with pytest.raises(ValueError, match="is a directory"):
        check_output_path(tmp_path, "--json")
    with pytest.raises(ValueError, match="does not exist"):
        check_output_path(tmp_path / "no" / "a.json", "--save")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        check_output_path(tmp_path / "file" / "a.json")
    with pytest.raises(ValueError, match="--save and --json name the same file"):
        check_distinct_outputs({"--save": tmp_path / "a", "--json": str(tmp_path / "." / "a")})
    check_distinct_outputs({"--save": tmp_path / "a", "--json": None, "--out": tmp_path / "b"})


def test_writing_into_a_missing_folder_or_onto_a_directory_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="the folder .*nowhere does not exist"):
        with open_write(tmp_path / "nowhere" / "a.txt") as fh:
            fh.write(b"x")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        with open_write(tmp_path) as fh:
            fh.write(b"x")
