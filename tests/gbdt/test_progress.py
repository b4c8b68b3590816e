"""GBDT progress bars: a tqdm bar per round; off when stderr is not a terminal."""

from __future__ import annotations

import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("tqdm")

from selrank import SelectiveRegressor  # noqa: E402
from selrank.gbdt import lightgbm_objective, xgboost_objective  # noqa: E402
from selrank.gbdt._progress import lightgbm_progress, xgboost_progress  # noqa: E402


def test_progress_callbacks_count_rounds(rng):
    X = rng.normal(size=(100, 2))
    y = X[:, 0]
    cb = lightgbm_progress(7)
    lightgbm_objective("pointwise", link="identity").train(
        {"verbose": -1}, lgb.Dataset(X, y), 7, callbacks=[cb]
    )
    assert cb.bar.n == 7
    assert cb.order == 40  # lightgbm.train fills a missing `order` in; ours must survive it
    xcb = xgboost_progress(4)
    xgboost_objective("pointwise", link="identity").train(
        {"nthread": 1}, xgb.DMatrix(X, y), 4, callbacks=[xcb]
    )
    assert xcb.bar.n == 4


def test_no_progress_bar_when_not_a_terminal(capsys, rng):
    import sys

    assert not sys.stderr.isatty()
    X = rng.normal(size=(100, 2))
    SelectiveRegressor(n_estimators=3, verbose=True).fit(X, X[:, 0])
    err = capsys.readouterr().err
    assert "round/s" not in err and "rounds/s" not in err and "SelectiveRegressor:" not in err
