"""Synthetic generators: shapes, the distributions they promise, and the paper's constructions."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from selrank.datasets import (
    MSLR_LABEL_PROPORTIONS,
    make_bust_data,
    make_dwell,
    make_mslr_like,
    make_one_large_score_data,
    make_symmetric_score_data,
    make_two_feature_data,
)


def test_mslr_like_shape_labels_and_groups():
    s = make_mslr_like(60_000, 40, mean_docs_per_query=120, seed=3)
    X, y, group = s
    assert X.shape == (60_000, 40) and X.dtype == np.float32 and np.all(np.isfinite(X))
    assert group.dtype == np.int64 and int(group.sum()) == 60_000 and group.min() >= 1
    assert abs(group[:-1].mean() - 120) < 15  # the last query is cut to fit
    assert group.max() > 2 * 120  # over-dispersed sizes, like web search
    shares = np.bincount(y.astype(int), minlength=5) / y.size
    np.testing.assert_allclose(shares, MSLR_LABEL_PROPORTIONS, atol=0.005)
    np.testing.assert_array_equal(np.unique(s.qid), np.arange(group.size))
    assert X[:, :10].min() >= 0 and np.all(X[:, :10] == np.round(X[:, :10]))  # count features
    assert 0 < X[:, 10:20].min() and X[:, 10:20].max() < 1  # ratio features


def test_mslr_like_is_learnable_and_seeded():
    X, y, group = make_mslr_like(40_000, 30, mean_docs_per_query=50, seed=5)
    X2, y2, g2 = make_mslr_like(40_000, 30, mean_docs_per_query=50, seed=5)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(y, make_mslr_like(40_000, 30, mean_docs_per_query=50, seed=6).y)
    # a least-squares fit on rank-transformed informative columns predicts held-out labels;
    # the same fit on the uninformative columns does not
    ranks = np.argsort(np.argsort(X, axis=0), axis=0) / X.shape[0]
    feats = np.column_stack([ranks, ranks**2, np.ones(X.shape[0])])
    half = X.shape[0] // 2

    def held_out_corr(cols):
        w, *_ = np.linalg.lstsq(feats[:half][:, cols], y[:half], rcond=None)
        return np.corrcoef(feats[half:][:, cols] @ w, y[half:])[0, 1]

    informative = [*range(20), *range(30, 50), 60]
    noise = [*range(20, 30), *range(50, 60), 60]
    assert held_out_corr(informative) > 0.5
    assert abs(held_out_corr(noise)) < 0.05


def test_mslr_like_validates():
    with pytest.raises(ValueError, match="`n_rows` of make_mslr_like must be >= 1"):
        make_mslr_like(0)
    with pytest.raises(TypeError, match="`n_features` of make_mslr_like must be an int"):
        make_mslr_like(10, 2.5)
    with pytest.raises(ValueError, match="`label_proportions`"):
        make_mslr_like(10, label_proportions=(1, 0, 0))
    with pytest.raises(ValueError, match="`mean_docs_per_query` of make_mslr_like must be >= 1"):
        make_mslr_like(10, mean_docs_per_query=0.5)
    X, y, group = make_mslr_like(1, 3)
    assert X.shape == (1, 3) and group.tolist() == [1]


def test_dwell_bands():
    d = make_dwell(50_000, idle_fraction=0.1, bounce_fraction=0.05, engaged_median=30.0, seed=2)
    X, seconds, y = d
    np.testing.assert_array_equal(y, np.log1p(seconds))
    assert abs(d.idle.mean() - 0.1) < 0.01 and abs(d.bounce.mean() - 0.05) < 0.01
    assert not np.any(d.idle & d.bounce)
    assert seconds[d.idle].min() >= 600
    # log-uniform idle time on [600, 28800] s: median near sqrt(600 * 28800) ≈ 4157 s
    assert abs(np.median(seconds[d.idle]) / np.sqrt(600 * 28_800) - 1) < 0.15
    assert seconds[d.bounce].max() < 2 and seconds.min() >= 0
    engaged = ~(d.idle | d.bounce)
    assert abs(np.median(seconds[engaged]) / 30.0 - 1) < 0.1
    # engaged dwell follows the features; idle time does not
    fit = np.corrcoef(d.engaged_log[engaged], y[engaged])[0, 1]
    assert fit > 0.8
    idle_gap = np.log(seconds[d.idle] - np.expm1(d.engaged_log[d.idle]) + 1e-9)
    assert abs(np.corrcoef(idle_gap, X[d.idle, 0])[0, 1]) < 0.05
    with pytest.raises(ValueError, match="must be < 1"):
        make_dwell(10, idle_fraction=0.6, bounce_fraction=0.5)
    with pytest.raises(ValueError, match="low < high"):
        make_dwell(10, idle_range=(10.0, 5.0))


def test_bust_construction():
    n, tau, d, lo, hi = 100_000, 0.02, 3.0, -1.0, 2.0
    data = make_bust_data(n, s_min=lo, s_max=hi, w_u=0.4, tau=tau, d=d, grid=True)
    X, y = data
    w = X[:, 0]
    np.testing.assert_array_equal(data.in_interval, np.abs(w - 0.4) <= tau / 2)
    np.testing.assert_allclose((y - w)[data.in_interval], d)
    np.testing.assert_array_equal((y - w)[~data.in_interval], 0.0)
    assert abs(data.in_interval.sum() - tau / (hi - lo) * n) <= 1
    # square loss (identity link): the best shift of ŵ = w is mean(z − w) = τ d / (S_M − S_m),
    # i.e. τ·Δ_BUST exactly (Theorem 1)
    np.testing.assert_allclose(np.mean(y - w), tau * d / (hi - lo), rtol=1e-3)
    # exp link: the shift solves mean e^{w+δ} = mean e^{z}; compare with the integral form
    # ∫(e^{w+δ} − e^w) dw = ∫_{S_u}(e^{w+d} − e^w) dw of equations [12–13]
    delta = np.log(np.mean(np.exp(y)) / np.mean(np.exp(w)))
    exact = np.log1p(
        (np.exp(0.4 + tau / 2) - np.exp(0.4 - tau / 2)) * np.expm1(d) / (np.exp(hi) - np.exp(lo))
    )
    np.testing.assert_allclose(delta, exact, rtol=1e-3)
    sampled = make_bust_data(20_000, s_min=lo, s_max=hi, seed=1)
    assert sampled.w.min() < lo + 0.01 and sampled.w.max() > hi - 0.01
    assert np.array_equal(sampled.w, make_bust_data(20_000, s_min=lo, s_max=hi, seed=1).w)


def test_bust_validates():
    with pytest.raises(ValueError, match="s_min < s_max"):
        make_bust_data(10, s_min=1.0, s_max=1.0)
    with pytest.raises(ValueError, match="must lie inside"):
        make_bust_data(10, w_u=0.99, tau=0.1)
    with pytest.raises(ValueError, match="`tau` of make_bust_data must be finite and > 0"):
        make_bust_data(10, tau=0.0)
    with pytest.raises(TypeError, match="`d` of make_bust_data must be a real number"):
        make_bust_data(10, d="big")


def test_two_feature_appendix_f():
    X, y = make_two_feature_data()
    assert X.shape == (30, 2)
    low, high = y < 0, y > 0
    assert low.sum() == 20 and high.sum() == 10
    assert sorted(set(y[low].tolist())) == list(range(-10, 0))
    assert sorted(set(y[high].tolist())) == list(range(6, 11))
    # low labels follow x2 and repeat for x1 in {1, 3}; high labels follow x1, repeat for x2
    np.testing.assert_array_equal(X[low, 1], y[low])
    np.testing.assert_array_equal(X[high, 0], y[high])
    for region, other in ((low, 0), (high, 1)):
        for label in np.unique(y[region]):
            rows = region & (y == label)
            assert sorted(X[rows, other].tolist()) == [1.0, 3.0]
    # each region alone is fit exactly by a linear model, both together are not
    w_high, *_ = np.linalg.lstsq(X[high], y[high], rcond=None)
    w_low, *_ = np.linalg.lstsq(X[low], y[low], rcond=None)
    np.testing.assert_allclose(w_high, [1, 0], atol=1e-12)
    np.testing.assert_allclose(w_low, [0, 1], atol=1e-12)
    _, resid, *_ = np.linalg.lstsq(X, y, rcond=None)
    assert resid[0] > 1.0
    with pytest.raises(ValueError, match="non-empty 1-D"):
        make_two_feature_data(low_labels=[])
    with pytest.raises(TypeError, match="numeric"):
        make_two_feature_data(high_labels=["a"])


def test_stochastic_scores_appendix_i():
    d = make_one_large_score_data()
    y, group = d
    assert group.tolist() == list(range(2, 20))
    starts = np.concatenate(([0], np.cumsum(group)[:-1]))
    np.testing.assert_allclose(y[starts], 0.1 + 0.05 * np.arange(1, 19))
    assert d.x[0] == pytest.approx(0.15) and d.x[-1] == pytest.approx(1.0)
    means = np.add.reduceat(y, starts) / group
    np.testing.assert_allclose(means, 0.1)
    np.testing.assert_allclose(np.delete(y, starts), 0.05)
    # the exp-link optimum h⁻¹(mean h(y)) grows with the large score and with α (Figure I.1)
    opt = {a: np.log(np.add.reduceat(np.exp(a * y), starts) / group) / a for a in (1.0, 5.0)}
    assert np.all(np.diff(opt[5.0]) > 0) and np.all(opt[5.0] > opt[1.0]) and np.all(opt[1.0] > 0.1)

    s = make_symmetric_score_data(means=(0.0, 2.0), deviations=np.linspace(0, 1, 5))
    y, group = s
    assert group.tolist() == [2] * 10
    pairs = y.reshape(-1, 2)
    np.testing.assert_allclose(pairs.mean(axis=1), s.mean)
    np.testing.assert_allclose((pairs[:, 0] - pairs[:, 1]) / 2, s.x)
    # under an exp link the bias above the mean is the same for every mean
    bias = np.log(np.exp(pairs).mean(axis=1)) - s.mean
    np.testing.assert_allclose(bias[:5], bias[5:])
    with pytest.raises(ValueError, match="small < mean"):
        make_one_large_score_data(mean=0.05, small=0.1)
    with pytest.raises(ValueError, match="`deviations` .* must be >= 0"):
        make_symmetric_score_data(deviations=[-1.0])


def test_datasets_never_import_losses():
    code = (
        "import sys, selrank.datasets as d; d.make_mslr_like(10, 3); d.load_letor('mq2008');"
        "d.load_dwell(); bad = [m for m in sys.modules if m.startswith('selrank.losses')];"
        "sys.exit(f'imported {bad}' if bad else 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
