"""Issue 11: the intercept belongs to the booster it was trained with (not to the objective),
and one-row queries stay one-row queries in the objectives."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from selrank.gbdt import lightgbm_objective, xgboost_objective  # noqa: E402

LGB = {
    "verbose": -1,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_leaves": 4,
    "min_data_in_leaf": 5,
}
XGB = {"nthread": 1, "max_depth": 2, "min_child_weight": 1e-3}


def _two_training_sets(rng):
    X = rng.normal(size=(200, 3))
    y1 = np.exp(0.5 * X[:, 0] + 0.1 * rng.normal(size=200))  # intercept near log(mean) ~ 0.1
    y2 = 30.0 + 5 * y1  # a very different intercept
    return X, y1, y2


def test_lightgbm_reused_objective_predicts_each_booster_with_its_own_intercept(rng):
    X, y1, y2 = _two_training_sets(rng)
    obj = lightgbm_objective("pointwise", link="identity")
    b1 = obj.train(LGB, lgb.Dataset(X, y1), 5)
    c1 = obj.intercept_
    b2 = obj.train(LGB, lgb.Dataset(X, y2), 5)
    assert obj.intercept_ != pytest.approx(c1)
    # the intercept is inside each booster's trees (issue 22): plain LightGBM predicts the scores
    assert obj.intercept_in_model(b1) and obj.intercept_in_model(b2)
    np.testing.assert_allclose(obj.predict(b1, X), b1.predict(X, raw_score=True))
    np.testing.assert_allclose(obj.predict(b2, X), b2.predict(X, raw_score=True))
    assert np.mean(obj.predict(b1, X)) == pytest.approx(np.mean(y1), abs=0.3)
    assert np.mean(obj.predict(b2, X)) == pytest.approx(np.mean(y2), abs=3.0)
    assert obj.booster_intercept(b1) == pytest.approx(c1)  # kept as metadata
    # round trip through the model text (LightGBM still reads it; the intercept comes back)
    text = obj.save_model(b1)
    fresh = lightgbm_objective("pointwise", link="identity")
    np.testing.assert_array_equal(fresh.predict(fresh.load_model(text), X), obj.predict(b1, X))
    np.testing.assert_array_equal(
        lgb.Booster(model_str=text).predict(X, raw_score=True), b1.predict(X, raw_score=True)
    )


def test_lightgbm_train_directly_twice_refuses_to_guess_the_intercept(rng):
    """set_init_score(train1), lgb.train -> b1, set_init_score(train2), lgb.train -> b2: which
    intercept belongs to b1 is unknown to the objective: refused, not train2's silently."""
    X, y1, y2 = _two_training_sets(rng)
    obj = lightgbm_objective("pointwise", link="identity")
    b1 = lgb.train({**LGB, "objective": obj}, obj.set_init_score(lgb.Dataset(X, y1)), 3)
    c1 = obj.intercept_
    np.testing.assert_allclose(
        obj.predict(b1, X), b1.predict(X, raw_score=True) + c1
    )  # one training: known
    lgb.train({**LGB, "objective": obj}, obj.set_init_score(lgb.Dataset(X, y2)), 3)
    with pytest.raises(ValueError, match="carries no intercept.*obj.train"):
        obj.predict(b1, X)
    np.testing.assert_allclose(obj.predict(b1, X, intercept=c1), b1.predict(X, raw_score=True) + c1)


def test_xgboost_reused_objective_and_saved_model_keep_the_intercept(rng):
    X, y1, y2 = _two_training_sets(rng)
    obj = xgboost_objective("pointwise", link="identity", min_leaf_hessian=1e-3)
    b1 = obj.train(XGB, xgb.DMatrix(X, y1), 5)
    c1 = obj.intercept_
    b2 = obj.train(XGB, xgb.DMatrix(X, y2), 5)
    margin1 = b1.predict(xgb.DMatrix(X, base_margin=np.full(200, c1)), output_margin=True)
    np.testing.assert_allclose(obj.predict(b1, X), margin1, rtol=1e-6)
    # base_score holds the intercept (issue 22): plain XGBoost predicts the same margins
    np.testing.assert_allclose(b1.predict(xgb.DMatrix(X), output_margin=True), margin1, rtol=1e-6)
    assert abs(np.mean(obj.predict(b2, X)) - np.mean(y2)) < abs(
        np.mean(obj.predict(b1, X)) - np.mean(y2)
    )
    raw = obj.save_model(b1)
    fresh = xgboost_objective("pointwise", link="identity")
    np.testing.assert_allclose(
        fresh.predict(fresh.load_model(raw), X), obj.predict(b1, X), rtol=1e-7
    )


@pytest.mark.filterwarnings("ignore:the exact Hessian.*is zero:UserWarning")
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_one_row_queries_give_zero_gradients_and_a_constant_model(backend, rng):
    """n one-document queries (sizes [1] * n, as both libraries store them) were trained as
    ONE query of n rows: the sizes-or-ids guess was re-applied to the library's own sizes."""
    n = 120
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 4, n).astype(float)
    if backend == "lightgbm":
        obj = lightgbm_objective("pairwise")
        booster = obj.train(LGB, lgb.Dataset(X, y, group=np.ones(n, dtype=int)), 5)
    else:
        obj = xgboost_objective("pairwise", min_leaf_hessian=1e-3)
        booster = obj.train(XGB, xgb.DMatrix(X, y, qid=np.arange(n)), 5)
    pred = obj.predict(booster, X)
    assert np.ptp(pred) == 0.0
    g, _ = obj.grad_hess(rng.normal(size=n), y, group=np.ones(n))
    assert np.all(g == 0.0)


def test_no_usable_feature_gives_a_constant_model_not_a_crash(rng):
    """LightGBM drops every feature on tiny or constant data; a custom objective then crashed
    in C++ (`Check failed: num_features > 0`, raised while LightGBM builds the booster, before
    any objective call). obj.train returns the intercept with a warning, as LightGBM's
    built-in objectives do."""
    X = np.ones((30, 3))
    y = rng.integers(0, 3, 30).astype(float)
    obj = lightgbm_objective("listwise")
    with pytest.warns(UserWarning, match="kept none of the 3 features"):
        booster = obj.train({"verbose": -1}, lgb.Dataset(X, y, group=[10, 10, 10]), 5)
    np.testing.assert_allclose(obj.predict(booster, X), obj.intercept_)
