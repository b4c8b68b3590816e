"""The underspecification suite moved from selrank.metrics to selrank.paper (0.2); the old names were
removed in 0.3 (tests/test_deprecated_aliases.py)."""

from __future__ import annotations

import pytest


def test_unknown_metrics_attribute_still_raises():
    import selrank.metrics as metrics

    with pytest.raises(AttributeError, match="no attribute 'not_a_metric'"):
        metrics.not_a_metric  # noqa: B018


def test_plots_reexports_paper_figures():
    pytest.importorskip("matplotlib")
    import selrank.plots
    from selrank.paper import figures

    assert selrank.plots.plot_sensitivity is figures.plot_sensitivity
