"""scikit-learn estimators: conventions, backends, early stopping, persistence, validation,
the two equivalences with LightGBM's built-in objectives, the torch routing."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from sklearn.base import clone  # noqa: E402

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor  # noqa: E402
from selrank.estimators import load  # noqa: E402
from selrank.losses import Listwise, get_loss  # noqa: E402

FAST = {
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_leaves": 7,
    "min_data_in_leaf": 10,
}
XFAST = {"nthread": 1, "max_depth": 3}


def make_ranking(rng, n_queries=40, signal=1.0):
    sizes = rng.integers(5, 30, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6))
    y = np.clip(np.round(signal * X[:, 0] + 0.5 * X[:, 1] + 0.6 * rng.normal(size=n) + 1.0), 0, 3)
    return X, y, sizes


@pytest.fixture
def ranking(rng):
    X, y, sizes = make_ranking(rng)
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0}
    return X, y, sizes


class TestConventions:
    def test_get_set_params_and_clone(self):
        r = SelectiveRanker(loss="pairwise", link="sigmoid", num_leaves=15, min_data_in_leaf=5)
        p = r.get_params()
        assert p["loss"] == "pairwise" and p["link"] == "sigmoid" and p["num_leaves"] == 15
        c = clone(r)
        assert c.get_params() == p and c is not r
        r.set_params(num_leaves=31, learning_rate=0.1)
        assert r.num_leaves == 31 and r.learning_rate == 0.1 and r.get_params()["num_leaves"] == 31
        assert "num_leaves=31" in repr(r)

    def test_fit_returns_self_and_fitted_attributes(self, ranking):
        X, y, sizes = ranking
        r = SelectiveRanker(n_estimators=5, **FAST)
        assert r.fit(X, y, group=sizes) is r
        assert r.n_features_in_ == 6 and r.booster_.current_iteration() == 5
        assert (
            isinstance(r.loss_, Listwise) and r.loss_.gamma == 4.0
        )  # the ranker's listwise default
        assert r.intercept_ == pytest.approx(r.objective_.intercept_)
        assert not hasattr(SelectiveRanker(), "booster_")

    def test_not_fitted(self):
        from sklearn.exceptions import NotFittedError

        with pytest.raises(NotFittedError):
            SelectiveRanker().predict(np.zeros((2, 3)))

    def test_loss_by_object(self, ranking):
        X, y, sizes = ranking
        loss = get_loss("listwise", scaling="sigmoid", gamma=0.5)
        r = SelectiveRanker(loss=loss, n_estimators=3, **FAST).fit(X, y, group=sizes)
        assert r.loss_ is loss
        with pytest.raises(ValueError, match="must be set on it"):
            SelectiveRanker(loss=loss, scaling="exp").fit(X, y, group=sizes)


class TestRanker:
    @pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
    @pytest.mark.parametrize("loss", ["listwise", "pairwise", "pointwise"])
    def test_learns_and_early_stops(self, rng, backend, loss):
        X, y, sizes = make_ranking(rng, n_queries=60)
        Xv, yv, sv = make_ranking(rng, n_queries=20)
        extra = FAST if backend == "lightgbm" else XFAST
        r = SelectiveRanker(
            loss=loss,
            backend=backend,
            n_estimators=200,
            early_stopping_rounds=10,
            learning_rate=0.2,
            **extra,
        )
        r.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
        assert r.best_iteration_ is not None and r.best_iteration_ < 200
        history = r.evals_result_["valid_0"]["ndcg@10"]
        assert len(history) == r.best_iteration_ + 10
        assert max(history) == pytest.approx(history[r.best_iteration_ - 1])
        random_scores = rng.normal(size=yv.size)
        from selrank.metrics import ndcg

        assert r.score(Xv, yv, group=sv) > ndcg(yv, random_scores, sv, k=10) + 0.1

    def test_group_as_query_ids(self, ranking):
        X, y, sizes = ranking
        qid = np.repeat(np.arange(100, 100 + sizes.size), sizes)
        a = SelectiveRanker(n_estimators=5, **FAST).fit(X, y, group=sizes)
        b = SelectiveRanker(n_estimators=5, **FAST).fit(X, y, qid=qid)
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
        with pytest.raises(ValueError, match="one value per row: for per-row query ids pass qid="):
            SelectiveRanker(n_estimators=5, **FAST).fit(
                X, y, group=qid
            )  # never guessed from the length

    def test_backend_parameters_pass_through(self, ranking):
        X, y, sizes = ranking
        r = SelectiveRanker(
            n_estimators=3, num_leaves=3, **{k: v for k, v in FAST.items() if k != "num_leaves"}
        )
        r.fit(X, y, group=sizes)
        assert r.booster_.params["num_leaves"] == 3
        assert max(t["num_leaves"] for t in r.booster_.dump_model()["tree_info"]) <= 3
        rx = SelectiveRanker(backend="xgboost", n_estimators=3, max_depth=1, nthread=1).fit(
            X, y, group=sizes
        )
        assert '"max_depth":"1"' in rx.booster_.save_config().replace(" ", "")

    def test_sample_weight_zero_queries_do_not_matter(self, rng):
        X, y, sizes = make_ranking(rng, n_queries=30)
        w = np.ones(y.size)
        w[: sizes[0]] = 0.0  # drop the first query by weight
        a = SelectiveRanker(n_estimators=5, **FAST).fit(X, y, group=sizes, sample_weight=w)
        y2 = y.copy()
        y2[: sizes[0]] = (
            3.0 - y2[: sizes[0]]
        )  # changing its labels changes nothing but the intercept
        b = SelectiveRanker(n_estimators=5, **FAST).fit(X, y2, group=sizes, sample_weight=w)
        np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-6)


class TestEquivalences:
    """The identity link is LightGBM's `regression`; the sigmoid link on 0/1 labels (link targets)
    is its `cross_entropy` (same predictions up to float rounding)."""

    def test_identity_is_regression(self, rng):
        X = rng.normal(size=(1000, 5))
        y = 3.0 * X[:, 0] - X[:, 1] + rng.normal(size=1000) + 2.0
        ours = SelectiveRegressor(n_estimators=40, learning_rate=0.1, **FAST).fit(X, y)
        ref = lgb.train(
            {"objective": "regression", "learning_rate": 0.1, "verbosity": -1, **FAST},
            lgb.Dataset(X, y),
            40,
        )
        np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-9, atol=1e-9)

    def test_sigmoid_link_is_cross_entropy(self, rng):
        X = rng.normal(size=(1000, 5))
        y = (X[:, 0] + 0.5 * rng.normal(size=1000) > 0.2).astype(float)
        ours = SelectiveRegressor(
            link="sigmoid",
            target="link",
            hessian="exact",
            n_estimators=40,
            learning_rate=0.1,
            **FAST,
        ).fit(X, y)
        ref = lgb.train(
            {"objective": "cross_entropy", "learning_rate": 0.1, "verbosity": -1, **FAST},
            lgb.Dataset(X, y),
            40,
        )
        np.testing.assert_allclose(
            ours.decision_function(X), ref.predict(X, raw_score=True), rtol=1e-9, atol=1e-9
        )
        np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-9, atol=1e-12)
        clf = SelectiveClassifier(hessian="exact", n_estimators=40, learning_rate=0.1, **FAST).fit(
            X, y
        )
        np.testing.assert_allclose(
            clf.predict_proba(X)[:, 1], ref.predict(X), rtol=1e-9, atol=1e-12
        )


class TestRegressorAndClassifier:
    def test_regressor_label_scale_and_link_space(self, rng):
        X = rng.normal(size=(500, 3))
        y = X[:, 0] + 5.0
        a = SelectiveRegressor(n_estimators=20, learning_rate=0.3, **FAST).fit(X, y)
        b = SelectiveRegressor(n_estimators=20, learning_rate=0.3, label_scale=0.5, **FAST).fit(
            X, y
        )
        np.testing.assert_allclose(
            a.predict(X), b.predict(X), rtol=1e-6
        )  # predictions are in y's units
        assert a.score(X, y) > 0.9

    def test_regressor_early_stopping_on_the_loss(self, rng):
        X = rng.normal(size=(600, 3))
        y = X[:, 0] + rng.normal(size=600)
        Xv = rng.normal(size=(300, 3))
        yv = rng.normal(size=300)  # unrelated: the validation loss rises early
        r = SelectiveRegressor(
            link="exp", n_estimators=300, early_stopping_rounds=5, learning_rate=0.3, **FAST
        )
        r.fit(X, y, eval_set=[(Xv, yv)])
        assert r.best_iteration_ < 300 and "selrank_loss" in r.evals_result_["valid_0"]

    @pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
    def test_multiclass(self, rng, backend):
        X = rng.normal(size=(600, 4))
        labels = np.array(["low", "mid", "high"])[np.digitize(X[:, 0], [-0.5, 0.5])]
        extra = FAST if backend == "lightgbm" else XFAST
        for kw in (
            {},
            {"scaling": "exp"},
            {"loss": "decomposed", "link": "sigmoid", "target": "link"},
        ):
            c = SelectiveClassifier(
                backend=backend, n_estimators=30, learning_rate=0.2, **kw, **extra
            ).fit(X, labels)
            proba = c.predict_proba(X)
            assert proba.shape == (600, 3)
            np.testing.assert_allclose(proba.sum(axis=1), 1.0)
            assert set(c.classes_) == {"low", "mid", "high"}
            assert c.score(X, labels) > 0.9, kw

    def test_softmax_proba_is_softmax_of_scores(self, rng):
        X = rng.normal(size=(300, 3))
        y = np.digitize(X[:, 0], [-0.5, 0.5])
        c = SelectiveClassifier(n_estimators=10, **FAST).fit(X, y)
        s = c.decision_function(X)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        np.testing.assert_allclose(c.predict_proba(X), p / p.sum(axis=1, keepdims=True), rtol=1e-9)

    def test_binary_with_score_targets(self, rng):
        X = rng.normal(size=(500, 3))
        y = (X[:, 0] > 0).astype(int)
        c = SelectiveClassifier(link="exp", n_estimators=30, **FAST).fit(X, y)
        assert c.loss_.target == "score" and c.score(X, y) > 0.9
        p = c.predict_proba(X)
        assert np.all((p >= 0) & (p <= 1))


class TestPersistence:
    @pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
    def test_save_load_predicts_identically(self, ranking, rng, tmp_path, backend):
        X, y, sizes = ranking
        Xv, yv, sv = make_ranking(rng, n_queries=10)
        extra = FAST if backend == "lightgbm" else XFAST
        r = SelectiveRanker(
            loss="pairwise",
            loss_params={"cap": 2.0},
            backend=backend,
            n_estimators=30,
            early_stopping_rounds=3,
            **extra,
        )
        r.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
        path = tmp_path / "ranker.json"
        r.save(path)
        back = SelectiveRanker.load(path)
        np.testing.assert_array_equal(back.predict(X), r.predict(X))
        assert back.get_params() == r.get_params() and back.loss_ == r.loss_
        again = pickle.loads(pickle.dumps(r))
        np.testing.assert_array_equal(again.predict(X), r.predict(X))

    def test_classifier_round_trip(self, rng, tmp_path):
        X = rng.normal(size=(300, 3))
        y = np.digitize(X[:, 0], [-0.5, 0.5])
        c = SelectiveClassifier(scaling="exp", n_estimators=10, **FAST).fit(X, y)
        c.save(tmp_path / "c.json")
        back = load(tmp_path / "c.json")
        np.testing.assert_array_equal(back.predict_proba(X), c.predict_proba(X))
        np.testing.assert_array_equal(back.classes_, c.classes_)

    def test_load_errors(self, tmp_path):
        bad = tmp_path / "bad.json"
        bad.write_text("{}")
        with pytest.raises(ValueError, match="not a saved selrank estimator"):
            load(bad)
        bad.write_text("not json")
        with pytest.raises(ValueError, match="not JSON"):
            load(bad)

    def test_callable_link_cannot_be_saved(self, rng, tmp_path):
        X = rng.normal(size=(100, 2))
        r = SelectiveRegressor(link=lambda z: z**3 + z, n_estimators=2, **FAST).fit(X, X[:, 0])
        with pytest.raises(TypeError, match="pickle"):
            r.save(tmp_path / "r.json")


class TestValidation:
    """Bad input is a clear ValueError raised before any booster is built."""

    def test_nan_and_inf(self, ranking):
        X, y, sizes = ranking
        y2 = y.copy()
        y2[5] = np.nan
        with pytest.raises(ValueError, match="finite; row 5"):
            SelectiveRanker().fit(X, y2, group=sizes)
        w = np.ones(y.size)
        w[3] = np.inf
        with pytest.raises(ValueError, match="finite; row 3"):
            SelectiveRanker().fit(X, y, group=sizes, sample_weight=w)

    def test_groups(self, ranking):
        X, y, sizes = ranking
        with pytest.raises(ValueError, match="add up to"):
            SelectiveRanker().fit(X, y, group=sizes[:-1])
        qid = np.repeat(np.arange(sizes.size), sizes)
        qid[[0, -1]] = qid[[-1, 0]]  # two rows out of place: queries no longer contiguous
        with pytest.raises(ValueError, match="contiguous.*sort the rows by query id"):
            SelectiveRanker().fit(X, y, qid=qid)
        with pytest.warns(
            UserWarning, match="no query groups given: all 705 rows are ranked as one query"
        ):
            SelectiveRanker(n_estimators=2, **FAST).fit(X, y)
        # the sorting hint only where sorting helps
        with pytest.raises(ValueError, match="add up to") as info:
            SelectiveRanker().fit(X, y, group=sizes[:-1])
        assert "sort the rows" not in str(info.value)

    def test_domain_and_shapes(self, rng):
        X = rng.normal(size=(50, 2))
        with pytest.raises(ValueError, match="domain"):
            SelectiveRegressor(link="logit").fit(X, rng.uniform(1.0, 2.0, size=50))
        with pytest.raises(ValueError, match="X has 50 rows"):
            SelectiveRegressor().fit(X, np.zeros(49))
        with pytest.raises(ValueError, match="2-D"):
            SelectiveRegressor().fit(np.zeros(50), np.zeros(50))
        with pytest.raises(ValueError, match="backend"):
            SelectiveRegressor(backend="catboost").fit(X, np.zeros(50))
        with pytest.raises(ValueError, match="eval_set\\[0\\]"):
            Xv = rng.normal(size=(20, 2))
            SelectiveRanker().fit(
                X,
                rng.integers(0, 3, 50),
                group=[25, 25],
                eval_set=[(Xv, np.full(20, np.nan))],
                eval_group=[[20]],
            )
        with pytest.raises(ValueError, match="at least 2 classes"):
            SelectiveClassifier().fit(X, np.zeros(50))

    def test_nothing_is_trained_on_bad_input(self, ranking):
        X, y, sizes = ranking
        r = SelectiveRanker()
        with pytest.raises(ValueError):
            r.fit(X, y, group=sizes[:-1])
        assert not hasattr(r, "booster_")


class TestTorchRouting:
    def test_routes_to_neural_ranker(self, ranking):
        pytest.importorskip("torch")
        neural = pytest.importorskip("selrank.estimators.neural")
        X, y, sizes = ranking
        r = SelectiveRanker(backend="torch", hidden_layers=(8,), epochs=3, random_state=0)
        assert r.get_params()["hidden_layers"] == (8,)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r.fit(X.astype(np.float32), y, group=sizes)
        assert isinstance(r.model_, neural.NeuralRanker)
        assert r.model_.hidden_layers == (8,) and r.model_.epochs == 3
        assert r.predict(X.astype(np.float32)).shape == (y.size,)

    def test_gbdt_only_parameters_are_refused(self, ranking):
        pytest.importorskip("torch")
        X, y, sizes = ranking
        with pytest.raises(ValueError, match="epochs"):
            SelectiveRanker(backend="torch", n_estimators=10).fit(X, y, group=sizes)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_letor_fold_end_to_end(backend):
    """MQ2008 fold 1 with the packaged data: the default ranker, early-stopped on the validation
    split, ranks the test split far better than chance and about as well as lambdarank."""
    datasets = pytest.importorskip("selrank.datasets")
    from selrank.metrics import ndcg

    split = datasets.load_letor("mq2008", fold=1)
    tr, va, te = split.train, split.validation, split.test
    extra = {"num_threads": 1} if backend == "lightgbm" else {"nthread": 1}
    r = SelectiveRanker(backend=backend, random_state=0, **extra)
    r.fit(tr.X, tr.y, group=tr.group, eval_set=[(va.X, va.y)], eval_group=[va.group])
    ours = ndcg(te.y, r.predict(te.X), te.group, k=10, no_relevant="zero")
    ref = lgb.train(
        {
            "objective": "lambdarank",
            "learning_rate": 0.05,
            "verbosity": -1,
            "num_threads": 1,
            "metric": "ndcg",
            "eval_at": [10],
        },
        lgb.Dataset(tr.X, tr.y, group=tr.group),
        1000,
        valid_sets=[lgb.Dataset(va.X, va.y, group=va.group)],
        callbacks=[lgb.early_stopping(50, verbose=False)],
    )
    theirs = ndcg(
        te.y,
        ref.predict(te.X, num_iteration=ref.best_iteration),
        te.group,
        k=10,
        no_relevant="zero",
    )
    chance = ndcg(
        te.y, np.random.default_rng(0).normal(size=te.y.size), te.group, k=10, no_relevant="zero"
    )
    assert ours > chance + 0.1
    assert ours > theirs - 0.05


def test_regressor_accepts_a_loss_object_with_its_own_link():
    """The default link belongs to the default loss; a Loss object carries its own."""
    from selrank.losses import Combined, Listwise, Pointwise

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + 0.3 * rng.normal(size=120) + 4.0
    session = np.repeat(np.arange(40), 3)
    loss = Combined([Pointwise("smelu", beta=4.0, c=2.0), Listwise("constant")], weights=[1.0, 0.2])
    model = SelectiveRegressor(loss=loss, n_estimators=15, num_threads=1).fit(X, y, qid=session)
    assert np.corrcoef(model.predict(X), y)[0, 1] > 0.5
    with pytest.raises(ValueError, match="must be set on it"):
        SelectiveRegressor(loss=loss, link="exp", n_estimators=5).fit(X, y, qid=session)
