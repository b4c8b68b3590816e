"""WeightedPairwise: |ΔNDCG|-weighted selective pairwise loss (issue 21)."""

from __future__ import annotations

import numpy as np
import pytest

from selrank import fast
from selrank.losses import Pairwise, WeightedPairwise, get_loss

needs_numba = pytest.mark.skipif(not fast.available(), reason="numba not installed")


def ranking_data(seed=0, sizes=(1, 5, 12, 30, 2, 47)):
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes)
    n = int(sizes.sum())
    y = rng.integers(0, 4, n).astype(np.float64)
    return rng, y, sizes, rng.normal(size=n)


def numpy_path(loss, y, group, pred, **bind):
    """Gradient and Hessian through the generic (pair-array) path."""
    b = loss.bind(y, group=group, **bind)
    b._kernel = None
    return b.grad_hess(pred)


def brute_force(y, sizes, pred, k, norm, link_grad, link_slope):
    """LightGBM's GetGradientsForOneQuery written out loop by loop (gain 2**y - 1)."""
    g = np.zeros(y.size)
    h = np.zeros(y.size)
    start = 0
    for n in sizes:
        idx = np.arange(start, start + n)
        start += n
        order = idx[np.argsort(-pred[idx], kind="stable")]
        gains = np.sort(2.0 ** y[idx] - 1.0)[::-1]
        m = min(k, n)
        mdcg = sum(gains[r] / np.log2(r + 2.0) for r in range(m))
        inv = 1.0 / mdcg if mdcg > 0 else 0.0
        total = 0.0
        gq = np.zeros(y.size)
        hq = np.zeros(y.size)
        for i in range(min(k, n - 1)):
            for j in range(i + 1, n):
                a, b = order[i], order[j]
                if y[a] == y[b]:
                    continue
                ra, rb = i, j
                if y[a] < y[b]:
                    a, b, ra, rb = b, a, rb, ra
                w = abs(2.0 ** y[a] - 2.0 ** y[b]) * abs(
                    1 / np.log2(ra + 2.0) - 1 / np.log2(rb + 2.0)
                )
                w *= inv
                d = pred[a] - pred[b]
                if norm and pred[order[0]] != pred[order[-1]]:
                    w /= 0.01 + abs(d)
                gp = w * link_grad(d, y[a] - y[b])
                hp = w * link_slope(d)
                gq[a] += gp
                gq[b] -= gp
                hq[a] += hp
                hq[b] += hp
                total += 2 * abs(gp)
        if norm and total > 0:
            gq *= np.log2(1 + total) / total
            hq *= np.log2(1 + total) / total
        g += gq
        h += hq
    return g, h


def sig(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("k", [1, 3, 30, 1000])
def test_logistic_order_is_lambdarank_written_out(norm, k):
    _, y, sizes, pred = ranking_data(1)
    pred = np.round(pred, 1)  # ties in the scores: the earlier row ranks first
    loss = WeightedPairwise("sigmoid", target="order", norm=norm, num_pair_per_sample=k)
    want = brute_force(
        y, sizes, pred, k, norm, lambda d, _: sig(d) - 1.0, lambda d: sig(d) * (1 - sig(d))
    )
    for got in (loss.grad_hess(pred, y, group=sizes), numpy_path(loss, y, sizes, pred)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)


def test_sinh_score_target_written_out():
    _, y, sizes, pred = ranking_data(2)
    loss = WeightedPairwise(num_pair_per_sample=4)  # Sinh(cap=3): linear beyond |x| = 3

    def f(x):
        c = np.clip(x, -3, 3)
        return np.sinh(c) + np.cosh(3.0) * (x - c)

    def df(x):
        return np.cosh(np.clip(x, -3, 3))

    want = brute_force(y, sizes, 2 * pred, 4, True, lambda d, t: f(d) - f(t), df)
    got = loss.grad_hess(2 * pred, y, group=sizes)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-13)


@needs_numba
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"pair_method": "all", "norm": False},
        {"link": "sigmoid", "target": "order", "pair_method": "all"},
        {"link": "sigmoid", "beta": 0.5, "num_pair_per_sample": 3},
        {"link": "identity", "alpha": 2.0, "cap": 1.5},
        {"link": "exp", "alpha": 0.5},
        {"cap": 1.0, "cap_mode": "flat"},
        {"pair_method": "mean", "num_pair_per_sample": 3},
    ],
)
@pytest.mark.parametrize("scale", [0.01, 1.0, 300.0])
def test_kernel_equals_numpy_path(params, scale):
    rng, y, sizes, pred = ranking_data(3)
    loss = WeightedPairwise(**params)
    qw = rng.uniform(0.5, 2.0, sizes.size)
    bound = loss.bind(y * 0.5, group=sizes, sample_weight=qw)
    ref = loss.bind(y * 0.5, group=sizes, sample_weight=qw)
    ref._kernel = None
    for step in range(3):  # successive calls: the kernel starts from the previous ranking
        p = scale * (pred + 0.1 * step * rng.normal(size=pred.size))
        g1, h1 = bound.grad_hess(p)
        g2, h2 = ref.grad_hess(p)
        np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-12 * np.abs(g2).max())
        np.testing.assert_allclose(h1, h2, rtol=1e-9, atol=1e-12 * np.abs(h2).max())
        assert np.all(np.isfinite(g1)) and np.all(h1 >= 0)


def test_shuffled_rows_and_qid():
    rng, y, sizes, pred = ranking_data(4)
    qid = np.repeat(np.arange(sizes.size), sizes)
    perm = rng.permutation(y.size)
    loss = WeightedPairwise()
    g, h = loss.grad_hess(pred, y, group=sizes)
    gs, hs = loss.grad_hess(pred[perm], y[perm], qid=qid[perm])
    np.testing.assert_allclose(gs, g[perm], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hs, h[perm], rtol=1e-12, atol=1e-14)


def test_float32_and_torch_autograd_match_the_gradient():
    torch = pytest.importorskip("torch")
    _, y, sizes, pred = ranking_data(5)
    loss = WeightedPairwise(num_pair_per_sample=5)
    g, h = loss.grad_hess(pred, y, group=sizes)
    g32, _ = loss.grad_hess(pred.astype(np.float32), y, group=sizes)
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, g, rtol=1e-4, atol=1e-6)
    # the loss value with the pair weights held fixed: autograd gives the same gradient
    z = torch.tensor(pred, requires_grad=True)
    loss.loss(z, torch.tensor(y), group=sizes, reduction="sum").backward()
    np.testing.assert_allclose(z.grad.numpy(), g, rtol=1e-9, atol=1e-12)
    # and the torch head of the loss (selrank.torch.get_head)
    from selrank.torch import get_head

    head = get_head("weighted_pairwise", num_pair_per_sample=5)
    zz = torch.tensor(pred[:12].reshape(1, 12), requires_grad=True)
    yy = torch.tensor(y[:12].reshape(1, 12))
    head(zz, yy, reduction="sum").backward()
    g12, _ = loss.grad_hess(pred[:12], y[:12], group=[12])
    np.testing.assert_allclose(zz.grad.numpy().ravel(), g12, rtol=1e-9, atol=1e-12)


def test_value_is_zero_at_the_target_and_positive_elsewhere():
    _, y, sizes, pred = ranking_data(6)
    loss = WeightedPairwise()
    assert loss.loss(y, y, group=sizes) == pytest.approx(0.0, abs=1e-12)
    assert loss.loss(pred, y, group=sizes) > 0


def test_extreme_scores_stay_finite():
    _, y, sizes, pred = ranking_data(7)
    for params in ({}, {"link": "sigmoid", "target": "order"}, {"link": "identity"}):
        g, h = WeightedPairwise(**params).grad_hess(pred * 1e6, y, group=sizes)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h >= 0)


def test_registry_and_estimator_gain_scale():
    assert isinstance(get_loss("weighted_pairwise"), WeightedPairwise)
    pytest.importorskip("lightgbm")
    from selrank.estimators import SelectiveRanker

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0.5)
    est = SelectiveRanker(loss="weighted_pairwise", n_estimators=5)
    est.fit(X, y, group=[100, 100, 100])
    assert est.loss_.gain_scale == est.label_scale_ == 0.25  # "auto": 0.5 / the largest label (2)
    assert np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"weights": "map"}, "`weights` of WeightedPairwise"),
        ({"target": "order"}, "bounded above"),
        ({"pair_method": "random"}, "`pair_method`"),
        ({"norm": "yes"}, "`norm`"),
        ({"num_pair_per_sample": 0}, "positive integer"),
        ({"gain_scale": 0.0}, "gain_scale"),
        ({"seed": -1}, "`seed`"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        WeightedPairwise(**params)


def test_bad_targets():
    with pytest.raises(ValueError, match="above 1000"):
        WeightedPairwise().grad_hess(np.zeros(2), np.array([2000.0, 0.0]), group=[2])
    with pytest.raises(ValueError, match="1-D"):
        WeightedPairwise().bind(np.zeros((2, 2)), group=[2])
    with pytest.raises(ValueError, match="finite|NaN|nan"):
        WeightedPairwise().bind(np.array([np.nan, 1.0]), group=[2])


def test_unweighted_pairwise_untouched():
    """The weighted loss is a new class: Pairwise keeps its own gradient."""
    _, y, sizes, pred = ranking_data(8)
    g1, _ = Pairwise().grad_hess(pred, y, group=sizes)
    g2, _ = WeightedPairwise().grad_hess(pred, y, group=sizes)
    assert not np.allclose(g1, g2)


@pytest.mark.slow
def test_cli_trains_with_the_weighted_loss(capsys):
    pytest.importorskip("lightgbm")
    pytest.importorskip("polars")  # load_letor
    from selrank.cli import main

    args = ["train", "--fold", "1", "--loss", "weighted_pairwise", "--no-baseline"]
    assert main([*args, "--backend-param", "n_estimators=3"]) == 0
    assert "selrank weighted_pairwise" in capsys.readouterr().out


@needs_numba
@pytest.mark.parametrize("method", ["all", "topk"])
@pytest.mark.parametrize("cap_mode", ["linear", "flat"])
def test_odd_kernel_on_queries_too_wide_to_factorise(method, cap_mode):
    """Score spreads of hundreds (beyond the factorised exponentials' range): the odd-link
    kernel computes one exponential per pair and still matches the generic path (issue 29
    split the kernel; this branch was the generic pair loop's before)."""
    from selrank import set_kernel_policy
    from selrank.links import Sinh

    rng, y, sizes, _ = ranking_data(3)
    pred = rng.normal(size=y.size) * 800.0
    loss = WeightedPairwise(Sinh(cap=3.0, cap_mode=cap_mode), pair_method=method)
    previous = set_kernel_policy("eager")
    try:
        g, h = loss.bind(y, group=sizes).grad_hess(pred)
    finally:
        set_kernel_policy(previous)
    g0, h0 = numpy_path(loss, y, sizes, pred)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    np.testing.assert_allclose(g, g0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h, h0, rtol=1e-9, atol=1e-12)
