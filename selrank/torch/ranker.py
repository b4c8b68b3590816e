"""Moved: :class:`NeuralRanker` and :class:`MLPScorer` live in :mod:`selrank.estimators.neural`.

This module re-exports them (on first use, since :mod:`selrank.estimators` sits above
:mod:`selrank.torch` in the dependency order).
"""

from __future__ import annotations

import importlib
from typing import Any

_MOVED = ("NeuralRanker", "MLPScorer", "ACTIVATIONS", "NotFittedError")
__all__ = list(_MOVED)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module 'selrank.torch.ranker' has no attribute {name!r}")
    value = getattr(importlib.import_module("selrank.estimators.neural"), name)
    globals()[name] = value
    return value
