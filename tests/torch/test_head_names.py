"""One name per loss across ``LOSSES`` and ``HEADS``; the old head name ``softmax_ce``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from selrank.losses import LOSSES, get_loss  # noqa: E402
from selrank.torch import HEADS, SoftmaxCrossEntropyLoss, get_head, head_for, head_registry  # noqa: E402


def test_a_name_in_both_registries_is_the_same_loss():
    shared = sorted(set(HEADS) & set(LOSSES))
    assert shared == ["combined", "listwise", "pairwise", "pointwise"]
    for name in shared:
        params = LOSSES[name].examples[0]
        assert type(get_head(name, **params)) is type(head_for(get_loss(name, **params)))


def test_the_registry_is_heads_and_every_loss_name():
    registry = head_registry()
    assert set(registry) == set(HEADS) | set(LOSSES)
    assert all(registry[n] is HEADS[n] for n in HEADS)
    assert "softmax_ce" not in registry


def test_softmax_ce_is_a_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="'list_softmax_cross_entropy'"):
        head = get_head("softmax_ce")
    assert type(head) is SoftmaxCrossEntropyLoss
    assert type(get_head("list_softmax_cross_entropy")) is SoftmaxCrossEntropyLoss
    # the classification loss of LOSSES keeps its name and is another loss
    assert type(get_head("softmax_cross_entropy")).__name__ == "CoreLoss"
