r"""Figures of the selective-matching-loss paper, drawn from the library's own definitions.

Every curve is computed by the core (:mod:`selrank.links`, :mod:`selrank.scalings`) and the
underspecification suite (:mod:`selrank.paper.underspecification`); nothing is re-derived
here. Functions return a :class:`matplotlib.figure.Figure` built without ``pyplot`` (no GUI
backend is touched; ``fig.savefig(...)`` works headless, and Jupyter displays it).

* :func:`plot_sensitivity` — one link or scaling: :math:`h`, :math:`h'`, loss curves for
  :math:`s \in \{-3, 0, 3\}`, BUST and BLUST (and :math:`q`, :math:`p` for a scaling).
* :func:`plot_sensitivity_types` — Figure 2: four sensitivity types (links, slopes, losses).
* :func:`plot_composite_sigmoid` — Figure 3: scalings, composite sigmoids, links, losses (CE
  losses dashed).
* :func:`plot_multiclass_projections` — Figure 4: multi-class links, scalar losses and
  multi-class loss projections.
* :func:`plot_two_feature` — Appendix F (Figure F.1); :func:`plot_stochastic` — Appendix I
  (Figure I.1); :func:`plot_theorem1` — BUST theory vs exact optimum vs fitted model.

Loss curves for observed scores ``-3, 0, 3`` are red, green and blue as in the paper; every
line carries a ``label`` (``"s=3"``, ``"h"``, ``"h'"``, ...), which is what the tests read.

Needs matplotlib: ``pip install 'selrank[plots]'``.

Examples
--------
>>> from selrank.plots import plot_sensitivity_types
>>> fig = plot_sensitivity_types()
>>> [ax.get_title() for ax in fig.axes[:4]]
['low norm', 'high score', 'low score', 'high norm']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import _array as A
from .._array import Array
from .._groups import DenseLists
from .._validation import finite_float
from ..links import CompositeSigmoid, Link, get_link
from ..scalings import (
    Scaling,
    composite_softmax,
    composite_softmax_bregman,
    composite_softmax_hess_diag,
    get_scaling,
)
from ._drawing import draw_sensitivity, loss_panel, new_figure, observed_colors
from .underspecification import (
    AppendixIResult,
    SensitivityReport,
    Theorem1Result,
    TwoFeatureResult,
    appendix_f,
    appendix_i,
    sensitivity_report,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "FIGURE2_LINKS",
    "FIGURE3_SCALINGS",
    "FIGURE4_COLUMNS",
    "observed_colors",
    "plot_sensitivity",
    "plot_sensitivity_types",
    "plot_composite_sigmoid",
    "plot_multiclass_projections",
    "plot_two_feature",
    "plot_stochastic",
    "plot_theorem1",
]

#: Figure 2 columns: name -> (link name, parameters). The paper gives no ``alpha``/``beta``;
#: these put the scores -3..3 on the convex (right shift) or concave (left shift) side.
FIGURE2_LINKS: dict[str, tuple[str, dict[str, Any]]] = {
    "low norm": ("sigmoid", {}),
    "high score": ("sigmoid", {"beta": 4.0}),
    "low score": ("sigmoid", {"beta": -4.0}),
    "high norm": ("sinh", {}),
}

#: Figure 3 columns: name -> (scaling name, parameters). ``tanh`` gives the symmetric
#: low-norm loss the paper mentions; ``sinh`` gives a non-monotone composite sigmoid.
FIGURE3_SCALINGS: dict[str, tuple[str, dict[str, Any]]] = {
    "low norm": ("tanh", {}),
    "high score": ("exp", {}),
    "low score": ("negexp", {}),
    "high norm": ("sinh", {}),
}

#: Figure 4 columns: name -> ("decomposed", link) or ("softmax", scaling). The paper uses a
#: decomposed centred sigmoid for low norms and composite softmax with
#: :math:`q = \sinh(\alpha(z - \beta))` for the rest, left-shifted for high scores and
#: right-shifted for low ones. Scalings here use :math:`x = \alpha(z + \beta)`, so the paper's
#: left shift is ``beta > 0``.
FIGURE4_COLUMNS: dict[str, tuple[str, tuple[str, dict[str, Any]]]] = {
    "low norm": ("decomposed", ("sigmoid", {})),
    "high score": ("softmax", ("sinh", {"alpha": 0.5, "beta": 4.0})),
    "low score": ("softmax", ("sinh", {"alpha": 0.5, "beta": -4.0})),
    "high norm": ("softmax", ("sinh", {"alpha": 0.5})),
}

_OBSERVED = (-3.0, 0.0, 3.0)


def _np(x) -> np.ndarray:
    return np.asarray(A.to_numpy(x), dtype=np.float64)


def _grid(z) -> np.ndarray:
    za = np.linspace(-5.0, 5.0, 401) if z is None else np.asarray(z, dtype=np.float64).reshape(-1)
    if za.size < 2 or np.any(np.diff(za) <= 0):
        raise ValueError("`z` must be a strictly increasing grid of at least 2 points")
    return za


# ======================================================================================
# One link or scaling
# ======================================================================================


def plot_sensitivity(
    obj: SensitivityReport | Link | Scaling | str, *, title: str | None = None, **report_kwargs: Any
) -> Figure:
    r"""Figure of a :class:`~selrank.paper.underspecification.SensitivityReport`.

    Parameters
    ----------
    obj : SensitivityReport, Link, Scaling or str
        A report, or anything :func:`~selrank.paper.underspecification.sensitivity_report`
        accepts (``report_kwargs`` are passed to it).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Panels: ``h`` and ``h'`` vs :math:`z`; losses vs :math:`\hat s` per observed score;
        BUST and BLUST vs :math:`w_u`; for a scaling, first :math:`q` and :math:`p`.

    Examples
    --------
    >>> fig = plot_sensitivity("exp", z=np.linspace(-3, 3, 61))
    >>> [line.get_label() for line in fig.axes[1].get_lines()]
    ['s=-3', 's=0', 's=3']
    """
    rep = obj if isinstance(obj, SensitivityReport) else sensitivity_report(obj, **report_kwargs)
    return draw_sensitivity(rep, title=title)


# ======================================================================================
# Figure 2: four sensitivity types of scalar links
# ======================================================================================


def _links_from(spec: Mapping[str, Any]) -> dict[str, Link]:
    out = {}
    for name, v in spec.items():
        out[name] = get_link(v[0], **v[1]) if isinstance(v, tuple) else get_link(v)
    return out


def plot_sensitivity_types(
    links: Mapping[str, Any] | None = None,
    *,
    z: Array | None = None,
    observed: Sequence[float] = _OBSERVED,
) -> Figure:
    r"""Figure 2: links, slopes and matching losses of four sensitivity types.

    Parameters
    ----------
    links : mapping, optional
        ``column title -> Link`` (or ``(name, params)``); default :data:`FIGURE2_LINKS`
        (centred, right- and left-shifted sigmoid, sinh).
    z : array-like, optional
        Grid for :math:`z` and :math:`\hat s` (default 401 points on ``[-5, 5]``).
    observed : sequence of float

    Returns
    -------
    matplotlib.figure.Figure
        Top row: ``h`` (solid) and ``h'`` (dashed) vs :math:`z`; bottom row: losses vs
        :math:`\hat s` for each observed score.
    """
    cols = _links_from(FIGURE2_LINKS if links is None else links)
    za = _grid(z)
    fig, axes = new_figure(2, len(cols))
    for j, (name, link) in enumerate(cols.items()):
        rep = sensitivity_report(link, z=za, observed=observed)
        top, bottom = axes[0, j], axes[1, j]
        top.plot(za, rep.h, color="black", label="h")
        top.plot(za, rep.dh, color="purple", linestyle="--", label="h'")
        top.set_title(name)
        top.set_xlabel("z")
        top.legend(fontsize="small")
        loss_panel(bottom, za, rep.observed, rep.loss, legend=j == 0)
    axes[0, 0].set_ylabel("h(z), h'(z)")
    return fig


# ======================================================================================
# Figure 3: composite sigmoid
# ======================================================================================


def _ce_composite(link: CompositeSigmoid, z_hat: np.ndarray, s: float) -> np.ndarray:
    r"""CE loss [E.3] of a composite sigmoid, shifted to 0 at :math:`\hat s = s`.

    :math:`\gamma\log(1 + e^{Q(\hat s)/\gamma}) - p(s)\,Q(\hat s)` minus its value at
    :math:`\hat s = s`, i.e. :math:`\gamma\,\mathrm{KL}(p(s)\,\|\,p(\hat s))`.
    """
    g = link.gamma
    Qh = _np(link.scaling.Q(z_hat))
    Qs = float(_np(link.scaling.Q(np.array([s])))[0])
    ps = float(_np(link.p(np.array([s])))[0])
    return g * np.logaddexp(0.0, Qh / g) - ps * Qh - (g * np.logaddexp(0.0, Qs / g) - ps * Qs)


def plot_composite_sigmoid(
    scalings: Mapping[str, Any] | None = None,
    *,
    gamma: float = 1.0,
    z: Array | None = None,
    observed: Sequence[float] = _OBSERVED,
    cross_entropy: bool = True,
) -> Figure:
    r"""Figure 3: scaling, composite sigmoid, link and sensitivity, and losses (CE dashed).

    Parameters
    ----------
    scalings : mapping, optional
        ``column title -> Scaling`` (or ``(name, params)``); default :data:`FIGURE3_SCALINGS`
        (``tanh``, ``exp``, ``negexp``, ``sinh``).
    gamma : float
        Regulariser of the composite sigmoid.
    z : array-like, optional
    observed : sequence of float
    cross_entropy : bool
        Add the CE losses [E.3] (dashed, labelled ``"CE s=..."``), shifted to 0 at
        :math:`\hat s = s`; they are not selective (their gradient is
        :math:`q(\hat s)[p(\hat s) - p(s)]`, [E.4]).

    Returns
    -------
    matplotlib.figure.Figure
        Rows: :math:`q(z)`; :math:`p(z) = \sigma(Q(z)/\gamma)`; :math:`h = q p` (solid) and
        :math:`h'` (dashed); losses [24] vs :math:`\hat s`.
    """
    spec = FIGURE3_SCALINGS if scalings is None else scalings
    za = _grid(z)
    fig, axes = new_figure(4, len(spec))
    for j, (name, v) in enumerate(spec.items()):
        sc = v if isinstance(v, Scaling) else get_scaling(v[0], **v[1])
        rep = sensitivity_report(sc, z=za, observed=observed, gamma=gamma)
        ax_q, ax_p, ax_h, ax_l = axes[:, j]
        ax_q.plot(za, rep.q, color="black", label="q")
        ax_q.set_title(name)
        ax_p.plot(za, rep.p, color="black", label="p")
        ax_h.plot(za, rep.h, color="black", label="h")
        ax_h.plot(za, rep.dh, color="purple", linestyle="--", label="h'")
        for ax in (ax_q, ax_p, ax_h):
            ax.set_xlabel("z")
        loss_panel(ax_l, za, rep.observed, rep.loss, legend=False)
        if cross_entropy:
            # the report of a Scaling is that of its CompositeSigmoid (sensitivity_report)
            composite = cast(CompositeSigmoid, rep.link)
            ce = [_ce_composite(composite, za, s) for s in rep.observed]
            loss_panel(
                ax_l, za, rep.observed, ce, linestyle="--", label_prefix="CE s=", legend=j == 0
            )
    axes[0, 0].set_ylabel("q(z)")
    axes[1, 0].set_ylabel("p(z)")
    axes[2, 0].set_ylabel("h(z), h'(z)")
    return fig


# ======================================================================================
# Figure 4: multi-class links and loss projections
# ======================================================================================


def _column(kind: str, spec: Any):
    if kind == "decomposed":
        return get_link(spec[0], **spec[1]) if isinstance(spec, tuple) else get_link(spec)
    if kind == "softmax":
        return spec if isinstance(spec, Scaling) else get_scaling(spec[0], **spec[1])
    raise ValueError(
        f"Figure 4 columns are ('decomposed', link) or ('softmax', scaling); got kind {kind!r}"
    )


def _multiclass_curves(
    kind: str, obj, gamma: float, s: np.ndarray, za: np.ndarray, k: int, z_other: np.ndarray
):
    """``(h_k, h'_k, loss)`` along ``z_k = za`` with the other entries at ``z_other``."""
    Z = np.tile(z_other, (za.size, 1))
    Z[:, k] = za
    S = np.tile(s, (za.size, 1))
    if kind == "decomposed":
        hk, dhk = (_np(v) for v in obj.h_dh(za))
        loss = np.sum(_np(obj.bregman(Z, S)), axis=1)
        return hk, dhk, loss
    lists = DenseLists()
    parts = composite_softmax(obj, gamma, Z, lists)
    hk = _np(parts["h"])[:, k]
    dhk = _np(composite_softmax_hess_diag(parts, gamma))[:, k]
    loss = _np(composite_softmax_bregman(obj, gamma, Z, S, lists))
    return hk, dhk, loss


def plot_multiclass_projections(
    columns: Mapping[str, Any] | None = None,
    *,
    gamma: float = 1.0,
    z: Array | None = None,
    observed: Sequence[float] = _OBSERVED,
    delta: float = 0.5,
) -> Figure:
    r"""Figure 4: multi-class links, scalar losses and multi-class loss projections.

    The observed score vector is ``s = observed`` (one class per observed score, K = 3 by
    default).

    Parameters
    ----------
    columns : mapping, optional
        ``title -> ("decomposed", link) | ("softmax", scaling)``; default
        :data:`FIGURE4_COLUMNS`.
    gamma : float
        Composite softmax / sigmoid regulariser.
    z : array-like, optional
    observed : sequence of float
    delta : float
        Mis-prediction of the other classes for the dotted projections.

    Returns
    -------
    matplotlib.figure.Figure
        Top: :math:`h_k(z)` (solid, ``"h_k s=..."``) and the Hessian diagonal :math:`h'_k(z)`
        (dashed, ``"h'_k s=..."``) vs :math:`z_k` with :math:`z_j = s_j`; middle: scalar
        losses (the decomposed link, or the composite sigmoid [24] of the scaling);
        bottom: the multi-class loss [29] vs :math:`\hat s_k` with :math:`\hat s_j = s_j`
        (solid) or :math:`s_j \pm \delta` (dotted, ``"s=... +δ"`` / ``"-δ"``, shifted to a
        zero minimum).
    """
    spec = FIGURE4_COLUMNS if columns is None else columns
    za = _grid(z)
    s = np.asarray(observed, dtype=np.float64)
    if s.ndim != 1 or s.size < 2:
        raise ValueError(
            f"`observed` must hold at least 2 scores (one per class); got {observed!r}"
        )
    delta = finite_float(delta, "delta", "plot_multiclass_projections")
    colors = observed_colors(list(s))
    fig, axes = new_figure(3, len(spec))
    for j, (name, (kind, v)) in enumerate(spec.items()):
        obj = _column(kind, v)
        ax_h, ax_s, ax_m = axes[:, j]
        scalar = obj if kind == "decomposed" else CompositeSigmoid(obj, gamma=gamma)
        for k, (sk, c) in enumerate(zip(s, colors)):
            hk, dhk, loss = _multiclass_curves(kind, obj, gamma, s, za, k, s)
            ax_h.plot(za, hk, color=c, label=f"h_k s={sk:g}")
            ax_h.plot(za, dhk, color=c, linestyle="--", label=f"h'_k s={sk:g}")
            ax_s.plot(za, _np(scalar.bregman(za, np.full_like(za, sk))), color=c, label=f"s={sk:g}")
            ax_m.plot(za, loss, color=c, label=f"s={sk:g}")
            for sign in (1.0, -1.0):
                other = s + sign * delta
                other[k] = s[k]
                _, _, shifted = _multiclass_curves(kind, obj, gamma, s, za, k, other)
                ax_m.plot(
                    za,
                    shifted - shifted.min(),
                    color=c,
                    linestyle=":",
                    label=f"s={sk:g} {'+' if sign > 0 else '-'}δ",
                )
        ax_h.set_title(name)
        ax_h.set_xlabel(r"$z_k$")
        ax_s.set_xlabel(r"$\hat s$")
        ax_m.set_xlabel(r"$\hat s_k$")
    axes[0, 0].set_ylabel(r"$h_k$, $h'_k$")
    axes[1, 0].set_ylabel("scalar loss")
    axes[2, 0].set_ylabel("multi-class loss")
    axes[2, 0].legend(fontsize="x-small", ncol=1)
    return fig


# ======================================================================================
# Appendix F, Appendix I, Theorem 1
# ======================================================================================


def plot_two_feature(
    results: Mapping[str, TwoFeatureResult] | None = None, *, z: Array | None = None
) -> Figure:
    r"""Appendix F (Figure F.1): data, links, and predicted vs observed labels per link.

    Parameters
    ----------
    results : mapping, optional
        ``name -> TwoFeatureResult``; default :func:`~selrank.paper.underspecification.appendix_f`.
    z : array-like, optional
        Grid for the link panels (default the label range, padded by 1).

    Returns
    -------
    matplotlib.figure.Figure
        One row per link: the observed label at each :math:`(x_1, x_2)` (colour), the link,
        and predicted vs observed labels with the identity line (``"identity"``) and the
        learned weights in the title.
    """
    res = appendix_f() if results is None else results
    fig, axes = new_figure(len(res), 3)
    for i, (name, r) in enumerate(res.items()):
        ax_d, ax_link, ax_p = axes[i]
        sc = ax_d.scatter(r.X[:, 0], r.X[:, 1], c=r.y, cmap="coolwarm", label="observed")
        fig.colorbar(sc, ax=ax_d, label="label s")
        ax_d.set_xlabel("$x_1$")
        ax_d.set_ylabel("$x_2$")
        ax_d.set_title(f"{name}: data")
        lo, hi = float(r.y.min()) - 1.0, float(r.y.max()) + 1.0
        za = np.linspace(lo, hi, 301) if z is None else _grid(z)
        ax_link.plot(za, _np(r.link.h(za)), color="black", label="h")
        ax_link.set_xlabel("z")
        ax_link.set_ylabel("h(z)")
        ax_link.set_title(repr(r.link))
        ax_p.scatter(r.y, r.y_pred, color="black", label="prediction")
        ax_p.plot([lo, hi], [lo, hi], color="gray", linestyle="--", label="identity")
        ax_p.set_xlabel("observed s")
        ax_p.set_ylabel(r"predicted $\hat s$")
        ax_p.set_title(f"w = ({r.coef[0]:.3f}, {r.coef[1]:.3f})")
    return fig


def plot_stochastic(result: AppendixIResult | None = None) -> Figure:
    r"""Appendix I (Figure I.1): optimal predictions of stochastic scores under exponential links.

    Parameters
    ----------
    result : AppendixIResult, optional
        Default :func:`~selrank.paper.underspecification.appendix_i`.

    Returns
    -------
    matplotlib.figure.Figure
        Left: estimate vs the large score, one line per :math:`\alpha` (``"alpha=..."``) and the
        fixed mean (``"mean"``); right: estimate vs deviation, one line per :math:`\alpha` and
        mean (``"alpha=..., mean=..."``).
    """
    r = appendix_i() if result is None else result
    fig, axes = new_figure(1, 2, size=(4.2, 3.2))
    left, right = axes[0]
    colors = (
        observed_colors(list(r.alphas))
        if r.alphas.size != 3
        else ["tab:red", "tab:green", "tab:blue"]
    )
    for a, est, c in zip(r.alphas, r.left_estimates, colors):
        left.plot(r.left_x, est, color=c, marker=".", label=f"alpha={a:g}")
    left.plot(
        r.left_x, np.full_like(r.left_x, r.left_mean), color="gray", linestyle="--", label="mean"
    )
    left.set_xlabel("large score")
    left.set_ylabel("optimal prediction")
    left.set_title(f"one large score, mean {r.left_mean:g}")
    left.legend(fontsize="small")
    styles = ["-", "--", ":", "-."]
    for a, est, c in zip(r.alphas, r.right_estimates, colors):
        for m, row, ls in zip(r.right_means, est, styles * (len(r.right_means) // 4 + 1)):
            right.plot(r.right_x, row, color=c, linestyle=ls, label=f"alpha={a:g}, mean={m:g}")
    right.set_xlabel("deviation from the mean")
    right.set_ylabel("optimal prediction")
    right.set_title("two scores mean ± deviation")
    right.legend(fontsize="x-small")
    return fig


def plot_theorem1(results: Mapping[str, Theorem1Result] | Sequence[Theorem1Result]) -> Figure:
    r"""BUST per case: closed form [10], exact optimum [12] (τ → 0) and the fitted offset.

    Parameters
    ----------
    results : mapping or sequence of Theorem1Result
        E.g. ``{name: check_theorem1(...)}``.

    Returns
    -------
    matplotlib.figure.Figure
        Three series against the case index: ``"theory"`` (markers), ``"exact [12]"``
        (the extrapolated optimum) and ``"fitted"`` (with ±2 standard-error bars).
    """
    items = (
        list(results.items())
        if isinstance(results, Mapping)
        else [(str(i), r) for i, r in enumerate(results)]
    )
    if not items:
        raise ValueError("`results` is empty")
    names = [n for n, _ in items]
    x = np.arange(len(items), dtype=np.float64)
    theory = np.array([r.bust for _, r in items])
    exact = np.array([r.extrapolated for _, r in items])
    fitted = np.array([r.fitted for _, r in items])
    se = np.array([r.fitted_se for _, r in items])
    fig, axes = new_figure(1, 1, size=(max(6.0, 0.5 * len(items)), 3.5))
    ax = axes[0, 0]
    ax.plot(x, theory, linestyle="none", marker="o", color="black", label="theory")
    ax.plot(x - 0.15, exact, linestyle="none", marker="x", color="tab:blue", label="exact [12]")
    ax.errorbar(
        x + 0.15, fitted, yerr=2 * se, linestyle="none", marker="s", color="tab:red", label="fitted"
    )
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize="small")
    ax.set_ylabel(r"$\Delta_{\rm BUST}$")
    ax.set_title("Theorem 1: BUST")
    ax.legend(fontsize="small")
    return fig
