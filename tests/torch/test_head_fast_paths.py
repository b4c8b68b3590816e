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


# ---------------------------------------------------------------------------------------
# The exp link's numba kernel (selrank.fast._pointwise_torch)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("extreme", [None, -1e20, -float("inf")])
def test_exp_kernel_equals_torch_path(dtype, extreme):
    pytest.importorskip("numba")
    from selrank.fast._pointwise_torch import exp_bregman_grad

    link = get_link("exp")
    z, y = _scores(dtype, 2.0)
    if extreme is not None:
        z[5, 20] = extreme  # the direct form is infinite there: the torch path falls back
    values, grad = exp_bregman_grad(link, z, y)
    ref_values, ref_grad = link.bregman_grad(z, y)
    assert torch.equal(grad, ref_grad)
    # the same operations; at the near pairs torch's vectorised sqrt may round differently
    _same(values, ref_values)
    sep_values, _ = Link.bregman_grad(link, z, y)
    _same(values, sep_values)
    d = z - y
    far = d.abs() >= 0.5
    assert torch.equal(values[far], ref_values[far])  # the direct form: bit for bit
    near = d.abs() < 1e-2
    assert near.sum() > 100 and (values[near] >= 0).all()
    if extreme is not None:  # (-d) e^y, or inf: the value of bregman()
        assert values[5, 20] == sep_values[5, 20] and values[5, 20] > 1e19


def test_exp_kernel_applies_only_where_it_is_exact():
    pytest.importorskip("numba")
    from selrank.fast._pointwise_torch import exp_bregman_grad

    z, y = _scores(torch.float32)
    exp = get_link("exp")
    assert exp_bregman_grad(exp, z, y) is not None
    for link in (get_link("exp", alpha=0.5), get_link("exp", beta=1.0), get_link("negexp")):
        assert exp_bregman_grad(link, z, y) is None
    assert exp_bregman_grad(exp, z.t(), y.t()) is None  # not contiguous
    assert exp_bregman_grad(exp, z.to(torch.bfloat16), y.to(torch.bfloat16)) is None
    assert exp_bregman_grad(exp, z, y.double()) is None
    assert exp_bregman_grad(exp, z + 40.0, y) is None  # beyond the default cap (30)
    bad = z.clone()
    bad[0, 0] = float("nan")
    assert exp_bregman_grad(exp, bad, y) is None  # the cap check fails: the torch path
    # the one-sided cap is compared as a double (as Capped.inside_caps does): float32(0.1)
    # lies above 0.1
    tenth = get_link("exp", cap=0.1)
    at = torch.full((3, 4), 0.1)
    assert not tenth.inside_caps(at) and exp_bregman_grad(tenth, at, at - 1.0) is None
    assert exp_bregman_grad(tenth, at - 1.0, at - 1.0) is not None
    # two caps: checked before the pass; inside them the kernel's values are the torch path's
    pair = get_link("exp", cap=(-5.0, 3.0))
    zc, yc = z.clamp(-5.0, 3.0), y.clamp(-5.0, 3.0)
    values, grad = exp_bregman_grad(pair, zc, yc)
    ref_values, ref_grad = pair.bregman_grad(zc, yc)
    assert torch.equal(grad, ref_grad)
    _same(values, ref_values)
    assert exp_bregman_grad(pair, zc - 6.0, yc) is None


def test_pointwise_head_takes_the_exp_kernel(monkeypatch):
    pytest.importorskip("numba")
    import selrank.fast._pointwise_torch as kernel  # found through selrank.fast.lookup

    calls = []

    def spy(*args):
        out = heads_kernel(*args)
        calls.append(out is not None)
        return out

    heads_kernel = kernel.exp_bregman_grad
    monkeypatch.setattr(kernel, "exp_bregman_grad", spy)
    z, y, mask = _batch(torch.float32, True)
    z = torch.where(mask, z, torch.zeros(()))
    for head in (PointwiseLoss(), PointwiseLoss(reduction="none")):
        x = z.clone().requires_grad_(True)
        head(x, y, mask=mask).sum().backward()
    assert calls == [True, True]


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
        # and every copy in selrank.fast (the exp link's numba kernel, the in-place torch code)
        monkeypatch.setattr("selrank.fast.lookup", lambda *args, **kw: None, raising=True)

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
    monkeypatch.setattr("selrank.fast.lookup", lambda *a, **kw: None)
    slow = _loss_and_grad(head, z, y, mask, reduction)
    _same(fast[0], slow[0])
    _same(fast[1], slow[1])
    z2 = torch.where(mask, z + 0.5, z)  # no list near its target: the fast path throughout
    monkeypatch.undo()
    fast = _loss_and_grad(head, z2, y, mask, reduction)
    monkeypatch.setattr("selrank.fast.lookup", lambda *a, **kw: None)
    slow = _loss_and_grad(head, z2, y, mask, reduction)
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------
# The fused path ("mean"/"sum" without sample weights: loss and gradient in one pass)
# ---------------------------------------------------------------------------------------


def _general(head):
    """The same head with the fused path switched off (the general path of the base class)."""
    import copy

    other = copy.deepcopy(head)
    other.fused = False
    return other


FUSED_HEADS = [
    ("pointwise", {}),
    ("pointwise", {"link": "exp", "alpha": 0.5, "beta": 1.0}),
    ("pointwise", {"link": "sigmoid"}),
    ("pointwise", {"link": "sinh", "cap": None}),
    ("pointwise", {"link": "exp", "cap": 2.0, "cap_mode": "flat"}),
    ("listwise", {}),
    ("listwise", {"scaling": "exp", "cap": 2.0}),
    ("listwise", {"scaling": "exp", "gamma": 0.5, "alpha": 0.5, "beta": 1.0}),
    ("listwise", {"scaling": "sigmoid"}),
]


def _fused_head(kind, params):
    return (PointwiseLoss if kind == "pointwise" else ListwiseLoss)(**params)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("scale", [1.0, 40.0])
@pytest.mark.parametrize("kind,params", FUSED_HEADS)
def test_fused_path_equals_general_path(kind, params, dtype, padded, reduction, scale):
    head = _fused_head(kind, params)
    assert head.fused
    z, y, mask = _batch(dtype, padded, scale)
    z[:3] = y[:3]  # lists at their target (Taylor forms)
    fast = _loss_and_grad(head, z, y, mask, reduction)
    slow = _loss_and_grad(_general(head), z, y, mask, reduction)
    # the same operations on the real items, products by 0/1 weights: bit for bit
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=0)
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=0, equal_nan=True)
    if "cap" not in params or params["cap"] is not None:  # uncapped sinh overflows at 40
        assert torch.isfinite(fast[1]).all()
    if padded:
        assert (fast[1][~mask] == 0).all()


def test_fused_path_is_taken_and_falls_back():
    z, y, mask = _batch(torch.float32, True)
    z = torch.where(mask, z, torch.zeros(()))  # finite padding (NaN: the general path)
    for head in (PointwiseLoss(), ListwiseLoss()):
        x = z.clone().requires_grad_(True)
        assert type(head(x, y, mask=mask).grad_fn).__name__ == "FusedGradientBackward"
        x = z.clone().requires_grad_(True)  # sample weights: the general path
        w = torch.rand(z.shape[0])
        assert "Fused" not in type(head(x, y, mask=mask, sample_weight=w).grad_fn).__name__


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 1e30])
@pytest.mark.parametrize("kind,params", [FUSED_HEADS[0], FUSED_HEADS[5]])
def test_fused_path_with_garbage_at_padding(kind, params, bad):
    # non-finite or huge padded scores: the fused path falls back (or neutralizes first)
    head = _fused_head(kind, params)
    z, y, mask = _batch(torch.float32, True)
    z = torch.where(mask, z, torch.tensor(bad))
    fast = _loss_and_grad(head, z, y, mask, "mean")
    slow = _loss_and_grad(_general(head), z, y, mask, "mean")
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=0)
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=0)
    assert torch.isfinite(fast[0]) and torch.isfinite(fast[1]).all()
    assert (fast[1][~mask] == 0).all()


@pytest.mark.parametrize("kind,params", [FUSED_HEADS[0], FUSED_HEADS[5]])
def test_fused_path_with_empty_lists_lengths_and_sentinel(kind, params):
    head = _fused_head(kind, params)
    z, y, mask = _batch(torch.float64, True)
    mask[:4] = False  # fully padded lists
    lengths = mask.sum(dim=-1)
    mask = torch.arange(33)[None, :] < lengths[:, None]
    for kw in ({"mask": mask}, {"lengths": lengths}):
        x1, x2 = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
        a, b = head(x1, y, **kw), _general(head)(x2, y, **kw)
        a.backward()
        b.backward()
        assert torch.equal(a, b) and torch.equal(x1.grad, x2.grad)
        assert (x1.grad[~mask] == 0).all()
    ys = torch.where(mask, y, torch.tensor(-1.0, dtype=y.dtype))  # the sentinel
    x1, x2 = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    a, b = head(x1, ys), _general(head)(x2, ys)
    a.backward()
    b.backward()
    assert torch.equal(a, b) and torch.equal(x1.grad, x2.grad)
    # nothing real at all: zero loss, zero gradient
    x = z.clone().requires_grad_(True)
    out = head(x, y, mask=torch.zeros_like(mask))
    out.backward()
    assert float(out.detach()) == 0.0 and (x.grad == 0).all()


@pytest.mark.parametrize("kind,params", [FUSED_HEADS[0], FUSED_HEADS[5]])
def test_fused_path_half_precision_and_no_grad(kind, params):
    head = _fused_head(kind, params)
    z, y, mask = _batch(torch.float32, True)
    zb = z.to(torch.bfloat16)
    fast = _loss_and_grad(head, zb, y, mask, "mean")
    slow = _loss_and_grad(_general(head), zb, y, mask, "mean")
    assert fast[1].dtype == torch.bfloat16
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=0)
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=0)
    with torch.no_grad():
        assert torch.equal(head(z, y, mask=mask), _general(head)(z, y, mask=mask))
    assert torch.equal(head(z, y, mask=mask), _general(head)(z, y, mask=mask))  # no graph


@pytest.mark.parametrize("scores", [1e4, -1e4, 1e20, -1e20])
@pytest.mark.parametrize("kind,params", [FUSED_HEADS[0], FUSED_HEADS[5]])
def test_fused_path_at_extreme_scores(kind, params, scores):
    head = _fused_head(kind, params)
    z, y, mask = _batch(torch.float32, True)
    z[:, ::3] = scores
    fast = _loss_and_grad(head, z, y, mask, "mean")
    slow = _loss_and_grad(_general(head), z, y, mask, "mean")
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=0)
    assert torch.isfinite(fast[1]).all()


# ---------------------------------------------------------------------------------------
# Double backward of the analytic heads (recomputed through autograd under create_graph)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize(
    "make",
    [
        lambda grad: PointwiseLoss("exp", grad=grad),
        lambda grad: PointwiseLoss("sigmoid", grad=grad),
        lambda grad: ListwiseLoss("exp", grad=grad),
        lambda grad: ListwiseLoss("sigmoid", gamma=0.5, grad=grad),
        lambda grad: __import__("selrank.torch", fromlist=["PairwiseLoss"]).PairwiseLoss(
            "sinh", grad=grad
        ),
    ],
)
def test_double_backward_of_analytic_heads_equals_autograd(make, padded, reduction):
    z, y, mask = _batch(torch.float64, padded, scale=2.0)
    z, y, mask = z[:6, :9], y[:6, :9], mask[:6, :9]
    out = []
    for grad in ("analytic", "autograd"):
        x = z.clone().requires_grad_(True)
        loss = make(grad)(x, y, mask=mask, reduction=reduction).sum()
        (g,) = torch.autograd.grad(loss, x, create_graph=True)
        (hv,) = torch.autograd.grad((g * torch.linspace(-1, 1, g.numel()).view_as(g)).sum(), x)
        out.append((g.detach(), hv))
    torch.testing.assert_close(out[0][0], out[1][0], rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(out[0][1], out[1][1], rtol=1e-9, atol=1e-12)
    assert torch.isfinite(out[0][1]).all()


def test_analytic_gradcheck_and_gradgradcheck():
    z, y, mask = _batch(torch.float64, True, scale=2.0)
    z, y, mask = z[:3, :6].contiguous(), y[:3, :6], mask[:3, :6]
    z[:, 0] = y[:, 0] + 0.3  # keep every list away from its target (smooth everywhere)
    for head in (PointwiseLoss("exp"), ListwiseLoss("exp")):

        def f(x, head=head):
            return head(x, y, mask=mask)

        x = z.clone().requires_grad_(True)
        assert torch.autograd.gradcheck(f, (x,))
        assert torch.autograd.gradgradcheck(f, (x,))


# ---------------------------------------------------------------------------------------
# Mask helpers: byte views and the lerp form of neutralize
# ---------------------------------------------------------------------------------------


def test_neutralize_lerp_equals_select():
    from selrank.torch._masking import neutralize

    g = torch.Generator().manual_seed(5)
    x = torch.randn(7, 9, generator=g, dtype=torch.float64)
    valid = torch.rand(7, 9, generator=g) < 0.6
    valid[:, 0] = True
    for v in (valid, valid.flip(-1)):  # lists starting with a real item, and not
        xs = x.clone().requires_grad_(True)
        (out,) = neutralize(v, xs)
        idx = v.to(torch.uint8).argmax(dim=-1, keepdim=True)
        expect = torch.where(v, x, x.gather(-1, idx))
        assert torch.equal(out, expect)
        out.sum().backward()
        assert torch.equal(xs.grad, v.to(x.dtype))
        # a non-finite value takes the select instead; the same result at the real items
        xi = x.clone()
        xi[~v] = float("inf")
        (out,) = neutralize(v, xi)
        assert torch.equal(out, expect)
