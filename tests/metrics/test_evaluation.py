"""`evaluate` and `compare`: tidy tables that agree with the metric functions."""

from __future__ import annotations

import numpy as np
import pytest

from selrank.metrics import (
    CONVENTIONS,
    METRICS,
    average_precision,
    compare,
    evaluate,
    format_comparison,
    ndcg,
    paired_comparison,
    parse_metric,
)

from .test_ranking import FUNCS, random_queries


def test_evaluate_matches_functions(rng):
    pytest.importorskip("polars")
    y, s, sizes, _ = random_queries(rng, 500, 12, n_score_levels=5)
    names = ["ndcg@10", "dcg@5", "map", "mrr@3", "err@10", "precision@5", "recall@10", "ndcg"]
    for policy in ("one", "zero", "exclude"):
        df = evaluate(y, s, sizes, metrics=names, no_relevant=policy)
        assert df["metric"].to_list() == names
        for name, mean, n_no_rel, n_ex, n_q in df.select(
            "metric", "mean", "n_no_relevant", "n_excluded", "n_queries"
        ).rows():
            base, k = parse_metric(name)
            p = policy if (policy != "one" or METRICS[base].normalised) else "zero"
            assert mean == pytest.approx(FUNCS[base](y, s, sizes, k=k, no_relevant=p), rel=1e-12)
            assert n_no_rel == int((np.add.reduceat(y, np.r_[0, np.cumsum(sizes)[:-1]]) == 0).sum())
            assert n_ex == (n_no_rel if policy == "exclude" else 0)
            assert n_q + n_ex == sizes.size
    per = evaluate(y, s, sizes, metrics=names, per_query=True, no_relevant="exclude")
    assert per.columns == ["query", "n_docs", "n_relevant", *names]
    assert per.height == sizes.size and per["n_docs"].to_list() == sizes.tolist()
    assert per["ndcg@10"].null_count() == (per["n_relevant"] == 0).sum()
    np.testing.assert_allclose(
        per["map"].to_numpy(),
        average_precision(y, s, sizes, no_relevant="exclude", reduction="none"),
    )


def test_evaluate_conventions_and_overrides(rng):
    pytest.importorskip("polars")
    y, s, sizes, _ = random_queries(rng, 200, 8, n_score_levels=3)
    a = evaluate(y, s, sizes, metrics="ndcg@5", conventions="trec_eval")["mean"][0]
    assert a == pytest.approx(
        ndcg(y, s, sizes, k=5, gain="linear", ties="stable", no_relevant="zero")
    )
    b = evaluate(y, s, sizes, metrics="ndcg@5", conventions="trec_eval", ties="average")
    assert b["mean"][0] == pytest.approx(ndcg(y, s, sizes, k=5, gain="linear", no_relevant="zero"))
    assert set(CONVENTIONS) == {"lightgbm", "xgboost", "trec_eval", "ranx", "sklearn"}
    with pytest.raises(ValueError, match="conventions"):
        evaluate(y, s, sizes, conventions="pyterrier")
    with pytest.raises(ValueError, match="duplicate"):
        evaluate(y, s, sizes, metrics=["map", "MAP"])
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate(y, s, sizes, metrics=["ndcg@5", "auc"])


def test_compare_paired_tests(rng):
    pytest.importorskip("polars")
    y, s, sizes, _ = random_queries(rng, 300, 10, max_label=2)
    good = y + rng.normal(0, 0.8, y.size)
    same = good.copy()
    noise = rng.normal(size=y.size)
    df = compare(
        {"noise": noise, "good": good, "same": same},
        y,
        sizes,
        metrics=["ndcg@5", "map"],
        n_resamples=2000,
    )
    assert df.height == 6
    rows = {
        (m, sname): r
        for m, sname, *r in df.select(
            "metric", "system", "diff", "p_value", "n_better", "n_worse"
        ).rows()
    }
    assert rows[("ndcg@5", "noise")][1] is None and rows[("ndcg@5", "noise")][0] == 0.0
    assert rows[("ndcg@5", "good")][0] > 0.1 and rows[("ndcg@5", "good")][1] < 0.01
    assert rows[("map", "good")][2] > rows[("map", "good")][3]
    t = compare({"noise": noise, "good": good}, y, sizes, test="t", baseline="good")
    assert t["p_value"][0] < 1e-6 and t["diff"][0] < 0
    # identical systems: no difference at all
    z = compare({"good": good, "same": same}, y, sizes, test="t")
    assert z["p_value"][1] == 1.0 and z["n_better"][1] == 0
    holm = compare(
        {"noise": noise, "good": good, "same": same},
        y,
        sizes,
        metrics=["ndcg@5"],
        correction="bonferroni",
        n_resamples=500,
    )
    plain = compare(
        {"noise": noise, "good": good, "same": same}, y, sizes, metrics=["ndcg@5"], n_resamples=500
    )
    assert holm["p_value"][1] == pytest.approx(min(1.0, 2 * plain["p_value"][1]))
    with pytest.raises(ValueError, match="baseline"):
        compare({"a": good, "b": noise}, y, sizes, baseline="c")
    with pytest.raises(ValueError, match="at least two"):
        compare({"a": good}, y, sizes)


# --------------------------------------------------------------------------------------
# paired_comparison
# --------------------------------------------------------------------------------------


def _three_systems(rng, n_queries=400, size=12):
    sizes = np.full(n_queries, size)
    n = int(sizes.sum())
    y = rng.integers(0, 3, n).astype(float)
    good = y + rng.normal(0, 1.0, n)
    return (
        y,
        sizes,
        {
            "ref": good,
            "slightly worse": good + rng.normal(0, 0.4, n),
            "noise": rng.normal(size=n),
            "same": good.copy(),
        },
    )


def test_paired_comparison_matches_scipy(rng):
    stats = pytest.importorskip("scipy.stats")
    y, sizes, systems = _three_systems(rng)
    df = paired_comparison(systems, y, sizes, metrics=["ndcg@5", "map"], n_resamples=5000, seed=4)
    assert df.height == 6 and set(df["reference"]) == {"ref"}
    for metric in ("ndcg@5", "map"):
        block = df.filter(df["metric"] == metric)
        ps = []
        for row in block.iter_rows(named=True):
            f = FUNCS[parse_metric(metric)[0]]
            k = parse_metric(metric)[1]
            v = f(y, systems[row["system"]], sizes, k=k, reduction="none")
            r = f(y, systems["ref"], sizes, k=k, reduction="none")
            assert row["diff"] == pytest.approx(np.mean(v - r), abs=1e-12)
            assert row["n_better"] == (v > r).sum() and row["n_queries"] == sizes.size
            if row["system"] == "same":
                assert row["p_value"] == 1.0 and row["ci_low"] == row["ci_high"] == 0.0
            else:
                assert row["p_value"] == pytest.approx(stats.ttest_rel(v, r).pvalue, rel=1e-8)
                boot = stats.bootstrap(
                    (v, r), lambda a, b, axis=-1: np.mean(a - b, axis=axis), paired=True,
                    n_resamples=5000, method="percentile", random_state=0,
                ).confidence_interval  # fmt: skip
                width = boot.high - boot.low
                assert row["ci_low"] == pytest.approx(boot.low, abs=0.06 * width)
                assert row["ci_high"] == pytest.approx(boot.high, abs=0.06 * width)
            ps.append(row["p_value"])
        # Holm by hand over the three systems of this metric
        m = len(ps)
        order = np.argsort(ps)
        want = np.empty(m)
        running = 0.0
        for i, j in enumerate(order):
            running = max(running, min(1.0, (m - i) * ps[j]))
            want[j] = running
        np.testing.assert_allclose(block["p_holm"].to_numpy(), want, rtol=1e-12)
    verdict = dict(zip(df["system"], df["verdict"]))
    assert verdict == {"slightly worse": "worse", "noise": "worse", "same": "parity"}


def test_paired_comparison_verdicts_and_tests(rng):
    stats = pytest.importorskip("scipy.stats")
    y, sizes, systems = _three_systems(rng, n_queries=300)
    better = paired_comparison(systems, y, sizes, reference="noise", n_resamples=1000)
    assert set(better["verdict"]) == {"better"}
    assert (better["ci_low"] > 0).all() and (better["p_holm"] < 0.05).all()
    # a tiny difference on few queries: no significant difference
    small = {
        "a": systems["ref"][: 12 * 10],
        "b": systems["ref"][: 12 * 10] + rng.normal(0, 0.3, 120),
    }
    par = paired_comparison(small, y[:120], sizes[:10], n_resamples=1000)
    assert par["verdict"][0] == "parity" and par["ci_low"][0] < 0 < par["ci_high"][0]
    w = paired_comparison(systems, y, sizes, test="wilcoxon", n_resamples=1000)
    v = ndcg(y, systems["noise"], sizes, k=10, reduction="none")
    r = ndcg(y, systems["ref"], sizes, k=10, reduction="none")
    row = w.filter(w["system"] == "noise").row(0, named=True)
    ref = stats.wilcoxon(v, r, zero_method="wilcox", method="asymptotic", correction=False)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-9) and row["test"] == "wilcoxon"
    perm = paired_comparison(systems, y, sizes, test="permutation", n_resamples=2000)
    assert perm["p_value"].to_list()[1] == pytest.approx(1 / 2001)  # noise: no flip is as extreme
    bca = paired_comparison(systems, y, sizes, ci="bca", n_resamples=2000)
    assert bca["verdict"].to_list() == ["worse", "worse", "parity"]


def test_paired_comparison_pools_folds(rng):
    """Folds pool by concatenation: sizes concatenated, or ids made unique per fold."""
    folds = [_three_systems(rng, n_queries=60 + 10 * f, size=8) for f in range(3)]
    y = np.concatenate([f[0] for f in folds])
    sizes = np.concatenate([f[1] for f in folds])
    systems = {k: np.concatenate([f[2][k] for f in folds]) for k in ("ref", "noise")}
    # each fold numbers its queries 0, 1, ...: make them unique with the fold number
    qid = np.concatenate(
        [f * 10**6 + np.repeat(np.arange(f_[1].size), f_[1]) for f, f_ in enumerate(folds)]
    )
    a = paired_comparison(systems, y, sizes, n_resamples=500)
    b = paired_comparison(systems, y, qid=qid, n_resamples=500)
    assert a.equals(b)
    assert a["n_queries"][0] == sum(f[1].size for f in folds) == 210
    per_fold = np.concatenate([
        ndcg(f[0], f[2]["noise"], f[1], k=10, reduction="none")
        - ndcg(f[0], f[2]["ref"], f[1], k=10, reduction="none") for f in folds
    ])  # fmt: skip
    assert a["diff"][0] == pytest.approx(per_fold.mean(), abs=1e-12)
    # ids repeated across folds would merge queries: the pooled count shows it
    clash = np.concatenate([np.repeat(np.arange(f_[1].size), f_[1]) for f_ in folds])
    merged = paired_comparison(systems, y, qid=clash, n_resamples=500)
    assert merged["n_queries"][0] == 80


def test_paired_comparison_excluded_queries_and_errors(rng):
    y, sizes, systems = _three_systems(rng, n_queries=50)
    y[:12] = 0.0  # first query without a relevant document
    df = paired_comparison(systems, y, sizes, no_relevant="exclude", n_resamples=200)
    assert (df["n_queries"] == 49).all()
    with pytest.raises(ValueError, match="not both"):
        paired_comparison(systems, y, sizes, qid=np.zeros(y.size))
    with pytest.raises(TypeError, match="group"):
        paired_comparison(systems, y)
    with pytest.raises(ValueError, match="one query id per row"):
        paired_comparison(systems, y, qid=np.arange(10))
    with pytest.raises(ValueError, match="add up to"):
        paired_comparison(systems, y, np.ones(y.size // 2, dtype=int))
    with pytest.raises(ValueError, match="reference"):
        paired_comparison(systems, y, sizes, reference="nope")
    with pytest.raises(ValueError, match="test"):
        paired_comparison(systems, y, sizes, test="z")
    with pytest.raises(ValueError, match="confidence"):
        paired_comparison(systems, y, sizes, confidence=95)


def test_format_comparison(rng):
    y, sizes, systems = _three_systems(rng, n_queries=100)
    df = paired_comparison(systems, y, sizes, metrics="ndcg@10", n_resamples=500)
    lines = format_comparison(df).splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("noise vs ref: ΔNDCG@10 = −0.") and lines[1].endswith("→ worse")
    assert lines[2].startswith("same vs ref: ΔNDCG@10 = +0.000 [+0.000, +0.000], p = 1 ")


def test_paired_comparison_candidate_against_each(rng):
    y, sizes, systems = _three_systems(rng, n_queries=200)
    fwd = paired_comparison(systems, y, sizes, candidate="noise", n_resamples=500)
    back = paired_comparison(systems, y, sizes, reference="noise", n_resamples=500)
    assert fwd["system"].unique().to_list() == ["noise"]
    assert fwd["reference"].to_list() == ["ref", "slightly worse", "same"]
    np.testing.assert_allclose(fwd["diff"].to_numpy(), -back["diff"].to_numpy(), atol=1e-15)
    np.testing.assert_allclose(fwd["p_holm"].to_numpy(), back["p_holm"].to_numpy())
    flip = {"better": "worse", "worse": "better", "parity": "parity"}
    assert fwd["verdict"].to_list() == [flip[v] for v in back["verdict"]]
    with pytest.raises(ValueError, match="not both"):
        paired_comparison(systems, y, sizes, candidate="noise", reference="ref")


def test_evaluate_and_compare_take_qid_and_refuse_ids_as_group():
    rng = np.random.default_rng(3)
    sizes = np.array([4, 1, 3, 1, 5])
    qid = np.repeat(np.arange(sizes.size) * 7 + 2, sizes)
    y = rng.integers(0, 3, sizes.sum()).astype(float)
    s1, s2 = rng.normal(size=(2, sizes.sum()))
    by_sizes = evaluate(y, s1, sizes, metrics=["ndcg@3", "map"])
    by_ids = evaluate(y, s1, qid=qid, metrics=["ndcg@3", "map"])
    assert by_sizes["mean"].to_list() == pytest.approx(by_ids["mean"].to_list(), abs=1e-12)
    a = compare({"a": s1, "b": s2}, y, sizes, metrics="ndcg@3", test="t")
    b = compare({"a": s1, "b": s2}, y, qid=qid, metrics="ndcg@3", test="t")
    assert a["mean"].to_list() == pytest.approx(b["mean"].to_list(), abs=1e-12)
    with pytest.raises(ValueError, match="qid"):
        evaluate(y, s1, qid, metrics="ndcg@3")  # per-row ids given as sizes
