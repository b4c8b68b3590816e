"""Empty and degenerate inputs, generated from the registries (issue 20): every loss of
``LOSSES``, every head of ``HEADS`` and ``LOSSES`` (through ``get_head``) and every metric of
``METRICS`` gives a defined result — a zero loss with a zero, finite gradient — or a clear
``ValueError`` on empty batches, lists of length 0 and 1 and all-padding batches; never an
exception from deep inside NumPy or torch."""

from __future__ import annotations

import numpy as np
import pytest

from selrank.losses import LOSSES, get_loss
from selrank.metrics import METRICS, evaluate
from selrank.metrics.names import parse_metric_name

from ._registry import loss_cases
from .losses.test_selective import make_data

torch = pytest.importorskip("torch")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


# -- core losses ------------------------------------------------------------------------------


def _rows(loss, y, z, sl, sizes):
    """Rows ``sl`` of the data and the matching ``group`` keyword (group losses)."""
    kw = {}
    if loss.structure == "group":
        kw["group"] = sizes
    return y[sl], z[sl], kw


@pytest.mark.parametrize(("name", "params"), loss_cases())
def test_loss_on_no_rows_is_zero_or_a_clear_error(name, params):
    loss = get_loss(name, **params)
    y, z, _, _ = make_data(loss, np.random.default_rng(0))
    y0, z0, kw = _rows(loss, y, z, slice(0, 0), np.array([], dtype=np.int64))
    try:
        total = loss.loss(z0, y0, reduction="sum", **kw)
        mean = loss.loss(z0, y0, reduction="mean", **kw)
        g, h = loss.grad_hess(z0, y0, **kw)
    except ValueError as err:  # a clear refusal names what is empty
        assert "empty" in str(err) or "at least one" in str(err), str(err)
        return
    assert float(total) == 0.0 and float(mean) == 0.0
    assert g.shape == z0.shape and h.shape == z0.shape


@pytest.mark.parametrize(("name", "params"), loss_cases())
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_loss_on_one_row_or_a_list_of_one_is_finite(name, params, dtype):
    loss = get_loss(name, **params)
    y, z, sizes, _ = make_data(loss, np.random.default_rng(1), dtype=dtype)
    start = int(sizes[0])  # the second query of make_data has one document
    assert sizes[1] == 1
    y1, z1, kw = _rows(loss, y, z, slice(start, start + 1), np.array([1]))
    value = loss.loss(z1, y1, reduction="sum", **kw)
    g, h = loss.grad_hess(z1, y1, **kw)
    assert np.isfinite(value)
    assert np.isfinite(g).all() and np.isfinite(h).all()
    if name == "pairwise":  # a list of one has no pair (the composite softmax keeps a level)
        assert float(value) == 0.0 and not np.any(g)


# -- torch heads ------------------------------------------------------------------------------


def _head_names():
    from selrank.torch import HEADS

    return sorted(set(HEADS) | set(LOSSES))


def _head(name):
    from selrank.torch import get_head

    if name == "combined":
        return get_head(get_loss("combined", losses=["pointwise", "pairwise"]))
    return get_head(name)


def _is_multiclass(head):
    core = getattr(head, "core", None)
    return core is not None and core.structure == "multiclass"


def _multiclass_targets(head, n, device):
    core = head.core
    if core.target == "link":
        return torch.zeros(n, dtype=torch.float64, device=device)
    return torch.zeros(n, 4, dtype=torch.float64, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", _head_names())
@pytest.mark.parametrize(
    "shape", [(0, 6), (3, 0), "padding"], ids=["no-lists", "empty-lists", "all-padding"]
)
def test_head_on_empty_batches_gives_zero_loss_and_zero_gradient(name, shape, device):
    head = _head(name)
    if _is_multiclass(head):
        if shape == "padding":
            pytest.skip("multi-class heads have no padding")
        z = torch.zeros((0, 4), dtype=torch.float64, device=device, requires_grad=True)
        y = _multiclass_targets(head, 0, device)
    else:
        pad = head.padding_value if head.padding_value is not None else -1.0
        size = (3, 6) if shape == "padding" else shape
        z = torch.randn(size, dtype=torch.float64, device=device, requires_grad=True)
        y = torch.full(size, pad, dtype=torch.float64, device=device)
        kw = {"mask": torch.zeros(size, dtype=torch.bool, device=device)}
        if head.padding_value is None:  # padding given by the mask only
            value = head(z, y, **kw)
            value.backward()
            assert float(value) == 0.0 and not torch.any(z.grad)
            return
    for reduction in ("mean", "sum"):
        z.grad = None
        value = head(z, y, reduction=reduction)
        assert value.dim() == 0 and float(value.detach()) == 0.0, (reduction, value)
        value.backward()
        assert z.grad is None or (torch.isfinite(z.grad).all() and not torch.any(z.grad))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", _head_names())
def test_head_on_lists_of_one_is_finite(name, device):
    head = _head(name)
    if _is_multiclass(head):
        z = torch.zeros((1, 4), dtype=torch.float64, device=device, requires_grad=True)
        y = _multiclass_targets(head, 1, device)
    else:
        z = torch.tensor([[0.3, 9.0], [-0.2, 9.0]], dtype=torch.float64, device=device)
        z.requires_grad_(True)
        y = torch.tensor([[1.0, -1.0], [0.0, -1.0]], dtype=torch.float64, device=device)
        if getattr(head, "padding_value", -1.0) is None:
            pytest.skip("head without a padding sentinel")
        if getattr(getattr(head, "core", None), "target", "score") == "link":
            y = torch.tensor([[1.0, -1.0], [1.0, -1.0]], dtype=torch.float64, device=device)
    value = head(z, y)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(z.grad).all()


# -- metrics ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(METRICS))
def test_metric_on_no_rows_is_a_clear_error(name):
    for group in ([], None):
        with pytest.raises(ValueError, match="empty"):
            evaluate(np.zeros(0), np.zeros(0), group=group, metrics=[name])


@pytest.mark.parametrize("name", sorted(METRICS))
@pytest.mark.parametrize("label", [0.0, 2.0])
def test_metric_on_lists_of_one_is_defined(name, label):
    y = np.array([label, 1.0, 0.0])
    s = np.array([0.5, 0.2, 0.1])
    metrics = [name]
    try:  # with a cut-off too, where the measure takes one (R-precision and bpref do not)
        parse_metric_name(f"{name}@1")
        metrics.append(f"{name}@1")
    except ValueError:
        pass
    table = evaluate(y, s, group=[1, 2], metrics=metrics)
    means = table["mean"].to_numpy()
    assert np.isfinite(means).all(), table
