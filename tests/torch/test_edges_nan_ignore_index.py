"""Issue 30: a NaN score is a NaN loss and a NaN gradient in every head (as in the NumPy
losses), float32 agrees with float64 at extreme scores, and ``ignore_index=`` masks labels as
PyTorch's losses do."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from selrank.losses import Pointwise  # noqa: E402
from selrank.torch import (  # noqa: E402
    HEADS,
    ApproxNDCGLoss,
    CoreLoss,
    LambdaLoss,
    ListMLELoss,
    ListNetLoss,
    ListwiseLoss,
    MulticlassLoss,
    PairwiseLoss,
    PointwiseLoss,
    RankNetLoss,
    SoftmaxCrossEntropyLoss,
    get_head,
)


def _heads():
    out = {}
    for link in ("identity", "exp", "sigmoid", "sinh", "smelu", "huber", "composite_sigmoid"):
        for grad in ("analytic", "autograd"):
            out[f"pointwise-{link}-{grad}"] = lambda link=link, grad=grad: PointwiseLoss(
                link, grad=grad
            )
    for scaling in ("exp", "constant", "smelu", "relu"):
        for grad in ("analytic", "autograd"):
            out[f"listwise-{scaling}-{grad}"] = lambda s=scaling, grad=grad: ListwiseLoss(
                s, grad=grad
            )
    for link in (None, "identity", "exp", "sigmoid"):
        for grad in ("analytic", "autograd"):
            out[f"pairwise-{link}-{grad}"] = lambda link=link, grad=grad: PairwiseLoss(
                link, grad=grad
            )
    for loss in ("composite_softmax", "decomposed"):
        for grad in ("analytic", "autograd"):
            out[f"multiclass-{loss}-{grad}"] = lambda loss=loss, grad=grad: MulticlassLoss(
                loss, grad=grad
            )
    for cls in (
        SoftmaxCrossEntropyLoss,
        ListNetLoss,
        ListMLELoss,
        RankNetLoss,
        LambdaLoss,
        ApproxNDCGLoss,
    ):
        out[cls.__name__] = cls
    out["core-pairwise"] = lambda: CoreLoss("pairwise")  # through autograd
    return out


HEAD_MAKERS = _heads()
Y = [[2.0, 0.0, 1.0, 3.0], [1.0, 0.0, 2.0, -1.0], [0.0, 4.0, 1.0, 2.0]]
S = [[0.5, 0.0, -0.3, 1.0], [0.2, 0.1, 0.0, 0.0], [0.0, 0.3, 0.1, 0.2]]


def _targets(name: str, dtype) -> torch.Tensor:
    y = torch.tensor(Y, dtype=dtype)
    if name.startswith("multiclass"):
        return y.clamp_min(0.0)
    if name.startswith("pointwise-sigmoid") or name.startswith("pointwise-composite_sigmoid"):
        return torch.where(y >= 0, 0.1 + 0.2 * y, y)  # inside the link's range
    return y


def _run(head, name, value, dtype, reduction):
    s = torch.tensor(S, dtype=dtype)
    s[0, 0] = value
    x = s.requires_grad_(True)
    loss = head(x, _targets(name, dtype), reduction=reduction)
    loss.sum().backward()
    return loss.detach(), x.grad


@pytest.mark.parametrize("name", list(HEAD_MAKERS))
def test_a_nan_score_is_a_nan_loss_and_a_nan_gradient(name):
    head = HEAD_MAKERS[name]()
    for dtype in (torch.float32, torch.float64):
        for reduction in ("mean", "none"):
            loss, grad = _run(head, name, math.nan, dtype, reduction)
            unit = loss if loss.dim() == 0 else loss.reshape(loss.shape[0], -1)[0, 0]
            assert torch.isnan(unit), (name, dtype, reduction, loss)
            assert torch.isnan(grad[0, 0]), (name, dtype, reduction, grad)
            # the other lists keep their finite gradients (no NaN leaks between lists)
            if reduction == "none" and not name.startswith("multiclass"):
                assert torch.isfinite(grad[1:]).all(), (name, dtype, grad)


@pytest.mark.parametrize("name", list(HEAD_MAKERS))
def test_float32_agrees_with_float64_at_extreme_scores(name):
    head = HEAD_MAKERS[name]()
    for value in (math.inf, -math.inf, 1e4, -1e4, 80.0, -80.0):
        for reduction in ("mean", "none"):
            l32, g32 = _run(head, name, value, torch.float32, reduction)
            l64, g64 = _run(head, name, value, torch.float64, reduction)
            # the score's own float32 rounding: differences to 1e4 are resolved to ~1e-3
            atol = 1e-5 + 4 * float(np.finfo(np.float32).eps) * min(abs(value), 1e4)
            for a, b, what in ((l32, l64, "loss"), (g32, g64, "gradient")):
                a = a.double()
                assert torch.equal(torch.isnan(a), torch.isnan(b)), (name, value, what, a, b)
                fin = torch.isfinite(b) & (b.abs() < 3e38)
                torch.testing.assert_close(
                    a[fin], b[fin], rtol=1e-4, atol=atol, msg=f"{name} {value} {what}"
                )


def test_the_numpy_losses_keep_a_nan_too():
    for link in ("exp", "sigmoid", "sinh", "smelu", "identity"):
        bound = Pointwise(link).bind(np.array([0.2, 0.3]))
        with np.errstate(invalid="ignore"):
            values = bound.loss(np.array([np.nan, 0.5]), reduction="none")
        assert np.isnan(values[0]) and np.isfinite(values[1]), link


# -- ignore_index ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in HEADS if n != "combined"] + ["combined"])
def test_every_head_masks_labels_equal_to_ignore_index(name):
    kwargs = {"losses": ["listwise", "pairwise"]} if name == "combined" else {}
    if name == "multiclass":
        kwargs = {"scaling": "constant", "target": "link"}
        z = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 9.0], [0.5, 0.1, 0.0]])
        y = torch.tensor([2, -100, 0])
        head = get_head(name, ignore_index=-100, **kwargs)
        want = torch.nn.functional.cross_entropy(z, y, ignore_index=-100)
        torch.testing.assert_close(head(z, y), want)
        return
    head = get_head(name, ignore_index=-100, **kwargs)
    assert head.padding_value == -100.0
    y = torch.tensor([[2.0, 0.0, 1.0, -100.0], [1.0, 3.0, 0.0, 2.0]])
    z = torch.tensor([[0.3, 0.1, 0.2, 55.0], [0.0, 0.4, -0.2, 0.1]], requires_grad=True)
    loss = head(z, y, reduction="none")
    loss.sum().backward()
    assert z.grad[0, 3] == 0.0
    plain = get_head(name, padding_value=None, **kwargs)
    short = plain(z.detach()[:1, :3], y[:1, :3], reduction="none")
    torch.testing.assert_close(loss.detach()[0].reshape(-1)[: short.numel()], short.reshape(-1))


def test_ignore_index_is_not_handed_to_the_scaling_or_link():
    for head in (ListwiseLoss(ignore_index=-100), PointwiseLoss("exp", ignore_index=-100)):
        assert head.padding_value == -100.0
        assert "ignore_index" not in repr(head.core)
    with pytest.raises(TypeError, match="ignore_index"):
        ListwiseLoss(ignore_index=True)
