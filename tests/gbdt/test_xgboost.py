"""The XGBoost adapter with real XGBoost: xgboost.train, groups from qid / set_group, per-query
weights, the device loop on the host, multi-class and multi-target layouts, sklearn classes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from selrank.gbdt import XGBoostObjective, xgboost_objective  # noqa: E402
from selrank.losses import get_loss  # noqa: E402

PARAMS = {"nthread": 1, "max_depth": 3, "eta": 0.1, "tree_method": "hist", "min_child_weight": 1e-3}


@pytest.fixture
def ranking(rng):
    sizes = rng.integers(5, 25, size=30)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n) + 1.0), 0, 3)
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0}
    return X, y, sizes


@pytest.mark.parametrize("how", ["qid", "set_group"])
def test_train_passes_core_gradients(ranking, rng, how):
    X, y, sizes = ranking
    wq = rng.uniform(0.5, 2.0, size=sizes.size)  # XGBoost ranking weights are per query
    loss = get_loss("pairwise", pairs="distinct")
    obj = xgboost_objective(loss, hessian="exact", label_scale=1.0, min_leaf_hessian=1e-3)
    if how == "qid":
        d = xgb.DMatrix(X, y, qid=np.repeat(np.arange(sizes.size), sizes), weight=wq)
    else:
        d = xgb.DMatrix(X, y, weight=wq)
        d.set_group(sizes)
    seen = []

    def spy(preds, dtrain):
        g, h = obj(preds, dtrain)
        seen.append((preds.copy(), g, h))
        return g, h

    obj.set_base_margin(d)
    xgb.train(PARAMS, d, 3, obj=spy)
    w32 = wq.astype(np.float32)
    for preds, g, h in seen:
        g_ref, h_ref = loss.grad_hess(preds.astype(np.float64), y, group=sizes, sample_weight=w32)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(h, h_ref, rtol=1e-10, atol=1e-12)
    assert np.all(seen[0][0] == np.float32(obj.intercept_))


def test_identity_link_reproduces_squared_error(rng):
    X = rng.normal(size=(600, 4))
    y = 2.0 * X[:, 0] + rng.normal(size=600) + 5.0
    ref = xgb.train(
        {**PARAMS, "objective": "reg:squarederror", "base_score": float(np.float32(y).mean())},
        xgb.DMatrix(X, y),
        20,
    )
    obj = xgboost_objective("pointwise", link="identity")
    booster = obj.train(PARAMS, xgb.DMatrix(X, y), 20)
    np.testing.assert_allclose(
        obj.predict(booster, X), ref.predict(xgb.DMatrix(X)), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("loss", ["listwise", "pairwise", "pointwise"])
def test_device_loop_on_host_equals_xgboost_train(ranking, loss):
    """The incremental-margin loop (the GPU path) run with NumPy gives xgboost.train's model."""
    X, y, sizes = ranking
    qid = np.repeat(np.arange(sizes.size), sizes)
    a = xgboost_objective(loss, min_leaf_hessian=1e-3)
    b = xgboost_objective(loss, min_leaf_hessian=1e-3)
    ra, rb = {}, {}
    ba = a.train(PARAMS, xgb.DMatrix(X, y, qid=qid), 12, evals_result=ra)
    bb = b.train(PARAMS, xgb.DMatrix(X, y, qid=qid), 12, data=X, evals_result=rb)
    assert bb.num_boosted_rounds() == 12
    np.testing.assert_allclose(a.predict(ba, X), b.predict(bb, X), rtol=1e-5, atol=1e-5)


def test_device_loop_early_stopping(ranking, rng):
    X, y, sizes = ranking
    qid = np.repeat(np.arange(sizes.size), sizes)
    Xv = rng.normal(size=(200, 5))
    yv = rng.integers(0, 4, size=200).astype(float)  # unrelated labels: validation loss rises soon
    obj = xgboost_objective("pointwise", link="identity")
    dv = xgb.DMatrix(Xv, yv)
    history = {}
    booster = obj.train(
        {**PARAMS, "eval_metric": "rmse"},
        xgb.DMatrix(X, y, qid=qid),
        200,
        data=X,
        evals=[(dv, "valid")],
        early_stopping_rounds=5,
        evals_result=history,
    )
    assert booster.num_boosted_rounds() < 200
    assert len(history["valid"]["rmse"]) == booster.num_boosted_rounds()
    assert dv.get_base_margin().size == 200  # evaluation data starts from the intercept as well


def test_multiclass_layout(rng):
    X = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    loss = get_loss("composite_softmax", scaling="constant", target="link")
    obj = xgboost_objective(loss, hessian="exact")
    seen = []

    def spy(preds, dtrain):
        g, h = obj(preds, dtrain)
        seen.append((preds.copy(), g, h))
        return g, h

    d = obj.set_base_margin(xgb.DMatrix(X, y))
    booster = xgb.train({**PARAMS, "num_class": 3}, d, 4, obj=spy)
    for preds, g, h in seen:
        assert preds.shape == g.shape == (300, 3)
        g_ref, h_ref = loss.grad_hess(preds.astype(np.float64), y)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(h, h_ref, rtol=1e-10, atol=1e-12)
    scores = obj.predict(booster, X)
    assert scores.shape == (300, 3) and np.mean(np.argmax(scores, axis=1) == y) > 0.9
    # old XGBoost: flat row-major predictions
    g2, h2 = obj(y, seen[0][0].reshape(-1))
    np.testing.assert_allclose(g2, seen[0][1])


def test_multi_target_score_labels(rng):
    """[n, K] labels (e.g. teacher logits) are score targets of a composite softmax."""
    X = rng.normal(size=(200, 3))
    teacher = np.column_stack([X[:, 0], -X[:, 0], 0.5 * X[:, 1]])
    loss = get_loss("composite_softmax", scaling="exp")
    obj = xgboost_objective(loss, hessian="exact", label_scale=1.0)
    d = xgb.DMatrix(X, teacher)
    z = rng.normal(size=(200, 3))
    g, h = obj(z, d)
    g_ref, h_ref = loss.grad_hess(
        z, teacher.astype(np.float32).astype(np.float64)
    )  # DMatrix labels are float32
    np.testing.assert_allclose(g, g_ref, rtol=1e-10)
    booster = obj.train(
        {**PARAMS, "num_target": 3, "multi_strategy": "one_output_per_tree"},
        xgb.DMatrix(X, teacher),
        5,
    )
    assert obj.predict(booster, X).shape == (200, 3)


def test_sklearn_regressor_and_classifier(rng):
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=400)
    w = rng.uniform(0.5, 2.0, size=400)
    obj = xgboost_objective("pointwise", link="identity")
    reg = xgb.XGBRegressor(objective=obj, n_estimators=10, max_depth=3, n_jobs=1, base_score=0.0)
    with pytest.warns(UserWarning, match="optimal constant"):  # XGBRegressor starts from base_score
        reg.fit(X, y, sample_weight=w)
    ref = xgb.XGBRegressor(
        objective="reg:squarederror", n_estimators=10, max_depth=3, n_jobs=1, base_score=0.0
    )
    ref.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(reg.predict(X), ref.predict(X), rtol=1e-5, atol=1e-5)
    yc = np.digitize(X[:, 0], [-0.5, 0.5])
    clf = xgb.XGBClassifier(
        objective=xgboost_objective("composite_softmax", scaling="constant", target="link"),
        n_estimators=10,
        max_depth=3,
        n_jobs=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, yc)
    margin = clf.predict(X, output_margin=True)
    assert margin.shape == (400, 3) and np.mean(np.argmax(margin, axis=1) == yc) > 0.9


def test_xgbranker_refuses_callables(ranking):
    """Documented limitation: XGBRanker does not take a callable objective."""
    X, y, sizes = ranking
    with pytest.raises(ValueError, match="not supported by XGBRanker"):
        xgb.XGBRanker(objective=xgboost_objective("listwise")).fit(
            X, y, qid=np.repeat(np.arange(sizes.size), sizes)
        )


class TestValidation:
    def test_group_loss_without_groups(self, rng):
        obj = xgboost_objective("listwise")
        with pytest.raises(ValueError, match="needs query groups"):
            xgb.train(
                PARAMS, xgb.DMatrix(rng.normal(size=(30, 2)), rng.integers(0, 3, 30)), 2, obj=obj
            )

    def test_nan_label_before_training(self, rng):
        y = rng.normal(size=30)
        y[4] = np.nan
        # XGBoost refuses NaN labels itself when the DMatrix is built; arrays are checked by the adapter
        with pytest.raises(xgb.core.XGBoostError, match="Label contains NaN"):
            xgb.DMatrix(rng.normal(size=(30, 2)), y)
        with pytest.raises(ValueError, match="finite"):
            xgboost_objective("pointwise", link="identity").fit_intercept(y)

    def test_unsorted_qid_is_refused_by_xgboost(self, rng):
        with pytest.raises(xgb.core.XGBoostError, match="sorted"):
            xgb.DMatrix(rng.normal(size=(4, 2)), np.zeros(4), qid=[1, 0, 1, 0])

    def test_label_outside_domain(self, rng):
        y = rng.uniform(0.1, 0.9, size=30)
        y[2] = -0.5
        with pytest.raises(ValueError, match="domain"):
            xgboost_objective("pointwise", link="logit").set_base_margin(
                xgb.DMatrix(rng.normal(size=(30, 2)), y)
            )

    def test_dart_device_loop(self, ranking):
        X, y, sizes = ranking
        obj = xgboost_objective("pointwise")
        with pytest.raises(ValueError, match="dart"):
            obj.train({**PARAMS, "booster": "dart"}, xgb.DMatrix(X, y), 2, data=X)


def test_objective_type():
    assert isinstance(xgboost_objective("pointwise"), XGBoostObjective)
