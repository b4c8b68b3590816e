"""The issue-12 dwell goal in ``benchmarks/dwell.py``: the paired session bootstrap and the choice rule.

Fast: synthetic data only (the benchmark itself runs on the YOOCHOOSE sample).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from selrank.datasets import make_dwell
from selrank.dwell import DwellBand, fit_dwell_model, outside_band_weights, suggest_band
from selrank.metrics.dwell import band_error, overall_error

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "dwell.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("_dwell_benchmark", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sessions_data():
    """Three methods' predictions on 300 sessions of 1-6 clicks, errors correlated within a session."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 7, size=300)
    session = np.repeat(np.arange(sizes.size), sizes)
    n = session.size
    y = rng.normal(4.0, 1.5, size=n)
    shared = rng.normal(0.0, 0.5, size=sizes.size)[session]  # a session effect every method misses
    preds = {
        "se_log": y + shared + rng.normal(0.0, 0.6, size=n),
        "huber_log": y + shared + rng.normal(0.0, 0.55, size=n),
        "smelu": y + shared + rng.normal(0.0, 0.6, size=n) + 0.05,
    }
    return y, preds, session, DwellBand(2.0, 6.0)


def _slow_bootstrap(y, preds, method, baseline, band, session, counts):
    """Plain-Python reference: rebuild every resample by repeating whole sessions."""
    ids = np.unique(session)
    rows_of = {s: np.flatnonzero(session == s) for s in ids}
    out = {k: [] for k in ("band_mae", "band_rmse", "all_mae", "all_rmse")}
    for c in counts:
        rows = np.concatenate([np.repeat(rows_of[s], int(k)) for s, k in zip(ids, c)])
        yy, e, b = y[rows], preds[method][rows] - y[rows], preds[baseline][rows] - y[rows]
        inside = (yy >= band[0]) & (yy <= band[1])
        for region, m in (("band", inside), ("all", np.ones_like(inside))):
            out[f"{region}_mae"].append(np.abs(e[m]).mean() - np.abs(b[m]).mean())
            out[f"{region}_rmse"].append(np.sqrt((e[m] ** 2).mean()) - np.sqrt((b[m] ** 2).mean()))
    return {k: np.array(v) for k, v in out.items()}


def test_paired_bootstrap_matches_a_slow_session_resampler(bench, sessions_data):
    y, preds, session, band = sessions_data
    n = 60
    got = bench.paired_bootstrap(
        y, preds, [("smelu", "se_log"), ("smelu", "huber_log")], band, session, n=n, seed=3
    )
    # the same resamples: the helper draws one multinomial of session counts per resample
    n_sessions = np.unique(session).size
    counts = np.random.default_rng(3).multinomial(
        n_sessions, np.full(n_sessions, 1.0 / n_sessions), size=n
    )
    for baseline in ("se_log", "huber_log"):
        ref = _slow_bootstrap(y, preds, "smelu", baseline, band, session, counts)
        full = _slow_bootstrap(y, preds, "smelu", baseline, band, session, np.ones((1, n_sessions)))
        for key, values in ref.items():
            entry = got["smelu"][baseline][key]
            np.testing.assert_allclose(
                entry["ci"], np.quantile(values, [0.025, 0.975]), rtol=1e-10, atol=1e-12
            )
            np.testing.assert_allclose(entry["diff"], full[key][0], rtol=1e-10, atol=1e-12)
    entry = got["smelu"]["se_log"]["all_mae"]
    rel = overall_error(y, preds["smelu"]) / overall_error(y, preds["se_log"]) - 1.0
    np.testing.assert_allclose(entry["rel"], rel, rtol=1e-10)
    assert entry["rel_ci"][0] < rel < entry["rel_ci"][1]
    assert 0.0 <= entry["p_within_budget"] <= 1.0


def test_paired_bootstrap_point_estimates_are_the_test_set_differences(bench, sessions_data):
    y, preds, session, band = sessions_data
    got = bench.paired_bootstrap(y, preds, [("smelu", "huber_log")], band, session, n=200, seed=0)[
        "smelu"
    ]["huber_log"]
    for metric in ("mae", "rmse"):
        d_band = band_error(y, preds["smelu"], band, metric=metric) - band_error(
            y, preds["huber_log"], band, metric=metric
        )
        d_all = overall_error(y, preds["smelu"], metric=metric) - overall_error(
            y, preds["huber_log"], metric=metric
        )
        np.testing.assert_allclose(got[f"band_{metric}"]["diff"], d_band, rtol=1e-10)
        np.testing.assert_allclose(got[f"all_{metric}"]["diff"], d_all, rtol=1e-10)
        assert got[f"band_{metric}"]["ci"][0] <= d_band <= got[f"band_{metric}"]["ci"][1]


def test_session_clustering_widens_the_interval_when_errors_share_a_session_effect(bench):
    """Resampling sessions, not rows: with a large per-session error shift the interval must be wider."""
    rng = np.random.default_rng(1)
    session = np.repeat(np.arange(200), 5)
    y = rng.normal(4.0, 1.0, size=session.size)
    shift = rng.normal(0.0, 0.3, size=200)[session]
    preds = {
        "a": y + rng.normal(0.0, 0.3, size=y.size),
        "b": y + rng.normal(0.0, 0.3, size=y.size) + shift,
    }
    band = DwellBand(-10.0, 20.0)
    clustered = bench.paired_bootstrap(y, preds, [("b", "a")], band, session, n=400)["b"]["a"][
        "all_mae"
    ]["ci"]
    rows = bench.paired_bootstrap(y, preds, [("b", "a")], band, np.arange(y.size), n=400)["b"]["a"][
        "all_mae"
    ]["ci"]
    assert clustered[1] - clustered[0] > 1.3 * (rows[1] - rows[0])


def test_within_budget_rule(bench):
    rows = [
        {"knob": "width x0.5", "band_mae": 0.790, "mae": 1.030},
        {"knob": "width x0.75", "band_mae": 0.795, "mae": 1.009},
        {"knob": "width x1", "band_mae": 0.799, "mae": 1.000},
    ]
    assert (
        bench.within_budget_rule(rows, 1.0, budget=0.01, fallback="width x1")["knob"]
        == "width x0.75"
    )
    assert (
        bench.within_budget_rule(rows, 1.0, budget=0.05, fallback="width x1")["knob"]
        == "width x0.5"
    )
    assert (
        bench.within_budget_rule(rows, 0.9, budget=0.01, fallback="width x1")["knob"] == "width x1"
    )


def test_narrower_training_band_lowers_in_band_error():
    """The mechanism the benchmark's width grid searches: on make_dwell data a SmeLU trained on the
    evaluation band is more accurate inside it than one trained on a three times wider band. (Overall
    it need not lose here: make_dwell's idle rows are unpredictable noise that capping ignores.)"""
    pytest.importorskip("lightgbm")
    data = make_dwell(6_000, seed=2)
    test = make_dwell(6_000, seed=3)
    band = suggest_band(data.y, method="quantile", lower=0.1, upper=0.9)
    params = {
        "n_estimators": 60,
        "learning_rate": 0.1,
        "num_leaves": 15,
        "random_state": 0,
        "num_threads": 1,
    }
    wide = fit_dwell_model(
        data.X, data.y, band=DwellBand(band.beta - 3 * band.c, band.beta + 3 * band.c), **params
    )
    narrow = fit_dwell_model(data.X, data.y, band=band, **params)
    p_wide, p_narrow = wide.predict(test.X), narrow.predict(test.X)
    assert band_error(test.y, p_narrow, band) < band_error(test.y, p_wide, band)
    assert band_error(test.y, p_narrow, band, metric="rmse") < band_error(
        test.y, p_wide, band, metric="rmse"
    )


# --------------------------------------------------------------------------------------
# fit_dwell_model(outside_weight=...): the SmeLU candidates of the benchmark's grid
# --------------------------------------------------------------------------------------
_FAST = {
    "n_estimators": 30,
    "learning_rate": 0.1,
    "num_leaves": 15,
    "random_state": 0,
    "num_threads": 1,
}


def test_outside_weight_one_is_the_plain_capped_smelu():
    pytest.importorskip("lightgbm")
    data = make_dwell(3_000, seed=4)
    band = DwellBand(2.5, 5.5)
    plain = fit_dwell_model(data.X, data.y, band=band, **_FAST)
    same = fit_dwell_model(data.X, data.y, band=band, outside_weight=1.0, **_FAST)
    np.testing.assert_array_equal(same.predict(data.X), plain.predict(data.X))


def test_outside_weight_zero_starts_at_the_in_band_mean_and_ignores_outside_labels():
    pytest.importorskip("lightgbm")
    data = make_dwell(3_000, seed=5)
    band = DwellBand(2.5, 5.5)
    inside = band.contains(data.y)
    assert 0.3 < inside.mean() < 0.95 and (~inside).sum() > 100  # both kinds of rows are there
    model = fit_dwell_model(data.X, data.y, band=band, outside_weight=0.0, **_FAST)
    np.testing.assert_allclose(model.intercept_, data.y[inside].mean(), rtol=1e-10)
    # moving the outside labels further out (still outside) changes nothing
    moved = np.where(
        data.y > band.hi, data.y + 3.0, np.where(data.y < band.lo, data.y - 3.0, data.y)
    )
    other = fit_dwell_model(data.X, moved, band=band, outside_weight=0.0, **_FAST)
    np.testing.assert_allclose(other.predict(data.X), model.predict(data.X), atol=1e-10)


def test_outside_weight_applies_to_the_eval_set_and_combines_with_sample_weight():
    pytest.importorskip("lightgbm")
    data, val = make_dwell(3_000, seed=6), make_dwell(1_000, seed=7)
    band = DwellBand(2.5, 5.5)
    params = {**_FAST, "n_estimators": 200, "early_stopping_rounds": 10}
    model = fit_dwell_model(
        data.X,
        data.y,
        band=band,
        outside_weight=0.5,
        eval_set=(val.X, val.y),
        sample_weight=np.full(data.y.size, 2.0),
        **params,
    )
    assert 0 < model.best_iteration_ < 200
    twice = fit_dwell_model(
        data.X, data.y, band=band, outside_weight=0.5, eval_set=(val.X, val.y), **params
    )
    np.testing.assert_allclose(
        model.intercept_, twice.intercept_, rtol=1e-12
    )  # a common factor cancels


@pytest.mark.parametrize(
    "bad, error", [(-0.1, ValueError), (1.5, ValueError), (True, TypeError), ("0", TypeError)]
)
def test_outside_weight_is_validated(bad, error):
    data = make_dwell(200, seed=8)
    with pytest.raises(error, match="outside_weight"):
        fit_dwell_model(data.X, data.y, band=(2.0, 6.0), outside_weight=bad, **_FAST)


def test_outside_weight_below_one_needs_a_pointwise_model():
    data = make_dwell(200, seed=8)
    with pytest.raises(ValueError, match="within-session"):
        fit_dwell_model(
            data.X,
            data.y,
            band=(2.0, 6.0),
            outside_weight=0.5,
            session=np.repeat(np.arange(40), 5),
            within_session_weight=0.1,
            **_FAST,
        )


def test_outside_weight_is_weighted_squared_error_on_the_winsorised_target():
    """The fit the benchmark's grid searches is LightGBM's squared error on ``clip(y, lo, hi)``
    with weight ω on the rows outside the band (the SmeLU start and leaves stay inside it)."""
    lgb = pytest.importorskip("lightgbm")
    data = make_dwell(4_000, seed=9)
    band = suggest_band(data.y, method="quantile", lower=0.1, upper=0.9)
    for omega in (0.5, 0.0):
        model = fit_dwell_model(data.X, data.y, band=band, outside_weight=omega, **_FAST)
        native = lgb.train(
            {
                "objective": "regression",
                "learning_rate": 0.1,
                "num_leaves": 15,
                "verbosity": -1,
                "num_threads": 1,
                "seed": 0,
            },
            lgb.Dataset(
                data.X,
                np.clip(data.y, band.lo, band.hi),
                weight=outside_band_weights(data.y, band, omega),
            ),
            _FAST["n_estimators"],
        )
        np.testing.assert_allclose(model.predict(data.X), native.predict(data.X), atol=1e-6)


def test_outside_band_weights():
    w = outside_band_weights(np.array([0.5, 1.0, 4.0, 6.0, 7.0]), DwellBand(1.0, 6.0), 0.5)
    np.testing.assert_array_equal(w, [0.5, 1.0, 1.0, 1.0, 0.5])  # ends are inside, as in band_error
    with pytest.raises(ValueError, match="every row has weight 0"):
        outside_band_weights(np.array([0.5, 7.0]), DwellBand(1.0, 6.0), 0.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        outside_band_weights(np.array([2.0]), DwellBand(1.0, 6.0), 2.0)
