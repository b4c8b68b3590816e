"""WeightedPairwise with the logistic link equals LightGBM's built-in ``lambdarank`` (issue 21).

LightGBM does not expose its objective's gradient, so the check trains two boosters on the
same data with the same tree parameters, one with ``objective="lambdarank"`` and one with the
selrank loss as a custom objective (its raw gradient and Hessian, no Hessian policy), and
compares their predictions after several rounds: every tree (splits and leaf values) must be
the same. LightGBM evaluates the sigmoid from a lookup table and keeps gradients in float32,
so the predictions agree to about 1e-5, not to rounding; a different normalisation or
truncation moves them by far more (the negative controls).
"""

from __future__ import annotations

import numpy as np
import pytest

from selrank.losses import WeightedPairwise

lgb = pytest.importorskip("lightgbm")


def data(seed=1):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 60, size=40)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    y = rng.integers(0, 4, n).astype(float)
    y[: sizes[0]] = 0.0  # a query without relevant documents
    return X, y, sizes


def boosters(norm_lgb, k_lgb, loss, rounds=5):
    X, y, sizes = data()
    base = {
        "learning_rate": 0.3,
        "num_leaves": 15,
        "min_data_in_leaf": 5,
        "verbosity": -1,
        "lambdarank_truncation_level": k_lgb,
        "lambdarank_norm": norm_lgb,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": 1,
    }
    builtin = lgb.train({**base, "objective": "lambdarank"}, lgb.Dataset(X, y, group=sizes), rounds)
    bound = loss.bind(y, group=sizes)
    custom = lgb.train(
        {**base, "objective": lambda p, d: bound.grad_hess(np.asarray(p, dtype=np.float64))},
        lgb.Dataset(X, y, group=sizes),
        rounds,
    )
    return builtin.predict(X), custom.predict(X)


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("k", [5, 30, 1000])
def test_equals_lightgbm_lambdarank(norm, k):
    loss = WeightedPairwise("sigmoid", target="order", norm=norm, num_pair_per_sample=k)
    a, b = boosters(norm, k, loss)
    assert np.abs(a).max() > 0.5  # the boosters learned something
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-4)


@pytest.mark.parametrize(
    ("norm_lgb", "k_lgb", "params"),
    [
        (True, 30, {"norm": False, "num_pair_per_sample": 30}),
        (True, 30, {"num_pair_per_sample": 5}),
        (True, 30, {"pair_method": "all"}),
    ],
)
def test_negative_controls_differ(norm_lgb, k_lgb, params):
    a, b = boosters(norm_lgb, k_lgb, WeightedPairwise("sigmoid", target="order", **params))
    assert np.abs(a - b).max() > 1e-3
