"""Issue 30's edges of TREC evaluation: a byte-order mark in every reader, ranx's objects, the
arguments of evaluate_run swapped, and a run that shares nothing with its qrels."""

from __future__ import annotations

import gzip
import warnings

import pytest

from selrank.metrics import (
    Qrels,
    Run,
    compare,
    evaluate_run,
    read_qrels,
    read_run,
    trec_report,
)

pl = pytest.importorskip("polars")

BOM = "\ufeff"
QRELS = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d4 1\nq2 0 d5 0\n"
RUN = (
    "q1 Q0 d2 1 0.9 sys\nq1 Q0 d1 2 0.8 sys\nq1 Q0 d3 3 0.1 sys\n"
    "q2 Q0 d4 1 0.6 sys\nq2 Q0 d5 2 0.4 sys\n"
)


def _write(path, text, gz=False):
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_a_byte_order_mark_is_dropped_by_every_reader(tmp_path, gz):
    plain_q = read_qrels(_write(tmp_path / "plain.qrels", QRELS, gz))
    plain_r = read_run(_write(tmp_path / "plain.run", RUN, gz))
    bom_q = read_qrels(_write(tmp_path / "bom.qrels", BOM + QRELS, gz))
    bom_r = read_run(_write(tmp_path / "bom.run", BOM + RUN, gz))
    assert bom_q == plain_q and sorted(bom_q) == ["q1", "q2"]  # no query named '\ufeffq1'
    assert bom_r == plain_r
    # a mark before a comment or a blank first line is dropped too
    assert read_qrels(_write(tmp_path / "c.qrels", BOM + "# judged\n" + QRELS, gz)) == plain_q
    assert read_run(_write(tmp_path / "b.run", BOM + "\n" + RUN, gz)) == plain_r
    want = evaluate_run(plain_q, plain_r, metrics="ndcg,map")["mean"].to_list()
    got = evaluate_run(tmp_path / "bom.qrels", tmp_path / "bom.run", metrics="ndcg,map")
    assert got["mean"].to_list() == want and got["n_queries"].to_list() == [2, 2]
    # the command line reads the same files
    text = trec_report(str(tmp_path / "bom.qrels"), str(tmp_path / "bom.run"), metrics="ndcg")
    assert f"{want[0]:.4f}" in text


def test_only_a_mark_at_the_start_of_a_file_is_dropped(tmp_path):
    path = _write(tmp_path / "x.qrels", QRELS + BOM + "q3 0 d9 1\n")
    assert "\ufeffq3" in read_qrels(path)  # only the start of a file may carry a mark


def test_evaluate_run_names_the_swap(tmp_path):
    qrels, run = Qrels({"q1": {"a": 1, "b": 0}}), Run({"q1": {"a": 2.0, "b": 1.0}})
    with pytest.raises(TypeError, match="arguments are swapped"):
        evaluate_run(run, qrels)
    # integral scores: as plain dicts the order cannot be told, as objects or files it can
    with pytest.raises(TypeError, match="arguments are swapped"):
        evaluate_run(run.to_dict(), qrels)
    q = _write(tmp_path / "a.qrels", QRELS)
    r = _write(tmp_path / "a.run", RUN.replace("0.9", "3").replace("0.8", "2"))
    with pytest.raises(TypeError, match="arguments are swapped"):
        evaluate_run(r, q)
    with pytest.raises(TypeError, match="arguments are swapped"):
        evaluate_run({"q1": {"a": 0.7, "b": 0.2}}, {"q1": {"a": 1, "b": 0}})
    assert evaluate_run(q, r, metrics="P@1")["mean"].item() == 0.5  # the right order works


def test_a_run_sharing_nothing_with_its_qrels_warns():
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1}}
    with pytest.warns(UserWarning, match=r"shares no query with the qrels: 1 queries in the run"):
        evaluate_run(qrels, {"301": {"a": 1.0}})
    with pytest.warns(UserWarning, match=r"shares no document with the qrels: 2 documents"):
        evaluate_run(qrels, {"q1": {"A": 1.0, "B": 0.5}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate_run(qrels, {"q1": {"a": 1.0}})  # one judged document: no warning
    with pytest.warns(UserWarning, match="shares no query"):
        compare(qrels, runs={"x": {"9": {"a": 1.0}}, "y": {"q1": {"a": 1.0}}}, metrics="ndcg")


@pytest.mark.slow
def test_ranx_objects_are_accepted_wherever_runs_and_qrels_are():
    """(slow: importing ranx compiles its numba code, ~40 s on a loaded 2-core machine)"""
    ranx = pytest.importorskip("ranx")
    q = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d4": 1, "d5": 0}}
    r = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1}, "q2": {"d5": 0.6, "d4": 0.4}}
    r2 = {"q1": {"d1": 0.1, "d2": 0.8, "d3": 0.9}, "q2": {"d5": 0.4, "d4": 0.6}}
    want = evaluate_run(q, r, metrics="ndcg@2,map")
    got = evaluate_run(ranx.Qrels(q), ranx.Run(r, name="bm25"), metrics="ndcg@2,map")
    assert got.equals(want)
    report = compare(ranx.Qrels(q), runs=[ranx.Run(r, name="bm25"), ranx.Run(r2)], metrics="map")
    assert report.systems == ["bm25", "run_2"]
    report = compare([ranx.Run(r, name="bm25"), ranx.Run(r2, name="rm3")], ranx.Qrels(q))
    assert report.systems == ["bm25", "rm3"]
    text = trec_report(ranx.Qrels(q), ranx.Run(r), metrics="P_1")
    assert text.startswith("P_1")
    with pytest.raises(TypeError, match="arguments are swapped"):
        evaluate_run(ranx.Run(r), ranx.Qrels(q))
