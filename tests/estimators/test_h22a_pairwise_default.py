"""Issue 22: ``loss="pairwise"`` picks its pairs by list length (all pairs cost O(n²))."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("lightgbm")

from selrank import SelectiveRanker
from selrank.estimators.ranker import PAIRWISE_TOPK_FROM


@pytest.mark.parametrize(
    "size, loss_params, expected",
    [
        (40, None, "all"),
        (PAIRWISE_TOPK_FROM + 50, None, "topk"),
        (PAIRWISE_TOPK_FROM + 50, {"pair_method": "all"}, "all"),
        (PAIRWISE_TOPK_FROM + 50, {"pair_method": "mean"}, "mean"),
    ],
)
def test_pairwise_pairs_follow_the_list_length(rng, size, loss_params, expected):
    n_q = 2
    X = rng.normal(size=(n_q * size, 3))
    y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    est = SelectiveRanker(
        "pairwise", loss_params=loss_params, n_estimators=2, min_data_in_leaf=5, num_threads=1
    )
    est.fit(X, y, group=[size] * n_q)
    assert est.loss_.pair_method == expected
    assert est.get_params()["loss_params"] == loss_params  # the parameter itself is untouched


def test_a_loss_object_is_used_as_given(rng):
    from selrank.losses import get_loss

    X = rng.normal(size=(600, 3))
    loss = get_loss("pairwise")
    est = SelectiveRanker(loss, n_estimators=2, num_threads=1).fit(
        X, np.clip(np.round(X[:, 0] + 1), 0, 2), group=[300, 300]
    )
    assert est.loss_ is loss and loss.pair_method == "all"
