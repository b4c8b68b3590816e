"""The command line: the main job on packaged data, sensitivity tables, errors."""

from __future__ import annotations

import json
import subprocess
import sys

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
    assert main(["sensitivity", "exp", "--param", "alpha=1.5", "--rows", "5", "--figure", str(fig)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip() and line.split()[0].lstrip("-").replace(".", "").isdigit()]
    assert len(lines) == 5
    # h of the exp link at the last grid point z = 5 with alpha 1.5: e^7.5
    assert float(lines[-1].split()[1]) == pytest.approx(1808.04, rel=1e-4)
    assert fig.stat().st_size > 1000
    assert main(["sensitivity", "tanh", "--rows", "3"]) == 0  # a scaling: its composite sigmoid


@pytest.mark.slow
def test_train_on_packaged_data(tmp_path, capsys):
    out_json = tmp_path / "res.json"
    code = main(["train", "--dataset", "mq2008", "--fold", "2", "--backend-param", "n_estimators=15",
                 "--no-baseline", "--json", str(out_json), "--save", str(tmp_path / "m.json")])
    assert code == 0
    res = json.loads(out_json.read_text())
    row = res["rows"][0]
    assert row["method"].startswith("selrank listwise")
    assert 0.3 < row["ndcg@10"] <= 1.0
    assert (tmp_path / "m.json").exists()


def test_bad_input_gives_clean_errors(capsys):
    assert main(["sensitivity", "exp", "--param", "alpha=-1"]) == 2
    assert "alpha" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sensitivity", "nosuchlink"])
    with pytest.raises(SystemExit):
        main(["train", "--dataset", "mslr"])


def test_python_dash_m_entry_point():
    out = subprocess.run([sys.executable, "-m", "selrank", "demo"], capture_output=True, text=True, check=True)
    assert "Links" in out.stdout
