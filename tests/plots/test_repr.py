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
