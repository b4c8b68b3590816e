"""Practitioner plots, checked through what they draw (labels and data) on packaged real data."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("polars")

from matplotlib.figure import Figure

from selrank import plots
from selrank.datasets import load_dwell, load_letor
from selrank.dwell import dwell_link, dwell_mixture, suggest_band
from selrank.links import get_link
from selrank.metrics import calibration_table, evaluate


def _line(ax, label):
    found = [ln for ln in ax.get_lines() if ln.get_label() == label]
    assert len(found) == 1, (
        f"expected one line {label!r} in {[ln.get_label() for ln in ax.get_lines()]}"
    )
    return found[0]


def _xy(ax, label):
    ln = _line(ax, label)
    return np.asarray(ln.get_xdata(), dtype=np.float64), np.asarray(
        ln.get_ydata(), dtype=np.float64
    )


@pytest.fixture(scope="module")
def mq2008():
    return load_letor("mq2008", fold=1)


@pytest.fixture(scope="module")
def systems(mq2008):
    """Three real single-feature rankers on the MQ2008 fold-1 test queries."""
    X = mq2008.test.X
    return {"f1": X[:, 0], "f25": X[:, 24], "f40": X[:, 39]}


@pytest.fixture(scope="module")
def dwell():
    return load_dwell("yoochoose-100k")


# --------------------------------------------------------------------------------------
# system comparison
# --------------------------------------------------------------------------------------


def test_comparison_draws_mean_difference_ci_and_sorted_per_query_differences(mq2008, systems):
    t = mq2008.test
    per_query = {
        name: evaluate(t.y, s, t.group, metrics=["ndcg@10", "map"], per_query=True)
        for name, s in systems.items()
    }
    fig = plots.plot_comparison(per_query, "f1")
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    for row, metric in enumerate(["ndcg@10", "map"]):
        left, right = fig.axes[2 * row], fig.axes[2 * row + 1]
        base = per_query["f1"][metric].to_numpy()
        for name in ("f25", "f40"):
            d = per_query[name][metric].to_numpy() - base
            (mean,), _ = _xy(left, name)
            lo_hi, _ = _xy(left, f"{name} CI")
            assert mean == pytest.approx(d.mean(), rel=1e-12)
            # a percentile bootstrap of a mean of 156 queries is close to the normal interval
            half = 1.96 * d.std(ddof=1) / math.sqrt(d.size)
            assert lo_hi[0] < mean < lo_hi[1]
            assert (lo_hi[1] - lo_hi[0]) == pytest.approx(2 * half, rel=0.15)
            label = f"{name}: {int((d > 0).sum())} better, {int((d < 0).sum())} worse"
            x, y = _xy(right, label)
            np.testing.assert_array_equal(x, np.arange(1, d.size + 1))
            np.testing.assert_allclose(y, np.sort(d)[::-1])
        assert "f1" not in [ln.get_label() for ln in left.get_lines()]
        assert metric in left.get_title()


def test_comparison_from_arrays_equals_comparison_from_frames_and_skips_excluded_queries(
    mq2008, systems
):
    t = mq2008.test
    frames = {
        n: evaluate(t.y, s, t.group, metrics="ndcg@5", no_relevant="exclude", per_query=True)
        for n, s in systems.items()
    }
    arrays = {n: f["ndcg@5"].to_numpy() for n, f in frames.items()}
    n_nan = int(np.isnan(arrays["f1"]).sum())
    assert n_nan > 0  # MQ2008 has queries without a relevant document: they must be skipped
    a = plots.plot_comparison(arrays, "f25", metric="ndcg@5", seed=3)
    b = plots.plot_comparison(frames, "f25", seed=3)
    for name in ("f1", "f40"):
        np.testing.assert_array_equal(
            _xy(a.axes[0], f"{name} CI")[0], _xy(b.axes[0], f"{name} CI")[0]
        )
        assert np.isfinite(_xy(a.axes[0], name)[0]).all()
    assert len(a.axes[1].get_lines()[0].get_xdata()) == arrays["f1"].size - n_nan


def test_comparison_draws_into_given_axes_and_validates(systems, mq2008):
    t = mq2008.test
    per_query = {
        n: evaluate(t.y, s, t.group, metrics="ndcg@10", per_query=True)["ndcg@10"].to_numpy()
        for n, s in systems.items()
    }
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert plots.plot_comparison(per_query, ax=axes) is axes
    assert [ln.get_label() for ln in axes[0].get_lines()] == [
        "f25",
        "f25 CI",
        "f40",
        "f40 CI",
        "no difference",
    ]
    with pytest.raises(ValueError, match="not one of the systems"):
        plots.plot_comparison(per_query, "bm25")
    with pytest.raises(ValueError, match="one value per query"):
        plots.plot_comparison({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ValueError, match="must hold 2 matplotlib Axes"):
        plots.plot_comparison(per_query, ax=axes[0])


# --------------------------------------------------------------------------------------
# metric vs cut-off
# --------------------------------------------------------------------------------------


def test_metric_at_k_plots_evaluate_means_per_system(mq2008, systems):
    t = mq2008.test
    ks = [1, 3, 5, 10]
    fig = plots.plot_metric_at_k(
        t.y, systems, t.group, metric="ndcg", ks=ks, conventions="trec_eval"
    )
    ax = fig.axes[0]
    for name, s in systems.items():
        x, y = _xy(ax, name)
        expected = evaluate(
            t.y, s, t.group, metrics=[f"ndcg@{k}" for k in ks], conventions="trec_eval"
        )["mean"]
        np.testing.assert_array_equal(x, ks)
        np.testing.assert_allclose(y, expected.to_numpy(), rtol=1e-12)
    assert "trec_eval" in ax.get_title() and ax.get_xlabel() == "cut-off k"
    with pytest.raises(ValueError, match="without cut-off"):
        plots.plot_metric_at_k(t.y, systems, t.group, metric="ndcg@10")


# --------------------------------------------------------------------------------------
# training curves
# --------------------------------------------------------------------------------------


def test_training_curves_of_a_fitted_ranker(mq2008):
    from selrank import SelectiveRanker

    tr, va = mq2008.train, mq2008.validation
    model = SelectiveRanker(
        n_estimators=15, early_stopping_rounds=5, random_state=0, num_leaves=7
    ).fit(
        tr.X,
        tr.y,
        group=tr.group,
        eval_set=[(va.X, va.y), (tr.X, tr.y)],
        eval_group=[va.group, tr.group],
    )
    fig = plots.plot_training_curves(model, names={"valid_0": "validation", "valid_1": "train"})
    ax = fig.axes[0]
    hist = model.evals_result_
    x, y = _xy(ax, "validation")
    np.testing.assert_allclose(y, hist["valid_0"]["ndcg@10"])
    np.testing.assert_array_equal(x, np.arange(1, len(y) + 1))
    np.testing.assert_allclose(_xy(ax, "train")[1], hist["valid_1"]["ndcg@10"])
    assert _xy(ax, "best iteration")[0][0] == model.best_iteration_
    assert ax.get_title() == "ndcg@10"


def test_training_curves_of_lightgbm_evals_result(mq2008):
    lgb = pytest.importorskip("lightgbm")
    tr, va = mq2008.train, mq2008.validation
    train = lgb.Dataset(tr.X, tr.y, group=tr.group)
    valid = lgb.Dataset(va.X, va.y, group=va.group, reference=train)
    history: dict = {}
    lgb.train(
        {
            "objective": "lambdarank",
            "metric": ["ndcg", "map"],
            "eval_at": [5],
            "verbosity": -1,
            "num_leaves": 7,
        },
        train,
        15,
        valid_sets=[train, valid],
        valid_names=["train", "valid"],
        callbacks=[lgb.record_evaluation(history)],
    )
    fig = plots.plot_training_curves(history)
    assert [ax.get_title() for ax in fig.axes] == ["ndcg@5", "map@5"]
    np.testing.assert_allclose(_xy(fig.axes[1], "valid")[1], history["valid"]["map@5"])
    one = plots.plot_training_curves(
        history["valid"], metrics="ndcg@5"
    )  # one set's {metric: values}
    np.testing.assert_allclose(one.axes[0].get_lines()[0].get_ydata(), history["valid"]["ndcg@5"])
    with pytest.raises(ValueError, match="not in the history"):
        plots.plot_training_curves(history, metrics="err")


def test_training_curves_need_an_eval_history():
    from selrank import SelectiveRanker

    with pytest.raises(ValueError, match="evals_result_"):
        plots.plot_training_curves(SelectiveRanker())
    with pytest.raises(ValueError, match="holds no values"):
        plots.plot_training_curves({"valid_0": {"ndcg@10": []}})


# --------------------------------------------------------------------------------------
# dwell: band, mixture, calibration
# --------------------------------------------------------------------------------------


def test_dwell_band_draws_histogram_mixture_components_and_the_suggested_band(dwell):
    y = dwell.train.y
    fig = plots.plot_dwell_band(y)
    ax = fig.axes[0]
    mix = dwell_mixture(y)
    band = suggest_band(y)
    comps = []
    for name, w, mu, sd in zip(["bounce", "engaged", "idle"], mix.weights, mix.means, mix.sds):
        x, pdf = _xy(ax, name)
        np.testing.assert_allclose(
            pdf, w * np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        )
        comps.append(pdf)
    x, total = _xy(ax, "mixture")
    np.testing.assert_allclose(total, np.sum(comps, axis=0))
    assert x[0] == y.min() and x[-1] == y.max()
    # the histogram is a density and the mixture follows it
    (bars,) = ax.containers
    assert bars.patches[0].get_label() == "dwell"
    heights = np.array([p.get_height() for p in bars])
    widths = np.array([p.get_width() for p in bars])
    assert heights.size == 80
    assert float(np.sum(heights * widths)) == pytest.approx(1.0, rel=1e-9)
    assert float(np.trapezoid(total, x)) == pytest.approx(1.0, abs=0.02)
    spans = [p for p in ax.patches if p.get_label().startswith("band")]
    assert len(spans) == 1
    x0 = spans[0].get_x()
    assert (x0, x0 + spans[0].get_width()) == pytest.approx((band.lo, band.hi))


def test_dwell_band_takes_a_given_band_and_axes(dwell):
    fig = Figure()
    ax = fig.subplots()
    y = dwell.train.y
    out = plots.plot_dwell_band(y, (1.0, 5.0), ax=ax)
    assert out is ax
    span = next(p for p in ax.patches if p.get_label().startswith("band"))
    assert span.get_label() == f"band {math.expm1(1.0):.3g}–{math.expm1(5.0):.3g} s"
    with pytest.raises(ValueError, match="finite"):
        plots.plot_dwell_band(np.array([1.0, np.nan]))


def test_calibration_plots_calibration_table_per_model(dwell):
    from selrank import SelectiveRegressor

    band = suggest_band(dwell.train.y)
    rows = slice(0, 15_000)
    model = SelectiveRegressor(
        link=dwell_link(band), n_estimators=10, random_state=0, num_leaves=7
    ).fit(dwell.train.X[rows], dwell.train.y[rows])
    preds = {
        "smelu": model.predict(dwell.test.X),
        "constant": np.full(dwell.test.y.size, dwell.train.y.mean()),
    }
    fig = plots.plot_calibration(dwell.test.y, preds, band=band)
    ax = fig.axes[0]
    for name, p in preds.items():
        t = calibration_table(dwell.test.y, p, as_frame=False)
        x, y = _xy(ax, name)
        np.testing.assert_allclose(x, t["mean_pred"])
        np.testing.assert_allclose(y, t["mean_true"])
    assert _xy(ax, "constant")[0].size == 1  # a constant prediction falls in one bin
    x, y = _xy(ax, "identity")
    np.testing.assert_array_equal(x, y)
    assert "smelu" in ax.get_title() and "ECE" in ax.get_title()
    assert any(p.get_label() == "band" for p in ax.patches)


# --------------------------------------------------------------------------------------
# link sensitivity
# --------------------------------------------------------------------------------------


def test_link_sensitivity_plots_normalised_slopes_and_losses(dwell):
    band = suggest_band(dwell.train.y)
    links = {"identity": "identity", "exp": get_link("exp"), "smelu band": dwell_link(band)}
    z = np.linspace(0.0, 9.0, 181)
    fig = plots.plot_link_sensitivity(links, z=z, region=band)
    left, right = fig.axes
    s = 0.5 * (band.lo + band.hi)
    for name, link in links.items():
        lk = get_link(link) if isinstance(link, str) else link
        x, y = _xy(left, name)
        dh = np.asarray(lk.dh(z))
        np.testing.assert_allclose(x, z)
        np.testing.assert_allclose(y, dh / dh.max(), rtol=1e-12)
        loss = np.asarray(lk.bregman(z, np.full_like(z, s)))
        np.testing.assert_allclose(_xy(right, name)[1], loss / loss.max(), rtol=1e-10, atol=1e-12)
        raw = plots.plot_link_sensitivity({name: link}, z=z, observed=s, normalize=False)
        np.testing.assert_allclose(_xy(raw.axes[1], name)[1], loss, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_xy(raw.axes[0], name)[1], dh, rtol=1e-12)
    # the band link is flat outside the band: the loss ignores errors there
    x, y = _xy(left, "smelu band")
    assert np.all(y[(x < band.lo - 0.05) | (x > band.hi + 0.05)] == 0.0)
    assert f"s = {s:g}" in right.get_title()


# --------------------------------------------------------------------------------------
# inline display in IPython
# --------------------------------------------------------------------------------------


def test_figures_display_as_png_in_an_ipython_shell_without_pyplot():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        fig = plots.plot_link_sensitivity(["exp"])
        assert plots.enable_inline() is True
        data, _ = shell.display_formatter.format(fig)
        assert data["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
        before = data["image/png"]
        assert plots.enable_inline() is True  # idempotent: the registered printer is kept
        assert shell.display_formatter.format(fig)[0]["image/png"] == before
    finally:
        InteractiveShell.clear_instance()


def test_plots_package_exports_every_practitioner_plot():
    from selrank.plots import practitioner

    assert set(practitioner.__all__) <= set(plots.__all__)
    assert set(plots.__all__) >= {"plot_sensitivity", "enable_inline"}


def test_figures_render_headless(mq2008, systems):
    import io

    t = mq2008.test
    fig = plots.plot_metric_at_k(t.y, systems, t.group, ks=[1, 5, 10])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")  # no pyplot, no display: the Agg canvas renders it
    assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
