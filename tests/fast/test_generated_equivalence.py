"""Every fast path equals the generic definition: tests generated from ``selrank.fast.FAST_PATHS``.

For each registered entry and each example instance of every class it serves (the class's
``examples``; for entries that serve subclasses, every class of ``LINKS`` / ``SCALINGS`` it
serves), the fast copy is compared with the generic path — the same loss bound or head built
inside :func:`selrank.fast.off`, or the generic definition the entry names — on ordinary,
near-equal (the Taylor range), wide (beyond the caps) and extreme scores, in float32 and
float64. A new entry for an existing operation is tested here with no edit; a new operation
needs its harness in ``HARNESS`` (``test_every_operation_has_a_harness`` says so).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from selrank import fast
from selrank._groups import as_groups
from selrank.links import LINKS, Link
from selrank.losses import Pairwise, WeightedPairwise
from selrank.scalings import (
    SCALINGS,
    composite_softmax,
    composite_softmax_bregman,
    composite_softmax_hess_diag,
)

DTYPES = ["float32", "float64"]
REGIMES = ["normal", "near", "wide", "extreme"]


def _classes(entry) -> list[type]:
    """The concrete registered classes an entry serves."""
    if not entry.subclasses:
        return [entry.cls]
    pool = {*LINKS.values(), *SCALINGS.values()}
    return sorted(
        (c for c in pool if isinstance(c, type) and entry.serves(c)), key=lambda c: c.__name__
    )


def _instances(entry):
    out = []
    for cls in _classes(entry):
        for params in cls.examples:
            out.append(pytest.param(entry, cls, params, id=f"{cls.__name__}{params or ''}"))
    return out


CASES = [
    pytest.param(*p.values, id=f"{e.operation}-{e.backend}-{p.id}")
    for e in fast.FAST_PATHS.values()
    for p in _instances(e)
]


def _close(fast_out, generic_out, dtype, rtol64=1e-9, rtol32=2e-4, cancels=False, terms=1.0):
    """Equal to rounding: same finiteness, and relatively close where finite (scaled by the
    largest finite magnitude for the entries that cancel). ``cancels``: the values are
    differences of terms of magnitude ``terms`` that cancel (gradients at the targets), so
    their rounding error is absolute, a few ulps of ``terms`` per pair."""
    a = np.asarray(fast_out, dtype=np.float64)
    b = np.asarray(generic_out, dtype=np.float64)
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
    fin = np.isfinite(b)
    if not fin.any():
        return
    rtol = rtol64 if dtype == "float64" else rtol32
    scale = max(1.0, float(np.max(np.abs(b[fin]))))
    ulp = np.finfo(dtype).eps * max(1.0, terms)
    atol = max(64 * ulp, 1e-12 if dtype == "float64" else 1e-5) if cancels else rtol * 1e-3 * scale
    np.testing.assert_allclose(a[fin], b[fin], rtol=rtol, atol=atol)


def _scores(rng, n, regime, dtype):
    """Scores and targets of one regime (targets graded labels, or continuous)."""
    y = rng.integers(0, 4, size=n).astype(np.float64)
    if regime == "normal":
        z = rng.normal(size=n)
    elif regime == "near":  # the Taylor range of the loss: predictions at their targets
        z = y + 1e-7 * rng.normal(size=n)
    elif regime == "wide":  # differences beyond the default caps
        z = 25.0 * rng.normal(size=n)
    else:  # extreme: far beyond every cap, and a query whose range overflows e^x
        z = rng.normal(size=n)
        z[: n // 3] *= 400.0
        z[-1] = 60.0
    return z.astype(dtype), y


def _groups(rng, n_groups=12):
    sizes = rng.integers(1, 9, size=n_groups)
    sizes[2] = 1  # a query without pairs
    return sizes


# ---------------------------------------------------------------------------------------
# harnesses: one per (operation, backend)
# ---------------------------------------------------------------------------------------


def _pairwise_numba(obj, dtype, regime, rng):
    pytest.importorskip("numba")
    sizes = _groups(rng)
    z, y = _scores(rng, int(sizes.sum()), regime, "float64")
    w = rng.uniform(0.5, 2.0, size=y.size)
    for pairs in ("all", "distinct"):
        for method, m in (("all", None), ("topk", 2), ("mean", 2)):
            loss = Pairwise(obj, pairs=pairs, pair_method=method, num_pair_per_sample=m)
            bound = loss.bind(y, group=sizes, sample_weight=w)
            assert bound._kernel is not None  # the fast path is taken
            with fast.off():
                ref = loss.bind(y, group=sizes, sample_weight=w)
            assert ref._kernel is None
            with np.errstate(over="ignore", invalid="ignore"):
                g1, h1 = bound.grad_hess(z)
                g2, h2 = ref.grad_hess(z)
            _close(g1, g2, "float64", cancels=regime == "near")
            _close(h1, h2, "float64", cancels=regime == "near")
    _pairwise_head(obj, dtype, regime, rng)


def _pairwise_head(obj, dtype, regime, rng):
    """The torch pairwise head on CPU tensors: the numba kernel against its tensor path."""
    torch = pytest.importorskip("torch")
    from selrank.torch import PairwiseLoss

    tdtype = getattr(torch, dtype)
    z, y = _scores(rng, 6 * 7, regime, dtype)
    s = torch.as_tensor(z.reshape(6, 7))
    t = torch.as_tensor(y.reshape(6, 7), dtype=tdtype)
    mask = torch.arange(7)[None, :] < torch.as_tensor([7, 0, 1, 4, 5, 3])[:, None]
    for method, m in (("all", None), ("topk", 2)):
        head = PairwiseLoss(obj, pair_method=method, num_pair_per_sample=m)
        assert head.uses_kernel(s)
        with fast.off():
            ref = PairwiseLoss(obj, pair_method=method, num_pair_per_sample=m)
        assert not ref.uses_kernel(s)
        out = []
        for h in (head, ref):
            x = s.clone().requires_grad_(True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf in the extremes
                v = h(x, t, mask=mask, reduction="none")
                v.sum().backward()
            out.append((v.detach().numpy(), x.grad.numpy()))
        if regime == "extreme":  # losses of e^400 overflow either way; compare where finite
            keep = np.isfinite(out[1][0])
            out = [(v[keep], g[keep]) for v, g in out]
        # (the kernel works in float64: near the targets a float32 tensor path cancels terms
        # as large as the link at the largest target difference)
        terms = float(np.max(np.abs(obj.h(np.array([-3.0, 3.0])))))
        _close(out[0][0], out[1][0], dtype, cancels=regime == "near", terms=terms)
        _close(out[0][1], out[1][1], dtype, cancels=regime == "near", terms=terms)


def _weighted_pairwise_numba(obj, dtype, regime, rng):
    pytest.importorskip("numba")
    sizes = _groups(rng)
    z, y = _scores(rng, int(sizes.sum()), regime, "float64")
    for method, m in (("all", None), ("topk", 3), ("mean", 2)):
        loss = WeightedPairwise(obj, pair_method=method, num_pair_per_sample=m)
        bound = loss.bind(y, group=sizes)
        assert bound._kernel is not None
        with fast.off():
            ref = loss.bind(y, group=sizes)
        assert ref._kernel is None
        with np.errstate(over="ignore", invalid="ignore"):
            g1, h1 = bound.grad_hess(z)
            g2, h2 = ref.grad_hess(z)
        # near the targets the lambdarank norm log2(1 + T) / T has T = sum |g| ~ 1e-7: 1 + T
        # rounds to eps / T relative in both paths, which do not round T alike
        rtol = 1e-6 if regime == "near" else 1e-9
        _close(g1, g2, "float64", rtol64=rtol, cancels=regime == "near")
        _close(h1, h2, "float64", rtol64=rtol, cancels=regime == "near")


def _link_tensors(obj, dtype, regime, rng):
    torch = pytest.importorskip("torch")
    z, y = _scores(rng, 600, regime, dtype)
    if regime != "near":
        y = y + rng.normal(size=y.size)  # continuous targets
    y = y.astype(dtype)
    # targets inside the link's domain (the Taylor and direct forms both meet real pairs)
    zt = torch.as_tensor(z).reshape(20, 30).contiguous()
    yt = torch.as_tensor(y).reshape(20, 30).contiguous()
    return torch, zt, yt


def _bregman_grad(obj, dtype, regime, rng, entry):
    torch, z, y = _link_tensors(obj, dtype, regime, rng)
    if entry.backend == "numba":
        pytest.importorskip("numba")
    fn = entry.load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = fn(obj, z.clone(), y.clone())
        ref = Link.bregman_grad(obj, z.clone(), y.clone())  # bregman() and h(): the definition
    if out is None:  # outside the entry's runtime conditions (alpha, beta, caps): none taken
        assert entry.condition
        return
    for a, b in zip(out, ref):
        assert a.dtype == b.dtype and a.shape == b.shape
        _close(a.numpy(), b.numpy(), dtype, rtol64=1e-12, rtol32=1e-5)


def _bregman_grad_numba(obj, dtype, regime, rng):
    _bregman_grad(obj, dtype, regime, rng, fast.lookup(obj, "bregman_grad", "numba"))


def _bregman_grad_torch(obj, dtype, regime, rng):
    _bregman_grad(obj, dtype, regime, rng, fast.lookup(obj, "bregman_grad", "torch"))


def _softmax_numpy(obj, dtype, regime, rng):
    sizes = _groups(rng)
    z, _ = _scores(rng, int(sizes.sum()), regime if regime != "extreme" else "wide", dtype)
    groups = as_groups(sizes, n_rows=z.size)
    fn = fast.lookup(obj, "composite_softmax", "numpy").load()
    for gamma in (1.0, 0.5):
        with np.errstate(over="ignore", invalid="ignore"):
            h, hess = fn(obj, gamma, z, groups)
            parts = composite_softmax(obj, gamma, z, groups)
            ref_hess = composite_softmax_hess_diag(parts, gamma)
        _close(h, parts["h"], dtype, rtol64=1e-12, rtol32=1e-5)
        _close(hess, ref_hess, dtype, rtol64=1e-12, rtol32=1e-5)


def _softmax_torch(obj, dtype, regime, rng):
    torch = pytest.importorskip("torch")
    from selrank.torch._masking import MaskedLists

    z, y = _scores(rng, 8 * 9, regime if regime != "extreme" else "wide", dtype)
    z = torch.as_tensor(z.reshape(8, 9))
    y = torch.as_tensor(y.reshape(8, 9), dtype=z.dtype)
    if regime == "near":
        z = y + 1e-7  # every list in the Taylor range: the fast path steps aside
    fn = fast.lookup(obj, "composite_softmax", "torch").load()
    full = torch.ones(8, 9, dtype=torch.bool)
    padded = torch.arange(9)[None, :] < torch.as_tensor([9, 1, 4, 9, 2, 7, 3, 9])[:, None]
    for valid in (full, padded):
        zz = torch.where(valid, z, z[:, :1])  # padding repeats a real entry (neutralized)
        yy = torch.where(valid, y, y[:, :1])
        lists = MaskedLists(valid, neutralized=True)
        for gamma in (1.0, 0.5):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out = fn(obj, gamma, zz.clone(), yy.clone(), lists, True)
                pz = composite_softmax(obj, gamma, zz, lists)
                py = composite_softmax(obj, gamma, yy, lists)
                values = composite_softmax_bregman(obj, gamma, zz, yy, lists, pz, py)
            if out is None:  # a list in the Taylor range: the generic path runs instead
                assert regime == "near" or not obj.smooth
                continue
            grad = (pz["h"] - py["h"]) * valid
            _close(out[0].numpy(), values.numpy(), dtype, rtol64=1e-12, rtol32=1e-5)
            _close((out[1] * valid).numpy(), grad.numpy(), dtype, rtol64=1e-12, rtol32=1e-5)


HARNESS = {
    ("pairwise", "numba"): _pairwise_numba,
    ("weighted_pairwise", "numba"): _weighted_pairwise_numba,
    ("bregman_grad", "numba"): _bregman_grad_numba,
    ("bregman_grad", "torch"): _bregman_grad_torch,
    ("composite_softmax", "numpy"): _softmax_numpy,
    ("composite_softmax", "torch"): _softmax_torch,
}


def test_every_operation_has_a_harness():
    missing = {(p.operation, p.backend) for p in fast.FAST_PATHS.values()} - set(HARNESS)
    assert not missing, f"add a harness to tests/fast for {sorted(missing)}"


def test_every_entry_serves_at_least_one_registered_class():
    for entry in fast.FAST_PATHS.values():
        assert _classes(entry), entry


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("entry,cls,params", CASES)
def test_fast_equals_generic(entry, cls, params, dtype, rng):
    obj = cls(**params)
    assert fast.lookup(obj, entry.operation, entry.backend) is entry
    with warnings.catch_warnings():
        warnings.simplefilter("error", fast.FastPathWarning)  # a registered class: no warning
        for regime in REGIMES:
            HARNESS[(entry.operation, entry.backend)](obj, dtype, regime, rng)
