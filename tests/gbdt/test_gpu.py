"""GPU paths (marked ``gpu``; skipped without a CUDA device): objectives on CuPy and CUDA torch
arrays equal the NumPy ones, and XGBoost's device-resident loop (``device="cuda"``) keeps the
margins and gradients on the device and trains the model the host loop trains."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

xgb = pytest.importorskip("xgboost")

from selrank.gbdt import GBDTObjective, xgboost_objective  # noqa: E402

CASES = [
    ("pointwise", {"link": "exp"}),
    ("listwise", {"gamma": 4.0}),
    ("pairwise", {}),
    ("pairwise", {"link": "sigmoid", "pairs": "distinct"}),
]


def data(rng, n_queries=30):
    sizes = rng.integers(5, 40, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1.0), 0, 3).astype(np.float64)
    return X, y, sizes


@pytest.mark.parametrize(("name", "params"), CASES)
def test_cupy_equals_numpy(name, params, rng):
    cp = pytest.importorskip("cupy")
    _, y, sizes = data(rng)
    z = rng.normal(size=y.size)
    group = sizes if name != "pointwise" else None
    obj = GBDTObjective(name, label_scale=0.25, **params)
    g_host, h_host = obj.grad_hess(z, y, group=group)
    g_dev, h_dev = obj.grad_hess(cp.asarray(z), y, group=group)
    assert isinstance(g_dev, cp.ndarray) and g_dev.device.id == cp.cuda.Device().id
    np.testing.assert_allclose(cp.asnumpy(g_dev), g_host, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cp.asnumpy(h_dev), h_host, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_torch_cuda_equals_numpy(name, params, rng):
    torch = pytest.importorskip("torch")
    _, y, sizes = data(rng)
    z = rng.normal(size=y.size)
    group = sizes if name != "pointwise" else None
    obj = GBDTObjective(name, label_scale=0.25, **params)
    g_host, h_host = obj.grad_hess(z, y, group=group)
    g_dev, h_dev = obj.grad_hess(torch.as_tensor(z, device="cuda"), y, group=group)
    assert g_dev.is_cuda and h_dev.is_cuda
    np.testing.assert_allclose(g_dev.cpu().numpy(), g_host, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h_dev.cpu().numpy(), h_host, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["listwise", "pairwise", "pointwise"])
def test_device_loop_keeps_everything_on_the_device(name, rng):
    cp = pytest.importorskip("cupy")
    X, y, sizes = data(rng, n_queries=60)
    qid = np.repeat(np.arange(sizes.size), sizes)
    params = {"tree_method": "hist", "max_depth": 4, "eta": 0.1, "min_child_weight": 1e-3}
    seen = []
    obj = xgboost_objective(name, label_scale=0.25, min_leaf_hessian=1e-3)
    inner = obj.__call__

    class Spy(type(obj)):
        def __call__(self, y_true, y_pred, sample_weight=None):
            g, h = inner(y_true, y_pred, sample_weight)
            seen.append((type(y_true), type(g), type(h)))
            return g, h

    obj.__class__ = Spy
    booster = obj.train(
        {**params, "device": "cuda"}, xgb.DMatrix(X, y, qid=qid), 15, data=cp.asarray(X)
    )
    assert len(seen) == 15 and all(t == (cp.ndarray, cp.ndarray, cp.ndarray) for t in seen)
    gpu_scores = cp.asnumpy(obj.predict(booster, cp.asarray(X)))
    host = xgboost_objective(name, label_scale=0.25, min_leaf_hessian=1e-3)
    cpu_scores = host.predict(host.train(params, xgb.DMatrix(X, y, qid=qid), 15), X)
    assert (
        np.corrcoef(gpu_scores, cpu_scores)[0, 1] > 0.99
    )  # GPU and CPU histograms differ slightly


def test_ranker_on_the_gpu(rng):
    pytest.importorskip("cupy")
    from selrank import SelectiveRanker

    X, y, sizes = data(rng, n_queries=80)
    r = SelectiveRanker(backend="xgboost", device="cuda", n_estimators=20).fit(X, y, group=sizes)
    assert r.score(X, y, group=sizes) > 0.7
