"""The underspecification suite moved from selrank.metrics to selrank.paper: old names still work, with a warning."""

from __future__ import annotations

import importlib
import sys

import pytest

import selrank.paper
from selrank.paper import underspecification


def test_metrics_names_warn_and_resolve_to_paper():
    import selrank.metrics as metrics

    with pytest.warns(DeprecationWarning, match="selrank.paper"):
        bust = metrics.bust
    assert bust is selrank.paper.bust


def test_old_module_path_warns_and_reexports():
    sys.modules.pop("selrank.metrics.underspecification", None)
    with pytest.warns(DeprecationWarning, match="selrank.paper.underspecification"):
        old = importlib.import_module("selrank.metrics.underspecification")
    assert old.fit_linear is underspecification.fit_linear


def test_unknown_metrics_attribute_still_raises():
    import selrank.metrics as metrics

    with pytest.raises(AttributeError, match="no attribute 'not_a_metric'"):
        metrics.not_a_metric  # noqa: B018


def test_plots_reexports_paper_figures():
    pytest.importorskip("matplotlib")
    import selrank.plots
    from selrank.paper import figures

    assert selrank.plots.plot_sensitivity is figures.plot_sensitivity
