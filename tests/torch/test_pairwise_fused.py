"""The fused (numba) path of the pairwise head: equal to the tensor path and to the core loss,
no pair tensor, every ``pair_method``, padding, weights and precisions."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from selrank import fast as K  # noqa: E402
from selrank.links import Exp, Identity, Sigmoid, Sinh, SmeLU  # noqa: E402
from selrank.losses import Pairwise  # noqa: E402
from selrank.torch import PairwiseLoss  # noqa: E402
from selrank.torch.heads import _selective, _terms  # noqa: E402

pytestmark = pytest.mark.skipif(not K.available(), reason="numba is not installed")

LINKS = [
    Sinh(cap=3.0),
    Sinh(cap=1.0, cap_mode="flat"),
    Sinh(cap=(-0.5, 2.0)),
    Identity(),
    Identity(beta=0.5),
    Exp(alpha=0.5, cap=2.0),
    Sigmoid(alpha=2.0),
    Sinh(cap=None),
]


def batch(rng, B=6, L=9, dtype=torch.float64, scale=2.0):
    s = torch.as_tensor(scale * rng.normal(size=(B, L)), dtype=dtype)
    y = torch.as_tensor(rng.integers(0, 4, size=(B, L)).astype(float), dtype=dtype)
    lengths = torch.as_tensor([L, 0, 1, 4, L - 2, 3][:B])
    mask = torch.arange(L)[None, :] < lengths[:, None]
    mask[4, 2] = False  # a hole in the middle of a list
    return s, y, mask


def run(head, s, y, **kw):
    x = s.clone().requires_grad_(True)
    v = head(x, y, reduction="none", **kw)
    v.sum().backward()
    return v.detach(), x.grad


@pytest.mark.parametrize("link", LINKS, ids=repr)
@pytest.mark.parametrize("pairs", ["all", "distinct"])
def test_fused_equals_tensor_path(link, pairs, rng):
    s, y, mask = batch(rng)
    fused = PairwiseLoss(link, pairs=pairs)
    tensor = PairwiseLoss(link, pairs=pairs, grad="autograd")
    assert fused.uses_kernel(s) and not tensor.uses_kernel(s.requires_grad_(True))
    s = s.detach()
    v1, g1 = run(fused, s, y, mask=mask)
    v2, g2 = run(tensor, s, y, mask=mask)
    np.testing.assert_allclose(v1, v2, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-10)
    assert torch.all(g1[~mask] == 0)


@pytest.mark.parametrize("method", ["topk", "mean"])
@pytest.mark.parametrize("pairs", ["all", "distinct"])
def test_sampled_methods_equal_core_loss(method, pairs, rng):
    s, y, mask = batch(rng, L=12)
    link = Sinh(cap=2.0)
    fused = PairwiseLoss(link, pairs=pairs, pair_method=method, num_pair_per_sample=3, seed=4)
    tensor = PairwiseLoss(
        link, pairs=pairs, pair_method=method, num_pair_per_sample=3, seed=4, grad="autograd"
    )
    for draw in range(2):
        v1, g1 = run(fused, s, y, mask=mask)
        v2, g2 = run(tensor, s, y, mask=mask)
        np.testing.assert_allclose(v1, v2, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-10)
        # the core loss on the ragged real items, at the same draw
        sizes = mask.sum(dim=1).numpy()
        core = Pairwise(link, pairs=pairs, pair_method=method, num_pair_per_sample=3, seed=4)
        bound = core.bind(y[mask].numpy(), group=sizes[sizes > 0])
        bound.draw = draw
        ref = bound.loss(s[mask].numpy(), reduction="none")
        np.testing.assert_allclose(v1[torch.as_tensor(sizes > 0)], ref, rtol=1e-9, atol=1e-10)
        g_ref, _ = bound.grad_hess(s[mask].numpy())
        np.testing.assert_allclose(g1[mask], g_ref, rtol=1e-9, atol=1e-10)
    assert fused.draws == tensor.draws == 2


def test_mean_draws_change_and_reproduce(rng):
    s, y, mask = batch(rng, L=12)
    a = PairwiseLoss(pair_method="mean", seed=1)
    b = PairwiseLoss(pair_method="mean", seed=1)
    ga = [run(a, s, y, mask=mask)[1] for _ in range(2)]
    gb = [run(b, s, y, mask=mask)[1] for _ in range(2)]
    assert torch.equal(ga[0], gb[0]) and torch.equal(ga[1], gb[1])
    assert not torch.equal(ga[0], ga[1])


def test_no_pair_tensor_on_the_fused_path(rng, monkeypatch):
    """The fused path never builds pair indices (memory O(batch x list))."""

    def refuse(*args, **kwargs):
        raise AssertionError("pair tensors built")

    monkeypatch.setattr(_terms, "_upper_pairs", refuse)
    monkeypatch.setattr(_selective, "pairwise_terms", refuse)
    s, y, mask = batch(rng)
    for method in ("all", "topk", "mean"):
        v, g = run(PairwiseLoss(pair_method=method), s, y, mask=mask)
        assert torch.isfinite(v).all() and torch.isfinite(g).all()
    with pytest.raises(AssertionError, match="pair tensors built"):
        run(PairwiseLoss(grad="autograd"), s, y, mask=mask)


def test_uncovered_links_and_autograd_keep_the_tensor_path(rng):
    s, y, mask = batch(rng)
    head = PairwiseLoss(SmeLU())
    assert not head.uses_kernel(s)
    v, g = run(head, s, y, mask=mask)
    assert torch.isfinite(v).all() and torch.isfinite(g).all()
    # double backward through the sampled methods' autograd path
    for method in ("all", "topk"):
        x = s.clone().requires_grad_(True)
        loss = PairwiseLoss(pair_method=method, grad="autograd")(x, y, mask=mask)
        (gx,) = torch.autograd.grad(loss, x, create_graph=True)
        (ggx,) = torch.autograd.grad(gx.sum(), x)
        assert torch.isfinite(ggx).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_low_precision(dtype, rng):
    s, y, mask = batch(rng, dtype=torch.float64, scale=1.0)
    head = PairwiseLoss(pair_method="topk", num_pair_per_sample=4)
    v64, g64 = run(head, s, y, mask=mask)
    x = s.to(dtype).requires_grad_(True)
    loss = head(x, y.to(dtype), mask=mask, reduction="sum")
    loss.backward()
    assert x.grad.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 5e-2
    np.testing.assert_allclose(float(loss.detach()), float(v64.sum()), rtol=tol * 10)
    np.testing.assert_allclose(
        x.grad.double(), g64, rtol=tol * 10, atol=tol * float(g64.abs().max())
    )


def test_weights_and_reductions(rng):
    s, y, mask = batch(rng)
    w = torch.as_tensor(rng.uniform(0.5, 2.0, size=s.shape[0]))
    fused, tensor = PairwiseLoss(), PairwiseLoss(grad="autograd")
    for reduction in ("mean", "sum"):
        xs = [s.clone().requires_grad_(True) for _ in range(2)]
        a = fused(xs[0], y, mask=mask, sample_weight=w, reduction=reduction)
        b = tensor(xs[1], y, mask=mask, sample_weight=w, reduction=reduction)
        a.backward()
        b.backward()
        np.testing.assert_allclose(float(a.detach()), float(b.detach()), rtol=1e-9)
        np.testing.assert_allclose(xs[0].grad, xs[1].grad, rtol=1e-9, atol=1e-12)


def test_all_padding_gives_zero(rng):
    s, y, _ = batch(rng)
    mask = torch.zeros_like(s, dtype=torch.bool)
    x = s.clone().requires_grad_(True)
    loss = PairwiseLoss()(x, y, mask=mask)
    loss.backward()
    assert float(loss.detach()) == 0.0 and torch.all(x.grad == 0)


def test_extreme_scores_stay_finite(rng):
    s, y, mask = batch(rng)
    s = s.clone()
    s[0, 0] = 1e20
    s[3, 1] = -1e20
    v, g = run(PairwiseLoss(), s, y, mask=mask)
    assert torch.isfinite(v).all() and torch.isfinite(g).all()
