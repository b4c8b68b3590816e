"""Scalings, composite sigmoid/softmax maths and the convexity conditions [G.2], [G.4], [G.5]."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selrank._groups import DenseLists, as_groups
from selrank.links import CompositeSigmoid, Sigmoid
from selrank.losses import CompositeSoftmax
from selrank.scalings import (
    INVALID_TRANSFORMS,
    SCALINGS,
    check_convexity,
    closed_form_convexity,
    composite_softmax,
    get_scaling,
    scaling_from_transform,
)

from ._registry import scaling_cases, smooth_points

CASES = scaling_cases()
IDS = [c[0] for c in CASES]
OBJS = [c[1] for c in CASES]


def test_registry_covers_the_catalogue():
    assert {
        "constant",
        "exp",
        "negexp",
        "sigmoid",
        "tanh",
        "sinh",
        "cosh",
        "poly",
        "smelu",
        "relu",
    } <= set(SCALINGS)


@pytest.mark.parametrize("s", OBJS, ids=IDS)
def test_q_is_derivative_of_Q_and_dq_of_q(s, rng):
    z = rng.uniform(-3, 3, size=64) / s.alpha - s.beta
    eps = 1e-6
    m = smooth_points(s.Q, z)
    np.testing.assert_allclose(
        ((s.Q(z + eps) - s.Q(z - eps)) / (2 * eps))[m], s.q(z)[m], rtol=1e-5, atol=1e-7
    )
    m = smooth_points(s.q, z)
    np.testing.assert_allclose(
        ((s.q(z + eps) - s.q(z - eps)) / (2 * eps))[m], s.dq(z)[m], rtol=1e-4, atol=1e-6
    )
    q, dq, Q = s.q_dq_Q(z)
    np.testing.assert_allclose(q, s.q(z), rtol=1e-13)
    np.testing.assert_allclose(dq, s.dq(z), rtol=1e-13)
    np.testing.assert_allclose(Q, s.Q(z), rtol=1e-13)


@pytest.mark.parametrize("s", OBJS, ids=IDS)
def test_numpy_equals_torch_and_autograd(s, rng):
    torch = pytest.importorskip("torch")
    z = rng.uniform(-3, 3, size=32)
    t = torch.tensor(z, requires_grad=True)
    np.testing.assert_allclose(s.Q(t).detach().numpy(), s.Q(z), rtol=1e-12)
    (g,) = torch.autograd.grad(s.Q(t).sum(), t)
    m = smooth_points(s.Q, z)
    np.testing.assert_allclose(g.numpy()[m], s.q(z)[m], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("s", OBJS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_scores_finite(s, dtype):
    z = np.array([-1e4, -30.0, 0.0, 30.0, 1e4], dtype=dtype)
    if s.name in ("poly",):  # polynomial growth: finite, but |x|^3 of 1e4 overflows float32
        z = np.array([-100.0, 0.0, 100.0], dtype=dtype)
    for fn in (s.q, s.dq, s.Q):
        out = fn(z)
        assert out.dtype == dtype and np.all(np.isfinite(out))


def test_shift_convention_is_the_appendix_one():
    """Scalings use x = α(z + β) (App. C.3): a positive β shifts to the left."""
    s = get_scaling("exp", alpha=2.0, beta=1.0)
    assert float(s.q(np.array([0.0]))[0]) == pytest.approx(2.0 * math.e**2)
    assert float(s.Q(np.array([-1.0]))[0]) == pytest.approx(1.0)


def test_constant_composite_sigmoid_is_scaled_sigmoid_link(rng):
    z = rng.normal(size=20)
    comp = CompositeSigmoid("constant", alpha=1.5)
    np.testing.assert_allclose(comp.h(z), 1.5 * Sigmoid(alpha=1.5).h(z), rtol=1e-14)


@pytest.mark.parametrize(
    "name", ["exp", "sigmoid", "tanh", "sinh", "constant", "negexp", "smelu", "relu"]
)
def test_composite_sigmoid_of_convex_Q_is_a_link(name, rng):
    link = CompositeSigmoid(name, gamma=0.7)
    z = np.linspace(-6, 6, 3001)
    h = link.h(z)
    assert np.all(np.diff(h) >= -1e-12)
    eps = 1e-5
    m = smooth_points(link.H, z)
    np.testing.assert_allclose(
        ((link.H(z + eps) - link.H(z - eps)) / (2 * eps))[m], h[m], rtol=1e-6, atol=1e-6
    )
    # h' = p (q' + (1 - p) q² / γ)   [23, B.1]
    s = link.scaling
    p = 1 / (1 + np.exp(-s.Q(z) / 0.7))
    np.testing.assert_allclose(
        link.dh(z), p * (s.dq(z) + (1 - p) * s.q(z) ** 2 / 0.7), rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("gamma", [0.2, 0.5, 1 / math.sqrt(2)])
def test_G4_cosh_scaling_convex_for_small_gamma(gamma):
    s = get_scaling("cosh", cap=8.0)
    assert closed_form_convexity(s, gamma) is True
    rep = check_convexity(s, gamma, domain=(-9.0, 9.0))
    assert rep.convex, rep
    CompositeSigmoid(s, gamma=gamma)  # accepted


def test_G4_cosh_scaling_refused_for_large_gamma():
    s = get_scaling("cosh", cap=8.0)
    rep = check_convexity(s, 3.0, domain=(-9.0, 9.0))
    assert not rep.convex and rep.min_value < 0
    with pytest.raises(ValueError, match=r"\[G.2\]"):
        CompositeSigmoid(s, gamma=3.0)
    link = CompositeSigmoid(s, gamma=3.0, check=False)  # the link really decreases somewhere
    z = np.linspace(-9, 9, 20001)
    assert np.any(np.diff(link.h(z)) < 0)


@pytest.mark.parametrize("d", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("gamma", [0.5, 1.0, 2.0])
def test_G5_poly_scaling(d, gamma):
    bound = max(math.sqrt(2 * gamma * d), gamma * d - 0.5)
    ok = get_scaling("poly", d=d, c=bound)
    assert closed_form_convexity(ok, gamma) is True
    assert check_convexity(ok, gamma, domain=(-6, 6)).convex
    bad = get_scaling("poly", d=d, c=0.0)
    assert closed_form_convexity(bad, gamma) is None
    assert not check_convexity(bad, gamma, domain=(-6, 6)).convex


def test_G2_check_agrees_with_link_monotonicity(rng):
    """[G.2] holds on a domain iff the composite link is non-decreasing there."""
    for _ in range(25):
        name = rng.choice(["cosh", "poly"])
        gamma = float(rng.uniform(0.2, 3.0))
        s = (
            get_scaling("cosh", cap=6.0)
            if name == "cosh"
            else get_scaling("poly", d=float(rng.integers(1, 4)), c=float(rng.uniform(0, 3)))
        )
        rep = check_convexity(s, gamma, domain=(-5, 5), num=40001)
        h = CompositeSigmoid(s, gamma=gamma, check=False).h(np.linspace(-5, 5, 40001))
        monotone = bool(np.all(np.diff(h) >= -1e-10 * np.maximum(1, np.abs(h[1:]))))
        assert rep.convex == monotone, (s, gamma, rep)


@pytest.mark.parametrize("name", sorted(INVALID_TRANSFORMS))
def test_invalid_transform_names_refused(name):
    with pytest.raises(ValueError, match="App. G.3"):
        get_scaling(name)


@pytest.mark.parametrize(
    ("f", "domain"),
    [
        (lambda z: np.abs(z) ** 2, (0.1, 10.0)),  # |x|^d
        (lambda z: np.exp(1 / (1 + np.exp(-z))), (-10.0, 10.0)),  # e^{σ(z)}
        (lambda z: np.exp(np.tanh(z)), (-10.0, 10.0)),  # e^{tanh z}
        (lambda z: np.log1p(np.exp(z)), (-10.0, 10.0)),  # softplus
        (lambda z: 1 / (1 + np.exp(-z)), (-10.0, 10.0)),  # sigmoid
        (lambda z: np.sinh(np.abs(z)) + 1e-3, (-10.0, 10.0)),  # sinh|z| (shifted to stay positive)
    ],
)
def test_invalid_score_transforms_refused(f, domain):
    with pytest.raises(ValueError, match="App. G.3"):
        scaling_from_transform(f, domain=domain)


def test_valid_score_transform_accepted(rng):
    s = scaling_from_transform(lambda z: np.exp(z**2 / 2 + z))  # Q = z²/2 + z convex
    z = rng.uniform(-3, 3, size=10)
    np.testing.assert_allclose(s.q(z), z + 1, rtol=1e-6)
    with pytest.raises(ValueError, match="positive"):
        scaling_from_transform(lambda z: z)  # f must be positive


# ---- composite softmax ----------------------------------------------------------------


def test_composite_softmax_closed_forms(rng):
    z = rng.normal(size=(5, 4))
    lists = DenseLists()
    x = 0.7 * (z + 0.3)
    p = composite_softmax(get_scaling("exp", alpha=0.7, beta=0.3), 1.0, z, lists)["p"]
    ee = np.exp(np.exp(x))
    np.testing.assert_allclose(p, ee / ee.sum(1, keepdims=True), rtol=1e-12)  # [C.12]
    p = composite_softmax(get_scaling("sigmoid", alpha=0.7, beta=0.3), 1.0, z, lists)["p"]
    np.testing.assert_allclose(
        p, (1 + np.exp(x)) / (4 + np.exp(x).sum(1, keepdims=True)), rtol=1e-12
    )  # [C.14]
    p = composite_softmax(get_scaling("tanh", alpha=0.7, beta=0.3), 1.0, z, lists)["p"]
    np.testing.assert_allclose(
        p, np.cosh(x) / np.cosh(x).sum(1, keepdims=True), rtol=1e-12
    )  # [C.17]
    out = composite_softmax(get_scaling("sinh"), 0.5, z, lists)
    np.testing.assert_allclose(out["p"].sum(1), 1.0)
    np.testing.assert_allclose(out["h"], out["q"] * out["p"])
    np.testing.assert_allclose(out["H"], 0.5 * np.log(np.exp(np.cosh(z) / 0.5).sum(1)))


def test_dense_and_ragged_lists_agree(rng):
    z = rng.normal(size=(6, 3))
    s = get_scaling("exp")
    dense = composite_softmax(s, 0.8, z, DenseLists())
    groups = as_groups([3] * 6, 18)
    ragged = composite_softmax(s, 0.8, z.reshape(-1), groups)
    np.testing.assert_allclose(ragged["p"], dense["p"].reshape(-1))
    np.testing.assert_allclose(ragged["H"], dense["H"])


@pytest.mark.parametrize("name", ["exp", "constant", "sinh", "negexp", "sigmoid", "tanh"])
def test_exact_hessian_B2_matches_autograd(name, rng):
    torch = pytest.importorskip("torch")
    loss = CompositeSoftmax(name, gamma=0.7, **({"cap": 5.0} if name == "sinh" else {}))
    z = rng.normal(size=(3, 4))
    H = loss.hessian(z)

    def Hfun(v):
        return composite_softmax(loss.scaling, 0.7, v[None, :], DenseLists())["H"][0]

    for i in range(3):
        ref = torch.autograd.functional.hessian(Hfun, torch.tensor(z[i])).numpy()
        np.testing.assert_allclose(H[i], ref, rtol=1e-9, atol=1e-12)
    _, diag = loss.grad_hess(z, rng.normal(size=(3, 4)))
    np.testing.assert_allclose(diag, np.diagonal(H, axis1=1, axis2=2), rtol=1e-12)


def test_composite_softmax_stable_at_extreme_scores():
    z = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=np.float32)
    for name in SCALINGS:
        params = {"d": 2.0, "c": 2.0} if name == "poly" else {}
        if name == "poly":
            continue  # |x|^3/3 of 1e4 exceeds float32 by design (not capped)
        out = composite_softmax(get_scaling(name, **params), 1.0, z, DenseLists())
        for k in ("p", "H", "h"):
            assert np.all(np.isfinite(out[k])), (name, k)
        np.testing.assert_allclose(out["p"].sum(1), 1.0, rtol=1e-5)


@pytest.mark.parametrize(
    ("name", "params", "param"),
    [
        ("exp", {"alpha": 0.0}, "alpha"),
        ("sigmoid", {"beta": float("nan")}, "beta"),
        ("smelu", {"c": -1.0}, "c"),
        ("poly", {"d": 0.5}, "d"),
        ("sinh", {"cap": 0.0}, "cap"),
        ("tanh", {"gamma": 1.0}, "gamma"),
    ],
)
def test_bad_parameters(name, params, param):
    with pytest.raises(ValueError, match=param):
        get_scaling(name, **params)


def test_bad_gamma_and_names():
    with pytest.raises(ValueError, match="gamma"):
        CompositeSigmoid("exp", gamma=-1.0)
    with pytest.raises(ValueError, match="unknown scaling"):
        get_scaling("gauss")
    with pytest.raises(ValueError, match="domain"):
        check_convexity("exp", 1.0, domain=(1.0, -1.0))
