"""Issue 18: a ranking loss given no groups refuses (it never ranks all rows as one list)."""

from __future__ import annotations

import numpy as np
import pytest

from selrank.losses import Combined, Listwise, Pairwise, Pointwise


@pytest.mark.parametrize(
    "loss",
    [
        Listwise(scaling="exp"),
        Listwise(scaling="sinh"),
        Pairwise(link="exp"),
        Combined([Pointwise("identity"), Listwise(scaling="exp")], weights=[1.0, 1.0]),
    ],
    ids=repr,
)
@pytest.mark.parametrize("call", ["loss", "grad_hess", "bind", "optimal_constant"])
def test_group_losses_refuse_missing_groups(loss, call):
    if call == "optimal_constant" and isinstance(loss, Pairwise):
        pytest.skip("a pairwise loss's constant is 0 whatever the groups (differences only)")
    y = np.array([2.0, 0.0, 1.0, 0.0, 1.0])
    s = np.zeros(5)
    args = {"loss": (s, y), "grad_hess": (s, y), "bind": (y,), "optimal_constant": (y,)}[call]
    with pytest.raises(ValueError, match=r"needs query groups.*group=.*qid=.*group=\[5\]"):
        getattr(loss, call)(*args)


def test_one_explicit_list_equals_the_old_default():
    y = np.array([2.0, 0.0, 1.0, 0.0, 1.0])
    s = np.array([0.3, -0.1, 0.2, 0.0, 0.5])
    a = Listwise(scaling="exp").loss(s, y, group=[5])
    b = Listwise(scaling="exp").loss(s, y, qid=np.zeros(5))
    assert float(a) == pytest.approx(float(b))


def test_pointwise_loss_needs_no_groups():
    y = np.array([2.0, 0.0, 1.0])
    assert np.isfinite(float(Pointwise("exp").loss(np.zeros(3), y)))
