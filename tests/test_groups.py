"""Query-group parsing and segment operations (shared by losses, metrics and GBDT adapters)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from selrank._array import as_float_array, logsumexp, sigmoid, softplus
from selrank._groups import Groups, as_groups


def test_sizes_ids_and_none():
    g = as_groups([2, 3], 5)
    assert g.sizes.tolist() == [2, 3] and g.is_grouped
    g = as_groups(qid=np.array(["q1", "q1", "q2", "q2", "q2"]), n_rows=5)
    assert g.sizes.tolist() == [2, 3] and g.ids.tolist() == ["q1", "q2"]
    assert as_groups(None, 4).sizes.tolist() == [4]
    assert as_groups(g, 5) is g


def test_non_contiguous_ids_are_gathered_stably():
    ids = np.array([5, 9, 5, 7, 9])
    g = as_groups(qid=ids, n_rows=5)
    assert g.sizes.tolist() == [2, 2, 1] and g.ids.tolist() == [5, 9, 7]
    x = np.arange(5.0)
    assert g.to_grouped(x).tolist() == [0.0, 2.0, 1.0, 4.0, 3.0]
    np.testing.assert_array_equal(g.from_grouped(g.to_grouped(x)), x)
    with pytest.raises(ValueError, match="contiguous.*query 5 reappears at row 2"):
        as_groups(qid=ids, n_rows=5, require_contiguous=True)


@pytest.mark.parametrize(
    ("group", "n", "match"),
    [
        ([2, 2], 5, "add up to 4 rows but the data has 5"),
        ([3, 0, 2], 5, "positive"),
        ([2.5, 2.5], 5, "whole numbers"),
        (np.zeros((2, 2)), 4, "1-D"),
        ([], 3, "empty"),
    ],
)
def test_bad_groups(group, n, match):
    with pytest.raises(ValueError, match=match):
        as_groups(group, n)


def test_bad_query_ids():
    with pytest.raises(ValueError, match="finite"):
        as_groups(qid=np.array([1.0, np.nan, 2.0]), n_rows=3)
    with pytest.raises(ValueError, match="one query id per row, 3 values; got 2"):
        as_groups(qid=[1, 1], n_rows=3)


def test_sizes_are_never_read_as_ids():
    """Issue 11: an array of one value per row was guessed to be query ids, so ``[1] * n``
    (n one-row queries, as LightGBM stores them) became one query of n rows."""
    g = as_groups(np.ones(6), 6)
    assert g.n_groups == 6 and g.sizes.tolist() == [1] * 6
    with pytest.raises(
        ValueError, match=r"add up to 21 rows but the data has 6.*pass qid= instead"
    ):
        as_groups(np.arange(1, 7), 6)
    with pytest.raises(ValueError, match="positive.*pass qid= instead"):
        as_groups(np.array([0, 0, 1, 1, 2, 2]), 6)
    with pytest.raises(ValueError, match="not both"):
        as_groups([6], 6, qid=np.zeros(6))
    assert as_groups(qid=np.arange(6), n_rows=6).n_groups == 6


def test_segment_ops_numpy_and_torch_agree(rng):
    sizes = rng.integers(1, 9, size=50)
    g = Groups.from_sizes(sizes)
    x = rng.normal(size=g.n_rows)
    s_np, m_np = g.sum(x), g.max(x)
    t = torch.tensor(x, requires_grad=True)
    s_t, m_t = g.sum(t), g.max(t)
    np.testing.assert_allclose(s_t.detach().numpy(), s_np)
    np.testing.assert_allclose(m_t.detach().numpy(), m_np)
    ref = [x[a:b].sum() for a, b in zip(g.offsets[:-1], g.offsets[1:], strict=True)]
    np.testing.assert_allclose(s_np, ref)
    (grad,) = torch.autograd.grad(s_t.sum(), t)
    np.testing.assert_allclose(grad.numpy(), 1.0)
    np.testing.assert_array_equal(g.broadcast(s_np), np.repeat(s_np, sizes))


def test_pairs_cover_every_within_query_pair(rng):
    sizes = np.array([3, 1, 4])
    g = Groups.from_sizes(sizes)
    i, j, pg = g.pairs()
    assert i.size == g.n_pairs() == 3 + 0 + 6
    assert np.all(i < j) and np.all(g.row_group[i] == pg) and np.all(g.row_group[j] == pg)
    assert len({(a, b) for a, b in zip(i, j, strict=True)}) == i.size


def test_stable_primitives_at_extremes():
    x = np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=np.float32)
    for f in (softplus, sigmoid):
        assert np.all(np.isfinite(f(x)))
    assert softplus(x)[-1] == pytest.approx(1e4)
    assert sigmoid(x)[0] == 0.0 and sigmoid(x)[-1] == 1.0
    assert logsumexp(np.array([-np.inf, 0.0])) == 0.0
    assert logsumexp(np.array([-np.inf, -np.inf])) == -np.inf
    assert logsumexp(np.array([1e4, 1e4])) == pytest.approx(1e4 + np.log(2))
    with pytest.raises(TypeError, match="numeric"):
        as_float_array("abc")
