"""suggest_band on the inputs users give it (issue 11): raw seconds are refused with the fix, a
mixture that does not separate an engaged component falls back to a quantile band and says
so, and dwell_dataset takes a user's polars frame."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from selrank.dwell import MAX_LOG1P_DWELL, DwellBand, dwell_mixture, fit_dwell_model, suggest_band

pl = pytest.importorskip("polars")


@pytest.fixture(scope="module")
def yoochoose():
    from selrank.datasets import load_dwell

    return load_dwell("yoochoose-100k")


def _no_warnings(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


# ---------------------------------------------------------------------------------------
# raw seconds
# ---------------------------------------------------------------------------------------


def test_raw_seconds_are_refused_with_the_fix(yoochoose):
    seconds = yoochoose.train.seconds
    assert seconds.max() > MAX_LOG1P_DWELL  # the data is what we meant: raw seconds
    # before: a "band" up to log1p 37, i.e. 1e16 s, without a hint
    with pytest.raises(ValueError, match=r"looks like raw seconds.*Pass np\.log1p\(seconds\)"):
        suggest_band(seconds)
    with pytest.raises(ValueError, match="looks like raw seconds"):
        suggest_band(seconds, method="quantile")
    with pytest.raises(ValueError, match="looks like raw seconds"):
        dwell_mixture(seconds)
    with pytest.raises(ValueError, match="looks like raw seconds"):
        fit_dwell_model(yoochoose.train.X, seconds, n_estimators=2)
    band = suggest_band(np.log1p(seconds))  # the fix the message gives works
    assert band.seconds[1] < 86400


def test_log1p_dwell_up_to_the_limit_is_accepted(rng):
    y = np.r_[rng.normal(3.5, 0.8, 2000), MAX_LOG1P_DWELL]
    band = suggest_band(np.abs(y), method="quantile")
    assert band.hi < MAX_LOG1P_DWELL


# ---------------------------------------------------------------------------------------
# the default falls back to quantiles where the mixture does not separate a component
# ---------------------------------------------------------------------------------------


def test_unimodal_lognormal_where_the_mixture_refuses_gets_a_quantile_band():
    y = np.random.default_rng(47).normal(4.65, 0.72, 3760)  # log of log-normal dwell: one component
    with pytest.raises(ValueError, match="does not separate an engaged band"):
        suggest_band(y, method="mixture")  # explicit: still an error
    with pytest.warns(
        UserWarning, match=r"one log-normal dwell component explains the data.*quantile band"
    ):
        band = suggest_band(y)  # before: the same ValueError from the default
    assert band.method == "quantile" and "BIC" in band.note
    assert tuple(band) == pytest.approx(tuple(np.quantile(y, [0.1, 0.9])))
    assert band.shares(y)["inside"] == pytest.approx(0.8, abs=1e-3)


@pytest.mark.parametrize(("seed", "sd"), [(2, 0.8), (5, 0.5)])
def test_unimodal_lognormal_never_gets_an_arbitrary_mixture_band(seed, sd):
    # before: whatever the overlapping components gave, e.g. (3.70, 5.06) holding 36 % of the rows
    # for seed 5, around a mode at 3.5
    y = np.log1p(np.exp(np.random.default_rng(seed).normal(3.5, sd, 2000)))
    with pytest.warns(UserWarning, match="quantile band"):
        band = suggest_band(y)
    assert band.method == "quantile" and "BIC gain" in band.note
    assert band.lo < 3.5 < band.hi  # the band sits around the one mode


def test_a_split_spike_that_the_mixture_cannot_separate_falls_back():
    # a narrow spike of 3 734 dwells at 5.99 (sd 0.053) and a broad bump at 1.50 (sd 0.83): EM
    # splits the spike into two equal components, neither of them likeliest at its own mean
    rng = np.random.default_rng(141)
    rng.integers(1, 4)  # (the draws of the search that found this case, kept in order)
    mu1, sd1, n1 = rng.uniform(0.5, 6), rng.uniform(0.05, 1.5), rng.integers(200, 5000)
    first = rng.normal(mu1, sd1, n1)
    mu2, sd2, n2 = rng.uniform(0.5, 6), rng.uniform(0.05, 1.5), rng.integers(200, 5000)
    y = np.abs(np.r_[first, rng.normal(mu2, sd2, n2)])
    assert (round(mu1, 2), round(sd1, 3), n1) == (5.99, 0.053, 3734)
    mix = dwell_mixture(y)
    assert mix.bic_gain > 0  # components exist, but the engaged one is not likeliest at its mean
    with pytest.raises(ValueError, match="does not separate"):
        suggest_band(y, method="mixture")
    with pytest.warns(UserWarning, match="does not separate an engaged component"):
        band = suggest_band(y, lower=0.2, upper=0.8)
    assert band.method == "quantile"
    assert tuple(band) == pytest.approx(tuple(np.quantile(y, [0.2, 0.8])))


def test_same_instant_clicks_are_not_the_engaged_component(rng):
    # half the clicks have dwell 0 s (y = 0): a spike the mixture fits with a zero-width component
    y = np.log1p(np.exp(rng.normal(3.5, 1.0, 10_000)))
    y[:5_000] = 0.0
    band = suggest_band(y)
    assert band.method == "mixture"
    assert band.lo > 0.0 and band.hi > 4.0  # before: (0.0, 0.013), the spike itself
    assert band.shares(y)["inside"] > 0.45  # nearly all of the non-zero dwells
    mix = dwell_mixture(y)
    assert mix.sds[mix.engaged] > 0.1


def test_bad_quantile_levels_are_an_error_even_when_the_mixture_separates(yoochoose):
    with pytest.raises(ValueError, match="`lower` must be below `upper`"):
        suggest_band(yoochoose.train.y, lower=0.9, upper=0.1)


# ---------------------------------------------------------------------------------------
# the packaged sample keeps the mixture band
# ---------------------------------------------------------------------------------------


def test_yoochoose_default_is_the_mixture_band(yoochoose, caplog):
    y = yoochoose.train.y
    with caplog.at_level(logging.INFO, logger="selrank.dwell"):
        band = _no_warnings(suggest_band, y)
    assert band.method == "mixture" and band.note == ""
    assert band == suggest_band(y, method="mixture")
    assert dwell_mixture(y).bic_gain > 1000
    assert any("used the mixture band" in r.getMessage() for r in caplog.records)
    lo_s, hi_s = band.seconds
    assert 1.0 < lo_s < 10.0 and 60.0 < hi_s < 3600.0  # bounces below, idle tabs above


# ---------------------------------------------------------------------------------------
# dwell_dataset on a user's polars frame, then the default band
# ---------------------------------------------------------------------------------------


def _user_clicks(rng, n_sessions, t0):
    rows = []
    for s in range(n_sessions):
        t = t0 + rng.uniform(0, 86_400)
        for _ in range(int(rng.integers(2, 8))):
            rows.append((s, int(rng.integers(0, 300)), t))
            t += float(np.exp(rng.normal(3.5, 0.8)))
    return pl.DataFrame(rows, schema=["session", "item", "time"], orient="row")


def test_dwell_dataset_on_a_user_frame_with_datetimes_and_string_ids(rng):
    from selrank.datasets import dwell_dataset

    train, test = _user_clicks(rng, 1500, 1.6e9), _user_clicks(rng, 300, 1.6e9 + 90_000)
    base = dwell_dataset(train, test)

    def as_user_frame(f):  # datetimes (microseconds) and opaque string ids
        return f.with_columns(
            pl.from_epoch((pl.col("time") * 1e6).round(0).cast(pl.Int64), time_unit="us").alias(
                "time"
            ),
            pl.format("sess-{}", pl.col("session")).alias("session"),
            pl.format("sku-{}", pl.col("item")).alias("item"),
        )

    user = dwell_dataset(as_user_frame(train), as_user_frame(test))  # before: InvalidOperationError
    ms = 1.001e-3  # times are kept to the millisecond; µs datetimes may round the other way
    np.testing.assert_allclose(user.train.seconds, base.train.seconds, rtol=0, atol=ms)
    np.testing.assert_array_equal(np.isnan(user.train.X), np.isnan(base.train.X))
    np.testing.assert_allclose(
        np.nan_to_num(user.train.X), np.nan_to_num(base.train.X), rtol=0, atol=ms
    )
    np.testing.assert_allclose(
        np.nan_to_num(user.test.X), np.nan_to_num(base.test.X), rtol=0, atol=ms
    )
    with pytest.warns(UserWarning, match="quantile band"):  # log-normal dwell: the fallback
        band = suggest_band(user.train.y)
    assert isinstance(band, DwellBand) and band.method == "quantile"
    assert 0.7 < band.shares(user.test.y)["inside"] < 0.9


def test_dwell_dataset_refuses_millisecond_times_named_time(rng):
    from selrank.datasets import dwell_dataset

    train, test = _user_clicks(rng, 50, 1.6e9), _user_clicks(rng, 20, 1.6e9 + 90_000)
    ms = [f.with_columns(pl.col("time") * 1000.0) for f in (train, test)]
    with pytest.raises(
        ValueError, match=r"'time' must be Unix seconds.*looks like milliseconds.*'time_ms'"
    ):
        dwell_dataset(*ms)
    ok = dwell_dataset(*[f.rename({"time": "time_ms"}) for f in ms])
    assert ok.train.n_rows == dwell_dataset(train, test).train.n_rows


def test_dwell_dataset_rejects_a_time_column_of_text(rng):
    from selrank.datasets import dwell_dataset

    train = _user_clicks(rng, 20, 1.6e9).with_columns(pl.col("time").cast(pl.String))
    with pytest.raises(TypeError, match="'time' must be Unix seconds \\(numbers\\) or datetimes"):
        dwell_dataset(train, train)
