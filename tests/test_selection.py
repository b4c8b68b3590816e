"""The selection report (issue 27): the protocol chooses on validation only, the rule prefers a
built-in within the validation CI, labels a built-in cannot take are handled before training,
and the report's outputs and the chosen model work. Real LightGBM and XGBoost, tiny data."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")

from selrank.selection import (
    FitResult,
    Part,
    SelectionReport,
    TrainSettings,
    select,
    simulate_clicks,
)
from selrank.selection._stats import paired_difference

FAST = {"n_rounds": 8, "early_stopping_rounds": 4, "num_threads": 1, "n_resamples": 300}


def _ranking_data(seed: int, n_queries: int = 40, size: int = 10):
    """Queries of ``size`` documents; grades 0-2 from feature 0 plus noise. Column 1 holds a
    unique row id, so that a planted candidate can look rows up."""
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.normal(size=(n, 4))
    signal = X[:, 0] + 0.8 * rng.normal(size=n)
    y = np.digitize(signal, [0.3, 1.2]).astype(np.float64)
    X[:, 1] = np.arange(n) + 100_000 * seed  # row ids, distinct across splits
    qid = np.repeat(np.arange(n_queries) + 1000 * seed, size)
    return X, y, qid


@pytest.fixture(scope="module")
def splits():
    return _ranking_data(1), _ranking_data(2), _ranking_data(3)


def _oracle(rows: dict[float, float], seed: int = 0):
    """A candidate that knows the labels of the rows in ``rows`` and scores the rest at random."""

    def fit(train: Part, valid: Part, settings: TrainSettings) -> FitResult:
        rng = np.random.default_rng(seed)

        def predict(X: np.ndarray) -> np.ndarray:
            noise = rng.normal(size=X.shape[0])
            return np.array([rows.get(float(i), 0.0) for i in X[:, 1]]) * 10.0 + noise * (
                ~np.isin(X[:, 1], list(rows))
            )

        return FitResult(predict, rounds=1)

    return fit


def _rows(split) -> dict[float, float]:
    X, y, _ = split
    return dict(zip(X[:, 1].tolist(), y.tolist(), strict=True))


def test_a_candidate_better_on_test_only_is_not_chosen(splits):
    tr, va, te = splits
    planted = select(
        tr[0], tr[1], tr[2], validation=va, test=te,
        candidates={"test_oracle": _oracle(_rows(te)), **_builtins()}, **FAST,
    )  # fmt: skip
    r = planted.results
    # the plant works: best on test by far, worst on validation
    assert (
        r["test_oracle"].mean("test", "ndcg@10")
        > max(r[n].mean("test", "ndcg@10") for n in r if n != "test_oracle") + 0.05
    )
    assert planted.chosen != "test_oracle"
    assert planted.chosen == max(
        (n for n in r if r[n].builtin), key=lambda n: r[n].mean("valid", "ndcg@10")
    )


def _builtins():
    from selrank.selection import CANDIDATES

    return {n: CANDIDATES[n] for n in ("lambdarank", "rank_xendcg")}


def test_a_clearly_better_candidate_is_chosen(splits):
    tr, va, te = splits
    rows = {**_rows(va), **_rows(te)}
    report = select(
        tr[0], tr[1], tr[2], validation=va, test=te,
        candidates={"oracle": _oracle(rows), **_builtins()}, **FAST,
    )  # fmt: skip
    assert report.chosen == "oracle"
    assert report.validation_comparison is not None
    assert report.validation_comparison.low > 0
    head = report.headline
    assert head is not None and head.candidate == "oracle" and head.verdict == "better"
    assert "Ship oracle" in report.recommendation and "test confirms" in report.recommendation


def test_within_the_validation_ci_the_builtin_is_preferred(splits):
    tr, va, te = splits
    from selrank.selection import CANDIDATES

    lam = CANDIDATES["lambdarank"].fit
    X_va, y_va, q_va = va
    first = q_va == q_va[0]
    known = dict(zip(X_va[first, 1].tolist(), y_va[first].tolist(), strict=True))

    def nudged(train, valid, settings):
        fitted = lam(train, valid, settings)  # lambdarank, better on one validation query only

        def predict(X):
            s = fitted.predict(X)
            hit = np.isin(X[:, 1], list(known))
            s[hit] = [known[float(i)] * 100 for i in X[hit, 1]]
            return s

        return FitResult(predict, fitted.rounds, fitted.curve)

    kw = dict(validation=va, test=te, candidates={"nudged": nudged, **_builtins()}, **FAST)
    report = select(tr[0], tr[1], tr[2], **kw)
    r = report.results
    assert r["nudged"].mean("valid", "ndcg@10") >= r["lambdarank"].mean("valid", "ndcg@10")
    assert report.chosen == report.best_builtin
    assert "built-in is preferred" in report.choice_reason or report.best_builtin != "lambdarank"
    plain = select(tr[0], tr[1], tr[2], prefer_builtin=False, **kw)
    best = max(plain.results, key=lambda n: plain.results[n].mean("valid", "ndcg@10"))
    assert plain.chosen == best


def test_default_set_trains_every_library_and_the_report_renders(splits, tmp_path):
    tr, va, te = splits
    report = select(tr[0], tr[1], tr[2], validation=va, test=te, **FAST)
    assert isinstance(report, SelectionReport)
    assert set(report.results) >= {
        "listwise",
        "pairwise",
        "lambdarank",
        "rank:ndcg",
        "rank:pairwise",
    }
    for res in report.results.values():
        assert res.rounds and res.rounds[0] >= 1 and res.model_bytes > 0
        assert np.isfinite(res.latency_ms) and res.cpu_seconds > 0
        assert res.valid["ndcg@10"].shape == (1, 40) and res.test["map"].shape == (1, 40)
        assert res.curves and len(res.curves[0]) >= res.rounds[0]
    text = str(report)
    assert report.rule in text and report.recommendation in text
    md = report.to_markdown()
    assert "| candidate |" in md and "**Recommendation.**" in md
    assert report.to_latex().startswith("\\begin{table}")
    doc = json.loads(report.to_json(tmp_path / "r.json"))
    assert doc["chosen"] == report.chosen and len(doc["candidates"]) == len(report.results)
    assert json.loads((tmp_path / "r.json").read_text())["rule"] == report.rule
    pytest.importorskip("matplotlib")
    html = report._repr_html_()
    assert "<table>" in html and "data:image/png;base64," in html


def test_the_chosen_model_is_saved_and_exported(splits, tmp_path):
    import lightgbm as lgb

    tr, va, te = splits
    for names in (["lambdarank"], ["listwise", "rank:pairwise"]):
        report = select(
            tr[0], tr[1], tr[2], validation=va, test=te, candidates=names,
            prefer_builtin=False, **FAST,
        )  # fmt: skip
        model = report.best_model()
        path = tmp_path / f"{report.chosen.replace(':', '_')}.model"
        report.save_best(path)
        assert path.stat().st_size > 0
        if report.chosen == "lambdarank":
            plain = lgb.Booster(model_file=str(path)).predict(te[0])
            assert np.allclose(
                plain, model.predict(te[0], num_iteration=report.results["lambdarank"].rounds[0])
            )
        if report.chosen == "listwise":
            out = report.export_best(tmp_path / "l.txt", "lightgbm")
            assert np.allclose(lgb.Booster(model_file=out).predict(te[0]), model.predict(te[0]))


def test_selrank_single_query_scorer_equals_predict(splits):
    from selrank.selection import CANDIDATES

    tr, va, _ = splits
    p = lambda s: Part(s[0], s[1], np.bincount(np.unique(s[2], return_inverse=True)[1]))  # noqa: E731
    fitted = CANDIDATES["listwise"].fit(p(tr), p(va), TrainSettings(n_rounds=5, num_threads=1))
    assert fitted.predict_one is not None
    assert np.allclose(fitted.predict_one(va[0][:10]), fitted.predict(va[0][:10]))


def test_labels_a_builtin_cannot_take(splits):
    tr, va, te = splits
    frac = [(s[0], s[1] + 0.5 * (s[1] > 0), s[2]) for s in (tr, va, te)]
    report = select(
        frac[0][0], frac[0][1], frac[0][2], validation=frac[1], test=frac[2],
        candidates=["listwise", "rank_xendcg"], **FAST,
    )  # fmt: skip
    assert set(report.results) == {"listwise", "rank_xendcg"}
    # named explicitly: an error before any training
    called = []

    def spy(train, valid, settings):  # would record a fit
        called.append(1)
        return lambda X: X[:, 0]

    with pytest.raises(ValueError, match="lambdarank.*integer grades"):
        select(
            frac[0][0], frac[0][1], frac[0][2], validation=frac[1], test=frac[2],
            candidates={"spy": spy, "lambdarank": _builtins()["lambdarank"]}, **FAST,
        )  # fmt: skip
    assert not called
    # the default set leaves them out with a note
    from selrank.selection import CANDIDATES
    from selrank.selection._select import _check_labels

    kept, notes = _check_labels(list(CANDIDATES.values()), frac[0][1], named=False)
    assert {c.name for c in kept} == set(CANDIDATES) - {"lambdarank", "rank:ndcg"}
    assert any(n.startswith("lambdarank left out") for n in notes)


def test_lambdarank_gets_a_label_gain_for_grades_from_31(splits):
    tr, va, te = splits
    wide = [(s[0], s[1] * 20, s[2]) for s in (tr, va, te)]  # grades 0, 20, 40
    report = select(
        wide[0][0], wide[0][1], wide[0][2], validation=wide[1], test=wide[2],
        candidates=["lambdarank"], **FAST,
    )  # fmt: skip
    assert report.results["lambdarank"].rounds[0] >= 1
    assert any("label_gain" in n for n in report.notes)


def test_unknown_candidate_and_bad_metric():
    X, y, q = _ranking_data(1)
    with pytest.raises(ValueError, match="unknown candidate 'nope'"):
        select(X, y, q, candidates=["nope"])
    with pytest.raises(ValueError, match="ranking `metric`"):
        select(X, y, q, metric="rmse")
    with pytest.raises(ValueError, match="needs `qid`"):
        select(X, y)


def test_grouped_kfold_frames_and_seeds():
    pd = pytest.importorskip("pandas")
    X, y, q = _ranking_data(4, n_queries=30)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    report = select(
        frame, pd.Series(y), q, cv=3, n_seeds=2,
        candidates=["lambdarank", "rank_xendcg", "listwise"], **FAST,
    )  # fmt: skip
    assert report.n_folds == 3 and "grouped 3-fold" in report.protocol
    assert report.n_valid == 24 and report.n_test == 6  # 20% of 30 queries held out
    res = report.results["listwise"]
    assert res.valid["ndcg@10"].shape == (2, 24) and len(res.rounds) == 6
    assert any("held out" in n for n in report.notes)


def test_paired_difference_counts_the_seed_variance():
    rng = np.random.default_rng(0)
    a = rng.normal(0.5, 0.1, size=(1, 300))
    b = a - 0.01 + rng.normal(0, 0.02, size=(1, 300))
    one = paired_difference(a, b, n_resamples=2000)
    assert one["low"] < 0.01 < one["high"]
    # four seeds whose mean differences spread widely: the CI must widen
    shift = np.array([[-0.03], [0.0], [0.02], [0.05]])
    many = paired_difference(
        np.repeat(a, 4, axis=0) + shift, np.repeat(b, 4, axis=0), n_resamples=2000
    )
    assert many["high"] - many["low"] > 2 * (one["high"] - one["low"])
    nan = paired_difference(np.array([[0.1, np.nan, 0.3, 0.2]]), np.array([[0.0, 0.5, 0.1, 0.1]]))
    assert nan["n"] == 3


def test_click_noise_option(splits):
    tr, va, te = splits
    report = select(
        tr[0], tr[1], tr[2], validation=va, test=te, candidates=["lambdarank", "listwise"],
        click_noise=20, **FAST,
    )  # fmt: skip
    assert report.click_valid is not None and set(report.click_valid) == {"lambdarank", "listwise"}
    rows = report.rows()
    assert all(np.isfinite(r["valid_clicks_change"]) for r in rows)
    assert "(clicks)" in str(report)


def test_simulate_clicks_follows_the_grades():
    y = np.tile([2.0, 1.0, 0.0, 0.0], 50)
    clicks = simulate_clicks(y, [4] * 50, sessions=30, seed=0, cap=1000)
    assert clicks[y == 2].mean() > clicks[y == 1].mean() > clicks[y == 0].mean()
    assert simulate_clicks(y, [4] * 50, sessions=30, seed=0).max() == 4  # capped
    with pytest.raises(ValueError, match="sum to"):
        simulate_clicks(y, [3], sessions=2)


def test_regression_with_a_band():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 3))
    y = np.log1p(np.exp(2.0 + X[:, 0] + 0.3 * rng.normal(size=600)))
    Xt = rng.normal(size=(200, 3))
    yt = np.log1p(np.exp(2.0 + Xt[:, 0] + 0.3 * rng.normal(size=200)))
    report = select(
        X, y, task="regression", test=(Xt, yt), cv=2, band=(1.5, 3.0), prefer_band=True,
        candidates=["squared_error", "smelu", "l2", "reg:squarederror"], **FAST,
    )  # fmt: skip
    assert report.metric == "band_mse" and not report.higher_is_better
    assert set(report.metrics) == {"mse", "mae", "band_mse", "band_mae"}
    res = report.results["smelu"]
    inside = (yt >= 1.5) & (yt <= 3.0)
    assert np.isnan(res.test["band_mse"][0]).sum() == (~inside).sum()
    assert report.chosen in report.results
    assert "MSE in band" in str(report)


def test_resume_from_the_output_folder_and_processes(splits, tmp_path):
    tr, va, te = splits
    kw = dict(validation=va, test=te, candidates=["lambdarank", "rank_xendcg", "rank:pairwise"])
    lines: list[str] = []
    first = select(tr[0], tr[1], tr[2], output_dir=tmp_path, progress=lines.append, **kw, **FAST)
    assert len(list(tmp_path.glob("*.pkl"))) == 3 and not any("resumed" in x for x in lines)
    (tmp_path / "rank_pairwise__clean__fold0__seed0.pkl").unlink()  # as if interrupted there
    lines.clear()
    again = select(
        tr[0], tr[1], tr[2], output_dir=tmp_path, progress=lines.append, n_jobs=2, **kw, **FAST
    )
    assert sum("resumed" in x for x in lines) == 2 and len(lines) == 3
    for name in first.results:
        assert np.array_equal(
            first.results[name].test["ndcg@10"], again.results[name].test["ndcg@10"]
        )
    assert again.chosen == first.chosen
    again.save_best(tmp_path / "best.model")  # the models come back from the folder too
    with pytest.raises(ValueError, match="other data or settings"):
        select(tr[0], tr[1], tr[2], output_dir=tmp_path, **kw, **{**FAST, "n_rounds": 9})


def test_arrays_from_polars_with_interleaved_queries():
    pl = pytest.importorskip("polars")
    from selrank.selection._data import part_from_arrays

    X = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [0.0, 1.0, 0.0, 1.0, 0.0]})
    part = part_from_arrays(X, pl.Series([1, 0, 2, 0, 1]), pl.Series([7, 3, 7, 3, 7]))
    assert part.group.tolist() == [2, 3]  # rows sorted by query (stably)
    assert part.X[:, 0].tolist() == [2.0, 4.0, 1.0, 3.0, 5.0]
    assert part.y.tolist() == [0.0, 0.0, 1.0, 2.0, 1.0]
    with pytest.raises(ValueError, match="one value per row"):
        part_from_arrays(X, [1, 2], None)


def test_the_lightgbm_builtins_share_one_binned_dataset_and_score_the_same(splits):
    from selrank.selection import CANDIDATES

    tr, va, _ = splits
    p = lambda s: Part(s[0], s[1], np.bincount(np.unique(s[2], return_inverse=True)[1]))  # noqa: E731
    train, valid = p(tr), p(va)
    shared: dict = {}
    s = TrainSettings(n_rounds=8, early_stopping_rounds=4, num_threads=1, shared=shared)
    a = CANDIDATES["lambdarank"].fit(train, valid, s)
    assert len(shared) == 1
    binned = next(iter(shared.values()))[2]
    b = CANDIDATES["rank_xendcg"].fit(train, valid, s)
    assert len(shared) == 1 and next(iter(shared.values()))[2] is binned  # binned once
    alone = TrainSettings(n_rounds=8, early_stopping_rounds=4, num_threads=1)
    for name, fitted in (("lambdarank", a), ("rank_xendcg", b)):
        own = CANDIDATES[name].fit(train, valid, alone)
        assert np.array_equal(fitted.predict(valid.X), own.predict(valid.X)), name
