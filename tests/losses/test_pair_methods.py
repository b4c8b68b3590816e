"""Pair sampling of the pairwise loss (``pair_method="topk" | "mean"``).

The sampled objective must equal the full-pair loss and gradient restricted to the pairs it
selects, with the selection re-derived here by plain Python (the top-k ranking by sorting,
the "mean" draws by a Python-integer transcription of splitmix64); the numba kernel must
equal the generic path; draws must be reproducible from the seed; bad options are refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from selrank import fast as K
from selrank.links import Exp, Identity, Sigmoid, Sinh, SmeLU
from selrank.losses import Pairwise

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
KERNEL_LINKS = [
    Identity(),
    Identity(alpha=2.0, beta=0.5),
    Exp(alpha=0.5, beta=1.0),
    Exp(cap=1.0),
    Sinh(cap=3.0),
    Sinh(cap=(-0.5, 2.0)),
    Sinh(cap=1.5, cap_mode="flat"),
    Sigmoid(alpha=3.0, beta=-0.5),
]


def data(rng, n_groups=20, max_size=14, continuous=False):
    sizes = rng.integers(1, max_size, size=n_groups)
    sizes[2] = 1  # a query without pairs
    sizes[5] = 3
    n = int(sizes.sum())
    y = rng.normal(size=n) if continuous else rng.integers(0, 4, size=n).astype(float)
    y[-sizes[-1] :] = 1.0  # a query whose targets are all equal (no distinct pairs)
    z = rng.normal(size=n)
    z[:4] = 0.5  # ties in the scores
    return y, z, sizes


# -- plain-Python references ---------------------------------------------------------------------
def py_mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def py_key(seed: int, draw: int) -> int:
    return py_mix(py_mix(seed) ^ py_mix((draw + GOLDEN) & MASK))


def queries(sizes):
    start = 0
    for m in sizes:
        yield list(range(start, start + int(m)))
        start += int(m)


def orient(i, j, y):
    """``(a, b)`` with ``y_a >= y_b``; ties: the earlier row first."""
    return (i, j) if (y[i] > y[j] or (y[i] == y[j] and i < j)) else (j, i)


def py_topk(z, y, sizes, k, distinct):
    out = []
    for rows in queries(sizes):
        ranked = sorted(rows, key=lambda r: (-z[r], r))
        for r in range(min(k, len(rows) - 1)):
            for s in range(r + 1, len(rows)):
                a, b = orient(ranked[r], ranked[s], y)
                if not (distinct and y[a] == y[b]):
                    out.append((a, b))
    return out


def py_mean(y, sizes, m, seed, draw, distinct):
    key = py_key(seed, draw)
    out = []
    for rows in queries(sizes):
        by_target = sorted(rows, key=lambda r: (y[r], r))
        for row in rows:
            cands = (
                [r for r in by_target if y[r] != y[row]]
                if distinct
                else [r for r in rows if r != row]
            )
            for t in range(m):
                if not cands:
                    continue
                u = py_mix((key + ((row * m + t) * GOLDEN)) & MASK)
                a, b = orient(row, cands[u % len(cands)], y)
                out.append((a, b))
    return out


def py_objective(link, z, y, sizes, pairs, qweight=None):
    """Loss per query, gradient and Hessian of the pairwise loss over the listed pairs."""
    n = len(y)
    grad, hess = np.zeros(n), np.zeros(n)
    q_of = np.repeat(np.arange(len(sizes)), sizes)
    loss = np.zeros(len(sizes))
    for a, b in pairs:
        q = q_of[a]
        w = 1.0 if qweight is None else qweight[q]
        d, dhat = np.array([y[a] - y[b]]), np.array([z[a] - z[b]])
        loss[q] += w * float(link.bregman(dhat, d)[0])
        g = w * float(link.h(dhat)[0] - link.h(d)[0])
        h = w * float(link.dh(dhat)[0])
        grad[a] += g
        grad[b] -= g
        hess[a] += h
        hess[b] += h
    return loss, grad, hess


def as_set(a, b):
    return sorted(zip(np.asarray(a).tolist(), np.asarray(b).tolist()))


def generic(bound, z):
    """The generic (vectorised NumPy) path of the same bound loss."""
    kernel, bound._kernel = bound._kernel, None
    try:
        return bound.grad_hess(z)
    finally:
        bound._kernel = kernel


# -- selection and objective against the references ----------------------------------------------
@pytest.mark.parametrize("pairs", ["all", "distinct"])
@pytest.mark.parametrize("k", [1, 3, 50])
def test_topk_equals_full_loss_on_its_pairs(pairs, k, rng):
    y, z, sizes = data(rng)
    link = Sinh(cap=3.0)
    loss = Pairwise(link, pairs=pairs, pair_method="topk", num_pair_per_sample=k)
    qw = rng.uniform(0.5, 2.0, size=sizes.size)
    bound = loss.bind(y, group=sizes, sample_weight=qw)
    ref_pairs = py_topk(z, y, sizes, k, pairs == "distinct")
    assert as_set(*bound.selected_pairs(z)) == sorted(ref_pairs)
    ref_loss, ref_g, ref_h = py_objective(link, z, y, sizes, ref_pairs, qw)
    g, h = bound.grad_hess(z)
    np.testing.assert_allclose(g, ref_g, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(h, ref_h, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bound.loss(z, reduction="none"), ref_loss, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pairs", ["all", "distinct"])
@pytest.mark.parametrize("m", [1, 4])
def test_mean_equals_full_loss_on_its_draws(pairs, m, rng):
    y, z, sizes = data(rng)
    link = Exp(alpha=0.5)
    bound = Pairwise(link, pairs=pairs, pair_method="mean", num_pair_per_sample=m, seed=7).bind(
        y, group=sizes
    )
    for draw in range(3):
        assert bound.draw == draw
        ref_pairs = py_mean(y, sizes, m, 7, draw, pairs == "distinct")
        assert as_set(*bound.selected_pairs(z)) == sorted(ref_pairs)
        ref_loss, ref_g, ref_h = py_objective(link, z, y, sizes, ref_pairs)
        np.testing.assert_allclose(
            bound.loss(z, reduction="none"), ref_loss, rtol=1e-10, atol=1e-12
        )
        g, h = bound.grad_hess(z)  # advances the draw
        np.testing.assert_allclose(g, ref_g, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(h, ref_h, rtol=1e-10, atol=1e-10)


def test_unordered_query_ids_use_grouped_rows(rng):
    """Query ids in any order (generic path): the selection is made within each query."""
    y, z, sizes = data(rng, n_groups=8)
    qid = np.repeat(np.arange(sizes.size), sizes)
    perm = rng.permutation(y.size)
    link = Identity()
    for method in ("topk", "mean"):
        loss = Pairwise(link, pair_method=method, num_pair_per_sample=2)
        g0, h0 = loss.bind(y, group=sizes).grad_hess(z)
        bound = loss.bind(y[perm], qid=qid[perm])
        assert bound._kernel is None and bound.groups.perm is not None
        g1, h1 = bound.grad_hess(z[perm])
        # the same queries, rows in another order: the grouped order of each query is the
        # caller's order of its rows, so only "topk" (rank-based) is order-free here
        if method == "topk":
            np.testing.assert_allclose(g1, g0[perm], atol=1e-12)
            np.testing.assert_allclose(h1, h0[perm], atol=1e-12)
        a, b = bound.selected_pairs(z[perm])
        np.testing.assert_array_equal(qid[perm][a], qid[perm][b])


def test_topk_with_large_k_is_all_pairs(rng):
    y, z, sizes = data(rng)
    for link in (Sinh(cap=3.0), Exp(beta=0.5), SmeLU()):
        full = Pairwise(link, pairs="distinct").bind(y, group=sizes)
        top = Pairwise(
            link, pairs="distinct", pair_method="topk", num_pair_per_sample=int(sizes.max())
        ).bind(y, group=sizes)
        g0, h0 = full.grad_hess(z)
        g1, h1 = top.grad_hess(z)
        np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(h1, h0, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(
            top.loss(z, reduction="none"), full.loss(z, reduction="none"), atol=1e-10
        )


def test_topk_depends_on_the_current_ranking(rng):
    y, z, sizes = data(rng)
    bound = Pairwise("identity", pair_method="topk", num_pair_per_sample=2).bind(y, group=sizes)
    g1, _ = bound.grad_hess(z)
    g2, _ = bound.grad_hess(-z)
    assert as_set(*bound.selected_pairs(z)) != as_set(*bound.selected_pairs(-z))
    assert not np.allclose(g1, -g2)


def test_mean_draws_are_uniform_over_candidates(rng):
    """Every row draws m partners; never itself (or an equal target for 'distinct'); partners
    are uniform over the candidates (chi-square over many draws)."""
    sizes = np.array([6])
    y = np.array([0.0, 0.0, 1.0, 2.0, 2.0, 3.0])
    for pairs in ("all", "distinct"):
        bound = Pairwise("identity", pairs=pairs, pair_method="mean", num_pair_per_sample=5).bind(
            y, group=sizes
        )
        counts = np.zeros((6, 6))
        for _ in range(400):
            a, b = bound.selected_pairs(np.zeros(6))
            assert a.size == 6 * 5
            np.add.at(counts, (a, b), 1)
            np.add.at(counts, (b, a), 1)
            bound.draw += 1
        assert np.all(np.diag(counts) == 0)
        if pairs == "distinct":
            same = y[:, None] == y[None, :]
            assert np.all(counts[same] == 0)
            cand = (~same).sum(axis=1)
        else:
            cand = np.full(6, 5)
        # expected count of (i, j) from i's draws: 400 * 5 / cand_i, plus j's draws of i
        allowed = counts > 0
        expected = np.where(allowed, 2000.0 / cand[:, None] + 2000.0 / cand[None, :], 0.0)
        chi2 = float(np.sum((counts[allowed] - expected[allowed]) ** 2 / expected[allowed]))
        dof = int(allowed.sum()) // 2
        assert chi2 / 2 < dof + 5 * np.sqrt(2 * dof), (pairs, chi2, dof)


# -- numba kernel == generic path -------------------------------------------------------------------
needs_numba = pytest.mark.skipif(not K.available(), reason="numba is not installed")


@needs_numba
@pytest.mark.parametrize("link", KERNEL_LINKS, ids=repr)
@pytest.mark.parametrize("method", ["topk", "mean"])
@pytest.mark.parametrize("pairs", ["all", "distinct"])
def test_kernel_equals_generic(link, method, pairs, rng):
    for continuous in (False, True):
        y, z, sizes = data(rng, continuous=continuous)
        w = rng.uniform(0.5, 2.0, size=y.size)
        for weight in (None, w):
            loss = Pairwise(link, pairs=pairs, pair_method=method, num_pair_per_sample=3, seed=11)
            b1, b2 = (
                loss.bind(y, group=sizes, sample_weight=weight),
                loss.bind(y, group=sizes, sample_weight=weight),
            )
            assert b1._kernel is not None
            for _ in range(2):  # two draws
                g1, h1 = b1.grad_hess(z)
                g2, h2 = generic(b2, z)
                scale = max(1.0, float(np.max(np.abs(h2))), float(np.max(np.abs(g2))))
                np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-12 * scale)
                np.testing.assert_allclose(h1, h2, rtol=1e-9, atol=1e-12 * scale)


@needs_numba
@pytest.mark.parametrize("method", ["topk", "mean"])
def test_kernel_extreme_scores(method, rng):
    """Queries whose score range overflows the factorised exponentials (one exp per pair)."""
    y, z, sizes = data(rng)
    z = z.copy()
    z[: sizes[0]] *= 400.0
    for link in (Sinh(cap=3.0), Exp(), Sigmoid()):
        loss = Pairwise(link, pair_method=method, num_pair_per_sample=4)
        b1, b2 = loss.bind(y, group=sizes), loss.bind(y, group=sizes)
        with np.errstate(over="ignore"):
            g1, h1 = b1.grad_hess(z)
            g2, h2 = generic(b2, z)
        ok = np.isfinite(g2) & np.isfinite(h2)
        np.testing.assert_array_equal(np.isfinite(g1), np.isfinite(g2))
        np.testing.assert_allclose(g1[ok], g2[ok], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(h1[ok], h2[ok], rtol=1e-9, atol=1e-9)


# -- reproducibility ---------------------------------------------------------------------------------
def test_seed_reproducibility(rng):
    y, z, sizes = data(rng)

    def run(seed, kernel=True):
        b = Pairwise(pair_method="mean", num_pair_per_sample=2, seed=seed).bind(y, group=sizes)
        if not kernel:
            b._kernel = None
        return [b.grad_hess(z)[0] for _ in range(3)]

    a, b, c = run(3), run(3), run(4)
    for x, x2 in zip(a, b):
        np.testing.assert_array_equal(x, x2)
    assert not np.allclose(a[0], c[0])
    assert not np.allclose(a[0], a[1])  # each call draws afresh
    for x, x2 in zip(a, run(3, kernel=False)):
        np.testing.assert_allclose(x, x2, rtol=1e-9, atol=1e-12)


# -- options ----------------------------------------------------------------------------------------
def test_all_is_unchanged(rng):
    y, z, sizes = data(rng)
    for link in (Sinh(cap=3.0), Exp(beta=0.5)):
        g0, h0 = Pairwise(link).grad_hess(z, y, group=sizes)
        b = Pairwise(link, pair_method="all").bind(y, group=sizes)
        g1, h1 = b.grad_hess(z)
        np.testing.assert_array_equal(g0, g1)
        np.testing.assert_array_equal(h0, h1)
        pairs = [orient(i, j, y) for rows in queries(sizes) for i in rows for j in rows if i < j]
        assert as_set(*b.selected_pairs(z)) == sorted(pairs)
        _, ref_g, _ = py_objective(link, z, y, sizes, pairs)
        np.testing.assert_allclose(g1, ref_g, rtol=1e-9, atol=1e-10)


def test_defaults_and_params():
    assert Pairwise(pair_method="topk").num_pair_per_sample == 32
    assert Pairwise(pair_method="mean").num_pair_per_sample == 1
    assert Pairwise(pair_method="topk") == Pairwise(pair_method="topk", num_pair_per_sample=32)
    assert Pairwise(pair_method="mean", seed=1) != Pairwise(pair_method="mean", seed=2)
    p = Pairwise(pair_method="mean", num_pair_per_sample=3).get_params()
    assert p["pair_method"] == "mean" and p["num_pair_per_sample"] == 3


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"pair_method": "random"}, ValueError, "`pair_method` of Pairwise must be one of"),
        ({"pair_method": "topk", "num_pair_per_sample": 0}, ValueError, "positive integer; got 0"),
        (
            {"pair_method": "mean", "num_pair_per_sample": -2},
            ValueError,
            "positive integer; got -2",
        ),
        (
            {"pair_method": "mean", "num_pair_per_sample": 2.5},
            TypeError,
            "positive integer; got float",
        ),
        (
            {"pair_method": "topk", "num_pair_per_sample": True},
            TypeError,
            "positive integer; got bool",
        ),
        (
            {"pair_method": "all", "num_pair_per_sample": 5},
            ValueError,
            "only with pair_method 'topk' or 'mean'",
        ),
        ({"pair_method": "mean", "seed": -1}, ValueError, "`seed` of Pairwise must be >= 0"),
        ({"pair_method": "mean", "seed": "1"}, TypeError, "`seed` of Pairwise must be an integer"),
    ],
)
def test_bad_values_refused(kwargs, err, match):
    with pytest.raises(err, match=match):
        Pairwise(**kwargs)


# -- other namespaces and the GBDT objectives --------------------------------------------------------
@pytest.mark.parametrize("method", ["topk", "mean"])
def test_torch_equals_numpy_and_autograd(method, rng):
    torch = pytest.importorskip("torch")
    y, z, sizes = data(rng)
    loss = Pairwise(Sinh(cap=3.0), pair_method=method, num_pair_per_sample=3)
    g0, h0 = loss.bind(y, group=sizes).grad_hess(z)
    bt = loss.bind(torch.as_tensor(y), group=sizes)
    zt = torch.tensor(z, requires_grad=True)
    bt.loss(zt, reduction="sum").backward()  # draw 0, as the NumPy call above
    g1, h1 = bt.grad_hess(zt.detach())
    np.testing.assert_allclose(g1.numpy(), g0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h1.numpy(), h0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(zt.grad.numpy(), g0, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["topk", "mean"])
def test_gbdt_objective_passes_pair_method(method, rng):
    from selrank.gbdt import GBDTObjective

    y, z, sizes = data(rng)
    obj = GBDTObjective(
        "pairwise", pair_method=method, num_pair_per_sample=3, seed=5, hessian="exact"
    )
    assert obj.loss == Pairwise(pair_method=method, num_pair_per_sample=3, seed=5)
    g, h = obj.grad_hess(z, y, group=sizes)
    # the binding's first evaluation (the reference Hessian at the intercept) used draw 0
    bound = Pairwise(pair_method=method, num_pair_per_sample=3, seed=5).bind(y, group=sizes)
    bound.grad_hess(np.zeros_like(z))
    g0, h0 = bound.grad_hess(z)
    np.testing.assert_allclose(g, g0, rtol=1e-12)
    np.testing.assert_allclose(h, h0, rtol=1e-12)


def test_lightgbm_trains_with_topk(rng):
    lgb = pytest.importorskip("lightgbm")
    from selrank.gbdt import lightgbm_objective

    X = rng.normal(size=(600, 4))
    y = np.clip(np.round(X[:, 0] + 0.3 * rng.normal(size=600)) + 1, 0, 3)
    obj = lightgbm_objective("pairwise", pair_method="topk", num_pair_per_sample=10)
    train = obj.set_init_score(lgb.Dataset(X, y, group=[200, 200, 200]))
    booster = lgb.train(
        {"objective": obj, "verbose": -1, "num_threads": 1}, train, num_boost_round=5
    )
    pred = booster.predict(X)
    assert np.corrcoef(pred, X[:, 0])[0, 1] > 0.5


# -- the kernel's loss values (the torch head's forward) -----------------------------------------------
@needs_numba
@pytest.mark.parametrize(
    "link", KERNEL_LINKS + [Sinh(cap=2.0), Exp(beta=-3.0, cap=0.5, cap_mode="flat")], ids=repr
)
@pytest.mark.parametrize("method", ["all", "topk", "mean"])
@pytest.mark.parametrize("pairs", ["all", "distinct"])
def test_kernel_values_equal_core_loss(link, method, pairs, rng):
    y, z, sizes = data(rng, continuous=method == "topk")
    z = 2.0 * z  # differences beyond the smaller caps
    kw = {} if method == "all" else {"num_pair_per_sample": 3}
    bound = Pairwise(link, pairs=pairs, pair_method=method, seed=2, **kw).bind(y, group=sizes)
    offsets = bound.groups.offsets
    g, h, v = K.pairwise_sampled(
        z,
        y,
        offsets,
        None,
        pairs == "distinct",
        K.kernel_link(link),
        method,
        bound.num_pair or 0,
        K.draw_key(2, 0),
        bound._runs,
        K.kernel_fcaps(link),
    )
    np.testing.assert_allclose(v, bound.loss(z, reduction="none"), rtol=1e-9, atol=1e-9)
    g0, h0 = generic(bound, z)
    np.testing.assert_allclose(g, g0, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(h, h0, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("k", [3, 60, 199])
def test_topk_long_queries_with_tied_scores(k, rng):
    """Long queries (the kernel's partial selection and its full sort with tie runs), many
    tied scores, ties straddling the top-k boundary."""
    sizes = np.array([200, 70, 130])
    n = int(sizes.sum())
    y = rng.integers(0, 3, size=n).astype(float)
    z = np.round(rng.normal(size=n), 1)  # about 40 distinct values: long runs of ties
    link = Sinh(cap=3.0)
    bound = Pairwise(link, pair_method="topk", num_pair_per_sample=k).bind(y, group=sizes)
    ref_pairs = py_topk(z, y, sizes, k, False)
    assert as_set(*bound.selected_pairs(z)) == sorted(ref_pairs)
    _, ref_g, ref_h = py_objective(link, z, y, sizes, ref_pairs)
    g, h = bound.grad_hess(z)
    np.testing.assert_allclose(g, ref_g, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(h, ref_h, rtol=1e-9, atol=1e-9)
