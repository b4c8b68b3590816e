"""The pairwise head's tiled torch path (kernel policy "never", no autograd graph) gives the
values and gradients of the index path it replaced and of the pair formula written plainly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import selrank  # noqa: E402
from selrank.links import Exp, Identity, Sigmoid, Sinh, SmeLU, get_link  # noqa: E402
from selrank.torch import PairwiseLoss  # noqa: E402
from selrank.torch.heads import _terms  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::selrank.fast.FastPathWarning")

LINKS = [
    Sinh(cap=3.0),
    Sinh(cap=1.0, cap_mode="flat"),
    Sinh(cap=(-0.5, 2.0)),
    Sinh(cap=None),
    Identity(),
    Identity(beta=0.5),
    Exp(),
    Exp(alpha=0.5, cap=2.0),
    Sigmoid(alpha=2.0),
    get_link("negexp"),
    SmeLU(),
]


@pytest.fixture(autouse=True)
def never():
    previous = selrank.set_kernel_policy("never")
    yield
    selrank.set_kernel_policy(previous)


def batch(rng, B, L, dtype, scale):
    s = torch.as_tensor(scale * rng.normal(size=(B, L)), dtype=dtype)
    y = torch.as_tensor(rng.integers(0, 5, size=(B, L)).astype(float), dtype=dtype)
    lengths = torch.as_tensor(rng.integers(0, L + 1, size=B))
    lengths[0] = L
    mask = torch.arange(L)[None, :] < lengths[:, None]
    if B > 2 and L > 3:
        mask[2, 1] = False  # a hole in the middle of a list
    return s, y, mask


def run(head, s, y, mask, tiles=True, monkeypatch=None):
    if not tiles:
        monkeypatch.setattr(_terms, "_tiled_link", lambda link: False)
    x = s.clone().requires_grad_(True)
    v = head(x, y, mask=mask, reduction="none")
    v.sum().backward()
    if not tiles:
        monkeypatch.undo()
    return v.detach(), x.grad


def plain(link, s, y, mask, distinct=False):
    """The per-list loss and gradient from the definition, pair by pair, in float64."""
    s, y = s.double(), y.double()
    B, L = s.shape
    values = torch.zeros(B, dtype=torch.float64)
    grad = torch.zeros(B, L, dtype=torch.float64)
    for b in range(B):
        for i, j in itertools.combinations(range(L), 2):
            if not (mask[b, i] and mask[b, j]):
                continue
            a, c = (i, j) if y[b, i] >= y[b, j] else (j, i)
            dy = (y[b, a] - y[b, c]).reshape(1)
            if distinct and dy.item() == 0:
                continue
            dz = (s[b, a] - s[b, c]).reshape(1)
            values[b] += link.bregman(dz, dy)[0]
            g = (link.h(dz) - link.h(dy))[0]
            grad[b, a] += g
            grad[b, c] -= g
    return values, grad


def close(a, b, dtype):
    """Equal to the rounding of the terms (pair sums of opposite signs cancel)."""
    a, b = a.double(), b.double()
    tol = 1e-5 if dtype == torch.float32 else 1e-11
    scale = max(float(b.abs().max()), 1e-300)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("link", LINKS, ids=repr)
@pytest.mark.parametrize("pairs", ["all", "distinct"])
def test_tiles_equal_index_path_and_definition(link, pairs, dtype, rng, monkeypatch):
    s, y, mask = batch(rng, 5, 11, dtype, 2.0)
    head = PairwiseLoss(link, pairs=pairs)
    assert _terms._tiled_link(link)
    v1, g1 = run(head, s, y, mask)
    v2, g2 = run(head, s, y, mask, tiles=False, monkeypatch=monkeypatch)
    close(v1, v2, dtype)
    close(g1, g2, dtype)
    v3, g3 = plain(link, s, y, mask, distinct=pairs == "distinct")
    close(v1, v3, dtype)
    close(g1, g3, dtype)
    assert torch.all(g1[~mask] == 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(3, 2), (40, 37), (7, 300)])
def test_tiles_at_several_shapes_and_chunks(shape, dtype, rng, monkeypatch):
    s, y, mask = batch(rng, *shape, dtype, 1.0)
    for chunk in (1, 1000, 1 << 18):
        head = PairwiseLoss(chunk_pairs=chunk)
        v1, g1 = run(head, s, y, mask)
        v2, g2 = run(head, s, y, mask, tiles=False, monkeypatch=monkeypatch)
        close(v1, v2, dtype)
        close(g1, g2, dtype)
    full = torch.ones_like(mask)
    v1, g1 = run(head, s, y, full)
    v2, g2 = run(head, s, y, full, tiles=False, monkeypatch=monkeypatch)
    close(v1, v2, dtype)
    close(g1, g2, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("big", [1e4, 1e30])
@pytest.mark.parametrize("link", [Sinh(cap=3.0), Exp(), Identity(), Sinh(cap=None)], ids=repr)
def test_tiles_at_extreme_scores(link, big, dtype, rng, monkeypatch):
    """Huge scores: the same finite values as the index path, and the same non-finite ones
    (a pair loss beyond the dtype's range hands the batch to the index path)."""
    s, y, mask = batch(rng, 6, 9, dtype, 1.0)
    s[0, 0], s[3, 1], s[1, 2] = big, -big, big
    head = PairwiseLoss(link)
    v1, g1 = run(head, s, y, mask)
    v2, g2 = run(head, s, y, mask, tiles=False, monkeypatch=monkeypatch)
    for a, b in ((v1, v2), (g1, g2)):
        assert torch.equal(torch.isnan(a), torch.isnan(b))
        assert torch.equal(torch.isinf(a), torch.isinf(b))
        fin = torch.isfinite(b)
        close(a[fin], b[fin], dtype)
    if link.capped and math.isfinite(float(v2.double().sum())):
        assert torch.isfinite(g1).all()


def test_autograd_keeps_the_index_path(rng, monkeypatch):
    s, y, mask = batch(rng, 4, 8, torch.float64, 1.0)
    called = []
    original = _terms._pairwise_tiles
    monkeypatch.setattr(
        _terms, "_pairwise_tiles", lambda *a, **k: called.append(1) or original(*a, **k)
    )
    run(PairwiseLoss(grad="autograd"), s, y, mask)
    assert not called
    run(PairwiseLoss(), s, y, mask)
    assert called
