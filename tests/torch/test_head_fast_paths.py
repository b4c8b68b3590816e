"""The torch heads' fast paths give what the general paths give (values and gradients).

``Link.bregman_grad`` (one ``f, f', F`` evaluation per argument inside the caps, the Taylor
form only at the near pairs) against ``bregman`` and ``h`` called separately; the heads with
and without padding against the same heads with the fast paths switched off.
"""

from __future__ import annotations

import pytest
import torch

from selrank.links import Link, get_link
from selrank.torch import ListwiseLoss, PointwiseLoss


def _same(a, b):
    """Equal up to the last bits of a transcendental function: torch evaluates a short tensor
    (the Taylor form's few near pairs) with its scalar kernel, a long one with the vector one."""
    eps = torch.finfo(b.dtype).eps
    torch.testing.assert_close(a, b, rtol=8 * eps, atol=1e-30, equal_nan=True)


LINKS = [
    ("exp", {}),
    ("exp", {"alpha": 0.5, "beta": 1.0}),
    ("exp", {"alpha": 2.0, "cap": 3.0}),
    ("exp", {"cap": 2.0, "cap_mode": "flat"}),
    ("sigmoid", {}),
    ("sinh", {"cap": 3.0}),
    ("sinh", {"cap": None}),
    ("identity", {}),
    ("smelu", {}),
    ("negexp", {}),
]


def _scores(dtype, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = scale * torch.randn(64, 33, generator=g, dtype=torch.float64)
    y = torch.randint(0, 5, (64, 33), generator=g).to(torch.float64)
    # near pairs (the Taylor branch), exact ties and a few far ones
    z[:, :8] = y[:, :8] + 1e-3 * torch.randn(64, 8, generator=g, dtype=torch.float64)
    z[:, 8:10] = y[:, 8:10]
    return z.to(dtype), y.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,params", LINKS)
@pytest.mark.parametrize("scale", [1.0, 40.0])  # 40: beyond the caps of every capped link
def test_bregman_grad_equals_separate_calls(name, params, dtype, scale):
    link = get_link(name, **params)
    z, y = _scores(dtype, scale)
    values, grad = link.bregman_grad(z, y)
    ref_values, ref_grad = Link.bregman_grad(link, z, y)
    _same(values, ref_values)
    assert torch.equal(grad, ref_grad)


def test_bregman_grad_numpy():
    link = get_link("exp")
    z, y = (t.numpy() for t in _scores(torch.float64))
    values, grad = link.bregman_grad(z, y)
    ref = link.bregman(z, y), link.h(z) - link.h(y)
    assert (values == ref[0]).all() and (grad == ref[1]).all()


def _batch(dtype, padded, scale=1.0):
    z, y = _scores(dtype, scale, seed=1)
    mask = torch.ones_like(y, dtype=torch.bool)
    if padded:
        lengths = torch.randint(0, 34, (64,), generator=torch.Generator().manual_seed(2))
        mask = torch.arange(33)[None, :] < lengths[:, None]
        z = torch.where(mask, z, torch.tensor(float("nan"), dtype=dtype))
    return z, y, mask


def _loss_and_grad(head, z, y, mask, reduction):
    x = z.clone().requires_grad_(True)
    out = head(x, y, mask=mask, reduction=reduction)
    out.sum().backward()
    return out.detach(), x.grad


@pytest.fixture
def general_path(monkeypatch):
    """Switch the fast paths off (the separate calls of the general path)."""

    def switch():
        monkeypatch.setattr(
            "selrank.links._AffineLink.bregman_grad", Link.bregman_grad, raising=True
        )

    return switch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,params", LINKS[:6])
@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_pointwise_head_fast_equals_general(
    name, params, dtype, padded, reduction, scale, general_path
):
    head = PointwiseLoss(name, **params)
    z, y, mask = _batch(dtype, padded, scale)
    fast = _loss_and_grad(head, z, y, mask, reduction)
    general_path()
    slow = _loss_and_grad(head, z, y, mask, reduction)
    _same(fast[0], slow[0])
    _same(fast[1], slow[1])
    assert torch.isfinite(fast[1]).all()
    if padded:
        assert (fast[1][~mask] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("padded", [False, True])
def test_pointwise_head_analytic_matches_autograd(dtype, padded):
    z, y, mask = _batch(dtype, padded)
    fast = _loss_and_grad(PointwiseLoss("exp"), z, y, mask, "mean")
    auto = _loss_and_grad(PointwiseLoss("exp", grad="autograd"), z, y, mask, "mean")
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(fast[0], auto[0], rtol=tol, atol=tol)
    torch.testing.assert_close(fast[1], auto[1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("scaling,params", [("exp", {}), ("exp", {"cap": 2.0}), ("sigmoid", {})])
def test_listwise_head_analytic_matches_autograd(scaling, params, dtype, padded):
    z, y, mask = _batch(dtype, padded, scale=3.0)
    fast = _loss_and_grad(ListwiseLoss(scaling, **params), z, y, mask, "none")
    auto = _loss_and_grad(ListwiseLoss(scaling, grad="autograd", **params), z, y, mask, "none")
    tol = 1e-4 if dtype == torch.float32 else 1e-5  # the value cancels in the direct form
    torch.testing.assert_close(fast[0], auto[0], rtol=tol, atol=tol)
    torch.testing.assert_close(fast[1], auto[1], rtol=tol, atol=tol)


def test_infinite_loss_at_padding_is_not_nan():
    # an overflowing loss copied into the padding must not turn the plain weighted sum NaN
    z = torch.tensor([[1e30, 0.0, 0.0], [0.0, 1.0, 2.0]])
    y = torch.tensor([[0.0, 1.0, -1.0], [0.0, 1.0, 2.0]])
    head = PointwiseLoss("exp", cap=None)
    x = z.clone().requires_grad_(True)
    loss = head(x, y)
    assert torch.isinf(loss) or torch.isfinite(loss)
    assert not torch.isnan(loss)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize(
    "scaling,params",
    [
        ("exp", {}),
        ("exp", {"cap": 2.0}),
        ("exp", {"gamma": 0.5, "alpha": 0.5, "beta": 1.0}),
        ("sigmoid", {}),
        ("constant", {}),
        ("smelu", {}),
    ],
)
@pytest.mark.parametrize("scale", [1.0, 40.0])
def test_listwise_head_fast_equals_general(
    scaling, params, dtype, padded, reduction, scale, monkeypatch
):
    head = ListwiseLoss(scaling, **params)
    z, y, mask = _batch(dtype, padded, scale)
    z[:3] = y[:3]  # lists at their target: the Taylor form (general path) for their chunk
    fast = _loss_and_grad(head, z, y, mask, reduction)
    monkeypatch.setattr("selrank.torch.heads._softmax_terms_fast", lambda *a: None)
    slow = _loss_and_grad(head, z, y, mask, reduction)
    _same(fast[0], slow[0])
    _same(fast[1], slow[1])
    z2 = torch.where(mask, z + 0.5, z)  # no list near its target: the fast path throughout
    monkeypatch.undo()
    fast = _loss_and_grad(head, z2, y, mask, reduction)
    monkeypatch.setattr("selrank.torch.heads._softmax_terms_fast", lambda *a: None)
    slow = _loss_and_grad(head, z2, y, mask, reduction)
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=0)
