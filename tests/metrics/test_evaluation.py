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
    ndcg,
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
        evaluate(y, s, sizes, metrics=["ndcg@5", "f1"])


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
