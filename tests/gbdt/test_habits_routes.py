"""Issue 18: labels are checked on every LightGBM route; every route a message recommends works."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from selrank.gbdt import lightgbm_objective  # noqa: E402

PARAMS = {"verbose": -1, "num_threads": 1, "deterministic": True, "num_leaves": 7}


def data(rng, n=200):
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + 1), 0, 3)
    return X, y


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize(
    ("loss", "kw"),
    [("listwise", {}), ("pairwise", {}), ("pointwise", {"link": "identity"})],
)
def test_plain_lgb_train_never_trains_on_replaced_labels(loss, kw, bad, rng):
    """LightGBM turns a NaN label into 0 when it builds the Dataset: plain lgb.train trained."""
    X, y = data(rng)
    y[5] = bad
    obj = lightgbm_objective(loss, **kw)
    group = [20] * 10 if loss != "pointwise" else None
    with pytest.raises(ValueError, match="labels checked.*set_init_score"):
        lgb.train({**PARAMS, "objective": obj}, lgb.Dataset(X, y, group=group), 3)
    # the route the message recommends checks the raw labels
    obj = lightgbm_objective(loss, **kw)
    with pytest.raises(ValueError, match="finite"):
        obj.set_init_score(lgb.Dataset(X, y, group=group))
    with pytest.raises(ValueError, match="finite"):
        obj.train(PARAMS, lgb.Dataset(X, y, group=group), 3)


def test_the_recommended_routes_train_on_clean_labels(rng):
    X, y = data(rng)
    obj = lightgbm_objective("listwise")
    train = obj.set_init_score(lgb.Dataset(X, y, group=[20] * 10))
    b = lgb.train({**PARAMS, "objective": obj}, train, 5)
    assert np.std(obj.predict(b, X)) > 0
    b2 = obj.train(PARAMS, lgb.Dataset(X, y, group=[20] * 10), 5)
    np.testing.assert_allclose(obj.predict(b2, X), obj.predict(b, X))


def test_lgb_cv_folds_of_a_checked_dataset_train(rng):
    X, y = data(rng)
    obj = lightgbm_objective("pointwise", link="identity")
    train = obj.set_init_score(lgb.Dataset(X, y))
    res = lgb.cv({**PARAMS, "objective": obj, "metric": "l2"}, train, 3, nfold=2, stratified=False)
    assert len(res["valid l2-mean"]) == 3


@pytest.mark.filterwarnings("ignore:training starts from a constant:UserWarning")
def test_sklearn_route_then_fit_intercept_predicts_what_the_trees_learned(rng):
    """LGBMRegressor(objective=obj) trains from 0; obj.predict after fit_intercept(y) added the
    optimal constant to trees grown from 0 (MSE 18 instead of 0.001)."""
    X = rng.normal(size=(300, 4))
    y = np.exp(0.5 * X[:, 0]) + 3
    obj = lightgbm_objective("pointwise", link="exp")
    model = lgb.LGBMRegressor(objective=obj, n_estimators=50, **PARAMS).fit(X, y)
    raw = model.predict(X, raw_score=True)
    np.testing.assert_allclose(obj.predict(model.booster_, X), raw)
    obj.fit_intercept(y)  # what the old message recommended
    np.testing.assert_allclose(obj.predict(model.booster_, X), raw)
    assert np.mean((obj.predict(model.booster_, X) - y) ** 2) < 0.05


@pytest.mark.filterwarnings("ignore:training starts from a constant:UserWarning")
def test_sklearn_route_with_init_score_predicts_with_the_intercept(rng):
    X = rng.normal(size=(300, 4))
    y = np.exp(0.5 * X[:, 0]) + 3
    obj = lightgbm_objective("pointwise", link="exp")
    c = obj.fit_intercept(y)
    model = lgb.LGBMRegressor(objective=obj, n_estimators=50, **PARAMS)
    model.fit(X, y, init_score=obj.init_score(len(y)))
    pred = obj.predict(model.booster_, X)
    np.testing.assert_allclose(pred, model.predict(X, raw_score=True) + c)
    assert np.mean((pred - y) ** 2) < 0.05


def test_sklearn_route_refuses_nan_labels(rng):
    X, y = data(rng)
    y[3] = np.nan
    obj = lightgbm_objective("pointwise", link="identity")
    with pytest.raises(ValueError, match="NaN|finite"):
        lgb.LGBMRegressor(objective=obj, n_estimators=3, **PARAMS).fit(X, y)
