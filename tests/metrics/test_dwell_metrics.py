"""Dwell metrics: band / overall errors, within-session ranking, calibration, report.

Checked against independent implementations: plain NumPy errors, ``scipy.stats.kendalltau``
and scikit-learn's ``ndcg_score`` per session (a Python loop here is the point: it is the
slow reference), a loop-based calibration table, and polars group-bys on the real data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selrank.metrics.dwell import (
    band_error,
    calibration_table,
    dwell_report,
    expected_calibration_error,
    overall_error,
    session_ranking,
)

BAND = (2.0, 5.0)


def _dwell(rng, n=400):
    y = np.log1p(rng.lognormal(3.5, 1.5, n))
    p = y + rng.normal(0.0, 0.7, n)
    return y, p


def _sessions(rng, n_sessions=120, max_size=9):
    sizes = rng.integers(1, max_size + 1, n_sessions)
    ids = np.repeat(rng.permutation(10 * n_sessions)[:n_sessions], sizes)
    return ids, int(sizes.sum())


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


def test_band_error_matches_numpy_in_log_and_seconds(rng):
    y, p = _dwell(rng)
    inside = (y >= BAND[0]) & (y <= BAND[1])
    assert 0.2 < inside.mean() < 0.9  # the band cuts the sample, so the check is informative
    e = p[inside] - y[inside]
    assert band_error(y, p, BAND) == pytest.approx(np.abs(e).mean(), rel=1e-12)
    assert band_error(y, p, BAND, metric="rmse") == pytest.approx(np.sqrt((e**2).mean()), rel=1e-12)
    assert band_error(y, p, BAND, metric="mse") == pytest.approx((e**2).mean(), rel=1e-12)
    assert band_error(y, p, BAND, metric="bias") == pytest.approx(e.mean(), rel=1e-12)
    es = np.expm1(p[inside]) - np.expm1(y[inside])
    assert band_error(y, p, BAND, space="seconds") == pytest.approx(np.abs(es).mean(), rel=1e-12)
    by_pred = (p >= BAND[0]) & (p <= BAND[1])
    assert band_error(y, p, BAND, on="score") == pytest.approx(
        np.abs(p - y)[by_pred].mean(), rel=1e-12
    )


def test_band_ends_are_included_and_weights_apply():
    y = np.array([2.0, 3.0, 5.0, 6.0])
    p = np.array([2.5, 3.0, 4.0, 0.0])
    assert band_error(y, p, BAND) == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    w = np.array([2.0, 1.0, 1.0, 9.0])
    assert band_error(y, p, BAND, sample_weight=w) == pytest.approx((2 * 0.5 + 1.0) / 4)


def test_overall_error_matches_numpy(rng):
    y, p = _dwell(rng)
    assert overall_error(y, p) == pytest.approx(np.abs(p - y).mean(), rel=1e-12)
    assert overall_error(y, p, metric="rmse", space="seconds") == pytest.approx(
        np.sqrt(((np.expm1(p) - np.expm1(y)) ** 2).mean()), rel=1e-12
    )


def test_dwell_band_object_is_accepted():
    from selrank.dwell import DwellBand

    y = np.array([1.0, 3.0, 4.0, 7.0])
    p = np.array([2.0, 3.5, 3.5, 5.0])
    assert band_error(y, p, DwellBand(2.0, 5.0)) == band_error(y, p, (2.0, 5.0)) == 0.5


@pytest.mark.parametrize(
    ("band", "exc", "match"),
    [
        ((5.0, 2.0), ValueError, "lo < hi"),
        ((3.0, 3.0), ValueError, "lo < hi"),
        ((np.nan, 3.0), ValueError, "finite"),
        ((1.0, np.inf), ValueError, "finite"),
        ((None, 3.0), TypeError, "two numbers"),
        ((1.0, 2.0, 3.0), TypeError, "pair"),
        ("ab", TypeError, "pair"),
        (4.0, TypeError, "pair"),
    ],
)
def test_bad_band_is_refused(band, exc, match):
    with pytest.raises(exc, match=match):
        band_error([3.0, 4.0], [3.0, 4.0], band)


def test_bad_values_and_shapes_are_refused():
    with pytest.raises(ValueError, match="same shape"):
        band_error([3.0, 4.0], [3.0], BAND)
    with pytest.raises(ValueError, match="finite"):
        band_error([3.0, 4.0], [3.0, np.nan], BAND)
    with pytest.raises(ValueError, match="finite"):
        overall_error([3.0, np.inf], [3.0, 4.0])
    with pytest.raises(ValueError, match="no rows"):
        band_error([0.5, 7.0], [3.0, 4.0], BAND)
    with pytest.raises(ValueError, match="`metric`"):
        band_error([3.0], [3.0], BAND, metric="mape")
    with pytest.raises(ValueError, match="`space`"):
        overall_error([3.0], [3.0], space="minutes")
    with pytest.raises(ValueError, match="`on`"):
        band_error([3.0], [3.0], BAND, on="both")


# --------------------------------------------------------------------------------------
# within-session ranking
# --------------------------------------------------------------------------------------


def _ties(rng, n):
    """Dwell and scores with many ties, so tie handling is exercised."""
    y = np.round(np.log1p(rng.lognormal(3.0, 1.0, n)) * 2) / 2
    p = np.round(y + rng.normal(0, 1.0, n))
    return y, p


def test_kendall_tau_matches_scipy_per_session(rng):
    stats = pytest.importorskip("scipy.stats")
    ids, n = _sessions(rng)
    y, p = _ties(rng, n)
    p[ids == ids[0]] = 1.0  # one session with constant predictions
    got = session_ranking(y, p, ids, metric="kendall", reduction="none")
    order = list(dict.fromkeys(ids.tolist()))  # sessions in order of first appearance
    assert got.shape == (len(order),)
    n_checked = 0
    for k, s in enumerate(order):
        m = ids == s
        if m.sum() < 2 or np.unique(y[m]).size < 2:
            assert np.isnan(got[k])
            continue
        if np.unique(p[m]).size < 2:
            assert got[k] == 0.0  # scipy: NaN; ours: no ordering information
            continue
        ref = stats.kendalltau(y[m], p[m], variant="b").statistic
        assert got[k] == pytest.approx(ref, abs=1e-12)
        n_checked += 1
    assert n_checked > 50
    assert session_ranking(y, p, ids, metric="kendall") == pytest.approx(np.nanmean(got))


def test_ndcg_matches_sklearn_per_session(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    ids, n = _sessions(rng)
    y, p = _ties(rng, n)
    got = session_ranking(y, p, ids, reduction="none")
    order = list(dict.fromkeys(ids.tolist()))
    ref = []
    for s in order:
        m = ids == s
        if m.sum() < 2 or np.unique(y[m]).size < 2:
            ref.append(np.nan)
        else:  # sklearn: linear gain, ties averaged
            ref.append(metrics.ndcg_score(y[m][None, :], p[m][None, :]))
    np.testing.assert_allclose(got, np.array(ref), rtol=1e-10, equal_nan=True)
    assert np.isfinite(got).sum() > 50


def test_ranking_conventions():
    y = np.array([1.0, 2.0, 3.0, 4.0, 4.0, 9.0])
    s = np.array([1, 1, 1, 2, 2, 3])
    perfect = session_ranking(y, y, s, metric="kendall", reduction="none")
    np.testing.assert_array_equal(
        perfect, [1.0, np.nan, np.nan]
    )  # tied labels and one click excluded
    assert session_ranking(y, -y, s, metric="kendall") == -1.0
    assert session_ranking(y, y, s) == 1.0
    assert session_ranking(y, np.zeros(6), s, metric="kendall") == 0.0
    # min_size drops short sessions
    y2 = np.array([1.0, 2.0, 1.0, 2.0, 3.0])
    assert (
        session_ranking(
            y2, [2.0, 1.0, 1.0, 2.0, 3.0], [1, 1, 2, 2, 2], metric="kendall", min_size=3
        )
        == 1.0
    )
    # exponential gain rewards the long dwell more
    y3 = np.array([0.0, 1.0, 8.0])
    wrong_top = np.array([0.0, 2.0, 1.0])
    assert session_ranking(y3, wrong_top, [5, 5, 5]) > session_ranking(
        y3, wrong_top, [5, 5, 5], gain="exponential"
    )


def test_ranking_is_invariant_to_increasing_transforms_and_row_order(rng):
    ids, n = _sessions(rng)
    y, p = _dwell(rng, n)
    base = session_ranking(y, p, ids, metric="kendall")
    assert session_ranking(y, np.expm1(p), ids, metric="kendall") == pytest.approx(base, abs=1e-12)
    perm = rng.permutation(n)
    assert session_ranking(y[perm], p[perm], ids[perm], metric="kendall") == pytest.approx(
        base, abs=1e-12
    )
    assert session_ranking(y[perm], p[perm], ids[perm]) == pytest.approx(
        session_ranking(y, p, ids), abs=1e-12
    )


def test_ranking_bad_input():
    y = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="no informative session"):
        session_ranking(y, y, [1, 2, 3])
    with pytest.raises(ValueError, match="`metric`"):
        session_ranking(y, y, [1, 1, 1], metric="spearman")
    with pytest.raises(ValueError, match="`min_size`"):
        session_ranking(y, y, [1, 1, 1], min_size=1)
    with pytest.raises(ValueError, match="`k` applies"):
        session_ranking(y, y, [1, 1, 1], metric="kendall", k=2)
    with pytest.raises(ValueError, match="one session id per row, 3 values; got 2"):
        session_ranking(y, y, [1, 1])  # session ids only: sizes are not guessed
    with pytest.raises(ValueError, match="NaN"):
        session_ranking(y, [1.0, np.nan, 2.0], [1, 1, 1])
    with pytest.raises(TypeError, match="session"):
        session_ranking(y, y, None)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.floats(0, 8), st.floats(-5, 5)), min_size=2, max_size=40
    )
)
def test_kendall_tau_is_bounded(rows):
    s = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    p = np.array([r[2] for r in rows])
    try:
        t = session_ranking(y, p, s, metric="kendall", reduction="none")
    except ValueError:
        return  # no informative session
    t = t[~np.isnan(t)]
    assert np.all((t >= -1 - 1e-12) & (t <= 1 + 1e-12))


# --------------------------------------------------------------------------------------
# calibration
# --------------------------------------------------------------------------------------


def _reference_table(y, p, n_bins):
    edges = np.unique(np.quantile(p, np.linspace(0, 1, n_bins + 1)))
    rows = []
    for b in range(edges.size - 1):
        last = b == edges.size - 2
        m = (p >= edges[b]) & ((p <= edges[b + 1]) if last else (p < edges[b + 1]))
        if m.any():
            rows.append((m.sum(), p[m].mean(), y[m].mean()))
    return np.array(rows)


def test_calibration_table_matches_loop(rng):
    y, p = _dwell(rng, 1000)
    t = calibration_table(y, p, n_bins=10, as_frame=False)
    ref = _reference_table(y, p, 10)
    np.testing.assert_array_equal(t["n"], ref[:, 0])
    np.testing.assert_allclose(t["mean_pred"], ref[:, 1], rtol=1e-12)
    np.testing.assert_allclose(t["mean_true"], ref[:, 2], rtol=1e-12)
    ece = np.sum(ref[:, 0] * np.abs(ref[:, 1] - ref[:, 2])) / ref[:, 0].sum()
    assert expected_calibration_error(y, p, n_bins=10) == pytest.approx(ece, rel=1e-12)
    ts = calibration_table(y, p, n_bins=10, space="seconds", as_frame=False)
    np.testing.assert_allclose(
        ts["mean_pred"], _reference_table(np.expm1(y), np.expm1(p), 10)[:, 1], rtol=1e-12
    )


def test_calibration_properties(rng):
    y, p = _dwell(rng, 1000)
    # a constant prediction at the mean is one bin and perfectly calibrated
    t = calibration_table(y, np.full(y.size, y.mean()), as_frame=False)
    assert t["n"].tolist() == [y.size]
    assert expected_calibration_error(y, np.full(y.size, y.mean())) == pytest.approx(0.0, abs=1e-12)
    # shifting all predictions by d moves every bin's gap by d (same bins)
    assert expected_calibration_error(y, y + 0.3) == pytest.approx(0.3)
    u = calibration_table(y, p, n_bins=4, strategy="uniform", as_frame=False)
    np.testing.assert_allclose(np.diff(u["lo"]), (p.max() - p.min()) / 4, rtol=1e-9)
    assert u["n"].sum() == y.size
    frame = calibration_table(y, p)
    assert frame.columns == ["bin", "lo", "hi", "n", "weight", "mean_pred", "mean_true", "gap"]
    with pytest.raises(ValueError, match="`n_bins`"):
        calibration_table(y, p, n_bins=0)
    with pytest.raises(ValueError, match="`strategy`"):
        calibration_table(y, p, strategy="kmeans")


# --------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------


def test_dwell_report_agrees_with_the_functions(rng):
    ids, n = _sessions(rng)
    y, p = _dwell(rng, n)
    q = y + rng.normal(0.2, 1.0, n)
    rep = dwell_report(y, {"p": p, "q": q}, band=BAND, session=ids)
    assert rep["model"].to_list() == ["p", "q"]
    row = rep.row(1, named=True)
    assert row["band_mae"] == band_error(y, q, BAND)
    assert row["band_rmse_s"] == band_error(y, q, BAND, metric="rmse", space="seconds")
    assert row["rmse"] == overall_error(y, q, metric="rmse")
    assert row["bias"] == pytest.approx(np.mean(q - y))
    assert row["kendall_tau"] == session_ranking(y, q, ids, metric="kendall")
    assert row["ndcg"] == pytest.approx(session_ranking(y, q, ids))
    assert row["ece_s"] == expected_calibration_error(y, q, space="seconds")
    assert row["band_n"] == int(((y >= 2) & (y <= 5)).sum())
    single = dwell_report(y, p, band=BAND)
    assert single["model"].to_list() == ["model"] and "ndcg" not in single.columns
    assert single["band_mae"].item() == rep["band_mae"][0]


def test_dwell_report_bad_input(rng):
    y, p = _dwell(rng, 50)
    with pytest.raises(ValueError, match="empty mapping"):
        dwell_report(y, {}, band=BAND)
    with pytest.raises(ValueError, match="same shape"):
        dwell_report(y, {"short": p[:10]}, band=BAND)
    with pytest.raises(ValueError, match="lo < hi"):
        dwell_report(y, p, band=(5.0, 2.0))
    with pytest.raises(ValueError, match="finite"):
        dwell_report(y, np.where(np.arange(50) == 3, np.nan, p), band=BAND)


# --------------------------------------------------------------------------------------
# real data (quick)
# --------------------------------------------------------------------------------------


def test_on_yoochoose_sessions():
    pl = pytest.importorskip("polars")
    from selrank.datasets import load_dwell

    te = load_dwell("yoochoose-100k").test
    # independent count of informative sessions (>= 2 rows, >= 2 distinct dwells)
    counts = (
        te.frame.group_by("session")
        .agg(pl.len().alias("n"), pl.col("y").n_unique().alias("u"))
        .filter((pl.col("n") >= 2) & (pl.col("u") >= 2))
        .height
    )
    per = session_ranking(te.y, te.y, te.session, metric="kendall", reduction="none")
    assert int(np.count_nonzero(~np.isnan(per))) == counts > 1000
    assert np.nanmin(per) == 1.0  # observed dwell ranks itself perfectly
    # the previous dwell orders a session's clicks *against* their dwell (regression to the mean)
    prev = np.nan_to_num(te.X[:, te.feature_names.index("prev_log_dwell")], nan=-1.0)
    assert session_ranking(te.y, prev, te.session, metric="kendall") < 0
    rep = dwell_report(
        te.y,
        {"item_mean": np.nan_to_num(te.X[:, -1], nan=float(np.median(te.y)))},
        band=(1.5, 6.0),
        session=te.session,
    )
    assert rep["n_sessions"].item() == counts
    assert math.isfinite(rep["band_mae"].item()) and rep["band_n"].item() < te.n_rows
