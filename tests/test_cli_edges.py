"""The command line's edges (issue 30): labels the baselines cannot take, parameters the
backend refuses, outputs that name an input, standard input and output, ``--format latex``,
``evaluate --json``'s comparison, ``--data`` given a file, LightGBM's own ranking files, and
the thread defaults (issue 29)."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from selrank.cli import main
from selrank.datasets import make_mslr_like, write_svmlight
from selrank.estimators import SelectiveRanker

pytest.importorskip("numba")
pytest.importorskip("polars")

FAST = ["--backend-param", "n_estimators=3", "--n-resamples", "100", "--no-cache"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SELRANK_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def no_training(monkeypatch):
    """Any real fit reached by an error case fails the test: errors come before training."""
    real = SelectiveRanker.fit

    def fit(self, X, y, *args, **kwargs):
        if len(y) > 200:  # the parameter probe fits 120 rows; the data is larger
            raise RuntimeError("training started before the error was reported")
        return real(self, X, y, *args, **kwargs)

    monkeypatch.setattr(SelectiveRanker, "fit", fit)


def _folder(root: Path, labels=None, n_rows=1_200, n_features=6) -> Path:
    """train.txt / vali.txt / test.txt in ``root``; ``labels(y, split)`` rewrites the labels."""
    data = make_mslr_like(n_rows, n_features, mean_docs_per_query=30, seed=0)
    part = np.repeat(np.arange(data.n_queries) % 5, data.group)
    root.mkdir(parents=True, exist_ok=True)
    for name, keep in (("train", part < 3), ("vali", part == 3), ("test", part == 4)):
        y = data.y[keep].astype(np.float64)
        if labels is not None:
            y = labels(y, name)
        write_svmlight(root / f"{name}.txt", data.X[keep], y, data.qid[keep])
    return root


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1, err  # one line
    assert lines[0].startswith("selrank: error: ")
    return lines[0]


def _line_of(path: Path, row: int) -> int:
    return row + 1  # write_svmlight writes one data line a row, no header


# -- labels ---------------------------------------------------------------------------------
def test_fractional_labels_are_refused_before_training_naming_file_and_line(
    tmp_path, capsys, no_training
):
    def half(y, name):
        if name == "train":
            y = y.copy()
            y[17] = 1.5
        return y

    data = _folder(tmp_path / "d", half)
    model = tmp_path / "m.json"
    assert main(["train", "--data", str(data), *FAST, "--save", str(model)]) == 2
    err = _err(capsys)
    assert f"{data / 'train.txt'}, line 18: label 1.5 is not a whole number" in err
    assert "--no-baseline" in err and not model.exists()


def test_a_negative_label_in_vali_names_the_file_and_line(tmp_path, capsys, no_training):
    def neg(y, name):
        if name == "vali":
            y = y.copy()
            y[4] = -1
        return y

    data = _folder(tmp_path / "d", neg)
    assert main(["train", "--data", str(data), *FAST]) == 2
    err = _err(capsys)
    assert f"{data / 'vali.txt'}, line 5: label -1" in err and "eval_set" not in err


def test_labels_above_30_train_every_system_with_the_reports_gain(tmp_path, capsys):
    """Before: LightGBM's baselines died after the selrank fit (31 label mappings)."""
    data = _folder(tmp_path / "d", lambda y, name: y * 10)  # grades 0..40
    out = tmp_path / "r.json"
    assert main(["train", "--data", str(data), *FAST, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    gain = doc["parameters"]["baselines"]["label_gain"]
    assert len(gain) == 41 and gain[40] == 2.0**40 - 1
    assert set(doc["systems"]) == {
        "selrank listwise",
        "LightGBM lambdarank",
        "LightGBM rank_xendcg",
    }


def test_fractional_labels_train_selrank_alone_with_no_baseline(tmp_path, capsys):
    data = _folder(tmp_path / "d", lambda y, name: y / 2)
    assert main(["train", "--data", str(data), *FAST, "--no-baseline"]) == 0


# -- parameters -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "param, said",
    [("num_leaves=1", "num_leaves"), ("max_bin=1", "max_bin"), ("min_data_in_leaf=-3", "")],
)
def test_a_parameter_the_backend_refuses_is_one_line_and_exit_2(
    tmp_path, capsys, no_training, param, said
):
    data = _folder(tmp_path / "d")
    assert main(["train", "--data", str(data), *FAST, "--backend-param", param]) == 2
    err = _err(capsys)
    assert f"--backend-param {param}" in err and said in err


# -- outputs and inputs ---------------------------------------------------------------------
def test_no_output_may_name_an_input(tmp_path, capsys, no_training):
    data = _folder(tmp_path / "d")
    vali = data / "vali.txt"
    before = vali.read_bytes()
    assert main(["train", "--data", str(data), *FAST, "--json", str(vali)]) == 2
    assert "is the input file of fold 1 validation" in _err(capsys)
    assert main(["train", "--data", str(data), *FAST, "--save", str(data / "test.txt")]) == 2
    assert "is the input file of fold 1 test" in _err(capsys)
    link = tmp_path / "hard.txt"
    os.link(data / "train.txt", link)  # the same file under another name
    argv = ["train", "--train", str(link), "--valid", str(vali), "--test", str(vali)]
    assert main([*argv, *FAST, "--json", str(data / "train.txt")]) == 2
    assert "is the input file of" in _err(capsys)
    assert vali.read_bytes() == before


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A small model, its test file, and the run and qrels predict writes."""
    root = tmp_path_factory.mktemp("fitted")
    data = _folder(root / "d")
    model = root / "m.json"
    X = np.ones(1)  # noqa: F841
    from selrank.datasets import read_svmlight

    tr = read_svmlight(data / "train.txt")
    SelectiveRanker(n_estimators=3).fit(tr.X, tr.y, group=tr.group).save(model)
    run, qrels = root / "run.txt", root / "t.qrels"
    argv = ["predict", "--model", str(model), "--data", str(data / "test.txt")]
    assert main([*argv, "--out", str(run), "--qrels-out", str(qrels)]) == 0
    return {"model": model, "test": data / "test.txt", "run": run, "qrels": qrels, "root": root}


def test_predict_and_evaluate_refuse_an_output_that_is_an_input(fitted, capsys):
    argv = ["predict", "--model", str(fitted["model"]), "--data", str(fitted["test"])]
    for out in (fitted["test"], fitted["model"]):
        before = out.read_bytes()
        assert main([*argv, "--out", str(out)]) == 2
        assert "is the input file of" in _err(capsys)
        assert out.read_bytes() == before
    argv = ["evaluate", "--qrels", str(fitted["qrels"]), "--run", str(fitted["run"])]
    assert main([*argv, "--json", str(fitted["qrels"])]) == 2
    assert "is the input file of --qrels" in _err(capsys)


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_out_dash_writes_the_run_to_stdout_and_run_dash_reads_stdin(
    fitted, tmp_path, capsys, monkeypatch
):
    """Before: --out - wrote a file named '-', --run - said 'no such file'."""
    monkeypatch.chdir(tmp_path)
    argv = ["predict", "--model", str(fitted["model"]), "--data", str(fitted["test"])]
    assert main([*argv, "--out", "-"]) == 0
    got = capsys.readouterr()
    assert got.out.encode() == fitted["run"].read_bytes()  # only the run on stdout
    assert "TREC run written to standard output" in got.err and not Path("-").exists()

    _stdin(monkeypatch, fitted["run"].read_bytes())
    assert (
        main(["evaluate", "--qrels", str(fitted["qrels"]), "--run", "-", "--json", "e.json"]) == 0
    )
    from_stdin = json.loads(Path("e.json").read_text())["runs"]["-"]["summary"]
    assert main(["evaluate", "--qrels", str(fitted["qrels"]), "--run", str(fitted["run"])]) == 0
    capsys.readouterr()
    _stdin(monkeypatch, fitted["test"].read_bytes())
    assert main(["predict", "--model", str(fitted["model"]), "--data", "-", "--out", "r2.txt"]) == 0
    assert Path("r2.txt").read_bytes() == fitted["run"].read_bytes()
    assert from_stdin[0]["mean"] > 0
    _stdin(monkeypatch, b"q1 Q0 d1 1 x bm25\n")
    assert main(["evaluate", "--qrels", str(fitted["qrels"]), "--run", "-"]) == 2
    err = _err(capsys)
    assert "<stdin>" in err and "selrank_stdin_" not in err


def test_json_dash_is_the_only_thing_on_stdout(fitted, capsys):
    argv = ["evaluate", "--qrels", str(fitted["qrels"]), "--run", str(fitted["run"])]
    assert main([*argv, "--json", "-"]) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["runs"]  # parses: nothing else on stdout
    assert "ndcg@10" in got.err


@pytest.mark.parametrize("fmt, first", [("latex", "\\begin{"), ("markdown", "|")])
@pytest.mark.parametrize("n_runs", [1, 2])
def test_format_latex_prints_only_the_table(fitted, tmp_path, capsys, fmt, first, n_runs):
    """Before: a text table came first, so `> t.tex` did not compile."""
    other = tmp_path / "other.txt"
    other.write_bytes(fitted["run"].read_bytes().replace(b"selrank", b"other"))
    runs = [str(fitted["run"]), str(other)][:n_runs]
    assert main(["evaluate", "--qrels", str(fitted["qrels"]), "--run", *runs, "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert out.lstrip().startswith(first), out[:200]
    if fmt == "latex":
        assert out.rstrip().endswith(("\\end{table}", "\\end{tabular}"))
        assert "mean over the queries" not in out and "paired comparison" not in out


def test_evaluate_json_holds_the_comparison_it_prints(fitted, tmp_path, capsys):
    other = tmp_path / "other.txt"
    lines = fitted["run"].read_text().splitlines()
    other.write_text("\n".join(reversed(lines)) + "\n")  # same scores, file order reversed
    flip = tmp_path / "flip.txt"
    flip.write_text(
        "\n".join(" ".join([*ln.split()[:4], str(-float(ln.split()[4])), "flip"]) for ln in lines)
        + "\n"
    )
    out = tmp_path / "e.json"
    argv = ["evaluate", "--qrels", str(fitted["qrels"]), "--run", str(fitted["run"]), str(flip)]
    assert main([*argv, "--json", str(out), "--metrics", "ndcg@10"]) == 0
    printed = capsys.readouterr().out
    cmp = json.loads(out.read_text())["comparison"]
    assert cmp["reference"] == str(fitted["run"])
    (row,) = [r for r in cmp["rows"] if r["system"] == str(flip)]
    assert row["metric"] == "ndcg@10" and row["diff"] < 0
    assert f"{row['mean']:.4f}" in printed


# -- --data ---------------------------------------------------------------------------------
def test_data_given_a_file_says_so(tmp_path, capsys, no_training):
    data = _folder(tmp_path / "d")
    assert main(["train", "--data", str(data / "train.txt")]) == 2
    err = _err(capsys)
    assert "is a file; --data takes a folder" in err and "--train FILE" in err
    assert "no such folder" not in err
    assert main(["train", "--data", str(tmp_path / "none")]) == 2
    assert "no such folder" in _err(capsys)


def _lightgbm_folder(root: Path, *, vali=True) -> Path:
    """LightGBM's example layout: rank.train + rank.train.query (no qid; indices from 1)."""
    data = make_mslr_like(900, 5, mean_docs_per_query=25, seed=3)
    part = np.repeat(np.arange(data.n_queries) % 5, data.group)
    root.mkdir(parents=True, exist_ok=True)
    splits = [("train", part < 3), ("test", part == 4)] + ([("vali", part == 3)] if vali else [])
    for name, keep in splits:
        X, y, q = data.X[keep], data.y[keep], data.qid[keep]
        lines = [
            f"{int(y[i])} " + " ".join(f"{j + 1}:{X[i, j]:.6g}" for j in range(X.shape[1]))
            for i in range(len(y))
        ]
        (root / f"rank.{name}").write_text("\n".join(lines) + "\n")
        _, sizes = np.unique(q, return_counts=True)  # qids ascending and contiguous
        (root / f"rank.{name}.query").write_text("\n".join(map(str, sizes)) + "\n")
    return root


def test_train_and_predict_on_lightgbm_ranking_files(tmp_path, capsys):
    root = _lightgbm_folder(tmp_path / "lgb")
    out = tmp_path / "r.json"
    model = tmp_path / "m.json"
    argv = ["train", "--data", str(root), *FAST, "--json", str(out), "--save", str(model)]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["test_queries"] == len((root / "rank.test.query").read_text().split())
    run = tmp_path / "run.txt"
    argv = ["predict", "--model", str(model), "--data", str(root / "rank.test")]
    assert main([*argv, "--out", str(run)]) == 0
    n_rows = len((root / "rank.test").read_text().splitlines())
    assert len(run.read_text().splitlines()) == n_rows
    (root / "rank.vali").unlink()
    assert main(["train", "--data", str(root), *FAST]) == 2
    assert "no validation file" in _err(capsys)


# -- threads and file modes -----------------------------------------------------------------
def test_threads_default_to_one_on_small_data_and_threads_sets_them(tmp_path, monkeypatch):
    from selrank import cli
    from selrank._threads import default_threads

    assert default_threads(1_000) == 1 and default_threads(39_999) == 1
    seen = []
    real = cli._fit_baseline

    def spy(objective, split, tree_params, seed, n_rounds, esr, threads=None):
        seen.append(threads)
        return real(objective, split, tree_params, seed, n_rounds, esr, threads)

    monkeypatch.setattr(cli, "_fit_baseline", spy)
    data = _folder(tmp_path / "d")
    out = tmp_path / "r.json"
    assert main(["train", "--data", str(data), *FAST, "--threads", "2", "--json", str(out)]) == 0
    assert seen == [2, 2]
    assert json.loads(out.read_text())["parameters"]["selrank"]["num_threads"] == 2
    assert main(["train", "--data", str(data), *FAST, "--threads", "0"]) == 2


def test_the_estimators_use_one_thread_on_small_data():
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    X, y = rng.random((300, 4)), rng.integers(0, 3, 300).astype(float)
    m = SelectiveRanker(n_estimators=2).fit(X, y, group=[30] * 10)
    booster = m.booster_ if hasattr(m, "booster_") else m._booster
    assert isinstance(booster, lgb.Booster)
    assert int(booster.params["num_threads"]) == 1
    m = SelectiveRanker(n_estimators=2, num_threads=2).fit(X, y, group=[30] * 10)
    assert int(m.booster_.params["num_threads"]) == 2


def test_cli_outputs_follow_the_umask(fitted, tmp_path, capsys):
    old = os.umask(0o027)
    try:
        run, js = tmp_path / "run.txt", tmp_path / "e.json"
        argv = ["predict", "--model", str(fitted["model"]), "--data", str(fitted["test"])]
        assert main([*argv, "--out", str(run), "--qrels-out", str(tmp_path / "q")]) == 0
        argv = ["evaluate", "--qrels", str(fitted["qrels"]), "--run", str(run)]
        assert main([*argv, "--json", str(js)]) == 0
    finally:
        os.umask(old)
    for f in (run, js, tmp_path / "q"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o640, f  # mkstemp's 0600 before


def test_the_parameter_probe_is_as_wide_as_the_data(tmp_path, capsys):
    """A parameter tied to the width (monotone constraints, one per feature) passes the probe."""
    data = _folder(tmp_path / "d", n_features=6)
    mono = "monotone_constraints=1,0,0,0,0,-1"
    assert main(["train", "--data", str(data), *FAST, "--backend-param", mono]) == 0
    assert (
        main(["train", "--data", str(data), *FAST, "--backend-param", "monotone_constraints=1,0"])
        == 2
    )
    assert "monotone" in _err(capsys).lower()
