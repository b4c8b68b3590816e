"""Deprecated alias of :mod:`selrank.paper.underspecification` (moved in 0.2; removed in 0.3)."""

from __future__ import annotations

import warnings

from ..paper import underspecification as _moved
from ..paper.underspecification import *  # noqa: F403

__all__ = list(_moved.__all__)

warnings.warn(
    "selrank.metrics.underspecification moved to selrank.paper.underspecification "
    "(import from selrank.paper); this alias will be removed in 0.3",
    DeprecationWarning,
    stacklevel=2,
)
