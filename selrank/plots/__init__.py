"""Plots (matplotlib): the paper's figures.

The paper's figures live in :mod:`selrank.paper.figures` and are re-exported here, so
``from selrank.plots import plot_sensitivity`` keeps working. Needs matplotlib:
``pip install 'selrank[plots]'``.
"""

from __future__ import annotations

from ..paper import figures as _figures
from ..paper.figures import *  # noqa: F403

__all__ = list(_figures.__all__)
