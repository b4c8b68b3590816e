"""Issue 11: cross-validation with a selrank objective never cuts a query."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
sklearn = pytest.importorskip("sklearn")

from sklearn.model_selection import GroupKFold, KFold  # noqa: E402

from selrank.gbdt import cv, lightgbm_objective  # noqa: E402
from selrank.gbdt.cv import query_folds  # noqa: E402

PARAMS = {
    "metric": "ndcg",
    "eval_at": [10],
    "verbose": -1,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "num_leaves": 7,
    "min_data_in_leaf": 5,
}


def data(rng, n_queries=40, size=20):
    n = n_queries * size
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(0.7 * X[:, 0] + 0.8 * rng.normal(size=n) + 1), 0, 3)
    return X, y, np.full(n_queries, size)


def test_query_folds_hold_whole_queries(rng):
    row_query = np.repeat(np.arange(13), rng.integers(1, 6, 13))
    folds = query_folds(row_query, 4, seed=1)
    seen = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(seen), np.arange(row_query.size))
    for train, test in folds:
        assert not np.intersect1d(row_query[train], row_query[test]).size
    with pytest.raises(ValueError, match="13 queries cannot fill 20 folds"):
        query_folds(row_query, 20)


def test_cv_on_whole_queries_and_refuses_folds_that_cut_them(rng):
    X, y, sizes = data(rng)
    obj = lightgbm_objective("listwise")
    grouped = cv({**PARAMS, "objective": obj}, lgb.Dataset(X, y, group=sizes), 10, nfold=4)
    with_splitter = cv(
        {**PARAMS, "objective": obj}, lgb.Dataset(X, y, group=sizes), 10, folds=GroupKFold(4)
    )
    assert len(grouped["valid ndcg@10-mean"]) == len(with_splitter["valid ndcg@10-mean"]) == 10
    with pytest.raises(ValueError, match="fold 0 cuts .* queries"):
        cv(
            {**PARAMS, "objective": obj},
            lgb.Dataset(X, y, group=sizes),
            10,
            folds=KFold(4, shuffle=True),
        )
    # lightgbm.cv's own split cuts queries with a custom objective (held-out "queries" are
    # fragments, which score higher than whole queries): the objective refuses such a subset
    obj2 = lightgbm_objective("listwise")
    with pytest.raises(ValueError, match=r"row subset that cuts \d+ queries.*selrank.gbdt.cv"):
        lgb.cv(
            {**PARAMS, "objective": obj2},
            obj2.set_init_score(lgb.Dataset(X, y, group=sizes)),
            10,
            nfold=4,
            stratified=False,
            seed=0,
        )
    # lightgbm.cv with GroupKFold keeps whole queries and agrees with selrank.gbdt.cv's folds
    direct = lgb.cv(
        {**PARAMS, "objective": obj2},
        obj2.set_init_score(lgb.Dataset(X, y, group=sizes)),
        10,
        folds=GroupKFold(4),
    )
    np.testing.assert_allclose(
        direct["valid ndcg@10-mean"], with_splitter["valid ndcg@10-mean"], rtol=1e-12
    )
    with pytest.raises(TypeError, match="LightGBMObjective"):
        cv({**PARAMS, "objective": "lambdarank"}, lgb.Dataset(X, y, group=sizes), 2)
