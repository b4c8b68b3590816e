"""The backend-independent objective: adapter = core for every registered loss, blocks and
threads, Hessian policies, intercept, validation before training, pickling."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from selrank.gbdt import HESSIAN_POLICIES, GBDTObjective
from selrank.losses import get_loss

from .._registry import loss_cases

K = 4


def core_or_skip(loss, z, y, **kw):
    """The core gradient; cases whose data this generator cannot make are skipped (the core
    tests cover them), the adapter is compared with the core on all others."""
    try:
        return loss.grad_hess(z, y, **kw)
    except ValueError as exc:
        pytest.skip(f"generated data does not fit {loss!r}: {exc}")


def make_data(loss, rng, n_groups=12):
    """Labels, predictions, query sizes and row weights for a loss's structure."""
    sizes = rng.integers(1, 9, size=n_groups)
    n = int(sizes.sum())
    w = rng.uniform(0.5, 2.0, size=n)
    if loss.structure == "multiclass":
        y = (
            rng.integers(0, K, size=n).astype(float)
            if loss.target == "link"
            else rng.normal(size=(n, K))
        )
        return y, rng.normal(size=(n, K)), sizes, w
    link = getattr(loss, "link", None)
    if loss.target == "link" and loss.structure == "pointwise":
        lo, hi = link.range
        lo = lo if np.isfinite(lo) else -2.0
        hi = hi if np.isfinite(hi) else 2.0
        y = rng.uniform(lo, hi, size=n)
    elif loss.target == "link":  # listwise link targets: per-query distributions times alpha
        raw = rng.uniform(0.1, 1.0, size=n)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        y = raw / np.repeat(np.add.reduceat(raw, starts), sizes) * loss.scaling.alpha
    elif link is not None and np.isfinite(link.domain[0]):
        y = rng.uniform(0.05, 0.95, size=n)
    else:
        y = rng.integers(0, 4, size=n).astype(float)
    return y, rng.normal(scale=0.5, size=n), sizes, w


@pytest.mark.filterwarnings(
    "ignore:the exact Hessian:UserWarning", "ignore:the Hessian of:UserWarning"
)
@pytest.mark.parametrize(("name", "params"), loss_cases())
def test_exact_policy_equals_core(name, params, rng):
    loss = get_loss(name, **params)
    y, z, sizes, w = make_data(loss, rng)
    group = sizes if loss.structure == "group" else None
    n_classes = K if loss.structure == "multiclass" else None
    g_ref, h_ref = core_or_skip(loss, z, y, group=group, sample_weight=w)
    obj = GBDTObjective(loss, hessian="exact")
    g, h = obj.grad_hess(z, y, group=group, sample_weight=w, n_classes=n_classes)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings(
    "ignore:the exact Hessian:UserWarning", "ignore:the Hessian of:UserWarning"
)
@pytest.mark.parametrize(("name", "params"), loss_cases())
def test_blocks_and_threads_equal_one_piece(name, params, rng):
    loss = get_loss(name, **params)
    y, z, sizes, w = make_data(loss, rng, n_groups=40)
    group = sizes if loss.structure == "group" else None
    core_or_skip(loss, z, y, group=group, sample_weight=w)
    one = GBDTObjective(loss, hessian="exact")
    many = GBDTObjective(loss, hessian="exact", block_rows=7, n_jobs=2)
    g1, h1 = one.grad_hess(z, y, group=group, sample_weight=w)
    g2, h2 = many.grad_hess(z, y, group=group, sample_weight=w)
    b = many._bindings["arrays"]
    if loss.separable:
        assert len(b.blocks) > 3  # the data really was split
    else:  # losses that couple all rows (batch baselines) are evaluated in one piece
        assert len(b.blocks) == 1
    if loss.structure == "group":  # blocks end on query boundaries
        ends = {e for _, e, _ in b.blocks}
        assert ends <= set(np.cumsum(sizes).tolist())
    np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(h2, h1, rtol=1e-12, atol=1e-13)
    b1 = one._bindings["arrays"]
    np.testing.assert_allclose(b.ref, b1.ref, rtol=1e-12)  # the Hessian scale from the blocks
    if len(b.blocks) > 1:  # host blocks hold the bound labels once: no full binding beside them
        assert b._full is None
        gf, hf = b.full.grad_hess(z)  # built on first use (device arrays need it)
        np.testing.assert_allclose(gf, g1, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(hf, b1.full.grad_hess(z)[1], rtol=1e-12, atol=1e-13)


def test_label_scale_multiplies_score_targets(rng):
    y = rng.integers(0, 3, size=20).astype(float)
    z = rng.normal(size=20)
    g, _ = GBDTObjective("pointwise", link="exp", hessian="exact", label_scale=0.25).grad_hess(z, y)
    g_ref, _ = get_loss("pointwise", link="exp").grad_hess(z, 0.25 * y)
    np.testing.assert_allclose(g, g_ref)
    # link-space targets are not scaled
    y01 = (y > 0).astype(float)
    g, _ = GBDTObjective("pointwise", link="sigmoid", target="link", label_scale=0.25).grad_hess(
        z, y01
    )
    g_ref, _ = get_loss("pointwise", link="sigmoid", target="link").grad_hess(z, y01)
    np.testing.assert_allclose(g, g_ref)


class TestPolicies:
    def _smelu_case(self, rng):
        # labels far above the band: h' = 0 at the predictions for most rows
        loss = get_loss("pointwise", link="smelu", c=0.5)
        y = rng.uniform(-0.4, 0.4, size=200)
        z = np.concatenate([rng.uniform(3.0, 4.0, size=150), rng.uniform(-0.3, 0.3, size=50)])
        return loss, y, z

    def test_floor(self, rng):
        loss, y, z = self._smelu_case(rng)
        w = rng.uniform(0.5, 2.0, size=200)
        obj = GBDTObjective(loss, hessian="floor", hessian_floor=0.2)
        with pytest.warns(UserWarning, match="vanishes on 150 of"):
            g, h = obj.grad_hess(z, y, sample_weight=w)
        g_ref, h_ref = loss.grad_hess(z, y, sample_weight=w)
        b = obj._bindings["arrays"]
        assert b.ref > 0 and b.floor == pytest.approx(max(0.2 * b.ref, 1e-3 / 20))
        np.testing.assert_allclose(g, g_ref)
        np.testing.assert_allclose(h, np.maximum(h_ref, w * b.floor))
        assert np.all(h[:150] == w[:150] * b.floor) and np.all(h[150:] == h_ref[150:])

    def test_exact_warns_and_keeps_zeros(self, rng):
        loss, y, z = self._smelu_case(rng)
        with pytest.warns(UserWarning, match="leaf values are unbounded"):
            _, h = GBDTObjective(loss, hessian="exact").grad_hess(z, y)
        assert np.sum(h == 0) == 150

    def test_no_warning_when_hessian_is_healthy(self, rng):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            GBDTObjective("pointwise", link="exp").grad_hess(
                rng.normal(size=50), rng.normal(size=50)
            )

    def test_upper_is_query_maximum(self, rng):
        loss = get_loss("listwise", scaling="exp")
        sizes = np.array([4, 1, 6, 3])
        y = rng.integers(0, 3, size=14).astype(float)
        z = rng.normal(size=14)
        w = rng.uniform(0.5, 2.0, size=14)
        _, h_ref = loss.grad_hess(z, y, group=sizes, sample_weight=w)
        _, h = GBDTObjective(loss, hessian="upper").grad_hess(z, y, group=sizes, sample_weight=w)
        # per-query weight: the mean of its rows (the core's convention)
        wq = np.repeat(np.add.reduceat(w, [0, 4, 5, 11]) / sizes, sizes)
        per = h_ref / wq
        top = np.repeat(np.maximum.reduceat(per, [0, 4, 5, 11]), sizes)
        np.testing.assert_allclose(h, top * wq)
        assert np.all(h >= h_ref - 1e-15)

    def test_upper_pointwise_and_multiclass_columns(self, rng):
        z = rng.normal(size=30)
        y = rng.normal(size=30)
        _, h_ref = get_loss("pointwise", link="exp").grad_hess(z, y)
        _, h = GBDTObjective("pointwise", link="exp", hessian="upper").grad_hess(z, y)
        np.testing.assert_allclose(h, np.full(30, h_ref.max()))
        zc = rng.normal(size=(30, K))
        yc = rng.integers(0, K, size=30).astype(float)
        loss = get_loss("decomposed", link="sigmoid", target="link")
        _, h_ref = loss.grad_hess(zc, yc)
        _, h = GBDTObjective(loss, hessian="upper").grad_hess(zc, yc, n_classes=K)
        np.testing.assert_allclose(h, np.broadcast_to(h_ref.max(axis=0), (30, K)))

    def test_constant_is_reference_hessian(self, rng):
        z = rng.normal(size=40)
        y = rng.integers(0, 2, size=40).astype(float)
        w = rng.uniform(0.5, 2.0, size=40)
        obj = GBDTObjective("pointwise", link="sigmoid", target="link", hessian="constant")
        _, h = obj.grad_hess(z, y, sample_weight=w)
        c = np.average(y, weights=w)  # sigmoid(intercept) = weighted mean label
        np.testing.assert_allclose(h, w * c * (1 - c), rtol=1e-9)

    def test_zero_reference_falls_back_with_warning(self, rng):
        z = rng.normal(size=20)
        y = rng.normal(size=20)
        with pytest.warns(UserWarning, match="zero at the optimal constant"):
            _, h = GBDTObjective("pointwise", link="step", hessian="constant").grad_hess(z, y)
        np.testing.assert_allclose(h, 1.0)

    def test_floor_larger_than_scale_warns(self, rng):
        with pytest.warns(UserWarning, match="more than 10x"):
            GBDTObjective("listwise", min_leaf_hessian=1000.0).grad_hess(
                rng.normal(size=400), rng.integers(0, 3, 400).astype(float), group=np.full(4, 100)
            )

    @pytest.mark.parametrize("policy", HESSIAN_POLICIES)
    def test_policies_keep_gradient_and_positivity(self, policy, rng):
        loss = get_loss("pairwise", pairs="distinct")
        sizes = np.array([5, 7, 2, 6])
        y = rng.integers(0, 3, size=20).astype(float)
        z = rng.normal(size=20)
        g_ref, _ = loss.grad_hess(z, y, group=sizes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g, h = GBDTObjective(loss, hessian=policy).grad_hess(z, y, group=sizes)
        np.testing.assert_allclose(g, g_ref)
        assert np.all(h >= 0) and np.all(np.isfinite(h))


class TestIntercept:
    @pytest.mark.parametrize(
        ("name", "params"),
        [
            ("pointwise", {"link": "exp"}),
            ("pointwise", {"link": "sigmoid", "target": "link"}),
            ("listwise", {"scaling": "exp"}),
            ("pairwise", {}),
        ],
    )
    def test_equals_core_optimal_constant(self, name, params, rng):
        loss = get_loss(name, **params)
        y = (
            rng.integers(0, 2, size=30) if loss.target == "link" else rng.integers(0, 4, size=30)
        ).astype(float)
        w = rng.uniform(0.5, 2.0, size=30)
        sizes = np.array([10, 5, 15])
        kw = {"group": sizes} if loss.structure == "group" else {}
        obj = GBDTObjective(loss, label_scale=1.0)
        c = obj.fit_intercept(y, sample_weight=w, **kw)
        assert c == pytest.approx(loss.optimal_constant(y, w, **kw))
        assert obj.intercept_ == c
        np.testing.assert_array_equal(obj.init_score(4), np.full(4, c))

    def test_multiclass_vector(self, rng):
        y = rng.integers(0, K, size=60).astype(float)
        obj = GBDTObjective("composite_softmax", scaling="constant", target="link")
        c = obj.fit_intercept(y, n_classes=K)
        p = np.exp(c) / np.exp(c).sum()
        np.testing.assert_allclose(p, np.bincount(y.astype(int), minlength=K) / 60, atol=1e-9)
        assert obj.init_score(5).shape == (5, K)

    def test_init_score_needs_fit(self):
        with pytest.raises(ValueError, match="fit_intercept"):
            GBDTObjective("pointwise").init_score(3)


class TestValidation:
    """Every bad input is a ValueError naming the problem, raised when binding (before training)."""

    def test_nan_and_inf_labels(self):
        obj = GBDTObjective("pointwise", link="identity")
        with pytest.raises(ValueError, match="finite"):
            obj.fit_intercept(np.array([0.0, np.nan, 1.0]))
        with pytest.raises(ValueError, match="finite"):
            obj.fit_intercept(np.array([0.0, np.inf, 1.0]))

    def test_bad_weights(self):
        obj = GBDTObjective("pointwise", link="identity")
        y = np.zeros(3)
        with pytest.raises(ValueError, match="finite"):
            obj.fit_intercept(y, sample_weight=[1.0, np.nan, 1.0])
        with pytest.raises(ValueError, match="non-negative"):
            obj.fit_intercept(y, sample_weight=[1.0, -1.0, 1.0])
        with pytest.raises(ValueError, match=r"shape \(3,\)"):
            obj.fit_intercept(y, sample_weight=[1.0, 1.0])

    def test_label_outside_domain(self):
        with pytest.raises(ValueError, match="domain"):
            GBDTObjective("pointwise", link="logit").fit_intercept(np.array([0.2, 1.5]))
        with pytest.raises(ValueError, match="range"):
            GBDTObjective("pointwise", link="sigmoid", target="link").fit_intercept(
                np.array([0.0, 2.0])
            )

    def test_groups(self):
        obj = GBDTObjective("listwise")
        y = np.zeros(6)
        with pytest.raises(ValueError, match="add up to 5 rows but the data has 6"):
            obj.fit_intercept(y, group=[2, 3])
        with pytest.raises(ValueError, match="contiguous"):
            obj.fit_intercept(y, qid=[1, 1, 2, 2, 1, 1])
        with pytest.raises(ValueError, match="one value per row: for per-row query ids pass qid="):
            obj.fit_intercept(y, group=[1, 1, 2, 2, 1, 1])  # ids are never guessed from the length
        with pytest.raises(ValueError, match="not both"):
            obj.fit_intercept(y, group=[6], qid=np.zeros(6))
        with pytest.raises(ValueError, match="needs query groups"):
            obj.fit_intercept(y)

    def test_bad_options(self):
        with pytest.raises(ValueError, match="hessian"):
            GBDTObjective("pointwise", hessian="diagonal")
        with pytest.raises(ValueError, match="label_scale"):
            GBDTObjective("pointwise", label_scale=0.0)
        with pytest.raises(ValueError, match="unknown loss"):
            GBDTObjective("lambdamart")
        with pytest.raises(ValueError, match="block_rows"):
            GBDTObjective("pointwise", block_rows=0)

    def test_multiclass_labels(self):
        obj = GBDTObjective("composite_softmax", scaling="constant", target="link")
        with pytest.raises(ValueError, match=r"must be integers in \[0, 3\)"):
            obj.fit_intercept(np.array([0.0, 1.0, 3.0]), n_classes=3)


def test_pickle_drops_cache_and_still_works(rng):
    obj = GBDTObjective("listwise", n_jobs=2, block_rows=5)
    y = rng.integers(0, 3, size=40).astype(float)
    z = rng.normal(size=40)
    g1, h1 = obj.grad_hess(z, y, group=np.full(8, 5))
    obj.fit_intercept(y, group=np.full(8, 5))
    clone = pickle.loads(pickle.dumps(obj))
    assert clone._bindings == {} and clone.intercept_ == obj.intercept_
    g2, h2 = clone.grad_hess(z, y, group=np.full(8, 5))
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(h1, h2)


def test_binding_is_reused_and_rebuilt_for_new_labels(rng):
    obj = GBDTObjective("pointwise", link="exp")
    y = rng.normal(size=10)
    obj.grad_hess(np.zeros(10), y)
    first = obj._bindings["arrays"]
    obj.grad_hess(np.ones(10), y)
    assert obj._bindings["arrays"] is first
    obj.grad_hess(np.ones(10), y + 1.0)
    assert obj._bindings["arrays"] is not first


def test_lightgbm_training_reuses_the_intercepts_binding(monkeypatch, rng):
    """obj.train binds the labels once (set_init_score's binding serves the training rounds,
    through lightgbm.train's copy of the objective) when LightGBM keeps the same values, and
    binds again when its float32 copy of the labels differs."""
    lgb = pytest.importorskip("lightgbm")
    from selrank.gbdt import lightgbm_objective

    sizes = np.full(30, 20)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 4))
    binds = []
    real_bind = GBDTObjective.bind

    def counting_bind(self, *args, **kwargs):
        binds.append(1)
        return real_bind(self, *args, **kwargs)

    monkeypatch.setattr(GBDTObjective, "bind", counting_bind)
    params = {"verbosity": -1, "num_leaves": 4, "min_data_in_leaf": 5}
    y = rng.integers(0, 5, size=n).astype(float)  # exact in float32
    obj = lightgbm_objective("weighted_pairwise")
    booster = obj.train(params, lgb.Dataset(X, y, group=sizes), 3)
    assert len(binds) == 1
    # the same trees as a fit that binds again (a fresh Dataset for lightgbm.train itself)
    binds.clear()
    y_odd = y + 1.0 / 3.0  # float32 rounds these: training binds LightGBM's values
    obj2 = lightgbm_objective("weighted_pairwise")
    obj2.train(params, lgb.Dataset(X, y_odd, group=sizes), 3)
    assert len(binds) == 2
    plain = lightgbm_objective("weighted_pairwise")
    ds = plain.set_init_score(lgb.Dataset(X, y, group=sizes))
    reference = lgb.train({**params, "objective": plain}, ds, 3)  # no sharing: binds again
    np.testing.assert_allclose(
        booster.predict(X, raw_score=True),
        reference.predict(X, raw_score=True) + float(plain.intercept_),
        rtol=1e-12,
        atol=1e-12,
    )
