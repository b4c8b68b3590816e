"""Drawing helpers of the paper's figures (matplotlib), below the analyses that use them.

:mod:`selrank.paper.underspecification` (``SensitivityReport.figure``) and
:mod:`selrank.paper.figures` both draw through this module, which imports neither: the figure
of a report needs only the report's arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["new_figure", "observed_colors", "loss_panel", "draw_sensitivity"]


def new_figure(nrows: int, ncols: int, *, size: tuple[float, float] = (3.2, 2.6)):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "selrank.plots requires matplotlib: pip install 'selrank[plots]'"
        ) from None
    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), layout="constrained")
    axes = np.atleast_2d(np.asarray(fig.subplots(nrows, ncols, squeeze=False)))
    return fig, axes


def observed_colors(observed: Sequence[float]) -> list:
    """Colours of the loss curves: red, green, blue for three observed scores (as in the paper).

    Other counts use the ``viridis`` colour map.

    Examples
    --------
    >>> observed_colors([-3, 0, 3])
    ['red', 'green', 'blue']
    """
    n = len(observed)
    if n == 3:
        return ["red", "green", "blue"]
    try:
        from matplotlib import colormaps
    except ImportError:
        raise ImportError(
            "selrank.plots requires matplotlib: pip install 'selrank[plots]'"
        ) from None
    cmap = colormaps["viridis"]
    return [cmap(i / max(n - 1, 1)) for i in range(n)]


def loss_panel(ax, z, observed, rows, *, linestyle="-", label_prefix="s=", legend=True):
    for s, row, c in zip(observed, rows, observed_colors(observed)):
        ax.plot(z, row, color=c, linestyle=linestyle, label=f"{label_prefix}{s:g}")
    ax.set_xlabel(r"$\hat s$")
    ax.set_ylabel("loss")
    if legend:
        ax.legend(fontsize="small")


def draw_sensitivity(rep: Any, *, title: str | None = None):
    r"""Figure of a :class:`~selrank.paper.underspecification.SensitivityReport` ``rep``.

    Panels: ``h`` and ``h'`` vs :math:`z`; losses vs :math:`\hat s` per observed score; BUST
    and BLUST vs :math:`w_u`; for a scaling, first :math:`q` and :math:`p`. The public entry
    point is :func:`selrank.paper.figures.plot_sensitivity` (also ``report.figure()``).
    """
    scaled = rep.q is not None
    fig, axes = new_figure(1, 4 if scaled else 3)
    axes = list(axes[0])
    if scaled:
        ax = axes.pop(0)
        ax.plot(rep.z, rep.q, color="black", label="q")
        ax.set_xlabel("z")
        ax.set_ylabel("q(z)")
        ax.set_title("scaling q and composite p")
        twin = ax.twinx()  # p lives in [0, 1], q may be far larger
        twin.plot(rep.z, rep.p, color="gray", linestyle="--", label="p")
        twin.set_ylabel("p(z)")
        ax.legend(handles=ax.get_lines() + twin.get_lines(), fontsize="small")
    ax_h, ax_l, ax_b = axes
    ax_h.plot(rep.z, rep.h, color="black", label="h")
    ax_h.plot(rep.z, rep.dh, color="purple", linestyle="--", label="h'")
    ax_h.set_xlabel("z")
    ax_h.set_ylabel("link / sensitivity")
    ax_h.set_title("link h and slope h'")
    ax_h.legend(fontsize="small")
    loss_panel(ax_l, rep.z, rep.observed, rep.loss)
    ax_l.set_title("matching losses")
    ax_b.plot(rep.z, rep.bust, color="black", label=f"BUST (d={rep.d:g})")
    ax_b.plot(rep.z, rep.blust, color="purple", linestyle="--", label="BLUST")
    ax_b.set_xlabel(r"$w_u$")
    ax_b.set_ylabel("normalised offset")
    ax_b.set_title(f"BUST on [{rep.z[0]:g}, {rep.z[-1]:g}]")
    ax_b.legend(fontsize="small")
    fig.suptitle(title if title is not None else rep.name)
    return fig
