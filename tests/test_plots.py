"""Figures are checked through their plotted data and labels (headless, no pixels)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.colors import to_rgb

from selrank import plots
from selrank._groups import DenseLists
from selrank.links import CompositeSigmoid, get_link
from selrank.paper.underspecification import (
    appendix_f,
    appendix_i,
    check_theorem1,
    sensitivity_report,
)
from selrank.scalings import composite_softmax, get_scaling

Z = np.linspace(-5.0, 5.0, 201)


def _line(ax, label):
    found = [ln for ln in ax.get_lines() if ln.get_label() == label]
    assert len(found) == 1, (
        f"expected one line {label!r} in {[ln.get_label() for ln in ax.get_lines()]}"
    )
    return found[0]


def _y(ax, label):
    return np.asarray(_line(ax, label).get_ydata(), dtype=np.float64)


def _at(x, value):
    return int(np.argmin(np.abs(x - value)))


# ---------------------------------------------------------------------------------------
# Figure 2
# ---------------------------------------------------------------------------------------


def test_figure2_plots_links_slopes_and_losses():
    fig = plots.plot_sensitivity_types(z=Z)
    axes = np.array(fig.axes).reshape(2, 4)
    assert [ax.get_title() for ax in axes[0]] == list(plots.FIGURE2_LINKS)
    for j, (lname, params) in enumerate(plots.FIGURE2_LINKS.values()):
        link = get_link(lname, **params)
        top, bottom = axes[:, j]
        np.testing.assert_allclose(_line(top, "h").get_xdata(), Z)
        np.testing.assert_allclose(_y(top, "h"), link.h(Z), rtol=1e-12)
        np.testing.assert_allclose(_y(top, "h'"), link.dh(Z), rtol=1e-12)
        assert (
            top.get_xlabel() == "z"
            and bottom.get_xlabel() == r"$\hat s$"
            and bottom.get_ylabel() == "loss"
        )
        for s, color in zip((-3, 0, 3), ("red", "green", "blue")):
            ln = _line(bottom, f"s={s}")
            assert to_rgb(ln.get_color()) == to_rgb(color)
            np.testing.assert_allclose(
                ln.get_ydata(), link.bregman(Z, np.full_like(Z, s)), rtol=1e-12
            )


def test_figure2_curves_show_the_sensitivity_types_of_the_caption():
    fig = plots.plot_sensitivity_types(z=Z)
    axes = np.array(fig.axes).reshape(2, 4)
    i = {v: _at(Z, v) for v in (-4, -3, -2, -1, 0, 1, 2, 3, 4)}
    low_norm, high, low, high_norm = (axes[1, j] for j in range(4))
    # centred sigmoid: sharpest at s = 0; flat when over-estimating s = 3 / under-estimating s = -3
    s0 = _y(low_norm, "s=0")
    s3 = _y(low_norm, "s=3")
    assert s0[i[1]] > 3 * s3[i[2]]
    assert s3[i[4]] < 0.2 * s0[i[1]] and s3[i[4]] < s3[i[2]]
    sm3 = _y(low_norm, "s=-3")
    assert sm3[i[-4]] < 0.2 * s0[i[1]] and sm3[i[-4]] < sm3[i[-2]]
    # right-shifted sigmoid: for s = 3 over-estimation costs more than under-estimation; high
    # predictions of low scores are expensive, low predictions of them nearly free
    s3 = _y(high, "s=3")
    assert s3[i[4]] > s3[i[2]]
    sm3 = _y(high, "s=-3")
    assert sm3[i[3]] > 20 * sm3[i[-4]]
    # left-shifted sigmoid mirrors it
    sm3 = _y(low, "s=-3")
    assert sm3[i[-4]] > sm3[i[-2]]
    # sinh: high-norm sensitivity, the slope is smallest at 0
    dh = _y(axes[0, 3], "h'")
    assert np.argmin(dh) == _at(Z, 0.0)


# ---------------------------------------------------------------------------------------
# Figure 3
# ---------------------------------------------------------------------------------------


def test_figure3_plots_scaling_composite_sigmoid_link_and_losses():
    fig = plots.plot_composite_sigmoid(z=Z, gamma=1.0)
    axes = np.array(fig.axes).reshape(4, 4)
    assert [ax.get_title() for ax in axes[0]] == list(plots.FIGURE3_SCALINGS)
    for j, (sname, params) in enumerate(plots.FIGURE3_SCALINGS.values()):
        sc = get_scaling(sname, **params)
        link = CompositeSigmoid(sc, gamma=1.0)
        np.testing.assert_allclose(_y(axes[0, j], "q"), sc.q(Z), rtol=1e-12)
        np.testing.assert_allclose(_y(axes[1, j], "p"), link.p(Z), rtol=1e-12)
        np.testing.assert_allclose(
            _y(axes[2, j], "h"), _y(axes[0, j], "q") * _y(axes[1, j], "p"), rtol=1e-12
        )
        np.testing.assert_allclose(_y(axes[2, j], "h'"), link.dh(Z), rtol=1e-12)
        for s in (-3, 0, 3):
            np.testing.assert_allclose(
                _y(axes[3, j], f"s={s}"), link.bregman(Z, np.full_like(Z, s)), rtol=1e-12
            )
            ce = _line(axes[3, j], f"CE s={s}")
            assert ce.get_linestyle() == "--"
            ce_y = np.asarray(ce.get_ydata())
            assert np.all(ce_y >= -1e-9) and abs(ce_y[_at(Z, s)]) < 1e-9
            # its slope is q(s^)[p(s^) - p(s)] (E.4), not h(s^) - h(s)
            slope = np.gradient(ce_y, Z)
            want = sc.q(Z) * (link.p(Z) - link.p(np.array([float(s)]))[0])
            inner = slice(5, -5)
            np.testing.assert_allclose(
                slope[inner], want[inner], rtol=2e-2, atol=5e-2 * np.max(np.abs(want))
            )


def test_figure3_sinh_composite_sigmoid_is_not_monotone():
    fig = plots.plot_composite_sigmoid(z=Z)
    p = _y(np.array(fig.axes).reshape(4, 4)[1, 3], "p")
    assert np.argmin(p) == _at(Z, 0.0) and p[0] > p[_at(Z, 0.0)] < p[-1]


# ---------------------------------------------------------------------------------------
# Figure 4
# ---------------------------------------------------------------------------------------


def test_figure4_plots_multiclass_links_and_projections():
    fig = plots.plot_multiclass_projections(z=Z, delta=0.5)
    axes = np.array(fig.axes).reshape(3, 4)
    assert [ax.get_title() for ax in axes[0]] == list(plots.FIGURE4_COLUMNS)
    s = np.array([-3.0, 0.0, 3.0])
    lists = DenseLists()
    for j, (kind, (name, params)) in enumerate(plots.FIGURE4_COLUMNS.values()):
        top, mid, bottom = axes[:, j]
        for k, sk in enumerate(s):
            lab = f"s={sk:g}"
            proj = _y(bottom, lab)
            assert proj[_at(Z, sk)] == pytest.approx(0.0, abs=1e-9) and np.all(proj >= 0)
            for sign in "+-":
                dotted = _line(bottom, f"{lab} {sign}δ")
                assert dotted.get_linestyle() == ":" and min(dotted.get_ydata()) == pytest.approx(
                    0.0, abs=1e-12
                )
            if kind == "decomposed":
                link = get_link(name, **params)
                np.testing.assert_allclose(_y(top, f"h_k {lab}"), link.h(Z), rtol=1e-12)
                # a decomposed loss has no ranking interplay: mis-predicting the others only adds a constant
                np.testing.assert_allclose(_y(bottom, f"{lab} +δ"), proj - proj.min(), atol=1e-9)
            else:
                sc = get_scaling(name, **params)
                Zk = np.tile(s, (Z.size, 1))
                Zk[:, k] = Z
                parts = composite_softmax(sc, 1.0, Zk, lists)
                np.testing.assert_allclose(
                    _y(top, f"h_k {lab}"), parts["h"][:, k], rtol=1e-10, atol=1e-300
                )
                np.testing.assert_allclose(
                    _y(mid, lab),
                    CompositeSigmoid(sc, gamma=1.0).bregman(Z, np.full_like(Z, sk)),
                    rtol=1e-12,
                )
    # high-score column: the loss is sharp around the top score and flat around the bottom one
    high = axes[2, 1]
    i3, im3 = _at(Z, 3.0), _at(Z, -3.0)
    assert _y(high, "s=3")[i3 - 20] > 100 * _y(high, "s=-3")[im3 + 20]
    low = axes[2, 2]
    assert _y(low, "s=-3")[im3 + 20] > 100 * _y(low, "s=3")[i3 - 20]


# ---------------------------------------------------------------------------------------
# Sensitivity report figure, Appendix F, Appendix I, Theorem 1
# ---------------------------------------------------------------------------------------


def test_sensitivity_figure_of_a_link_and_of_a_scaling():
    rep = sensitivity_report("sinh", z=Z)
    fig = rep.figure()
    ax_h, ax_l, ax_b = fig.axes
    np.testing.assert_allclose(_y(ax_h, "h"), rep.h)
    np.testing.assert_allclose(_y(ax_h, "h'"), rep.dh)
    for s, row in zip(rep.observed, rep.loss):
        np.testing.assert_allclose(_y(ax_l, f"s={s:g}"), row)
    np.testing.assert_allclose(_y(ax_b, "BUST (d=0.5)"), rep.bust)
    np.testing.assert_allclose(_y(ax_b, "BLUST"), rep.blust)
    assert ax_b.get_xlabel() == r"$w_u$"
    srep = sensitivity_report(get_scaling("exp"), z=Z)
    fig = plots.plot_sensitivity(srep, title="exp scaling")
    assert fig.get_suptitle() == "exp scaling"
    ax_q = fig.axes[0]
    np.testing.assert_allclose(_y(ax_q, "q"), srep.q)
    twin = [ax for ax in fig.axes if any(ln.get_label() == "p" for ln in ax.get_lines())]
    np.testing.assert_allclose(_y(twin[0], "p"), srep.p)


def test_appendix_f_figure_shows_predictions_and_identity():
    res = appendix_f()
    fig = plots.plot_two_feature(res)
    pred_axes = [ax for ax in fig.axes if ax.get_xlabel() == "observed s"]
    assert len(pred_axes) == len(res)
    for ax, r in zip(pred_axes, res.values()):
        offsets = np.asarray(ax.collections[0].get_offsets())
        np.testing.assert_allclose(offsets[:, 0], r.y)
        np.testing.assert_allclose(offsets[:, 1], r.y_pred)
        ident = _line(ax, "identity")
        np.testing.assert_allclose(ident.get_xdata(), ident.get_ydata())
        assert f"{r.coef[0]:.3f}" in ax.get_title()


def test_appendix_i_figure_lines():
    r = appendix_i(alphas=[1.0, 10.0])
    fig = plots.plot_stochastic(r)
    left, right = fig.axes
    for a, est in zip(r.alphas, r.left_estimates):
        np.testing.assert_allclose(_y(left, f"alpha={a:g}"), est)
        np.testing.assert_allclose(_line(left, f"alpha={a:g}").get_xdata(), r.left_x)
    np.testing.assert_allclose(_y(left, "mean"), 0.1)
    for a, est in zip(r.alphas, r.right_estimates):
        for m, row in zip(r.right_means, est):
            np.testing.assert_allclose(_y(right, f"alpha={a:g}, mean={m:g}"), row)


def test_theorem1_figure():
    res = {
        "exp": check_theorem1("exp", n=20_000, grid=True),
        "identity": check_theorem1("identity", n=20_000),
    }
    fig = plots.plot_theorem1(res)
    ax = fig.axes[0]
    np.testing.assert_allclose(_y(ax, "theory"), [r.bust for r in res.values()])
    np.testing.assert_allclose(_y(ax, "exact [12]"), [r.extrapolated for r in res.values()])
    assert [t.get_text() for t in ax.get_xticklabels()] == list(res)
    with pytest.raises(ValueError, match="empty"):
        plots.plot_theorem1([])


def test_plots_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"requires matplotlib: pip install 'selrank\[plots\]'"):
        plots.plot_sensitivity_types()


def test_plot_validation():
    with pytest.raises(ValueError, match="increasing"):
        plots.plot_sensitivity_types(z=[1.0, 0.0])
    with pytest.raises(ValueError, match="kind"):
        plots.plot_multiclass_projections({"x": ("diagonal", ("sigmoid", {}))}, z=Z)
    with pytest.raises(ValueError, match="at least 2"):
        plots.plot_multiclass_projections(z=Z, observed=[1.0])
