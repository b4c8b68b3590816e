"""The fused NumPy path of the listwise gradient and Hessian (issue 13) against the generic
composite-softmax code it replaces on NumPy arrays."""

from __future__ import annotations

import numpy as np
import pytest

from selrank._groups import as_groups
from selrank.fast import segment_softmax_h_hess
from selrank.losses import Listwise
from selrank.scalings import composite_softmax, composite_softmax_hess_diag

SCALINGS = [
    {"scaling": "exp"},
    {"scaling": "exp", "alpha": 0.5, "beta": -1.0, "cap": 3.0},
    {"scaling": "constant"},
    {"scaling": "sigmoid"},
    {"scaling": "smelu", "c": 1.0},
    {"scaling": "sinh", "cap": 3.0},
]


@pytest.mark.parametrize("params", SCALINGS)
@pytest.mark.parametrize("gamma", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_equals_composite_softmax(params, gamma, dtype):
    rng = np.random.default_rng(7)
    sizes = np.array([1, 2, 7, 30, 3, 120])
    groups = as_groups(sizes, int(sizes.sum()))
    z = (2.0 * rng.standard_normal(int(sizes.sum()))).astype(dtype)
    z[10] = 12.0  # one dominant document: p close to 1 in its query
    scaling = Listwise(gamma=gamma, **params).scaling
    parts = composite_softmax(scaling, gamma, z, groups)
    ref_h = parts["h"]
    ref_hess = composite_softmax_hess_diag(parts, gamma)
    h, hess = segment_softmax_h_hess(scaling, gamma, z, groups)
    assert h.dtype == hess.dtype == dtype
    np.testing.assert_array_equal(h, ref_h)
    tol = 1e-13 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(hess, ref_hess, rtol=tol, atol=0)
    assert segment_softmax_h_hess(scaling, gamma, z, groups, hess=False)[1] is None


def test_gradient_zero_at_target_and_weights_applied():
    rng = np.random.default_rng(3)
    sizes = [4, 6, 5]
    y = rng.integers(0, 5, 15).astype(np.float64)
    w = rng.uniform(0.5, 2.0, 3)
    loss = Listwise("exp", gamma=2.0)
    g, _ = loss.grad_hess(y, y, group=sizes)
    assert np.all(g == 0.0)
    z = rng.standard_normal(15)
    g1, h1 = loss.grad_hess(z, y, group=sizes)
    gw, hw = loss.grad_hess(z, y, group=sizes, sample_weight=w)
    rw = np.repeat(w, sizes)
    np.testing.assert_allclose(gw, g1 * rw, rtol=1e-15)
    np.testing.assert_allclose(hw, h1 * rw, rtol=1e-15)
