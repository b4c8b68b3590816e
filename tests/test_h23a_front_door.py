"""The front door (issue 23): licence and data terms, README links, `~` paths, CLI user errors."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def test_licence_files_exist_and_are_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0"
    for name in meta["license-files"]:
        assert (ROOT / name).is_file(), name
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert "END OF TERMS AND CONDITIONS" in (ROOT / "LICENSE").read_text()
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(meta["urls"])


@pytest.mark.parametrize(
    ("folder", "terms"),
    [("mq2008", "LETOR"), ("ohsumed", "LETOR"), ("yoochoose-100k", "CC BY-NC-ND 4.0")],
)
def test_each_dataset_card_states_its_terms(folder, terms):
    card = (ROOT / "datasets" / folder / "README.md").read_text()
    section = card[card.index("## Terms") : card.index("## Contents")]
    assert terms in section and "Apache-2.0" in section and "DATA_LICENSES.md" in section
    assert f"`{folder}/`" in (ROOT / "DATA_LICENSES.md").read_text()


def test_readme_links_are_absolute():
    """A package index renders the README away from the repository: relative links break."""
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    relative = [t for t in targets if not re.match(r"(https?://|#|mailto:)", t)]
    assert not relative, relative


def test_load_letor_expands_home(tmp_path, monkeypatch):
    from selrank.datasets import load_letor, write_svmlight

    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / "data" / "mine"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    X, y, qid = rng.normal(size=(12, 3)), rng.integers(0, 3, 12), np.repeat([1, 2, 3], 4)
    for name in ("train.txt", "vali.txt", "test.txt"):
        write_svmlight(folder / name, X, y, qid)
    write_svmlight("~/data/mine/extra.txt", X, y, qid)  # the writer expands ~ too
    assert (folder / "extra.txt").is_file()
    ds = load_letor(path="~/data/mine")
    np.testing.assert_allclose(ds.train.X, X, rtol=1e-6)
    assert list(ds.test.group) == [4, 4, 4]


@pytest.mark.slow
def test_cli_os_error_is_one_line_without_traceback(tmp_path, capsys):
    from selrank.cli import main

    # --json naming a directory: IsADirectoryError once the (one-fold) job has run
    rc = main(["train", "--dataset", "mq2008", "--fold", "1", "--no-baseline", "--json", "."])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip().splitlines()[-1].startswith("selrank: error:")
    assert "Traceback" not in err
