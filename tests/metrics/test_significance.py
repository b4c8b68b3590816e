"""Paired significance tests against scipy and exact enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from selrank.metrics import paired_permutation_test, paired_t_test


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
