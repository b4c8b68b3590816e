"""Fixtures of the torch head tests: skip without torch, one intra-op thread per worker."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

# Two xdist workers on a two-core machine: more intra-op threads only oversubscribe the CPU
# (OpenMP barriers then dominate tiny kernels), so each worker computes on one thread.
torch.set_num_threads(1)
