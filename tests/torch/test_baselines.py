"""Torch baseline heads against slow plain-Python versions of their published definitions,
every head of the registry through the shared padding machinery, and CoreLoss against
every core loss (baselines included)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from selrank.losses import LOSSES, get_loss
from selrank.torch import (
    HEADS,
    ApproxNDCGLoss,
    CombinedLoss,
    CoreLoss,
    LambdaLoss,
    ListMLELoss,
    ListNetLoss,
    ListwiseLoss,
    RankNetLoss,
    SoftmaxCrossEntropyLoss,
    get_head,
)

from ._data import PAD, SIZES, WIDTH, mask_of, padded, t

# ---------------------------------------------------------------------------------------
# plain-Python references (one list at a time, straight from the papers' formulas)
# ---------------------------------------------------------------------------------------


def _lse(v):
    m = max(v)
    return m + math.log(sum(math.exp(x - m) for x in v))


def ref_softmax_ce(z, y):
    s = sum(y)
    if s == 0:
        return 0.0
    lse = _lse(z)
    return -sum(yi / s * (zi - lse) for zi, yi in zip(z, y))


def ref_listnet(z, y):
    lz, ly = _lse(z), _lse(y)
    return -sum(math.exp(yi - ly) * (zi - lz) for zi, yi in zip(z, y))


def ref_listmle(z, y):
    order = sorted(range(len(z)), key=lambda i: (-y[i], i))
    zs = [z[i] for i in order]
    return sum(_lse(zs[i:]) - zs[i] for i in range(len(zs)))


def _log1pexp(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def ref_ranknet(z, y, sigma=1.0):
    n = len(z)
    return sum(_log1pexp(-sigma * (z[a] - z[b])) for a in range(n) for b in range(n) if y[a] > y[b])


def _gains(y_sorted, y_all, k):
    ideal = sorted(y_all, reverse=True)
    if k is not None:
        ideal = ideal[:k]
    max_dcg = sum((2.0**g - 1.0) / math.log2(i + 2.0) for i, g in enumerate(ideal))
    return [(2.0**g - 1.0) / max_dcg if max_dcg > 0 else 0.0 for g in y_sorted]


def ref_lambdaloss(z, y, weighting="ndcg_loss2", k=None, sigma=1.0, mu=10.0):
    n = len(z)
    order = sorted(range(n), key=lambda i: (-z[i], i))
    zs, ys = [z[i] for i in order], [y[i] for i in order]
    G = _gains(ys, y, k)
    D = [math.log2(1.0 + r) for r in range(1, n + 1)]

    def w2(i, j):
        d = abs(i - j)
        return abs(1.0 / math.log2(1.0 + d) - 1.0 / math.log2(2.0 + d)) * abs(G[i] - G[j])

    def wl(i, j):
        return abs(1.0 / D[i] - 1.0 / D[j]) * abs(G[i] - G[j])

    total = 0.0
    for i in range(n):
        for j in range(n):
            if ys[i] <= ys[j] or (k is not None and (i >= k or j >= k)):
                continue
            w = {"ndcg_loss2": w2, "lambdarank": wl}.get(weighting)
            weight = w(i, j) if w else mu * w2(i, j) + wl(i, j)
            total += weight * _log1pexp(-sigma * (zs[i] - zs[j])) / math.log(2.0)
    return total


def ref_approxndcg(z, y, alpha=1.0):
    n = len(z)
    G = _gains(y, y, None)
    out = 0.0
    for i in range(n):
        pos = 1.0 + sum(1.0 / (1.0 + math.exp(-alpha * (z[j] - z[i]))) for j in range(n) if j != i)
        out += G[i] / math.log2(1.0 + pos)
    return -out


BASELINE_CASES = [
    ("softmax_ce", SoftmaxCrossEntropyLoss(), ref_softmax_ce),
    ("listnet", ListNetLoss(), ref_listnet),
    ("listmle-stable", ListMLELoss(ties="stable"), ref_listmle),
    ("ranknet", RankNetLoss(), ref_ranknet),
    ("ranknet-sigma2", RankNetLoss(sigma=2.0), lambda z, y: ref_ranknet(z, y, 2.0)),
    ("lambdaloss-ndcg2", LambdaLoss(), ref_lambdaloss),
    (
        "lambdaloss-lambdarank",
        LambdaLoss(weighting="lambdarank"),
        lambda z, y: ref_lambdaloss(z, y, "lambdarank"),
    ),
    (
        "lambdaloss-2pp-k3",
        LambdaLoss(weighting="ndcg_loss2pp", k=3),
        lambda z, y: ref_lambdaloss(z, y, "ndcg_loss2pp", 3),
    ),
    ("approxndcg", ApproxNDCGLoss(), ref_approxndcg),
    ("approxndcg-alpha3", ApproxNDCGLoss(alpha=3.0), lambda z, y: ref_approxndcg(z, y, 3.0)),
]


def test_every_torch_baseline_has_a_reference():
    names = {type(h).__name__ for _, h, _ in BASELINE_CASES}
    baselines = {
        cls.__name__ for name, cls in HEADS.items() if cls.__module__.endswith("baselines")
    }
    assert baselines <= names


def labelled_batch(rng, sizes=SIZES, width=WIDTH):
    n = int(sum(sizes))
    y_flat = rng.integers(0, 4, size=n).astype(np.float64)
    y_flat[:3] = 0.0  # the first list has no relevant item
    z_flat = 1.5 * rng.normal(size=n)
    z = padded(z_flat, sizes, width, fill=0.0)
    z[~mask_of(sizes, width)] = np.nan
    return z, padded(y_flat, sizes, width), z_flat, y_flat


@pytest.mark.parametrize(
    ("name", "head", "ref"), BASELINE_CASES, ids=[c[0] for c in BASELINE_CASES]
)
def test_baseline_matches_reference(name, head, ref, rng):
    for _ in range(5):
        z, y, z_flat, y_flat = labelled_batch(rng)
        zt = t(z, grad=True)
        out = head(zt, t(y), reduction="none")
        start = 0
        for b, m in enumerate(SIZES):
            want = (
                ref(list(z_flat[start : start + m]), list(y_flat[start : start + m])) if m else 0.0
            )
            assert out[b].item() == pytest.approx(want, rel=1e-9, abs=1e-12), (b, m)
            start += m
        out.sum().backward()
        assert torch.isfinite(zt.grad).all()
        assert torch.all(zt.grad[~torch.as_tensor(mask_of(SIZES))] == 0)


def _numeric_grad(fun, z, eps=1e-6):
    g = np.zeros_like(z)
    for i in range(z.size):
        d = np.zeros_like(z)
        d.flat[i] = eps
        g.flat[i] = (fun(z + d) - fun(z - d)) / (2 * eps)
    return g


@pytest.mark.parametrize(
    ("name", "head", "ref"), BASELINE_CASES, ids=[c[0] for c in BASELINE_CASES]
)
def test_baseline_gradient_matches_reference_differences(name, head, ref, rng):
    z = rng.normal(size=6)
    y = np.array([2.0, 0.0, 1.0, 3.0, 0.0, 1.0])
    zt = t(z[None], grad=True)
    head(zt, t(y[None]), reduction="sum").backward()
    want = _numeric_grad(lambda v: ref(list(v), list(y)), z)
    np.testing.assert_allclose(zt.grad[0].numpy(), want, rtol=1e-5, atol=1e-7)


def test_softmax_ce_leaves_out_lists_without_relevant_items():
    head = SoftmaxCrossEntropyLoss()
    z = torch.tensor([[1.0, 0.0], [0.5, 0.2]], dtype=torch.float64)
    y = torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    assert head(z, y).item() == pytest.approx(ref_softmax_ce([0.5, 0.2], [1.0, 0.0]))


def test_listmle_random_ties_are_reproducible_and_unbiased():
    head = ListMLELoss()
    z = torch.tensor([[0.0, 1.0]])
    y = torch.tensor([[1.0, 1.0]])
    torch.manual_seed(0)
    a = [head(z, y).item() for _ in range(200)]
    torch.manual_seed(0)
    assert a == [head(z, y).item() for _ in range(200)]
    values = set(round(v, 6) for v in a)
    assert values == {
        round(ref_listmle([0.0, 1.0], [1, 0]), 6),
        round(ref_listmle([1.0, 0.0], [1, 0]), 6),
    }


@pytest.mark.parametrize(
    "head",
    [LambdaLoss(), ApproxNDCGLoss(), SoftmaxCrossEntropyLoss()],
    ids=lambda h: type(h).__name__,
)
def test_gain_based_baselines_refuse_negative_labels(head):
    with pytest.raises(ValueError, match="non-negative"):
        head(torch.zeros(1, 3), torch.tensor([[1.0, -2.0, 0.0]]))


def test_baseline_parameters_are_validated():
    with pytest.raises(ValueError, match="sigma"):
        RankNetLoss(sigma=0.0)
    with pytest.raises(ValueError, match="weighting"):
        LambdaLoss(weighting="ndcg_loss3")
    with pytest.raises(ValueError, match="`k`"):
        LambdaLoss(k=0)
    with pytest.raises(ValueError, match="ties"):
        ListMLELoss(ties="first")
    with pytest.raises(TypeError, match="alpha"):
        ApproxNDCGLoss(alpha="one")


# ---------------------------------------------------------------------------------------
# every head of the registry: padding, extreme scores, precision
# ---------------------------------------------------------------------------------------

LIST_HEADS = sorted(n for n in HEADS if n not in ("multiclass", "combined"))


@pytest.mark.parametrize("name", LIST_HEADS)
def test_registry_head_masked_equals_sliced(name, rng):
    head = get_head(name, reduction="none")
    if name == "listmle":
        head = ListMLELoss(ties="stable", reduction="none")
    z, y, z_flat, y_flat = labelled_batch(rng)
    zt = t(z, grad=True)
    out = head(zt, t(y))
    out.sum().backward()
    start = 0
    for b, m in enumerate(SIZES):
        if m:
            zs = t(z_flat[start : start + m][None], grad=True)
            alone = head(zs, t(y_flat[start : start + m][None]))
            alone.sum().backward()
            part = out[b, :m] if head.unit == "item" else out[b]
            torch.testing.assert_close(part, alone[0], rtol=1e-12, atol=1e-14)
            torch.testing.assert_close(zt.grad[b, :m], zs.grad[0], rtol=1e-12, atol=1e-14)
        start += m


@pytest.mark.parametrize("name", LIST_HEADS)
def test_registry_head_padding_edge_cases(name, rng):
    head = get_head(name)
    z = torch.tensor(
        [[np.nan, -np.inf, 1e30], [0.3, 0.1, -np.inf]], dtype=torch.float64, requires_grad=True
    )
    y = torch.tensor([[PAD, PAD, PAD], [1.0, 0.0, PAD]], dtype=torch.float64)
    out = head(z, y, reduction="none")
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(z.grad).all()
    assert torch.all(out[0] == 0) and torch.all(z.grad[0] == 0) and z.grad[1, 2] == 0
    empty = torch.full((2, 3), 5.0, dtype=torch.float64, requires_grad=True)
    for reduction in ("mean", "sum"):
        val = head(empty, torch.full((2, 3), PAD, dtype=torch.float64), reduction=reduction)
        assert val.item() == 0.0
        val.backward()
        assert torch.all(empty.grad == 0)


@pytest.mark.parametrize("name", LIST_HEADS)
@pytest.mark.parametrize("scale", [1e2, 1e4])
def test_registry_head_extreme_scores(name, scale, rng):
    z = torch.as_tensor(
        np.sign(rng.normal(size=(3, 5))) * scale, dtype=torch.float32
    ).requires_grad_(True)
    y = torch.as_tensor(rng.integers(0, 3, size=(3, 5)), dtype=torch.float32)
    y[2, 3:] = PAD
    out = get_head(name)(z, y)
    out.backward()
    assert torch.isfinite(out) and torch.isfinite(z.grad).all()


@pytest.mark.parametrize("name", LIST_HEADS)
def test_registry_head_float32_matches_float64(name, rng):
    z, y, *_ = labelled_batch(rng)
    torch.manual_seed(1)
    a = get_head(name)(t(z), t(y))
    torch.manual_seed(1)
    b = get_head(name)(t(z, torch.float32), t(y, torch.float32))
    assert b.dtype == torch.float32
    assert b.item() == pytest.approx(a.item(), rel=1e-4, abs=1e-5)


# ---------------------------------------------------------------------------------------
# CoreLoss: every registered core loss on padded batches
# ---------------------------------------------------------------------------------------


def core_cases():
    """Every example of every registered loss except ``combined`` (tested as CombinedLoss)."""
    out = []
    for name, factory in sorted(LOSSES.items()):
        if name == "combined":
            continue
        for k, params in enumerate(getattr(factory, "examples", [{}])):
            out.append(pytest.param(name, params, id=f"{name}-{k}"))
    return out


def test_core_cases_cover_the_registry():
    covered = {c.values[0] for c in core_cases()} | {"combined"}
    assert covered == set(LOSSES)
    structures = {get_loss(c.values[0], **c.values[1]).structure for c in core_cases()}
    assert {"pointwise", "group", "multiclass"} <= structures


@pytest.mark.parametrize("params", LOSSES["combined"].examples, ids=lambda p: "+".join(p["losses"]))
def test_combined_core_loss_becomes_combined_head(params, rng):
    from ._data import list_batch

    loss = get_loss("combined", **params)
    head = get_head(loss)
    assert isinstance(head, CombinedLoss)
    z, y, mask, z_flat, y_flat = list_batch(loss.losses[0], rng)
    y = np.where(mask, np.round(np.abs(y)) % 4, PAD)  # graded labels every component accepts
    y_flat = y[mask]
    zt = t(z, grad=True)
    for reduction in ("mean", "sum"):
        out = head(zt, t(y), reduction=reduction)
        want = loss.loss(z_flat, y_flat, group=[m for m in SIZES if m], reduction=reduction)
        assert out.item() == pytest.approx(float(want), rel=1e-9)
    head(zt, t(y), reduction="sum").backward()
    real = torch.as_tensor(mask)
    grad = loss.grad_hess(z_flat, y_flat, group=[m for m in SIZES if m])[0]
    np.testing.assert_allclose(zt.grad[real].numpy(), grad, rtol=1e-8, atol=1e-10)
    assert torch.all(zt.grad[~real] == 0)
    with pytest.raises(ValueError, match="different units"):
        head(zt, t(y), reduction="none")


def test_combined_head_of_any_heads_and_partial_means(rng):
    from ._data import list_batch

    head = CombinedLoss([ListwiseLoss("exp"), "ranknet"], weights=[1.0, 0.25])
    z, y, mask, *_ = list_batch(get_loss("listwise"), rng)
    zt = t(z)
    total_sum = ListwiseLoss("exp")(zt, t(y), reduction="sum") + 0.25 * RankNetLoss()(
        zt, t(y), reduction="sum"
    )
    torch.testing.assert_close(head(zt, t(y), reduction="sum"), total_sum)
    want = total_sum / mask.any(axis=1).sum()  # the mean counts the first component's units
    torch.testing.assert_close(head(zt, t(y)), want)
    # two halves of a batch, each divided by the batch totals, add up to the batch mean
    total = head.total_weight(zt, t(y))
    halves = sum(
        head.partial_mean(zt[s], t(y[s]), total_weight=total) for s in (slice(0, 3), slice(3, None))
    )
    torch.testing.assert_close(halves, want)
    with pytest.raises(ValueError, match="weights"):
        CombinedLoss(["pointwise"], weights=[1.0, 2.0])


@pytest.mark.parametrize(("name", "params"), core_cases())
def test_core_loss_head_equals_core(name, params, rng):
    loss = get_loss(name, **params)
    head = CoreLoss(loss, reduction="none")
    if loss.structure == "multiclass":
        K, n = 4, 7
        z = rng.normal(size=(n, K))
        if getattr(loss, "target", "link") == "link":
            y = rng.integers(0, K, size=n).astype(np.float64)
            y[3] = PAD  # a padded row
            rows = y != PAD
        else:
            y = rng.normal(size=(n, K))
            rows = np.ones(n, dtype=bool)
        zt = t(z, grad=True)
        out = head(zt, t(y))
        want = loss.loss(z[rows], y[rows], reduction="none")
        got = (
            out.detach().numpy()
            if getattr(loss, "couples_samples", False)
            else out.detach().numpy()[rows]
        )
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        out.sum().backward()
        assert torch.isfinite(zt.grad).all() and torch.all(zt.grad[~torch.as_tensor(rows)] == 0)
        if not getattr(loss, "couples_samples", False):
            assert torch.all(out[~torch.as_tensor(rows)] == 0)
        np.testing.assert_allclose(
            zt.grad.numpy()[rows], loss.grad_hess(z[rows], y[rows])[0], rtol=1e-7, atol=1e-9
        )
        return
    from ._data import list_batch

    z, y, mask, z_flat, y_flat = list_batch(loss, rng)
    zt = t(z, grad=True)
    out = head(zt, t(y))
    group = None if loss.structure == "pointwise" else [m for m in SIZES if m]
    want = loss.loss(z_flat, y_flat, group=group, reduction="none")
    real = torch.as_tensor(mask)
    got = out[real] if loss.structure == "pointwise" else out[real.any(1)]
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-9, atol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(
        zt.grad[real].numpy(), loss.grad_hess(z_flat, y_flat, group=group)[0], rtol=1e-7, atol=1e-9
    )
    assert torch.all(zt.grad[~real] == 0)


def test_core_loss_head_reaches_baselines_by_name():
    head = get_head("multiclass_hinge")
    assert isinstance(head, CoreLoss)
    head = get_head("batch_cross_entropy", reduction="none")
    assert head.unit == "batch"
    out = head(torch.zeros(4, 3), torch.tensor([0, 1, 2, -1]))
    assert out.shape == (1,)
    assert isinstance(get_head("listwise"), ListwiseLoss)
    assert isinstance(get_head(get_loss("softmax_cross_entropy")), CoreLoss)


def test_core_loss_refuses_class_masks():
    head = CoreLoss("multiclass_hinge")
    y = torch.tensor([[1.0, 0.0, PAD]])
    with pytest.raises(ValueError, match="cannot mask single classes"):
        head(torch.zeros(1, 3), y)
