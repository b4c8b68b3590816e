"""Issue 20: one objective shared by several threads through ``obj.train`` gives the boosters a
single thread gives (each call trains with a private copy of the objective)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from selrank.gbdt import lightgbm_objective, xgboost_objective  # noqa: E402

LGB = {"verbose": -1, "num_threads": 1, "deterministic": True, "num_leaves": 8}
XGB = {"nthread": 1, "max_depth": 2, "min_child_weight": 1e-3}


def _jobs(rng, n_jobs=12, n=2000):
    X = rng.normal(size=(n, 5))
    qid = np.repeat(np.arange(n // 100), 100)
    # very different label scales: a borrowed intercept or Hessian scale shows at once
    # (selrank 0.1: 5 of 12 listwise boosters differed from the single-thread ones here)
    return (
        X,
        qid,
        [np.round((1 + 3 * k) * np.exp(X[:, 0] / 2) + rng.random(n)) for k in range(n_jobs)],
    )


def _in_threads(fn, args: list, n_threads: int = 4) -> list:
    out = [None] * len(args)
    barrier = threading.Barrier(n_threads)

    def worker(t):
        barrier.wait()
        for i in range(t, len(args), n_threads):
            out[i] = fn(args[i])

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


@pytest.mark.parametrize("loss", ["pointwise", "listwise"])
def test_lightgbm_objective_shared_by_threads_gives_the_single_thread_boosters(rng, loss):
    X, qid, labels = _jobs(rng)
    sizes = np.bincount(qid)
    kw = {"link": "exp"} if loss == "pointwise" else {"label_scale": 0.05}
    obj = lightgbm_objective(loss, **kw)

    def fit(y):
        booster = obj.train(LGB, lgb.Dataset(X, y, group=sizes), 10)
        return obj.predict(booster, X), obj.booster_intercept(booster)

    alone = [fit(y) for y in labels]
    shared = _in_threads(fit, labels)
    for (p1, c1), (p2, c2) in zip(alone, shared):
        np.testing.assert_array_equal(p2, p1)
        np.testing.assert_array_equal(c2, c1)


def test_xgboost_objective_shared_by_threads_gives_the_single_thread_boosters(rng):
    X, qid, labels = _jobs(rng)
    obj = xgboost_objective("listwise", label_scale=0.05, min_leaf_hessian=1e-3)

    def fit(y):
        booster = obj.train(XGB, xgb.DMatrix(X, y, qid=qid), 6)
        return obj.predict(booster, X)

    alone = [fit(y) for y in labels]
    shared = _in_threads(fit, labels)
    for p1, p2 in zip(alone, shared):
        np.testing.assert_array_equal(p2, p1)


class _GatedDataset(lgb.Dataset):
    """A LightGBM Dataset whose construction waits for an event: it fixes the thread schedule
    (``obj.train`` constructs the training set between fitting the intercept and boosting)."""

    arrived: threading.Event | None = None
    gate: threading.Event | None = None

    def construct(self):
        if self.gate is not None and not self.gate.is_set():
            self.arrived.set()
            self.gate.wait(20)
        return super().construct()


@pytest.mark.parametrize("loss", ["pointwise", "listwise"])
def test_a_training_that_runs_inside_another_does_not_change_it(rng, loss):
    """Thread A fits its intercept, then waits in its data set's construction while thread B
    trains on labels 16 times larger with the same objective. selrank 0.1 bound A's gradients
    with B's Hessian scale (a different booster); each call now has its own copy."""
    X, qid, labels = _jobs(rng, n_jobs=6)
    sizes = np.bincount(qid)
    kw = {"link": "exp"} if loss == "pointwise" else {"label_scale": 0.05}
    obj = lightgbm_objective(loss, **kw)
    alone = obj.predict(obj.train(LGB, lgb.Dataset(X, labels[0], group=sizes), 10), X)

    gated = _GatedDataset(X, labels[0], group=sizes)
    gated.arrived, gated.gate = threading.Event(), threading.Event()
    out = {}

    def first():
        out["a"] = obj.predict(obj.train(LGB, gated, 10), X)

    def second():
        gated.arrived.wait(20)
        obj.train(LGB, lgb.Dataset(X, labels[5], group=sizes), 10)
        gated.gate.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    np.testing.assert_array_equal(out["a"], alone)


def test_lightgbm_predictions_keep_the_training_thread_count(rng, monkeypatch):
    """LightGBM's thread count is process-wide (LightGBM issue 4705): a prediction with OpenMP's
    default during another thread's 1-thread training made that training run 2 threads on
    buffers for 1 and crashed the process (4 of about 75 runs of the test above). selrank's own
    predictions (the fold probe in ``train``, ``predict``) pass the booster's training count;
    a count the caller gives wins."""
    X, qid, labels = _jobs(rng, n_jobs=1)
    sizes = np.bincount(qid)
    seen: list = []
    real = lgb.Booster.predict

    def spy(self, data, *args, **kwargs):
        seen.append(kwargs.get("num_threads"))
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(lgb.Booster, "predict", spy)
    obj = lightgbm_objective("pointwise", link="exp")
    booster = obj.train({**LGB, "nthread": 1, "num_threads": None}, lgb.Dataset(X, labels[0]), 5)
    obj.predict(booster, X)
    assert seen and seen == [1] * len(seen)  # the probe (before and after) and the prediction
    obj.predict(booster, X, num_threads=2)
    assert seen[-1] == 2
    default = obj.train({"verbose": -1}, lgb.Dataset(X, labels[0], group=sizes), 5)
    seen.clear()
    obj.predict(default, X)
    assert seen == [None]  # trained with LightGBM's default: predicted with it
