r"""Plots for offline ranking evaluation, training and dwell-time modelling.

Each function draws on the library's own numbers (:func:`selrank.metrics.evaluate`,
:func:`selrank.metrics.calibration_table`, :func:`selrank.dwell.dwell_mixture`,
:func:`selrank.paper.sensitivity_report`) and returns the
:class:`~matplotlib.figure.Figure` it created, or the ``ax`` it was given. Figures are made
without pyplot and display inline in Jupyter (:func:`selrank.plots.enable_inline`).

* :func:`plot_comparison` — paired per-query differences against a reference system: mean
  difference with a bootstrap CI, and the sorted per-query differences (where a system wins).
* :func:`plot_metric_at_k` — a metric against its cut-off ``k`` for several systems.
* :func:`plot_training_curves` — metric history on the eval sets of a fitted estimator
  (``evals_result_``, ``best_iteration_``) or a LightGBM / XGBoost ``evals_result`` dict.
* :func:`plot_calibration` — binned mean prediction vs mean observation (dwell models).
* :func:`plot_dwell_band` — the dwell histogram with the fitted bounce / engaged / idle
  mixture and the engaged band.
* :func:`plot_link_sensitivity` — slopes :math:`h'` and matching losses of candidate links
  over a region of interest (one link in detail: :func:`selrank.plots.plot_sensitivity`).

Every line carries a ``label`` (a system, an eval set, a mixture component), which is what
the tests read.

Examples
--------
>>> import numpy as np
>>> from selrank.plots import plot_comparison
>>> rng = np.random.default_rng(0)
>>> base = rng.uniform(size=50)
>>> fig = plot_comparison({"bm25": base, "model": base + 0.05}, "bm25", metric="ndcg@10")
>>> [line.get_label() for line in fig.axes[0].get_lines()][:2]
['model', 'model CI']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from .._array import Array
from .._display import new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..dwell import DwellMixture

#: What ``ax=`` takes, and what a plot returns when given it: one matplotlib ``Axes``, or a
#: sequence (or array) of them, one per panel.
AxesLike: TypeAlias = "Axes | Sequence[Axes] | np.ndarray"

__all__ = [
    "plot_comparison",
    "plot_metric_at_k",
    "plot_training_curves",
    "plot_calibration",
    "plot_dwell_band",
    "plot_link_sensitivity",
]

_QUERY_COLUMNS = ("query", "n_docs", "n_relevant")


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _axes_list(ax, n: int, fn: str) -> list:
    """The ``n`` axes a caller passed (one Axes or a sequence of them)."""
    if hasattr(ax, "plot"):
        axes = [ax]
    else:
        axes = list(np.asarray(ax, dtype=object).reshape(-1))
    if len(axes) != n or not all(hasattr(a, "plot") for a in axes):
        raise ValueError(f"{fn}: `ax` must hold {n} matplotlib Axes; got {len(axes)}")
    return axes


def _vector(x: Any, name: str) -> np.ndarray:
    try:
        from .._array import to_numpy

        v = np.asarray(to_numpy(x), dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"`{name}` must be a 1-D array of numbers; got {type(x).__name__}"
        ) from None
    if v.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; got shape {v.shape}")
    return v


def _is_frame(x: Any) -> bool:
    return hasattr(x, "columns") and hasattr(x, "__getitem__") and not isinstance(x, np.ndarray)


def _frame_column(frame: Any, col: str) -> np.ndarray:
    s = frame[col]
    return np.asarray(s.to_numpy() if hasattr(s, "to_numpy") else s, dtype=np.float64)


def _per_query(
    scores: Mapping[str, Any], metrics, metric: str | None
) -> dict[str, dict[str, np.ndarray]]:
    """``metric -> system -> per-query values`` from arrays or per-query frames."""
    if not isinstance(scores, Mapping) or len(scores) < 2:
        raise ValueError("`scores` must map at least two system names to their per-query values")
    values = list(scores.values())
    if all(_is_frame(v) for v in values):
        first = values[0]
        cols = [str(c) for c in first.columns if str(c) not in _QUERY_COLUMNS]
        names = (
            list(cols)
            if metrics is None
            else [metrics]
            if isinstance(metrics, str)
            else list(metrics)
        )
        if not names:
            raise ValueError("the per-query frames have no metric column")
        queries = None
        out: dict[str, dict[str, np.ndarray]] = {m: {} for m in names}
        for system, frame in scores.items():
            missing = [m for m in names if m not in [str(c) for c in frame.columns]]
            if missing:
                raise ValueError(
                    f"per-query frame of {system!r} lacks the metric columns {missing}"
                )
            if "query" in [str(c) for c in frame.columns]:
                q = np.asarray(
                    frame["query"].to_numpy()
                    if hasattr(frame["query"], "to_numpy")
                    else frame["query"]
                )
                if queries is None:
                    queries = q
                elif q.shape != queries.shape or not np.array_equal(q, queries):
                    raise ValueError(
                        f"per-query frame of {system!r} lists other queries than the first system's"
                    )
            for m in names:
                out[m][str(system)] = _frame_column(frame, m)
        return out
    if any(_is_frame(v) for v in values):
        raise TypeError("`scores` must hold either per-query arrays or per-query frames, not a mix")
    if metrics is not None:
        raise ValueError(
            "`metrics` selects columns of per-query frames; with arrays name the one metric by `metric`"
        )
    arrays = {str(k): _vector(v, f"scores[{k!r}]") for k, v in scores.items()}
    sizes = {k: v.size for k, v in arrays.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"per-query arrays must have one value per query each; got sizes {sizes}")
    return {metric or "score": arrays}


def _paired_bootstrap(
    d: np.ndarray, *, n_resamples: int, level: float, seed
) -> tuple[float, float, float]:
    """Mean of the paired differences and its percentile bootstrap CI over queries."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(int(n_resamples), d.size))
    means = d[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(d.mean()), float(lo), float(hi)


# --------------------------------------------------------------------------------------
# system comparison
# --------------------------------------------------------------------------------------


def plot_comparison(
    scores: Mapping[str, Any],
    reference: str | None = None,
    *,
    metrics: str | Sequence[str] | None = None,
    metric: str | None = None,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    ax: AxesLike | None = None,
) -> Figure | AxesLike:
    r"""Paired comparison of systems against a reference, per query, with bootstrap CIs.

    For each metric and each system other than the reference, the per-query differences
    :math:`d_q = m_q(\text{system}) - m_q(\text{reference})` over the queries both systems
    score (non-NaN) are summarised by their mean and a percentile bootstrap interval
    (queries resampled with replacement, ``n_resamples`` times, seeded).

    Parameters
    ----------
    scores : mapping of name -> per-query values
        Either 1-D arrays (one metric value per query, in the same query order for every
        system; name the metric with ``metric``) or per-query frames of
        :func:`selrank.metrics.evaluate` with ``per_query=True`` (polars or pandas; one panel
        row per metric column).
    reference : str, optional
        The system the others are compared to (default: the first).
    metrics : str or sequence of str, optional
        Metric columns of per-query frames (default: all).
    metric : str, optional
        Name of the metric of per-query arrays (axis labels).
    n_resamples : int
        Bootstrap resamples.
    level : float
        Confidence level of the interval, in (0, 1).
    seed : int or numpy.random.Generator
        Seed of the bootstrap (the same for every system and metric).
    ax : array of Axes, optional
        ``2 * n_metrics`` axes (``(n_metrics, 2)`` or flat) to draw into.

    Returns
    -------
    matplotlib.figure.Figure or the given axes
        Per metric, left: the mean difference of each system (a point labelled with its name)
        and its CI (a segment labelled ``"<name> CI"``), a dashed ``"no difference"`` line; right: each
        system's per-query differences sorted from its best to its worst query (labelled
        ``"<name>: W better, L worse"``), so the share and size of wins and losses is read off.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> a = rng.uniform(size=40)
    >>> fig = plot_comparison({"a": a, "b": a + rng.normal(0.1, 0.05, 40)}, metric="map")
    >>> mean, = fig.axes[0].get_lines()[0].get_xdata()
    >>> lo, hi = fig.axes[0].get_lines()[1].get_xdata()
    >>> bool(lo < mean < hi and lo > 0)
    True
    """
    table = _per_query(scores, metrics, metric)
    systems = list(next(iter(table.values())))
    reference = systems[0] if reference is None else str(reference)
    if reference not in systems:
        raise ValueError(f"`reference` {reference!r} is not one of the systems {systems}")
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 10
    ):
        raise ValueError(f"`n_resamples` must be an int >= 10; got {n_resamples!r}")
    if not (isinstance(level, int | float) and 0.0 < level < 1.0):
        raise ValueError(f"`level` must be in (0, 1); got {level!r}")
    others = [s for s in systems if s != reference]
    n_m = len(table)
    if ax is None:
        fig, grid = new_figure(n_m, 2, size=(4.2, max(1.6, 0.5 * len(others) + 1.2)))
        out = fig
    else:
        grid = np.asarray(_axes_list(ax, 2 * n_m, "plot_comparison"), dtype=object).reshape(n_m, 2)
        out = ax
    colors = [f"C{i}" for i in range(len(others))]
    for row, (name, per_system) in enumerate(table.items()):
        left, right = grid[row]
        base = per_system[reference]
        for i, (system, color) in enumerate(zip(others, colors)):
            v = per_system[system]
            keep = ~(np.isnan(v) | np.isnan(base))
            d = v[keep] - base[keep]
            if d.size == 0:
                raise ValueError(f"{name}: {system!r} and {reference!r} share no scored query")
            mean, lo, hi = _paired_bootstrap(d, n_resamples=n_resamples, level=level, seed=seed)
            y = len(others) - 1 - i
            left.plot([mean], [y], marker="o", linestyle="none", color=color, label=system)
            left.plot([lo, hi], [y, y], color=color, linewidth=2.5, label=f"{system} CI")
            better, worse = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
            right.plot(
                np.arange(1, d.size + 1),
                np.sort(d)[::-1],
                color=color,
                drawstyle="steps-mid",
                label=f"{system}: {better} better, {worse} worse",
            )
        left.axvline(0.0, color="gray", linestyle="--", linewidth=1, label="no difference")
        left.set_yticks(range(len(others)))
        left.set_yticklabels(others[::-1])
        left.set_ylim(-0.6, len(others) - 0.4)
        left.set_xlabel(f"mean Δ {name} vs {reference}")
        left.set_title(f"{name}: mean difference, {level:.0%} bootstrap CI", fontsize="medium")
        right.axhline(0.0, color="gray", linestyle="--", linewidth=1, label="no difference")
        right.set_xlabel("queries, sorted by difference")
        right.set_ylabel(f"Δ {name}")
        right.set_title(f"{name}: per-query difference vs {reference}", fontsize="medium")
        right.legend(fontsize="small")
    return out


# --------------------------------------------------------------------------------------
# metric vs cut-off
# --------------------------------------------------------------------------------------


def plot_metric_at_k(
    y_true: Array,
    systems: Mapping[str, Any],
    group: Array | None = None,
    *,
    metric: str = "ndcg",
    ks: Sequence[int] = tuple(range(1, 21)),
    ax: AxesLike | None = None,
    **evaluate_kwargs: Any,
) -> Figure | AxesLike:
    """A ranking metric against its cut-off ``k``, one line per system.

    Parameters
    ----------
    y_true, group
        Labels and queries, as in :func:`selrank.metrics.evaluate`.
    systems : mapping of name -> scores
        Scores per system, aligned with ``y_true``.
    metric : str
        A metric name without cut-off (``"ndcg"``, ``"map"``, ``"precision"``, ...).
    ks : sequence of int
        Cut-offs.
    ax : Axes, optional
    **evaluate_kwargs
        Conventions passed to :func:`selrank.metrics.evaluate` (``conventions``, ``gain``,
        ``ties``, ``no_relevant``, ...).

    Returns
    -------
    matplotlib.figure.Figure or the given Axes
        One line per system (labelled with its name): mean ``metric@k`` over the queries.

    Examples
    --------
    >>> y = np.array([2, 0, 1, 0, 1, 0])
    >>> fig = plot_metric_at_k(y, {"perfect": y, "reversed": -y}, [3, 3], ks=[1, 2, 3])
    >>> fig.axes[0].get_lines()[0].get_ydata().tolist()
    [1.0, 1.0, 1.0]
    """
    from ..metrics import evaluate

    if "@" in str(metric):
        raise ValueError(
            f"`metric` is a name without cut-off (the cut-offs are `ks`); got {metric!r}"
        )
    if not isinstance(systems, Mapping) or not systems:
        raise ValueError("`systems` must map at least one name to its scores")
    kk = [int(k) for k in ks]
    if not kk or any(k < 1 for k in kk):
        raise ValueError(f"`ks` must be positive cut-offs; got {ks!r}")
    names = [f"{metric}@{k}" for k in kk]
    if ax is None:
        fig, axes = new_figure(1, 1, size=(5.0, 3.4))
        target, out = axes[0, 0], fig
    else:
        target = out = _axes_list(ax, 1, "plot_metric_at_k")[0]
    for system, score in systems.items():
        frame = evaluate(y_true, score, group, metrics=names, **evaluate_kwargs)
        means = dict(zip(frame["metric"].to_list(), frame["mean"].to_list()))
        target.plot(kk, [means[n] for n in names], marker=".", label=str(system))
    from matplotlib.ticker import MaxNLocator

    target.xaxis.set_major_locator(MaxNLocator(integer=True))
    target.set_xlabel("cut-off k")
    target.set_ylabel(f"mean {metric}@k")
    conv = evaluate_kwargs.get("conventions")
    target.set_title(f"{metric}@k" + (f" ({conv} conventions)" if conv else ""), fontsize="medium")
    target.legend(fontsize="small")
    return out


# --------------------------------------------------------------------------------------
# training curves
# --------------------------------------------------------------------------------------


def _history(history) -> tuple[dict[str, dict[str, list[float]]], int | None]:
    best = None
    if hasattr(history, "evals_result_"):
        best = getattr(history, "best_iteration_", None)
        history = history.evals_result_
    elif hasattr(history, "get_params") and not isinstance(history, Mapping):
        raise ValueError(
            f"{type(history).__name__} has no `evals_result_`: fit it with an `eval_set` first"
        )
    if not isinstance(history, Mapping) or not history:
        raise ValueError(
            "`history` must be a fitted estimator with `evals_result_` or a non-empty "
            "{eval set: {metric: [values]}} / {metric: [values]} mapping"
        )
    if all(isinstance(v, Mapping) for v in history.values()):
        sets = {
            str(k): {str(m): list(map(float, vals)) for m, vals in v.items()}
            for k, v in history.items()
        }
    elif not any(isinstance(v, Mapping) for v in history.values()):
        sets = {"": {str(m): list(map(float, vals)) for m, vals in history.items()}}
    else:
        raise ValueError("`history` mixes eval sets ({metric: values}) and metric lists")
    if not any(vals for per in sets.values() for vals in per.values()):
        raise ValueError("`history` holds no values (was the model fitted with an eval_set?)")
    return sets, best


def plot_training_curves(
    history: Any,
    *,
    metrics: str | Sequence[str] | None = None,
    names: Mapping[str, str] | None = None,
    best_iteration: int | None = None,
    ax: AxesLike | None = None,
) -> Figure | AxesLike:
    """Metric history per boosting round (or epoch) on each eval set.

    Parameters
    ----------
    history : estimator or mapping
        A fitted :class:`~selrank.SelectiveRanker` / ``SelectiveRegressor`` /
        :class:`~selrank.estimators.NeuralRanker` (its ``evals_result_`` and ``best_iteration_``),
        LightGBM's or XGBoost's ``evals_result`` (``{eval set: {metric: [values]}}``), or
        one set's ``{metric: [values]}``.
    metrics : str or sequence of str, optional
        Metrics to draw, one panel each (default: every metric found).
    names : mapping, optional
        Display names of the eval sets, e.g. ``{"valid_0": "validation", "valid_1": "train"}``;
        the sets it names are drawn first, in its order (so colours match across models).
    best_iteration : int, optional
        Round (1-based) to mark; default the estimator's ``best_iteration_``.
    ax : Axes or sequence of Axes, optional
        One per metric.

    Returns
    -------
    matplotlib.figure.Figure or the given axes
        Per metric a panel with one line per eval set (labelled with its display name) over
        rounds ``1..n``, and a dotted vertical line ``"best iteration"``.

    Examples
    --------
    >>> hist = {"train": {"loss": [0.9, 0.5, 0.4]}, "valid_0": {"ndcg@10": [0.4, 0.5, 0.45]}}
    >>> fig = plot_training_curves(hist, best_iteration=2, names={"valid_0": "validation"})
    >>> [ax.get_title() for ax in fig.axes], fig.axes[1].get_lines()[0].get_label()
    (['loss', 'ndcg@10'], 'validation')
    """
    sets, best = _history(history)
    best = best if best_iteration is None else int(best_iteration)
    found: list[str] = []
    for per in sets.values():
        found += [m for m in per if m not in found]
    wanted = found if metrics is None else [metrics] if isinstance(metrics, str) else list(metrics)
    missing = [m for m in wanted if m not in found]
    if missing or not wanted:
        raise ValueError(f"metrics {missing or wanted} are not in the history; it has {found}")
    names = dict(names or {})
    if ax is None:
        fig, axes = new_figure(1, len(wanted), size=(4.2, 3.0))
        panels, out = list(axes[0]), fig
    else:
        panels = out = _axes_list(ax, len(wanted), "plot_training_curves")
        out = ax
    order = [k for k in names if k in sets] + [k for k in sets if k not in names]
    for panel, m in zip(panels, wanted):
        for key in order:
            per = sets[key]
            if m in per and per[m]:
                vals = per[m]
                panel.plot(np.arange(1, len(vals) + 1), vals, label=names.get(key, key) or m)
        if best is not None:
            panel.axvline(best, color="gray", linestyle=":", label="best iteration")
        panel.set_xlabel("iteration")
        panel.set_ylabel(m)
        panel.set_title(m, fontsize="medium")
        panel.legend(fontsize="small")
    return out


# --------------------------------------------------------------------------------------
# dwell time: calibration, band and mixture
# --------------------------------------------------------------------------------------


def plot_calibration(
    y_true: Array,
    y_pred: Array,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    space: str = "log",
    band: Sequence[float] | None = None,
    ax: AxesLike | None = None,
) -> Figure | AxesLike:
    """Mean observation against mean prediction in bins of the prediction, per model.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        Observed dwell, log1p seconds.
    y_pred : array-like or mapping of name -> array-like
        Predictions in log1p seconds (a mapping draws several models).
    n_bins, strategy, space
        As in :func:`selrank.metrics.calibration_table` (the numbers drawn are its
        ``mean_pred`` and ``mean_true``).
    band : (lo, hi), optional
        The engaged band (log1p seconds), shaded and labelled ``"band"`` (in ``space``) over
        the range of the drawn bins.
    ax : Axes, optional

    Returns
    -------
    matplotlib.figure.Figure or the given Axes
        One line with markers per model (labelled with its name), the ``"identity"`` line of a
        calibrated model, the expected calibration errors in the title.

    Examples
    --------
    >>> y = np.log1p(np.arange(1.0, 101.0))
    >>> fig = plot_calibration(y, {"exact": y}, n_bins=4)
    >>> line = fig.axes[0].get_lines()[0]
    >>> line.get_label(), bool(np.allclose(line.get_xdata(), line.get_ydata()))
    ('exact', True)
    """
    from ..metrics import calibration_table, expected_calibration_error

    models = dict(y_pred) if isinstance(y_pred, Mapping) else {"model": y_pred}
    if not models:
        raise ValueError("`y_pred` is an empty mapping")
    if ax is None:
        fig, axes = new_figure(1, 1, size=(4.4, 4.0))
        target, out = axes[0, 0], fig
    else:
        target = out = _axes_list(ax, 1, "plot_calibration")[0]
    lo, hi = math.inf, -math.inf
    eces = []
    for name, pred in models.items():
        t = calibration_table(
            y_true, pred, n_bins=n_bins, strategy=strategy, space=space, as_frame=False
        )
        target.plot(t["mean_pred"], t["mean_true"], marker="o", label=str(name))
        lo = min(lo, float(np.min(t["mean_pred"])), float(np.min(t["mean_true"])))
        hi = max(hi, float(np.max(t["mean_pred"])), float(np.max(t["mean_true"])))
        ece = expected_calibration_error(
            y_true, pred, n_bins=n_bins, strategy=strategy, space=space
        )
        eces.append(f"{name} {ece:.3g}")
    target.plot([lo, hi], [lo, hi], color="gray", linestyle="--", label="identity")
    if band is not None:
        b0, b1 = float(band[0]), float(band[1])
        if space == "seconds":
            b0, b1 = math.expm1(b0), math.expm1(b1)
        xlim = target.get_xlim()  # shade the band where the predictions are; do not zoom out to it
        target.axvspan(
            max(b0, xlim[0]), min(b1, xlim[1]), color="tab:green", alpha=0.08, label="band"
        )
        target.set_xlim(xlim)
    unit = "log1p s" if space == "log" else "s"
    target.set_xlabel(f"mean prediction ({unit})")
    target.set_ylabel(f"mean observed ({unit})")
    target.set_title("calibration; ECE: " + ", ".join(eces), fontsize="medium")
    target.legend(fontsize="small")
    return out


def _component_names(mixture) -> list[str]:
    k, e = len(mixture.means), int(mixture.engaged)
    if k == 3 and e == 1:
        return ["bounce", "engaged", "idle"]
    return [f"component {i}" + (" (engaged)" if i == e else "") for i in range(k)]


def plot_dwell_band(
    y_log: Array,
    band: Sequence[float] | None = None,
    *,
    mixture: DwellMixture | None = None,
    bins: int = 80,
    ax: AxesLike | None = None,
) -> Figure | AxesLike:
    """The dwell histogram with the fitted mixture and the engaged band.

    Parameters
    ----------
    y_log : array-like, shape (n,)
        Observed dwell, log1p seconds (the training period).
    band : DwellBand or (lo, hi), optional
        The band to shade; default ``mixture.band()`` — what
        :func:`selrank.dwell.suggest_band` returns with its defaults.
    mixture : DwellMixture, optional
        Default :func:`selrank.dwell.dwell_mixture` of ``y_log``.
    bins : int
        Histogram bins.
    ax : Axes, optional

    Returns
    -------
    matplotlib.figure.Figure or the given Axes
        The density histogram (label ``"dwell"``), each weighted component density
        (``"bounce"``, ``"engaged"``, ``"idle"`` for three components, otherwise
        ``"component i"``), their sum (``"mixture"``), the band shaded (``"band ..."``) and a
        top axis in seconds.

    Examples
    --------
    >>> from selrank.datasets import make_dwell
    >>> fig = plot_dwell_band(make_dwell(5_000, seed=0).y)
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['bounce', 'engaged', 'idle', 'mixture']
    """
    from ..dwell import dwell_mixture

    y = _vector(y_log, "y_log")
    if y.size == 0 or not np.all(np.isfinite(y)):
        raise ValueError("`y_log` must be a non-empty vector of finite log1p dwell")
    mix = dwell_mixture(y) if mixture is None else mixture
    b = mix.band() if band is None else band
    b0, b1 = float(b[0]), float(b[1])
    if ax is None:
        fig, axes = new_figure(1, 1, size=(6.0, 3.4))
        target, out = axes[0, 0], fig
    else:
        target = out = _axes_list(ax, 1, "plot_dwell_band")[0]
    target.hist(y, bins=int(bins), density=True, color="lightgray", label="dwell")
    grid = np.linspace(float(y.min()), float(y.max()), 400)
    total = np.zeros_like(grid)
    for name, w, mu, sd in zip(_component_names(mix), mix.weights, mix.means, mix.sds):
        pdf = w * np.exp(-0.5 * ((grid - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        total += pdf
        target.plot(grid, pdf, linestyle="--", label=name)
    target.plot(grid, total, color="black", label="mixture")
    s0, s1 = math.expm1(b0), math.expm1(b1)
    target.axvspan(b0, b1, color="tab:green", alpha=0.12, label=f"band {s0:.3g}–{s1:.3g} s")
    target.set_xlabel("dwell, log1p seconds")
    target.set_ylabel("density")
    inside = float(np.mean((y >= b0) & (y <= b1)))
    target.set_title(f"dwell and the engaged band ({inside:.0%} of rows inside)", fontsize="medium")
    top = target.secondary_xaxis(
        "top",
        functions=(lambda v: np.expm1(np.maximum(v, 0.0)), lambda s: np.log1p(np.maximum(s, 0.0))),
    )
    ticks = [
        t
        for t in (1, 10, 60, 600, 3600, 36000)
        if float(y.min()) <= math.log1p(t) <= float(y.max())
    ]
    top.set_xticks(ticks)
    top.set_xticklabels(
        [
            {1: "1 s", 10: "10 s", 60: "1 min", 600: "10 min", 3600: "1 h", 36000: "10 h"}[t]
            for t in ticks
        ]
    )
    target.legend(fontsize="small")
    return out


# --------------------------------------------------------------------------------------
# link / scaling sensitivity
# --------------------------------------------------------------------------------------


def plot_link_sensitivity(
    links: Mapping[str, Any] | Sequence[Any],
    *,
    z: Array | None = None,
    region: tuple[float, float] | None = None,
    observed: float | None = None,
    normalize: bool = True,
    ax: AxesLike | None = None,
) -> Figure | AxesLike:
    r"""Where candidate links make the loss sensitive: :math:`h'` and the matching loss.

    Parameters
    ----------
    links : mapping of name -> link, or sequence of links
        Links, scalings (through their composite sigmoid) or registry names — anything
        :func:`selrank.paper.sensitivity_report` takes; a sequence is named by ``repr``.
    z : array-like, optional
        Score grid (default 401 points on ``[-5, 5]``).
    region : (lo, hi), optional
        The score region that matters, shaded (label ``"region"``).
    observed : float, optional
        Observed score of the loss curves (default the middle of ``region``, else 0).
    normalize : bool
        Scale each slope and each loss curve to a maximum of 1 on the grid: a link times a
        constant is the same loss up to that constant, so only shapes are comparable.
    ax : two Axes, optional

    Returns
    -------
    matplotlib.figure.Figure or the given axes
        Left: :math:`h'(z)` per link (labelled with its name); right: the loss
        :math:`L(\hat s, s)` vs :math:`\hat s` for the observed score, per link.

    Examples
    --------
    >>> fig = plot_link_sensitivity({"identity": "identity", "exp": "exp"}, region=(1, 3))
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['identity', 'exp']
    """
    from ..paper.underspecification import sensitivity_report

    items = (
        list(links.items())
        if isinstance(links, Mapping)
        else [(repr(v) if not isinstance(v, str) else v, v) for v in links]
    )
    if not items:
        raise ValueError("`links` is empty")
    if region is not None:
        r0, r1 = float(region[0]), float(region[1])
        if not r0 < r1:
            raise ValueError(f"`region` must be (lo, hi) with lo < hi; got {region!r}")
    s = (
        float(observed)
        if observed is not None
        else (0.5 * (r0 + r1) if region is not None else 0.0)
    )
    if ax is None:
        fig, axes = new_figure(1, 2, size=(4.4, 3.2))
        left, right = axes[0]
        out = fig
    else:
        left, right = _axes_list(ax, 2, "plot_link_sensitivity")
        out = ax
    for name, link in items:
        rep = sensitivity_report(link, z=z, observed=(s,))
        dh = np.asarray(rep.dh, dtype=np.float64)
        peak = float(np.max(np.abs(dh)))
        left.plot(rep.z, dh / peak if normalize and peak > 0 else dh, label=str(name))
        loss = np.asarray(rep.loss[0], dtype=np.float64)
        top = float(np.max(loss))
        right.plot(rep.z, loss / top if normalize and top > 0 else loss, label=str(name))
    for panel in (left, right):
        if region is not None:
            panel.axvspan(r0, r1, color="tab:green", alpha=0.1, label="region")
        panel.legend(fontsize="small")
    left.set_xlabel("score z")
    left.set_ylabel("h'(z) / max h'" if normalize else "h'(z)")
    left.set_title("sensitivity (slope of the link)", fontsize="medium")
    right.set_xlabel(r"prediction $\hat s$")
    right.set_ylabel("loss / max loss" if normalize else "loss")
    right.set_title(f"matching loss for observed s = {s:g}", fontsize="medium")
    return out
