"""Registry-driven checks of every loss, and the selective families against plain-Python
references: autograd = closed form, NumPy = torch, zero at the target, weights, reductions,
float32, extreme scores, group encodings, optimal constants, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selrank._groups import as_groups
from selrank.losses import (
    LOSSES,
    CompositeSoftmax,
    Decomposed,
    Listwise,
    Pairwise,
    Pointwise,
    get_loss,
)
from selrank.scalings import get_scaling

from .._registry import loss_cases

SELECTIVE = (Pointwise, Pairwise, Listwise, Decomposed, CompositeSoftmax)


CASES = loss_cases()
K = 4


def make_data(loss, rng, dtype=np.float64):
    """Targets, predictions, groups and weights that fit a loss's structure and target space."""
    sizes = np.array([3, 1, 5, 4, 2])
    n = int(sizes.sum())
    if loss.structure == "multiclass":
        if loss.target == "link":
            y = rng.integers(0, K, size=n).astype(np.float64)
        else:
            y = rng.normal(size=(n, K))
        z = rng.normal(size=(n, K))
    else:
        link = getattr(loss, "link", None)
        if loss.target == "link" and loss.structure == "pointwise":
            lo, hi = link.range
            lo = lo if math.isfinite(lo) else -3.0
            hi = hi if math.isfinite(hi) else 3.0
            y = rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo), size=n)
        elif loss.target == "link":
            raw = rng.uniform(0.1, 1.0, size=n)
            g = as_groups(sizes, n)
            y = raw / np.repeat(g.sum(raw), sizes) * loss.scaling.alpha
        else:
            y = rng.integers(0, 4, size=n).astype(np.float64)
        z = rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    return y, z.astype(dtype), sizes, w


def autograd_grad_hess(loss, z, y, group, w):
    torch = pytest.importorskip("torch")
    t = torch.tensor(z, requires_grad=True)
    val = loss.loss(t, y, group=group, sample_weight=w, reduction="sum")
    (g,) = torch.autograd.grad(val, t, create_graph=True)
    flat = g.reshape(-1)
    diag = np.empty(flat.numel())
    for i in range(flat.numel()):
        if not flat[i].requires_grad:
            diag[i] = 0.0
            continue
        (hi,) = torch.autograd.grad(flat[i], t, retain_graph=True, allow_unused=True)
        diag[i] = 0.0 if hi is None else float(hi.reshape(-1)[i])
    return g.detach().numpy(), diag.reshape(z.shape)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_grad_hess_equals_autograd(name, params, rng):
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    g, h = loss.grad_hess(z, y, group=group, sample_weight=w)
    ga, ha = autograd_grad_hess(loss, z, y, group, w)
    np.testing.assert_allclose(g, ga, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(h, ha, rtol=1e-8, atol=1e-10)
    assert g.shape == z.shape and h.shape == z.shape


@pytest.mark.parametrize(("name", "params"), CASES)
def test_numpy_equals_torch(name, params, rng):
    torch = pytest.importorskip("torch")
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    for red in ("mean", "sum") if getattr(loss, "mixed_units", False) else ("mean", "sum", "none"):
        a = loss.loss(z, y, group=group, sample_weight=w, reduction=red)
        b = loss.loss(
            torch.tensor(z),
            torch.tensor(y),
            group=group,
            sample_weight=torch.tensor(w),
            reduction=red,
        )
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-12, atol=1e-12)
    g1, h1 = loss.grad_hess(z, y, group=group)
    g2, h2 = loss.grad_hess(torch.tensor(z), y, group=group)
    np.testing.assert_allclose(g1, g2.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h1, h2.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_weights_and_reductions(name, params, rng):
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    total = loss.loss(z, y, group=group, sample_weight=w, reduction="sum")
    mean = loss.loss(z, y, group=group, sample_weight=w, reduction="mean")
    if getattr(loss, "mixed_units", False):
        with pytest.raises(ValueError, match="units"):
            loss.loss(z, y, group=group, sample_weight=w, reduction="none")
        bound = loss.bind(y, group=group, sample_weight=w)
        assert float(mean) == pytest.approx(float(total) / bound.unit_total(), rel=1e-12)
    else:
        none = loss.loss(z, y, group=group, sample_weight=w, reduction="none")
        assert float(total) == pytest.approx(float(np.sum(none)), rel=1e-12)
        bound = loss.bind(y, group=group, sample_weight=w)
        assert float(mean) == pytest.approx(float(total) / bound.unit_weight.sum(), rel=1e-12)
    # doubling every weight doubles sums and gradients, leaves the mean alone
    g1, h1 = loss.grad_hess(z, y, group=group, sample_weight=w)
    g2, h2 = loss.grad_hess(z, y, group=group, sample_weight=2 * w)
    np.testing.assert_allclose(g2, 2 * g1, rtol=1e-12)
    np.testing.assert_allclose(h2, 2 * h1, rtol=1e-12)
    assert float(
        loss.loss(z, y, group=group, sample_weight=2 * w, reduction="sum")
    ) == pytest.approx(2 * float(total), rel=1e-12)
    assert float(loss.loss(z, y, group=group, sample_weight=2 * w)) == pytest.approx(
        float(mean), rel=1e-12
    )
    # unit weights equal no weights
    ones = np.ones_like(w)
    np.testing.assert_allclose(
        loss.grad_hess(z, y, group=group, sample_weight=ones)[0],
        loss.grad_hess(z, y, group=group)[0],
        rtol=1e-14,
    )


@pytest.mark.parametrize(("name", "params"), CASES)
def test_float32_preserved_and_close(name, params, rng):
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    g64, h64 = loss.grad_hess(z, y, group=group, sample_weight=w)
    g32, h32 = loss.grad_hess(z.astype(np.float32), y, group=group, sample_weight=w)
    assert g32.dtype == np.float32 and h32.dtype == np.float32
    scale = np.max(np.abs(g64)) + 1.0
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5 * scale)
    red = "sum" if getattr(loss, "mixed_units", False) else "none"
    l32 = loss.loss(z.astype(np.float32), y, group=group, reduction=red)
    assert l32.dtype == np.float32
    np.testing.assert_allclose(
        l32, loss.loss(z, y, group=group, reduction=red), rtol=2e-3, atol=1e-4
    )


@pytest.mark.parametrize(("name", "params"), CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_scores_finite(name, params, dtype, rng):
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    extreme = np.sign(rng.normal(size=z.shape)) * 1e4
    g, h = loss.grad_hess(extreme.astype(dtype), y, group=group, sample_weight=w)
    vals = loss.loss(
        extreme.astype(dtype),
        y,
        group=group,
        sample_weight=w,
        reduction="sum" if getattr(loss, "mixed_units", False) else "none",
    )
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(np.isfinite(vals))


@pytest.mark.parametrize(
    ("name", "params"), [c for c in CASES if get_loss(c.values[0], **c.values[1]).is_matching]
)
def test_matching_losses_vanish_at_the_target(name, params, rng):
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    if loss.target == "score":
        at = y.copy()
    elif loss.structure == "pointwise":
        at = loss.link.h_inv(y)
    else:
        # constant-scaling softmax: log of the target distribution (any shift)
        if loss.structure == "multiclass":
            pytest.skip("one-hot targets are on the boundary: the optimum is at infinity")
        at = np.log(y / loss.scaling.alpha) * loss.gamma / loss.scaling.alpha
    vals = loss.loss(
        at,
        y,
        group=group,
        sample_weight=w,
        reduction="sum" if getattr(loss, "mixed_units", False) else "none",
    )
    g, _ = loss.grad_hess(at, y, group=group, sample_weight=w)
    np.testing.assert_allclose(vals, 0.0, atol=1e-12)
    np.testing.assert_allclose(g, 0.0, atol=1e-10)
    assert np.all(
        loss.loss(
            z, y, group=group, reduction="sum" if getattr(loss, "mixed_units", False) else "none"
        )
        >= 0
    )


@pytest.mark.parametrize(
    ("name", "params"), [c for c in CASES if get_loss(c.values[0], **c.values[1]).is_matching]
)
def test_optimal_constant_minimises(name, params, rng):
    loss = get_loss(name, **params)
    y, z, group, w = make_data(loss, rng)
    c = loss.optimal_constant(y, w, group=group)
    shape = z.shape

    def at(v):
        return float(
            loss.loss(
                np.broadcast_to(v, shape).copy(), y, group=group, sample_weight=w, reduction="sum"
            )
        )

    base = at(c)
    for step in (1e-3, -1e-3, 0.1, -0.1):
        if np.ndim(c) == 0:
            assert at(c + step) >= base - 1e-9 * abs(base)
        else:
            for k in range(np.size(c)):
                e = np.zeros_like(c)
                e[k] = step
                assert at(c + e) >= base - 1e-9 * max(1.0, abs(base))


# ---- group structure ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "params"),
    [c for c in CASES if get_loss(c.values[0], **c.values[1]).structure == "group"],
)
def test_group_sizes_ids_and_shuffled_rows_agree(name, params, rng):
    loss = get_loss(name, **params)
    y, z, sizes, w = make_data(loss, rng)
    ids = np.repeat(np.array([11, 3, 7, 5, 2]), sizes)
    g1, h1 = loss.grad_hess(z, y, group=sizes, sample_weight=w)
    g2, h2 = loss.grad_hess(z, y, qid=ids, sample_weight=w)
    np.testing.assert_allclose(g1, g2)
    perm = rng.permutation(z.size)
    g3, h3 = loss.grad_hess(z[perm], y[perm], qid=ids[perm], sample_weight=w[perm])
    np.testing.assert_allclose(g3, g1[perm], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h3, h1[perm], rtol=1e-12, atol=1e-14)
    per_query = loss.loss(z[perm], y[perm], qid=ids[perm], sample_weight=w[perm], reduction="sum")
    assert float(per_query) == pytest.approx(
        float(loss.loss(z, y, group=sizes, sample_weight=w, reduction="sum")), rel=1e-12
    )


def pairwise_reference(link, z, y, sizes, distinct):
    """Plain-Python double loop per query."""
    grad = np.zeros_like(z)
    hess = np.zeros_like(z)
    losses = []
    start = 0
    for m in sizes:
        total = 0.0
        for i, j in itertools.combinations(range(start, start + m), 2):
            a, b = (i, j) if y[i] >= y[j] else (j, i)
            d, dh = y[a] - y[b], z[a] - z[b]
            if distinct and d == 0:
                continue
            total += float(link.bregman(np.array([dh]), np.array([d]))[0])
            gg = float(link.h(np.array([dh]))[0] - link.h(np.array([d]))[0])
            hh = float(link.dh(np.array([dh]))[0])
            grad[a] += gg
            grad[b] -= gg
            hess[a] += hh
            hess[b] += hh
        losses.append(total)
        start += m
    return grad, hess, np.array(losses)


@pytest.mark.parametrize("params", Pairwise.examples)
def test_pairwise_against_plain_python(params, rng):
    loss = Pairwise(**params)
    sizes = np.array([4, 1, 6, 3])
    y = rng.integers(0, 3, size=sizes.sum()).astype(float)
    z = rng.normal(size=sizes.sum())
    g, h = loss.grad_hess(z, y, group=sizes)
    gr, hr, lr = pairwise_reference(loss.link, z, y, sizes, loss.pairs == "distinct")
    np.testing.assert_allclose(g, gr, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, hr, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        loss.loss(z, y, group=sizes, reduction="none"), lr, rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("params", [p for p in Listwise.examples if p.get("target") != "link"])
def test_listwise_against_plain_python(params, rng):
    loss = Listwise(**params)
    s = loss.scaling
    sizes = np.array([4, 1, 6, 3])
    y = rng.integers(0, 3, size=sizes.sum()).astype(float)
    z = rng.normal(size=sizes.sum())
    g, h = loss.grad_hess(z, y, group=sizes)
    vals = loss.loss(z, y, group=sizes, reduction="none")
    start = 0
    for qi, m in enumerate(sizes):
        sl = slice(start, start + m)
        Qz, Qy = s.Q(z[sl]) / loss.gamma, s.Q(y[sl]) / loss.gamma
        pz = np.exp(Qz - Qz.max()) / np.exp(Qz - Qz.max()).sum()
        py = np.exp(Qy - Qy.max()) / np.exp(Qy - Qy.max()).sum()
        hz, hy = s.q(z[sl]) * pz, s.q(y[sl]) * py
        np.testing.assert_allclose(g[sl], hz - hy, rtol=1e-12, atol=1e-14)  # [30]
        np.testing.assert_allclose(
            h[sl],
            pz * (s.dq(z[sl]) + (1 - pz) * s.q(z[sl]) ** 2 / loss.gamma),
            rtol=1e-10,
            atol=1e-14,
        )  # [C.6]
        Hz = loss.gamma * np.log(np.exp(Qz).sum())
        Hy = loss.gamma * np.log(np.exp(Qy).sum())
        assert vals[qi] == pytest.approx(
            Hz - Hy - np.sum((z[sl] - y[sl]) * hy), rel=1e-9, abs=1e-12
        )  # [29]
        start += m


def test_constant_scaling_listwise_is_listnet(rng):
    """Constant scaling with link-space targets: gamma * KL(target || softmax) = ListNet − entropy."""
    sizes = np.array([5, 3])
    raw = rng.uniform(0.1, 1, size=8)
    y = raw / np.repeat(as_groups(sizes, 8).sum(raw), sizes)
    z = rng.normal(size=8)
    vals = Listwise("constant", target="link").loss(z, y, group=sizes, reduction="none")
    ref = []
    for sl in (slice(0, 5), slice(5, 8)):
        logp = z[sl] - np.log(np.exp(z[sl]).sum())
        ref.append(-(y[sl] * logp).sum() + (y[sl] * np.log(y[sl])).sum())
    np.testing.assert_allclose(vals, ref, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=6),
    seed=st.integers(0, 2**31 - 1),
    scaling=st.sampled_from(["constant", "exp", "sigmoid", "smelu"]),
)
def test_property_group_gradients(sizes, seed, scaling):
    """Pairwise gradients sum to 0 in every query; so do constant-scaling listwise ones."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y = rng.integers(0, 5, size=n).astype(float)
    z = rng.normal(scale=3, size=n)
    groups = as_groups(sizes, n)
    g, h = Pairwise().grad_hess(z, y, group=sizes)
    np.testing.assert_allclose(groups.sum(g), 0.0, atol=1e-9 * (1 + np.abs(g).max()))
    assert np.all(h >= 0)
    g, h = Listwise(scaling).grad_hess(z, y, group=sizes)
    assert np.all(np.isfinite(g)) and np.all(h >= -1e-15)
    if scaling == "constant":
        np.testing.assert_allclose(groups.sum(g), 0.0, atol=1e-12)


def test_bound_loss_reuses_target_work(rng):
    torch = pytest.importorskip("torch")
    loss = Listwise("exp")
    y = rng.integers(0, 3, size=12).astype(float)
    bound = loss.bind(y, group=[5, 7])
    z1, z2 = rng.normal(size=12), rng.normal(size=12)
    g1, _ = bound.grad_hess(z1)
    g2, _ = bound.grad_hess(z2)
    np.testing.assert_allclose(g1, loss.grad_hess(z1, y, group=[5, 7])[0])
    np.testing.assert_allclose(g2, loss.grad_hess(z2, y, group=[5, 7])[0])
    gt, _ = bound.grad_hess(torch.tensor(z1, dtype=torch.float32))
    assert gt.dtype == torch.float32
    np.testing.assert_allclose(gt.numpy(), g1, rtol=1e-5, atol=1e-6)


def test_multiclass_targets_and_exact_hessian(rng):
    torch = pytest.importorskip("torch")
    z = rng.normal(size=(6, 3))
    labels = np.array([0, 1, 2, 2, 1, 0])
    ce = CompositeSoftmax("constant", target="link")
    ref = torch.nn.functional.cross_entropy(torch.tensor(z), torch.tensor(labels), reduction="sum")
    # one-hot targets have zero entropy: the loss is softmax cross entropy
    assert float(ce.loss(z, labels, reduction="sum")) == pytest.approx(float(ref), rel=1e-12)
    dec = Decomposed("sigmoid", target="link")
    bce = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(z),
        torch.nn.functional.one_hot(torch.tensor(labels), 3).double(),
        reduction="sum",
    )
    assert float(dec.loss(z, labels, reduction="sum")) == pytest.approx(float(bce), rel=1e-12)
    H = dec.hessian(z)
    np.testing.assert_allclose(np.diagonal(H, axis1=1, axis2=2), dec.grad_hess(z, labels)[1])
    assert np.count_nonzero(H - np.diagonal(H, axis1=1, axis2=2)[..., None] * np.eye(3)) == 0


def test_composite_softmax_optimal_constant_matches_class_frequencies(rng):
    labels = rng.choice(3, size=200, p=[0.6, 0.3, 0.1])
    c = CompositeSoftmax("constant", target="link").optimal_constant(labels)
    p = np.exp(c) / np.exp(c).sum()
    np.testing.assert_allclose(p, np.bincount(labels, minlength=3) / 200, rtol=1e-8)
    assert abs(c.mean()) < 1e-12


# ---- bad input ---------------------------------------------------------------------------


def test_bad_input_errors(rng):
    y = rng.integers(0, 3, size=10).astype(float)
    z = rng.normal(size=10)
    with pytest.raises(ValueError, match=r"same shape; got \(9,\) and \(10,\)"):
        Pointwise("exp").loss(z[:9], y)
    with pytest.raises(ValueError, match="finite"):
        Pointwise("exp").loss(z, np.where(np.arange(10) == 3, np.nan, y))
    with pytest.raises(ValueError, match="non-negative"):
        Pointwise("exp").loss(z, y, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match=r"shape \(10,\)"):
        Pointwise("exp").loss(z, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="add up to 9 rows but the data has 10"):
        Listwise().loss(z, y, group=[4, 5])
    with pytest.raises(ValueError, match="positive"):
        Pairwise().loss(z, y, group=[0, 10])
    with pytest.raises(ValueError, match="domain"):
        Pointwise("logit").loss(np.full(10, 0.5), np.linspace(0, 1, 10))
    with pytest.raises(ValueError, match="range"):
        Pointwise("sigmoid", target="link").loss(z, y)  # labels 2 are not probabilities
    with pytest.raises(ValueError, match="reduction"):
        Pointwise("exp").loss(z, y, reduction="avg")
    with pytest.raises(ValueError, match="target"):
        Pointwise("exp", target="prob")
    with pytest.raises(ValueError, match="target"):
        Pairwise(target="link")
    with pytest.raises(ValueError, match="scaling='constant'"):
        Listwise("exp", target="link")
    with pytest.raises(ValueError, match="sum to alpha"):
        Listwise("constant", target="link").loss(z, np.full(10, 0.5), group=[5, 5])
    with pytest.raises(ValueError, match="class indices"):
        CompositeSoftmax("constant", target="link").loss(
            rng.normal(size=(4, 3)), np.array([0, 1, 3, 1])
        )
    with pytest.raises(ValueError, match=r"\[n, K\]"):
        CompositeSoftmax("exp").loss(rng.normal(size=(4, 3)), np.array([0, 1, 2, 1]))
    with pytest.raises(ValueError, match="pairs"):
        Pairwise(pairs="some")
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("lambdamart")
    with pytest.raises(ValueError, match="gamma"):
        Listwise(gamma=0.0)
    with pytest.raises(TypeError, match="y_true"):
        Pointwise("exp").loss(z, "labels")


def test_noncovex_softmax_scaling_warns():
    with pytest.warns(UserWarning, match="non-convex Q"):
        CompositeSoftmax(get_scaling("cosh", cap=5.0), gamma=0.5)


def test_every_registered_object_clones_with_sklearn():
    """Estimators hold links, scalings and losses as parameters: clone() must rebuild them."""
    import warnings

    from sklearn.base import clone

    from selrank.links import LINKS, get_link
    from selrank.scalings import SCALINGS, get_scaling

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for registry, build in ((LINKS, get_link), (SCALINGS, get_scaling), (LOSSES, get_loss)):
            for name, factory in registry.items():
                for params in getattr(factory, "examples", [{}]):
                    obj = build(name, **params)
                    copy = clone(obj)
                    assert copy == obj and copy is not obj, (name, params)


def test_combined_sums_its_parts(rng):
    from selrank.losses import Combined

    y = rng.integers(0, 3, size=9).astype(float)
    z = rng.normal(size=9)
    parts = [Pointwise("exp"), Pairwise("sinh", cap=2.0), Listwise("exp")]
    loss = Combined(parts, weights=[1.0, 0.25, 2.0])
    g, h = loss.grad_hess(z, y, group=[4, 5])
    ref = [p.grad_hess(z, y, group=[4, 5]) for p in parts]
    np.testing.assert_allclose(g, ref[0][0] + 0.25 * ref[1][0] + 2.0 * ref[2][0])
    np.testing.assert_allclose(h, ref[0][1] + 0.25 * ref[1][1] + 2.0 * ref[2][1])
    total = sum(
        w * float(p.loss(z, y, group=[4, 5], reduction="sum"))
        for w, p in zip([1.0, 0.25, 2.0], parts, strict=True)
    )
    assert float(loss.loss(z, y, group=[4, 5], reduction="sum")) == pytest.approx(total)
    # per-query weights reach the pointwise part as per-row weights
    gq, _ = loss.grad_hess(z, y, group=[4, 5], sample_weight=[1.0, 3.0])
    gr, _ = loss.grad_hess(z, y, group=[4, 5], sample_weight=np.repeat([1.0, 3.0], [4, 5]))
    np.testing.assert_allclose(gq, gr)
    with pytest.raises(ValueError, match="non-empty"):
        Combined([])
    with pytest.raises(ValueError, match="one entry per loss"):
        Combined(parts, weights=[1.0])
    with pytest.raises(ValueError, match="mix"):
        Combined([Pointwise(), CompositeSoftmax()])
