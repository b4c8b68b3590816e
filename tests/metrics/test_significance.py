"""Paired significance tests against scipy and exact enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from selrank.metrics import (
    holm,
    paired_bootstrap_ci,
    paired_permutation_test,
    paired_t_test,
    wilcoxon_signed_rank_test,
)


def test_paired_t_test_matches_scipy(rng):
    stats = pytest.importorskip("scipy.stats")
    for n in (2, 3, 5, 30, 400):
        a = rng.normal(size=n)
        b = a + rng.normal(0.1, 0.5, size=n)
        t, p = paired_t_test(a, b)
        ref = stats.ttest_rel(a, b)
        assert t == pytest.approx(ref.statistic, rel=1e-10)
        assert p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)
    assert paired_t_test([1.0, 2.0], [1.0, 2.0]) == (0.0, 1.0)
    assert paired_t_test([1.0, 2.0], [0.0, 1.0]) == (math.inf, 0.0)


def test_permutation_test_exact_and_sampled(rng):
    a = rng.normal(size=10)
    b = a + rng.normal(0.3, 1.0, size=10)
    d = a - b
    signs = np.array(list(itertools.product([1, -1], repeat=10)))
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    assert paired_permutation_test(a, b, n_resamples=2000) == pytest.approx(exact)
    a = rng.normal(size=40)
    b = a + rng.normal(0.3, 1.0, size=40)
    p = paired_permutation_test(a, b, n_resamples=20000, seed=3)
    stats = pytest.importorskip("scipy.stats")
    ref = stats.permutation_test(
        (a - b,), np.mean, permutation_type="samples", n_resamples=20000, random_state=4
    ).pvalue
    assert p == pytest.approx(ref, abs=0.01)
    assert paired_permutation_test(a, a) == 1.0


def test_wilcoxon_matches_scipy(rng):
    stats = pytest.importorskip("scipy.stats")
    for n in (12, 60, 500):
        # dyadic values keep a - b exact: zero differences and tied |d|, as per-query NDCG
        # differences have, in the first half; continuous ones in the second
        a = rng.integers(0, 64, n) / 64
        d = np.concatenate([rng.integers(-3, 4, n // 2) / 16, rng.normal(0.05, 0.3, n - n // 2)])
        b = a - d
        d = a - b
        assert (d == 0).sum() >= 1 and np.unique(np.abs(d[d != 0])).size < (d != 0).sum()
        stat, p = wilcoxon_signed_rank_test(a, b)
        ref = stats.wilcoxon(a, b, zero_method="wilcox", method="asymptotic", correction=False)
        assert stat == pytest.approx(ref.statistic, rel=1e-12)
        assert p == pytest.approx(ref.pvalue, rel=1e-9)
    assert wilcoxon_signed_rank_test([1.0, 2.0], [1.0, 2.0]) == (0.0, 1.0)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_ci_matches_scipy(rng, method):
    stats = pytest.importorskip("scipy.stats")
    n = 300
    a = rng.beta(2, 2, n)
    b = np.clip(a - rng.exponential(0.03, n) + 0.02, 0, 1)  # skewed differences
    low, high = paired_bootstrap_ci(a, b, n_resamples=20_000, method=method, seed=1)
    ref = stats.bootstrap(
        (a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True,
        n_resamples=20_000, method="BCa" if method == "bca" else "percentile", random_state=2,
    ).confidence_interval  # fmt: skip
    width = ref.high - ref.low
    # two independent Monte Carlo runs of 20,000 resamples agree to a few % of the width
    assert low == pytest.approx(ref.low, abs=0.03 * width)
    assert high == pytest.approx(ref.high, abs=0.03 * width)
    # the interval is around the mean difference and narrower than +-3 standard errors
    d = a - b
    se = d.std(ddof=1) / np.sqrt(n)
    assert low < d.mean() < high and high - low < 6 * se


def test_bootstrap_ci_coverage(rng):
    """Over repeated samples the 90% interval covers the true mean about 90% of the time."""
    hits = 0
    for rep in range(300):
        d = rng.exponential(1.0, 60) - 1.0  # true mean 0, skewed
        low, high = paired_bootstrap_ci(d, np.zeros(60), confidence=0.9, n_resamples=1000, seed=rep)
        hits += low <= 0.0 <= high
    assert 0.8 < hits / 300 < 0.96


def test_bootstrap_ci_edge_cases():
    assert paired_bootstrap_ci([1.0, 2.0, 3.0], [0.5, 1.5, 2.5]) == (0.5, 0.5)
    a, b = np.arange(10.0), np.arange(10.0)[::-1]
    assert paired_bootstrap_ci(a, b, seed=3) == paired_bootstrap_ci(a, b, seed=3)
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap_ci(a, b, confidence=95)
    with pytest.raises(ValueError, match="method"):
        paired_bootstrap_ci(a, b, method="basic")
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap_ci([1.0, np.nan], [0.0, 0.0])


def test_holm_by_hand():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([0.5, np.nan, 0.4]), [0.8, np.nan, 0.8])
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_holm_matches_statsmodels():
    smm = pytest.importorskip("statsmodels.stats.multitest")
    q = np.random.default_rng(0).uniform(0, 0.1, 12)
    np.testing.assert_allclose(holm(q), smm.multipletests(q, method="holm")[1])
