"""Concise reprs for notebooks: one line of text, a small HTML table."""

from __future__ import annotations

import numpy as np

from selrank._repr import format_value, html_table
from selrank.links import get_link
from selrank.paper import sensitivity_report
from selrank.scalings import get_scaling


def test_sensitivity_report_repr_is_one_short_line():
    rep = sensitivity_report(get_link("sigmoid", beta=2.0), name="right-shifted sigmoid")
    text = repr(rep)
    assert "\n" not in text and len(text) < 200
    # the sigmoid shifted right by beta is steepest at z = beta
    assert text == (
        "SensitivityReport(name='right-shifted sigmoid', grid=401 points on [-5, 5], "
        "h' max at z=2, observed=(-3, 0, 3), d=0.5)"
    )


def test_sensitivity_report_html_is_a_table_of_its_summary():
    rep = sensitivity_report(get_scaling("exp"), z=np.linspace(-3, 3, 61))
    html = rep._repr_html_()
    assert html.startswith('<table class="selrank-repr"') and html.endswith("</table>")
    assert html.count("<tr>") == 1 + len(rep.summary())
    summary = dict(rep.summary())
    assert summary["grid"] == "61 points on [-3, 3]" and "scaling" in summary
    assert summary["BUST d"] == rep.d
    assert "&lt;" not in html or "<" in str(rep.link)  # cells are escaped


def test_html_table_escapes_and_formats():
    html = html_table([("a<b", 1.23456789, np.arange(3.0))], header=["k", "v", "arr"])
    assert "a&lt;b" in html and ">1.235<" in html and "array(3,) in [0, 2]" in html
    assert format_value(np.array([np.nan, 1.0])) == "array(2,) in [1, 1]"


def test_links_scalings_and_losses_show_their_parameters_as_html():
    from selrank.losses import Listwise, Pairwise

    link = get_link("exp", alpha=0.5)
    html = link._repr_html_()
    assert html.startswith('<table class="selrank-repr"') and ">Exp<" in html
    assert ">alpha<" in html and ">0.5<" in html and ">beta<" in html
    loss = Listwise("exp", gamma=2.0)
    html = loss._repr_html_()
    assert ">Listwise<" in html and ">gamma<" in html and ">2<" in html
    # nested objects appear by their one-line repr, escaped
    assert "ExpScaling(" in html
    assert ">structure<" in Pairwise("sigmoid")._repr_html_()


def test_properness_report_repr_and_html():
    from selrank.metrics import properness_check

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(300, 1)).astype(float)
    y = X[:, 0] + rng.normal(size=300)
    cells = np.unique(X[:, 0])
    means = np.array([y[X[:, 0] == c].mean() for c in cells])
    pred = means[np.searchsorted(cells, X[:, 0])]  # the square-loss optimum of each cell
    rep = properness_check(X, y, pred, "identity")
    text = repr(rep)
    assert text.startswith("PropernessReport(cells=3, rows=300,") and "passed=True" in text
    assert "\n" not in text
    html = rep._repr_html_()
    assert html.count("<tr>") == 1 + len(rep.summary())


def test_dwell_band_and_mixture_html():
    from selrank.dwell import DwellBand, dwell_mixture

    band = DwellBand(1.0, 5.0)
    html = band._repr_html_()
    assert "DwellBand" in html and "[1, 5]" in html and "[1.718, 147.4]" in html
    rng = np.random.default_rng(1)
    y = np.concatenate(
        [rng.normal(0.5, 0.2, 300), rng.normal(3.5, 0.8, 2000), rng.normal(7.5, 0.5, 300)]
    )
    html = dwell_mixture(np.clip(y, 0, None))._repr_html_()
    assert "engaged (engaged)" in html or "(engaged)" in html
    assert html.count("<tr>") == 1 + 1 + 3  # title, header, three components


def test_fitted_estimator_html_shows_the_fitted_state():
    from selrank import SelectiveRanker

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = np.clip(np.round(X[:, 0] + 1), 0, 3)
    model = SelectiveRanker(n_estimators=5, num_threads=1)
    before = model._repr_html_()
    assert "fitted SelectiveRanker" not in before
    model.fit(X, y, group=np.full(10, 30))
    after = model._repr_html_()
    assert "fitted SelectiveRanker" in after and ">n_features_in_<" in after and ">4<" in after
    assert ">backend<" in after and "lightgbm" in after
