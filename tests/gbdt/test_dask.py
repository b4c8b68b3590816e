"""Distributed training on a dask.distributed LocalCluster (two worker processes): xgboost.dask
with a selrank objective, queries kept inside partitions (checked), and LightGBM's Dask
ranker with the same kind of objective (tested to give the single-machine trees)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

from selrank.gbdt import lightgbm_objective, xgboost_objective  # noqa: E402
from selrank.gbdt.dask import (  # noqa: E402
    check_query_partitions,
    lightgbm_dask_fit,
    xgboost_dask_predict,
    xgboost_dask_train,
)
from selrank.metrics import ndcg  # noqa: E402

pytestmark = pytest.mark.dask


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
        )
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def ranking():
    rng = np.random.default_rng(20260521)
    sizes = np.full(100, 40)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 1.0 + 0.5 * rng.normal(size=n)), 0, 3)
    qid = np.repeat(np.arange(sizes.size), sizes)
    return X, y, qid, sizes


def test_partitions_checked():
    check_query_partitions(da.from_array(np.repeat(np.arange(8), 5), chunks=10))
    with pytest.raises(ValueError, match="spans partitions 0 and 1"):
        check_query_partitions(da.from_array(np.repeat(np.arange(8), 5), chunks=12))
    with pytest.raises(ValueError, match="not sorted"):
        check_query_partitions(da.from_array(np.array([1, 1, 0, 0, 2, 2]), chunks=6))
    with pytest.raises(ValueError, match="across partitions"):
        check_query_partitions(da.from_array(np.array([2, 2, 0, 0]), chunks=2))


def test_xgboost_dask_listwise(client, ranking):
    X, y, qid, sizes = ranking
    chunks = 1000  # 25 queries per partition: queries never cross a partition boundary
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]))
    yd = da.from_array(y, chunks=chunks)
    qd = da.from_array(qid, chunks=chunks)
    params = {
        "tree_method": "hist",
        "max_depth": 4,
        "eta": 0.1,
        "min_child_weight": 1e-3,
        "nthread": 1,
    }
    obj = xgboost_objective("listwise", gamma=4.0, label_scale=0.25, min_leaf_hessian=1e-3)
    out = xgboost_dask_train(client, obj, params, Xd, yd, qid=qd, num_boost_round=20)
    scores = xgboost_dask_predict(client, obj, out["booster"], Xd).compute()
    # the same objective on one machine: same intercept, a model of the same quality
    local = xgboost_objective("listwise", gamma=4.0, label_scale=0.25, min_leaf_hessian=1e-3)
    booster = local.train(params, xgb.DMatrix(X, y, qid=qid), 20)
    assert obj.intercept_ == pytest.approx(local.intercept_, rel=1e-6)
    single = local.predict(booster, X)
    assert np.corrcoef(scores, single)[0, 1] > 0.98
    assert ndcg(y, scores, sizes, k=10) > ndcg(y, np.zeros_like(y), sizes, k=10) + 0.2
    assert ndcg(y, scores, sizes, k=10) == pytest.approx(ndcg(y, single, sizes, k=10), abs=0.02)


def test_xgboost_dask_refuses_split_queries(client, ranking):
    X, y, qid, _ = ranking
    Xd = da.from_array(X, chunks=(1010, X.shape[1]))
    with pytest.raises(ValueError, match="spans partitions"):
        xgboost_dask_train(
            client,
            "listwise",
            {"nthread": 1},
            Xd,
            da.from_array(y, chunks=1010),
            qid=da.from_array(qid, chunks=1010),
        )


@pytest.fixture(scope="module")
def coarse(ranking):
    """Features on a grid of 17 values that both workers see: LightGBM's distributed bin
    finding (each worker bins some features from its own rows) then gives the single-machine bins."""
    X, y, qid, sizes = ranking
    return np.clip(np.round(X * 4) / 4, -2, 2), y, sizes


LGB_KW = {"n_estimators": 15, "num_leaves": 7, "n_jobs": 1, "verbosity": -1}


def _single_machine(X, y, sizes):
    obj = lightgbm_objective("listwise", gamma=4.0, label_scale=0.25)
    c = obj.fit_intercept(y, group=sizes)
    model = lgb.LGBMRanker(objective=obj, **LGB_KW).fit(
        X, y, group=sizes, init_score=np.full(y.size, c)
    )
    return model.predict(X, raw_score=True) + c


def test_lightgbm_dask_ranker_matches_single_machine(client, coarse):
    """DaskLGBMRanker takes the callable objective as it is: each worker calls it with its own
    rows and (LightGBM >= 4.7) its local group; with the same bins the trees are the
    single-machine trees."""
    X, y, sizes = coarse
    obj = lightgbm_objective("listwise", gamma=4.0, label_scale=0.25)
    c = obj.fit_intercept(y, group=sizes)  # on the client: every worker gets this intercept
    Xd = da.from_array(X, chunks=(1000, X.shape[1]))
    model = lgb.DaskLGBMRanker(objective=obj, **LGB_KW)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Parameter n_jobs will be ignored."
        model.fit(
            Xd,
            da.from_array(y, chunks=1000),
            group=da.from_array(sizes, chunks=25),  # 25 queries x 40 rows = one data partition
            init_score=da.from_array(np.full(y.size, c), chunks=1000),
        )
    scores = model.predict(Xd, raw_score=True).compute() + c
    single = _single_machine(X, y, sizes)
    np.testing.assert_allclose(scores, single, rtol=0, atol=1e-9)
    assert ndcg(y, scores, sizes, k=10) > ndcg(y, np.zeros_like(y), sizes, k=10) + 0.2


def test_lightgbm_dask_fit_helper(client, coarse):
    X, y, sizes = coarse
    obj = lightgbm_objective("listwise", gamma=4.0, label_scale=0.25)
    model = lgb.DaskLGBMRanker(objective=obj, **LGB_KW)
    Xd = da.from_array(X, chunks=(1000, X.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lightgbm_dask_fit(
            model, Xd, da.from_array(y, chunks=1000), group=da.from_array(sizes, chunks=25)
        )
    scores = model.predict(Xd, raw_score=True).compute() + obj.intercept_
    np.testing.assert_allclose(scores, _single_machine(X, y, sizes), rtol=0, atol=1e-9)


def test_lightgbm_dask_misaligned_group(client, coarse):
    """group partitions that do not add up to the data partitions: LightGBM fails inside a
    worker; lightgbm_dask_fit says what to do before anything is sent."""
    X, y, sizes = coarse
    Xd, yd = da.from_array(X, chunks=(1000, X.shape[1])), da.from_array(y, chunks=1000)
    bad = da.from_array(sizes, chunks=20)  # 5 partitions of 800 rows against 4 of 1000
    obj = lightgbm_objective("listwise", gamma=4.0, label_scale=0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(lgb.basic.LightGBMError, match="Sum of query counts"):
            lgb.DaskLGBMRanker(objective=obj, **LGB_KW).fit(Xd, yd, group=bad)
    with pytest.raises(
        ValueError, match="group is not partitioned like X: X has 4 partitions, group has 5"
    ):
        lightgbm_dask_fit(lgb.DaskLGBMRanker(objective=obj, **LGB_KW), Xd, yd, group=bad)
    uneven = da.from_array(sizes, chunks=((20, 30, 25, 25),))
    with pytest.raises(
        ValueError, match="partition 0 of group adds up to 800 rows but partition 0 of X has 1000"
    ):
        lightgbm_dask_fit(lgb.DaskLGBMRanker(objective=obj, **LGB_KW), Xd, yd, group=uneven)
    with pytest.raises(ValueError, match="needs query sizes"):
        lightgbm_dask_fit(lgb.DaskLGBMRanker(objective=obj, **LGB_KW), Xd, yd)
    with pytest.raises(TypeError, match="objective=lightgbm_objective"):
        lightgbm_dask_fit(lgb.DaskLGBMRanker(objective="lambdarank"), Xd, yd, group=bad)
