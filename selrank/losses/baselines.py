"""Deprecated alias of :mod:`selrank.losses.classification` (renamed in 0.3; removed in 0.4).

``selrank.losses.baselines`` was the classification losses' package until 0.3; the name
said nothing a reader could tell apart from the torch ranking baselines
(:mod:`selrank.torch.baselines`). Importing this module, or one of its old submodules
(``selrank.losses.baselines.pols``, ``.multilabel``, ``._classic``, ``._base``), warns
once and gives the objects of :mod:`selrank.losses.classification`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from . import classification as _new
from .classification import _base, _classic, multilabel, pols

__all__ = list(_new.__all__)

# `import selrank.losses.baselines.pols` finds the renamed submodules here
for _sub in (_base, _classic, multilabel, pols):
    sys.modules.setdefault(f"{__name__}.{_sub.__name__.rpartition('.')[2]}", _sub)

warnings.warn(
    "selrank.losses.baselines was renamed selrank.losses.classification in 0.3 "
    "(import from selrank.losses or selrank.losses.classification); "
    "this alias will be removed in 0.4",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:  # PEP 562: every name of the renamed package
    try:
        return getattr(_new, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(_new)))
