"""Issue 11: scikit-learn cross-validation and search route the query ids (metadata routing)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
pytest.importorskip("lightgbm")

from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score  # noqa: E402

from selrank import SelectiveRanker  # noqa: E402
from selrank.estimators import ndcg_scorer  # noqa: E402
from selrank.metrics import ndcg  # noqa: E402

FAST = {
    "n_estimators": 5,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_leaves": 7,
    "min_data_in_leaf": 5,
}


@pytest.fixture
def data(rng):
    n_queries, size = 18, 15
    n = n_queries * size
    X = rng.normal(size=(n, 3))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1), 0, 3)
    return X, y, np.repeat(np.arange(n_queries), size)


def test_cross_val_score_with_routed_qid_equals_fold_by_fold(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = SelectiveRanker(**FAST).set_fit_request(qid=True).set_score_request(qid=True)
        with warnings.catch_warnings():
            warnings.simplefilter(
                "error"
            )  # no "no query groups" warning: qid reaches fit and score
            by_score = cross_val_score(
                est, X, y, cv=GroupKFold(3), params={"qid": qid, "groups": qid}
            )
            by_scorer = cross_val_score(
                est,
                X,
                y,
                cv=GroupKFold(3),
                scoring=ndcg_scorer(k=10),
                params={"qid": qid, "groups": qid},
            )
    assert np.all(np.isfinite(by_score))
    np.testing.assert_allclose(by_score, by_scorer, rtol=1e-12)
    want = []
    for train, test in GroupKFold(3).split(X, y, groups=qid):
        m = SelectiveRanker(**FAST).fit(X[train], y[train], qid=qid[train])
        want.append(ndcg(y[test], m.predict(X[test]), qid=qid[test], k=10))
    np.testing.assert_allclose(by_score, want, rtol=1e-12)


def test_grid_search_with_routed_qid(data):
    X, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        est = SelectiveRanker(**FAST).set_fit_request(qid=True)
        search = GridSearchCV(
            est, {"learning_rate": [0.05, 0.3]}, cv=GroupKFold(3), scoring=ndcg_scorer(k=5)
        )
        search.fit(X, y, qid=qid, groups=qid)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_params_["learning_rate"] in (0.05, 0.3)


def test_without_routing_the_ranker_warns_instead_of_failing_silently(data):
    X, y, _ = data
    with pytest.warns(UserWarning, match="no query groups given.*enable_metadata_routing"):
        cross_val_score(SelectiveRanker(**FAST), X, y, cv=3)
