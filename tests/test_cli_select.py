"""``selrank select``: one-line errors before any training, and a small run end to end on three
files (real LightGBM and XGBoost)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")

from selrank.cli import main
from selrank.datasets import write_svmlight


def _files(tmp_path, fractional: bool = False):
    rng = np.random.default_rng(0)
    paths = []
    for name, n_q in (("train", 30), ("vali", 20), ("test", 20)):
        n = n_q * 8
        X = rng.normal(size=(n, 3))
        y = np.digitize(X[:, 0] + 0.7 * rng.normal(size=n), [0.3, 1.2]).astype(float)
        if fractional:
            y = y + 0.5 * (y > 0)
        qid = np.repeat(np.arange(n_q) + 1, 8)
        p = tmp_path / f"{name}.txt"
        write_svmlight(p, X, y, qid)
        paths.append(str(p))
    return ["--train", paths[0], "--valid", paths[1], "--test", paths[2]]


FAST = ["--max-rounds", "6", "--patience", "3", "--n-resamples", "200", "--quiet"]


def test_bad_candidate_is_one_line_before_training(capsys):
    assert main(["select", "--candidates", "listwise,nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("selrank: error: unknown candidate(s) ['nope']")


def test_labels_lambdarank_cannot_take_fail_before_training(tmp_path, capsys):
    args = ["select", *_files(tmp_path, fractional=True), "--candidates", "listwise,lambdarank"]
    assert main([*args, *FAST]) == 2
    err = capsys.readouterr()
    assert err.err.count("\n") == 1 and "lambdarank" in err.err and "integer grades" in err.err
    assert "[1/" not in err.err  # no fit started


def test_missing_file_and_conflicting_options(tmp_path, capsys):
    assert main(["select", "--train", str(tmp_path / "a.txt")]) == 2
    assert "missing --valid, --test" in capsys.readouterr().err
    assert main(["select", "--dataset", "mq2008", "--data", str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err


def test_a_small_run_end_to_end(tmp_path, capsys):
    out_json = tmp_path / "r.json"
    model = tmp_path / "best.model"
    args = ["select", *_files(tmp_path), "--candidates", "listwise,lambdarank,rank:ndcg"]
    args += [*FAST, "--format", "markdown", "--json", str(out_json), "--save-best", str(model)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "| candidate |" in captured.out and "**Recommendation.**" in captured.out
    doc = json.loads(out_json.read_text())
    assert {c["candidate"] for c in doc["candidates"]} == {"listwise", "lambdarank", "rank:ndcg"}
    assert doc["chosen"] in ("listwise", "lambdarank", "rank:ndcg")
    assert model.stat().st_size > 0
    assert f"saved to {model}" in captured.err
