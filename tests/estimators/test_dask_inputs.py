"""Dask collections given to the estimators are refused, not computed into local memory (issue 30):
the message names the Dask training functions of selrank.gbdt.dask."""

from __future__ import annotations

import numpy as np
import pytest

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(float)
    return X, y, [20, 20, 20]


def _never_computed(collection):
    """A Dask collection whose computation fails the test (nothing may pull it into memory)."""

    def boom(block):
        raise AssertionError("the Dask collection was computed")

    return collection.map_blocks(boom, dtype=collection.dtype)


@pytest.mark.parametrize("where", ["X", "y", "group", "eval_set"])
def test_ranker_refuses_dask_arrays_naming_the_dask_training_functions(data, where):
    X, y, group = data
    kw = {"X": X, "y": y, "group": group}
    if where == "eval_set":
        kw["eval_set"] = [(_never_computed(da.from_array(X, chunks=20)), y)]
        kw["eval_group"] = [group]
    else:
        value = np.asarray(kw[where], dtype=float)
        kw[where] = _never_computed(da.from_array(value, chunks=20))
    X_, y_ = kw.pop("X"), kw.pop("y")
    with pytest.raises(TypeError, match=r"Dask collection for `" + where) as info:
        SelectiveRanker(n_estimators=2).fit(X_, y_, **kw)
    message = str(info.value)
    assert "selrank.gbdt.dask.lightgbm_dask_fit" in message
    assert "xgboost_dask_train" in message and ".compute()" in message


def test_dask_dataframe_is_refused_by_every_estimator_and_at_predict(data):
    import pandas as pd

    X, y, group = data
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=3)
    for est, kw in (
        (SelectiveRanker(n_estimators=2), {"group": group}),
        (SelectiveRegressor(n_estimators=2), {}),
        (SelectiveClassifier(n_estimators=2), {}),
    ):
        with pytest.raises(TypeError, match="lightgbm_dask_fit"):
            est.fit(frame, y, **kw)
    fitted = SelectiveRanker(n_estimators=2).fit(X, y, group=group)
    with pytest.raises(TypeError, match="Dask collection for `X`"):
        fitted.predict(_never_computed(da.from_array(X, chunks=20)))
