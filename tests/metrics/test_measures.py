"""The measure records: the trec_eval and ranx measures added on them against pytrec_eval and
ranx, the grammar of their spellings, and the docs table generated from the records."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from selrank.metrics import MEASURES, Qrels, Run, evaluate, evaluate_run, parse_metrics
from selrank.metrics.measures import Measure, measures_table, register

from .test_trec import random_trec

pl = pytest.importorskip("polars")

LEVELS = [f"{x / 10:.2f}" for x in range(11)]  # trec_eval's iprec_at_recall_0.00 .. _1.00


@pytest.fixture(scope="module")
def small_trec():
    qrels, run, _ = random_trec(np.random.default_rng(7), n_queries=600, n_run_only=20)
    return qrels, run


@pytest.mark.parametrize("level", [1, 2])
def test_trec_eval_measures_match_pytrec_eval(small_trec, level):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = small_trec
    measures = {"num_ret", "num_rel", "num_rel_ret", "gm_map", "map", "iprec_at_recall", "set_F"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)
    names = ["num_ret", "num_rel", "num_rel_ret", "gm_map", "set_F"]
    names += [f"iprec_at_recall_{x}" for x in LEVELS]
    per = evaluate_run(
        Qrels(qrels), Run(run), metrics=names, relevance_level=level, queries="both", per_query=True
    )
    assert sorted(ref) == per["query"].to_list()
    for name in names:
        got = per[name].to_numpy()
        if name == "gm_map":  # pytrec_eval's per-query value is log(max(AP, 1e-5))
            want = np.array([np.exp(ref[q]["gm_map"]) for q in per["query"]])
            got = np.maximum(got, 1e-5)
        else:
            want = np.array([ref[q][name] for q in per["query"]])
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)
    summary = evaluate_run(qrels, run, metrics=names, relevance_level=level, queries="both")
    means = dict(summary.select("metric", "mean").rows())
    # trec_eval's "all" lines: sums for its counts, a geometric mean for gm_map
    for name in ("num_ret", "num_rel", "num_rel_ret"):
        assert means[name] == sum(ref[q][name] for q in ref)
    gm = np.exp(np.mean([ref[q]["gm_map"] for q in ref]))
    assert means["gm_map"] == pytest.approx(gm, rel=1e-12)


def test_iprec_needs_one_order_of_ties_on_arrays():
    y, s = [1.0, 0.0, 1.0], [0.5, 0.5, 0.1]
    with pytest.raises(ValueError, match="no exact average over tied orderings"):
        evaluate(y, s, metrics="iprec_at_recall_0.50")
    got = evaluate(y, s, metrics="iprec_at_recall_0.50", ties="stable")["mean"].item()
    assert got == 1.0  # the first row is relevant: recall 0.5 at precision 1
    got = evaluate(y, s, metrics="iprec_at_recall_0.50", ties="pessimistic")["mean"].item()
    assert got == pytest.approx(2 / 3)  # worst order: recall 0.5 at rank 2, 1.0 at rank 3


def test_f1_hits_and_counts_on_arrays_are_exact_over_ties():
    # one query, labels 1 0 1 0 with the first two tied: hits@1 is 0.5 in expectation
    y, s = [1.0, 0.0, 1.0, 0.0], [0.9, 0.9, 0.5, 0.1]
    frame = evaluate(y, s, metrics=["hits@1", "f1@2", "num_ret", "num_rel", "set_F"])
    means = dict(frame.select("metric", "mean").rows())
    assert means["hits@1"] == 0.5
    assert means["f1@2"] == pytest.approx(2 * 1 / (2 + 2))
    assert (means["num_ret"], means["num_rel"]) == (4.0, 2.0)
    assert means["set_f"] == pytest.approx(2 * 2 / (4 + 2))


@pytest.mark.slow
def test_ranx_measures_match_ranx():
    """hits@k, f1@k, f1, hit_rate@k, and RBP (ranx's rbp.95 is RBP(p=0.95) here) on ranx's
    own Qrels and Run (slow: ranx compiles its numba kernels on first use)."""
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(3)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 4)) for j in range(12)} for i in range(80)}
    for docs in qrels.values():
        docs["d0"] = max(docs["d0"], 1)  # ranx drops queries without a relevant document
    run = {q: {f"d{j}": float(rng.normal()) for j in range(15)} for q in qrels}  # untied
    r_qrels, r_run = ranx.Qrels(qrels), ranx.Run(run)
    pairs = {"hits@5": "hits@5", "f1@5": "f1@5", "f1": "f1", "hit_rate@3": "hit_rate@3",
             "RBP(p=0.95)": "rbp.95", "RBP(p=0.5)": "rbp.5", "ndcg@5": "ndcg@5"}  # fmt: skip
    ref = ranx.evaluate(r_qrels, r_run, list(pairs.values()), return_mean=False)
    # ranx's objects are accepted as qrels and runs
    per = evaluate_run(r_qrels, r_run, metrics=list(pairs), per_query=True)
    for ours, theirs in pairs.items():
        np.testing.assert_allclose(per[ours].to_numpy(), ref[theirs], rtol=1e-9, err_msg=ours)


def test_grammar_of_the_new_spellings():
    specs = parse_metrics("set_F, f1@5, IPrec@0.5, iprec_at_recall_1.00, RBP(p=0.9)@10, NumRet")
    assert [(s.measure, s.k) for s in specs] == [
        ("f1", None), ("f1", 5), ("iprec_at_recall", None), ("iprec_at_recall", None),
        ("rbp", 10), ("num_ret", None),
    ]  # fmt: skip
    assert specs[2].params == (("recall", 0.5),) and specs[4].params == (("p", 0.9),)
    for bad, message in [
        ("iprec_at_recall", r"needs its `recall`, e.g. 'iprec_at_recall_0.10'"),
        ("iprec_at_recall_1.5", r"`recall` must be a number in \[0, 1\]; got 1.5"),
        ("rbp.95", r"ranx's rbp.95 is RBP\(p=0.95\) here"),
        ("RBP(q=0.9)", r"rbp has no parameter 'q'"),
        ("RBP(p=high)", r"`p` must be a number in \(0, 1\); got 'high'"),
        ("num_ret@10", "num_ret takes no cut-off"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_metrics(bad)
    with pytest.raises(ValueError, match="names the same measure twice"):
        parse_metrics("RBP, RBP(p=0.8)")  # the default spelled out is the same measure


def test_register_refuses_clashes(monkeypatch):
    monkeypatch.setattr("selrank.metrics.measures.MEASURES", dict(MEASURES))
    ndcg = MEASURES["ndcg"]
    with pytest.raises(ValueError, match="already registered"):
        register(ndcg)
    clash = Measure("ndcg2", "x", ndcg.kernel, {"selrank": ("ndcg2", "ndcg_cut_{k}")})
    with pytest.raises(ValueError, match="'ndcg_cut' already names 'ndcg'"):
        register(clash)
    with pytest.raises(ValueError, match="its own name must be one of its spellings"):
        Measure("x", "x", ndcg.kernel, {"selrank": ("y",)})


def test_docs_table_is_the_records():
    page = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- measures:begin -->\n(.*?)\n<!-- measures:end -->", page, re.S)
    assert m is not None, "docs/metrics.md lost its generated measures table"
    assert m.group(1) == measures_table(), (
        "docs/metrics.md's measures table differs from the records: paste "
        "`python -c 'from selrank.metrics.measures import measures_table as t; print(t())'`"
    )
