"""selrank: selective matching losses for learning to rank and dwell-time modelling.

The core (:mod:`selrank.links`, :mod:`selrank.scalings`, :mod:`selrank.losses`) needs only
NumPy; estimators, GBDT objectives, torch heads, metrics, datasets and plots import their
optional dependencies when first used.
"""

from __future__ import annotations

import importlib
from typing import Any

# PEP 440: a development release of the version at the top of CHANGELOG.md
# (tests/test_changelog.py keeps the two in step)
__version__ = "0.2.0.dev0"

# Public objects that live in submodules with optional dependencies; imported on first use
# so that `import selrank` stays light (no torch / lightgbm import at start-up).
_LAZY = {
    "SelectiveRanker": "selrank.estimators",
    "SelectiveRegressor": "selrank.estimators",
    "SelectiveClassifier": "selrank.estimators",
    "NeuralRanker": "selrank.estimators",
    "get_link": "selrank.links",
    "get_scaling": "selrank.scalings",
    "get_loss": "selrank.losses",
    "set_kernel_policy": "selrank._numba",  # when the numba kernels compile (cold start)
    "kernel_policy": "selrank._numba",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'selrank' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
