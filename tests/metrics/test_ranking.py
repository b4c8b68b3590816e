"""Ranking metrics against slow plain-Python references and independent libraries.

The reference below ranks one query at a time with Python's (stable) ``sorted`` and, for
``ties="average"``, enumerates every ordering of the tied rows, so the averaged metrics are
checked against the exact expectation rather than against our closed forms.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from selrank.metrics import (
    METRICS,
    average_precision,
    bpref,
    dcg,
    err,
    evaluate,
    ndcg,
    parse_metric,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
    success_at_k,
)

# --------------------------------------------------------------------------------------
# Slow reference: one query, one explicit ordering at a time
# --------------------------------------------------------------------------------------


def ref_dcg(lab, k, gain):
    g = [(2.0**x - 1.0) if gain == "exponential" else float(x) for x in lab]
    n = len(g) if k is None else min(k, len(g))
    return sum(g[i] / math.log2(i + 2) for i in range(n))


def ref_ndcg(lab, k, gain):
    ideal = ref_dcg(sorted(lab, reverse=True), k, gain)
    return None if ideal == 0 else ref_dcg(lab, k, gain) / ideal


def ref_ap(lab, k, capped, thr=0.0):
    rel = [x > thr for x in lab]
    R = sum(rel)
    if R == 0:
        return None
    n = len(rel) if k is None else min(k, len(rel))
    hits, total = 0, 0.0
    for i in range(n):
        if rel[i]:
            hits += 1
            total += hits / (i + 1)
    return total / (min(R, k) if (capped and k is not None) else R)


def ref_rr(lab, k, thr=0.0):
    rel = [x > thr for x in lab]
    if not any(rel):
        return None
    n = len(rel) if k is None else min(k, len(rel))
    for i in range(n):
        if rel[i]:
            return 1.0 / (i + 1)
    return 0.0


def ref_err(lab, k, gmax):
    p, total = 1.0, 0.0
    n = len(lab) if k is None else min(k, len(lab))
    for i in range(n):
        r = (2.0 ** lab[i] - 1.0) / 2.0**gmax
        total += p * r / (i + 1)
        p *= 1.0 - r
    return total


def ref_precision(lab, k, capped, thr=0.0):
    rel = [x > thr for x in lab]
    if k is None:
        return sum(rel) / len(rel)
    return sum(rel[:k]) / (min(k, len(rel)) if capped else k)


def ref_recall(lab, k, thr=0.0):
    rel = [x > thr for x in lab]
    R = sum(rel)
    if R == 0:
        return None
    return sum(rel if k is None else rel[:k]) / R


def ref_rprec(lab, thr=0.0):
    rel = [x > thr for x in lab]
    R = sum(rel)
    return None if R == 0 else sum(rel[:R]) / R


def ref_bpref(lab, thr=0.0):
    """trec_eval's m_bpref.c, every row judged."""
    rel = [x > thr for x in lab]
    R, N = sum(rel), len(rel) - sum(rel)
    if R == 0:
        return None
    total, nonrel = 0.0, 0
    for r in rel:
        if not r:
            nonrel += 1
        elif nonrel > 0:
            total += 1.0 - min(nonrel, R) / min(N, R)
        else:
            total += 1.0
    return total / R


def ref_success(lab, k, thr=0.0):
    rel = [x > thr for x in lab]
    return float(any(rel if k is None else rel[:k]))


def orderings(lab, sc, ties):
    """Label sequences of the rankings a tie policy stands for (all of them for 'average')."""
    idx = range(len(lab))
    if ties == "stable":
        return [[lab[i] for i in sorted(idx, key=lambda i: -sc[i])]]
    if ties == "pessimistic":
        return [[lab[i] for i in sorted(idx, key=lambda i: (-sc[i], lab[i]))]]
    if ties == "optimistic":
        return [[lab[i] for i in sorted(idx, key=lambda i: (-sc[i], -lab[i]))]]
    blocks = [[lab[i] for i in idx if sc[i] == v] for v in sorted(set(sc), reverse=True)]
    return [
        [x for block in combo for x in block]
        for combo in itertools.product(*(set(itertools.permutations(b)) for b in blocks))
    ]


def ref_metric(name, lab, sc, ties, k, **kw):
    """Mean over the orderings of the reference metric (None when 0/0)."""
    vals = []
    for order in orderings(lab, sc, ties):
        if name == "ndcg":
            v = ref_ndcg(order, k, kw.get("gain", "exponential"))
        elif name == "dcg":
            v = ref_dcg(order, k, kw.get("gain", "exponential"))
        elif name == "map":
            v = ref_ap(order, k, kw.get("capped", False))
        elif name == "mrr":
            v = ref_rr(order, k)
        elif name == "err":
            v = ref_err(order, k, kw["gmax"])
        elif name == "precision":
            v = ref_precision(order, k, kw.get("capped", False))
        elif name == "rprec":
            v = ref_rprec(order)
        elif name == "bpref":
            v = ref_bpref(order)
        elif name == "success":
            v = ref_success(order, k)
        else:
            v = ref_recall(order, k)
        if v is None:
            return None
        vals.append(v)
    return float(np.mean(vals))


# --------------------------------------------------------------------------------------
# Random data
# --------------------------------------------------------------------------------------


def random_queries(rng, n_queries, max_size, n_score_levels=None, max_label=3):
    """Queries with ties, single-row queries and all-zero queries, as flat arrays."""
    sizes = rng.integers(1, max_size + 1, n_queries)
    sizes[: n_queries // 10] = 1
    n = int(sizes.sum())
    y = rng.integers(0, max_label + 1, n).astype(float)
    y[rng.random(n) < 0.4] = 0.0
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    zero_q = rng.random(n_queries) < 0.15
    for s, m in zip(starts[zero_q], sizes[zero_q]):
        y[s : s + m] = 0.0
    if n_score_levels is None:
        s = rng.normal(size=n)
    else:
        s = rng.integers(0, n_score_levels, n).astype(float)
    perm = rng.permutation(n_queries)
    return y, s, sizes, perm


def split(y, s, sizes):
    offs = np.concatenate([[0], np.cumsum(sizes)])
    return [(list(y[a:b]), list(s[a:b])) for a, b in zip(offs[:-1], offs[1:])]


@pytest.fixture
def tied_queries(rng):
    y, s, sizes, _ = random_queries(rng, 700, 6, n_score_levels=3)
    # coverage of what the fixture is meant to exercise
    assert (sizes == 1).sum() > 20
    parts = split(y, s, sizes)
    assert sum(max(q[0]) == 0 for q in parts) > 50
    assert sum(len(set(q[1])) < len(q[1]) for q in parts) > 200
    assert (
        sum(len(set(q[0][i] for i in range(len(q[0])) if q[1][i] == q[1][0])) > 1 for q in parts)
        > 50
    )  # tie blocks mixing labels
    return y, s, sizes


FUNCS = {
    "ndcg": ndcg, "dcg": dcg, "map": average_precision, "mrr": reciprocal_rank,
    "err": err, "precision": precision_at_k, "recall": recall_at_k,
    "rprec": lambda *a, k=None, **kw: r_precision(*a, **kw),
    "bpref": lambda *a, k=None, **kw: bpref(*a, **kw),
    "success": success_at_k,
}  # fmt: skip
NO_CUTOFF = ("rprec", "bpref")


def test_function_table_covers_registry():
    assert set(FUNCS) == set(METRICS)


@pytest.mark.parametrize("ties", ["average", "stable", "pessimistic", "optimistic"])
@pytest.mark.parametrize(
    ("name", "k"),
    [(n, k) for n in sorted(METRICS) for k in ([None] if n in NO_CUTOFF else [None, 1, 3])],
)
def test_matches_reference_with_ties(tied_queries, name, k, ties):
    y, s, sizes = tied_queries
    kw = {}
    if name == "err":
        kw["gmax"] = y.max()
    policy = "one" if METRICS[name].normalised else "zero"
    got = FUNCS[name](y, s, sizes, k=k, ties=ties, no_relevant=policy, reduction="none")
    want = [ref_metric(name, lab, sc, ties, k, **kw) for lab, sc in split(y, s, sizes)]
    want = np.array([1.0 if v is None else v for v in want])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ties", ["average", "stable"])
def test_options_match_reference(tied_queries, ties):
    y, s, sizes = tied_queries
    parts = split(y, s, sizes)
    for k in (2, None):
        got = ndcg(y, s, sizes, k=k, gain="linear", ties=ties, no_relevant="zero", reduction="none")
        want = [ref_metric("ndcg", a, b, ties, k, gain="linear") or 0.0 for a, b in parts]
        np.testing.assert_allclose(got, want, rtol=1e-10)
        got = average_precision(y, s, sizes, k=k, capped=True, ties=ties, reduction="none")
        want = [ref_metric("map", a, b, ties, k, capped=True) for a, b in parts]
        np.testing.assert_allclose(got, [1.0 if v is None else v for v in want], rtol=1e-10)
        got = precision_at_k(y, s, sizes, k=k, capped=True, ties=ties, reduction="none")
        want = [ref_metric("precision", a, b, ties, k, capped=True) for a, b in parts]
        np.testing.assert_allclose(got, want, rtol=1e-10)
    got = err(y, s, sizes, k=3, max_grade=5, ties=ties, reduction="none")
    want = [ref_metric("err", a, b, ties, 3, gmax=5) for a, b in parts]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_relevance_threshold(rng):
    y, s, sizes, _ = random_queries(rng, 300, 6, n_score_levels=4)
    parts = split(y, s, sizes)
    got = average_precision(
        y, s, sizes, relevance_threshold=1.5, ties="stable", no_relevant="zero", reduction="none"
    )
    want = [
        ref_metric("map", [float(x > 1.5) for x in a], b, "stable", None) or 0.0 for a, b in parts
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.count_nonzero(got) > 20


def test_average_ties_on_large_blocks(rng):
    """A query scored by a constant: averaged metrics equal their expectation in closed form."""
    y = rng.integers(0, 3, 40).astype(float)
    s = np.zeros(40)
    R = int((y > 0).sum())
    # a relevant row lands in the top k with probability k/n, in either function
    assert precision_at_k(y, s, k=10) == pytest.approx(R / 40)
    assert recall_at_k(y, s, k=10) == pytest.approx(10 / 40)
    # E[1/rank of first relevant] by the stars-and-bars distribution of the first hit
    p_first = [math.comb(40 - j - 1, R - 1) / math.comb(40, R) for j in range(40)]
    assert reciprocal_rank(y, s) == pytest.approx(sum(p / (j + 1) for j, p in enumerate(p_first)))
    # random-order AP: E[AP] = (1/R) Σ_i P(rel at i) E[prec@i | rel at i]
    e_ap = sum((R / 40) * (1 + (i - 1) * (R - 1) / 39) / i for i in range(1, 41)) / R
    assert average_precision(y, s) == pytest.approx(e_ap)
    # ERR of a shuffled list by simulation, loose tolerance
    sims = []
    gmax = y.max()
    for _ in range(4000):
        sims.append(ref_err(list(rng.permutation(y)), 5, gmax))
    assert err(y, s, k=5) == pytest.approx(np.mean(sims), abs=4 * np.std(sims) / 60)


def test_average_ties_invariant_to_row_order(rng):
    y, s, sizes, _ = random_queries(rng, 400, 12, n_score_levels=3)
    qid = np.repeat(np.arange(sizes.size), sizes)
    p = rng.permutation(y.size)
    for name, f in FUNCS.items():
        a = f(y, s, qid=qid, k=5, reduction="none", no_relevant="zero")
        b = f(y[p], s[p], qid=qid[p], k=5, reduction="none", no_relevant="zero")
        # ids in a new order number the queries by first appearance
        order = np.unique(qid[p], return_index=True)[1]
        first = qid[p][np.sort(order)]
        np.testing.assert_allclose(b, a[first], rtol=1e-10, err_msg=name)


def test_tie_policies_are_ordered(rng):
    y, s, sizes, _ = random_queries(rng, 500, 10, n_score_levels=2)
    for name, f in FUNCS.items():
        lo = f(y, s, sizes, k=5, ties="pessimistic", reduction="none", no_relevant="zero")
        mid = f(y, s, sizes, k=5, ties="average", reduction="none", no_relevant="zero")
        hi = f(y, s, sizes, k=5, ties="optimistic", reduction="none", no_relevant="zero")
        assert np.all(lo <= mid + 1e-12) and np.all(mid <= hi + 1e-12), name
        assert np.any(lo < hi - 1e-6), name


# --------------------------------------------------------------------------------------
# Independent implementations
# --------------------------------------------------------------------------------------


def padded(y, s, sizes):
    """Pad queries to one width with label 0 and a score below all others (no effect)."""
    width = int(sizes.max())
    Y = np.zeros((sizes.size, width))
    S = np.full((sizes.size, width), s.min() - 1.0)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    for q, (a, b) in enumerate(zip(offs[:-1], offs[1:])):
        Y[q, : b - a] = y[a:b]
        S[q, : b - a] = s[a:b]
    return Y, S


@pytest.mark.parametrize("k", [None, 1, 5, 10])
def test_ndcg_matches_sklearn(rng, k):
    metrics_mod = pytest.importorskip("sklearn.metrics")
    y, s, sizes, _ = random_queries(rng, 3000, 30, n_score_levels=6, max_label=4)
    assert (sizes == 1).sum() > 100
    Y, S = padded(y, s, sizes)
    # sklearn: linear gain, ties averaged, all-zero queries score 0; each row of Y is a query
    want = np.array(
        [metrics_mod.ndcg_score(Y[i : i + 1], S[i : i + 1], k=k) for i in range(0, 300)]
    )
    got = ndcg(
        y, s, sizes, k=k, gain="linear", ties="average", no_relevant="zero", reduction="none"
    )
    np.testing.assert_allclose(got[:300], want, rtol=1e-10, atol=1e-12)
    # the full set at once, as sklearn's mean; exponential gain via pre-transformed labels
    assert ndcg(y, s, sizes, k=k, gain="linear", no_relevant="zero") == pytest.approx(
        metrics_mod.ndcg_score(Y, S, k=k), rel=1e-10
    )
    assert ndcg(y, s, sizes, k=k, gain="exponential", no_relevant="zero") == pytest.approx(
        metrics_mod.ndcg_score(2.0**Y - 1.0, S, k=k), rel=1e-10
    )


def _trec_inputs(y, s, sizes):
    qrel, run = {}, {}
    offs = np.concatenate([[0], np.cumsum(sizes)])
    for q, (a, b) in enumerate(zip(offs[:-1], offs[1:])):
        qrel[f"q{q}"] = {f"d{i}": int(y[i]) for i in range(a, b)}
        run[f"q{q}"] = {f"d{i}": float(s[i]) for i in range(a, b)}
    return qrel, run


def test_matches_trec_eval(rng):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    y, s, sizes, _ = random_queries(rng, 2000, 25)  # continuous scores: no ties
    qrel, run = _trec_inputs(y, s, sizes)
    measures = {"ndcg", "ndcg_cut.5,10", "map", "map_cut.5", "recip_rank", "P.5,10", "recall.5"}
    res = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
    col = lambda m: np.array([res[f"q{q}"][m] for q in range(sizes.size)])  # noqa: E731
    common = {"no_relevant": "zero", "reduction": "none"}
    lin = dict(common, gain="linear")
    np.testing.assert_allclose(ndcg(y, s, sizes, **lin), col("ndcg"), rtol=1e-9)
    np.testing.assert_allclose(ndcg(y, s, sizes, k=10, **lin), col("ndcg_cut_10"), rtol=1e-9)
    np.testing.assert_allclose(ndcg(y, s, sizes, k=5, **lin), col("ndcg_cut_5"), rtol=1e-9)
    np.testing.assert_allclose(average_precision(y, s, sizes, **common), col("map"), rtol=1e-9)
    np.testing.assert_allclose(
        average_precision(y, s, sizes, k=5, **common), col("map_cut_5"), rtol=1e-9
    )
    np.testing.assert_allclose(reciprocal_rank(y, s, sizes, **common), col("recip_rank"), rtol=1e-9)
    np.testing.assert_allclose(precision_at_k(y, s, sizes, k=5, **common), col("P_5"), rtol=1e-9)
    np.testing.assert_allclose(precision_at_k(y, s, sizes, k=10, **common), col("P_10"), rtol=1e-9)
    np.testing.assert_allclose(recall_at_k(y, s, sizes, k=5, **common), col("recall_5"), rtol=1e-9)


def test_matches_ranx(rng):
    ranx = pytest.importorskip("ranx")
    # continuous scores: ranx orders tied scores with an unstable sort (unspecified order)
    y, s, sizes, _ = random_queries(rng, 1500, 20)
    qrel, run = _trec_inputs(y, s, sizes)
    Q, R = ranx.Qrels(qrel), ranx.Run(run)
    names = ["ndcg@10", "ndcg_burges@10", "map@5", "mrr@10", "precision@5", "recall@5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(Q, R, names, return_mean=False)
    col = lambda m: np.array([R.scores[m][f"q{q}"] for q in range(sizes.size)])  # noqa: E731
    common = {"no_relevant": "zero", "reduction": "none", "ties": "stable"}
    np.testing.assert_allclose(
        ndcg(y, s, sizes, k=10, gain="linear", **common), col("ndcg@10"), rtol=1e-9
    )
    np.testing.assert_allclose(
        ndcg(y, s, sizes, k=10, gain="exponential", **common), col("ndcg_burges@10"), rtol=1e-9
    )
    np.testing.assert_allclose(
        average_precision(y, s, sizes, k=5, **common), col("map@5"), rtol=1e-9
    )
    np.testing.assert_allclose(
        reciprocal_rank(y, s, sizes, k=10, **common), col("mrr@10"), rtol=1e-9
    )
    np.testing.assert_allclose(
        precision_at_k(y, s, sizes, k=5, **common), col("precision@5"), rtol=1e-9
    )
    np.testing.assert_allclose(recall_at_k(y, s, sizes, k=5, **common), col("recall@5"), rtol=1e-9)


def _ranking_data(rng, n_queries=120, size=20, n_features=6):
    sizes = rng.integers(1, size + 1, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    latent = X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.7, n)
    y = np.digitize(latent, [0.0, 1.0, 2.0]).astype(float)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for a, m in zip(starts[::9], sizes[::9]):  # some queries without relevant rows
        y[a : a + m] = 0.0
    return X, y, sizes


def test_reproduces_lightgbm_eval(rng):
    lgb = pytest.importorskip("lightgbm")
    X, y, sizes = _ranking_data(rng)
    Xv, yv, sv = _ranking_data(rng, n_queries=60)
    ds = lgb.Dataset(X, y, group=sizes)
    dv = lgb.Dataset(Xv, yv, group=sv, reference=ds)
    record: dict = {}
    params = {
        "objective": "lambdarank",
        "metric": ["ndcg", "map"],
        "eval_at": [1, 3, 10],
        "num_leaves": 7,
        "min_data_in_leaf": 5,
        "verbose": -1,
        "num_threads": 1,
        "learning_rate": 0.1,
        "seed": 1,
    }
    bst = lgb.train(
        params,
        ds,
        num_boost_round=15,
        valid_sets=[ds, dv],
        valid_names=["train", "valid"],
        callbacks=[lgb.record_evaluation(record)],
    )
    for name, (Xs, ys, ss) in {"train": (X, y, sizes), "valid": (Xv, yv, sv)}.items():
        pred = bst.predict(Xs, raw_score=True)
        assert np.unique(pred).size < pred.size  # tree scores tie: the tie policy matters
        for k in (1, 3, 10):
            got = evaluate(ys, pred, ss, metrics=[f"ndcg@{k}", f"map@{k}"], conventions="lightgbm")[
                "mean"
            ].to_list()
            assert got[0] == pytest.approx(record[name][f"ndcg@{k}"][-1], abs=1e-9)
            binary = evaluate(
                (ys > 0).astype(float), pred, ss, metrics=[f"map@{k}"], conventions="lightgbm"
            )["mean"][0]
            assert binary == got[1]
            assert got[1] == pytest.approx(record[name][f"map@{k}"][-1], abs=1e-9)


def test_reproduces_xgboost_eval(rng):
    xgb = pytest.importorskip("xgboost")
    X, y, sizes = _ranking_data(rng)
    qid = np.repeat(np.arange(sizes.size), sizes)
    yb = (y > 1).astype(float)
    d = xgb.DMatrix(X, yb, qid=qid)
    names = ["ndcg@3", "ndcg@10", "map@5", "pre@5", "ndcg@5-"]
    bst = xgb.train(
        {"objective": "rank:ndcg", "eval_metric": names, "max_depth": 3, "nthread": 1, "seed": 1},
        d,
        10,
    )
    text = bst.eval(d, "t")
    want = {kv.split(":")[0][2:]: float(kv.split(":")[1]) for kv in text.split("\t")[1:]}
    pred = bst.predict(d, output_margin=True)
    assert pred.dtype == np.float32 and np.unique(pred).size < pred.size
    got = evaluate(
        yb,
        pred,
        sizes,
        metrics=["ndcg@3", "ndcg@10", "map@5", "precision@5"],
        conventions="xgboost",
    )["mean"].to_list()
    assert got == pytest.approx(
        [want["ndcg@3"], want["ndcg@10"], want["map@5"], want["pre@5"]], abs=1e-6
    )
    zero = ndcg(yb, pred, qid=qid, k=5, ties="stable", no_relevant="zero")
    assert zero == pytest.approx(want["ndcg@5-"], abs=1e-6)


# --------------------------------------------------------------------------------------
# Policies, reductions, inputs
# --------------------------------------------------------------------------------------


def test_no_relevant_policies_and_reductions():
    y = [2, 0, 1, 0, 0, 1]
    s = [0.1, 0.9, 0.5, 0.4, 0.3, 0.2]
    g = [3, 2, 1]
    one = ndcg(y, s, g, reduction="none")
    assert one[1] == 1.0 and 0 < one[0] < 1 and one[2] == 1.0
    zero = ndcg(y, s, g, no_relevant="zero", reduction="none")
    assert zero[1] == 0.0
    ex = ndcg(y, s, g, no_relevant="exclude", reduction="none")
    assert np.isnan(ex[1]) and ex[0] == one[0]
    assert ndcg(y, s, g, no_relevant="exclude") == pytest.approx((one[0] + 1.0) / 2)
    assert ndcg(y, s, g, no_relevant="exclude", reduction="sum") == pytest.approx(one[0] + 1)
    assert ndcg(y, s, g) == pytest.approx(one.mean())
    assert dcg(y, s, g, no_relevant="exclude", reduction="none")[1] != 0  # NaN
    with pytest.raises(ValueError, match="'zero' or 'exclude'"):
        dcg(y, s, g, no_relevant="one")
    with pytest.warns(UserWarning, match="excluded"):
        assert np.isnan(ndcg([0, 0], [1.0, 2.0], no_relevant="exclude"))


def test_single_row_queries():
    y = np.array([1.0, 0.0, 3.0])
    s = np.array([0.2, 0.1, 0.5])
    g = np.arange(3)  # three singleton queries given by ids
    assert ndcg(y, s, qid=g, reduction="none").tolist() == [1.0, 1.0, 1.0]
    assert reciprocal_rank(y, s, qid=g, no_relevant="zero", reduction="none").tolist() == [1, 0, 1]
    assert precision_at_k(y, s, qid=g, k=3, reduction="none").tolist() == [1 / 3, 0, 1 / 3]
    # the same queries as sizes: [1] * n is n one-row queries, never one query of n rows
    assert ndcg(y, s, np.ones(3), reduction="none").tolist() == [1.0, 1.0, 1.0]


def test_group_is_sizes_and_qid_is_ids_never_guessed(rng):
    """Issue 11: ndcg(y, s, np.ones(n)) gave 0.814 (one query) and np.arange(n) 1.0."""
    n = 50
    y = rng.integers(0, 4, n).astype(float)
    s = rng.normal(size=n)
    assert ndcg(y, s, np.ones(n)) == ndcg(y, s, qid=np.arange(n)) == 1.0
    assert ndcg(y, s) < 0.95  # one query of n rows: not what n one-row queries give
    with pytest.raises(ValueError, match="one value per row: for per-row query ids pass qid="):
        ndcg(y, s, np.arange(n))  # ids under `group` are refused, not guessed
    with pytest.raises(ValueError, match="not both"):
        ndcg(y, s, np.ones(n), qid=np.arange(n))
    with pytest.raises(
        ValueError, match="one query id per row, 50 values; got 2; for query sizes pass group="
    ):
        ndcg(y, s, qid=[25, 25])


def test_inputs_torch_polars_float32_and_frames(rng):
    y, s, sizes, _ = random_queries(rng, 200, 8, n_score_levels=4)
    qid = np.repeat(np.arange(sizes.size) * 7 + 3, sizes)
    want = ndcg(y, s, qid=qid, k=5, reduction="none")
    torch = pytest.importorskip("torch")
    got = ndcg(
        torch.tensor(y),
        torch.tensor(s, dtype=torch.float32),
        qid=torch.tensor(qid),
        k=5,
        reduction="none",
    )
    np.testing.assert_allclose(got, want, rtol=1e-12)  # integer scores are exact in float32
    assert np.allclose(ndcg(y, s.astype(np.float32), sizes, k=5, reduction="none"), want)
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"label": y, "score": s, "qid": qid})
    np.testing.assert_allclose(
        ndcg("label", "score", qid="qid", k=5, data=df, reduction="none"), want
    )
    np.testing.assert_allclose(
        ndcg(df["label"], df["score"], qid=df["qid"], k=5, reduction="none"), want
    )
    # float32 ties are decided in float32: two values equal only after rounding tie
    a = np.float32(0.1) + np.float32(1e-9)
    assert ndcg([1, 0], np.array([0.1, a], dtype=np.float32)) == pytest.approx(
        ndcg([1, 0], [0.5, 0.5])
    )


def test_unordered_query_ids_equal_grouped(rng):
    y, s, sizes, _ = random_queries(rng, 300, 8)
    qid = np.repeat(np.arange(sizes.size), sizes)
    p = rng.permutation(y.size)
    for f in FUNCS.values():
        assert f(y[p], s[p], qid=qid[p], k=4, ties="average") == pytest.approx(
            f(y, s, qid=qid, k=4, ties="average"), rel=1e-12
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y_true": [1, 0], "y_score": [0.1, 0.2, 0.3]}, "same shape"),
        ({"y_true": [1, 0], "y_score": [0.1, np.nan]}, "NaN"),
        ({"y_true": [1, np.inf], "y_score": [0.1, 0.2]}, "finite"),
        ({"y_true": [1, -1], "y_score": [0.1, 0.2]}, ">= 0"),
        ({"y_true": [1, 0], "y_score": [0.1, 0.2], "k": 0}, "positive"),
        ({"y_true": [1, 0], "y_score": [0.1, 0.2], "ties": "random"}, "ties"),
        ({"y_true": [1, 0], "y_score": [0.1, 0.2], "gain": "log"}, "gain"),
        ({"y_true": [1, 0], "y_score": [0.1, 0.2], "no_relevant": "skip"}, "no_relevant"),
        ({"y_true": [1, 0], "y_score": [0.1, 0.2], "reduction": "max"}, "reduction"),
        ({"y_true": [1, 0], "y_score": [0.1, 0.2], "group": [1, 2, 3]}, "add up"),
        ({"y_true": [], "y_score": []}, "empty"),
        ({"y_true": [[1, 0]], "y_score": [[0.1, 0.2]]}, "1-D"),
        ({"y_true": [2000, 0], "y_score": [0.1, 0.2]}, "overflows"),
    ],
)
def test_bad_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ndcg(**kwargs)


def test_bad_types_raise():
    with pytest.raises(TypeError, match="k"):
        ndcg([1, 0], [0.1, 0.2], k=2.5)
    with pytest.raises(TypeError, match="k"):
        ndcg([1, 0], [0.1, 0.2], k=True)
    with pytest.raises(TypeError, match="numeric"):
        ndcg(["a", "b"], [0.1, 0.2])
    with pytest.raises(TypeError, match="data"):
        ndcg("label", "score")
    pl = pytest.importorskip("polars")
    with pytest.raises(ValueError, match="columns"):
        ndcg("label", "nope", data=pl.DataFrame({"label": [1], "score": [0.5]}))


def test_negative_labels_allowed_where_meaningful():
    assert dcg([-1, 2], [0.5, 0.1], gain="linear") == pytest.approx(-1 + 2 / math.log2(3))
    assert average_precision([-1, 1], [0.5, 0.1]) == 0.5
    with pytest.raises(ValueError, match=">= 0"):
        err([-1, 2], [0.5, 0.1])
    with pytest.raises(ValueError, match=">= 0"):
        dcg([-1, 2], [0.5, 0.1])
    with pytest.raises(ValueError, match="max_grade"):
        err([3, 1], [0.5, 0.1], max_grade=2)


# --------------------------------------------------------------------------------------
# evaluate / compare
# --------------------------------------------------------------------------------------


def test_parse_metric():
    assert parse_metric("NDCG@5") == ("ndcg", 5)
    assert parse_metric("recall") == ("recall", None)
    assert parse_metric("ndcg_cut_10") == ("ndcg", 10)
    assert parse_metric("Success@5") == ("success", 5)
    with pytest.raises(ValueError, match=r"unknown metric 'auc@5'; accepted names: ndcg, "):
        parse_metric("auc@5")
    for bad in ("ndcg@0", "ndcg@x", "ndcg@-1"):
        with pytest.raises(ValueError, match="positive integer"):
            parse_metric(bad)


def test_err_tie_kernels_agree(rng):
    """The two ways of averaging ERR over tied blocks (row by row, label by label) agree."""
    from selrank.metrics.ranking import _tied_err, _tied_err_by_level

    sizes = rng.integers(2, 300, 40)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    label = rng.integers(0, 5, int(sizes.sum())).astype(float)
    keep = 1.0 - (2.0**label - 1.0) / 2.0**4
    pos = rng.integers(0, 8, 40)
    for k in (1, 5, 12):
        m_in = np.clip(k - pos, 1, sizes)
        rows = _tied_err(keep, starts, sizes, pos, m_in)
        levels = _tied_err_by_level(label, keep, starts, sizes, pos, m_in)
        np.testing.assert_allclose(levels, rows, rtol=1e-9)
    # a long constant-score query takes the label-by-label path inside err()
    y = rng.integers(0, 5, 5000).astype(float)
    got = err(y, np.zeros(5000), k=5)
    want = _tied_err(
        1.0 - (2.0**y - 1.0) / 2.0**4, np.array([0]), np.array([5000]), np.array([0]), np.array([5])
    )[0]
    assert got == pytest.approx(want, rel=1e-9)
