"""Issue 18: messages that say what to do, and habits accepted as their library means them."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor  # noqa: E402
from selrank.losses import Listwise, Pairwise, Pointwise, get_loss  # noqa: E402
from selrank.metrics import evaluate, parse_metric  # noqa: E402

FAST = {"num_threads": 1, "deterministic": True, "force_row_wise": True, "num_leaves": 7}


def ranking(rng, n_queries=20, size=10):
    n = n_queries * size
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1), 0, 3)
    return X, y, np.full(n_queries, size)


# -- objective= (LightGBM / XGBoost habit) ------------------------------------------------------
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
@pytest.mark.parametrize(
    ("key", "value", "hint"),
    [
        ("objective", "lambdarank", "loss='listwise'"),
        ("objective", "rank:ndcg", "loss='listwise'"),
        ("objective", "rank_xendcg", "loss='pairwise'"),
        ("application", "lambdarank", "loss='listwise'"),
        ("objective", "regression", "SelectiveRegressor"),
        ("objective", "binary", "SelectiveClassifier"),
    ],
)
def test_objective_is_refused_with_the_loss_to_use(backend, key, value, hint, rng):
    pytest.importorskip("xgboost")
    X, y, g = ranking(rng)
    with pytest.raises(ValueError, match=rf"got {key}=.*`loss=`.*{hint}.*LGBMRanker"):
        SelectiveRanker(n_estimators=2, backend=backend, **{key: value}).fit(X, y, group=g)


def test_objective_is_refused_on_regressor_and_classifier(rng):
    X, y, _ = ranking(rng)
    with pytest.raises(ValueError, match="got objective='regression'.*SelectiveRegressor"):
        SelectiveRegressor(n_estimators=2, objective="regression").fit(X, y)
    with pytest.raises(ValueError, match="got objective='binary'.*SelectiveClassifier"):
        SelectiveClassifier(n_estimators=2, objective="binary").fit(X, y > 1)


# -- random_state as scikit-learn takes it -------------------------------------------------------
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_random_state_accepts_a_numpy_random_state(backend, rng):
    pytest.importorskip("xgboost")
    X, y, g = ranking(rng)
    params = {"n_estimators": 5, "backend": backend, "subsample": 0.5}
    if backend == "lightgbm":
        params.update(FAST, bagging_freq=1)
    a = SelectiveRanker(random_state=np.random.RandomState(0), **params).fit(X, y, group=g)
    b = SelectiveRanker(random_state=np.random.RandomState(0), **params).fit(X, y, group=g)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    c = SelectiveRanker(random_state=np.random.default_rng(0), **params).fit(X, y, group=g)
    assert np.all(np.isfinite(c.predict(X)))


def test_random_state_of_a_wrong_type_is_refused(rng):
    X, y, g = ranking(rng)
    with pytest.raises(TypeError, match="`random_state` must be None, an int, or a numpy"):
        SelectiveRanker(n_estimators=2, random_state="0", **FAST).fit(X, y, group=g)


def test_torch_backend_accepts_a_numpy_random_state(rng):
    pytest.importorskip("torch")
    X, y, g = ranking(rng)
    a = SelectiveRanker(backend="torch", epochs=1, random_state=np.random.RandomState(1))
    b = SelectiveRanker(backend="torch", epochs=1, random_state=np.random.RandomState(1))
    np.testing.assert_allclose(a.fit(X, y, group=g).predict(X), b.fit(X, y, group=g).predict(X))


# -- verbose=-1 silences LightGBM ---------------------------------------------------------------
@pytest.mark.parametrize("verbose", [-1, 0, False])
def test_verbose_minus_one_is_silent(verbose, rng, capfd):
    X, y, g = ranking(rng)
    X[:, 3] = 1.0  # a constant feature: LightGBM logs about it when verbose
    SelectiveRanker(n_estimators=3, verbose=verbose, **FAST).fit(X, y, group=g)
    out, err = capfd.readouterr()
    assert "[LightGBM]" not in out + err


def test_verbose_true_still_logs(rng, capfd):
    X, y, g = ranking(rng)
    X[:, 3] = 1.0
    SelectiveRanker(n_estimators=3, verbose=True, **FAST).fit(X, y, group=g)
    out, err = capfd.readouterr()
    assert "[LightGBM]" in out + err


# -- a link given to a listwise loss, a scaling to a pointwise / pairwise one -------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: Listwise(scaling="exp", link="sinh"),
        lambda: get_loss("listwise", link="sinh"),
        lambda: SelectiveRanker(loss="listwise", link="sinh")._build_loss(),
    ],
)
def test_link_given_to_a_listwise_loss(make):
    with pytest.raises(
        ValueError, match=r"takes a `scaling`, not a `link`.*pointwise and pairwise"
    ):
        make()


@pytest.mark.parametrize("cls", [Pointwise, Pairwise])
def test_scaling_given_to_a_pointwise_or_pairwise_loss(cls):
    with pytest.raises(ValueError, match=r"takes a `link`, not a `scaling`.*Listwise\(scaling"):
        cls(link="exp", scaling="exp")


# -- metric lists as one string -----------------------------------------------------------------
def test_metric_list_as_one_string_is_split_as_lightgbm_does():
    pytest.importorskip("polars")
    y, s, g = [2, 1, 0, 0, 0], [0.3, 0.2, 0.1, 0.5, 0.4], [3, 2]
    one = evaluate(y, s, g, metrics="ndcg@10,map")
    two = evaluate(y, s, g, metrics=["ndcg@10", "map"])
    assert one.equals(two) and one["metric"].to_list() == ["ndcg@10", "map"]


def test_metric_list_in_trec_evaluation():
    pytest.importorskip("polars")
    from selrank.metrics import evaluate_run

    qrels = {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d4": 1}}
    run = {"q1": {"d1": 0.3, "d2": 0.5, "d3": 0.1}, "q2": {"d4": 0.2, "d5": 0.9}}
    one = evaluate_run(qrels, run, metrics="ndcg@10, map")
    two = evaluate_run(qrels, run, metrics=["ndcg@10", "map"])
    assert one.equals(two) and one.height == 2


def test_parse_metric_of_a_list_says_to_split():
    with pytest.raises(ValueError, match=r"names several metrics.*\['ndcg@10', 'map'\]"):
        parse_metric("ndcg@10,map")


# -- scikit-learn's 2-D ranking-metric convention -----------------------------------------------
@pytest.mark.parametrize("k", [None, 1, 2, 3])
def test_ndcg_of_2d_arrays_is_one_query_per_row_as_sklearn(k, rng):
    from sklearn.metrics import ndcg_score

    from selrank.metrics import ndcg

    yt = rng.integers(0, 4, size=(6, 5)).astype(float)
    yt[:, 0] = 1.0  # every query has a relevant document
    ys = rng.normal(size=(6, 5))
    ours = ndcg(yt, ys, k=k, gain="linear", ties="average", no_relevant="zero")
    assert ours == pytest.approx(ndcg_score(yt, ys, k=k))
    flat = ndcg(yt.reshape(-1), ys.reshape(-1), [5] * 6, k=k, gain="linear")
    assert ours == pytest.approx(flat)
    with pytest.raises(ValueError, match="one query per row"):
        ndcg(yt, ys, group=[5] * 6)
    with pytest.raises(ValueError, match="same shape"):
        ndcg(yt, ys[:, :4])
