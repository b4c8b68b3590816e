"""Baseline losses (docs/math.md §6): registry-driven checks, references, and the sources' claims.

Every baseline registered in ``LOSSES`` (``is_matching = False``) with every parameter set of
its ``examples`` is checked for: closed-form gradient and Hessian diagonal = torch autograd
(float64), NumPy = torch, float32, finite values at |score| = 1e4, weights multiplying, and
values equal to plain-Python loops written straight from the source formulas. Then the
known values (torch.nn.functional), the Principle-of-Logit-Separation alignment claims of
``001``, the n-way m-class behaviour of ``002`` and the re-weighting claims of App. E.1.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from selrank.losses import LOSSES, get_loss  # noqa: E402
from selrank.losses.classification._base import loo_logsumexp  # noqa: E402

BASELINES = sorted(
    name for name, cls in LOSSES.items() if getattr(cls, "is_matching", True) is False
)
CASES = [(name, params) for name in BASELINES for params in LOSSES[name].examples]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'default'}" for n, p in CASES]

N, K = 6, 4
WAYS = (2, 3)
BATCH_IDS = np.array([3, 1, 3, 1, 1, 3])  # two interleaved batches: exercises the permutation


def test_all_baselines_registered():
    expected = {
        "softmax_cross_entropy",
        "multiclass_hinge",
        "mean_squared_error",
        "reweighted_square",
        "max_margin",
        "softmax_cauchy_schwarz",
        "sigmoid_cauchy_schwarz",
        "softmax_tanimoto",
        "sigmoid_tanimoto",
        "self_normalization",
        "nce",
        "binary_cross_entropy",
        "batch_cross_entropy",
        "batch_max_margin",
        "multilabel_softmax_cross_entropy",
        "nway_softmax_cross_entropy",
    }
    assert set(BASELINES) == expected
    for name in BASELINES:
        cls = LOSSES[name]
        assert cls.name == name
        assert ".. math::" in cls.__doc__ and "Examples" in cls.__doc__
        assert cls.examples, name
        assert get_loss(name) == cls()


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def make_case(name, params, rng, scale=2.0):
    """(loss, y_pred, y_true, kwargs) with labels of the loss's kind, as NumPy float64."""
    loss = LOSSES[name](**params)
    kw = {}
    if name == "reweighted_square":
        y = rng.uniform(-3.0, 3.0, N)
        z = y + rng.normal(0.0, 1.5, N)
        return loss, z, y, kw
    shape = (N, *WAYS) if name == "nway_softmax_cross_entropy" else (N, K)
    z = rng.normal(0.0, scale, shape)
    kind = loss.labels
    if kind == "one_hot":
        y = rng.integers(0, shape[-1], shape[:-1]).astype(np.float64)
        assert np.unique(y).size >= 2
    elif kind == "distribution":
        y = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])
    elif kind == "probability":
        y = rng.uniform(0.0, 1.0, shape)
    elif kind == "multi_hot":
        y = (rng.uniform(size=shape) < 0.5).astype(np.float64)
        assert 0 < y.mean() < 1
    else:
        y = rng.normal(0.0, 1.0, shape)
    if loss.couples_samples:
        kw["qid"] = BATCH_IDS
    return loss, z, y, kw


def unit_count(loss, kw):
    return len(np.unique(kw["qid"])) if loss.couples_samples else N


def as_torch(a, dtype=torch.float64, grad=False):
    t = torch.tensor(np.asarray(a), dtype=dtype)
    return t.requires_grad_(grad)


def one_hot_rows(y, k):
    y = np.asarray(y)
    out = np.zeros((*y.shape, k))
    np.put_along_axis(out, y.astype(np.int64)[..., None], 1.0, axis=-1)
    return out


# --------------------------------------------------------------------------------------
# Plain-Python references, straight from the source formulas (no log-space tricks)
# --------------------------------------------------------------------------------------


def _softmax(v):
    e = [math.exp(x) for x in v]
    s = sum(e)
    return [x / s for x in e]


def _sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def _ref_row(name, p, z, t):
    k = len(z)
    y = max(range(k), key=lambda j: t[j])
    if name == "softmax_cross_entropy":
        pr = _softmax(z)
        return -sum(t[j] * math.log(pr[j]) for j in range(k))
    if name == "multiclass_hinge":
        return sum(max(0.0, z[j] - z[y] + p.get("margin", 1.0)) for j in range(k) if j != y)
    if name == "mean_squared_error":
        return sum((z[j] - t[j]) ** 2 for j in range(k)) / k
    if name == "max_margin":
        return max(0.0, p.get("margin", 1.0) - z[y] + max(z[j] for j in range(k) if j != y))
    if name == "softmax_cauchy_schwarz":
        pr = _softmax(z)
        return -math.log(pr[y] / math.sqrt(sum(q * q for q in pr)))
    if name == "sigmoid_cauchy_schwarz":
        s = [_sig(x) for x in z]
        return -math.log(s[y] / math.sqrt(sum(q * q for q in s)))
    if name in ("softmax_tanimoto", "sigmoid_tanimoto"):
        g = _softmax(z) if name == "softmax_tanimoto" else [_sig(x) for x in z]
        norm = sum(q * q for q in g)
        norm = norm if p.get("squared_norm", False) else math.sqrt(norm)
        return -g[y] / (1.0 + norm - g[y])
    if name == "self_normalization":
        pr = _softmax(z)
        return (
            -sum(t[j] * math.log(pr[j]) for j in range(k))
            + p.get("alpha", 0.1) * math.log(sum(math.exp(x) for x in z)) ** 2
        )
    if name == "nce":
        tau = p.get("n_noise", 1)
        q = p.get("noise") or [1.0 / k] * k
        g = [1.0 / (1.0 + tau * q[j] * math.exp(-z[j])) for j in range(k)]
        return -sum(t[j] * math.log(g[j]) for j in range(k)) - tau * sum(
            q[j] * math.log(1.0 - g[j]) for j in range(k)
        )
    if name == "binary_cross_entropy":
        return -sum(
            t[j] * math.log(_sig(z[j])) + (1 - t[j]) * math.log(1 - _sig(z[j])) for j in range(k)
        )
    if name == "multilabel_softmax_cross_entropy":
        neg = sum(math.exp(z[j]) for j in range(k) if t[j] == 0)
        pos = sum(math.exp(-z[j]) for j in range(k) if t[j] == 1)
        return math.log(1 + neg) + math.log(1 + pos)
    raise KeyError(name)


def _ref_nway(p, s, t):
    """Eq. (loss-1) / (loss-3) of 002 for one sample, s and t of shape [W, M]."""
    W, M = len(s), len(s[0])
    total = 0.0
    for j in range(M):
        acc = 0.0
        for i in range(W):
            if p.get("centered", False):
                acc += t[i][j] * math.exp(sum(s[i]) / M - s[i][j])
            else:
                acc += sum(t[i][j] * math.exp(s[i][k] - s[i][j]) for k in range(M) if k != j)
        total += math.log(1 + acc)
    return total


def _ref_batches(name, p, z, T, ids):
    out = []
    _, first = np.unique(ids, return_index=True)
    for bid in ids[np.sort(first)]:
        rows = [i for i in range(len(ids)) if ids[i] == bid]
        m = len(rows)
        ys = [int(np.argmax(T[i])) for i in rows]
        if name == "batch_cross_entropy":
            Zb = sum(math.exp(z[i][j]) for i in rows for j in range(len(z[i])))
            out.append(
                sum(
                    (1 / m) * math.log((1 / m) / (math.exp(z[i][y]) / Zb)) for i, y in zip(rows, ys)
                )
            )
        else:
            g = p.get("margin", 1.0)
            zp = min(z[i][y] for i, y in zip(rows, ys))
            zm = max(z[i][j] for i, y in zip(rows, ys) for j in range(len(z[i])) if j != y)
            cs = sum(
                max(0.0, g - z[i][y] + max(z[i][j] for j in range(len(z[i])) if j != y))
                for i, y in zip(rows, ys)
            )
            out.append(max(0.0, g - zp + zm) / m + cs / m)
    return np.array(out)


def reference_values(name, params, z, y, kw):
    if name == "reweighted_square":
        mode = params.get("weighting", "observed")
        kappa, delta = params.get("kappa", 0.5), params.get("delta", 0.5)
        smin = params.get("score_min")
        b = (min(y) if smin is None else smin) - delta
        out = []
        for zh, s in zip(z, y):
            w = {
                "observed": kappa * (s - b),
                "predicted": kappa * (zh - b),
                "both": kappa**2 * (s - b) * (zh - b),
            }[mode]
            out.append(0.5 * w * (zh - s) ** 2)
        return np.array(out)
    T = y if y.shape == z.shape else one_hot_rows(y, z.shape[-1])
    if name in ("batch_cross_entropy", "batch_max_margin"):
        return _ref_batches(name, params, z.tolist(), T, kw["qid"])
    if name == "nway_softmax_cross_entropy":
        return np.array([_ref_nway(params, z[i].tolist(), T[i].tolist()) for i in range(len(z))])
    return np.array([_ref_row(name, params, z[i].tolist(), T[i].tolist()) for i in range(len(z))])


# --------------------------------------------------------------------------------------
# Registry-driven checks
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_values_match_plain_python_reference(name, params, rng):
    loss, z, y, kw = make_case(name, params, rng)
    got = loss.loss(z, y, reduction="none", **kw)
    np.testing.assert_allclose(
        got, reference_values(name, params, z, y, kw), rtol=1e-11, atol=1e-12
    )


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_grad_hess_match_autograd(name, params, rng):
    loss, z, y, kw = make_case(name, params, rng)
    w = rng.uniform(0.5, 2.0, unit_count(loss, kw))
    zt = as_torch(z, grad=True)
    total = loss.loss(zt, y, sample_weight=w, reduction="sum", **kw)
    (g_auto,) = torch.autograd.grad(total, zt)

    def f(v):
        return loss.loss(v, y, sample_weight=w, reduction="sum", **kw)

    hess = torch.autograd.functional.hessian(f, as_torch(z))
    h_auto = torch.diagonal(hess.reshape(z.size, z.size)).reshape(z.shape)
    g, h = loss.grad_hess(z, y, sample_weight=w, **kw)
    assert isinstance(g, np.ndarray) and g.shape == z.shape and h.shape == z.shape
    np.testing.assert_allclose(g, g_auto.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(h, h_auto.numpy(), rtol=1e-8, atol=1e-10)
    gt, ht = loss.grad_hess(as_torch(z), y, sample_weight=w, **kw)
    assert gt.dtype == torch.float64
    np.testing.assert_allclose(gt.numpy(), g, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ht.numpy(), h, rtol=1e-12, atol=1e-14)


SOFT = [
    (n, p)
    for n, p in CASES
    if LOSSES[n].structure == "multiclass"
    and LOSSES[n].labels in ("distribution", "probability", "real")
]


@pytest.mark.parametrize(("name", "params"), SOFT, ids=[f"{n}-{p}" for n, p in SOFT])
def test_grad_hess_match_autograd_with_hard_labels(name, params, rng):
    """The soft-label cases above; here class indices (terms with t = 0 or 1 exactly)."""
    loss, z, y, kw = make_case(name, params, rng)
    idx = rng.integers(0, z.shape[-1], z.shape[:-1])
    zt = as_torch(z, grad=True)
    (g_auto,) = torch.autograd.grad(loss.loss(zt, idx, reduction="sum"), zt)
    hess = torch.autograd.functional.hessian(
        lambda v: loss.loss(v, idx, reduction="sum"), as_torch(z)
    )
    g, h = loss.grad_hess(z, idx)
    np.testing.assert_allclose(g, g_auto.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(
        h,
        torch.diagonal(hess.reshape(z.size, z.size)).reshape(z.shape).numpy(),
        rtol=1e-8,
        atol=1e-10,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_numpy_equals_torch(name, params, reduction, rng):
    loss, z, y, kw = make_case(name, params, rng)
    w = rng.uniform(0.5, 2.0, unit_count(loss, kw))
    a = loss.loss(z, y, sample_weight=w, reduction=reduction, **kw)
    b = loss.loss(as_torch(z), as_torch(y), sample_weight=w, reduction=reduction, **kw)
    assert torch.is_tensor(b)
    np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-12, atol=1e-14)
    if reduction == "none":
        assert np.shape(a) == (unit_count(loss, kw),)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_float32_works(name, params, rng):
    loss, z, y, kw = make_case(name, params, rng)
    ref = loss.loss(z, y, reduction="none", **kw)
    g64, h64 = loss.grad_hess(z, y, **kw)
    for z32 in (z.astype(np.float32), as_torch(z, dtype=torch.float32)):
        v = loss.loss(z32, y, reduction="none", **kw)
        g, h = loss.grad_hess(z32, y, **kw)
        for arr in (v, g, h):
            assert arr.dtype in (np.float32, torch.float32)
        scale = 1.0 + np.abs(ref).max()
        np.testing.assert_allclose(np.asarray(v), ref, rtol=1e-4, atol=1e-5 * scale)
        np.testing.assert_allclose(
            np.asarray(g), g64, rtol=1e-4, atol=1e-5 * (1 + np.abs(g64).max())
        )
        np.testing.assert_allclose(
            np.asarray(h), h64, rtol=1e-3, atol=1e-5 * (1 + np.abs(h64).max())
        )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_finite_at_extreme_scores(name, params, dtype, rng):
    loss, z, y, kw = make_case(name, params, rng)
    z = rng.choice([-1e4, -50.0, 0.0, 50.0, 1e4], size=z.shape) + rng.normal(0.0, 1.0, z.shape)
    assert (z > 5e3).any() and (z < -5e3).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = loss.loss(z.astype(dtype), y, reduction="none", **kw)
        g, h = loss.grad_hess(z.astype(dtype), y, **kw)
        zt = as_torch(z, dtype=getattr(torch, dtype), grad=True)
        (g_auto,) = torch.autograd.grad(loss.loss(zt, y, reduction="sum", **kw), zt)
    for arr in (v, g, h, g_auto.numpy()):
        assert np.all(np.isfinite(arr)), name


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_weights_multiply(name, params, rng):
    loss, z, y, kw = make_case(name, params, rng)
    w = rng.uniform(0.0, 3.0, unit_count(loss, kw))
    w[0] = 0.0
    plain = loss.loss(z, y, reduction="none", **kw)
    np.testing.assert_allclose(
        loss.loss(z, y, sample_weight=w, reduction="none", **kw), w * plain, rtol=1e-12
    )
    np.testing.assert_allclose(
        loss.loss(z, y, sample_weight=w, **kw), np.sum(w * plain) / w.sum(), rtol=1e-12
    )
    g, h = loss.grad_hess(z, y, **kw)
    gw, hw = loss.grad_hess(z, y, sample_weight=w, **kw)
    if loss.couples_samples:  # a batch's weight lands on every row of the batch
        _, first = np.unique(BATCH_IDS, return_index=True)
        order = list(BATCH_IDS[np.sort(first)])  # batches numbered by first appearance
        w = np.array([w[order.index(b)] for b in BATCH_IDS])
    wb = w.reshape((-1,) + (1,) * (z.ndim - 1))
    np.testing.assert_allclose(gw, wb * g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hw, wb * h, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_class_indices_equal_one_hot_rows(name, params, rng):
    loss, z, _, kw = make_case(name, params, rng)
    if loss.structure != "multiclass":
        pytest.skip("pointwise loss: targets are scores")
    idx = rng.integers(0, z.shape[-1], z.shape[:-1]).astype(np.float64)
    rows = one_hot_rows(idx, z.shape[-1])
    np.testing.assert_allclose(
        loss.loss(z, idx, reduction="none", **kw),
        loss.loss(z, rows, reduction="none", **kw),
        rtol=1e-13,
    )
    for a, b in zip(loss.grad_hess(z, idx, **kw), loss.grad_hess(z, rows, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    bound = loss.bind(idx, **kw)  # one binding serves many predictions
    np.testing.assert_allclose(bound.loss(2 * z), loss.loss(2 * z, idx, **kw), rtol=1e-13)


# --------------------------------------------------------------------------------------
# Known values
# --------------------------------------------------------------------------------------


def test_softmax_cross_entropy_equals_torch(rng):
    z = rng.normal(0.0, 3.0, (20, 5))
    y = rng.integers(0, 5, 20)
    probs = rng.dirichlet(np.ones(5), 20)
    loss = get_loss("softmax_cross_entropy")
    zt = as_torch(z)
    np.testing.assert_allclose(
        loss.loss(z, y), F.cross_entropy(zt, torch.tensor(y)).item(), rtol=1e-12
    )
    np.testing.assert_allclose(
        loss.loss(z, probs, reduction="none"),
        F.cross_entropy(zt, as_torch(probs), reduction="none").numpy(),
        rtol=1e-12,
    )
    g, h = loss.grad_hess(z, y)
    p = torch.softmax(zt, 1).numpy()
    np.testing.assert_allclose(g, p - one_hot_rows(y, 5), atol=1e-15)
    np.testing.assert_allclose(h, p * (1 - p), atol=1e-15)


def test_multiclass_hinge_equals_torch_multi_margin_times_k(rng):
    z = rng.normal(0.0, 1.0, (30, 4))
    y = rng.integers(0, 4, 30)
    for margin in (1.0, 0.3):
        got = get_loss("multiclass_hinge", margin=margin).loss(z, y, reduction="none")
        ref = (
            4
            * F.multi_margin_loss(
                as_torch(z), torch.tensor(y), margin=margin, reduction="none"
            ).numpy()
        )
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)
        assert 0 < np.mean(got == 0) < 1  # some samples inside, some outside the margin


def test_mse_and_bce_equal_torch(rng):
    z = rng.normal(0.0, 2.0, (10, 3))
    t = rng.normal(0.0, 1.0, (10, 3))
    r = rng.uniform(0.0, 1.0, (10, 3))
    np.testing.assert_allclose(
        get_loss("mean_squared_error").loss(z, t),
        F.mse_loss(as_torch(z), as_torch(t)).item(),
        rtol=1e-12,
    )
    bce = (
        F.binary_cross_entropy_with_logits(as_torch(z), as_torch(r), reduction="none")
        .sum(1)
        .numpy()
    )
    np.testing.assert_allclose(
        get_loss("binary_cross_entropy").loss(z, r, reduction="none"), bce, rtol=1e-12
    )


def test_batch_cross_entropy_is_kl_over_the_flattened_batch(rng):
    z = rng.normal(0.0, 2.0, (5, 3))
    y = rng.integers(0, 3, 5)
    P = one_hot_rows(y, 3) / 5
    kl = F.kl_div(
        torch.log_softmax(as_torch(z).reshape(-1), 0), as_torch(P).reshape(-1), reduction="sum"
    ).item()
    np.testing.assert_allclose(get_loss("batch_cross_entropy").loss(z, y), kl, rtol=1e-12)


def test_source_worked_examples():
    s = np.array([[3.2, 5.1, -1.7], [1.3, 4.9, 2.0], [2.2, 2.5, -3.1]])  # 003's three images
    np.testing.assert_allclose(
        get_loss("multiclass_hinge").loss(s, np.array([0, 1, 2]), reduction="none"),
        [2.9, 0.0, 12.9],
    )
    big = np.array([[15.0, -3.0, 7.0]])  # 003: margin 20
    hinge = get_loss("multiclass_hinge", margin=20.0)
    assert hinge.loss(big, np.array([0])) == pytest.approx(14.0)
    # 003 prints 38 + 10 = 48 for label 1; the second term is max(0, 7 - (-3) + 20) = 30
    assert hinge.loss(big, np.array([1])) == pytest.approx(68.0)
    mse = get_loss("mean_squared_error")
    s = np.array([[1.5, -2.0, 1.0]])
    assert mse.loss(s, np.array([[1.0, 0.0, 0.0]])) == pytest.approx(1.75)
    assert mse.loss(s, np.array([[0.0, 1.0, 0.0]])) == pytest.approx(12.25 / 3)


def test_loo_logsumexp_is_exact_and_stable(rng):
    x = np.concatenate([rng.normal(0, 3, (50, 6)), rng.choice([-1e4, 0.0, 1e4], (50, 6))])
    ref = np.array([[np.logaddexp.reduce(np.delete(row, k)) for k in range(row.size)] for row in x])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(loo_logsumexp(x, np), ref, rtol=1e-13)
    x = np.array([[0.0, -800.0, -900.0]])  # the others underflow next to the maximum
    np.testing.assert_allclose(loo_logsumexp(x, np)[0, 0], np.logaddexp(-800.0, -900.0))


# --------------------------------------------------------------------------------------
# Principle of Logit Separation (001)
# --------------------------------------------------------------------------------------

ALIGNED = [
    "self_normalization",
    "nce",
    "binary_cross_entropy",
    "sigmoid_tanimoto",
    "batch_cross_entropy",
    "batch_max_margin",
]
NOT_ALIGNED = [
    "softmax_cross_entropy",
    "max_margin",
    "softmax_cauchy_schwarz",
    "sigmoid_cauchy_schwarz",
    "softmax_tanimoto",
]


def _global_infimum(name):
    """Infimum of the summed loss of two samples with K = 2 (from the definitions)."""
    if name in ("softmax_tanimoto", "sigmoid_tanimoto"):
        return -2.0
    if (
        name == "nce"
    ):  # per class min of softplus(b - z) + tq softplus(z - b), tq = 1/2 (uniform, tau = 1)
        tq = 0.5
        return 2 * (math.log1p(tq) + tq * math.log((1 + tq) / tq))
    return 0.0


def _violating_infimum(name):
    """Smallest summed loss over logits where x2's true logit equals a false logit of x1.

    Samples x1 (class 0) and x2 (class 1); z(x1) = (a, v), z(x2) = (b, v): the true logit of
    x2 is *not above* the false logit of x1, so the PoLS fails. Minimised over a box; the
    smooth losses use the library's own gradients.
    """
    minimize = pytest.importorskip("scipy.optimize").minimize
    bound = get_loss(name).bind(np.array([0, 1]))

    def unpack(x):
        return np.array([[x[0], x[1]], [x[2], x[1]]])

    def fun(x):
        return float(bound.loss(unpack(x), reduction="sum"))

    def jac(x):
        g, _ = bound.grad_hess(unpack(x))
        return np.array([g[0, 0], g[0, 1] + g[1, 1], g[1, 0]])

    smooth = "margin" not in name
    best = np.inf
    starts = np.random.default_rng(7).uniform(-5, 5, (4, 3))
    for x0 in starts:
        if smooth:
            res = minimize(fun, x0, jac=jac, method="BFGS", options={"gtol": 1e-10})
        else:
            res = minimize(fun, x0, method="Powell", bounds=[(-60, 60)] * 3)
        best = min(best, res.fun)
    return best


@pytest.mark.parametrize("name", ALIGNED + NOT_ALIGNED)
def test_logit_separation_alignment(name):
    """Aligned: PoLS-violating logits cannot get the loss near its infimum. Not aligned: they can."""
    pytest.importorskip("scipy")
    gap = _violating_infimum(name) - _global_infimum(name)
    if name in ALIGNED:
        assert gap > 0.05, (name, gap)
    else:
        assert abs(gap) < 1e-6, (name, gap)


@pytest.mark.parametrize("name", NOT_ALIGNED[:3] + ["softmax_tanimoto"])
def test_paper_counterexample_not_aligned(name):
    """001 §3: z(x1) = (2a, a), z(x2) = (-2a, -a), labels (0, 1) — loss -> infimum, PoLS violated."""
    loss = get_loss(name)
    y = np.array([0, 1])
    values = []
    for a in (1.0, 5.0, 20.0, 40.0):
        z = np.array([[2 * a, a], [-2 * a, -a]])
        values.append(float(loss.loss(z, y, reduction="sum")))
        assert z[1, 1] < z[0, 1]  # true logit of x2 below a false logit of x1
        if name == "softmax_cross_entropy":
            assert values[-1] == pytest.approx(2 * math.log1p(math.exp(-a)), rel=1e-12)
    assert all(b <= a for a, b in zip(values, values[1:]))
    assert values[-1] - _global_infimum(name) < 1e-12
    if name == "max_margin":
        assert (
            loss.loss(np.array([[2.0, 1.0], [-2.0, -1.0]]), y, reduction="sum") == 0.0
        )  # alpha = gamma


def test_paper_counterexample_sigmoid_cauchy_schwarz():
    """001 §3.4: σ(z(x1)) = (0.5, 0.5/a), σ(z(x2)) = (0.5/a, 0.5/a²), both class 0."""
    loss = get_loss("sigmoid_cauchy_schwarz")
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    for a in (2.0, 10.0, 1e3):
        z = np.array([[logit(0.5), logit(0.5 / a)], [logit(0.5 / a), logit(0.5 / a**2)]])
        v = loss.loss(z, np.array([0, 0]), reduction="none")
        np.testing.assert_allclose(v, -math.log(a / math.sqrt(a * a + 1)), rtol=1e-9, atol=1e-15)
        assert z[1, 0] <= z[0, 1]  # the true logit of x2 is not above a false logit of x1
    assert v.sum() < 1e-6


@pytest.mark.parametrize("name", ALIGNED)
def test_aligned_losses_do_not_vanish_on_the_counterexample(name):
    loss = get_loss(name)
    y = np.array([0, 1])
    floor = _global_infimum(name) + 0.05
    for a in (0.5, 2.0, 10.0, 40.0):
        assert loss.loss(np.array([[2 * a, a], [-2 * a, -a]]), y, reduction="sum") > floor


def test_batch_max_margin_separates_across_the_batch():
    """App. D: L(B) < γ/m implies min true logit > max false logit."""
    rng = np.random.default_rng(3)
    n_batches, m = 4000, 3
    z = rng.normal(0, 4, (n_batches * m, 3))
    y = rng.integers(0, 3, n_batches * m)
    values = get_loss("batch_max_margin", margin=1.0).loss(
        z, y, group=[m] * n_batches, reduction="none"
    )
    T = one_hot_rows(y, 3).astype(bool).reshape(n_batches, m, 3)
    zb = z.reshape(n_batches, m, 3)
    true_min = np.where(T, zb, np.inf).min(axis=(1, 2))
    false_max = np.where(~T, zb, -np.inf).max(axis=(1, 2))
    small = values < 1.0 / m
    assert small.sum() > 5 and (~small).sum() > 5
    assert np.all(true_min[small] > false_max[small])


# --------------------------------------------------------------------------------------
# n-way m-class (002)
# --------------------------------------------------------------------------------------


def test_nway_one_way_hard_labels_is_softmax_cross_entropy(rng):
    z = rng.normal(0, 3, (8, 5))
    y = rng.integers(0, 5, 8)
    nway, ce = get_loss("nway_softmax_cross_entropy"), get_loss("softmax_cross_entropy")
    np.testing.assert_allclose(
        nway.loss(z, y, reduction="none"), ce.loss(z, y, reduction="none"), rtol=1e-12
    )
    for a, b in zip(nway.grad_hess(z, y), ce.grad_hess(z, y)):
        np.testing.assert_allclose(a, b, atol=1e-14)


def test_nway_two_classes_is_multilabel_cross_entropy(rng):
    s = rng.normal(0, 2, (6, 5, 2))  # 6 samples, 5 labels, 2 classes (positive, negative)
    pos = rng.integers(0, 2, (6, 5))
    t = np.stack([pos, 1 - pos], axis=-1).astype(float)
    d = s[..., 0] - s[..., 1]
    ml = get_loss("multilabel_softmax_cross_entropy")
    np.testing.assert_allclose(
        get_loss("nway_softmax_cross_entropy").loss(s, t, reduction="none"),
        ml.loss(d, pos, reduction="none"),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        get_loss("nway_softmax_cross_entropy", centered=True).loss(s, t, reduction="none"),
        ml.loss(d / 2, pos, reduction="none"),
        rtol=1e-12,
    )


def test_nway_centered_soft_label_optimum_is_softmax(rng):
    minimize = pytest.importorskip("scipy.optimize").minimize

    t = rng.dirichlet(np.ones(4), size=(1, 3))  # one sample, 3 ways, 4 classes, soft labels
    centered = get_loss("nway_softmax_cross_entropy", centered=True)
    g, _ = centered.grad_hess(np.log(t), t)
    np.testing.assert_allclose(g, 0.0, atol=1e-14)  # stationary at softmax(s) = t ...
    res = minimize(
        lambda v: float(centered.loss(v.reshape(t.shape), t)),
        rng.normal(0, 1, t.size),
        jac=lambda v: centered.grad_hess(v.reshape(t.shape), t)[0].ravel(),
        method="BFGS",
        options={"gtol": 1e-12},
    )
    s = res.x.reshape(t.shape)
    np.testing.assert_allclose(
        np.exp(s) / np.exp(s).sum(-1, keepdims=True), t, atol=1e-6
    )  # ... and it is the minimum
    g_hard, _ = get_loss("nway_softmax_cross_entropy").grad_hess(np.log(t), t)
    assert np.abs(g_hard).max() > 1e-2  # the hard-label form has another optimum for soft labels


def test_nway_centered_fails_on_hard_labels(rng):
    """002: s_iy >> mean(s_i) makes the centred loss vanish without s_iy being the largest score."""
    centered, hard = (
        get_loss("nway_softmax_cross_entropy", centered=True),
        get_loss("nway_softmax_cross_entropy"),
    )
    z = rng.normal(0, 1, (200, 5))
    y = rng.integers(0, 5, 200)
    rows = np.arange(200)
    other = (y + 1 + rng.integers(0, 4, 200)) % 5
    z[rows, y] = 40.0  # far above the row mean ...
    z[rows, other] = 45.0  # ... but another class is higher still
    assert np.all(z.argmax(1) != y)
    assert centered.loss(z, y, reduction="none").max() < 1e-6
    assert hard.loss(z, y, reduction="none").min() > 4.9  # the hard form sees the error (≈ 5)


# --------------------------------------------------------------------------------------
# Re-weighted square loss (App. E.1)
# --------------------------------------------------------------------------------------


def test_reweighting_under_penalises_high_predictions_of_low_scores():
    s = np.array([-3.0, 0.0, 3.0])  # the figure's observed scores; b = -3.5
    rw = get_loss("reweighted_square")
    selective = get_loss("pointwise", link="exp")  # high-score sensitivity
    lo, hi = np.array([-3.0]), np.array([3.0])

    def value(loss, pred, obs):
        return float(loss.bind(s).loss(np.where(s == obs[0], pred[0], s), reduction="sum"))

    # a low score predicted high costs no more than the same error downwards ...
    assert value(rw, hi, lo) == pytest.approx(value(rw, np.array([-9.0]), lo))
    # ... whereas the selective loss penalises the upward error far more
    assert value(selective, hi, lo) > 50 * value(selective, np.array([-9.0]), lo)
    # the pull back of a low score predicted high vs. of a high score predicted low
    g_rw = rw.bind(s).grad_hess(np.array([3.0, 0.0, -3.0]))[0]
    g_sel = selective.grad_hess(np.array([3.0, 0.0, -3.0]), s)[0]
    assert abs(g_rw[0] / g_rw[2]) == pytest.approx(0.5 / 6.5)  # (s_lo - b) / (s_hi - b)
    assert abs(g_sel[0] / g_sel[2]) == pytest.approx(1.0)  # h(ŝ) - h(s) is antisymmetric
    assert abs(g_rw[0] / g_rw[2]) < 0.1


@pytest.mark.parametrize("weighting", ["predicted", "both"])
def test_reweighting_by_prediction_loses_convexity(weighting):
    s = np.array([-3.0, 0.0, 3.0])
    loss = get_loss("reweighted_square", weighting=weighting)
    grid = np.linspace(-8.0, 8.0, 161)
    for obs in s:
        bound = loss.bind(np.array([obs, -3.0]))  # keep b = -3.5
        vals = np.array([float(bound.loss(np.array([p, -3.0]), reduction="sum")) for p in grid])
        second = vals[2:] - 2 * vals[1:-1] + vals[:-2]
        h = np.array([bound.grad_hess(np.array([p, -3.0]))[1][0] for p in grid])
        assert (second < -1e-9).any() and (h < 0).any()  # not convex
        np.testing.assert_allclose(second / (grid[1] - grid[0]) ** 2, h[1:-1], rtol=0.02, atol=0.05)
    # under-estimating the high score is rewarded: a negative loss below the loss at ŝ = s = 0
    assert loss.loss(np.array([-6.0, -3.0]), np.array([3.0, -3.0]), reduction="none")[0] < 0.0
    h_obs = get_loss("reweighted_square").grad_hess(
        grid,
        np.full(grid.size, 0.0),
    )[1]
    assert np.all(h_obs > 0)  # weighting by the observed score stays convex


def test_reweighted_optimal_constant():
    rng = np.random.default_rng(11)
    s = rng.uniform(-3, 3, 50)
    w = rng.uniform(0.5, 2, 50)
    for weighting in ("observed", "predicted", "both"):
        loss = get_loss("reweighted_square", weighting=weighting)
        c = loss.optimal_constant(s, w)
        g, h = loss.grad_hess(np.full(50, c), s, sample_weight=w)
        assert abs(g.sum()) < 1e-9 * np.abs(g).sum() + 1e-12 and h.sum() > 0
    with pytest.raises(ValueError, match="no local minimum"):
        get_loss("reweighted_square", weighting="predicted", delta=0.01).optimal_constant(
            np.array([-3.0, -3.0, 30.0])
        )


# --------------------------------------------------------------------------------------
# Optimal constants
# --------------------------------------------------------------------------------------

CLOSED_FORM = [
    "softmax_cross_entropy",
    "mean_squared_error",
    "softmax_cauchy_schwarz",
    "self_normalization",
    "nce",
    "binary_cross_entropy",
    "batch_cross_entropy",
    "nway_softmax_cross_entropy",
]


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_optimal_constant_zeroes_the_gradient(name, rng):
    loss = get_loss(name)
    n = 60
    y = rng.integers(0, K, n).astype(float) if loss.labels != "real" else rng.normal(0, 1, (n, K))
    if loss.labels == "probability":
        y = rng.uniform(0, 1, (n, K))
    w = None if loss.couples_samples else rng.uniform(0.5, 2.0, n)
    c = loss.optimal_constant(y, w, n_classes=K)
    assert c.shape == (K,)
    g, _ = loss.grad_hess(np.tile(c, (n, 1)), y, sample_weight=w)
    np.testing.assert_allclose(g.sum(0), 0.0, atol=1e-10)


def test_self_normalization_and_nce_constants_are_self_normalised(rng):
    y = rng.integers(0, 3, 100)
    for name in ("self_normalization", "nce"):
        c = get_loss(name).optimal_constant(y)
        np.testing.assert_allclose(np.exp(c), np.bincount(y) / 100, rtol=1e-12)


def test_batch_cross_entropy_constant_ignores_weights_within_a_batch(rng):
    y = rng.integers(0, 3, 40)
    loss = get_loss("batch_cross_entropy")
    c = loss.optimal_constant(y, rng.uniform(0.5, 2, 40))  # per-row weights average per batch
    np.testing.assert_allclose(c, loss.optimal_constant(y), rtol=1e-12)


def test_max_margin_constant_solves_the_linear_program(rng):
    optimize = pytest.importorskip("scipy.optimize")
    loss = get_loss("max_margin", margin=1.5)
    for _ in range(40):
        k = int(rng.integers(2, 6))
        counts = rng.multinomial(60, rng.dirichlet(np.ones(k) * rng.choice([0.2, 1.0])))
        y = np.repeat(np.arange(k), counts)
        pi = counts / 60
        c = loss.optimal_constant(y, n_classes=k)
        # LP: min Σ π_y ξ_y  s.t.  ξ_y >= γ - c_y + c_j (j != y), ξ >= 0
        rows, rhs = [], []
        for a in range(k):
            for j in range(k):
                if j != a:
                    r = np.zeros(2 * k)
                    r[j], r[a], r[k + a] = 1.0, -1.0, -1.0
                    rows.append(r)
                    rhs.append(-1.5)
        lp = optimize.linprog(
            np.r_[np.zeros(k), pi],
            A_ub=np.array(rows),
            b_ub=rhs,
            bounds=[(-20, 20)] * k + [(0, None)] * k,
        )
        mine = float(loss.loss(np.tile(c, (60, 1)), y, reduction="mean"))
        assert mine == pytest.approx(lp.fun, abs=1e-9)


@pytest.mark.parametrize(
    "name", [n for n in BASELINES if n not in CLOSED_FORM + ["max_margin", "reweighted_square"]]
)
def test_documented_zero_constants(name, rng):
    y = rng.integers(0, K, 30)
    c = get_loss(name).optimal_constant(y, n_classes=K)
    np.testing.assert_array_equal(c, np.zeros(K))


# --------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------

BAD_PARAMS = [
    ("multiclass_hinge", {"margin": 0.0}, ValueError, "margin"),
    ("multiclass_hinge", {"margin": "wide"}, TypeError, "margin"),
    ("max_margin", {"margin": -1.0}, ValueError, "margin"),
    ("batch_max_margin", {"margin": float("nan")}, ValueError, "margin"),
    ("self_normalization", {"alpha": 0.0}, ValueError, "alpha"),
    ("nce", {"n_noise": 0}, ValueError, "n_noise"),
    ("nce", {"n_noise": 1.5}, TypeError, "n_noise"),
    ("nce", {"noise": [0.5, 0.6]}, ValueError, "noise"),
    ("nce", {"noise": [1.0, 0.0]}, ValueError, "noise"),
    ("nce", {"noise": [[0.5, 0.5]]}, ValueError, "noise"),
    ("softmax_tanimoto", {"squared_norm": "yes"}, TypeError, "squared_norm"),
    ("nway_softmax_cross_entropy", {"centered": 1}, TypeError, "centered"),
    ("reweighted_square", {"weighting": "label"}, ValueError, "weighting"),
    ("reweighted_square", {"kappa": 0}, ValueError, "kappa"),
    ("reweighted_square", {"delta": -1}, ValueError, "delta"),
    ("nce", {"bogus": 1}, ValueError, "bad parameters"),
]


@pytest.mark.parametrize(("name", "params", "exc", "match"), BAD_PARAMS)
def test_bad_parameters(name, params, exc, match):
    with pytest.raises(exc, match=match):
        get_loss(name, **params)


def test_bad_inputs_name_what_was_expected(rng):
    z = rng.normal(0, 1, (4, 3))
    ce, hinge = get_loss("softmax_cross_entropy"), get_loss("multiclass_hinge")
    with pytest.raises(ValueError, match=r"`y_true`.*\[0, 3\).*holds 3"):
        ce.loss(z, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="`y_true` class indices"):
        ce.loss(z, np.array([0, -1, 2, 1]))
    with pytest.raises(ValueError, match="`y_true` class indices"):
        ce.loss(z, np.array([0, 1.5, 2, 1]))
    with pytest.raises(ValueError, match=r"`y_true`.*\(4, 3\).*\(4, 2\)"):
        ce.loss(z, np.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="`y_pred`.*4 rows"):
        ce.loss(z[:3], np.array([0, 1, 2, 1]))
    with pytest.raises(ValueError, match="`y_pred`.*2-D"):
        ce.loss(z[:, 0], np.array([0, 1, 2, 1]))
    with pytest.raises(ValueError, match="`y_true`.*sums to"):
        ce.loss(z, np.full((4, 3), 0.5))
    with pytest.raises(ValueError, match="`y_true`.*one-hot"):
        hinge.loss(z, np.full((4, 3), 1 / 3))
    with pytest.raises(ValueError, match="`y_true`.*values in \\{0, 1\\}"):
        get_loss("multilabel_softmax_cross_entropy").loss(z, np.full((4, 3), 0.5))
    with pytest.raises(ValueError, match="`y_true`.*values in \\[0, 1\\]"):
        get_loss("binary_cross_entropy").loss(z, np.full((4, 3), 2.0))
    with pytest.raises(ValueError, match="at least 2 classes"):
        hinge.loss(z[:, :1], np.zeros(4))
    with pytest.raises(ValueError, match="`noise` of NCE has 2 classes"):
        get_loss("nce", noise=[0.5, 0.5]).loss(z, np.array([0, 1, 2, 1]))
    with pytest.raises(ValueError, match="`sample_weight`"):
        ce.loss(z, np.array([0, 1, 2, 1]), sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="`group`"):
        get_loss("batch_cross_entropy").loss(z, np.array([0, 1, 2, 1]), group=[2, 3])
    with pytest.raises(ValueError, match="`y_true` must be finite"):
        ce.loss(z, np.array([0, np.nan, 2, 1]))
    with pytest.raises(ValueError, match="`y_true` of ReweightedSquare.*below `score_min`"):
        get_loss("reweighted_square", score_min=0.0).loss(np.zeros(3), np.array([-1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="`y_true` of ReweightedSquare must be a non-empty 1-D"):
        get_loss("reweighted_square").loss(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="`y_pred` and `y_true` must have the same shape"):
        get_loss("reweighted_square").loss(np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="`y_true` of NWaySoftmaxCrossEntropy must have the shape"):
        get_loss("nway_softmax_cross_entropy").loss(np.zeros((4, 2, 3)), np.zeros((4, 3)))
