"""The binding pieces of the GBDT objective (selrank/gbdt/_binding.py): blocks that never cut a
query, weights per row, and the clear error for multi-class label rows without a class count."""

from __future__ import annotations

import numpy as np
import pytest

from selrank._groups import Groups
from selrank.gbdt import GBDTObjective
from selrank.gbdt._binding import bound_blocks, row_weights
from selrank.losses import get_loss


def test_blocks_follow_query_boundaries_and_cover_every_row():
    sizes = np.array([3, 5, 2, 7, 1, 4, 6, 2])
    groups = Groups(sizes)
    n = int(sizes.sum())
    y = np.arange(n, dtype=np.float64) % 3
    loss = get_loss("listwise")
    full = loss.bind(y, group=groups)
    blocks = bound_blocks(loss, y, groups, None, full, block_rows=5)
    starts = [s for s, _, _ in blocks]
    stops = [e for _, e, _ in blocks]
    assert starts[0] == 0 and stops[-1] == n and starts[1:] == stops[:-1]
    assert set(starts) <= set(groups.offsets.tolist())  # no block cuts a query
    assert len(blocks) > 1
    g = np.concatenate([b.grad_hess(np.zeros(e - s))[0] for s, e, b in blocks])
    np.testing.assert_allclose(g, full.grad_hess(np.zeros(n))[0], rtol=1e-12, atol=1e-15)


def test_small_sets_are_one_block():
    y = np.array([1.0, 0.0, 2.0])
    loss = get_loss("pointwise")
    full = loss.bind(y)
    assert bound_blocks(loss, y, None, None, full, block_rows=2) == [(0, 3, full)]


def test_row_weights_per_query_and_per_row():
    groups = Groups(np.array([2, 3]))
    unit, rows = row_weights(np.array([1.0, 3.0, 2.0, 2.0, 5.0]), 5, groups)
    np.testing.assert_array_equal(unit, [1.0, 3.0, 2.0, 2.0, 5.0])
    np.testing.assert_array_equal(rows, [2.0, 2.0, 3.0, 3.0, 3.0])  # the query's mean
    unit, rows = row_weights([1.0, 2.0, 3.0], 3, None)
    np.testing.assert_array_equal(rows, [1.0, 2.0, 3.0])
    assert row_weights(None, 3, None) == (None, None)
    with pytest.raises(ValueError, match="sample_weight"):
        row_weights([1.0, np.nan, 1.0], 3, None)


def test_multiclass_label_rows_need_the_class_count():
    obj = GBDTObjective("decomposed")
    y = np.eye(3)[[0, 1, 2, 1]]
    with pytest.raises(ValueError, match="number of classes"):
        obj.bind(y)
    b = obj.bind(y, n_classes=3)
    assert np.shape(b.intercept) == (3,)


def test_binding_module_does_not_import_the_objective():
    """`_binding` sits below `_objective`: no import of it, not even a type-only one (issue 31)."""
    import ast
    from pathlib import Path

    import selrank.gbdt._binding as binding_module

    tree = ast.parse(Path(binding_module.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    assert "_objective" not in imported and "selrank.gbdt._objective" not in imported


def test_degenerate_start_check_takes_the_three_values_not_the_objective():
    from selrank.gbdt._binding import check_degenerate_start

    obj = GBDTObjective("listwise", label_scale=50.0)
    label = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 2.0, 1.0])
    group = [4, 4]
    b = obj.bind(label, group=group)
    with pytest.raises(ValueError, match=r"saturated.*label_scale=1 .*instead of 50"):
        check_degenerate_start(b, obj.targets(label), loss=obj.loss, label_scale=obj.label_scale)
    sane = GBDTObjective("listwise", label_scale=1.0)  # ordinary targets pass
    check_degenerate_start(
        sane.bind(label, group=group), sane.targets(label), loss=sane.loss, label_scale=1.0
    )
