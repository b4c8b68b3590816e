"""Scores far beyond the caps: the listwise head's gradients stay finite (issue 13)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from selrank.torch import ListwiseLoss, MulticlassLoss, PointwiseLoss  # noqa: E402

Y = torch.tensor([[2.0, 0.0, 1.0, 3.0], [1.0, 0.0, 2.0, -1.0], [0.0, 4.0, 1.0, 2.0]])


def grad_of(head, s, y=Y):
    x = s.clone().requires_grad_(True)
    loss = head(x, y, reduction="sum")
    loss.backward()
    return loss.detach(), x.grad


@pytest.mark.parametrize("grad", ["analytic", "autograd"])
@pytest.mark.parametrize("big", [1e20, -1e20])
def test_listwise_float32_huge_scores_have_finite_gradients(grad, big):
    s = torch.tensor([[0.5, 0.0, -0.3, 1.0], [0.2, 0.1, 0.0, 0.0], [0.0, 0.3, 0.1, 0.2]])
    head = ListwiseLoss(grad=grad)
    _, g_ref = grad_of(head, s)
    s_big = s.clone()
    s_big[0, 0] = big
    loss, g = grad_of(head, s_big)
    assert not torch.isnan(loss)
    assert torch.isfinite(g).all(), g
    # the other lists are untouched by the overflowing one
    torch.testing.assert_close(g[1:], g_ref[1:])
    # the huge item is pushed down (or up) as in float64
    _, g64 = grad_of(head, s_big.double(), Y.double())
    torch.testing.assert_close(g.double(), g64, rtol=1e-5, atol=1e-6)


def test_analytic_gradients_stay_finite_to_the_float32_limit():
    s = torch.zeros(3, 4)
    s[0, 0] = 3e38
    s[2, 1] = -3e38
    for head in (ListwiseLoss(), MulticlassLoss("composite_softmax")):
        _, g = grad_of(head, s, Y.clamp_min(0.0) if isinstance(head, MulticlassLoss) else Y)
        assert torch.isfinite(g).all()


def test_no_overflow_no_change():
    """The fallback only runs for overflowing lists: ordinary batches are bit-identical."""
    torch.manual_seed(0)
    s = torch.randn(5, 7)
    y = torch.randint(0, 4, (5, 7)).float()
    head = ListwiseLoss()
    from selrank.torch.heads import _terms as H

    values, grad = H.softmax_terms(
        head.core.scaling,
        head.core.gamma,
        "score",
        s,
        y,
        H.MaskedLists(torch.ones(5, 7, dtype=torch.bool)),
        True,
    )
    v2, g2 = H._softmax_terms(
        head.core.scaling,
        head.core.gamma,
        "score",
        s,
        y,
        H.MaskedLists(torch.ones(5, 7, dtype=torch.bool)),
        True,
    )
    assert torch.equal(values, v2) and torch.equal(grad, g2)


def test_double_backward_of_softplus_links_at_large_scores():
    head = PointwiseLoss("sigmoid", grad="autograd")
    x = torch.tensor([[-1e4, 0.0, 1e4]], dtype=torch.float64, requires_grad=True)
    loss = head(x, torch.tensor([[0.5, 0.1, 0.2]], dtype=torch.float64))
    (g,) = torch.autograd.grad(loss, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert torch.isfinite(gg).all()
