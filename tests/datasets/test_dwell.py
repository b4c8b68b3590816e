"""Dwell-time data: packaged YOOCHOOSE sample, features against a slow reference, no leakage."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from selrank.datasets import DWELL_FEATURES, dwell_dataset, load_dwell, read_session_clicks
from selrank.datasets._paths import packaged_file

pl = pytest.importorskip("polars")


def _random_log(rng, n_sessions, n_items=6, t_range=200_000, max_len=6, sid0=0):
    """Sessions with 1..max_len clicks, coarse times (ties happen), interleaved in time."""
    lengths = rng.integers(1, max_len + 1, size=n_sessions)
    session = np.repeat(np.arange(sid0, sid0 + n_sessions), lengths)
    start = np.repeat(rng.integers(0, t_range, size=n_sessions), lengths)
    gaps = rng.choice([0, 1000, 5000, 20_000, 90_000], size=session.size)
    time = start + np.concatenate(
        [np.cumsum(g) - g[0] for g in np.split(gaps, np.cumsum(lengths)[:-1])]
    )
    item = rng.integers(0, n_items, size=session.size)
    return pl.DataFrame({"session": session, "item": item, "time_ms": time})


def _reference(train, test):
    """Plain-Python features, straight from the definitions in `dwell_dataset`."""

    def order(log):
        rows = list(log.iter_rows(named=True))
        start = {}
        for r in rows:
            start[r["session"]] = min(start.get(r["session"], r["time_ms"]), r["time_ms"])
        idx = sorted(
            range(len(rows)),
            key=lambda i: (start[rows[i]["session"]], rows[i]["session"], rows[i]["time_ms"], i),
        )
        sessions = {}
        for i in idx:
            sessions.setdefault(rows[i]["session"], []).append(rows[i])
        return sessions

    train_sessions = order(train)
    history_clicks = [(r["item"], r["time_ms"]) for s in train_sessions.values() for r in s]
    history_dwells = [
        (a["item"], b["time_ms"], math.log1p((b["time_ms"] - a["time_ms"]) / 1000))
        for s in train_sessions.values()
        for a, b in zip(s[:-1], s[1:])
    ]
    out = {}
    for name, sessions in (("train", train_sessions), ("test", order(test))):
        rows = []
        for clicks in sessions.values():
            for k, (c, nxt) in enumerate(zip(clicks[:-1], clicks[1:])):
                t, item = c["time_ms"], c["item"]
                dw = [v for i, end, v in history_dwells if i == item and end < t]
                rows.append(
                    [
                        c["session"],
                        (nxt["time_ms"] - t) / 1000,
                        k,
                        (t - clicks[0]["time_ms"]) / 1000,
                        math.log1p((t - clicks[k - 1]["time_ms"]) / 1000) if k else math.nan,
                        (t // 3_600_000) % 24,
                        sum(1 for p in clicks[:k] if p["item"] == item),
                        sum(1 for i, tt in history_clicks if i == item and tt < t),
                        len(dw),
                        sum(dw) / len(dw) if dw else math.nan,
                    ]
                )
        out[name] = np.array(rows, dtype=np.float64).reshape(-1, 2 + len(DWELL_FEATURES))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_features_match_reference(seed):
    rng = np.random.default_rng(seed)
    train = _random_log(rng, 40)
    test = _random_log(rng, 15, sid0=1000).with_columns(pl.col("time_ms") + 150_000)
    ds = dwell_dataset(train, test)
    ref = _reference(train, test)
    for split in (ds.train, ds.test):
        r = ref[split.frame["split"][0]]
        np.testing.assert_array_equal(split.session, r[:, 0])
        np.testing.assert_allclose(split.seconds, r[:, 1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(split.X, r[:, 2:], rtol=1e-12, atol=1e-12)  # NaN where NaN
        np.testing.assert_allclose(split.y, np.log1p(split.seconds), rtol=1e-15)
    assert np.isnan(ds.train.X).any()  # first clicks and unseen items were exercised
    assert (ds.train.seconds == 0).any()  # so were clicks in the same instant


def test_no_feature_uses_the_future():
    rng = np.random.default_rng(7)
    log = _random_log(rng, 300, n_items=10, t_range=1_000_000)
    cut = int(np.median(log["time_ms"].to_numpy()))
    future = pl.col("time_ms") >= cut
    n_future = int(log.select(future.sum()).item())
    # rewrite everything at or after the cut: other items, other times (still after the cut)
    changed = log.with_columns(
        pl.when(future)
        .then(pl.Series(rng.integers(0, 10, log.height)))
        .otherwise(pl.col("item"))
        .alias("item"),
        pl.when(future)
        .then(pl.Series(cut + rng.integers(0, 500_000, log.height)))
        .otherwise(pl.col("time_ms"))
        .alias("time_ms"),
    )
    empty_test = log.head(2).with_columns(pl.lit(10**9).alias("session"))
    a = dwell_dataset(log, empty_test).train
    b = dwell_dataset(changed, empty_test).train
    past_a = a.frame.filter(pl.col("time") < cut / 1000).sort("session", "time")
    past_b = b.frame.filter(pl.col("time") < cut / 1000).sort("session", "time")
    assert n_future > 100 and past_a.height > 100
    assert past_a.select(DWELL_FEATURES).equals(past_b.select(DWELL_FEATURES))
    # the targets of rows whose next click moved did change: the check above is not vacuous
    assert not past_a["seconds"].equals(past_b["seconds"])


def test_packaged_yoochoose():
    dw = load_dwell("YOOCHOOSE-100k")
    train, test = dw
    assert (train.n_rows, test.n_rows) == (70_278 - 17_794, 13_568 - 3_416)
    assert train.feature_names == DWELL_FEATURES and train.X.shape == (train.n_rows, 8)
    for s in (train, test):
        X, y = s
        assert X.dtype == np.float64 and np.all(s.seconds >= 0)
        np.testing.assert_allclose(y, np.log1p(s.seconds), rtol=1e-15)  # polars vs NumPy log1p
        change = np.flatnonzero(np.diff(s.session)) + 1
        starts = np.concatenate(([0], change))
        assert np.unique(s.session).size == starts.size  # sessions contiguous
        same = np.diff(s.session) == 0
        assert np.all(np.diff(s.time)[same] >= 0)  # time order inside a session
        assert np.all(np.diff(s.time[starts]) >= 0)  # sessions ordered by first click
        np.testing.assert_array_equal(s.X[starts, 0], 0)  # position restarts per session
        assert np.all(np.isnan(s.X[starts, 2]))  # no previous dwell on a first click
        assert set(s.frame.columns) >= {
            "split",
            "session",
            "item",
            "time",
            "seconds",
            "y",
            *DWELL_FEATURES,
        }
    assert train.time.max() < test.time.min()
    assert np.unique(train.session).size == 17_794 and np.unique(test.session).size == 3_416
    assert np.all((train.X[:, 3] >= 0) & (train.X[:, 3] <= 23))


def test_test_rows_use_the_training_period_only():
    clicks = pl.read_parquet(packaged_file("yoochoose-100k/clicks.parquet"))
    train_clicks = clicks.filter(pl.col("split") == "train")
    dw = load_dwell("yoochoose-100k")
    per_item = dict(train_clicks.group_by("item").len().iter_rows())
    popularity = np.array([per_item.get(i, 0) for i in dw.test.item.tolist()], dtype=float)
    np.testing.assert_array_equal(dw.test.frame["item_clicks_before"].to_numpy(), popularity)
    train_dwells = dw.train.frame.group_by("item").agg(
        pl.len().alias("n_train"), pl.col("y").mean().alias("mean_train")
    )
    joined = dw.test.frame.join(train_dwells, on="item", how="left")
    np.testing.assert_array_equal(
        joined["item_dwell_count"].to_numpy(), joined["n_train"].fill_null(0).to_numpy()
    )
    np.testing.assert_allclose(
        joined["item_mean_log_dwell"].to_numpy(),
        joined["mean_train"].fill_null(float("nan")).to_numpy(),
        rtol=1e-12,
    )
    # training rows see only expanding history: an item's first dwell row has no finished
    # dwell before it, and popularity grows over the period instead of being the final count
    train = dw.train.frame.sort("time")
    first = train.group_by("item", maintain_order=True).first()
    assert (first["item_dwell_count"] == 0).all()
    last = train.group_by("item", maintain_order=True).last()
    total = np.array([per_item[i] for i in last["item"].to_list()], dtype=float)
    assert np.all(last["item_clicks_before"].to_numpy() < total)


def test_card():
    card = packaged_file("yoochoose-100k/README.md").read_text()
    assert "| train | 70,278 | 17,794 |" in card and "| test | 13,568 | 3,416 |" in card
    for term in ("## Source", "## Terms", "SHA256", "RecSys Challenge 2015"):
        assert term in card


def test_read_session_clicks_errors(tmp_path):
    f = tmp_path / "clicks.txt"
    f.write_text("SessionId\tItemId\tTime\n1\t5\t10.5\n\n1\tx\t11\n")
    with pytest.raises(
        ValueError, match=re.escape(f"{f}, line 4, column 3: ItemId must be an integer; got 'x'")
    ):
        read_session_clicks(f)
    f.write_text("SessionId\tItemId\tTime\n1\t5\t10.5\t3\n")
    with pytest.raises(ValueError, match=re.escape(f"{f}, line 2, column 10: expected 3 tab")):
        read_session_clicks(f)
    f.write_text("session,item,time\n1,5,10\n")
    with pytest.raises(ValueError, match=re.escape(f"{f}, line 1: expected the header")):
        read_session_clicks(f)
    with pytest.raises(FileNotFoundError):
        read_session_clicks(tmp_path / "none.txt")


def test_dwell_dataset_validates():
    good = pl.DataFrame({"session": [1, 1], "item": [1, 2], "time": [0.0, 1.0]})
    with pytest.raises(TypeError, match="polars or pandas DataFrame"):
        dwell_dataset({"session": [1]}, good)
    with pytest.raises(ValueError, match=r"missing \['item'\]"):
        dwell_dataset(good.drop("item"), good)
    with pytest.raises(ValueError, match="column 'item' has a missing id at row 0"):
        dwell_dataset(good.with_columns(pl.lit(None, pl.Int64).alias("item")), good)
    with pytest.raises(ValueError, match="missing values"):  # a missing time
        dwell_dataset(good.with_columns(pl.lit(None, pl.Float64).alias("time")), good)
    with pytest.raises(ValueError, match="unknown dwell dataset 'x'"):
        load_dwell("x")
    assert dwell_dataset(good, good, dtype=np.float32).train.X.dtype == np.float32


def _ids_of_every_kind():
    """Session ids of five clicks, the third and fifth missing, in every form a user has."""
    import pandas as pd

    yield "int", pl.Series([1, 1, None, 2, None], dtype=pl.Int64)
    yield "float", pl.Series([1.0, 1.0, float("nan"), 2.0, float("nan")])
    yield "string", pl.Series(["a", "a", None, "b", None])
    yield "empty string", pl.Series(["a", "a", "", "b", "  "])
    yield "categorical", pl.Series(["a", "a", None, "b", None]).cast(pl.Categorical)
    yield "enum", pl.Series(["a", "a", None, "b", None]).cast(pl.Enum(["a", "b"]))
    yield "pandas object", pd.Series(["a", "a", None, "b", np.nan], dtype=object)
    yield "pandas float", pd.Series([1.0, 1.0, np.nan, 2.0, np.nan])
    yield "pandas Int64", pd.Series([1, 1, None, 2, None], dtype="Int64")
    yield "pandas string", pd.Series(["a", "a", None, "b", None], dtype="string")
    yield "pandas category", pd.Series(["a", "a", None, "b", None], dtype="category")


@pytest.mark.parametrize("kind", [k for k, _ in _ids_of_every_kind()])
@pytest.mark.parametrize("column", ["session", "item"])
def test_a_missing_id_is_refused_naming_the_row_for_every_kind_of_id(kind, column):
    """Before: string (and categorical) ids were hashed, a missing id hashed to one value, so the
    id-less clicks became one session whose dwell times were gaps between unrelated users."""
    import pandas as pd

    ids = dict(_ids_of_every_kind())[kind]
    other = [1, 1, 3, 2, 2] if column == "item" else [5, 6, 5, 5, 7]
    data = {"session": other, "item": other, "time": [0.0, 10.0, 40.0, 20.0, 22.0]}
    data[column] = ids
    frame = pd.DataFrame(data) if kind.startswith("pandas") else pl.DataFrame(data)
    test = pl.DataFrame({"session": [9, 9], "item": [5, 7], "time": [100.0, 160.0]})
    with pytest.raises(ValueError, match=f"column '{column}' has a missing id at row 2 .*2 of 5"):
        dwell_dataset(frame, test)
    with pytest.raises(ValueError, match=f"`test_clicks` column '{column}' has a missing id"):
        dwell_dataset(test, frame)


@pytest.mark.parametrize(
    "ids",
    [
        pl.Series([1, 1, 3, 2, 2]),
        pl.Series([1.0, 1.0, 3.0, 2.0, 2.0]),
        pl.Series(["1", "1", "3", "2", "2"]),
        pl.Series(["s1", "s1", "s3", "s2", "s2"]),
        pl.Series(["s1", "s1", "s3", "s2", "s2"]).cast(pl.Categorical),
    ],
    ids=["int", "whole float", "numeric string", "string", "categorical"],
)
def test_complete_ids_of_every_kind_give_the_same_sessions(ids):
    tr = pl.DataFrame(
        {"session": ids, "item": [5, 6, 5, 5, 7], "time": [0.0, 10.0, 40.0, 20.0, 22.0]}
    )
    te = pl.DataFrame({"session": [9, 9], "item": [5, 7], "time": [100.0, 160.0]})
    ds = dwell_dataset(tr, te)
    assert ds.train.seconds.tolist() == [10.0, 2.0]
    assert np.unique(ds.train.session).size == 2


def test_fractional_float_ids_are_refused():
    tr = pl.DataFrame({"session": [1.0, 1.5], "item": [5, 6], "time": [0.0, 10.0]})
    with pytest.raises(ValueError, match="integer or string ids; row 1 holds 1.5"):
        dwell_dataset(tr, tr)


@pytest.mark.parametrize(
    "session",
    [
        np.array(["a", "a", None, "b"], dtype=object),
        np.array([1.0, 1.0, np.nan, 2.0]),
        np.array(["a", "a", "", "b"]),
    ],
    ids=["None", "NaN", "empty string"],
)
def test_the_estimators_session_ids_refuse_a_missing_id(session):
    from selrank.dwell import _session_ids

    with pytest.raises(ValueError, match="missing session id at row 2"):
        _session_ids(session, 4, "session")
