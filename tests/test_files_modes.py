"""Every file selrank writes gets the mode other tools give it: 0o666 less the umask (issue 30:
the atomic writes came out 0600, as mkstemp creates them), and a replaced file keeps its mode."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from selrank._files import default_file_mode, open_write


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _writers(tmp_path):
    from selrank.datasets import write_svmlight
    from selrank.estimators import SelectiveRanker
    from selrank.metrics import write_qrels, write_run

    rng = np.random.default_rng(0)
    X, y = rng.random((60, 3)), rng.integers(0, 3, 60).astype(float)
    model = SelectiveRanker(n_estimators=2).fit(X, y, group=[10] * 6)
    run = {"q1": {"d1": 1.0, "d2": 0.5}}
    qrels = {"q1": {"d1": 1, "d2": 0}}
    return {
        "save": lambda p: model.save(p),
        "save .gz": lambda p: model.save(str(p) + ".gz"),
        "write_run": lambda p: write_run(run, p),
        "write_qrels": lambda p: write_qrels(qrels, p),
        "write_svmlight": lambda p: write_svmlight(p, X, y, np.repeat(np.arange(6), 10)),
        "open_write": _open_write,
    }


def _open_write(path) -> None:
    with open_write(path) as fh:
        fh.write(b"x")


def test_every_writer_follows_the_umask(tmp_path, umask):
    for name, write in _writers(tmp_path).items():
        path = tmp_path / name.replace(" ", "_")
        write(path)
        written = path if path.exists() else tmp_path / (path.name + ".gz")
        assert _mode(written) == 0o666 & ~umask, name
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_replaced_file_keeps_its_mode(tmp_path):
    from selrank.metrics import write_run

    f = tmp_path / "run.txt"
    f.write_text("old\n")
    f.chmod(0o604)
    write_run({"q1": {"d1": 1.0}}, f)
    assert _mode(f) == 0o604 and f.read_text() != "old\n"


def test_default_file_mode_reads_the_umask_without_changing_it():
    old = os.umask(0o077)
    try:
        assert default_file_mode() == 0o600 and default_file_mode(directory=True) == 0o700
        assert os.umask(0o077) == 0o077  # unchanged by the call
    finally:
        os.umask(old)
