"""Every ```python block of docs/*.md runs as printed.

A page is read top to bottom: its blocks run in order in one namespace (a later block may use
what an earlier one defined), in a fresh temporary working directory and with ``HOME`` pointing
to a temporary folder, so that a page that writes files or reads ``~/...`` touches neither the
repository nor the user's home.

A block that cannot run on its own as printed (a script for ``torchrun``, code that reads the
reader's own files) is a *fragment*: the line right before its fence is

    <!-- docs-test: preamble NAME -->

and the page says in prose what the fragment assumes; the test runs ``PREAMBLES[NAME]`` (below)
first (once per page), in the same namespace. There is no way to skip a block: a page whose code does not run
fails here, naming the page, the block and the error.

docs/gradient_walkthrough.md has its own test (tests/test_docs_walkthrough.py).
"""

from __future__ import annotations

import os
import re
import socket
import sys
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
OWN_TEST = {"gradient_walkthrough.md"}
# pages whose blocks train real models on packaged data (each takes seconds to minutes)
SLOW = {
    "index.md",
    "choosing.md",
    "distillation.md",
    "dwell.md",
    "torch.md",
    "estimators.md",
    "gbdt.md",
    "selection.md",
}

BLOCK = re.compile(
    r"(?:^<!-- docs-test: (?P<marker>[^>]*?) -->\n)?^```python[^\n]*\n(?P<code>.*?)^```",
    flags=re.M | re.S,
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(namespace: dict) -> None:
    """The environment ``torchrun`` gives a script: here a one-process group."""
    os.environ.update(
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )


def _letor_files(namespace: dict) -> None:
    """The reader's own LETOR / SVMlight files, written from packaged MQ2008 (small slices).

    In the working directory: ``Fold1/train.txt``, ``S1.txt`` (with docid comments),
    ``test.txt`` (136 feature columns at most); in ``~/data``: an MSLR-style folder with
    ``Fold2``, an Istella-style folder without ``vali.txt`` and Yahoo's ``set1.*`` files. The
    namespace gets ``X, y, qid, docids`` (a few queries) for ``write_svmlight``.
    """
    import numpy as np

    from selrank.datasets import load_letor, write_svmlight

    ds = load_letor("mq2008", fold=1)

    def part(split, n_queries):
        sizes = np.asarray(split.group)[:n_queries]
        n = int(sizes.sum())
        qid = np.repeat(np.arange(1, n_queries + 1), sizes)
        return split.X[:n], split.y[:n], qid

    X, y, qid = part(ds.train, 5)
    docids = np.array([f"docid = GX{i:06d}" for i in range(len(y))])
    Path("Fold1").mkdir()
    write_svmlight("Fold1/train.txt", X, y, qid)
    write_svmlight("S1.txt", X, y, qid, comments=docids)
    write_svmlight("test.txt", X, y, qid)
    home = Path(os.environ["HOME"]) / "data"
    layouts = {
        "MSLR-WEB30K/Fold2": ["train.txt", "vali.txt", "test.txt"],
        "istella-letor/full": ["train.txt", "test.txt"],
        "ltrc_yahoo": ["set1.train.txt", "set1.valid.txt", "set1.test.txt"],
    }
    for folder, names in layouts.items():
        (home / folder).mkdir(parents=True)
        for name in names:
            write_svmlight(home / folder / name, X, y, qid)
    namespace.update(X=X, y=y, qid=qid, docids=docids)


def _mq2007_download(namespace: dict) -> None:
    """The reader's download of LETOR 4.0 MQ2007, format-exact at the official size: in
    ``~/data/MQ2007``, ``Fold3/{train,vali,test}.txt`` with 69,623 rows of 1,692 queries, 46
    features, grades 0-2 and ``#docid`` comments (random feature values)."""
    import numpy as np

    from selrank.datasets import BENCHMARKS, write_svmlight

    spec = BENCHMARKS["mq2007"]
    rng = np.random.default_rng(0)
    sizes = np.full(spec.n_queries, spec.n_rows // spec.n_queries)
    sizes[: spec.n_rows - int(sizes.sum())] += 1
    qid = np.repeat(np.arange(10_000, 10_000 + spec.n_queries), sizes)
    X = np.round(rng.random((spec.n_rows, spec.n_features)), 6)
    y = rng.choice([0, 1, 2], size=spec.n_rows)
    subset = np.repeat(np.arange(spec.n_queries) * 5 // spec.n_queries, sizes)
    fold = Path("~/data/MQ2007/Fold3").expanduser()
    fold.mkdir(parents=True)
    for name, keep in (("train", subset <= 2), ("vali", subset == 3), ("test", subset == 4)):
        docs = [f"docid = GX{r:06d} inc = 1 prob = 0.1" for r in np.flatnonzero(keep)]
        write_svmlight(fold / f"{name}.txt", X[keep], y[keep], qid[keep], comments=docs)


PREAMBLES = {
    "torchrun": _torchrun,
    "letor-files": _letor_files,
    "mq2007-download": _mq2007_download,
}


def _pages() -> list:
    params = []
    for page in sorted(DOCS.glob("*.md")):
        if page.name in OWN_TEST or "```python" not in page.read_text(encoding="utf-8"):
            continue
        marks = [pytest.mark.slow] if page.name in SLOW else []
        params.append(pytest.param(page.name, marks=marks, id=page.name))
    return params


def blocks(text: str) -> list[tuple[str | None, str]]:
    """The (marker, code) of each ```python block of a page, in order."""
    return [(m.group("marker"), m.group("code")) for m in BLOCK.finditer(text)]


def test_block_parser_reads_markers():
    page = textwrap.dedent(
        """\
        text
        ```python
        a = 1
        ```
        <!-- docs-test: preamble torchrun -->
        ```python
        b = a
        ```
        """
    )
    assert blocks(page) == [(None, "a = 1\n"), ("preamble torchrun", "b = a\n")]


@pytest.mark.parametrize("name", _pages())
def test_page_blocks_run(name, tmp_path, monkeypatch, request):
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path / "work")
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.setenv(var, "")  # restored (removed) after the test, whatever a preamble sets
        monkeypatch.delenv(var)
    before = _snapshot()
    sklearn_config = _sklearn_config()  # a page may turn on metadata routing: undone after
    if sklearn_config is not None:
        request.addfinalizer(lambda: sys.modules["sklearn"].set_config(**sklearn_config))
    namespace: dict = {"__name__": f"docs.{name}"}
    found = blocks((DOCS / name).read_text(encoding="utf-8"))
    done: set[str] = set()  # a preamble runs once per page, before its first fragment
    assert found, name
    for i, (marker, code) in enumerate(found):
        if marker is not None:
            kind, _, arg = marker.partition(" ")
            assert kind == "preamble" and arg in PREAMBLES, (
                f"{name} block {i}: unknown marker {marker!r} (known: preamble "
                f"{' | '.join(PREAMBLES)})"
            )
            if arg not in done:
                PREAMBLES[arg](namespace)
                done.add(arg)
        try:
            exec(compile(code, f"docs/{name} block {i}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(
                f"docs/{name}, python block {i} (0-based) does not run as printed: {exc!r}\n"
                f"{code}\n(a fragment needs a preamble: see tests/test_docs_blocks.py)"
            ) from exc
        finally:
            if "matplotlib.pyplot" in sys.modules:
                sys.modules["matplotlib.pyplot"].close("all")
    assert _snapshot() == before, f"docs/{name} wrote into the repository's docs/ folder"


def _sklearn_config() -> dict | None:
    try:
        import sklearn
    except ImportError:  # pragma: no cover
        return None
    return sklearn.get_config()


def _snapshot() -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in DOCS.rglob("*") if p.is_file()}
