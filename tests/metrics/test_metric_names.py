"""One metric-name grammar for evaluate, evaluate_run and the CLI; the measures added with it
(Judged@k, ERR@k on runs) against ir_measures."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from selrank.metrics import evaluate, evaluate_run, labels_to_qrels, parse_metric, scores_to_run
from selrank.metrics.names import MEASURES, SPELLINGS, parse_metric_name, parse_metrics

pl = pytest.importorskip("polars")

# (name, measure, k) in the three conventions the brief names
SPELLED = [
    # trec_eval
    ("ndcg_cut_10", "ndcg", 10), ("ndcg_cut.10", "ndcg", 10), ("P_5", "precision", 5),
    ("map", "map", None), ("map_cut_100", "map", 100), ("recip_rank", "mrr", None),
    ("Rprec", "rprec", None), ("bpref", "bpref", None), ("success_10", "success", 10),
    ("success.1", "success", 1), ("set_P", "precision", None), ("recall_100", "recall", 100),
    # ir_measures
    ("nDCG@10", "ndcg", 10), ("P@5", "precision", 5), ("AP", "map", None), ("RR", "mrr", None),
    ("R@100", "recall", 100), ("Judged@10", "judged", 10), ("ERR@20", "err", 20),
    ("Success@10", "success", 10), ("Bpref", "bpref", None), ("AP@100", "map", 100),
    # ranx / selrank
    ("ndcg@10", "ndcg", 10), ("map@100", "map", 100), ("mrr", "mrr", None),
    ("precision@5", "precision", 5), ("recall@100", "recall", 100),
    ("hit_rate@10", "success", 10), ("r-precision", "rprec", None), ("mrr@10", "mrr", 10),
]  # fmt: skip


@pytest.mark.parametrize(("name", "measure", "k"), SPELLED)
def test_every_convention_parses(name, measure, k):
    spec = parse_metric_name(name)
    assert (spec.name, spec.measure, spec.k) == (name, measure, k)
    assert parse_metric(name) == (measure, k)


def test_spellings_table_is_the_grammar():
    assert set(SPELLINGS) == set(MEASURES)
    for measure, names in SPELLINGS.items():
        for shown in names:
            name = shown.split(" ")[0].replace("@k", "@3").replace("_k", "_3").replace(".k", ".3")
            assert parse_metric_name(name).measure == measure, shown


def test_comma_separated_lists():
    specs = parse_metrics("ndcg@10, map,P.5,10")
    assert [(s.name, s.measure, s.k) for s in specs] == [
        ("ndcg@10", "ndcg", 10), ("map", "map", None), ("P.5", "precision", 5),
        ("P.10", "precision", 10),
    ]  # fmt: skip
    assert [s.name for s in parse_metrics(["ndcg@10,map", "Rprec"])] == ["ndcg@10", "map", "Rprec"]
    assert parse_metric_name("ndcg_burges@10").gain == "exponential"
    with pytest.raises(ValueError, match=r"names several metrics.*\['ndcg@10', 'map'\]"):
        parse_metric("ndcg@10,map")


@pytest.mark.parametrize(
    ("metrics", "error", "message"),
    [
        ("auc@5", ValueError, "unknown metric 'auc@5'; accepted names: ndcg, ndcg@k"),
        ("ndcg,,map", ValueError, "has an empty name between commas"),
        ("map,10", ValueError, "'10' is a bare cut-off after 'map', which has none"),
        ("ndcg@10,nDCG@10", ValueError, "names the same measure twice: 'ndcg@10' and 'nDCG@10'"),
        ("Rprec@5", ValueError, "rprec takes no cut-off"),
        ("recip_rank@5", ValueError, "recip_rank takes no cut-off"),
        ("map_cut", ValueError, "needs a cut-off, e.g. 'map_cut_10'"),
        ("ndcg@ten", ValueError, "the cut-off must be a positive integer"),
        ("success@0", ValueError, "the cut-off must be a positive integer"),
        ("P(rel=2)@5", ValueError, "parameters in parentheses"),
        ("", ValueError, "unknown metric ''"),
        ([], ValueError, "`metrics` is empty"),
        ([None], TypeError, "metric names must be strings"),
        (5, TypeError, "`metrics` must be a name, a comma-separated string"),
    ],
)  # fmt: skip
def test_name_errors(metrics, error, message):
    with pytest.raises(error, match=re.escape(message)):
        parse_metrics(metrics)


def test_evaluate_and_evaluate_run_share_the_grammar(rng):
    """The same names, in any spelling, give the same numbers from labels and from a run."""
    sizes = rng.integers(2, 25, 120)
    n = int(sizes.sum())
    y = rng.integers(0, 4, n)
    y[rng.random(n) < 0.5] = 0
    s = y + rng.normal(0, 1.5, n)  # continuous: no ties, so the tie rules agree
    names = "nDCG@10,AP,RR,P@5,R@10,Rprec,bpref,Success@3,ERR@10,ndcg_cut_5,map_cut_10,success_1"
    arrays = evaluate(y, s, sizes, metrics=names, conventions="trec_eval", no_relevant="zero")
    run = evaluate_run(labels_to_qrels(y, sizes), scores_to_run(s, sizes), metrics=names)
    assert arrays["metric"].to_list() == names.lower().split(",")
    assert run["metric"].to_list() == names.split(",")
    np.testing.assert_allclose(arrays["mean"].to_numpy(), run["mean"].to_numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="needs qrels and a run"):
        evaluate(y, s, sizes, metrics="Judged@10")


def _random_run(rng, n_queries=300):
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = str(q + 1)  # gdeval reads numeric topics only
        docs = [f"d{i}" for i in range(int(rng.integers(1, 30)))]
        judged = rng.random(len(docs)) < 0.6
        qrels[qid] = {d: int(rng.integers(-1, 5)) for d, j in zip(docs, judged) if j}
        qrels[qid] = qrels[qid] or {docs[0]: 0}
        retrieved = rng.permutation(docs)[: int(rng.integers(1, len(docs) + 1))]
        run[qid] = {d: float(rng.normal()) for d in retrieved}  # untied scores
    return qrels, run


def _ir_measures(measures, qrels, run):
    ir_measures = pytest.importorskip("ir_measures")
    ref: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc([ir_measures.parse_measure(x) for x in measures], qrels, run):
        ref.setdefault(str(m.measure), {})[m.query_id] = m.value
    return ref


def test_judged_matches_ir_measures(rng):
    qrels, run = _random_run(rng)
    theirs = ["Judged@5", "Judged@10", "Judged"]
    ref = _ir_measures(theirs, qrels, run)
    ours = ["Judged@5", "judged@10", "judged"]
    df = evaluate_run(qrels, run, metrics=ours, per_query=True, queries="both")
    for a, b in zip(ours, theirs):
        got = dict(zip(df["query"], df[a]))
        assert set(got) == set(ref[b])
        np.testing.assert_allclose([got[q] for q in ref[b]], list(ref[b].values()), atol=1e-12)
    assert 0 < df["judged@10"].mean() < 1  # some retrieved documents are unjudged


@pytest.mark.skipif(shutil.which("perl") is None, reason="ir_measures' ERR@k runs gdeval.pl")
def test_err_matches_gdeval_through_ir_measures(rng):
    qrels, run = _random_run(rng)
    ref = _ir_measures(["ERR@5", "ERR@20"], qrels, run)
    df = evaluate_run(qrels, run, metrics="ERR@5,ERR@20", per_query=True, max_grade=4)
    for name in ("ERR@5", "ERR@20"):
        got = dict(zip(df["query"], df[name]))
        assert len(ref[name]) > 250
        # gdeval prints 5 decimals
        np.testing.assert_allclose(
            [got[q] for q in ref[name]], list(ref[name].values()), rtol=0, atol=5.1e-6
        )
    # the default max_grade is the largest grade in the qrels (here 4 too)
    default = evaluate_run(qrels, run, metrics="ERR@5")["mean"].item()
    assert default == pytest.approx(df["ERR@5"].mean(), abs=1e-12)
    with pytest.raises(ValueError, match="`max_grade` is 3.0 but the qrels have grades up to 4"):
        evaluate_run(qrels, run, metrics="ERR@5", max_grade=3)


def test_run_measures_average_over_tied_orderings(rng):
    """ties="average" on a run (unjudged documents, negative judgments, missed judged
    documents) is the mean over every order of the tied documents, each order evaluated
    with untied scores."""
    import itertools

    names = ["Rprec", "bpref", "success@2", "Judged@2", "ERR@3", "map", "nDCG@3"]
    qrels, tied, qrels_orders, orders_run, owner = {}, {}, {}, {}, []
    for q in range(60):
        docs = [f"d{i}" for i in range(int(rng.integers(2, 7)))]
        judged = {d: int(rng.integers(-1, 3)) for d in docs if rng.random() < 0.7} or {"d0": 1}
        judged["missed"] = int(rng.integers(0, 3))  # judged, never retrieved
        scores = {d: float(rng.integers(0, 2)) for d in docs}  # heavy ties
        qrels[f"{q}"], tied[f"{q}"] = judged, scores
        levels = sorted(set(scores.values()), reverse=True)
        blocks = [[d for d in docs if scores[d] == v] for v in levels]
        for j, combo in enumerate(itertools.product(*(itertools.permutations(b) for b in blocks))):
            ranked = [d for block in combo for d in block]
            qrels_orders[f"{q}_{j}"] = judged
            orders_run[f"{q}_{j}"] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
            owner.append(f"{q}")
    assert len(orders_run) > 3 * len(tied)  # most queries have ties
    opts = {"metrics": names, "max_grade": 2, "per_query": True}
    got = evaluate_run(qrels, tied, ties="average", **opts)
    each = evaluate_run(qrels_orders, orders_run, **opts)
    owner_of = dict(zip(orders_run, owner))
    want = each.with_columns(pl.col("query").replace_strict(owner_of).alias("query"))
    want = want.group_by("query").agg(pl.col(names).mean())
    want = want.sort(pl.col("query").cast(pl.Int64))
    got = got.sort(pl.col("query").cast(pl.Int64))
    np.testing.assert_allclose(
        got.select(names).to_numpy(), want.select(names).to_numpy(), atol=1e-12
    )
