"""The command line on the user's own data: ``train --data / --train --valid --test``,
``predict``, ``evaluate``, the output-path checks and the one gzip rule for written files."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from selrank.cli import BENCHMARK_NAMES, main
from selrank.datasets import BENCHMARKS, make_mslr_like, read_svmlight, write_svmlight
from selrank.estimators import SelectiveRanker

pytest.importorskip("numba")
pytest.importorskip("polars")

FAST = ["--backend-param", "n_estimators=4", "--n-resamples", "200"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SELRANK_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def no_training(monkeypatch):
    """Any fit reached by an error case fails the test: errors must come before training."""

    def trained(*args, **kwargs):
        raise RuntimeError("training started before the error was reported")

    monkeypatch.setattr(SelectiveRanker, "fit", trained)


def _folder(root: Path, folds=(1, 2), n_rows=1_500, n_features=8, seed=0, gz=False) -> Path:
    """A LETOR / MSLR-style folder: Fold{k}/{train,vali,test}.txt by the official rotation."""
    data = make_mslr_like(n_rows, n_features, mean_docs_per_query=30, seed=seed)
    sub = np.repeat(np.arange(data.n_queries) % 5, data.group)
    for fold in folds:
        order = [(fold - 1 + j) % 5 for j in range(5)]
        parts = {"train": order[:3], "vali": [order[3]], "test": [order[4]]}
        base = root / f"Fold{fold}"
        base.mkdir(parents=True, exist_ok=True)
        for name, idx in parts.items():
            keep = np.isin(sub, idx)
            suffix = ".txt.gz" if gz and name == "train" else ".txt"
            write_svmlight(base / f"{name}{suffix}", data.X[keep], data.y[keep], data.qid[keep])
    return root


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("selrank: error: ")
    return last


def test_benchmark_names_match_the_registry():
    assert sorted(BENCHMARK_NAMES) == sorted(BENCHMARKS)


def test_train_on_a_user_folder_every_fold_json_gz(tmp_path, capsys):
    data = _folder(tmp_path / "MyLetor", gz=True)
    out = tmp_path / "res.json.gz"
    assert main(["train", "--data", str(data), *FAST, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "MyLetor, 2 folds:" in text and "→ " in text  # the five-fold report and verdicts
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # gzip because of the name
    res = json.loads(gzip.decompress(out.read_bytes()))
    assert res["folds"] == [1, 2] and res["source"] == {"kind": "folder", "path": str(data)}
    assert res["test_queries"] == sum(f["test_queries"] for f in res["per_fold"])
    for c in res["comparisons"]:
        assert c["verdict"] in ("better", "parity", "worse") and c["ci_low"] <= c["ci_high"]


def test_single_files_save_gz_predict_and_evaluate(tmp_path, capsys):
    fold = _folder(tmp_path / "d", folds=(1,)) / "Fold1"
    model = tmp_path / "model.json.gz"
    argv = ["train", "--train", str(fold / "train.txt"), "--valid", str(fold / "vali.txt")]
    argv += ["--test", str(fold / "test.txt"), *FAST, "--no-baseline", "--save", str(model)]
    assert main(argv) == 0
    assert "train, one split:" in capsys.readouterr().out
    assert model.read_bytes()[:2] == b"\x1f\x8b"  # --save writes gzip under a .gz name
    fitted = SelectiveRanker.load(model)

    run, qrels = tmp_path / "run.txt.gz", tmp_path / "test.qrels"
    argv = ["predict", "--model", str(model), "--data", str(fold / "test.txt")]
    assert main([*argv, "--out", str(run), "--qrels-out", str(qrels), "--tag", "mine"]) == 0
    assert "TREC run written" in capsys.readouterr().out
    lines = gzip.decompress(run.read_bytes()).decode().splitlines()
    test = read_svmlight(fold / "test.txt")
    assert len(lines) == test.n_rows and lines[0].split()[1] == "Q0" and lines[0].endswith("mine")
    # the run holds the model's scores, rows named by their index in the file
    scores = fitted.predict(test.X)
    qid, _, docno, rank, score, _ = lines[0].split()
    assert rank == "1" and float(score) == pytest.approx(scores[int(docno)])
    assert qid == str(test.qid[int(docno)])

    out = tmp_path / "eval.json"
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(run), "--metrics", "ndcg@10,map"]
    assert main([*argv, "--gain", "exponential", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ndcg@10" in printed and "map" in printed
    res = json.loads(out.read_text())
    got = {r["metric"]: r["mean"] for r in res["runs"][str(run)]["summary"]}
    from selrank.metrics import evaluate_run, labels_to_qrels, scores_to_run

    # the files on disk give what the API gives on the arrays (rows named by their index)
    want = evaluate_run(
        labels_to_qrels(test.y, test.group, qid=test.qid),
        scores_to_run(scores, test.group, qid=test.qid),
        metrics=["ndcg@10", "map"],
        gain="exponential",
    )
    assert got == pytest.approx(dict(zip(want["metric"], want["mean"])), rel=1e-12)
    assert 0 < got["ndcg@10"] < 1


def test_benchmark_folder_counts_are_checked_before_training(tmp_path, capsys, no_training):
    data = _folder(tmp_path / "MSLR-WEB10K", folds=(1,))
    argv = ["train", "--dataset", "mslr-web10k", "--data", str(data), "--fold", "1", *FAST]
    assert main(argv) == 2
    msg = _err(capsys)
    assert "the official MSLR-WEB10K has 1,200,192 rows" in msg and "--no-verify" in msg
    # without --fold, every fold's files are checked first: Fold2 is missing
    assert main(["train", "--dataset", "mslr-web10k", "--data", str(data), *FAST]) == 2
    assert "no Fold2 under" in _err(capsys)


def test_benchmark_folder_with_no_verify_trains(tmp_path, capsys):
    data = _folder(tmp_path / "MQ2007", folds=(1,), n_features=46)
    argv = ["train", "--dataset", "mq2007", "--data", str(data), "--fold", "1", "--no-verify"]
    assert main([*argv, *FAST, "--no-baseline"]) == 0
    assert "mq2007, fold 1" in capsys.readouterr().out


def test_a_damaged_later_fold_stops_before_any_training(tmp_path, capsys, no_training):
    data = _folder(tmp_path / "d", folds=(1, 2))
    test2 = data / "Fold2" / "test.txt"
    test2.write_text(test2.read_text() + "1 qid:x 1:0\n")
    assert main(["train", "--data", str(data), *FAST]) == 2
    assert "test.txt, line" in _err(capsys)


@pytest.mark.parametrize(
    "make_argv, match",
    [
        (lambda d, t: ["--json", str(t / "missing" / "r.json")], "does not exist (create it"),
        (lambda d, t: ["--json", str(t)], "is a directory"),
        (lambda d, t: ["--save", str(t)], "is a directory"),
        (lambda d, t: ["--save", str(t / "x.json"), "--json", str(t / "x.json")], "same file"),
        (lambda d, t: ["--save", str(t / "f" / "m.json")], "is not a folder"),
        (lambda d, t: ["--dataset", "mslr-web30k"], "add --data DIR"),
        (lambda d, t: ["--data", str(t / "none")], "no such folder"),
        (lambda d, t: ["--data", str(d), "--dataset", "mq2008"], "packaged with selrank"),
        (lambda d, t: ["--data", str(d), "--fold", "4"], "no fold 4 under"),
        (lambda d, t: ["--train", str(d / "Fold1" / "train.txt")], "missing --valid, --test"),
        (
            lambda d, t: ["--train", "a", "--valid", "b", "--test", "c", "--data", str(d)],
            "drop --data",
        ),
        (lambda d, t: ["--train", "a", "--valid", "b", "--test", "c"], "--train a: no such file"),
        (lambda d, t: ["--dataset", "istella-s", "--data", str(d), "--fold", "2"], "1 split"),
        (lambda d, t: ["--dataset", "istella-s", "--data", str(d)], "no sample under"),
    ],
)
def test_train_errors_come_before_training(tmp_path, capsys, no_training, make_argv, match):
    data = _folder(tmp_path / "d", folds=(1,), n_rows=300)
    (tmp_path / "f").write_text("a file, not a folder")
    assert main(["train", *make_argv(data, tmp_path), *FAST]) == 2
    assert match in _err(capsys)
    assert not (tmp_path / "x.json").exists()


def test_folder_without_validation_is_refused(tmp_path, capsys, no_training):
    data = _folder(tmp_path / "d", folds=(1,), n_rows=300)
    (data / "Fold1" / "vali.txt").unlink()
    assert main(["train", "--data", str(data)]) == 2
    assert "has no validation file" in _err(capsys)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_output_folder_is_refused(tmp_path, capsys, no_training):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(["train", "--fold", "1", "--json", str(locked / "r.json")]) == 2
        assert "is not writable" in _err(capsys)
    finally:
        locked.chmod(0o700)


def test_predict_and_evaluate_errors(tmp_path, capsys):
    fold = _folder(tmp_path / "d", folds=(1,), n_rows=300) / "Fold1"
    not_model = tmp_path / "notes.txt"
    not_model.write_text("hello")
    cases = [
        (
            ["predict", "--model", str(tmp_path / "none.json"), "--data", "x", "--out", "r"],
            "no such",
        ),
        (
            ["predict", "--model", str(not_model), "--data", "x", "--out", "r"],
            "not a selrank model",
        ),
        (["predict", "--model", "m", "--data", "x", "--out", str(tmp_path)], "is a directory"),
        (
            ["predict", "--model", "m", "--data", "x", "--out", "r", "--qrels-out", "./r"],
            "same file",
        ),
        (["evaluate", "--qrels", str(fold / "train.txt"), "--run", "nope"], "--run nope: no such"),
        (["evaluate", "--qrels", "q", "--run", "r", "--json", str(tmp_path)], "is a directory"),
    ]
    for argv, match in cases:
        assert main(argv) == 2, argv
        assert match in _err(capsys)
    bad_model = tmp_path / "cut.json.gz"
    bad_model.write_bytes(gzip.compress(b'{"format": "selrank-estimator", "vers')[:-6])
    argv = ["predict", "--model", str(bad_model), "--data", str(fold / "test.txt")]
    assert main([*argv, "--out", str(tmp_path / "r.txt")]) == 2
    assert "the gzip stream is truncated or corrupt" in _err(capsys)
    bad_model.write_text('{"format": "selrank-estimator", "version')  # cut JSON
    assert main([*argv, "--out", str(tmp_path / "r.txt")]) == 2
    assert "is not a saved selrank estimator (not JSON" in _err(capsys)
    assert not (tmp_path / "r.txt").exists()


def test_predict_names_documents_by_their_docid(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
    q = np.repeat(np.arange(5, 25), 10)
    f = tmp_path / "t.txt"
    write_svmlight(f, X, y, q, comments=[f"docid = D{i}" for i in range(200)])
    model = SelectiveRanker(n_estimators=2).fit(X, y, group=[10] * 20)
    model.save(tmp_path / "m.json")
    run = tmp_path / "run.txt"
    assert (
        main(["predict", "--model", str(tmp_path / "m.json"), "--data", str(f), "--out", str(run)])
        == 0
    )
    assert "their #docid" in capsys.readouterr().out
    assert {line.split()[2] for line in run.read_text().splitlines()} == {
        f"D{i}" for i in range(200)
    }


def test_predict_with_a_neural_ranker_file_and_figure_path_check(tmp_path, capsys):
    pytest.importorskip("torch")
    from selrank.estimators import NeuralRanker

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] > 0).astype(int)
    q = np.repeat(np.arange(12), 10)
    f = tmp_path / "t.txt.gz"
    write_svmlight(f, X, y, q)
    net = NeuralRanker(epochs=2, random_state=0).fit(X, y, group=[10] * 12)
    net.save(tmp_path / "net.pt.gz")
    run = tmp_path / "run.txt"
    argv = ["predict", "--model", str(tmp_path / "net.pt.gz"), "--data", str(f), "--out", str(run)]
    assert main(argv) == 0
    scores = {line.split()[2]: float(line.split()[4]) for line in run.read_text().splitlines()}
    want = net.predict(read_svmlight(f).X)
    assert [scores[str(i)] for i in range(120)] == pytest.approx(want.tolist(), rel=1e-6)
    assert main(["sensitivity", "exp", "--kind", "link", "--figure", str(tmp_path)]) == 2
    msg = _err(capsys)
    assert "--figure" in msg and "is a directory" in msg


def _trec_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(3)
    qrels, good, bad = tmp_path / "q.qrels", tmp_path / "good.run", tmp_path / "bad.run"
    grades = rng.integers(0, 3, size=(40, 10))
    with open(qrels, "w") as f:
        for q in range(40):
            f.writelines(f"{q} 0 d{d} {grades[q, d]}\n" for d in range(10))
    for path, noise in ((good, 0.3), (bad, 3.0)):
        with open(path, "w") as f:
            for q in range(40):
                scores = grades[q] + noise * rng.normal(size=10)
                for rank, d in enumerate(np.argsort(-scores)):
                    f.write(f"{q} Q0 d{d} {rank + 1} {-rank} {path.stem}\n")
    return qrels, good, bad


def test_evaluate_several_runs_one_grammar_and_a_paired_table(tmp_path, capsys):
    qrels, good, bad = _trec_files(tmp_path)
    # trec_eval's "P.5,10" is two metrics (P@5 and P@10), not a split on the comma
    argv = ["evaluate", "--qrels", str(qrels), "--run", str(good), str(bad)]
    assert main([*argv, "--metrics", "ndcg_cut_10,P.5,10"]) == 0
    out = capsys.readouterr().out
    assert "P.5" in out and "P.10" in out
    assert f"paired comparison against {good}" in out
    assert "▼" in out  # the noisy run is significantly worse on NDCG@10
    assert main([*argv, "--metrics", "nDCG@10", "--format", "markdown"]) == 0
    assert "| system" in capsys.readouterr().out
    assert main([*argv, "--metrics", "nope@3"]) == 2
    assert "unknown metric 'nope@3'" in _err(capsys)
    assert main([*argv, "--reference", "other.run"]) == 2
    assert "not one of the --run files" in _err(capsys)
