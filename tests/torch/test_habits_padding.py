"""Issue 18: PyTorch's key_padding_mask convention (True = padding) is refused, not trusted."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from selrank.torch import ListwiseLoss, PairwiseLoss, PointwiseLoss, padding_mask  # noqa: E402

Y = torch.tensor([[2.0, 0.0, 1.0, -1.0], [1.0, 0.0, -1.0, -1.0]], dtype=torch.float64)
KEY_PADDING = torch.tensor([[False, False, False, True], [False, False, True, True]])
HEADS = [
    lambda **kw: ListwiseLoss("exp", **kw),
    lambda **kw: ListwiseLoss("sinh", **kw),
    lambda **kw: PairwiseLoss("exp", **kw),
    lambda **kw: PointwiseLoss("exp", **kw),
]


@pytest.mark.parametrize("make", HEADS)
@pytest.mark.parametrize("as_int", [False, True])
def test_key_padding_mask_given_as_mask_is_refused(make, as_int):
    mask = KEY_PADDING.to(torch.uint8) if as_int else KEY_PADDING
    z = torch.zeros_like(Y)
    with pytest.raises(ValueError, match=r"marks as real 3 item\(s\).*mask=~key_padding_mask"):
        make()(z, Y, mask=mask)


@pytest.mark.parametrize("make", HEADS)
def test_the_inverted_key_padding_mask_equals_the_sentinel(make):
    z = torch.randn(Y.shape, dtype=torch.float64)
    head = make()
    torch.testing.assert_close(head(z, Y, mask=~KEY_PADDING), head(z, Y))
    torch.testing.assert_close(head(z, Y, lengths=torch.tensor([3, 2])), head(z, Y))


def test_lengths_that_reach_into_the_padding_are_refused():
    with pytest.raises(ValueError, match=r"`lengths` marks as real 1 item.*real length"):
        ListwiseLoss("exp")(torch.zeros_like(Y), Y, lengths=torch.tensor([4, 2]))


def test_a_genuine_sentinel_target_needs_padding_value_none():
    teacher = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)
    z = torch.zeros_like(teacher)
    with pytest.raises(ValueError, match="padding_value=None"):
        PointwiseLoss("identity")(z, teacher, mask=torch.ones_like(teacher, dtype=torch.bool))
    out = PointwiseLoss("identity", padding_value=None)(
        z, teacher, mask=torch.ones_like(teacher, dtype=torch.bool)
    )
    assert torch.isfinite(out)


def test_float_masks_are_refused():
    with pytest.raises(TypeError, match="`mask` must be boolean"):
        padding_mask(Y, mask=(~KEY_PADDING).to(torch.float32))


def test_padding_mask_refuses_the_inverted_mask_directly():
    with pytest.raises(ValueError, match="key_padding_mask"):
        padding_mask(Y, mask=KEY_PADDING)
    assert padding_mask(Y, mask=~KEY_PADDING).tolist() == (~KEY_PADDING).tolist()
