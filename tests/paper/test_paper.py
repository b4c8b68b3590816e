"""The paper's own statements, checked numerically (Shamir & Warmuth, docs/math.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq, minimize_scalar

from selrank.links import CompositeSigmoid, Exp, Identity, NegExp, Sigmoid, Sinh, SmeLU, get_link
from selrank.losses import Pointwise
from selrank.scalings import get_scaling

STRICT_LINKS = [
    Identity(),
    Sigmoid(),
    Sigmoid(beta=1.0),
    Exp(alpha=0.7),
    NegExp(),
    Sinh(alpha=0.5),
    get_link("logit"),
    CompositeSigmoid("exp", gamma=1.0),
    CompositeSigmoid("sigmoid", gamma=0.5),
]


@pytest.mark.parametrize("link", STRICT_LINKS, ids=repr)
def test_properness_prop1(link, rng):
    """The expected loss over a random S is minimised at h⁻¹(E h(S)), found independently."""
    lo, hi = link.domain
    if np.isfinite(lo):
        s = rng.beta(2, 5, size=300) * 0.98 + 0.01
    else:
        s = rng.normal(loc=0.5, scale=1.5, size=300)
    loss = Pointwise(link)

    def risk(c):
        return float(loss.loss(np.full_like(s, c), s))

    bounds = (0.001, 0.999) if np.isfinite(lo) else (-10.0, 10.0)
    numeric = minimize_scalar(risk, bounds=bounds, method="bounded", options={"xatol": 1e-10}).x
    closed = loss.optimal_constant(s)
    assert closed == pytest.approx(numeric, abs=1e-6)
    assert closed == pytest.approx(
        float(link.h_inv(np.array([link.h(s).mean()]))[0]), rel=1e-12, abs=1e-12
    )


def test_cross_entropy_equalities_E2(rng):
    """Sigmoid link on labels in [0, 1]: gradient = logistic CE's; loss = CE − label entropy.
    Identity link: gradient = squared error's."""
    torch = pytest.importorskip("torch")
    z = rng.normal(scale=3, size=50)
    y = np.concatenate([rng.uniform(0, 1, size=40), np.zeros(5), np.ones(5)])
    t = torch.tensor(z, requires_grad=True)
    ce = torch.nn.functional.binary_cross_entropy_with_logits(t, torch.tensor(y), reduction="sum")
    (g_ce,) = torch.autograd.grad(ce, t)
    loss = Pointwise(Sigmoid(), target="link")
    g, h = loss.grad_hess(z, y)
    np.testing.assert_allclose(g, g_ce.numpy(), rtol=1e-12, atol=1e-14)
    entropy = -(
        np.where(y > 0, y * np.log(np.where(y > 0, y, 1)), 0)
        + np.where(y < 1, (1 - y) * np.log(np.where(y < 1, 1 - y, 1)), 0)
    )
    per_row_ce = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(z), torch.tensor(y), reduction="none"
    ).numpy()
    np.testing.assert_allclose(
        loss.loss(z, y, reduction="none"), per_row_ce - entropy, rtol=1e-9, atol=1e-12
    )
    # identity link = squared error: gradient ŝ - s
    g_sq, h_sq = Pointwise(Identity()).grad_hess(z, y)
    np.testing.assert_allclose(g_sq, z - y)
    np.testing.assert_allclose(h_sq, 1.0)


def test_composite_cross_entropy_is_not_the_matching_loss_E4(rng):
    """With a nonlinear Q, CE's gradient q(ŝ)[p(ŝ) − p(s)] [E.4] differs from h(ŝ) − h(s)."""
    link = CompositeSigmoid("exp", gamma=1.0)
    s = rng.normal(size=30)
    shat = rng.normal(size=30)
    ce_grad = link.scaling.q(shat) * (link.p(shat) - link.p(s))
    matching = link.h(shat) - link.h(s)
    assert np.max(np.abs(ce_grad - matching)) > 0.1
    # ... and they agree for the constant scaling (the sigmoid link)
    lin = CompositeSigmoid("constant")
    np.testing.assert_allclose(
        lin.scaling.q(shat) * (lin.p(shat) - lin.p(s)), lin.h(shat) - lin.h(s), rtol=1e-12
    )


def _solve_bust_offset(link, wu, d, tau, Sm, SM):
    """Solve ∫_S [h(w + δ) − h(w)] dw = τ [h(w_u + d) − h(w_u)] for δ  [12–13]."""
    rhs = tau * float(link.h(np.array([wu + d]))[0] - link.h(np.array([wu]))[0])

    def f(delta):
        val, _ = quad(
            lambda w: float(link.h(np.array([w + delta]))[0] - link.h(np.array([w]))[0]),
            Sm,
            SM,
            limit=200,
            epsabs=1e-13,
            epsrel=1e-12,
        )
        return val - rhs

    return brentq(f, -1.0, 1.0, xtol=1e-15)


@pytest.mark.parametrize(
    "link",
    [Identity(), Sigmoid(), Sigmoid(beta=2.0), Exp(), NegExp(), Sinh(), SmeLU(c=1.0, beta=1.0)],
    ids=repr,
)
@pytest.mark.parametrize("wu", [-2.0, 0.5, 2.5])
def test_theorem1_bust_and_blust(link, wu):
    """Δ_BUST = [h(w_u + d) − h(w_u)] / [h(S_M) − h(S_m)] matches the solved optimum (τ → 0);
    Δ_BLUST = h'(w_u) / [h(S_M) − h(S_m)] matches it for d → 0."""
    Sm, SM, d, tau = -4.0, 4.0, 0.5, 1e-4
    span = float(link.h(np.array([SM]))[0] - link.h(np.array([Sm]))[0])
    bust = float(link.h(np.array([wu + d]))[0] - link.h(np.array([wu]))[0]) / span
    delta = _solve_bust_offset(link, wu, d, tau, Sm, SM)
    assert delta / tau == pytest.approx(bust, rel=1e-3, abs=1e-9)
    dd = 1e-4
    blust = float(link.dh(np.array([wu]))[0]) / span
    delta_small = _solve_bust_offset(link, wu, dd, tau, Sm, SM)
    assert delta_small / (tau * dd) == pytest.approx(blust, rel=2e-3, abs=1e-7)


def test_bust_orders_sensitivity_regions():
    """High-score links react more to a bias at high scores, low-score links at low ones."""
    Sm, SM, d = -4.0, 4.0, 0.5

    def bust(link, wu):
        span = float(link.h(np.array([SM]))[0] - link.h(np.array([Sm]))[0])
        return float(link.h(np.array([wu + d]))[0] - link.h(np.array([wu]))[0]) / span

    assert bust(Exp(), 3.0) > bust(Exp(), -3.0) * 50
    assert bust(NegExp(), -3.0) > bust(NegExp(), 3.0) * 50
    assert bust(Sigmoid(), 0.0) > bust(Sigmoid(), 3.0) * 5  # low-norm sensitivity
    assert bust(Identity(), 3.0) == pytest.approx(bust(Identity(), -3.0))  # uniform


def test_stochastic_label_estimate_leans_to_high_scores_appI():
    """App. I: one large probability among many 0.05s with mean 0.1 — an exp link's estimate
    exceeds the mean and grows with the scale α."""
    estimates = []
    for alpha in (1.0, 5.0, 10.0):
        big = 0.5
        k = int(round((big - 0.1) / (0.1 - 0.05)))  # number of 0.05s keeping the mean at 0.1
        s = np.array([big] + [0.05] * k)
        assert s.mean() == pytest.approx(0.1)
        estimates.append(Pointwise(Exp(alpha=alpha)).optimal_constant(s))
    assert all(e > 0.1 for e in estimates)
    assert estimates[0] < estimates[1] < estimates[2]


def test_scaling_sensitivity_types_multiclass():
    """Composite softmax with q = exp keeps high-score sensitivity (Table 1): the diagonal
    Hessian of a top class grows with its score, unlike the standard softmax's."""
    from selrank.losses import CompositeSoftmax

    exp_loss, std = CompositeSoftmax("exp"), CompositeSoftmax(get_scaling("constant"))
    z_lo = np.array([[0.5, 0.0, -0.5]])
    z_hi = z_lo + np.array([[2.0, 0.0, 0.0]])
    y = np.zeros((1, 3))
    h_exp = [exp_loss.grad_hess(z, y)[1][0, 0] for z in (z_lo, z_hi)]
    h_std = [std.grad_hess(z, y)[1][0, 0] for z in (z_lo, z_hi)]
    assert h_exp[1] > h_exp[0]
    assert h_std[1] < h_std[0]
