"""LightGBM's own ranking files (``rank.train`` + ``rank.train.query``) read as LightGBM reads
them: the same labels, query sizes, columns and, trained on, the same model (issue 30)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from selrank.datasets import (
    lightgbm_query_file,
    load_ranking_folder,
    read_lightgbm_ranking,
    read_svmlight_cached,
)

lgb = pytest.importorskip("lightgbm")
pytest.importorskip("numba")


def _write(root: Path, *, first_index: int = 1, n_queries: int = 40, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 15, size=n_queries)
    n = int(sizes.sum())
    lines = []
    for _ in range(n):
        feats = [(j, round(float(rng.normal()), 4)) for j in range(6) if rng.random() < 0.8]
        toks = " ".join(f"{j + first_index}:{v:g}" for j, v in feats)
        lines.append(f"{int(rng.integers(0, 5))} {toks}".rstrip())
    root.mkdir(parents=True, exist_ok=True)
    f = root / "rank.train"
    f.write_text("\n".join(lines) + "\n")
    (root / "rank.train.query").write_text("\n".join(map(str, sizes)) + "\n")
    return f


@pytest.mark.parametrize("first_index", [0, 1])
def test_labels_groups_and_columns_are_lightgbms(tmp_path, first_index):
    f = _write(tmp_path, first_index=first_index)
    ours = read_lightgbm_ranking(f, dtype=np.float64)
    theirs = lgb.Dataset(str(f), params={"verbosity": -1}).construct()
    np.testing.assert_array_equal(ours.y, theirs.get_label())
    np.testing.assert_array_equal(ours.group, np.diff(theirs.get_field("group")))
    assert ours.X.shape[1] == theirs.num_feature()  # column = index, as LightGBM
    if first_index == 1:
        assert not ours.X[:, 0].any()  # LightGBM's column 0 of a file indexed from 1
    # trained on: the same model as LightGBM trained on the file itself
    params = {"objective": "lambdarank", "verbosity": -1, "num_threads": 1, "seed": 0}
    a = lgb.train(params, lgb.Dataset(str(f), params={"verbosity": -1}), 5)
    b = lgb.train(params, lgb.Dataset(ours.X, ours.y, group=ours.group), 5)
    np.testing.assert_allclose(a.predict(ours.X), b.predict(ours.X), rtol=0, atol=1e-12)


def test_the_query_file_rule_and_gzip(tmp_path):
    f = _write(tmp_path)
    assert lightgbm_query_file(f) == tmp_path / "rank.train.query"
    gz = tmp_path / "rank.train.gz"
    gz.write_bytes(gzip.compress(f.read_bytes()))
    (tmp_path / "rank.train.gz.query").write_bytes((tmp_path / "rank.train.query").read_bytes())
    np.testing.assert_array_equal(read_lightgbm_ranking(gz).X, read_lightgbm_ranking(f).X)
    # through the cached reader and the folder loader too
    np.testing.assert_array_equal(
        read_svmlight_cached(f, cache=tmp_path / "c").X, read_lightgbm_ranking(f).X
    )


def test_sizes_that_do_not_add_up_and_bad_lines_name_file_and_line(tmp_path):
    f = _write(tmp_path, n_queries=3)
    q = tmp_path / "rank.train.query"
    sizes = [int(x) for x in q.read_text().split()]
    q.write_text("\n".join(map(str, [*sizes[:-1], sizes[-1] + 2])) + "\n")
    with pytest.raises(ValueError, match="data file has .* rows; LightGBM refuses this too"):
        read_lightgbm_ranking(f)
    q.write_text("\n".join(map(str, [*sizes[:-1], sizes[-1] - 1])) + "\n")
    with pytest.raises(ValueError, match=f"{f}, line {sum(sizes)}: .* more rows"):
        read_lightgbm_ranking(f)
    q.write_text("3\nx\n")
    with pytest.raises(ValueError, match=f"{q}, line 2: expected a query size"):
        read_lightgbm_ranking(f)
    q.write_text("\n".join(map(str, sizes)) + "\n")
    lines = f.read_text().splitlines()
    lines[1] = "1 qid:3 1:0.5"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"{f}, line 2: holds a qid: token"):
        read_lightgbm_ranking(f)
    lines[1] = "1 2:abc"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"{f}, line 2"):
        read_lightgbm_ranking(f)
    (tmp_path / "rank.train.query").unlink()
    with pytest.raises(FileNotFoundError, match="rank.train.query"):
        read_lightgbm_ranking(f)


def test_a_folder_of_lightgbm_files_loads(tmp_path):
    f = _write(tmp_path, seed=1)
    for name in ("vali", "test"):
        g = _write(tmp_path / name, seed=2)
        (tmp_path / f"rank.{name}").write_bytes(g.read_bytes())
        (tmp_path / f"rank.{name}.query").write_bytes(Path(f"{g}.query").read_bytes())
    ds = load_ranking_folder(tmp_path, cache=False)
    np.testing.assert_array_equal(ds.train.X, read_lightgbm_ranking(f).X)
    assert ds.validation is not None and ds.test.n_rows > 0


def test_weight_and_init_files_are_named_not_dropped_silently(tmp_path):
    f = _write(tmp_path)
    (tmp_path / "rank.train.weight").write_text("1\n" * 10)
    with pytest.warns(UserWarning, match=r"rank.train.weight .*read_lightgbm_ranking reads"):
        read_lightgbm_ranking(f)
