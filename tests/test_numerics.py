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
    assert link.optimal_constant(np.array([target], dtype=dtype)) == pytest.approx(
        target, rel=1e-12
    )
    y = np.array([target, target + 1.0], dtype=dtype)
    expected = -_log_mean_exp_reference([-float(v) for v in y], [1.0, 1.0])
    assert link.optimal_constant(y) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", [-1e4, -800.0, -40.0, 40.0, 800.0, 1e4])
def test_sigmoid_optimal_constant_at_both_saturated_ends(dtype, target):
    for params in ({}, {"alpha": 2.0, "beta": 1.0}):
        link = get_link("sigmoid", **params)
        assert link.optimal_constant(np.array([target, target], dtype=dtype)) == pytest.approx(
            target, rel=1e-12
        )


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


# ---------------------------------------------------------------------------------------
# float32 softmax-family baselines at large logits
# ---------------------------------------------------------------------------------------


def _baseline_cases():
    from selrank.losses import (
        BatchCrossEntropy,
        NWaySoftmaxCrossEntropy,
        SelfNormalization,
        SigmoidCauchySchwarz,
        SigmoidTanimoto,
        SoftmaxCauchySchwarz,
        SoftmaxCrossEntropy,
        SoftmaxTanimoto,
    )

    return [
        ("softmax_cross_entropy", SoftmaxCrossEntropy(), {}),
        ("softmax_cauchy_schwarz", SoftmaxCauchySchwarz(), {}),
        ("sigmoid_cauchy_schwarz", SigmoidCauchySchwarz(), {}),
        ("softmax_tanimoto", SoftmaxTanimoto(), {}),
        ("sigmoid_tanimoto", SigmoidTanimoto(), {}),
        ("self_normalization", SelfNormalization(), {}),
        ("batch_cross_entropy", BatchCrossEntropy(), {"group": [16, 16]}),
        ("nway_softmax_cross_entropy", NWaySoftmaxCrossEntropy(), {}),
        ("nway_softmax_cross_entropy-centered", NWaySoftmaxCrossEntropy(centered=True), {}),
    ]


@pytest.mark.parametrize("shift", [0.0, 1e4, -1e4])
@pytest.mark.parametrize("case", _baseline_cases(), ids=[c[0] for c in _baseline_cases()])
def test_float32_baselines_keep_float32_accuracy_at_large_logits(case, shift, rng):
    _, loss, kw = case
    z = rng.normal(scale=2.0, size=(32, 5)) + shift
    z32 = z.astype(np.float32)
    z64 = z32.astype(np.float64)  # the same inputs: only the arithmetic differs
    y = rng.integers(0, 5, size=32)
    assert (
        np.ptp(z32) > 5 and abs(float(np.mean(z32)) - shift) < 2
    )  # the logits are where we meant them
    v32 = loss.loss(z32, y, reduction="none", **kw)
    v64 = loss.loss(z64, y, reduction="none", **kw)
    assert v32.dtype == np.float32
    g32, h32 = loss.grad_hess(z32, y, **kw)
    g64, h64 = loss.grad_hess(z64, y, **kw)
    # before: 1e-3 relative (the rounding of a log-sum-exp of 1e4 in float32)
    np.testing.assert_allclose(v32, v64, rtol=3e-5, atol=3e-5 * float(np.max(np.abs(v64))))
    np.testing.assert_allclose(g32, g64, rtol=0, atol=3e-6 * float(np.max(np.abs(g64))))
    np.testing.assert_allclose(h32, h64, rtol=0, atol=3e-6 * float(np.max(np.abs(h64))))


@pytest.mark.parametrize("shift", [0.0, 1e4, -1e4])
def test_softmax_cross_entropy_matches_torch_cross_entropy_in_float32(shift, rng):
    torch = pytest.importorskip("torch")
    from selrank.losses import SoftmaxCrossEntropy

    z = (rng.normal(scale=2.0, size=(64, 7)) + shift).astype(np.float32)
    y = rng.integers(0, 7, size=64)
    ours = SoftmaxCrossEntropy().loss(z, y, reduction="none")
    theirs = torch.nn.functional.cross_entropy(
        torch.from_numpy(z), torch.from_numpy(y), reduction="none"
    ).numpy()
    exact = torch.nn.functional.cross_entropy(
        torch.from_numpy(z).double(), torch.from_numpy(y), reduction="none"
    ).numpy()
    err_ours = float(np.max(np.abs(ours - exact) / np.abs(exact)))
    err_torch = float(np.max(np.abs(theirs - exact) / np.abs(exact)))
    assert err_ours <= max(4 * err_torch, 1e-6), (err_ours, err_torch)


@pytest.mark.parametrize("shift", [1e4, -1e4])
def test_torch_listmle_float32_at_large_scores(shift):
    torch = pytest.importorskip("torch")
    from selrank.torch.baselines import ListMLELoss

    gen = torch.Generator().manual_seed(3)
    z32 = (torch.randn(8, 6, generator=gen) * 2 + shift).requires_grad_()
    z64 = z32.detach().double().requires_grad_()
    y = torch.randint(0, 3, (8, 6), generator=gen).float()
    y[:, -1] = -1.0  # padding
    head = ListMLELoss(ties="stable")
    v32, v64 = head(z32, y), head(z64, y.double())
    (g32,) = torch.autograd.grad(v32, z32)
    (g64,) = torch.autograd.grad(v64, z64)
    assert abs(v32.item() - v64.item()) <= 1e-6 * abs(v64.item())  # before: 3e-5
    assert float((g32.double() - g64).abs().max()) <= 1e-6 * float(g64.abs().max())  # before: 5e-4


# ---------------------------------------------------------------------------------------
# Double backward through softplus (sigmoid-link primitive) and the torch baselines
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_softplus_double_backward_is_finite_and_exact(dtype_name):
    torch = pytest.importorskip("torch")
    from selrank import _array as A

    dtype = getattr(torch, dtype_name)
    x = torch.tensor(
        [-1e30, -1e20, -1e4, -200.0, -30.0, -1.0, 0.0, 1.0, 30.0, 200.0, 1e4, 1e20],
        dtype=dtype,
        requires_grad=True,
    )
    (g,) = torch.autograd.grad(A.softplus(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert bool(torch.isfinite(g).all()) and bool(torch.isfinite(h).all())  # before: NaN at -1e4
    s = torch.sigmoid(x.detach())
    tol = 1e-6 if dtype == torch.float32 else 1e-13
    assert float((g - s).abs().max()) <= tol
    assert float((h - s * (1 - s)).abs().max()) <= tol
    # the value keeps full precision where the linear continuation starts
    xd = torch.tensor([15.0, 25.0, 39.0], dtype=torch.float64)
    np.testing.assert_allclose(A.softplus(xd).numpy(), np.logaddexp(xd.numpy(), 0.0), rtol=1e-15)


def test_softplus_gradgradcheck():
    torch = pytest.importorskip("torch")
    from selrank import _array as A

    x = torch.tensor([-60.0, -3.0, -0.5, 0.3, 2.0, 45.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: A.softplus(t), (x,))


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("scale", [1e4, 1e20, 1e30])
def test_double_backward_through_sigmoid_pointwise_loss_is_finite(dtype_name, scale):
    torch = pytest.importorskip("torch")
    from selrank.losses import Pointwise

    dtype = getattr(torch, dtype_name)
    # every target differs from its score: this checks softplus's double backward, not the
    # Taylor branch that Link.bregman uses next to the minimum
    z = torch.tensor([-scale, -1.0, 0.0, 2.0, scale], dtype=dtype, requires_grad=True)
    y = torch.tensor([0.5, 1.0, -0.5, 1.0, 0.0], dtype=dtype)
    value = Pointwise("sigmoid").loss(z, y, reduction="sum")
    (g,) = torch.autograd.grad(value, z, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), z)
    assert (
        bool(torch.isfinite(value))
        and bool(torch.isfinite(g).all())
        and bool(torch.isfinite(h).all())
    )
    s = torch.sigmoid(z.detach())
    assert float((h - s * (1 - s)).abs().max()) <= 1e-6  # the Hessian is h'(z) = σ(1 - σ)
    assert float(h[0]) == 0.0 and float(h[-1]) == 0.0  # before: NaN (logaddexp's double backward)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("scale", [1e2, 1e4, 1e20, 1e30])
def test_double_backward_through_torch_baselines_is_finite(dtype_name, scale):
    torch = pytest.importorskip("torch")
    from selrank.torch import baselines as B

    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(5)
    heads = [
        B.SoftmaxCrossEntropyLoss(),
        B.ListNetLoss(),
        B.ListMLELoss(ties="stable"),
        B.RankNetLoss(),
        B.LambdaLoss(),
        B.ApproxNDCGLoss(),
    ]
    for head in heads:
        z = (torch.randn(3, 5, generator=gen, dtype=dtype) * scale).requires_grad_()
        y = torch.randint(0, 3, (3, 5), generator=gen).to(dtype)
        y[:, -1] = -1.0
        (g,) = torch.autograd.grad(head(z, y), z, create_graph=True)
        (hv,) = torch.autograd.grad(g.sum(), z, allow_unused=True)
        assert bool(torch.isfinite(g).all()), type(head).__name__
        assert hv is None or bool(torch.isfinite(hv).all()), type(head).__name__


# ---------------------------------------------------------------------------------------
# Composite softmax (Listwise, CompositeSoftmax) near the float32 limit
# ---------------------------------------------------------------------------------------


def _softmax_losses():
    from selrank.losses import CompositeSoftmax, Listwise

    return [
        ("listwise", lambda sc: Listwise(sc), lambda a: a, {"group": [5]}),
        ("composite_softmax", lambda sc: CompositeSoftmax(sc), lambda a: a[None, :], {}),
    ]


@pytest.mark.parametrize("case", _softmax_losses(), ids=lambda c: c[0])
@pytest.mark.parametrize("scaling", ["exp", "negexp"])
@pytest.mark.parametrize("scale", [1e7, 1e10])
def test_composite_softmax_float32_is_finite_past_the_cap(case, scaling, scale):
    # q grows linearly past the cap and q² in the Hessian overflows float32 (was 0·inf = NaN)
    _, build, shape, kw = case
    loss = build(scaling)
    z = shape(np.array([scale, -scale, 0.0, scale / 2, 1.0]))
    y = shape(np.array([2.0, 0.0, 1.0, 0.0, 1.0]))
    g32, h32 = loss.grad_hess(z.astype(np.float32), y.astype(np.float32), **kw)
    g64, h64 = loss.grad_hess(z, y, **kw)
    assert g32.dtype == np.float32 and np.all(np.isfinite(g32)) and np.all(np.isfinite(h32))
    np.testing.assert_allclose(g32, g64, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h32, h64, rtol=1e-5, atol=1e-6)
    v32 = loss.loss(z.astype(np.float32), y.astype(np.float32), reduction="none", **kw)
    assert np.all(np.isfinite(v32))


@pytest.mark.parametrize("case", _softmax_losses(), ids=lambda c: c[0])
@pytest.mark.parametrize("scale", [1e20, 1e30])
def test_composite_softmax_float32_refuses_what_float32_cannot_hold(case, scale):
    _, build, shape, kw = case
    loss = build("exp")
    z = shape(np.array([scale, -scale, 0.0, 1.0, 2.0], dtype=np.float32))
    y = shape(np.array([2.0, 0.0, 1.0, 0.0, 1.0], dtype=np.float32))
    with pytest.raises(ValueError, match="overflow float32.*pass float64 scores"):
        loss.loss(z, y, **kw)  # the loss value (~1e53 at 1e20) exceeds float32
    if scale == 1e30:  # the gradient q(1e30) ~ 1e43 exceeds float32 too
        with pytest.raises(ValueError, match="overflow float32"):
            loss.grad_hess(z, y, **kw)
    g, h = loss.grad_hess(z.astype(np.float64), y.astype(np.float64), **kw)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))


@pytest.mark.parametrize("case", _softmax_losses(), ids=lambda c: c[0])
def test_composite_softmax_sinh_float32_refuses_an_unrepresentable_hessian(case):
    # sinh is even in Q: ±1e7 share the mass, and p(1 - p) q² ~ 1e40 exceeds float32
    _, build, shape, kw = case
    z = shape(np.array([1e7, -1e7, 0.0, 1.0, 2.0], dtype=np.float32))
    y = shape(np.array([2.0, 0.0, 1.0, 0.0, 1.0], dtype=np.float32))
    with pytest.raises(
        ValueError, match="overflow float32 in the composite softmax of SinhScaling"
    ):
        build("sinh").grad_hess(z, y, **kw)


def test_listwise_float32_torch_scores_widen():
    # tensors take the same float64 detour (q² of 1e20 overflows float32 in the Hessian)
    torch = pytest.importorskip("torch")
    from selrank.losses import Listwise

    z = torch.tensor([1e7, -1e7, 0.0, 5e6, 1.0], dtype=torch.float32)
    y = np.array([2.0, 0.0, 1.0, 0.0, 1.0])
    g, h = Listwise("exp").grad_hess(z, y, group=[5])
    assert (
        g.dtype == torch.float32 and bool(torch.isfinite(g).all()) and bool(torch.isfinite(h).all())
    )
    g64, h64 = Listwise("exp").grad_hess(z.double().numpy(), y, group=[5])
    np.testing.assert_allclose(g.numpy(), g64, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), h64, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Same class elsewhere: optimal constants clipped at absolute bounds or floors
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scaling", "target"),
    [
        ("exp", -45.0),
        ("exp", -300.0),
        ("exp", 45.0),
        ("sigmoid", -45.0),
        ("sigmoid", -300.0),
        ("negexp", -45.0),
        ("negexp", -300.0),
    ],
)
def test_listwise_optimal_constant_of_identical_targets_is_the_target(scaling, target):
    from selrank.losses import Listwise

    c = Listwise(scaling).optimal_constant(np.full(6, target), group=[3, 3])
    assert c == pytest.approx(target, rel=1e-7)  # before: the grid end ±30


def test_listwise_optimal_constant_far_out_solves_the_first_order_condition():
    # the loss itself cannot resolve the optimum out there (H = log 3 + e^-40): check that the
    # summed gradient of a common score vanishes, q(c) = T
    from selrank.losses import Listwise

    loss = Listwise("exp")
    y, group = np.array([-40.0, -41.0, -42.0, -40.0, -45.0]), [3, 2]
    c = loss.optimal_constant(y, group=group)
    assert -45.0 <= c <= -40.0

    def summed_gradient(v):
        g, _ = loss.grad_hess(np.full(5, v), y, group=group)
        return float(g.sum())

    scale = float(np.exp(y).sum())
    assert abs(summed_gradient(c)) <= 1e-6 * scale
    assert abs(summed_gradient(-30.0)) > 1e3 * scale  # the old answer is far off


def test_softmax_cross_entropy_constant_keeps_rare_but_present_classes():
    from selrank.losses import SoftmaxCrossEntropy

    w = np.array([1.0, 1.0, 1e-20])
    c = SoftmaxCrossEntropy().optimal_constant(np.array([0, 1, 2]), w)
    assert c[0] - c[2] == pytest.approx(math.log(1e20), rel=1e-12)  # before: floored at e^-30
    c_absent = SoftmaxCrossEntropy().optimal_constant(np.array([0, 1, 1]), n_classes=3)
    assert c_absent[2] < c_absent[0] - 29  # an absent class stays far below every present one


@pytest.mark.parametrize("name", ["exp", "negexp", "sigmoid", "sinh", "identity", "smelu", "huber"])
def test_bregman_autograd_hessian_at_the_minimum_is_the_link_slope(name):
    # max(L, 0) used to split the gradient at L == 0 and halve the Hessian at z_hat == z
    torch = pytest.importorskip("torch")
    link = get_link(name)
    z = torch.tensor([-0.7, 0.0, 0.3], dtype=torch.float64)
    z_hat = z.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(link.bregman(z_hat, z).sum(), z_hat, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), z_hat)
    np.testing.assert_allclose(g.detach().numpy(), 0.0, atol=1e-15)
    np.testing.assert_allclose(h.numpy(), link.dh(z).numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["exp", "sigmoid", "sinh"])
def test_bregman_double_backward_is_finite_at_huge_float32_differences(name):
    # the Taylor branch's d * d overflowed for the unselected entries and gave NaN
    torch = pytest.importorskip("torch")
    link = get_link(name)
    x = torch.tensor([1e20, -1e20, 0.5, 1e-4], dtype=torch.float32, requires_grad=True)
    (g,) = torch.autograd.grad(link.bregman(x, torch.zeros(4)).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert torch.isfinite(g).all() and torch.isfinite(h).all()
