"""The numba pairwise kernel (the GBDT speed path) equals the generic vectorised pairwise loss
for every link it accepts, with caps, shifts, weights, ties, extreme scores; other links and
inputs take the generic path."""

from __future__ import annotations

import numpy as np
import pytest

from selrank._groups import as_groups
from selrank.fast import _links as K
from selrank.links import CallableLink, Exp, Identity, Sigmoid, Sinh, SmeLU
from selrank.losses import Pairwise

pytestmark = pytest.mark.skipif(not K.available(), reason="numba is not installed")

LINKS = [
    Identity(),
    Identity(alpha=2.0, beta=0.5),
    Exp(),
    Exp(alpha=0.5, beta=1.0),
    Exp(cap=1.0),
    Exp(cap=0.5, cap_mode="flat"),
    Exp(cap=None),
    Sinh(),
    Sinh(cap=3.0),
    Sinh(alpha=2.0, cap=1.0),
    Sinh(cap=1.5, cap_mode="flat"),
    Sinh(cap=(-0.5, 2.0)),
    Sigmoid(),
    Sigmoid(alpha=3.0, beta=-0.5),
    Sigmoid(cap=2.0),
]


def data(rng, continuous=False, n_groups=25, spread=1.0):
    sizes = rng.integers(1, 12, size=n_groups)
    sizes[3] = 1  # a query without pairs
    n = int(sizes.sum())
    y = rng.normal(size=n) if continuous else rng.integers(0, 4, size=n).astype(float)
    z = spread * rng.normal(size=n)
    return y, z, sizes


def generic(bound, z):
    """The vectorised path of the same bound loss."""
    kernel, bound._kernel = bound._kernel, None
    try:
        return bound.grad_hess(z)
    finally:
        bound._kernel = kernel


def check(bound, z):
    assert bound._kernel is not None
    g1, h1 = bound.grad_hess(z)
    g2, h2 = generic(bound, z)
    scale = max(1.0, float(np.max(np.abs(h2))), float(np.max(np.abs(g2))))
    np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(h1, h2, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("link", LINKS, ids=repr)
@pytest.mark.parametrize("pairs", ["all", "distinct"])
def test_kernel_equals_generic(link, pairs, rng):
    for continuous in (False, True):
        y, z, sizes = data(rng, continuous)
        w = rng.uniform(0.5, 2.0, size=y.size)
        for weight in (None, w):
            check(Pairwise(link, pairs=pairs).bind(y, group=sizes, sample_weight=weight), z)


@pytest.mark.parametrize(
    "link", [Sinh(cap=3.0), Exp(), Sigmoid(), Exp(beta=-400.0), Identity()], ids=repr
)
def test_extreme_scores(link, rng):
    """Wide score ranges (the kernel's one-exponential-per-pair branch) and scores beyond the caps."""
    y, z, sizes = data(rng, spread=1.0)
    z = z.copy()
    z[: sizes[0]] *= 400.0  # a query whose range would overflow the factorised exponentials
    z[-1] = 50.0
    bound = Pairwise(link).bind(y, group=sizes)
    with np.errstate(over="ignore"):
        g1, h1 = bound.grad_hess(z)
        g2, h2 = generic(bound, z)
    finite = np.isfinite(g2) & np.isfinite(h2)
    np.testing.assert_array_equal(np.isfinite(g1), np.isfinite(g2))
    np.testing.assert_allclose(g1[finite], g2[finite], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(h1[finite], h2[finite], rtol=1e-9, atol=1e-9)


def test_data_covers_ties_singletons_and_caps(rng):
    y, z, sizes = data(rng)
    assert np.any(sizes == 1) and np.any(sizes > 5)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    assert any(len(set(y[s : s + m])) < m for s, m in zip(starts, sizes))  # ties within queries
    d = np.abs(np.subtract.outer(z, z))
    assert d.max() > 3.0 > 0.5 > np.min(d[d > 0])  # differences inside and beyond the caps


def test_other_links_and_inputs_take_the_generic_path(rng):
    y, z, sizes = data(rng)
    assert Pairwise(SmeLU()).bind(y, group=sizes)._kernel is None
    assert Pairwise(CallableLink(lambda t: t**3 + t)).bind(y, group=sizes)._kernel is None
    qid = np.repeat(np.arange(sizes.size), sizes)[::-1].copy()  # ids out of order: rows permuted
    qid[:3] = qid[-1]
    bound = Pairwise().bind(y, group=as_groups(qid=qid, n_rows=y.size))
    assert bound._kernel is None and bound._pairs is not None
    # float32 predictions give float32 results from the generic path
    b = Pairwise().bind(y, group=sizes)
    g, _ = b.grad_hess(z.astype(np.float32))
    assert g.dtype == np.float32


def test_pairs_are_not_stored_on_the_kernel_path(rng):
    y, z, sizes = data(rng)
    bound = Pairwise(pairs="distinct").bind(y, group=sizes)
    bound.grad_hess(z)
    assert bound._pairs is None
    n = bound.n_pairs  # counted without enumerating
    assert bound._pairs is None
    bound.loss(z)  # the loss value uses the generic pair arrays, built on demand
    assert bound._pairs is not None and bound.n_pairs == n
    torch = pytest.importorskip("torch")
    g_t, _ = bound.grad_hess(torch.as_tensor(z))
    np.testing.assert_allclose(g_t.numpy(), bound.grad_hess(z)[0], rtol=1e-9, atol=1e-12)


def test_kernel_link_reads_the_link_object():
    params = K.kernel_link(Sinh(alpha=2.0, beta=0.5, cap=1.5, cap_mode="flat"))
    kind, alpha, beta, lo, hi, flat, f_lo, df_lo, f_hi, df_hi = params
    assert (kind, alpha, beta, lo, hi, flat) == (K.SINH, 2.0, 0.5, -1.5, 1.5, True)
    assert f_hi == pytest.approx(np.sinh(1.5)) and df_lo == pytest.approx(np.cosh(1.5))
    assert K.kernel_link(SmeLU()) is None
