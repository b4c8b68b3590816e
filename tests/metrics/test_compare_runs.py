"""compare / paired_comparison on TREC runs, the ComparisonReport tables and trec_report."""

from __future__ import annotations

import re

import numpy as np
import pytest

from selrank.metrics import (
    ComparisonReport,
    Run,
    compare,
    evaluate_run,
    format_comparison,
    labels_to_qrels,
    paired_comparison,
    scores_to_run,
    trec_report,
    write_qrels,
    write_run,
)
from selrank.metrics.significance import holm, paired_bootstrap_ci, paired_t_test

pl = pytest.importorskip("polars")

METRICS = ["nDCG@10", "map", "P_5", "Rprec", "bpref"]


@pytest.fixture(scope="module")
def mq2008():
    """Packaged LETOR data as qrels and three runs (two features and a noisy oracle)."""
    from selrank.datasets import load_letor

    try:
        test = load_letor("mq2008", keep_comments=True).test
    except FileNotFoundError:  # pragma: no cover - an installation without the data
        pytest.skip("packaged MQ2008 data not available")
    ids = {"qid": test.qid, "docno": test.docid}
    qrels = labels_to_qrels(test.y, test.group, **ids)
    rng = np.random.default_rng(7)
    oracle = test.y + rng.normal(0, 1.0, test.y.size)
    runs = [
        scores_to_run(test.X[:, 24], test.group, tag="f25", **ids),
        scores_to_run(test.X[:, 4], test.group, tag="f5", **ids),
        scores_to_run(oracle, test.group, tag="oracle", **ids),
    ]
    return qrels, runs


def test_compare_runs_is_paired_comparison_of_evaluate_run(mq2008):
    qrels, runs = mq2008
    report = compare(qrels, runs=runs, metrics=METRICS, test="t", n_resamples=1000)
    assert isinstance(report, ComparisonReport)
    assert report.systems == ["f25", "f5", "oracle"] and report.anchor == "f25"
    assert report.metrics == METRICS
    table = report.table
    assert table.height == 2 * len(METRICS)
    per = {r.tag: evaluate_run(qrels, r, metrics=METRICS, per_query=True) for r in runs}
    for m in METRICS:
        ref = per["f25"][m].to_numpy()
        p = []
        for name in ("f5", "oracle"):
            row = table.filter((pl.col("metric") == m) & (pl.col("system") == name)).row(
                0, named=True
            )
            v = per[name][m].to_numpy()
            assert row["n_queries"] == 156
            assert row["mean"] == pytest.approx(v.mean(), abs=1e-12)
            assert row["reference_mean"] == pytest.approx(ref.mean(), abs=1e-12)
            assert row["diff"] == pytest.approx((v - ref).mean(), abs=1e-12)
            low, high = paired_bootstrap_ci(v, ref, n_resamples=1000, seed=0)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-12)
            assert row["p_value"] == pytest.approx(paired_t_test(v, ref)[1], rel=1e-12)
            p.append(row["p_value"])
        adjusted = table.filter(pl.col("metric") == m)["p_holm"].to_numpy()
        np.testing.assert_allclose(adjusted, holm(np.array(p)), rtol=1e-12)
    # the noisy oracle beats a single feature on every metric
    assert set(table.filter(pl.col("system") == "oracle")["verdict"]) == {"better"}


def test_every_way_of_giving_runs_gives_one_table(mq2008, tmp_path):
    qrels, runs = mq2008
    kw = {"metrics": "ndcg@10,map", "n_resamples": 500}
    first = compare(qrels, runs=runs, **kw).table
    write_qrels(qrels, tmp_path / "q.qrels")
    paths = []
    for r in runs:
        write_run(r, tmp_path / f"{r.tag}.run.gz")
        paths.append(tmp_path / f"{r.tag}.run.gz")
    dicts = {r.tag: r.to_dict() for r in runs}
    variants = [
        compare(runs, qrels, **kw).table,
        compare(qrels, runs, **kw).table,  # ranx's order, with a Qrels object or a path
        compare(tmp_path / "q.qrels", runs, **kw).table,
        compare(str(tmp_path / "q.qrels"), runs=[str(p) for p in paths], **kw).table,
        compare(qrels.to_dict(), runs=dicts, **kw).table,
        paired_comparison(dicts, tmp_path / "q.qrels", test="permutation", **kw),
        paired_comparison(qrels, runs=paths, test="permutation", **kw),
    ]
    for v in variants:
        assert v.equals(first)


def test_run_names():
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1, "d": 0}}
    a = {"q1": {"a": 1.0, "b": 0.0}, "q2": {"c": 0.0, "d": 1.0}}
    b = {"q1": {"a": 0.0, "b": 1.0}, "q2": {"c": 1.0, "d": 0.0}}
    table = paired_comparison(qrels, runs=[a, b], metrics="P@1", n_resamples=100)
    assert table["system"].to_list() == ["run_2"] and table["reference"].to_list() == ["run_1"]
    same_tag = [Run(a, tag="x"), Run(b, tag="x")]
    table = paired_comparison(qrels, runs=same_tag, metrics="P@1", n_resamples=100)
    assert table["system"].to_list() == ["x#2"]


def test_files_with_one_tag_are_named_by_file(tmp_path):
    qrels = {"q1": {"a": 1, "b": 0}}
    write_run({"q1": {"a": 1.0, "b": 0.0}}, tmp_path / "one.run", tag="same")
    write_run({"q1": {"a": 0.0, "b": 1.0}}, tmp_path / "two.run", tag="same")
    runs = [tmp_path / "one.run", tmp_path / "two.run"]
    table = paired_comparison(qrels, runs=runs, metrics="P@1", n_resamples=100)
    assert table.select("system", "reference").row(0) == ("two.run", "one.run")


def test_queries_both_and_missing_queries():
    qrels = {f"q{i}": {"a": 1, "b": 0} for i in range(6)}
    full = {q: {"a": 1.0, "b": 0.0} for q in qrels}
    partial = {q: {"a": 0.0, "b": 1.0} for q in list(qrels)[:4]}
    every = paired_comparison(qrels, runs={"full": full, "partial": partial}, metrics="RR",
                              n_resamples=100)  # fmt: skip
    both = paired_comparison(qrels, runs={"full": full, "partial": partial}, metrics="RR",
                             n_resamples=100, queries="both")  # fmt: skip
    assert every["n_queries"].item() == 6 and both["n_queries"].item() == 4
    # a query the run misses scores 0 (trec_eval -c): mean RR 4 * 0.5 / 6
    assert every["mean"].item() == pytest.approx(2 / 6) and both["mean"].item() == 0.5


def test_report_tables(mq2008):
    qrels, runs = mq2008
    named = {"bm_25": runs[0], "f5": runs[1], "oracle": runs[2]}
    report = compare(qrels, runs=named, metrics="ndcg@10,P_5", n_resamples=500)
    md = report.to_markdown()
    lines = md.split("\n")
    assert lines[0] == "| system | ndcg@10 | P_5 |" and lines[1] == "|---|---|---|"
    assert lines[2].startswith("| bm_25 | 0.") and "(" not in lines[2]  # the anchor: means only
    oracle = lines[4]
    assert oracle.startswith("| oracle | **0.") and oracle.count("▲") == 2
    assert re.search(r"\*\*0\.\d{4}\*\* \(\+0\.\d{4} \[\+0\.\d{4}, \+0\.\d{4}\]\)▲", oracle)
    assert "Mean over 156 queries." in md and "better/worse than bm_25" in md
    assert "paired permutation test" in md and "p < 0.05" in md
    assert report.to_markdown(ci=False, bold_best=False).split("\n")[4].count("(") == 0
    tex = report.to_latex(caption="MQ2008.", label="tab:mq")
    assert tex.startswith("\\begin{table}[t]\n\\centering\n\\begin{tabular}{lrr}\n\\toprule")
    assert "bm\\_25 & " in tex and "P\\_5" in tex and "$$" not in tex
    assert "^{\\blacktriangle}$" in tex and "95\\% bootstrap" in tex
    assert "\\caption{MQ2008. Mean over 156 queries." in tex and "\\label{tab:mq}" in tex
    assert tex.endswith("\\end{table}")
    text = str(report)
    assert text.split("\n")[0].split() == ["system", "ndcg@10", "P_5"]
    assert len(text.split("\n")) == 5  # header, three systems, legend
    lines = format_comparison(report).split("\n")  # the one-line-per-comparison view
    assert len(lines) == 4 and lines[0].startswith("f5 vs bm_25: ΔNDCG@10 = ")
    means = report.means()
    assert means["system"].to_list() == ["bm_25", "f5", "oracle"]
    assert means["ndcg@10"][0] == pytest.approx(
        evaluate_run(qrels, runs[0], metrics="ndcg@10")["mean"].item()
    )


def test_candidate_report_reads_each_row_against_the_candidate(mq2008):
    qrels, runs = mq2008
    table = paired_comparison(qrels, runs=runs, candidate="oracle", metrics="map", n_resamples=500)
    report = ComparisonReport(table)
    assert report.anchor == "oracle" and report.systems == ["oracle", "f25", "f5"]
    row = report.to_markdown().split("\n")[3]  # f25 against the oracle: worse
    assert row.startswith("| f25 | 0.") and "(−0." in row and row.endswith("▼ |")


def test_report_from_array_comparison(rng):
    y = rng.integers(0, 3, 600).astype(float)
    table = paired_comparison(
        {"noise": rng.normal(size=600), "model": y + rng.normal(0, 1.0, 600)},
        y, [20] * 30, metrics="ndcg@5", n_resamples=500,
    )  # fmt: skip
    md = ComparisonReport(table).to_markdown()
    assert md.split("\n")[3].startswith("| model | **0.") and "▲" in md
    with pytest.raises(TypeError, match="takes the frame of paired_comparison"):
        ComparisonReport(table.drop("verdict"))


def test_trec_report(mq2008):
    qrels, runs = mq2008
    one = trec_report(qrels, runs[0], metrics="ndcg_cut_10,map")
    means = evaluate_run(qrels, runs[0], metrics="ndcg_cut_10,map")["mean"].to_list()
    assert one == f"{'ndcg_cut_10':<22}\tall\t{means[0]:.4f}\n{'map':<22}\tall\t{means[1]:.4f}"
    per = trec_report(qrels, runs[0], metrics="P_5", per_query=True).split("\n")
    assert len(per) == 156 and per[0].startswith("P_5" + " " * 19 + "\t")
    md = trec_report(qrels, runs, metrics="map", fmt="markdown", n_resamples=500)
    assert md == compare(qrels, runs=runs, metrics="map", test="t", n_resamples=500).to_markdown()
    assert trec_report(qrels, runs[:1], metrics="map", fmt="latex").startswith("\\begin{tabular}")
    with pytest.raises(ValueError, match="`fmt` must be one of"):
        trec_report(qrels, runs, fmt="html")
    with pytest.raises(ValueError, match="per_query=True evaluates one run"):
        trec_report(qrels, runs, per_query=True)


QRELS = {"q1": {"a": 1, "b": 0}}
RUNS = [{"q1": {"a": 1.0, "b": 0.0}}, {"q1": {"a": 0.0, "b": 1.0}}]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: compare(QRELS, runs=RUNS[:1]), ValueError, "compare at least two runs; got 1"),
        (lambda: compare(QRELS, runs=RUNS[0]), ValueError, "compare at least two runs"),
        (lambda: compare(QRELS, [1.0], runs=RUNS), TypeError, "nothing as the second"),
        (lambda: compare(QRELS, runs=RUNS, correction="bonferroni"), ValueError,
         "Holm's correction per metric"),
        (lambda: compare(QRELS, runs=RUNS, group=[2]), TypeError,
         "`group` applies to arrays of scores, not to TREC runs"),
        (lambda: compare(QRELS, runs=RUNS, relevance_threshold=1.0), TypeError,
         "for TREC runs give `relevance_level`"),
        (lambda: compare(QRELS, runs=RUNS, conventions="ranx"), TypeError, "`conventions`"),
        (lambda: compare(QRELS, runs=RUNS, baseline="bm25"), ValueError,
         "`reference` 'bm25' is not one of the systems ['run_1', 'run_2']"),
        (lambda: compare(QRELS, runs=5), TypeError, "`runs` must be a mapping name -> run"),
        (lambda: compare(QRELS, runs=RUNS, metrics="ndcg@x"), ValueError, "positive integer"),
        (lambda: compare(QRELS, runs=RUNS, ties="stable"), ValueError, "`ties` must be one of"),
        (lambda: compare({"a": [0.1, 0.2], "b": [0.2, 0.1]}, [1, 0], relevance_level=2),
         TypeError, "`relevance_level` and `queries` apply to TREC runs"),
        (lambda: paired_comparison({"a": [0.1], "b": [0.2]}), TypeError, "give the labels"),
        (lambda: compare(QRELS, runs=["missing.run", "other.run"]), FileNotFoundError,
         "missing.run does not exist"),
    ],
)  # fmt: skip
def test_run_comparison_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()
