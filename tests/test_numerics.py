"""Numerics at extreme inputs (issue 11): optimal constants in the flat region of a link,
float32 softmax baselines at large logits, double backward through the torch baselines and
composite-softmax gradients at scores near the float32 limit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selrank.links import get_link

from ._registry import link_cases

# ---------------------------------------------------------------------------------------
# Optimal constant h^{-1}(mean h(y)) where h underflows towards a range end
# ---------------------------------------------------------------------------------------

DTYPES = [np.float32, np.float64]


def _log_mean_exp_reference(x, w):
    # an independent reference: exact for these small inputs through Python's fsum on
    # scaled terms (a different route from selrank's max-shift)
    m = max(xi for xi, wi in zip(x, w, strict=True) if wi > 0)
    total = math.fsum(wi * math.exp(xi - m) for xi, wi in zip(x, w, strict=True))
    return m + math.log(total / math.fsum(w))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", [-40.0, -200.0, -800.0, -1e4, -3e38])
def test_exp_optimal_constant_in_the_flat_region_is_the_target(dtype, target):
    y = np.array([target], dtype=dtype)
    if not np.isfinite(y[0]):
        pytest.skip("not representable in this dtype")
    c = get_link("exp").optimal_constant(y)
    assert c == pytest.approx(float(y[0]), rel=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("params", [{}, {"alpha": 0.5, "beta": 1.0}, {"alpha": 2.0, "cap": 3.0}])
def test_exp_optimal_constant_is_the_log_mean_exp(dtype, params):
    link = get_link("exp", **params)
    y = np.array([-40.0, -41.0, -900.0, -55.5], dtype=dtype)
    w = np.array([1.0, 2.0, 0.5, 0.0])
    a, b = link.alpha, link.beta
    expected = _log_mean_exp_reference([a * (v - b) for v in y.astype(float)], list(w)) / a + b
    assert link.optimal_constant(y, w) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", [40.0, 200.0, 1e4])
def test_negexp_optimal_constant_in_the_flat_region_is_the_target(dtype, target):
    link = get_link("negexp")
    assert link.optimal_constant(np.array([target], dtype=dtype)) == pytest.approx(target, rel=1e-12)
    y = np.array([target, target + 1.0], dtype=dtype)
    expected = -_log_mean_exp_reference([-float(v) for v in y], [1.0, 1.0])
    assert link.optimal_constant(y) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", [-1e4, -800.0, -40.0, 40.0, 800.0, 1e4])
def test_sigmoid_optimal_constant_at_both_saturated_ends(dtype, target):
    for params in ({}, {"alpha": 2.0, "beta": 1.0}):
        link = get_link("sigmoid", **params)
        assert link.optimal_constant(np.array([target, target], dtype=dtype)) == pytest.approx(target, rel=1e-12)


def test_sigmoid_optimal_constant_mixes_in_log_space():
    # p = mean sigmoid(x) with both terms far in the lower tail: logit(p) ~ log mean e^x
    y = np.array([-50.0, -52.0])
    c = get_link("sigmoid").optimal_constant(y)
    assert c == pytest.approx(_log_mean_exp_reference([-50.0, -52.0], [1.0, 1.0]), rel=1e-12)


@pytest.mark.parametrize("case", link_cases(), ids=[c[0] for c in link_cases()])
@pytest.mark.parametrize("target", [-800.0, -40.0, 40.0, 800.0])
def test_optimal_constant_of_one_extreme_target_has_zero_loss(case, target):
    # properness: the constant for identical targets attains loss 0, however flat h is there
    _, link = case
    lo, hi = link.domain
    if not (lo < target < hi):
        pytest.skip("target outside the link's domain")
    y = np.full(3, target)
    c = link.optimal_constant(y)
    loss = float(np.max(link.bregman(np.full(3, c), y)))
    assert loss <= 1e-9 * max(1.0, abs(float(link.H(np.array([target]))[0])))
