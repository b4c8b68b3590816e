"""The torch paths added for issues 18, 20 and 21 on a CUDA device: the same results as on the
CPU (skipped without a device; run on a GPU machine with ``pytest -m gpu``)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from selrank.torch import ListwiseLoss, PairwiseLoss, PointwiseLoss, get_head  # noqa: E402

pytestmark = pytest.mark.gpu

Y = torch.tensor([[2.0, 0.0, 1.0, -1.0], [1.0, 0.0, -1.0, -1.0]], dtype=torch.float64)
KEY_PADDING = torch.tensor([[False, False, False, True], [False, False, True, True]])


def _grad(head, z, y, **kw):
    z = z.clone().requires_grad_(True)
    value = head(z, y, **kw)
    value.backward()
    return value.detach().cpu(), z.grad.detach().cpu()


@pytest.mark.parametrize(
    "make",
    [
        lambda: get_head("weighted_pairwise", num_pair_per_sample=5),
        lambda: PairwiseLoss("sinh"),
        lambda: ListwiseLoss("exp"),
        lambda: PointwiseLoss("exp"),
    ],
)
def test_cuda_equals_cpu(make):
    rng = np.random.default_rng(0)
    z = torch.tensor(rng.normal(size=(3, 12)))
    y = torch.tensor(rng.integers(0, 3, size=(3, 12)).astype(np.float64))
    v_cpu, g_cpu = _grad(make(), z, y)
    v_gpu, g_gpu = _grad(make(), z.cuda(), y.cuda())
    torch.testing.assert_close(v_gpu, v_cpu, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(g_gpu, g_cpu, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("make", [lambda: ListwiseLoss("exp"), lambda: PairwiseLoss("exp")])
def test_cuda_key_padding_mask_is_refused(make):
    with pytest.raises(ValueError, match="key_padding_mask"):
        make()(torch.zeros_like(Y).cuda(), Y.cuda(), mask=KEY_PADDING.cuda())
    z = torch.randn(Y.shape, dtype=torch.float64)
    torch.testing.assert_close(
        make()(z.cuda(), Y.cuda(), mask=~KEY_PADDING.cuda()).cpu(), make()(z, Y)
    )
