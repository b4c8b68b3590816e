"""Registry-driven properties of every link (STYLE.md): H' = h, h' = dh, monotone, inverse,
Bregman loss, NumPy = torch, autograd = closed form, extreme scores, bad parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selrank.links import (
    LINKS,
    CallableLink,
    Exp,
    Identity,
    Link,
    Logit,
    Piecewise,
    Sigmoid,
    Sinh,
    SmeLU,
    get_link,
)

from ._registry import link_cases, sample_scores, smooth_points

CASES = link_cases()
IDS = [c[0] for c in CASES]
LINK_OBJS = [c[1] for c in CASES]


def test_registry_covers_the_catalogue():
    expected = {
        "identity",
        "sigmoid",
        "exp",
        "negexp",
        "sinh",
        "logit",
        "smelu",
        "huber",
        "step",
        "sign",
        "piecewise",
    }
    assert expected <= set(LINKS)
    assert len(CASES) >= 2 * len(LINKS)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_primitive_derivative_is_h(link, rng):
    z = sample_scores(link, rng)
    eps = 1e-5
    numeric = (link.H(z + eps) - link.H(z - eps)) / (2 * eps)
    mask = smooth_points(link.H, z)
    np.testing.assert_allclose(numeric[mask], link.h(z)[mask], rtol=1e-5, atol=1e-6)
    assert mask.mean() > 0.5  # the sample is not all kinks


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_dh_is_derivative_of_h(link, rng):
    z = sample_scores(link, rng)
    eps = 1e-6
    numeric = (link.h(z + eps) - link.h(z - eps)) / (2 * eps)
    mask = smooth_points(link.h, z)
    np.testing.assert_allclose(link.dh(z)[mask], numeric[mask], rtol=1e-4, atol=1e-6)
    h2, dh2 = link.h_dh(z)
    np.testing.assert_allclose(h2, link.h(z), rtol=1e-14, atol=0)
    np.testing.assert_allclose(dh2, link.dh(z), rtol=1e-14, atol=0)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_h_is_monotone_and_dh_nonnegative(link, rng):
    lo, hi = link.domain
    z = np.linspace(max(lo, -50.0) + 1e-6, min(hi, 50.0) - 1e-6, 4001)
    h = link.h(z)
    assert np.all(np.diff(h) >= -1e-12 * np.maximum(1.0, np.abs(h[1:])))
    assert np.all(link.dh(z) >= 0)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_inverse_link(link, rng):
    z = sample_scores(link, rng)
    strictly = link.dh(z) > 1e-8
    back = link.h_inv(link.h(z))
    np.testing.assert_allclose(back[strictly], z[strictly], rtol=1e-6, atol=1e-7)
    # where h is flat, the inverse is still a preimage
    np.testing.assert_allclose(link.h(back), link.h(z), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_bregman_properties(link, rng):
    z = sample_scores(link, rng)
    zh = sample_scores(link, rng)
    loss = link.bregman(zh, z)
    assert np.all(loss >= 0)
    np.testing.assert_array_equal(link.bregman(z, z), 0.0)
    # the loss is the area between h and h(z): compare with quadrature of h
    from scipy.integrate import quad

    kinked = not link.smooth or getattr(link, "capped", False)
    for a, b in list(zip(zh, z, strict=False))[:8]:
        if kinked:  # quadrature struggles with jumps and kinks: a fine trapezoid instead
            t = np.linspace(b, a, 400001)
            ref = float(np.trapezoid(link.h(t) - link.h(np.array([b]))[0], t))
            tol = 1e-4
        else:
            ref, _ = quad(
                lambda t, b=b: float(link.h(np.array([t]))[0] - link.h(np.array([b]))[0]),
                b,
                a,
                limit=200,
            )
            tol = 1e-6
        assert abs(float(link.bregman(np.array([a]), np.array([b]))[0]) - ref) <= tol * max(
            1.0, abs(ref)
        )


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_sensitivity_is_half_the_slope(link, rng):
    """L(s + δ, s) / δ² → h'(s) / 2 (Section 2)."""
    z = sample_scores(link, rng, n=16)
    z = z[smooth_points(link.h, z, eps=1e-3, rtol=1e-2) & (link.dh(z) > 1e-3)]
    for delta in (1e-3, -1e-3):
        ratio = link.bregman(z + delta, z) / delta**2
        np.testing.assert_allclose(ratio, link.dh(z) / 2, rtol=5e-3, atol=1e-9)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_numpy_equals_torch_and_autograd(link, rng):
    torch = pytest.importorskip("torch")
    z = sample_scores(link, rng)
    if isinstance(link, CallableLink) and link._derivative == "differences":
        pytest.skip("a NumPy-only callable does not accept tensors")
    t = torch.tensor(z, requires_grad=True)
    for name in ("h", "dh", "H"):
        np.testing.assert_allclose(
            getattr(link, name)(t).detach().numpy(), getattr(link, name)(z), rtol=1e-12, atol=1e-12
        )
    H = link.H(t)
    (g,) = torch.autograd.grad(H.sum(), t)
    mask = smooth_points(link.H, z)
    np.testing.assert_allclose(g.numpy()[mask], link.h(z)[mask], rtol=1e-6, atol=1e-8)
    t2 = torch.tensor(z, requires_grad=True)
    h2 = link.h(t2)
    # a piecewise-constant link (step, sign) has no graph: its derivative is 0 a.e.
    g2 = torch.autograd.grad(h2.sum(), t2)[0] if h2.requires_grad else torch.zeros_like(t2)
    mask = smooth_points(link.h, z)
    np.testing.assert_allclose(g2.numpy()[mask], link.dh(z)[mask], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_scores_stay_finite(link, dtype):
    lo, hi = link.domain
    if math.isfinite(lo):
        z = np.array([lo + 1e-3, (lo + hi) / 2, hi - 1e-3], dtype=dtype)
    else:
        z = np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=dtype)
    for name in ("h", "dh", "H"):
        out = getattr(link, name)(z)
        assert out.dtype == dtype
        assert np.all(np.isfinite(out)), (name, out)
    loss = link.bregman(z[::-1].copy(), z)
    assert np.all(np.isfinite(loss)) and np.all(loss >= 0)


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_optimal_constant_is_proper(link, rng):
    """Prop. 1: the mean loss over a sample is minimised at h⁻¹(mean h(s))."""
    s = sample_scores(link, rng, n=40)
    w = rng.uniform(0.5, 2.0, size=s.size)
    c = link.optimal_constant(s, w)
    base = np.average(link.bregman(np.full_like(s, c), s), weights=w)
    for step in (1e-2, -1e-2, 0.3, -0.3):
        cand = c + step
        lo, hi = link.domain
        if not lo < cand < hi:
            continue
        assert np.average(link.bregman(np.full_like(s, cand), s), weights=w) >= base - 1e-12


def test_closed_forms_from_the_paper():
    z = np.linspace(-3, 3, 13)
    sig = Sigmoid(alpha=2.0, beta=0.5)
    x = 2.0 * (z - 0.5)
    np.testing.assert_allclose(sig.h(z), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(sig.H(z), np.log1p(np.exp(x)) / 2.0)  # eq. [4]
    ident = Identity(alpha=3.0)
    np.testing.assert_allclose(ident.bregman(z + 1.0, z), 1.5)  # α/2 (ẑ - z)²
    ex = Exp(alpha=0.5, cap=None)
    np.testing.assert_allclose(ex.H(z), np.exp(0.5 * z) / 0.5)  # eq. [7]
    sm = SmeLU(c=1.0, beta=1.0)
    np.testing.assert_allclose(
        sm.h(np.array([-1.0, 0.0, 1.0, 2.0, 3.0])), [0, 0, 0.5, 1, 1]
    )  # eq. [14]


@pytest.mark.parametrize("mode", ["linear", "flat"])
def test_cap_continues_the_link_consistently(mode):
    link = Sinh(cap=2.0, cap_mode=mode)
    z = np.linspace(-5, 5, 2001)
    h = link.h(z)
    assert np.all(np.isfinite(h))
    # continuity of h and H at the caps, H' = h across them
    for c in (-2.0, 2.0):
        np.testing.assert_allclose(
            link.h(np.array([c - 1e-9])), link.h(np.array([c + 1e-9])), atol=1e-7
        )
    eps = 1e-5
    away = np.abs(np.abs(z) - 2.0) > 1e-3  # central differences straddling the kink are not H'
    np.testing.assert_allclose(
        ((link.H(z + eps) - link.H(z - eps)) / (2 * eps))[away], h[away], rtol=1e-6, atol=1e-6
    )
    if mode == "flat":
        assert link.h(np.array([10.0]))[0] == pytest.approx(np.sinh(2.0))
        assert link.dh(np.array([10.0]))[0] == 0.0
    else:
        assert link.dh(np.array([10.0]))[0] == pytest.approx(np.cosh(2.0))
    uncapped = Exp(cap=None)
    with np.errstate(over="ignore"):
        assert not np.isfinite(uncapped.h(np.array([1e4]))[0])
    assert np.isfinite(Exp().h(np.array([1e4]))[0])  # capped by default


def test_piecewise_matches_hand_computation():
    link = Piecewise(knots=[0.0, 1.0, 3.0], values=[0.0, 2.0, 3.0], extrapolation="linear")
    z = np.array([-1.0, 0.5, 2.0, 4.0])
    np.testing.assert_allclose(link.h(z), [-2.0, 1.0, 2.5, 3.5])
    np.testing.assert_allclose(link.dh(z), [2.0, 2.0, 0.5, 0.5])
    # H(2) = ∫_0^1 2t dt + ∫_1^2 (2 + (t-1)/2) dt = 1 + 2.25
    assert float(link.H(np.array([2.0]))[0]) == pytest.approx(3.25)
    np.testing.assert_allclose(link.h_inv(link.h(z)), z)


def test_logit_domain_and_clipping():
    link = Logit()
    with pytest.raises(ValueError, match="domain"):
        link.check_domain(np.array([0.2, 1.0]))
    out = link.h(np.array([0.0, 1.0]))
    assert np.all(np.isfinite(out))


def test_callable_link_paths_agree_with_closed_form(rng):
    torch = pytest.importorskip("torch")
    z = rng.uniform(-2, 2, size=20)
    ref = Sinh(cap=None)
    auto = CallableLink(lambda t: torch.sinh(t) if torch.is_tensor(t) else np.sinh(t))
    diff = CallableLink(np.sinh, derivative="differences")
    np.testing.assert_allclose(auto.dh(z), ref.dh(z), rtol=1e-12)
    assert auto._autodiff_ok is True
    np.testing.assert_allclose(diff.dh(z), ref.dh(z), rtol=1e-6)
    np.testing.assert_allclose(
        diff.H(z) - diff.H(np.zeros_like(z)), ref.H(z) - ref.H(np.zeros_like(z)), rtol=1e-10
    )
    np.testing.assert_allclose(diff.h_inv(ref.h(z)), z, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(diff.bregman(z + 0.5, z), ref.bregman(z + 0.5, z), rtol=1e-9)


def test_float32_is_preserved(rng):
    z = rng.normal(size=10).astype(np.float32)
    for name, factory in LINKS.items():
        link = (
            get_link(name, **factory.examples[0])
            if hasattr(factory, "examples")
            else get_link(name)
        )
        zz = np.clip(z, 0.05, 0.95) if name == "logit" else z
        assert link.h(zz).dtype == np.float32, name
        assert link.bregman(zz, zz[::-1].copy()).dtype == np.float32, name


@pytest.mark.parametrize(
    ("name", "params", "param"),
    [
        ("sigmoid", {"alpha": -1.0}, "alpha"),
        ("sigmoid", {"alpha": float("nan")}, "alpha"),
        ("exp", {"beta": float("inf")}, "beta"),
        ("exp", {"cap": -1.0}, "cap"),
        ("sinh", {"cap_mode": "soft"}, "cap_mode"),
        ("smelu", {"c": 0.0}, "c"),
        ("huber", {"delta": -1.0}, "delta"),
        ("huber", {"delta_low": 0.0}, "delta_low"),
        ("logit", {"alpha": 0.0}, "alpha"),
        ("piecewise", {"knots": [0.0, 0.0], "values": [0.0, 1.0]}, "knots"),
        ("piecewise", {"knots": [0.0, 1.0], "values": [1.0, 0.0]}, "values"),
        (
            "piecewise",
            {"knots": [0.0, 1.0], "values": [0.0, 1.0], "extrapolation": "cubic"},
            "extrapolation",
        ),
        ("identity", {"gamma": 1.0}, "gamma"),
    ],
)
def test_bad_parameters_name_the_parameter(name, params, param):
    with pytest.raises(ValueError, match=param):
        get_link(name, **params)


def test_bad_types_and_names():
    with pytest.raises(TypeError, match="alpha"):
        get_link("exp", alpha="big")
    with pytest.raises(ValueError, match="unknown link 'tanh'"):
        get_link("tanh")
    with pytest.raises(ValueError, match="cannot be applied"):
        get_link(Exp(), alpha=2.0)
    with pytest.raises(TypeError, match="callable"):
        CallableLink("not callable")
    assert isinstance(get_link(lambda z: z), Link)


def test_links_compare_and_print():
    assert get_link("exp", alpha=2.0) == Exp(alpha=2.0)
    assert get_link("exp", alpha=2.0) != Exp(alpha=1.0)
    assert "alpha=2.0" in repr(Exp(alpha=2.0))
    assert len({Exp(), Exp(), Sigmoid()}) == 2


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(CASES),
    a=st.floats(-20, 20, allow_nan=False),
    b=st.floats(-20, 20, allow_nan=False),
)
def test_property_bregman_nonnegative_and_gradient_monotone(case, a, b):
    _, link = case
    lo, hi = link.domain
    if math.isfinite(lo):  # map onto the bounded domain
        a, b = lo + (hi - lo) / (1 + math.exp(-a)), lo + (hi - lo) / (1 + math.exp(-b))
        if not (lo < a < hi and lo < b < hi):
            return
    za, zb = np.array([a]), np.array([b])
    assert link.bregman(za, zb)[0] >= 0
    # (h(ŝ) − h(s)) (ŝ − s) ≥ 0: the gradient always points back to the target
    assert (link.h(za)[0] - link.h(zb)[0]) * (a - b) >= -1e-12


def _reference_constant(link, y, w):
    """The per-cell optimum written out once more, independently of ``optimal_constants``:
    log-mean-exp closed forms where the link has one and no cap acts, else h⁻¹ of the
    weighted mean of h(y), kept inside [min y, max y]."""
    x = getattr(link, "alpha", 1.0) * (y - getattr(link, "beta", 0.0))
    uncapped = np.all((x >= getattr(link, "_lo", -np.inf)) & (x <= getattr(link, "_hi", np.inf)))

    def lme(v):
        m = np.max(v[w != 0])
        return m + np.log(np.sum(w * np.exp(v - m)) / np.sum(w))

    name = getattr(link, "name", "")
    if uncapped and name == "exp":
        return lme(x) / link.alpha + link.beta
    if uncapped and name == "negexp":
        return -lme(-x) / link.alpha + link.beta
    if uncapped and name == "sigmoid":
        ls = lambda v: -np.logaddexp(0.0, -v)  # noqa: E731
        return (lme(ls(x)) - lme(ls(-x))) / link.alpha + link.beta
    with np.errstate(all="ignore"):
        mean = np.sum(w * np.asarray(link.h(y), dtype=float)) / np.sum(w)
        lo, hi = link.range
        span = (hi - lo) if np.isfinite(lo) and np.isfinite(hi) else 1.0
        if np.isfinite(lo) and mean <= lo:
            mean = lo + 1e-12 * span
        if np.isfinite(hi) and mean >= hi:
            mean = hi - 1e-12 * span
        c = float(np.asarray(link.h_inv(np.array([mean])))[0])
    seen = y[w != 0]
    return min(max(c, seen.min()), seen.max())


@pytest.mark.parametrize("link", LINK_OBJS, ids=IDS)
def test_optimal_constants_per_cell(link, rng):
    """All cells at once = each cell alone = the formula written out independently."""
    m = 7
    s = sample_scores(link, rng, n=70)
    cells = rng.permutation(np.repeat(np.arange(m), 10))
    w = rng.uniform(0.5, 2.0, size=s.size)
    w[::9] = 0.0  # zero weights drop their rows (but never a whole cell here)
    got = link.optimal_constants(s, cells, m, w)
    assert got.shape == (m,)
    for j in range(m):
        rows = cells == j
        alone = link.optimal_constant(s[rows], w[rows])
        ref = _reference_constant(link, s[rows], w[rows])
        assert got[j] == pytest.approx(alone, rel=1e-12, abs=1e-12)
        assert got[j] == pytest.approx(ref, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("name", ["exp", "negexp", "sigmoid", "identity", "sinh"])
def test_optimal_constants_extreme_cells_and_bad_cells(name):
    link = get_link(name, cap=None) if name in ("exp", "negexp", "sinh") else get_link(name)
    big = {"exp": -1e4, "negexp": 1e4, "sigmoid": -1e4, "identity": 1e4, "sinh": 5.0}[name]
    y = np.array([big, big, 0.0, 1.0, 2.0])
    got = link.optimal_constants(y, [0, 0, 1, 1, 1], 2)
    assert got[0] == big  # identical targets: exactly themselves, even where h underflows
    assert got[1] == pytest.approx(link.optimal_constant(y[2:]), rel=1e-12)
    with pytest.raises(ValueError, match="positive number in every cell; got sum 0.0 in cell 1"):
        link.optimal_constants(y, [0, 0, 1, 1, 1], 2, [1, 1, 0, 0, 0])
    with pytest.raises(ValueError, match=r"cell 2 \(no rows\)"):
        link.optimal_constants(y, [0, 0, 1, 1, 1], 3)
    with pytest.raises(ValueError, match="cell ids must lie in"):
        link.optimal_constants(y, [0, 0, 1, 1, 5], 2)
    with pytest.raises(ValueError, match="one integer cell id per target"):
        link.optimal_constants(y, [0.0, 0, 1, 1, 1], 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_capped_sigmoid_h_inv_at_and_beyond_the_caps(dtype):
    """Issue 31: the inverse clipped ``y`` to ``1 - finfo.tiny``, which is 1.0, so ``h_inv``
    divided by zero for every value at or past ``f``'s upper end (needed beyond the caps)."""
    cap = 3.0
    link = Sigmoid(cap=cap)
    z = np.array([-cap - 2.0, -cap, -1.0, 0.0, 1.0, cap, cap + 2.0], dtype=dtype)
    y = np.array([-0.5, 0.0, 1.0, 1.5], dtype=dtype)  # 0 and 1: f's ends; ±0.5 past them
    with np.errstate(all="raise"):  # the old clip raised FloatingPointError: divide by zero
        back = link.h_inv(link.h(z))
        past = link.h_inv(y)
        plain = Sigmoid().h_inv(y)  # uncapped: clipped into (0, 1), finite at both ends
    assert back.dtype == past.dtype == dtype
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(back, z, **tol)
    # beyond the caps h continues linearly, so h_inv inverts it there too
    np.testing.assert_allclose(link.h(past), y, **tol)
    assert np.all(past[:2] < -cap) and np.all(past[2:] > cap)
    assert np.all(np.isfinite(plain)) and plain[0] == plain[1] < 0 < plain[2] == plain[3]
