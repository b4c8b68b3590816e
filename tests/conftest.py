"""Shared fixtures: seeded random generators, optional-dependency and GPU switches."""

from __future__ import annotations

import os

import numpy as np
import pytest

# Tests never touch the network and must not grab every core of a small CI machine.
os.environ.setdefault("OMP_NUM_THREADS", "2")
# The numba kernels run from the first call, so that the kernel-versus-generic tests compare
# what they name (the default "auto" keeps small fits on the generic path: selrank._numba);
# tests/test_kernel_policy.py sets each policy itself.
os.environ.setdefault("SELRANK_KERNELS", "eager")


@pytest.fixture
def rng() -> np.random.Generator:
    """A freshly seeded generator per test (reproducible, independent of test order)."""
    return np.random.default_rng(20260521)


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
