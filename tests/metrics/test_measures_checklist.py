"""CONTRIBUTING's "Add a measure" followed literally: one record and one test.

Rank-biased precision (Moffat & Zobel, TOIS 2008) with persistence ``p`` is written here as a
kernel and a ``Measure`` record, registered from the test (the built-in ``rbp`` record is
taken out for the duration, so that nothing of it helps), and then seen with no other edit by
the grammar, ``evaluate`` (arrays), ``evaluate_run`` (TREC runs), the comparisons, the command
line and the docs table. Its values are checked against a plain-Python loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from selrank.metrics import evaluate, evaluate_run, paired_comparison, parse_metrics
from selrank.metrics._kernels import cumulative_table
from selrank.metrics.measures import MEASURES, Measure, Param, measures_table, register

pl = pytest.importorskip("polars")


# Step 1: the kernel -- one value per query; linear in a positional weight, so exact over ties.
def rbp_kernel(rk, k, *, judgments, relevance_threshold=0.0, p=0.8, **_):
    weight = (1.0 - p) * p ** np.arange(rk.max_size, dtype=np.float64)
    if k is not None:
        weight[k:] = 0.0
    gain = np.where(rk.label > relevance_threshold, rk.label, 0.0)
    return rk.group_sum(gain * rk.expected_weight(cumulative_table(weight)))


# Step 2: the record, with its spellings and its parameter.
RECORD = Measure(
    "rbp",
    "rank-biased precision, persistence p (the checklist's copy)",
    rbp_kernel,
    {
        "selrank": ("rbp", "rbp@{k}", "rbp(p={p})", "rbp(p={p})@{k}"),
        "ir_measures": ("RBP", "RBP(p={p})", "RBP(p={p})@{k}"),
    },
    params=(Param("p", 0.8, 0.0, 1.0, open_low=True, open_high=True),),
    separators="@",
)


@pytest.fixture
def rbp_registered():
    saved = dict(MEASURES)
    del MEASURES["rbp"]  # the built-in record must play no part
    try:
        yield register(RECORD)
    finally:  # the registry as it was, in its order
        MEASURES.clear()
        MEASURES.update(saved)


def plain_rbp(labels_in_rank_order, p, k=None, threshold=0.0):
    total = 0.0
    for i, g in enumerate(labels_in_rank_order):
        if k is not None and i >= k:
            break
        if g > threshold:
            total += g * p**i
    return (1.0 - p) * total


def random_arrays(rng, n_queries=60):
    sizes = rng.integers(1, 15, n_queries)
    y = rng.integers(0, 4, sizes.sum()).astype(float)
    s = rng.normal(size=sizes.sum())  # untied: one order
    return y, s, sizes


# Step 3: the test.
def test_the_grammar_reads_the_new_record(rbp_registered):
    spec, at5, default = parse_metrics("RBP(p=0.5), rbp@5, rbp")
    assert (spec.measure, spec.k, spec.params) == ("rbp", None, (("p", 0.5),))
    assert (at5.k, at5.params) == (5, (("p", 0.8),))
    assert default.params == (("p", 0.8),)
    with pytest.raises(ValueError, match=r"`p` must be a number in \(0, 1\); got 1.5"):
        parse_metrics("RBP(p=1.5)")
    with pytest.raises(ValueError, match="takes its suffix after '@'"):
        parse_metrics("rbp.95")


def test_evaluate_on_arrays_sees_it(rbp_registered, rng):
    y, s, sizes = random_arrays(rng)
    per = evaluate(y, s, sizes, metrics=["RBP(p=0.5)", "rbp@3"], per_query=True)
    offsets = np.r_[0, np.cumsum(sizes)]
    want5, want3 = [], []
    for a, b in zip(offsets[:-1], offsets[1:]):
        ranked = y[a:b][np.argsort(-s[a:b], kind="stable")]
        want5.append(plain_rbp(ranked, 0.5))
        want3.append(plain_rbp(ranked, 0.8, k=3))
    np.testing.assert_allclose(per["rbp(p=0.5)"].to_numpy(), want5, rtol=1e-12)
    np.testing.assert_allclose(per["rbp@3"].to_numpy(), want3, rtol=1e-12)
    # ties: exact average over the orderings of tied scores (two tied rows, labels 2 and 0)
    tied = evaluate([2.0, 0.0], [1.0, 1.0], metrics="RBP(p=0.5)")["mean"].item()
    assert tied == pytest.approx((plain_rbp([2, 0], 0.5) + plain_rbp([0, 2], 0.5)) / 2)


def test_evaluate_run_sees_it(rbp_registered, rng):
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(-1, 4)) for j in range(8)} for i in range(30)}
    run = {q: {f"d{j}": float(rng.normal()) for j in range(10)} for q in qrels}
    per = evaluate_run(qrels, run, metrics="RBP(p=0.9)@5", relevance_level=2, per_query=True)
    want = []
    for q in sorted(qrels):
        ranked = sorted(run[q], key=run[q].__getitem__, reverse=True)
        grades = [max(qrels[q].get(d, 0), 0) for d in ranked]
        want.append(plain_rbp(grades, 0.9, k=5, threshold=1))
    np.testing.assert_allclose(per["RBP(p=0.9)@5"].to_numpy(), want, rtol=1e-12)
    reverse = {q: {d: -x for d, x in docs.items()} for q, docs in run.items()}
    table = paired_comparison(qrels, runs={"a": run, "b": reverse}, metrics="rbp")
    assert table["metric"].to_list() == ["rbp"]


def test_the_cli_and_the_docs_table_see_it(rbp_registered, tmp_path, capsys):
    from selrank.cli import main

    (tmp_path / "q.qrels").write_text("q1 0 a 2\nq1 0 b 0\nq2 0 c 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 b 1 2.0 sys\nq1 Q0 a 2 1.0 sys\nq2 Q0 c 1 1.0 sys\n")
    status = main(
        ["evaluate", "--qrels", str(tmp_path / "q.qrels"), "--run", str(tmp_path / "r.run"),
         "--metrics", "RBP(p=0.5)"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0
    # q1: (1 - 0.5) * 2 * 0.5 = 0.5; q2: (1 - 0.5) * 1 = 0.5
    assert "RBP(p=0.5)" in out and "0.5000" in out
    table = measures_table()
    assert "the checklist's copy" in table and "`RBP(p=0.8)@k`" in table
