"""Every notebook in notebooks/ runs top to bottom in a fresh kernel and shows its figures.

The kernel imports this checkout (its root is put first on ``PYTHONPATH``) and runs with one
thread per library, as on a small CI machine. A notebook that raises fails the test; so does
a figure that prints as ``<Figure size ...>`` instead of displaying.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5, [p.name for p in NOTEBOOKS]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_displays_its_figures(path, monkeypatch, tmp_path):
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError naming the cell on any error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert pngs, f"{path.name} shows no figure"
    text_only_figures = [
        o["data"]["text/plain"]
        for o in outputs
        if o.get("data", {}).get("text/plain", "").startswith("<Figure size")
        and "image/png" not in o["data"]
    ]
    assert not text_only_figures, f"{path.name}: figures shown as text {text_only_figures}"


@pytest.mark.slow
def test_docs_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: broken links, bad references and docstring errors fail.

    The site renders the committed notebooks (mkdocs-jupyter, no execution) and the API
    reference from the numpydoc docstrings (mkdocstrings). Run from a temporary directory so
    the build's caches stay out of the checkout.
    """
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("mkdocs_jupyter")
    import subprocess
    import sys

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "NO_MKDOCS_2_WARNING": "1",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    for page in (
        "index.html",
        "notebooks/01_evaluate_and_compare_rankers/index.html",
        "api/plots/index.html",
    ):
        assert (tmp_path / "site" / page).is_file(), page
