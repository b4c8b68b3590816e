"""Selective heads against the core losses: values, closed-form gradients, padding, weights,
reductions, precision, autocast, extreme scores, distillation and bad input.

Every example of every selective core loss is a case (built from the registries, so a new
example is tested the moment it is added)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from selrank.losses import CompositeSoftmax, Decomposed, Listwise, Pairwise, Pointwise
from selrank.torch import (
    ListwiseLoss,
    MulticlassLoss,
    PairwiseLoss,
    PointwiseLoss,
    get_head,
    head_for,
)
from selrank.torch.heads import is_odd

from ._data import PAD, SIZES, WIDTH, class_batch, list_batch, selective_cases, t

CASES = selective_cases()
LIST_CASES = [c for c in CASES if not isinstance(c[1], CompositeSoftmax | Decomposed)]
CLASS_CASES = [c for c in CASES if isinstance(c[1], CompositeSoftmax | Decomposed)]
REAL = [m for m in SIZES if m]


def ids(cases):
    return [c[0] for c in cases]


def test_cases_cover_every_family():
    kinds = {type(c[1]) for c in CASES}
    assert kinds == {Pointwise, Pairwise, Listwise, CompositeSoftmax, Decomposed}
    assert sum(isinstance(c[1], Listwise) and c[1].target == "link" for c in CASES) >= 1
    assert any(not is_odd(c[1].link) for c in CASES if isinstance(c[1], Pairwise))
    assert any(is_odd(c[1].link) for c in CASES if isinstance(c[1], Pairwise))


def core_reference(loss, z_flat, y_flat):
    """Per-unit values (items or lists) and the gradient of their sum, from the core on NumPy."""
    group = None if isinstance(loss, Pointwise) else REAL
    vals = np.asarray(loss.loss(z_flat, y_flat, group=group, reduction="none"))
    grad = np.asarray(loss.grad_hess(z_flat, y_flat, group=group)[0])
    return vals, grad


@pytest.mark.parametrize(("name", "loss"), LIST_CASES, ids=ids(LIST_CASES))
@pytest.mark.parametrize("grad", ["analytic", "autograd"])
def test_head_equals_core(name, loss, grad, rng):
    head = head_for(loss, reduction="none", grad=grad)
    z, y, mask, z_flat, y_flat = list_batch(loss, rng)
    zt = t(z, grad=True)
    out = head(zt, t(y))
    vals, core_grad = core_reference(loss, z_flat, y_flat)
    real = torch.as_tensor(mask)
    if head.unit == "item":
        np.testing.assert_allclose(out[real].detach().numpy(), vals, rtol=1e-9, atol=1e-12)
        assert torch.all(out[~real] == 0)
    else:
        nonempty = real.any(dim=1)
        np.testing.assert_allclose(out[nonempty].detach().numpy(), vals, rtol=1e-9, atol=1e-12)
        assert torch.all(out[~nonempty] == 0)
    out.sum().backward()
    g = zt.grad
    assert torch.isfinite(g).all()
    np.testing.assert_allclose(g[real].numpy(), core_grad, rtol=1e-8, atol=1e-10)
    assert torch.all(g[~real] == 0)


@pytest.mark.parametrize(("name", "loss"), CLASS_CASES, ids=ids(CLASS_CASES))
@pytest.mark.parametrize("grad", ["analytic", "autograd"])
def test_multiclass_head_equals_core(name, loss, grad, rng):
    head = head_for(loss, reduction="none", grad=grad)
    assert isinstance(head, MulticlassLoss)
    z, y = class_batch(loss, rng)
    zt = t(z, grad=True)
    out = head(zt, t(y))
    np.testing.assert_allclose(
        out.detach().numpy(), loss.loss(z, y, reduction="none"), rtol=1e-9, atol=1e-12
    )
    out.sum().backward()
    np.testing.assert_allclose(zt.grad.numpy(), loss.grad_hess(z, y)[0], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(("name", "loss"), CLASS_CASES, ids=ids(CLASS_CASES))
def test_multiclass_masked_classes_equal_sliced(name, loss, rng):
    """Masking classes of a row = evaluating the core on the remaining classes only."""
    if loss.target == "link":
        pytest.skip("class indices mark whole rows; class masks need [n, K] targets")
    head = head_for(loss, reduction="none")
    z, y = class_batch(loss, rng, n=3)
    keep = np.array(
        [[True, True, True, True], [True, False, True, False], [False, False, False, False]]
    )
    zt = t(z, grad=True)
    out = head(zt, t(y), mask=torch.as_tensor(keep))
    out.sum().backward()
    for r in range(2):
        k = keep[r]
        ref = loss.loss(z[r : r + 1, k], y[r : r + 1, k], reduction="none")
        np.testing.assert_allclose(out[r].item(), ref[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(
            zt.grad[r, k].numpy(),
            loss.grad_hess(z[r : r + 1, k], y[r : r + 1, k])[0][0],
            rtol=1e-8,
            atol=1e-10,
        )
    assert (
        out[2] == 0
        and torch.all(zt.grad[2] == 0)
        and torch.all(zt.grad[1, ~torch.as_tensor(keep[1])] == 0)
    )


def test_class_indices_skip_sentinel_rows():
    head = MulticlassLoss("composite_softmax", scaling="constant", target="link", reduction="none")
    z = torch.tensor([[2.0, 0.0, -1.0], [9.0, 9.0, 9.0]], requires_grad=True)
    out = head(z, torch.tensor([0, -1]))
    ce = torch.nn.functional.cross_entropy(z[:1], torch.tensor([0]))
    assert torch.isclose(out[0], ce) and out[1] == 0
    out.sum().backward()
    assert torch.all(z.grad[1] == 0)
    with pytest.raises(ValueError, match="class indices of MulticlassLoss must be integers"):
        head(z, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="target='link'"):
        MulticlassLoss("composite_softmax")(z, torch.tensor([0, 1]))


@pytest.mark.parametrize(("name", "loss"), LIST_CASES, ids=ids(LIST_CASES))
def test_three_padding_conventions_agree(name, loss, rng):
    z, y, mask, *_ = list_batch(loss, rng)
    head = head_for(loss, reduction="none")
    lengths = torch.as_tensor(mask.sum(axis=1))
    by_sentinel = head(t(z), t(y))
    by_mask = head(t(z), t(np.where(mask, y, 123.0)), mask=torch.as_tensor(mask))
    by_lengths = head(t(z), t(np.where(mask, y, 7.0)), lengths=lengths)
    torch.testing.assert_close(by_sentinel, by_mask, rtol=0, atol=0)
    torch.testing.assert_close(by_sentinel, by_lengths, rtol=0, atol=0)


@pytest.mark.parametrize(("name", "loss"), LIST_CASES, ids=ids(LIST_CASES))
def test_masked_equals_sliced(name, loss, rng):
    """Each list of a padded batch scores as if it were alone and unpadded."""
    z, y, mask, z_flat, y_flat = list_batch(loss, rng)
    head = head_for(loss, reduction="none")
    zt = t(z, grad=True)
    out = head(zt, t(y))
    out.sum().backward()
    start = 0
    for b, m in enumerate(SIZES):
        if m == 0:
            assert float(out[b].detach().abs().sum()) == 0.0
            continue
        zs = t(z_flat[start : start + m][None, :], grad=True)
        alone = head(
            zs, t(y_flat[start : start + m][None, :]), mask=torch.ones(1, m, dtype=torch.bool)
        )
        alone.sum().backward()
        if head.unit == "item":
            torch.testing.assert_close(out[b, :m], alone[0], rtol=1e-12, atol=1e-14)
        else:
            torch.testing.assert_close(out[b], alone[0], rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(zt.grad[b, :m], zs.grad[0], rtol=1e-12, atol=1e-14)
        start += m


@pytest.mark.parametrize(("name", "loss"), CASES, ids=ids(CASES))
def test_fully_padded_lists_and_batches(name, loss, rng):
    head = head_for(loss)
    if isinstance(loss, CompositeSoftmax | Decomposed):
        z = torch.full((2, 4), 1e30, dtype=torch.float64, requires_grad=True)
        y = torch.full((2, 4), PAD, dtype=torch.float64)
    else:
        z = torch.tensor([[np.nan, -np.inf, 1e30]], dtype=torch.float64, requires_grad=True)
        y = torch.full((1, 3), PAD, dtype=torch.float64)
    for reduction in ("mean", "sum", "none"):
        out = head(z, y, reduction=reduction)
        assert torch.all(out == 0)
        z.grad = None
        out.sum().backward()
        assert torch.all(z.grad == 0)


@pytest.mark.parametrize(("name", "loss"), LIST_CASES, ids=ids(LIST_CASES))
def test_weights_and_reductions(name, loss, rng):
    z, y, mask, *_ = list_batch(loss, rng)
    head = head_for(loss)
    real = torch.as_tensor(mask)
    none = head(t(z), t(y), reduction="none")
    total = head(t(z), t(y), reduction="sum")
    torch.testing.assert_close(total, none.sum())
    units = real if head.unit == "item" else real.any(dim=1)
    torch.testing.assert_close(head(t(z), t(y)), total / units.sum())
    # per-list weights scale each list's items (item heads) or the list (list heads)
    w_list = torch.as_tensor(rng.uniform(0.5, 2.0, size=len(SIZES)))
    wl = head(t(z), t(y), sample_weight=w_list, reduction="none")
    expect = none * (w_list[:, None] if head.unit == "item" else w_list)
    torch.testing.assert_close(wl, expect)
    w_units = (w_list[:, None] * real) if head.unit == "item" else w_list * units
    torch.testing.assert_close(head(t(z), t(y), sample_weight=w_list), expect.sum() / w_units.sum())
    # per-item weights: exact for item heads, averaged over a list's real items for list heads
    w_item = torch.as_tensor(rng.uniform(0.5, 2.0, size=(len(SIZES), WIDTH)))
    wi = head(t(z), t(y), sample_weight=w_item, reduction="none")
    if head.unit == "item":
        torch.testing.assert_close(wi, none * w_item * real)
    else:
        mean_w = (w_item * real).sum(1) / real.sum(1).clamp_min(1)
        torch.testing.assert_close(wi, none * mean_w)


@pytest.mark.parametrize(("name", "loss"), LIST_CASES, ids=ids(LIST_CASES))
def test_zero_at_target_and_nonnegative(name, loss, rng):
    z, y, mask, *_ = list_batch(loss, rng)
    head = head_for(loss, reduction="none")
    out = head(t(z), t(y))
    assert torch.all(out >= 0)
    if loss.target == "score":
        yt = t(np.where(mask, y, 0.0), grad=True)
        at = head(yt, t(y))
        at.sum().backward()
        assert float(at.detach().abs().max()) < 1e-12
        assert float(yt.grad.abs().max()) < 1e-12


@pytest.mark.parametrize(("name", "loss"), CASES, ids=ids(CASES))
def test_float32_matches_float64(name, loss, rng):
    if isinstance(loss, CompositeSoftmax | Decomposed):
        z, y = class_batch(loss, rng)
    else:
        z, y, *_ = list_batch(loss, rng)
    head = head_for(loss)
    z64, z32 = t(z, grad=True), t(z, torch.float32, grad=True)
    v64, v32 = head(z64, t(y)), head(z32, t(y, torch.float32))
    assert v32.dtype == torch.float32
    (v64 + v32).backward()
    torch.testing.assert_close(v32.double(), v64, rtol=2e-4, atol=2e-5)
    torch.testing.assert_close(z32.grad.double(), z64.grad, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize(("name", "loss"), CASES, ids=ids(CASES))
@pytest.mark.parametrize("scale", [1e2, 1e4, 1e6])
def test_extreme_scores_stay_finite(name, loss, scale, rng):
    if isinstance(loss, Pointwise) and loss.link.domain != (-math.inf, math.inf):
        pytest.skip("scores outside a bounded link domain are not defined")
    if isinstance(loss, CompositeSoftmax | Decomposed):
        z, y = class_batch(loss, rng)
    else:
        z, y, *_ = list_batch(loss, rng)
    z = np.where(np.isfinite(z), np.sign(rng.normal(size=z.shape)) * scale, z)
    zt = t(z, torch.float32, grad=True)
    out = head_for(loss)(zt, t(y, torch.float32))
    out.backward()
    assert torch.isfinite(out)
    assert torch.isfinite(zt.grad).all()


def _autocast_run(head, dtype, rng, top: float):
    """A linear layer under autocast whose half-precision scores reach +-``top``."""
    x = rng.normal(size=(4, 6, 3))
    x *= top / np.abs(x.sum(-1)).max()
    x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 4, size=(4, 6)), dtype=torch.float32)
    y[1, 4:] = PAD
    lin = torch.nn.Linear(3, 1)
    with torch.no_grad():
        lin.weight.fill_(1.0)
        lin.bias.zero_()
    with torch.autocast("cpu", dtype=dtype):
        scores = lin(x).squeeze(-1)
        assert scores.dtype == dtype
        out = head(scores, y)
    out.backward()
    return scores, out, lin.weight.grad


HALF_HEADS = {
    "listwise-exp": ListwiseLoss("exp"),
    "pairwise-sinh": PairwiseLoss(),
    "pointwise-exp": PointwiseLoss("exp"),
    "listwise-smelu": ListwiseLoss("smelu"),
    "listwise-constant": ListwiseLoss("constant"),
    "pointwise-sigmoid": PointwiseLoss("sigmoid"),
    "pairwise-flat-sinh": PairwiseLoss("sinh", cap=3.0, cap_mode="flat"),
}
BOUNDED = ["listwise-smelu", "listwise-constant", "pointwise-sigmoid", "pairwise-flat-sinh"]


@pytest.mark.parametrize("name", sorted(HALF_HEADS))
def test_autocast_bfloat16_large_scores(name, rng):
    """Scores in the hundreds (e^score overflows bfloat16, float16 and float32): the head
    computes in float32 and log space, and the gradient fits bfloat16's range."""
    scores, out, grad = _autocast_run(HALF_HEADS[name], torch.bfloat16, rng, top=300.0)
    assert float(scores.detach().abs().max()) > 100
    assert out.dtype == torch.float32 and torch.isfinite(out)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("name", BOUNDED)
def test_autocast_float16_large_scores_bounded_links(name, rng):
    """float16 (max 65504): heads whose link is bounded have bounded gradients, so scores in
    the hundreds stay finite end to end. (An exp link's gradient e^score cannot fit float16:
    use bfloat16 or a flat cap there; see docs/torch.md.)"""
    scores, out, grad = _autocast_run(HALF_HEADS[name], torch.float16, rng, top=300.0)
    assert float(scores.detach().abs().max()) > 100
    assert out.dtype == torch.float32 and torch.isfinite(out)
    assert torch.isfinite(grad).all()


@pytest.mark.parametrize("name", sorted(HALF_HEADS))
def test_autocast_float16_moderate_scores(name, rng):
    """Every head under float16 autocast with scores up to 10, where the double exponential
    e^(e^score) of the exp composite softmax overflows float16 and float32 alike."""
    scores, out, grad = _autocast_run(HALF_HEADS[name], torch.float16, rng, top=10.0)
    assert float(scores.detach().abs().max()) > 9.9
    assert torch.isfinite(out) and torch.isfinite(grad).all()


def test_half_scores_get_float32_loss_and_half_gradient():
    z = torch.tensor([[1.0, 2.0, -1.0]], dtype=torch.float16, requires_grad=True)
    out = ListwiseLoss("exp")(z, torch.tensor([[1.0, 0.0, 2.0]]))
    assert out.dtype == torch.float32
    out.backward()
    assert z.grad.dtype == torch.float16 and torch.isfinite(z.grad).all()


def test_distillation_smelu_clips_low_teacher_scores(rng):
    """Teacher scores below the SmeLU band all have q = 0: changing them changes nothing."""
    head = ListwiseLoss("smelu", c=1.0, reduction="sum")
    teacher = torch.tensor([[3.0, 0.5, -2.0, -5.0, -1.5]], dtype=torch.float64)
    other = teacher.clone()
    other[0, 2:] = torch.tensor([-9.0, -1.1, -30.0])  # still below -c = -1
    z = torch.as_tensor(rng.normal(size=(1, 5)), dtype=torch.float64)
    z1, z2 = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    head(z1, teacher, mask=torch.ones(1, 5, dtype=torch.bool)).backward()
    head(z2, other, mask=torch.ones(1, 5, dtype=torch.bool)).backward()
    torch.testing.assert_close(z1.grad, z2.grad, rtol=0, atol=0)
    # ... while moving a teacher score inside the band does change the gradient
    moved = teacher.clone()
    moved[0, 1] = 0.9
    z3 = z.clone().requires_grad_(True)
    head(z3, moved, mask=torch.ones(1, 5, dtype=torch.bool)).backward()
    assert not torch.allclose(z3.grad, z1.grad)
    # a teacher score equal to the sentinel needs padding_value=None (issue 18: with the
    # default sentinel a mask marking it real is refused as a likely inverted mask)
    sentinel = torch.full((1, 5), -1.0, dtype=torch.float64)
    with pytest.raises(ValueError, match="padding value -1.0"):
        head(z, sentinel, mask=torch.ones(1, 5, dtype=torch.bool))
    plain = ListwiseLoss("smelu", c=1.0, reduction="sum", padding_value=None)
    assert torch.isfinite(plain(z, sentinel, mask=torch.ones(1, 5, dtype=torch.bool)))


def test_distillation_soft_link_targets():
    """target="link": per-list teacher distributions; the loss is gamma * KL."""
    head = ListwiseLoss("constant", target="link", reduction="none")
    p = torch.tensor([[0.7, 0.2, 0.1, -1.0]], dtype=torch.float64)
    z = torch.tensor([[1.0, 0.0, -1.0, 5.0]], dtype=torch.float64)
    q = torch.softmax(z[:, :3], -1)
    kl = (p[:, :3] * (p[:, :3] / q).log()).sum()
    torch.testing.assert_close(head(z, p)[0], kl)
    with pytest.raises(ValueError, match="sum to alpha"):
        head(z, torch.tensor([[0.7, 0.2, 0.2, -1.0]], dtype=torch.float64))


def test_pairwise_chunks_do_not_change_the_result(rng):
    loss = Pairwise()
    z, y, *_ = list_batch(loss, rng)
    whole = PairwiseLoss(loss, reduction="none")
    chunked = PairwiseLoss(loss, reduction="none", chunk_pairs=1)
    a, b = t(z, grad=True), t(z, grad=True)
    va, vb = whole(a, t(y)), chunked(b, t(y))
    torch.testing.assert_close(va, vb)
    va.sum().backward()
    vb.sum().backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_analytic_backward_is_cheaper_than_autograd_graph(rng):
    """The analytic head keeps one gradient tensor, not the graph of the loss value."""
    z = torch.as_tensor(rng.normal(size=(8, 50))).requires_grad_(True)
    y = torch.as_tensor(rng.integers(0, 4, size=(8, 50)), dtype=torch.float64)
    out = ListwiseLoss("exp")(z, y)
    node = out.grad_fn
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(f for f, _ in n.next_functions)
    # the fused path ("mean"/"sum"): one node for the loss and its gradient
    assert any("FusedGradient" in type(n).__name__ for n in seen)
    assert len(seen) < 15
    out = ListwiseLoss("exp", reduction="none")(z, y)
    seen, stack = set(), [out.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(f for f, _ in n.next_functions)
    assert any("ClosedFormGradient" in type(n).__name__ for n in seen)
    assert len(seen) < 15


def test_double_backward_with_autograd_mode():
    z = torch.tensor([[0.3, -0.2, 1.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[1.0, 0.0, 2.0]], dtype=torch.float64)
    head = ListwiseLoss("exp", grad="autograd")
    (g,) = torch.autograd.grad(head(z, y), z, create_graph=True)
    (hv,) = torch.autograd.grad(g.sum(), z)
    assert torch.isfinite(hv).all()


def test_pairwise_odd_detection():
    assert PairwiseLoss().odd
    assert PairwiseLoss("identity").odd
    assert not PairwiseLoss("identity", beta=0.5).odd
    assert not PairwiseLoss("sigmoid").odd
    assert not PairwiseLoss("sinh", cap=(-1.0, 2.0)).odd


def test_heads_accept_ready_core_losses_and_refuse_wrong_ones():
    assert ListwiseLoss(Listwise("sigmoid")).core == Listwise("sigmoid")
    with pytest.raises(TypeError, match="needs a Listwise"):
        ListwiseLoss(Pairwise())
    with pytest.raises(TypeError, match="CompositeSoftmax or Decomposed"):
        MulticlassLoss("listwise")


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda h: h([[0.0, 1.0]], torch.zeros(1, 2)), TypeError, "must be a torch.Tensor"),
        (
            lambda h: h(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2)),
            TypeError,
            "floating",
        ),
        (lambda h: h(torch.zeros(2), torch.zeros(2)), ValueError, "2-D"),
        (
            lambda h: h(torch.zeros(1, 2), torch.zeros(1, 3)),
            ValueError,
            r"same shape; got \(1, 2\) and \(1, 3\)",
        ),
        (lambda h: h(torch.zeros(1, 2), "abc"), TypeError, "numeric"),
        (
            lambda h: h(
                torch.zeros(1, 2), torch.zeros(1, 2), mask=torch.ones(1, 3, dtype=torch.bool)
            ),
            ValueError,
            "`mask` must have",
        ),
        (
            lambda h: h(torch.zeros(1, 2), torch.zeros(1, 2), mask=torch.ones(1, 2)),
            TypeError,
            "boolean",
        ),
        (lambda h: h(torch.zeros(1, 2), torch.zeros(1, 2), lengths=[3]), ValueError, r"\[0, 2\]"),
        (
            lambda h: h(torch.zeros(1, 2), torch.zeros(1, 2), lengths=[1, 1]),
            ValueError,
            r"shape \(1,\)",
        ),
        (
            lambda h: h(
                torch.zeros(1, 2),
                torch.zeros(1, 2),
                lengths=[1],
                mask=torch.ones(1, 2, dtype=torch.bool),
            ),
            ValueError,
            "at most one",
        ),
        (lambda h: h(torch.zeros(1, 2), torch.tensor([[0.0, float("nan")]])), ValueError, "finite"),
        (
            lambda h: h(torch.zeros(1, 2), torch.zeros(1, 2), sample_weight=torch.ones(3)),
            ValueError,
            "sample_weight",
        ),
        (
            lambda h: h(torch.zeros(1, 2), torch.zeros(1, 2), sample_weight=-torch.ones(1)),
            ValueError,
            "non-negative",
        ),
        (
            lambda h: h(torch.zeros(1, 2), torch.zeros(1, 2), reduction="avg"),
            ValueError,
            "reduction",
        ),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call(ListwiseLoss())


def test_bad_construction():
    with pytest.raises(ValueError, match="reduction"):
        ListwiseLoss(reduction="avg")
    with pytest.raises(ValueError, match="grad"):
        PointwiseLoss(grad="numeric")
    with pytest.raises(TypeError, match="padding_value"):
        PairwiseLoss(padding_value="x")
    with pytest.raises(ValueError, match="chunk_pairs"):
        PairwiseLoss(chunk_pairs=0)
    with pytest.raises(ValueError, match="domain"):
        PointwiseLoss("logit")(torch.full((1, 2), 0.5), torch.tensor([[0.5, 2.0]]))
    with pytest.raises(ValueError, match="unknown head"):
        get_head("lambdamart")
    with pytest.raises(ValueError, match="bad parameters"):
        get_head("ranknet", alpha=1.0)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "loss"), CASES, ids=ids(CASES))
def test_cuda_matches_cpu(name, loss, rng):
    if isinstance(loss, CompositeSoftmax | Decomposed):
        z, y = class_batch(loss, rng)
    else:
        z, y, *_ = list_batch(loss, rng)
    head = head_for(loss)
    zc, zg = t(z, grad=True), t(z).cuda().requires_grad_(True)
    vc, vg = head(zc, t(y)), head(zg, t(y).cuda())
    (vc + vg.cpu()).backward()
    torch.testing.assert_close(vg.cpu(), vc)
    torch.testing.assert_close(zg.grad.cpu(), zc.grad)
