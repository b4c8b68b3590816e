"""Issue 18: habits from LightGBM, scikit-learn, PyTorch and ranx work, or are refused clearly."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")
pd = pytest.importorskip("pandas")

import sklearn  # noqa: E402
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score  # noqa: E402

from selrank import SelectiveRanker  # noqa: E402
from selrank.estimators import ndcg_scorer  # noqa: E402

FAST = {"num_threads": 1, "deterministic": True, "force_row_wise": True, "num_leaves": 7}


def ranking(rng, n_queries=20, size=10, n_features=4):
    n = n_queries * size
    X = rng.normal(size=(n, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1), 0, 3)
    return X, y, np.repeat(np.arange(n_queries), size)


# -- grouped evaluation without groups ---------------------------------------------------------
def test_ndcg_scorer_without_qid_refuses_naming_routing_and_qid(rng):
    """ndcg_scorer(10)(model, X, y) without qid returned 1.0 (all rows one list)."""
    X, y, qid = ranking(rng)
    est = SelectiveRanker(n_estimators=5, **FAST).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=r"no query groups.*qid=.*enable_metadata_routing"):
        ndcg_scorer(10)(est, X, y)
    with sklearn.config_context(enable_metadata_routing=True):
        assert 0 < ndcg_scorer(10)(est, X, y, qid=qid) <= 1


@pytest.mark.filterwarnings("ignore:no query groups given:UserWarning")
def test_grid_search_without_routing_refuses_instead_of_scoring_each_fold_as_one_query(rng):
    X, y, qid = ranking(rng)
    search = GridSearchCV(
        SelectiveRanker(n_estimators=3, **FAST),
        {"learning_rate": [0.1]},
        cv=GroupKFold(2),
        scoring=ndcg_scorer(10),
        error_score="raise",
    )
    with pytest.raises(ValueError, match=r"ndcg_scorer\(k=10\) got no query groups.*qid="):
        search.fit(X, y, groups=qid)


@pytest.mark.filterwarnings("ignore:no query groups given:UserWarning")
def test_default_scoring_without_routing_refuses(rng):
    """scoring=None uses est.score, which ranked the fold as one list (with a warning)."""
    X, y, qid = ranking(rng)
    with pytest.raises(
        ValueError, match=r"SelectiveRanker.score got no query groups.*routing|route"
    ):
        cross_val_score(
            SelectiveRanker(n_estimators=3, **FAST), X, y, cv=GroupKFold(2), groups=qid,
            error_score="raise",
        )  # fmt: skip


def test_routed_search_still_scores_by_query(rng):
    X, y, qid = ranking(rng)
    with sklearn.config_context(enable_metadata_routing=True):
        est = SelectiveRanker(n_estimators=5, **FAST).set_fit_request(qid=True)
        scores = cross_val_score(
            est, X, y, cv=GroupKFold(2), scoring=ndcg_scorer(10),
            params={"qid": qid, "groups": qid},
        )  # fmt: skip
    assert scores.shape == (2,) and np.all((scores > 0) & (scores <= 1))


def test_estimator_score_without_groups_refuses(rng):
    X, y, qid = ranking(rng)
    est = SelectiveRanker(n_estimators=3, **FAST).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="no query groups"):
        est.score(X, y)
    assert est.score(X, y, qid=qid) == pytest.approx(est.score(X, y, group=[10] * 20))


def test_neural_ranker_score_and_fit_without_groups(rng):
    pytest.importorskip("torch")
    from selrank.estimators.neural import NeuralRanker

    X, y, qid = ranking(rng)
    with pytest.warns(UserWarning, match="no query groups given"):
        r = NeuralRanker(epochs=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="NeuralRanker.score got no query groups"):
        r.score(X, y)
    assert 0 < r.score(X, y, qid=qid) <= 1


# -- feature order: one validation path for every estimator ------------------------------------
def _frame(X):
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])


@pytest.mark.parametrize("make", ["torch-backend", "neural", "lightgbm"])
def test_reordered_or_missing_columns_are_refused_on_every_estimator(make, rng):
    X, y, qid = ranking(rng)
    df = _frame(X)
    if make == "lightgbm":
        est = SelectiveRanker(n_estimators=3, **FAST).fit(df, y, qid=qid)
    else:
        pytest.importorskip("torch")
        if make == "neural":
            from selrank.estimators.neural import NeuralRanker

            est = NeuralRanker(epochs=1, random_state=0).fit(df, y, qid=qid)
        else:
            est = SelectiveRanker(backend="torch", epochs=1, random_state=0).fit(df, y, qid=qid)
    assert list(est.feature_names_in_) == list(df.columns)
    np.testing.assert_allclose(est.predict(df), est.predict(df.copy()))
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(df[["f1", "f0", "f2", "f3"]])
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(df.rename(columns={"f3": "g"}))
    with pytest.raises(ValueError, match="feature names should match|features"):
        est.predict(df[["f0", "f1", "f2"]])


@pytest.mark.parametrize("make", ["torch-backend", "neural", "lightgbm"])
def test_eval_set_with_reordered_columns_is_refused(make, rng):
    X, y, qid = ranking(rng)
    df = _frame(X)
    shuffled = df[["f2", "f0", "f1", "f3"]]
    kw = {"eval_set": [(shuffled, y)], "eval_group": [[10] * 20]}
    if make == "lightgbm":
        est = SelectiveRanker(n_estimators=3, **FAST)
    else:
        pytest.importorskip("torch")
        from selrank.estimators.neural import NeuralRanker

        est = (
            NeuralRanker(epochs=1, random_state=0)
            if make == "neural"
            else SelectiveRanker(backend="torch", epochs=1, random_state=0)
        )
    with pytest.raises(ValueError, match="feature names should match"):
        est.fit(df, y, group=[10] * 20, **kw)


def test_neural_ranker_keeps_feature_names_through_save_and_load(rng, tmp_path):
    pytest.importorskip("torch")
    from selrank.estimators.neural import NeuralRanker

    X, y, qid = ranking(rng)
    df = _frame(X)
    r = NeuralRanker(epochs=1, random_state=0).fit(df, y, qid=qid)
    r.save(tmp_path / "m.pt")
    back = NeuralRanker.load(tmp_path / "m.pt")
    np.testing.assert_allclose(back.predict(df), r.predict(df), rtol=1e-6)
    with pytest.raises(ValueError, match="feature names should match"):
        back.predict(df[["f3", "f1", "f2", "f0"]])


# -- missing features: LightGBM callbacks, XGBoost per-query weights ----------------------------
def test_lightgbm_callbacks_in_fit(rng, capsys):
    X, y, qid = ranking(rng, n_queries=30)
    tr, va = qid < 20, qid >= 20
    seen = []
    est = SelectiveRanker(n_estimators=200, learning_rate=0.3, **FAST).fit(
        X[tr], y[tr], qid=qid[tr], eval_set=[(X[va], y[va])], eval_qid=[qid[va]],
        callbacks=[lgb.early_stopping(3, verbose=False), lgb.log_evaluation(1),
                   lambda env: seen.append(env.iteration)],
    )  # fmt: skip
    assert seen and est.best_iteration_ is not None and est.best_iteration_ < 200
    assert len(seen) < 200  # the user's early stopping stopped training
    assert "valid_0" in capsys.readouterr().out  # log_evaluation printed the metric


def test_callbacks_on_regressor_and_refused_on_torch(rng):
    from selrank import SelectiveRegressor

    X, y, qid = ranking(rng)
    seen = []
    SelectiveRegressor(n_estimators=4, **FAST).fit(X, y, callbacks=[lambda env: seen.append(1)])
    assert len(seen) == 4
    with pytest.raises(TypeError, match="`callbacks` must be a list"):
        SelectiveRegressor(n_estimators=2, **FAST).fit(X, y, callbacks=lgb.log_evaluation(1))
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="backend='torch' takes neither"):
        SelectiveRanker(backend="torch", epochs=1).fit(X, y, qid=qid, callbacks=[])


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_per_query_sample_weight_as_xgboost_takes_it(backend, rng):
    if backend == "xgboost":
        pytest.importorskip("xgboost")
    X, y, qid = ranking(rng)
    wq = rng.uniform(0.5, 2.0, size=20)
    params = {"n_estimators": 5, "backend": backend, "random_state": 0}
    if backend == "lightgbm":
        params.update(FAST)
    else:
        params.update(nthread=1, max_depth=3)
    per_query = SelectiveRanker(**params).fit(X, y, qid=qid, sample_weight=wq)
    per_row = SelectiveRanker(**params).fit(X, y, qid=qid, sample_weight=np.repeat(wq, 10))
    np.testing.assert_allclose(per_query.predict(X), per_row.predict(X))
    unweighted = SelectiveRanker(**params).fit(X, y, qid=qid)
    assert not np.allclose(per_query.predict(X), unweighted.predict(X))
    with pytest.raises(ValueError, match=r"one weight per row \(200\) or one per query \(20"):
        SelectiveRanker(**params).fit(X, y, qid=qid, sample_weight=np.ones(7))


# -- monotone relabelling: label_scale="auto" scales labels by design ---------------------------
@pytest.mark.parametrize("factor", [0.1, 10.0, 50.0, 1000.0])
def test_affine_relabelling_gives_the_same_ranker(factor, rng):
    """Labels x50 were refused and x0.1 collapsed; any positive factor is now the same model."""
    X, y, qid = ranking(rng)
    base = SelectiveRanker(n_estimators=20, random_state=0, **FAST).fit(X, y, qid=qid)
    scaled = SelectiveRanker(n_estimators=20, random_state=0, **FAST).fit(X, factor * y, qid=qid)
    np.testing.assert_allclose(scaled.predict(X), base.predict(X), rtol=1e-6, atol=1e-9)
    assert scaled.label_scale_ == pytest.approx(base.label_scale_ / factor)


@pytest.mark.parametrize("relabel", [lambda g: np.round(2.0 ** (1.25 * g)) - 1, lambda g: g**3])
def test_monotone_relabelling_to_a_wide_range_does_not_collapse(relabel, rng):
    """Grades 0-3 mapped to 0-~31 (click counts) gave a collapsed fit (prediction std /15)."""
    X, y, qid = ranking(rng, n_queries=40)
    base = SelectiveRanker(n_estimators=30, random_state=0, **FAST).fit(X, y, qid=qid)
    wide = SelectiveRanker(n_estimators=30, random_state=0, **FAST).fit(X, relabel(y), qid=qid)
    assert np.std(wide.predict(X)) > 0.3 * np.std(base.predict(X))
    from selrank.metrics import ndcg

    assert ndcg(y, wide.predict(X), qid=qid, k=10) > ndcg(y, X[:, 1], qid=qid, k=10) + 0.1


def test_label_scale_auto_on_letor_grades_is_the_chosen_scale(rng):
    X, y, qid = ranking(rng)
    y = np.minimum(y, 2.0)
    est = SelectiveRanker(n_estimators=3, **FAST).fit(X, y, qid=qid)
    assert est.label_scale_ == 0.25
    with pytest.raises(TypeError, match="label_scale.*real number"):
        SelectiveRanker(n_estimators=3, label_scale="big", **FAST).fit(X, y, qid=qid)


@pytest.mark.filterwarnings("ignore:no query groups given:UserWarning")
@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
def test_grid_search_default_error_score_reports_the_refusal_not_a_score(rng):
    """With scikit-learn's default error_score=nan the fold scores are NaN and the warning
    carries the refusal (never a one-list NDCG)."""
    X, y, qid = ranking(rng)
    search = GridSearchCV(
        SelectiveRanker(n_estimators=3, **FAST), {"learning_rate": [0.1]},
        cv=GroupKFold(2), scoring=ndcg_scorer(10),
    )  # fmt: skip
    with pytest.warns(UserWarning, match=r"(?s)Scoring failed.*got no query groups.*qid="):
        search.fit(X, y, groups=qid)
    assert np.all(np.isnan(search.cv_results_["mean_test_score"]))


# -- init_model: continued training ------------------------------------------------------------
@pytest.mark.parametrize("loss", ["listwise", "pairwise", "pointwise"])
def test_init_model_continues_from_the_fitted_model(loss, rng):
    X, y, qid = ranking(rng)
    first = SelectiveRanker(loss, n_estimators=10, random_state=0, **FAST).fit(X, y, qid=qid)
    # one round at a vanishing learning rate predicts what the init model predicts
    same = SelectiveRanker(loss, n_estimators=1, learning_rate=1e-9, random_state=0, **FAST)
    same.fit(X, y, qid=qid, init_model=first)
    np.testing.assert_allclose(same.predict(X), first.predict(X), rtol=1e-7, atol=1e-7)
    # ten more rounds: the continued model equals one trained 20 rounds from scratch
    more = SelectiveRanker(loss, n_estimators=10, random_state=0, **FAST)
    more.fit(X, y, qid=qid, init_model=first)
    full = SelectiveRanker(loss, n_estimators=20, random_state=0, **FAST).fit(X, y, qid=qid)
    np.testing.assert_allclose(more.predict(X), full.predict(X), rtol=1e-6, atol=1e-6)
    assert more.booster_.num_trees() == 20


def test_continued_model_saves_and_loads(rng, tmp_path):
    X, y, qid = ranking(rng)
    first = SelectiveRanker(n_estimators=5, random_state=0, **FAST).fit(X, y, qid=qid)
    more = SelectiveRanker(n_estimators=5, random_state=0, **FAST)
    more.fit(X, y, qid=qid, init_model=first.booster_)  # a booster carries its intercept too
    more.save(tmp_path / "m.json")
    back = SelectiveRanker.load(tmp_path / "m.json")
    np.testing.assert_allclose(back.predict(X), more.predict(X))
    full = SelectiveRanker(n_estimators=10, random_state=0, **FAST).fit(X, y, qid=qid)
    np.testing.assert_allclose(more.predict(X), full.predict(X), rtol=1e-6, atol=1e-6)


def test_init_model_on_the_regressor_and_refusals(rng):
    from selrank import SelectiveRegressor

    X, y, qid = ranking(rng)
    r1 = SelectiveRegressor(n_estimators=10, random_state=0, **FAST).fit(X, y + 3)
    r2 = SelectiveRegressor(n_estimators=10, random_state=0, **FAST).fit(X, y + 3, init_model=r1)
    full = SelectiveRegressor(n_estimators=20, random_state=0, **FAST).fit(X, y + 3)
    np.testing.assert_allclose(r2.predict(X), full.predict(X), rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="`init_model` must be a fitted SelectiveRanker"):
        SelectiveRanker(n_estimators=2, **FAST).fit(X, y, qid=qid, init_model=r1)
    with pytest.raises(ValueError, match="backend='lightgbm'"):
        SelectiveRanker(n_estimators=2, backend="xgboost").fit(X, y, qid=qid, init_model=r1)


def test_init_model_on_a_multiclass_classifier(rng):
    from selrank import SelectiveClassifier

    X = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5])  # 3 classes
    first = SelectiveClassifier(n_estimators=5, random_state=0, **FAST).fit(X, y)
    more = SelectiveClassifier(n_estimators=5, random_state=0, **FAST).fit(X, y, init_model=first)
    full = SelectiveClassifier(n_estimators=10, random_state=0, **FAST).fit(X, y)
    np.testing.assert_allclose(more.predict_proba(X), full.predict_proba(X), rtol=1e-6, atol=1e-6)
