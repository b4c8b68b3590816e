"""TREC runs and qrels: readers, writers, array converters and trec_eval agreement."""

from __future__ import annotations

import gzip
import importlib
import pickle
import re

import numpy as np
import pytest

from selrank.metrics import (
    Qrels,
    Run,
    evaluate,
    evaluate_run,
    labels_to_qrels,
    read_qrels,
    read_run,
    scores_to_run,
    write_qrels,
    write_run,
)

pl = pytest.importorskip("polars")

# --------------------------------------------------------------------------------------
# Random TREC data covering every case trec_eval has a convention for
# --------------------------------------------------------------------------------------

# Names whose string order differs from their numeric order ("d10" < "d9") and non-ASCII
# names: tied scores are broken by decreasing docno, compared as UTF-8 bytes by trec_eval.
DOC_NAMES = [f"d{j}" for j in range(150)] + ["é1", "éa", "Z", "z", "ä", "doc-α", "ÿ", "a_b"]


def random_trec(rng, n_queries=3000, n_run_only=200):
    """Random qrels and run (nested dicts), and counts of the cases they cover."""
    qrels, run = {}, {}
    keys = ["ties", "float32_ties", "judged_missed", "unjudged", "not_retrieved", "no_relevant"]
    cover = dict.fromkeys(keys, 0)
    names = np.array(DOC_NAMES, dtype=object)
    for q in range(n_queries):
        qid = f"q{q}"
        n_judged = int(rng.integers(1, 16))
        docs = names[rng.choice(names.size, n_judged + 20, replace=False)]
        judged, unjudged = docs[:n_judged], docs[n_judged:]
        # graded 0-4, mostly non-relevant, and a few negative (judged non-relevant) labels
        labels = rng.choice([0, 0, 0, 1, 1, 2, 3, 4, -1], n_judged)
        qrels[qid] = dict(zip(judged.tolist(), labels.tolist()))
        cover["no_relevant"] += int(labels.max() < 1)
        if rng.random() < 0.1:
            cover["not_retrieved"] += 1
            continue
        take = judged[rng.random(n_judged) < 0.7]
        retrieved = np.concatenate([take, unjudged[: int(rng.integers(0, 12))]])
        if retrieved.size == 0:
            retrieved = unjudged[:1]
        cover["judged_missed"] += n_judged - take.size
        cover["unjudged"] += retrieved.size - take.size
        m = retrieved.size
        mode = rng.integers(0, 3)
        if mode == 0:  # continuous
            s = rng.normal(size=m)
        elif mode == 1:  # few distinct values: heavy ties
            s = rng.integers(0, 4, m).astype(float)
        else:  # distinct float64 values that are equal as float32 (trec_eval's C float)
            s = rng.integers(0, 3, m) + rng.integers(0, 3, m) * 1e-12
        n64, n32 = np.unique(s).size, np.unique(s.astype(np.float32)).size
        cover["float32_ties"] += n64 - n32
        cover["ties"] += m - n32
        run[qid] = dict(zip(retrieved.tolist(), s.tolist()))
    for q in range(n_run_only):  # queries the qrels do not know: ignored
        run[f"r{q}"] = {str(d): float(rng.normal()) for d in rng.permutation(names)[:5]}
    return qrels, run, cover


# selrank name (in several styles) -> pytrec_eval key
PAIRS = [
    ("ndcg", "ndcg"),
    ("nDCG@5", "ndcg_cut_5"),
    ("ndcg_cut_10", "ndcg_cut_10"),
    ("map", "map"),
    ("AP@5", "map_cut_5"),
    ("map@100", "map_cut_100"),
    ("recip_rank", "recip_rank"),
    ("P@5", "P_5"),
    ("precision@10", "P_10"),
    ("R@5", "recall_5"),
    ("recall_100", "recall_100"),
    ("set_P", "set_P"),
    ("recall", "set_recall"),
    ("Rprec", "Rprec"),
    ("bpref", "bpref"),
    ("success_1", "success_1"),
    ("Success@5", "success_5"),
    ("hit_rate@10", "success_10"),
]
PYTREC_MEASURES = {
    "ndcg", "ndcg_cut.5,10", "map", "map_cut.5,100", "recip_rank", "P.5,10",
    "recall.5,100", "set_P", "set_recall", "Rprec", "bpref", "success.1,5,10",
}  # fmt: skip


@pytest.fixture(scope="module")
def trec_data():
    """Random qrels and run as nested dicts (what pytrec_eval takes), and the cases covered."""
    return random_trec(np.random.default_rng(20261123))


@pytest.fixture(scope="module")
def trec_objects(trec_data):
    """The same data as Qrels and Run, validated once for the tests that evaluate it often."""
    return Qrels(trec_data[0]), Run(trec_data[1])


def _pytrec(qrels, run, relevance_level=1):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    ev = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=relevance_level)
    return ev.evaluate(run)


@pytest.fixture(scope="module")
def reference(trec_data):
    """pytrec_eval's per-query values on the random data, by relevance level."""
    qrels, run, _ = trec_data
    return {level: _pytrec(qrels, run, level) for level in (1, 2)}


def test_random_data_covers_the_cases(trec_data):
    qrels, run, cover = trec_data
    assert len(qrels) == 3000
    assert cover["ties"] > 3000
    assert cover["float32_ties"] > 500
    assert cover["judged_missed"] > 3000
    assert cover["unjudged"] > 3000
    assert cover["not_retrieved"] > 200
    assert cover["no_relevant"] > 100
    assert sum(q not in qrels for q in run) == 200
    labels = {r for d in qrels.values() for r in d.values()}
    assert labels == {-1, 0, 1, 2, 3, 4}


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_matches_pytrec_eval_per_query(trec_objects, reference, relevance_level):
    qrels, run = trec_objects
    ref = reference[relevance_level]
    names = [a for a, _ in PAIRS] + ["mrr@3"]
    df = evaluate_run(
        qrels, run, metrics=names, relevance_level=relevance_level, queries="both", per_query=True
    )
    qids = df["query"].to_list()
    assert qids == sorted(ref)  # the queries in both, sorted as trec_eval sorts them
    for ours, theirs in PAIRS:
        expected = np.array([ref[q][theirs] for q in qids])
        np.testing.assert_allclose(df[ours].to_numpy(), expected, rtol=0, atol=1e-9, err_msg=ours)
    # trec_eval's recip_rank has no cut-off; RR@3 is RR where the first hit is in the top 3
    rr = np.array([ref[q]["recip_rank"] for q in qids])
    rr3 = np.where((rr > 0) & (np.round(1 / np.where(rr > 0, rr, 1)) <= 3), rr, 0.0)
    np.testing.assert_allclose(df["mrr@3"].to_numpy(), rr3, rtol=0, atol=1e-9)
    assert 0 < np.count_nonzero(rr3) < np.count_nonzero(rr)  # the cut-off mattered


def test_matches_pytrec_eval_means_over_qrels_queries(trec_objects, reference):
    """Default: every query of the qrels, 0 for those without retrieved documents (``-c``)."""
    qrels, run = trec_objects
    ref = reference[1]
    names = [a for a, _ in PAIRS]
    df = evaluate_run(qrels, run, metrics=names)
    assert df["metric"].to_list() == names
    assert df["n_queries"].to_list() == [len(qrels)] * len(names)
    for (_, theirs), mean in zip(PAIRS, df["mean"].to_list()):
        assert mean == pytest.approx(sum(v[theirs] for v in ref.values()) / len(qrels), abs=1e-9)
    per = evaluate_run(qrels, run, metrics=names, per_query=True)
    missing = per.filter(pl.col("n_docs") == 0)
    assert missing.height == len(qrels) - len(ref)
    assert (missing.select(names).to_numpy() == 0).all()
    both = evaluate_run(qrels, run, metrics=names, queries="both")
    for (_, theirs), mean in zip(PAIRS, both["mean"].to_list()):
        assert mean == pytest.approx(np.mean([v[theirs] for v in ref.values()]), abs=1e-9)


def test_other_tie_rules_disagree_with_trec_eval(trec_objects, reference):
    """The agreement above depends on the tie rule: the test can fail."""
    qrels, run = trec_objects
    ref = reference[1]
    df = evaluate_run(qrels, run, metrics=["recip_rank"], queries="both", per_query=True)
    opt = evaluate_run(
        qrels, run, metrics=["recip_rank"], queries="both", per_query=True, ties="optimistic"
    )
    expected = np.array([ref[q]["recip_rank"] for q in df["query"]])
    assert np.abs(opt["recip_rank"].to_numpy() - expected).max() > 0.1
    assert np.abs(df["recip_rank"].to_numpy() - expected).max() < 1e-12


def test_trec_eval_tie_conventions():
    """Ties by decreasing docno; scores equal as float32 tie (trec_eval stores C floats)."""
    qrels = {"q": {"a": 1, "b": 0, "c": 0}}
    cases = [
        ({"a": 1.0, "b": 1.0}, 0.5),  # tie: "b" > "a", so "b" ranks first
        ({"a": 1.0 + 1e-9, "b": 1.0}, 0.5),  # equal as float32: still a tie
        ({"a": 1.0 + 1e-6, "b": 1.0}, 1.0),  # distinct as float32
        ({"a": 1e300, "b": 1e301}, 0.5),  # both overflow to inf as float32
        ({"a": 2.0, "c": 2.0, "b": 2.0}, 1 / 3),
    ]
    for docs, rr in cases:
        got = evaluate_run(qrels, {"q": docs}, metrics="mrr")["mean"].item()
        assert got == pytest.approx(rr, abs=1e-12), docs
        ref = _pytrec(qrels, {"q": docs})
        assert ref["q"]["recip_rank"] == pytest.approx(rr, abs=1e-12), docs
    assert evaluate_run(qrels, {"q": {"a": 1.0, "b": 1.0}}, metrics="mrr", ties="average")[
        "mean"
    ].item() == pytest.approx(0.75)


def test_judged_documents_missing_from_the_run_count():
    qrels = {"q": {"a": 3, "b": 2, "c": 0, "x": -2}}
    run = {"q": {"a": 2.0, "c": 1.0, "x": 3.0, "u": 0.5}}
    per = evaluate_run(qrels, run, metrics=["ndcg", "map", "recall", "P@2"], per_query=True)
    ideal = 3 + 2 / np.log2(3)
    dcg = 3 / np.log2(3)  # "x" (negative: gain 0) first, "a" second
    assert per.row(0)[:3] == ("q", 4, 2)
    assert per.row(0)[3:] == pytest.approx((dcg / ideal, 0.5 / 2, 0.5, 0.5))
    ref = _pytrec(qrels, run)["q"]
    assert per.row(0)[3:] == pytest.approx((ref["ndcg"], ref["map"], ref["set_recall"], 0.5))


def test_mq2008_through_files_matches_pytrec_eval(tmp_path):
    """The docs' example: a packaged LETOR split, one (often tied) feature as the score."""
    from selrank.datasets import load_letor

    try:
        test = load_letor("mq2008", keep_comments=True).test
    except FileNotFoundError:  # pragma: no cover - an installation without the data
        pytest.skip("packaged MQ2008 data not available")
    score = test.X[:, 24]
    qrels = labels_to_qrels(test.y, test.group, qid=test.qid, docno=test.docid)
    run = scores_to_run(score, test.group, qid=test.qid, docno=test.docid, tag="f25")
    write_qrels(qrels, tmp_path / "mq2008.qrels")
    write_run(run, tmp_path / "f25.run.gz")
    qrels, run = read_qrels(tmp_path / "mq2008.qrels"), read_run(tmp_path / "f25.run.gz")
    assert (qrels.n_queries, qrels.n_judged, run.n_docs) == (156, 2874, 2874)
    ref = _pytrec(qrels.to_dict(), run.to_dict())
    df = evaluate_run(qrels, run, metrics=[a for a, _ in PAIRS], per_query=True)
    assert df["query"].to_list() == sorted(ref)
    for ours, theirs in PAIRS:
        expected = [ref[q][theirs] for q in df["query"]]
        np.testing.assert_allclose(df[ours].to_numpy(), expected, rtol=0, atol=1e-9, err_msg=ours)
    # row-order tie breaking (evaluate's "stable") differs on this tied feature
    stable = evaluate(test.y, score, test.group, metrics="map", conventions="trec_eval")
    assert abs(stable["mean"].item() - df["map"].mean()) > 1e-3


# --------------------------------------------------------------------------------------
# Agreement with evaluate() on LETOR-style data (every row judged and retrieved)
# --------------------------------------------------------------------------------------


def _letor(rng, n_queries=300, tied=False):
    sizes = rng.integers(1, 25, n_queries)
    n = int(sizes.sum())
    y = rng.choice([0, 0, 1, 2, 3, 4], n)
    s = rng.integers(0, 4, n).astype(float) if tied else y + rng.normal(0, 1.5, n)
    return y, s, sizes


def _by_index(df):
    """Per-query frame from evaluate_run, rows back in query-index order."""
    return df.with_columns(pl.col("query").cast(pl.Int64)).sort("query")


@pytest.mark.parametrize(
    "opts",
    [
        {"conventions": "trec_eval"},
        {"conventions": "trec_eval", "gain": "exponential"},
        {"conventions": "trec_eval", "ties": "average"},
        {"conventions": "trec_eval", "ties": "pessimistic", "no_relevant": "exclude"},
        {"conventions": "trec_eval", "no_relevant": "one"},
    ],
)
def test_letor_round_trip_matches_evaluate(rng, tmp_path, opts):
    tied = "ties" in opts
    y, s, sizes = _letor(rng, tied=tied)
    assert tied == (np.unique(s).size < 10)
    names = ["ndcg@10", "ndcg", "map", "map@5", "mrr", "precision@5", "recall@5"]
    expected = evaluate(y, s, sizes, metrics=names, per_query=True, **opts)
    run_opts = {k: v for k, v in opts.items() if k != "conventions"}
    qrels, run = labels_to_qrels(y, sizes), scores_to_run(s, sizes)
    write_qrels(qrels, tmp_path / "q.txt")
    write_run(run, tmp_path / "r.txt.gz")
    for q, r in [(qrels, run), (read_qrels(tmp_path / "q.txt"), read_run(tmp_path / "r.txt.gz"))]:
        got = _by_index(evaluate_run(q, r, metrics=names, per_query=True, **run_opts))
        assert got["n_docs"].to_list() == expected["n_docs"].to_list()
        assert got["n_relevant"].to_list() == expected["n_relevant"].to_list()
        for name in names:
            np.testing.assert_allclose(
                got[name].to_numpy(), expected[name].to_numpy(), rtol=0, atol=1e-12, err_msg=name
            )
    summary = evaluate_run(qrels, run, metrics=names, **run_opts)
    reference = evaluate(y, s, sizes, metrics=names, **opts)
    assert summary.columns == reference.columns
    np.testing.assert_allclose(summary["mean"], reference["mean"], atol=1e-12)
    np.testing.assert_allclose(summary["std"], reference["std"], atol=1e-12)
    for col in ["n_queries", "n_no_relevant", "n_excluded"]:
        assert summary[col].to_list() == reference[col].to_list()


# --------------------------------------------------------------------------------------
# Round trips through files
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["run.txt", "run.txt.gz"])
def test_run_round_trip(tmp_path, trec_data, name):
    run_dict = dict(list(trec_data[1].items())[:500])
    run_dict = dict(run_dict, extreme={"a": np.inf, "b": -np.inf, "c": 5e-324, "d": -1.5e308})
    run = Run(run_dict, tag="sys-1")
    path = tmp_path / name
    write_run(run, path)
    back = read_run(path)
    assert back == run
    assert back.tag == "sys-1"
    assert list(back) == list(run)  # query order kept
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    write_run(run, tmp_path / "again.gz" if name.endswith(".gz") else tmp_path / "again")
    again = (tmp_path / ("again.gz" if name.endswith(".gz") else "again")).read_bytes()
    assert again == path.read_bytes()  # reproducible bytes (no gzip timestamp)


def test_write_run_ranks_in_trec_eval_order(tmp_path):
    write_run({"q": {"d9": 1.0, "d10": 1.0, "x": 2.0}}, tmp_path / "r", tag="t")
    lines = (tmp_path / "r").read_text().splitlines()
    assert lines == ["q Q0 x 1 2.0 t", "q Q0 d9 2 1.0 t", "q Q0 d10 3 1.0 t"]


@pytest.mark.parametrize("name", ["qrels.txt", "qrels.gz"])
def test_qrels_round_trip(tmp_path, trec_data, name):
    qrels_dict = dict(list(trec_data[0].items())[:500])
    qrels = Qrels(qrels_dict)
    write_qrels(qrels, tmp_path / name)
    back = read_qrels(tmp_path / name)
    assert back == qrels
    assert back.to_dict() == qrels_dict
    assert list(back) == list(qrels_dict)


def test_gzip_is_recognised_by_its_bytes(tmp_path):
    (tmp_path / "plain.gz").write_text("q1 0 d1 1\n")  # a misnamed plain file
    (tmp_path / "packed.txt").write_bytes(gzip.compress(b"q1 0 d1 1\n"))
    assert read_qrels(tmp_path / "plain.gz") == read_qrels(tmp_path / "packed.txt")


def test_readers_skip_blank_and_comment_lines_and_accept_any_whitespace(tmp_path):
    (tmp_path / "q").write_text("# header\n\nq1\t0  d1 2\r\n   \nq1 0 d2 1.0\n")
    assert read_qrels(tmp_path / "q").to_dict() == {"q1": {"d1": 2, "d2": 1}}
    (tmp_path / "r").write_text("q1 Q0 d1 1 1e3 t\r\n# c\nq1\tQ0 d2 2 -inf t\n")
    assert read_run(tmp_path / "r").to_dict() == {"q1": {"d1": 1000.0, "d2": -np.inf}}
    # the lines of a query need not be adjacent; the tag is the first line's
    (tmp_path / "r").write_text("q1 Q0 a 1 3 x\nq2 Q0 a 1 2 y\nq1 Q0 b 2 1 x")  # no final newline
    back = read_run(tmp_path / "r")
    assert back.to_dict() == {"q1": {"a": 3.0, "b": 1.0}, "q2": {"a": 2.0}}
    assert back.tag == "x"


def test_non_breaking_space_is_not_a_separator(tmp_path):
    (tmp_path / "q").write_bytes("q1 0 d\u00a01 1\n".encode())  # C's isspace: ASCII only
    assert read_qrels(tmp_path / "q").to_dict() == {"q1": {"d\u00a01": 1}}


# --------------------------------------------------------------------------------------
# Reader errors: file, line, what was expected and what came
# --------------------------------------------------------------------------------------

QRELS_ERRORS = [
    (b"q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields 'qid iter docno rel', got 3"),
    (b"q1 0 d1 1 extra\n", 1, "expected 4 fields 'qid iter docno rel', got 5"),
    (b"q1 0 d1 high\n", 1, "the relevance (4th field) must be an integer, got 'high'"),
    (b"q1 0 d1 1.5\n", 1, "must be an integer, got '1.5'"),
    (b"q1 0 d1 1\n# c\nq1 0 d1 0\n", 3,
     "document 'd1' is judged twice for query 'q1' (first on line 1)"),
    (b"q1 0 d\xff1 1\n", 1, "not valid UTF-8 text"),
]  # fmt: skip
RUN_ERRORS = [
    (b"q1 Q0 d1 1 0.5\n", 1, "expected 6 fields 'qid Q0 docno rank score tag', got 5"),
    (b"q1 Q0 d1 1 0.5 t x\n", 1, "expected 6 fields 'qid Q0 docno rank score tag', got 7"),
    (b"q1 Q0 d1 first 0.5 t\n", 1, "the rank (4th field) must be an integer, got 'first'"),
    (b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 high t\n", 2, "the score (5th field) must be a number, "
     "got 'high'"),
    (b"q1 Q0 d1 1 nan t\n", 1, "must be a number, got 'nan'"),
    (b"q1 Q0 d1 1 1 t\nq2 Q0 d1 1 1 t\nq1 Q0 d1 2 0 t\n", 3,
     "document 'd1' is retrieved twice for query 'q1' (first on line 1)"),
    (b"q1 Q0 d1 1 1 \xe9t\n", 1, "not valid UTF-8 text"),
]  # fmt: skip


def _where(path, line):
    return re.escape(f"{path}, line {line}: ")


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(("content", "line", "message"), QRELS_ERRORS)
def test_read_qrels_errors(tmp_path, content, line, message, compress):
    path = tmp_path / "bad.qrels"
    path.write_bytes(gzip.compress(content) if compress else content)
    with pytest.raises(ValueError, match=_where(path, line) + ".*" + re.escape(message)):
        read_qrels(path)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(("content", "line", "message"), RUN_ERRORS)
def test_read_run_errors(tmp_path, content, line, message, compress):
    path = tmp_path / "bad.run"
    path.write_bytes(gzip.compress(content) if compress else content)
    with pytest.raises(ValueError, match=_where(path, line) + ".*" + re.escape(message)):
        read_run(path)


def test_error_shows_the_line(tmp_path):
    (tmp_path / "r").write_text("q1 Q0 d1 1 0.5\n")
    with pytest.raises(ValueError, match=re.escape("the line reads 'q1 Q0 d1 1 0.5'")):
        read_run(tmp_path / "r")


@pytest.mark.parametrize(
    ("reader", "message"),
    [(read_qrels, "holds no judgments"), (read_run, "holds no results")],
)
def test_empty_files(tmp_path, reader, message):
    path = tmp_path / "empty"
    path.write_text("# nothing but a comment\n\n")
    with pytest.raises(ValueError, match=re.escape(f"{path} {message}")):
        reader(path)
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=message):
        reader(path)


@pytest.mark.parametrize("reader", [read_qrels, read_run])
def test_missing_file(tmp_path, reader):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nope"))):
        reader(tmp_path / "nope")


def _damaged(kind: str, line: bytes) -> bytes:
    data = gzip.compress(b"".join(line % (i, i) for i in range(5000)))
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "header-only":
        return data[:12]
    bad = bytearray(data)
    if kind == "crc":
        bad[-6] ^= 0xFF
    else:
        bad[30:60] = b"\x00" * 30
    return bytes(bad)


@pytest.mark.parametrize("kind", ["truncated", "header-only", "crc", "corrupt"])
@pytest.mark.parametrize(
    ("reader", "line"), [(read_qrels, b"q%d 0 d%d 1\n"), (read_run, b"q%d Q0 d%d 1 0.5 t\n")]
)
def test_damaged_gzip(tmp_path, kind, reader, line):
    path = tmp_path / "damaged.gz"
    path.write_bytes(_damaged(kind, line))
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*truncated or corrupt"):
        reader(path)


# --------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------


def test_containers_are_read_only_mappings():
    run = Run({"q1": {"d1": 1, "d2": 0.5}}, tag="x")
    assert repr(run) == "Run(tag='x', n_queries=1, n_docs=2)"
    assert run["q1"]["d1"] == 1.0 and isinstance(run["q1"]["d1"], float)
    with pytest.raises(TypeError):
        run["q1"]["d1"] = 3.0
    with pytest.raises(TypeError):
        run.data["q2"] = {}
    qrels = Qrels({"q1": {"d1": 2, "d2": -1, "d3": 1.0}})
    assert repr(qrels) == "Qrels(n_queries=1, n_judged=3, n_relevant=2)"
    assert qrels.to_dict() == {"q1": {"d1": 2, "d2": -1, "d3": 1}}
    assert Run({"q": {}}) == Run({"q": {}})  # a query that retrieved nothing is allowed
    assert pickle.loads(pickle.dumps(run)) == run
    assert pickle.loads(pickle.dumps(qrels)) == qrels
    assert Run({"q": {"d": 1.0}}, tag="a") != Run({"q": {"d": 1.0}}, tag="b")


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: Run({"q 1": {"d": 1.0}}), ValueError, "no whitespace; got 'q 1'"),
        (lambda: Run({"#q": {"d": 1.0}}), ValueError, "must not start with '#'"),
        (lambda: Run({1: {"d": 1.0}}), TypeError, "a query id must be a str; got int 1"),
        (lambda: Run({"q": {"d": float("nan")}}), ValueError, "score of document 'd' for "
         "query 'q' is NaN"),
        (lambda: Run({"q": {"d": "1"}}), TypeError, "must be a real number; got str '1'"),
        (lambda: Run({"q": [("d", 1.0)]}), TypeError, "must be a mapping docno -> score"),
        (lambda: Run({"q": {"d": 1.0}}, tag="my run"), ValueError, "the run tag must be"),
        (lambda: Run([("q", {})]), TypeError, "Run takes a mapping"),
        (lambda: Qrels({"q": {}}), ValueError, "query 'q' has no judgments"),
        (lambda: Qrels({"q": {"d": 1.5}}), ValueError, "must be an integer; got 1.5"),
        (lambda: Qrels({"q": {"d": np.float64(2.5)}}), ValueError, "must be an integer; got 2.5"),
        (lambda: Qrels({"q": {"d": True}}), TypeError, "must be an int; got bool True"),
        (lambda: Qrels({"q": {"": 1}}), ValueError, "must be non-empty"),
    ],
)  # fmt: skip
def test_container_validation(make, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make()


# --------------------------------------------------------------------------------------
# From arrays
# --------------------------------------------------------------------------------------


def test_scores_to_run_names_queries_and_documents():
    s = np.array([0.5, 0.25, 2.0, 1.0], dtype=np.float32)
    run = scores_to_run(s, [2, 2], qid=[10, 10, 3, 3], docno=["a", "b", "c", "d"], tag="m")
    assert run.to_dict() == {"10": {"a": 0.5, "b": 0.25}, "3": {"c": 2.0, "d": 1.0}}
    assert run.tag == "m"
    # per-row ids, rows of a query apart: grouped, named by the ids, row index as docno
    run = scores_to_run([1.0, 2.0, 3.0], qid=["x", "y", "x"])
    assert run.to_dict() == {"x": {"0": 1.0, "2": 3.0}, "y": {"1": 2.0}}
    assert scores_to_run([1.0, 2.0, 3.0], qid=np.array([7.0, 8.0, 7.0])).to_dict() == {
        "7": {"0": 1.0, "2": 3.0},
        "8": {"1": 2.0},
    }
    assert scores_to_run([1.0, 2.0]).to_dict() == {"0": {"0": 1.0, "1": 2.0}}
    # per-row ids given as `group` are refused (group= are sizes), not silently regrouped
    with pytest.raises(ValueError, match="qid"):
        scores_to_run([1.0, 2.0, 3.0], [5, 6, 5])
    qrels = labels_to_qrels(np.array([2.0, 0.0, 1.0]), qid=["a", "a", "b"], docno=["x", "y", "x"])
    assert qrels.to_dict() == {"a": {"x": 2, "y": 0}, "b": {"x": 1}}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: scores_to_run([1.0, np.nan], [2]), ValueError, "NaN values, first at row 1"),
        (lambda: scores_to_run([1.0, 2.0], [2], qid=[1, 2]), ValueError,
         "`qid` must be constant within each query of `group`"),
        (lambda: scores_to_run([1.0, 2.0, 3.0], [1, 2], qid=[1, 1, 1]), ValueError,
         "`qid` gives the same id to two queries"),
        (lambda: scores_to_run([1.0, 2.0], [2], docno=["a", "a"]), ValueError,
         "`docno` 'a' appears twice in query '0' (rows 0 and 1)"),
        (lambda: scores_to_run([1.0, 2.0], [2], docno=["a b", "c"]), ValueError,
         "entry 0 is 'a b'"),
        (lambda: scores_to_run([1.0, 2.0], qid=["#a", "b"]), ValueError,
         "not start with #; entry 0 is '#a'"),
        (lambda: scores_to_run([1.0, 2.0], [2], docno=["a"]), ValueError,
         "one entry per row (2)"),
        (lambda: scores_to_run([1.0], tag=""), ValueError, "`tag` must be non-empty"),
        (lambda: labels_to_qrels([1.0, 0.5], [2]), ValueError,
         "whole numbers (TREC relevance is an integer); row 1 has 0.5"),
    ],
)  # fmt: skip
def test_array_converter_errors(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


# --------------------------------------------------------------------------------------
# evaluate_run arguments
# --------------------------------------------------------------------------------------

SMALL_QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 0}}
SMALL_RUN = {"q1": {"a": 0.2, "b": 0.9}, "q2": {"c": 1.0}}


def test_metric_name_styles():
    names = ["ndcg_cut.2", "Recip_Rank", "RR@1", "p_1", "P.2", "r@1", "set_recall", "AP"]
    df = evaluate_run(SMALL_QRELS, SMALL_RUN, metrics=names, queries="both")
    assert df["metric"].to_list() == names
    expected = [1 / np.log2(3) / 2, 0.25, 0.0, 0.0, 0.25, 0.0, 0.5, 0.25]
    np.testing.assert_allclose(df["mean"].to_numpy(), expected, atol=1e-12)
    assert df["n_no_relevant"].to_list() == [1] * len(names)
    for same in ["NDCG@2", "ndcg@2", "ndcg_cut_2", " nDCG@2 "]:
        got = evaluate_run(SMALL_QRELS, SMALL_RUN, metrics=same, queries="both")
        assert got["mean"].item() == pytest.approx(expected[0], abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"metrics": "infAP"}, ValueError, "unknown metric 'infAP'; accepted names: ndcg, "),
        ({"metrics": "bpref@10"}, ValueError, "bpref takes no cut-off"),
        ({"metrics": "P(rel=2)@5"}, ValueError, "parameters in parentheses"),
        ({"max_grade": -1}, ValueError, "`max_grade` must be a number >= 0"),
        ({"metrics": "ndcg_cut"}, ValueError, "needs a cut-off, e.g. 'ndcg_cut_10'"),
        ({"metrics": "set_P@5"}, ValueError, "set_p takes no cut-off"),
        ({"metrics": "ndcg@0"}, ValueError, "the cut-off must be a positive integer"),
        ({"metrics": ["P@5", "precision@5"]}, ValueError,
         "names the same measure twice: 'P@5' and 'precision@5'"),
        ({"metrics": []}, ValueError, "`metrics` is empty"),
        ({"metrics": [5]}, TypeError, "metric names must be strings"),
        ({"relevance_level": 0}, ValueError, "`relevance_level` must be an int >= 1; got 0"),
        ({"relevance_level": 1.5}, TypeError, "`relevance_level` must be an int >= 1"),
        ({"ties": "stable"}, ValueError, "`ties` must be one of ['trec_eval', 'average'"),
        ({"gain": "log"}, ValueError, "`gain` must be one of"),
        ({"queries": "run"}, ValueError, "`queries` must be one of ['qrels', 'both']"),
        ({"no_relevant": "nan"}, ValueError, "`no_relevant` must be one of"),
    ],
)  # fmt: skip
def test_evaluate_run_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        evaluate_run(SMALL_QRELS, SMALL_RUN, **kwargs)


def test_no_overlap_with_queries_both():
    with pytest.raises(ValueError, match="no query to evaluate"):
        evaluate_run(SMALL_QRELS, {"zz": {"a": 1.0}}, queries="both")
    # with the default every qrels query counts, and scores 0
    df = evaluate_run(SMALL_QRELS, {"zz": {"a": 1.0}}, metrics=["ndcg", "P@1"])
    assert df["mean"].to_list() == [0.0, 0.0]
    assert df["n_queries"].to_list() == [2, 2]


def test_no_relevant_policies(trec_objects, reference):
    qrels, run = trec_objects
    ref = reference[1]
    names = ["ndcg@10", "map", "P@5"]
    zero = evaluate_run(qrels, run, metrics=names, per_query=True)
    excl = evaluate_run(qrels, run, metrics=names, no_relevant="exclude")
    one = evaluate_run(qrels, run, metrics=names, no_relevant="one", per_query=True)
    no_rel = (zero["n_relevant"] == 0).to_numpy()
    assert excl["n_excluded"].to_list() == [int(no_rel.sum())] * 3
    keep = [q for q in zero.filter(pl.col("n_relevant") > 0)["query"] if q in ref]
    assert 0 < len(keep) < len(ref)
    assert excl["mean"][1] * excl["n_queries"][1] == pytest.approx(
        sum(ref[q]["map"] for q in keep), abs=1e-9
    )
    assert (one.filter(pl.col("n_relevant") == 0)["map"] == 1.0).all()
    assert (one.filter(pl.col("n_relevant") == 0)["P@5"] == 0.0).all()


# --------------------------------------------------------------------------------------
# The fast paths (issue 29): the same results as the line-by-line reader and the full sort
# --------------------------------------------------------------------------------------

trec_module = importlib.import_module("selrank.metrics.trec")


def _slow(monkeypatch):
    """Make the readers take the line-by-line path."""

    def unhandled(*args, **kwargs):
        raise trec_module._Unhandled

    monkeypatch.setattr(trec_module, "_fast_read", unhandled)


def _count_line_reads(monkeypatch):
    calls = []
    real = trec_module._lines

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(trec_module, "_lines", counted)
    return calls


LAYOUTS = {
    # name: (how the single-spaced text is changed, whether the fast path reads it)
    "single spaces": (lambda t: t, True),
    "tabs and runs of spaces": (lambda t: t.replace(b" Q0 ", b"\tQ0  ").replace(b" 0 ", b"\t 0 "),
                                True),
    "CRLF, blank lines, no final newline": (
        lambda t: t.replace(b"\n", b"\r\n\n \n").rstrip(b"\r\n \n"), True),
    "byte-order mark": (lambda t: b"\xef\xbb\xbf" + t, True),
    "comment lines": (lambda t: b"# a header\n" + t.replace(b"\n", b"\n#c\n", 3), False),
}  # fmt: skip


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_fast_readers_match_the_line_reader(tmp_path, monkeypatch, trec_data, layout, compress):
    qrels_dict, run_dict, _ = trec_data
    change, fast = LAYOUTS[layout]
    write_qrels(dict(list(qrels_dict.items())[:400]), tmp_path / "q")
    # lines of a query apart (two passes over the queries), negative and 'inf' scores
    part = {q: dict(list(d.items())[: len(d) // 2]) for q, d in list(run_dict.items())[:400]}
    rest = {q: dict(list(d.items())[len(d) // 2 :]) for q, d in list(run_dict.items())[:400]}
    rest["q1"] = {"inf-doc": np.inf, "neg-inf": -np.inf, **rest.get("q1", {})}
    write_run(part, tmp_path / "r1", tag="t")
    write_run({q: d for q, d in rest.items() if d}, tmp_path / "r2", tag="t")
    texts = {
        "q": (tmp_path / "q").read_bytes().replace(b" 1\n", b" +1\n").replace(b"-1\n", b"-1.0\n"),
        "r": (tmp_path / "r1").read_bytes() + (tmp_path / "r2").read_bytes(),
    }
    for name, text in texts.items():
        text = change(text)
        (tmp_path / name).write_bytes(gzip.compress(text) if compress else text)
    monkeypatch.setattr(trec_module, "_FAST_BLOCK", 4096)  # many blocks, lines cut across them
    calls = _count_line_reads(monkeypatch)
    qrels, run = read_qrels(tmp_path / "q"), read_run(tmp_path / "r")
    assert (not calls) == fast
    assert run["q1"]["inf-doc"] == np.inf
    with monkeypatch.context() as m:
        _slow(m)
        slow_qrels, slow_run = read_qrels(tmp_path / "q"), read_run(tmp_path / "r")
    assert qrels == slow_qrels and list(qrels) == list(slow_qrels)
    assert run == slow_run and list(run) == list(slow_run)
    assert [list(d) for d in run.values()] == [list(d) for d in slow_run.values()]
    assert all(type(v) is float for d in run.values() for v in d.values())
    assert all(type(v) is int for d in qrels.values() for v in d.values())


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(
    ("content", "line", "message"), RUN_ERRORS[:-1]
)  # not the tag: only line 1's is read
def test_run_errors_after_many_good_blocks(tmp_path, monkeypatch, content, line, message, compress):
    """A bad line far into the file: the fast path gives up and the line reader names it."""
    good = b"".join(b"g%d Q0 d%d 1 0.5 t\n" % (i, i) for i in range(3000))
    path = tmp_path / "bad.run"
    data = good + content
    path.write_bytes(gzip.compress(data) if compress else data)
    monkeypatch.setattr(trec_module, "_FAST_BLOCK", 4096)
    message = message.replace("first on line 1", "first on line 3001")
    with pytest.raises(ValueError, match=_where(path, 3000 + line) + ".*" + re.escape(message)):
        read_run(path)


@pytest.mark.parametrize("many_ties", [0.0, 1.0])
def test_both_tie_orderings_match_pytrec_eval(monkeypatch, trec_objects, reference, many_ties):
    """Tied documents ordered by docno one tie at a time, or whole queries sorted by docno."""
    monkeypatch.setattr(trec_module, "_MANY_TIES", many_ties)
    qrels, run = trec_objects
    ref = reference[1]
    names = [a for a, _ in PAIRS]
    df = evaluate_run(qrels, run, metrics=names, queries="both", per_query=True)
    for ours, theirs in PAIRS:
        expected = np.array([ref[q][theirs] for q in df["query"]])
        np.testing.assert_allclose(df[ours].to_numpy(), expected, rtol=0, atol=1e-9, err_msg=ours)


_FUZZ_GOOD = {
    4: [[b"q1", b"q2", b"q\xc3\xa9"], [b"0", b"Q0"], [b"d1", b"d2", b"d3", b"d4", b"d#", b"\xc3\xa9"],
        [b"0", b"1", b"2", b"-1", b"+1", b"1.0"]],
    6: [[b"q1", b"q2", b"q3"], [b"Q0"], [b"d1", b"d2", b"d3", b"d4", b"d5", b"d#"],
        [b"1", b"2", b"-3"], [b"0.5", b"1e3", b"-2.25", b"inf", b".5", b"7"], [b"t", b"u", b"\xc3\xa9"]],
}  # fmt: skip
_FUZZ_BAD = [b"#q", b"nan", b"1.5", b"2e1", b"-Infinity", b"\xff", b"1_0", b"--1", b"+", b"e5",
             b"\x1c", b"\xef\xbb\xbf", b"5.", b"high"]  # fmt: skip
_FUZZ_SEPS = [b" ", b"\t", b"  ", b"\x0b", b"\x0c", b"\r"]


def _fuzz_line(rng, n_fields):
    pools = _FUZZ_GOOD.get(n_fields)
    if pools is None or rng.random() < 0.05:  # a line of the wrong length
        pools = [_FUZZ_BAD + _FUZZ_GOOD[4][2]] * int(rng.choice([0, 3, 5, 7]))
    fields = [
        pool[rng.integers(len(pool))] if rng.random() > 0.03 else _FUZZ_BAD[rng.integers(14)]
        for pool in pools
    ]
    odd = rng.random() < 0.3
    text = b""
    for i, f in enumerate(fields):
        text += (_FUZZ_SEPS[rng.integers(6)] if odd else b" ") * (i > 0) + f
    return (b" " if rng.random() < 0.05 else b"") + text + (b"\r" if rng.random() < 0.05 else b"")


def _outcome(reader, path):
    try:
        got = reader(path)
    except ValueError as exc:
        return str(exc)
    return got, getattr(got, "tag", None), [list(d) for d in got.values()]


def test_fast_and_line_readers_agree_on_random_files(tmp_path, monkeypatch):
    """Random small files, mostly valid, single-spaced or not, some lines damaged: the two
    paths give the same result or the same message, whatever the block size."""
    rng = np.random.default_rng(29)
    fast_taken = 0
    calls = _count_line_reads(monkeypatch)
    for i in range(300):
        n_fields = int(rng.choice([4, 6]))
        lines = [_fuzz_line(rng, n_fields) for _ in range(int(rng.integers(1, 12)))]
        data = (
            b"\xef\xbb\xbf" * (rng.random() < 0.1)
            + b"\n".join(lines)
            + b"\n" * int(rng.integers(3))
        )
        path = tmp_path / f"f{i}"
        path.write_bytes(gzip.compress(data) if rng.random() < 0.3 else data)
        monkeypatch.setattr(trec_module, "_FAST_BLOCK", int(rng.choice([16, 64, 4096])))
        reader = read_qrels if n_fields == 4 else read_run
        calls.clear()
        fast = _outcome(reader, path)
        fast_taken += not calls
        with monkeypatch.context() as m:
            _slow(m)
            assert _outcome(reader, path) == fast, data
    assert fast_taken > 60  # the fast path was exercised, not only the fallback
