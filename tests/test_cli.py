"""The command line: the main job on packaged data, sensitivity tables, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from selrank.cli import main


def test_demo_runs(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "exp" in out and "gradient" in out


def test_datasets_lists_packaged_data(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "mq2008" in out and "yoochoose-100k" in out


def test_sensitivity_table_and_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    fig = tmp_path / "exp.png"
    argv = [
        "sensitivity",
        "exp",
        "--kind",
        "link",
        "--param",
        "alpha=1.5",
        "--rows",
        "5",
        "--figure",
        str(fig),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = [
        line
        for line in out.splitlines()
        if line.strip() and line.split()[0].lstrip("-").replace(".", "").isdigit()
    ]
    assert len(lines) == 5
    # h of the exp link at the last grid point z = 5 with alpha 1.5: e^7.5
    assert float(lines[-1].split()[1]) == pytest.approx(1808.04, rel=1e-4)
    assert fig.stat().st_size > 1000
    assert main(["sensitivity", "tanh", "--rows", "3"]) == 0  # a scaling: its composite sigmoid


def test_train_one_fold_with_baselines(tmp_path, capsys):
    out_json = tmp_path / "res.json"
    code = main(
        [
            "train",
            "--dataset",
            "ohsumed",
            "--fold",
            "2",
            "--backend-param",
            "n_estimators=5",
            "--n-resamples",
            "300",
            "--json",
            str(out_json),
            "--save",
            str(tmp_path / "m.json"),
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # no progress bar when stderr is not a terminal, no warnings
    res = json.loads(out_json.read_text())
    assert res["folds"] == [2] and len(res["per_fold"]) == 1
    systems = res["systems"]
    assert list(systems) == ["selrank listwise", "LightGBM lambdarank", "LightGBM rank_xendcg"]
    for s in systems.values():
        assert 0.2 < s["ndcg@10"] <= 1.0 and 1 <= s["rounds_per_fold"][0] <= 5  # early-stopped
    cmp = [c for c in res["comparisons"] if c["metric"] == "ndcg@10"]
    assert [c["reference"] for c in cmp] == ["LightGBM lambdarank", "LightGBM rank_xendcg"]
    for c in cmp:
        assert c["system"] == "selrank listwise" and c["verdict"] in ("better", "parity", "worse")
        assert c["ci_low"] <= c["diff"] <= c["ci_high"] and 0 <= c["p_value"] <= c["p_holm"] <= 1
        assert c["diff"] == pytest.approx(
            systems["selrank listwise"]["ndcg@10"] - systems[c["reference"]]["ndcg@10"]
        )
    assert res["parameters"]["baselines"]["max_rounds"] == 5
    assert res["test_queries"] == res["per_fold"][0]["test_queries"] > 0
    out = captured.out
    assert "selrank listwise vs LightGBM lambdarank: ΔNDCG@10 = " in out and "→ " in out
    assert (tmp_path / "m.json").exists()


def test_train_without_baselines(capsys):
    assert main(["train", "--fold", "1", "--backend-param", "n_estimators=3", "--no-baseline"]) == 0
    out = capsys.readouterr().out
    assert "selrank listwise" in out and "lambdarank" not in out and " vs " not in out


@pytest.mark.slow
def test_train_five_folds_pools_queries(tmp_path, capsys):
    out_json = tmp_path / "res.json"
    code = main(
        [
            "train",
            "--dataset",
            "ohsumed",
            "--backend-param",
            "n_estimators=3",
            "--n-resamples",
            "200",
            "--json",
            str(out_json),
        ]
    )
    assert code == 0
    res = json.loads(out_json.read_text())
    assert res["folds"] == [1, 2, 3, 4, 5] and len(res["per_fold"]) == 5
    assert res["test_queries"] == sum(f["test_queries"] for f in res["per_fold"])
    for c in res["comparisons"]:
        assert c["n_queries"] == res["test_queries"]
    # the pooled mean is the query-weighted mean of the fold means
    w = np.array([f["test_queries"] for f in res["per_fold"]])
    v = np.array([f["systems"]["LightGBM lambdarank"]["ndcg@10"] for f in res["per_fold"]])
    assert res["systems"]["LightGBM lambdarank"]["ndcg@10"] == pytest.approx(
        np.average(v, weights=w)
    )
    assert "ohsumed, 5 folds" in capsys.readouterr().out


def test_version(capsys):
    import selrank

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"selrank {selrank.__version__}"


def test_losses_lists_each_task(capsys):
    assert main(["losses"]) == 0
    out = capsys.readouterr().out
    ranking = next(line for line in out.splitlines() if line.startswith("ranking"))
    for name in ("listwise", "pairwise", "pointwise"):
        assert name in ranking
    assert "softmax_cross_entropy" not in ranking and "combined" not in ranking
    assert "more classes:" in out and "softmax_cross_entropy" in out
    assert "both a link and a scaling" in out and "exp" in out
    assert main(["losses", "--task", "regression"]) == 0
    assert "regression (SelectiveRegressor): pointwise" in capsys.readouterr().out


def test_sensitivity_needs_kind_for_ambiguous_names(capsys):
    # "exp" is a link and a scaling: --gamma would be ignored if it silently meant the link
    assert main(["sensitivity", "exp", "--gamma", "0.5"]) == 2
    assert "--kind" in capsys.readouterr().err
    assert main(["sensitivity", "exp", "--kind", "link", "--gamma", "0.5"]) == 2
    assert "--gamma" in capsys.readouterr().err
    assert main(["sensitivity", "exp", "--kind", "scaling", "--gamma", "0.5", "--rows", "3"]) == 0
    a = capsys.readouterr().out
    assert "gamma=0.5" in a
    assert main(["sensitivity", "exp", "--kind", "scaling", "--gamma", "2", "--rows", "3"]) == 0
    b = capsys.readouterr().out
    assert "gamma=2.0" in b and a.splitlines()[2:] != b.splitlines()[2:]  # gamma changes the curves
    assert main(["sensitivity", "tanh", "--kind", "link"]) == 2
    assert "not a link" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, match",
    [
        (["train", "--loss", "combined"], "needs parameters"),
        (["train", "--loss", "softmax_cross_entropy"], "not a ranking loss"),
        (["train", "--loss", "nosuchloss"], "unknown loss"),
        (["train", "--dataset", "mslr"], "invalid choice"),
        (["train", "--param", "gamma"], "name=value"),
        (["sensitivity", "piecewise"], "knots"),
        (["sensitivity", "nosuchlink"], "unknown link or scaling"),
        (["sensitivity", "exp", "--kind", "link", "--param", "alpha=-1"], "alpha"),
        (["nosuchcommand"], "invalid choice"),
    ],
)
def test_errors_are_one_line_and_exit_2(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("selrank: error: ") and match in last


def test_piecewise_link_from_list_parameters(capsys):
    argv = [
        "sensitivity",
        "piecewise",
        "--param",
        "knots=0,1",
        "--param",
        "values=0,1",
        "--rows",
        "3",
    ]
    assert main(argv) == 0
    assert "knots=(0, 1)" in capsys.readouterr().out


def test_python_dash_m_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "selrank", "demo"], capture_output=True, text=True, check=True
    )
    assert "Links" in out.stdout


def test_progress_bar_only_on_a_terminal(monkeypatch):
    import io

    from selrank import cli

    pytest.importorskip("tqdm")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    bar = cli._progress(2, "mq2008")
    bar.update(2)
    bar.close()
    assert (
        "mq2008:" in term.getvalue() and "0/2" in term.getvalue()
    )  # later updates are rate-limited
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert cli._progress(2, "mq2008") is None
