"""The LightGBM adapter with real LightGBM: lightgbm.train, the LGBM* classes, multi-class
layouts, init scores, equivalences with built-in objectives, validation before training."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from selrank.gbdt import LightGBMObjective, lightgbm_objective  # noqa: E402
from selrank.losses import get_loss  # noqa: E402

PARAMS = {
    "verbosity": -1,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_leaves": 7,
    "learning_rate": 0.1,
    "min_data_in_leaf": 10,
}


@pytest.fixture
def ranking(rng):
    sizes = rng.integers(5, 25, size=30)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n) + 1.0), 0, 3)
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0}
    return X, y, sizes


def test_train_passes_core_gradients(ranking, rng):
    """What lightgbm.train hands the objective (label, group, weight) gives the core's gradients."""
    X, y, sizes = ranking
    w = rng.uniform(0.5, 2.0, size=y.size)
    loss = get_loss("listwise", scaling="exp")
    obj = lightgbm_objective(loss, hessian="exact", label_scale=1.0)
    seen = []

    def spy(preds, dataset):
        g, h = obj(preds, dataset)
        seen.append((preds.copy(), g, h))
        return g, h

    train = obj.set_init_score(lgb.Dataset(X, y, group=sizes, weight=w))
    lgb.train({**PARAMS, "objective": spy}, train, num_boost_round=3)
    assert len(seen) == 3
    w32 = w.astype(np.float32)  # LightGBM keeps weights in float32
    for preds, g, h in seen:
        g_ref, h_ref = loss.grad_hess(preds, y, group=sizes, sample_weight=w32)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(h, h_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        seen[0][0], obj.intercept_
    )  # training started at the optimal constant


def test_identity_link_reproduces_regression(rng):
    X = rng.normal(size=(800, 4))
    y = 2.0 * X[:, 0] + rng.normal(size=800) + 5.0
    ref = lgb.train({**PARAMS, "objective": "regression"}, lgb.Dataset(X, y), 25)
    obj = lightgbm_objective(
        "pointwise", link="identity"
    )  # default Hessian policy: identity is untouched
    booster = lgb.train({**PARAMS, "objective": obj}, obj.set_init_score(lgb.Dataset(X, y)), 25)
    assert obj.intercept_ == pytest.approx(y.mean())
    np.testing.assert_allclose(obj.predict(booster, X), ref.predict(X), rtol=1e-9, atol=1e-9)


def test_sigmoid_link_reproduces_cross_entropy(rng):
    X = rng.normal(size=(800, 4))
    y = (X[:, 0] + rng.normal(size=800) > 0.3).astype(float)
    ref = lgb.train({**PARAMS, "objective": "cross_entropy"}, lgb.Dataset(X, y), 25)
    obj = lightgbm_objective("pointwise", link="sigmoid", target="link", hessian="exact")
    booster = lgb.train({**PARAMS, "objective": obj}, obj.set_init_score(lgb.Dataset(X, y)), 25)
    np.testing.assert_allclose(
        obj.predict(booster, X), ref.predict(X, raw_score=True), rtol=1e-9, atol=1e-9
    )


@pytest.mark.parametrize("loss", ["listwise", "pairwise"])
def test_lgbm_ranker_gets_the_group(ranking, loss):
    """LGBMRanker(objective=obj) trains the same model as lightgbm.train with the Dataset's group."""
    X, y, sizes = ranking
    obj_a = lightgbm_objective(loss)
    ref = lgb.train(
        {**PARAMS, "objective": obj_a}, obj_a.set_init_score(lgb.Dataset(X, y, group=sizes)), 10
    )
    obj_b = lightgbm_objective(loss)
    c = obj_b.fit_intercept(y, group=sizes)
    ranker = lgb.LGBMRanker(
        objective=obj_b,
        n_estimators=10,
        num_leaves=7,
        learning_rate=0.1,
        min_child_samples=10,
        n_jobs=1,
        deterministic=True,
        force_row_wise=True,
        verbosity=-1,
    )
    ranker.fit(X, y, group=sizes, init_score=np.full(y.size, c))
    # equal up to float32 rounding of LightGBM's gradients
    np.testing.assert_allclose(
        ranker.predict(X, raw_score=True) + c, obj_a.predict(ref, X), rtol=1e-6, atol=1e-6
    )


def test_group_given_to_the_objective(ranking):
    """For LightGBM < 4.7 (no group for callables) the group can be given to the objective."""
    X, y, sizes = ranking
    obj = lightgbm_objective("listwise", group=sizes, hessian="exact")
    with pytest.warns(UserWarning, match="optimal constant"):  # zeros are not the intercept
        g, h = obj(y, np.zeros(y.size))  # the 2-argument scikit-learn form
    g_ref, h_ref = get_loss("listwise", gamma=1.0).grad_hess(np.zeros(y.size), y, group=sizes)
    np.testing.assert_allclose(g, g_ref)
    np.testing.assert_allclose(h, h_ref)


def test_regressor_and_classifier_classes(rng):
    X = rng.normal(size=(500, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=500)
    w = rng.uniform(0.5, 2.0, size=500)
    obj = lightgbm_objective("pointwise", link="identity")
    reg = lgb.LGBMRegressor(
        objective=obj, n_estimators=15, n_jobs=1, verbosity=-1, deterministic=True
    )
    with pytest.warns(
        UserWarning, match="optimal constant"
    ):  # LGBMRegressor starts custom objectives at 0
        reg.fit(X, y, sample_weight=w)
    ref = lgb.LGBMRegressor(
        objective="regression",
        n_estimators=15,
        n_jobs=1,
        verbosity=-1,
        deterministic=True,
        boost_from_average=False,
    )
    ref.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(reg.predict(X), ref.predict(X), rtol=1e-6, atol=1e-6)
    yb = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # LightGBM: raw scores for custom objectives; our start warning
        clf = lgb.LGBMClassifier(
            objective=lightgbm_objective("pointwise", link="sigmoid", target="link"),
            n_estimators=15,
            n_jobs=1,
            verbosity=-1,
        ).fit(X, yb)
        raw = clf.predict(X, raw_score=True)
    assert np.mean((raw > 0) == yb) > 0.95


class TestMulticlass:
    def test_train_layout_and_gradients(self, rng):
        X = rng.normal(size=(300, 4))
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
        loss = get_loss("composite_softmax", scaling="exp")
        obj = lightgbm_objective(loss, hessian="exact", label_scale=1.0)
        seen = []

        def spy(preds, dataset):
            g, h = obj(preds, dataset)
            seen.append((preds.copy(), g, h))
            return g, h

        train = obj.set_init_score(lgb.Dataset(X, y, params={"num_class": 3}))
        booster = lgb.train({**PARAMS, "objective": spy, "num_class": 3}, train, 4)
        targets = np.eye(3)[y.astype(int)]
        for preds, g, h in seen:
            assert preds.shape == g.shape == (300, 3)
            g_ref, h_ref = loss.grad_hess(preds, targets)
            np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(h, h_ref, rtol=1e-10, atol=1e-12)
        scores = obj.predict(booster, X)
        assert scores.shape == (300, 3)
        assert np.mean(np.argmax(scores, axis=1) == y) > 0.9

    def test_flat_class_major_layout(self, rng):
        """LightGBM 3 passes [K * n] class-major predictions: the same gradients come back flat."""
        y = rng.integers(0, 3, size=20).astype(float)
        z = rng.normal(size=(20, 3))
        obj = lightgbm_objective(
            "composite_softmax", scaling="constant", target="link", hessian="exact"
        )
        g2, h2 = obj(y, z)
        g1, h1 = obj(y, z.T.reshape(-1))
        np.testing.assert_allclose(g1, g2.T.reshape(-1))
        np.testing.assert_allclose(h1, h2.T.reshape(-1))


class TestValidationBeforeTraining:
    def test_nan_label(self, rng):
        X = rng.normal(size=(50, 2))
        y = rng.normal(size=50)
        y[7] = np.nan
        obj = lightgbm_objective("pointwise", link="identity")
        with pytest.raises(ValueError, match="finite"):
            obj.set_init_score(lgb.Dataset(X, y))
        # LightGBM itself turns a NaN label into 0 when it constructs the Dataset, which is why
        # the labels must be checked before (set_init_score, or the estimators' fit)
        d = lgb.Dataset(X, y, params={"verbosity": -1}).construct()
        assert np.isfinite(d.get_label()).all()

    def test_inf_weight(self, rng):
        X = rng.normal(size=(50, 2))
        w = np.ones(50)
        w[3] = np.inf
        obj = lightgbm_objective("pointwise", link="identity")
        with pytest.raises(ValueError, match="finite"):
            obj.set_init_score(lgb.Dataset(X, rng.normal(size=50), weight=w))

    def test_group_sizes_must_add_up(self, rng):
        X = rng.normal(size=(50, 2))
        obj = lightgbm_objective("listwise")
        with pytest.raises(ValueError, match="add up to 40 rows but the data has 50"):
            obj.set_init_score(lgb.Dataset(X, rng.integers(0, 3, 50).astype(float), group=[20, 20]))

    def test_label_outside_domain(self, rng):
        X = rng.normal(size=(50, 2))
        y = rng.uniform(0.1, 0.9, size=50)
        y[0] = 1.2
        obj = lightgbm_objective("pointwise", link="logit")
        with pytest.raises(ValueError, match=r"domain \(0.0, 1.0\) of the logit link"):
            obj.set_init_score(lgb.Dataset(X, y))

    def test_missing_group(self, rng):
        X = rng.normal(size=(50, 2))
        obj = lightgbm_objective("pairwise")
        with pytest.raises(ValueError, match="needs query groups"):
            lgb.train(
                {**PARAMS, "objective": obj},
                lgb.Dataset(X, rng.integers(0, 3, 50).astype(float)),
                2,
            )


def test_warns_when_not_started_from_the_intercept(rng):
    X = rng.normal(size=(200, 2))
    y = X[:, 0] + 10.0
    obj = lightgbm_objective("pointwise", link="identity")
    train = lgb.Dataset(X, y)
    obj.fit_intercept(train)  # labels checked, but no init score set
    with pytest.warns(UserWarning, match="instead of the loss's optimal constant"):
        lgb.train({**PARAMS, "objective": obj}, train, 2)


def test_objective_is_a_lightgbm_objective():
    obj = lightgbm_objective("listwise", scaling="exp", alpha=0.5)
    assert isinstance(obj, LightGBMObjective)
    assert "ExpScaling(alpha=0.5" in repr(obj)
    with pytest.raises(TypeError, match="lightgbm.Dataset"):
        obj.set_init_score(np.zeros(3))
