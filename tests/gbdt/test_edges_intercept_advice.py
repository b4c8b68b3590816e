"""Issue 30: the refusal of an unchecked ``lgb.Dataset`` advises routes whose saved model
serves the intercept (a regression with targets of mean 30 served mean 0 from the file)."""

from __future__ import annotations

import re

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from selrank.gbdt import lightgbm_objective  # noqa: E402

PARAMS = {"verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}


@pytest.fixture
def data():
    rng = np.random.default_rng(30)
    X = rng.normal(size=(400, 4))
    return X, 30.0 + X[:, 0] + 0.1 * rng.normal(size=400)


def _served_mean(booster, X, tmp_path) -> float:
    path = tmp_path / "model.txt"
    booster.save_model(str(path))
    return float(np.mean(lgb.Booster(model_file=str(path)).predict(X)))


def test_the_advice_names_obj_train_first_and_the_fold_for_lightgbm_train(data):
    X, y = data
    obj = lightgbm_objective("pointwise")
    with pytest.raises(ValueError, match="without its labels checked") as err:
        lgb.train({**PARAMS, "objective": obj}, lgb.Dataset(X, y), 3)
    message = str(err.value)
    assert message.index("obj.train(") < message.index("obj.set_init_score(")
    assert re.search(r"lightgbm\.train.*set_init_score.*obj\.fold_intercept\(booster\)", message)


def test_every_advised_route_saves_a_file_that_serves_the_intercept(data, tmp_path):
    X, y = data
    # route 1 (named first): obj.train
    obj = lightgbm_objective("pointwise")
    booster = obj.train(PARAMS, lgb.Dataset(X, y), 10)
    assert _served_mean(booster, X, tmp_path) == pytest.approx(30.0, abs=0.5)
    # route 2: set_init_score, lightgbm.train, fold_intercept before saving
    obj = lightgbm_objective("pointwise")
    booster = lgb.train({**PARAMS, "objective": obj}, obj.set_init_score(lgb.Dataset(X, y)), 10)
    before = obj.predict(booster, X)
    assert _served_mean(booster, X, tmp_path) == pytest.approx(0.0, abs=0.5)  # the trap
    assert obj.fold_intercept(booster)
    assert _served_mean(booster, X, tmp_path) == pytest.approx(30.0, abs=0.5)
    np.testing.assert_allclose(obj.predict(booster, X), before)  # added once, not twice
