"""The metric helpers of benchmarks/mechanism.py against plain-Python loops."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "mechanism.py"


@pytest.fixture(scope="module")
def mech():
    spec = importlib.util.spec_from_file_location("mechanism_benchmark", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _random_queries(seed, n_queries=40, ties=True):
    rng = np.random.default_rng(seed)
    group = rng.integers(1, 15, n_queries)
    n = int(group.sum())
    y = rng.integers(0, 3, n).astype(float)
    # rounded scores give ties
    a = np.round(rng.normal(size=n), 1 if ties else 8)
    b = np.round(a + rng.normal(size=n), 1 if ties else 8)
    return y, a, b, group


def _topk_loop(reference, score, group, k):
    out, start = [], 0
    for size in group:
        rows = list(range(start, start + size))
        m = min(k, size)
        # stable: higher score first, ties by row order
        top_r = sorted(rows, key=lambda i: (-reference[i], i))[:m]
        top_s = sorted(rows, key=lambda i: (-score[i], i))[:m]
        out.append(len(set(top_r) & set(top_s)) / m)
        start += size
    return np.array(out)


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_topk_agreement_matches_loop(mech, k, seed):
    _, a, b, group = _random_queries(seed)
    np.testing.assert_allclose(mech.topk_agreement(a, b, group, k), _topk_loop(a, b, group, k))


def test_topk_agreement_identical_scores_is_one(mech):
    _, a, _, group = _random_queries(2)
    assert np.all(mech.topk_agreement(a, a, group, 5) == 1.0)


def _pair_accuracy_loop(y, s, group, high_grades, low_grades):
    out, start = [], 0
    for size in group:
        correct = pairs = 0.0
        for i in range(start, start + size):
            for j in range(start, start + size):
                if y[i] > y[j] and y[i] in high_grades and y[j] in low_grades:
                    pairs += 1
                    correct += 1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0
        out.append(correct / pairs if pairs else np.nan)
        start += size
    return np.array(out)


@pytest.mark.parametrize(
    "region, against, high, low",
    [
        ((1, 2), None, {2.0}, {1.0}),  # top grades: 2 vs 1
        ((0, 1), None, {1.0}, {0.0}),  # low grades: 1 vs 0
        ((2, 2), (0, 0), {2.0}, {0.0}),  # across: 2 vs 0
    ],
)
def test_region_accuracy_per_query_matches_loop(mech, region, against, high, low):
    y, a, _, group = _random_queries(3)
    got = mech.region_accuracy_per_query(y, a, group, region, against)
    np.testing.assert_allclose(got, _pair_accuracy_loop(y, a, group, high, low), equal_nan=True)


def test_standardize_per_query_matches_loop(mech):
    _, a, _, group = _random_queries(4)
    got = mech.standardize_per_query(a, group)
    start = 0
    for size in group:
        block = a[start : start + size]
        sd = block.std()
        want = (block - block.mean()) / sd if sd > 0 else np.zeros(size)
        np.testing.assert_allclose(got[start : start + size], want, atol=1e-12)
        start += size


def test_paired_summary_drops_nan_pairs(mech):
    a = np.array([0.5, np.nan, 1.0, 0.0, 0.25])
    b = np.array([0.25, 0.5, np.nan, 0.5, 0.0])
    r = mech.paired_summary(a, b, n_resamples=200)
    assert r["n"] == 3
    assert r["diff"] == pytest.approx(np.mean([0.25, -0.5, 0.25]))
    assert r["ci_low"] <= r["diff"] <= r["ci_high"]
