"""LightGBM's fit conventions on the estimators with backend="lightgbm" (issue 30): eval_names,
eval_metric, init_score, feature_name, categorical_feature, best_score_, init_model as a path,
importance_type — each checked against what lightgbm.sklearn does on the same data."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor  # noqa: E402

FAST = {"num_leaves": 7, "min_data_in_leaf": 5, "random_state": 0}


@pytest.fixture
def ranking():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=400) + 1), 0, 2)
    return X, y, [20] * 20


def _split(X, y):
    return (X[:300], y[:300], [20] * 15), (X[300:], y[300:], [20] * 5)


def test_eval_names_name_the_history_and_best_score_like_lightgbm(ranking):
    X, y, _ = ranking
    (Xt, yt, gt), (Xv, yv, gv) = _split(X, y)
    est = SelectiveRanker(n_estimators=20, early_stopping_rounds=5, **FAST).fit(
        Xt,
        yt,
        group=gt,
        eval_set=[(Xv, yv), (Xt, yt)],
        eval_group=[gv, gt],
        eval_names=["valid", "train"],
    )
    assert list(est.evals_result_) == ["valid", "train"]
    assert set(est.best_score_) == {"valid", "train"}
    kept = est.best_iteration_ or len(est.evals_result_["valid"]["ndcg@10"])
    assert est.best_score_["valid"]["ndcg@10"] == pytest.approx(
        est.evals_result_["valid"]["ndcg@10"][kept - 1]
    )
    # LightGBM's own estimator: the same layout of best_score_ ({set: {metric: value}})
    ref = lgb.LGBMRanker(n_estimators=5, verbose=-1).fit(
        Xt, yt, group=gt, eval_set=[(Xv, yv)], eval_group=[gv], eval_names=["valid"], eval_at=[10]
    )
    assert set(ref.best_score_) == {"valid"} and isinstance(dict(ref.best_score_["valid"]), dict)
    with pytest.raises(ValueError, match="one non-empty name per eval_set item"):
        SelectiveRanker(n_estimators=2, **FAST).fit(
            Xt, yt, group=gt, eval_set=[(Xv, yv)], eval_group=[gv], eval_names=["a", "b"]
        )


def test_eval_metric_records_more_metrics_and_early_stopping_stays_on_ndcg(ranking):
    X, y, _ = ranking
    (Xt, yt, gt), (Xv, yv, gv) = _split(X, y)
    kw = {"group": gt, "eval_set": [(Xv, yv)], "eval_group": [gv]}
    plain = SelectiveRanker(n_estimators=40, early_stopping_rounds=3, **FAST).fit(Xt, yt, **kw)

    def mean_score(y_true, y_pred):
        return "mean_score", float(np.mean(y_pred)), True

    more = SelectiveRanker(n_estimators=40, early_stopping_rounds=3, **FAST).fit(
        Xt, yt, eval_metric=["l2", mean_score], **kw
    )
    assert set(more.evals_result_["valid_0"]) == {"ndcg@10", "l2", "mean_score"}
    assert more.best_iteration_ == plain.best_iteration_  # NDCG still decides
    np.testing.assert_allclose(
        more.evals_result_["valid_0"]["ndcg@10"], plain.evals_result_["valid_0"]["ndcg@10"]
    )
    assert more.best_score_["valid_0"]["l2"] > 0


def test_init_score_is_the_start_and_predictions_exclude_it_as_in_lightgbm():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = 3.0 * X[:, 0] + 10.0
    ours = SelectiveRegressor(n_estimators=10, **FAST).fit(X, y, init_score=y)
    ref = lgb.LGBMRegressor(n_estimators=10, num_leaves=7, min_child_samples=5, verbose=-1).fit(
        X, y, init_score=y
    )
    assert ours.intercept_ == 0.0
    # the start is already exact: the trees add (almost) nothing, in both libraries
    assert np.max(np.abs(ours.predict(X))) < 1e-6
    assert np.max(np.abs(ref.predict(X))) < 1e-6
    without = SelectiveRegressor(n_estimators=10, **FAST).fit(X, y)
    assert abs(np.mean(without.predict(X)) - 10.0) < 0.5
    import warnings

    with warnings.catch_warnings():  # a chosen constant start draws no "starts from" advice
        warnings.simplefilter("error")
        zero = SelectiveRegressor(n_estimators=3, **FAST).fit(X, y, init_score=np.zeros(300))
    assert zero.intercept_ == 0.0
    with pytest.raises(ValueError, match=r"`init_score` must have shape \(300,\)"):
        SelectiveRegressor(n_estimators=2, **FAST).fit(X, y, init_score=y[:10])


def test_feature_name_and_categorical_feature_reach_the_lightgbm_dataset():
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.integers(0, 4, 400), rng.normal(size=400)]).astype(float)
    y = (X[:, 0] == 2).astype(float) * 2 + 0.1 * X[:, 1]
    est = SelectiveRegressor(n_estimators=10, **FAST).fit(
        X, y, feature_name=["shop", "price"], categorical_feature=["shop"]
    )
    assert est.booster_.feature_name() == ["shop", "price"]
    infos = est.booster_.dump_model()["feature_infos"]
    assert infos["shop"]["values"]  # a category list: a categorical feature
    assert infos["price"]["values"] == []  # a numeric range
    by_index = SelectiveRegressor(n_estimators=10, **FAST).fit(X, y, categorical_feature=[0])
    np.testing.assert_allclose(by_index.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="not a feature name"):
        SelectiveRegressor(n_estimators=2, **FAST).fit(X, y, categorical_feature=["city"])


def test_init_model_may_be_a_lightgbm_model_file(ranking, tmp_path):
    X, y, group = ranking
    first = SelectiveRanker(n_estimators=5, **FAST).fit(X, y, group=group)
    path = tmp_path / "model.txt"
    first.booster_.save_model(str(path))
    from_path = SelectiveRanker(n_estimators=5, **FAST).fit(X, y, group=group, init_model=path)
    from_booster = SelectiveRanker(n_estimators=5, **FAST).fit(
        X, y, group=group, init_model=lgb.Booster(model_file=str(path))
    )
    np.testing.assert_allclose(from_path.predict(X), from_booster.predict(X))
    assert from_path.booster_.current_iteration() == 10
    bad = tmp_path / "not_a_model.json"
    first.save(bad)
    with pytest.raises(ValueError, match=r"not a LightGBM model file.*SelectiveRanker.load"):
        SelectiveRanker(n_estimators=2, **FAST).fit(X, y, group=group, init_model=str(bad))


def test_importance_type_as_lightgbm_means_it(ranking):
    X, y, group = ranking
    default = SelectiveRanker(n_estimators=10, **FAST).fit(X, y, group=group)
    assert default.feature_importances_.sum() == pytest.approx(1.0)  # unchanged default
    for kind in ("split", "gain"):
        est = SelectiveRanker(n_estimators=10, importance_type=kind, **FAST).fit(X, y, group=group)
        np.testing.assert_allclose(
            est.feature_importances_, est.booster_.feature_importance(importance_type=kind)
        )
    assert SelectiveRanker(importance_type="split").get_params()["importance_type"] == "split"
    cover = SelectiveRanker(n_estimators=2, importance_type="cover", **FAST).fit(X, y, group=group)
    with pytest.raises(ValueError, match="'split' or 'gain'"):
        _ = cover.feature_importances_


def test_lightgbm_fit_options_are_refused_on_the_other_backends(ranking):
    pytest.importorskip("xgboost")
    X, y, group = ranking
    with pytest.raises(ValueError, match=r"LightGBM fit options.*backend='xgboost'"):
        SelectiveRanker(backend="xgboost", n_estimators=2).fit(
            X, y, group=group, feature_name=list("abcd")
        )
    with pytest.raises(ValueError, match=r"LightGBM fit options"):
        SelectiveClassifier(backend="xgboost", n_estimators=2).fit(
            X, (y > 0).astype(int), init_score=np.zeros(len(y))
        )
