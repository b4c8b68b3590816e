"""Underspecification suite: Theorem 1 per link family, Appendix F, Appendix I, sensitivity reports."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selrank.links import LINKS, CompositeSigmoid, get_link
from selrank.paper.underspecification import (
    APPENDIX_F_LINKS,
    THEOREM1_CASES,
    THEOREM1_EXCLUDED,
    appendix_f,
    appendix_i,
    blust,
    bust,
    check_theorem1,
    fit_linear,
    sensitivity_report,
    solve_bust_offset,
    stochastic_optimum,
    theorem1_table,
    two_feature_experiment,
)
from selrank.scalings import get_scaling


def _case(name):
    spec = dict(THEOREM1_CASES[name])
    link = get_link(spec.pop("link"), **spec.pop("params"))
    return link, spec


# ---------------------------------------------------------------------------------------
# Theorem 1
# ---------------------------------------------------------------------------------------


def test_every_link_family_has_a_theorem1_case():
    covered = {spec["link"] for spec in THEOREM1_CASES.values()}
    assert covered | set(THEOREM1_EXCLUDED) == set(LINKS), (
        "set `theorem1` on the new link class (its Theorem-1 cases, or why it is excluded)"
    )
    flat = []
    for name in THEOREM1_CASES:
        link, spec = _case(name)
        b = bust(
            link,
            spec["w_u"],
            d=spec["d"],
            s_min=spec.get("s_min", -3.0),
            s_max=spec.get("s_max", 3.0),
        )
        if b == 0.0:
            flat.append(name)
    assert len(flat) >= 5  # capped / flat links, where BUST must be 0


@pytest.mark.parametrize("name", sorted(THEOREM1_CASES))
def test_theorem1_theory_numeric_and_fitted_agree(name):
    link, spec = _case(name)
    res = check_theorem1(link, n=200_000, seed=7, **spec)
    assert res.n_in_interval > 1000  # the sample does cover the biased interval
    assert res.agree_limit, res.as_dict()
    assert res.agree_blust, res.as_dict()
    assert res.agree_fit, res.as_dict()
    if res.bust == 0.0:  # flat where the bias lies: the model must not move at all
        assert abs(res.numeric) < 1e-9 and abs(res.fitted) < 1e-9
    else:  # the fitted offset agrees with theory up to sampling error and the O(tau) width effect
        assert (
            abs(res.fitted - res.bust) <= res.tol_fit + abs(res.numeric - res.bust) + res.tol_limit
        )


@pytest.mark.parametrize("name", sorted(THEOREM1_CASES))
def test_theorem1_fit_on_grid_data_matches_exact_optimum_tightly(name):
    link, spec = _case(name)
    res = check_theorem1(link, n=100_000, grid=True, **spec)
    assert res.fitted_se == 0.0
    assert (
        abs(res.fitted - res.numeric)
        <= 2.0
        * 2.0
        * (spec.get("s_max", 3.0) - spec.get("s_min", -3.0))
        / (res.tau * res.n)
        * abs(res.numeric)
        + 1e-9
    )


@pytest.mark.parametrize(
    "name",
    [
        "exp (high score)",
        "sigmoid (high score)",
        "logit",
        "composite sigmoid (exp)",
        "smelu (band)",
        "negexp (low score)",
    ],
)
def test_solve_bust_offset_matches_quadrature_reference(name):
    """[12] solved with scipy's quad on h alone (no primitive H) and brentq."""
    integrate = pytest.importorskip("scipy.integrate")
    optimize = pytest.importorskip("scipy.optimize")
    link, spec = _case(name)
    lo, hi, w_u, d = spec.get("s_min", -3.0), spec.get("s_max", 3.0), spec["w_u"], spec["d"]
    tau = spec.get("tau", 0.05)

    def h(t):
        return float(link.h(np.array([t]))[0])

    rhs = integrate.quad(
        lambda w: h(w + d) - h(w), w_u - tau / 2, w_u + tau / 2, epsabs=1e-14, epsrel=1e-12
    )[0]

    def G(delta):
        return (
            integrate.quad(
                lambda w: h(w + delta) - h(w), lo, hi, epsabs=1e-14, epsrel=1e-12, limit=200
            )[0]
            - rhs
        )

    width = 0.4 * min(1.0, (hi - lo) / 6)
    ref = optimize.brentq(G, -width * 0.1, width, xtol=1e-15)
    got = solve_bust_offset(link, w_u=w_u, d=d, tau=tau, s_min=lo, s_max=hi)
    assert got == pytest.approx(ref, rel=1e-6, abs=1e-12)


def test_bust_closed_form_and_selectivity():
    exp = get_link("exp")
    w = np.array([-1.5, 0.0, 1.5])
    want = (np.exp(w + 0.5) - np.exp(w)) / (np.exp(3.0) - np.exp(-3.0))
    np.testing.assert_allclose(bust(exp, w, d=0.5, s_min=-3, s_max=3), want, rtol=1e-14)
    np.testing.assert_allclose(
        blust(exp, w, s_min=-3, s_max=3), np.exp(w) / (np.exp(3.0) - np.exp(-3.0)), rtol=1e-14
    )
    # high-score link: most sensitive on top; low-score link: at the bottom; centred sigmoid: in the middle
    assert np.all(np.diff(bust(exp, w, d=0.5, s_min=-3, s_max=3)) > 0)
    assert np.all(np.diff(bust("negexp", w, d=0.5, s_min=-3, s_max=3)) < 0)
    bl = blust("sigmoid", w, s_min=-3, s_max=3)
    assert bl[1] > bl[0] and bl[1] > bl[2]
    assert bust("identity", 0.0, d=0.6, s_min=-3, s_max=3) == pytest.approx(0.1)


def test_finite_width_error_is_first_order_in_tau():
    link = get_link("exp")
    b = float(bust(link, 1.5, d=0.5, s_min=-3, s_max=3))
    errs = [
        solve_bust_offset(link, w_u=1.5, d=0.5, tau=t, s_min=-3, s_max=3) / t - b
        for t in (0.08, 0.04, 0.02)
    ]
    assert (
        errs[0] < errs[1] < errs[2] < 0
    )  # eq. [12]'s delta^2 term pulls the offset below tau * BUST
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.05)
    assert errs[1] / errs[2] == pytest.approx(2.0, rel=0.05)


def test_theorem1_check_can_fail():
    """A model trained with the wrong loss (square loss) does not show exp's BUST."""
    link = get_link("exp")
    res = check_theorem1(link, n=200_000, seed=3)
    from selrank.datasets import make_bust_data

    data = make_bust_data(200_000, s_min=-3, s_max=3, w_u=1.5, tau=0.05, d=0.5, seed=3)
    wrong = fit_linear("identity", np.ones((data.w.size, 1)), data.y, offset=data.w).coef[0] / 0.05
    assert abs(wrong - res.numeric) > 3 * res.tol_fit
    # and a BUST computed on the wrong range disagrees with the exact optimum
    off = float(bust(link, 1.5, d=0.5, s_min=-3, s_max=2.5))
    assert abs(off - res.extrapolated) > 100 * res.tol_limit


def test_theorem1_validation():
    with pytest.raises(ValueError, match="s_min < s_max"):
        bust("exp", 0.0, d=0.5, s_min=1, s_max=0)
    with pytest.raises(ValueError, match="flat"):
        bust("smelu", 0.0, d=0.5, s_min=3, s_max=4)
    with pytest.raises(ValueError, match="inside"):
        solve_bust_offset("exp", w_u=2.99, d=0.5, tau=0.1, s_min=-3, s_max=3)
    with pytest.raises(ValueError, match="tau"):
        solve_bust_offset("exp", w_u=0.0, d=0.5, tau=0.0, s_min=-3, s_max=3)
    with pytest.raises(ValueError, match="domain"):
        bust("logit", 0.5, d=0.1, s_min=-1, s_max=0.9)


def test_theorem1_table_rows():
    pytest.importorskip("polars")
    cases = {k: THEOREM1_CASES[k] for k in ("identity", "smelu (flat below)")}
    df = theorem1_table(cases, n=20_000, grid=True)
    assert df["case"].to_list() == list(cases)
    assert df["agree"].to_list() == [True, True]
    assert df["bust"].to_list()[1] == 0.0


# ---------------------------------------------------------------------------------------
# fit_linear
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,params",
    [
        ("sigmoid", {"beta": 8.0}),
        ("exp", {"alpha": 0.5}),
        ("negexp", {}),
        ("identity", {}),
        ("sinh", {"alpha": 0.3}),
    ],
)
def test_fit_linear_matches_scipy(rng, name, params):
    optimize = pytest.importorskip("scipy.optimize")
    link = get_link(name, **params)
    X = np.column_stack([np.ones(200), rng.normal(size=200)])
    y = 0.5 + X[:, 1] + rng.normal(scale=0.5, size=200)
    fit = fit_linear(link, X, y)
    ref = optimize.minimize(
        lambda th: float(np.mean(link.bregman(X @ th, y))),
        np.zeros(2),
        jac=lambda th: X.T @ (link.h(X @ th) - link.h(y)) / y.size,
        method="BFGS",
        options={"gtol": 1e-13, "maxiter": 10_000},
    )
    assert fit.converged
    np.testing.assert_allclose(fit.coef, ref.x, rtol=1e-5, atol=1e-6)
    assert np.max(np.abs(fit.gradient)) < 1e-9


def test_fit_linear_on_flat_links():
    link = get_link("smelu", beta=0.0, c=1.0)
    y = np.array([-0.5, 0.0, 0.5])
    fit = fit_linear(link, np.ones((3, 1)), y, coef0=[10.0])  # starts where h' = 0 on every row
    assert fit.converged and abs(fit.coef[0] - 0.0) < 1e-9


def test_fit_linear_validation():
    with pytest.raises(ValueError, match="2-D"):
        fit_linear("exp", np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="shape"):
        fit_linear("exp", np.ones((3, 1)), np.ones(2))
    with pytest.raises(ValueError, match="finite"):
        fit_linear("exp", np.ones((2, 1)), np.array([0.0, np.inf]))
    with pytest.raises(ValueError, match="domain"):
        fit_linear("logit", np.ones((2, 1)), np.array([0.5, 2.0]))


# ---------------------------------------------------------------------------------------
# Appendix F
# ---------------------------------------------------------------------------------------


def test_appendix_f_data_and_selective_fits():
    res = appendix_f()
    assert list(res) == list(APPENDIX_F_LINKS)
    r = res["high score"]
    assert (
        r.X.shape == (30, 2)
        and set(r.y[r.high]) == set(range(6, 11))
        and set(r.y[~r.high]) == set(range(-10, 0))
    )
    hi, lo, mid = res["high score"], res["low score"], res["low norm"]
    # high-score link: x1 carries the prediction, high labels sit near the identity line, pairs merge
    assert hi.coef[0] > 0.95 and abs(hi.coef[1]) < 0.15
    assert hi.mae_high < 0.15 < 5.0 < hi.mae_low
    assert hi.pair_gap_high < 0.3 < 1.5 < hi.pair_gap_low
    # low-score link: the reverse
    assert lo.coef[1] > 0.95 and abs(lo.coef[0]) < 0.05
    assert lo.mae_low < 0.05 < 5.0 < lo.mae_high
    assert lo.pair_gap_low < 0.1 < 1.5 < lo.pair_gap_high
    # centred sigmoid with more low examples near its centre: low pairs merge more than high ones
    assert mid.pair_gap_low < mid.pair_gap_high
    assert mid.mae_low < mid.mae_high
    for r in res.values():
        assert r.fit.converged and np.max(np.abs(r.fit.gradient)) < 1e-9


def test_two_feature_experiment_custom_data_and_validation():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = X @ np.array([2.0, -1.0])
    r = two_feature_experiment("identity", X, y)
    np.testing.assert_allclose(r.coef, [2.0, -1.0], atol=1e-10)
    with pytest.raises(ValueError, match="both"):
        two_feature_experiment("identity", X)
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        two_feature_experiment("identity", np.ones((3, 3)), y)


# ---------------------------------------------------------------------------------------
# Appendix I
# ---------------------------------------------------------------------------------------


def test_appendix_i_estimates_match_closed_forms():
    alphas = (1.0, 5.0, 10.0, 20.0)
    r = appendix_i(alphas=alphas)
    k = np.arange(1, 19)
    np.testing.assert_allclose(r.left_x, 0.1 + 0.05 * k)
    for i, a in enumerate(alphas):
        want = np.log((np.exp(a * r.left_x) + k * np.exp(a * 0.05)) / (k + 1)) / a
        np.testing.assert_allclose(r.left_estimates[i], want, rtol=1e-10)
        for j, m in enumerate(r.right_means):
            np.testing.assert_allclose(
                r.right_estimates[i, j] - m, np.log(np.cosh(a * r.right_x)) / a, atol=1e-12
            )
    # above the mean, rising with the large score and with alpha
    assert np.all(r.left_estimates > 0.1)
    assert np.all(np.diff(r.left_estimates, axis=1) > 0)
    assert np.all(np.diff(r.left_estimates, axis=0) > 0)
    # the bias is the same for every mean and every shift beta
    np.testing.assert_allclose(r.right_estimates[:, 0], r.right_estimates[:, 1] - 1.0, atol=1e-12)
    shifted = appendix_i(alphas=alphas, beta=0.7)
    np.testing.assert_allclose(shifted.right_estimates, r.right_estimates, atol=1e-12)


def test_stochastic_optimum_is_what_a_fitted_constant_learns():
    y = np.array([0.9, 0.05, 0.05, 0.05, 0.3, 0.1])
    link = get_link("exp", alpha=10.0)
    est = stochastic_optimum(link, y, [4, 2])
    for g, rows in enumerate((slice(0, 4), slice(4, 6))):
        fit = fit_linear(link, np.ones((y[rows].size, 1)), y[rows])
        assert est[g] == pytest.approx(fit.coef[0], abs=1e-9)
    with pytest.raises(ValueError, match="add up"):
        stochastic_optimum(link, y, [4, 3])


def test_appendix_i_frame():
    pytest.importorskip("polars")
    df = appendix_i(alphas=[2.0], k_max=3, deviations=[0.0, 0.5]).to_frame()
    assert df.height == 3 + 2 * 2
    assert set(df["panel"].unique().to_list()) == {"one large score", "mean ± deviation"}


# ---------------------------------------------------------------------------------------
# sensitivity reports
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj", ["exp", "sigmoid", get_link("smelu", beta=1.0), get_link("sinh", cap=2.0), "logit"]
)
def test_sensitivity_report_numbers(obj):
    rep = sensitivity_report(obj)
    link = get_link(obj)
    np.testing.assert_allclose(rep.h, link.h(rep.z), rtol=1e-12)
    np.testing.assert_allclose(rep.dh, link.dh(rep.z), rtol=1e-12)
    assert rep.loss.shape == (3, rep.z.size)
    for s, row in zip(rep.observed, rep.loss):
        np.testing.assert_allclose(row, link.bregman(rep.z, np.full_like(rep.z, s)), rtol=1e-12)
        assert np.all(row >= 0)
        assert row[np.argmin(np.abs(rep.z - s))] <= row.max() * 1e-3 + 1e-12
    ok = np.isfinite(rep.bust)
    assert ok.sum() > 0.9 * rep.z.size * (1 - rep.d / (rep.z[-1] - rep.z[0]))
    np.testing.assert_allclose(
        rep.bust[ok], bust(link, rep.z[ok], d=rep.d, s_min=rep.z[0], s_max=rep.z[-1]), rtol=1e-12
    )
    np.testing.assert_allclose(
        rep.blust, blust(link, rep.z, s_min=rep.z[0], s_max=rep.z[-1]), rtol=1e-12
    )
    lo, hi = link.domain
    assert np.all((rep.z > lo) & (rep.z < hi)) and np.all((rep.observed > lo) & (rep.observed < hi))


def test_sensitivity_report_of_a_scaling_uses_its_composite_sigmoid():
    sc = get_scaling("exp")
    rep = sensitivity_report(sc, gamma=0.5)
    assert isinstance(rep.link, CompositeSigmoid) and rep.link.gamma == 0.5
    np.testing.assert_allclose(rep.q, np.exp(rep.z), rtol=1e-12)
    np.testing.assert_allclose(rep.h, rep.q * rep.p, rtol=1e-12)
    np.testing.assert_allclose(rep.p, 1.0 / (1.0 + np.exp(-np.exp(rep.z) / 0.5)), rtol=1e-12)
    cols = rep.as_dict()
    assert {
        "z",
        "h",
        "dh",
        "bust",
        "blust",
        "q",
        "p",
        "loss(s=-3)",
        "loss(s=0)",
        "loss(s=3)",
    } == set(cols)


def test_sensitivity_report_validation_and_frame():
    with pytest.raises(ValueError, match="increasing"):
        sensitivity_report("exp", z=[1.0, 0.0])
    with pytest.raises(ValueError, match="observed"):
        sensitivity_report("logit", observed=[-3.0, 0.5])
    pl = pytest.importorskip("polars")
    df = sensitivity_report("exp", z=np.linspace(-1, 1, 5)).to_frame()
    assert isinstance(df, pl.DataFrame) and df.height == 5
    assert math.isclose(df["h"][2], 1.0)
