"""Plots (matplotlib): practitioner plots and the paper's figures.

* :mod:`selrank.plots.practitioner`: system comparison with paired bootstrap CIs, metric vs
  cut-off, training curves, dwell calibration, the dwell band with its mixture, link
  sensitivity of candidate links.
* The paper's figures live in :mod:`selrank.paper.figures` and are re-exported here, so
  ``from selrank.plots import plot_sensitivity`` keeps working.

Figures are built without pyplot and display inline in Jupyter (importing this package
registers a PNG formatter with a running IPython shell; :func:`enable_inline`). Needs
matplotlib: ``pip install 'selrank[plots]'``.
"""

from __future__ import annotations

from .._display import enable_inline
from ..paper import figures as _figures
from ..paper.figures import *  # noqa: F403
from .practitioner import (
    plot_calibration,
    plot_comparison,
    plot_dwell_band,
    plot_link_sensitivity,
    plot_metric_at_k,
    plot_training_curves,
)

__all__ = list(_figures.__all__)
__all__ += [
    "plot_comparison",
    "plot_metric_at_k",
    "plot_training_curves",
    "plot_calibration",
    "plot_dwell_band",
    "plot_link_sensitivity",
    "enable_inline",
]

enable_inline()
