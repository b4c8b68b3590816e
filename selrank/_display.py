"""Figures without pyplot, displayed inline in Jupyter.

selrank builds figures with :class:`matplotlib.figure.Figure` directly, so no GUI backend is
touched and nothing accumulates in pyplot's figure registry. IPython only knows how to show
such a figure once matplotlib's inline support is configured, which happens when *pyplot*
is imported; in a fresh kernel that never imported pyplot a returned figure would print as
``<Figure size 960x260 with 3 Axes>``. :func:`enable_inline` registers IPython's own PNG
printer for figures when an IPython shell is running and none is registered yet (a user's
``%config InlineBackend.figure_formats`` stays untouched).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["enable_inline", "new_figure"]


def _require_matplotlib():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "selrank.plots requires matplotlib: pip install 'selrank[plots]'"
        ) from None
    return Figure


def enable_inline() -> bool:
    """Let a running IPython shell display a :class:`~matplotlib.figure.Figure` as PNG.

    Returns ``True`` when a figure formatter is (now) registered, ``False`` outside IPython.
    Does nothing when one is already registered (pyplot's inline backend, a user's choice).

    Examples
    --------
    >>> enable_inline()      # plain Python: no IPython shell, nothing to do
    False
    """
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
    except ImportError:  # pragma: no cover - IPython without pylabtools
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    Figure = _require_matplotlib()
    formatters = shell.display_formatter.formatters
    for mime in ("image/png", "image/svg+xml", "image/jpeg", "application/pdf"):
        try:
            formatters[mime].lookup_by_type(Figure)
            return True
        except (KeyError, AttributeError):
            continue
    formatters["image/png"].for_type(
        Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight")
    )
    return True


def new_figure(nrows: int = 1, ncols: int = 1, *, size: tuple[float, float] = (4.0, 3.0)):
    """``(figure, axes[nrows, ncols])``: a constrained-layout Figure made without pyplot.

    ``size`` is per panel, in inches.

    Examples
    --------
    >>> fig, axes = new_figure(2, 3)
    >>> axes.shape, len(fig.axes)
    ((2, 3), 6)
    """
    Figure = _require_matplotlib()
    enable_inline()
    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), layout="constrained")
    axes = np.atleast_2d(np.asarray(fig.subplots(nrows, ncols, squeeze=False)))
    return fig, axes
