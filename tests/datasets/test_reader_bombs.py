"""Gzip bombs and oversized lines against every reader (issue 20), measured as the growth of
the peak resident memory of a fresh process (so polars' and numba's allocations count too).

Before: a 4 MB gzip of newlines made read_svmlight ask for 32 GiB, one unterminated line cost
it 5.3 GiB, and the click-log loader passed 6 GiB on 1 GB of blank lines or 512 MB of rows.
Each case here is bounded to tens of MB over the baseline, well under the limits asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

pytest.importorskip("numba")
pytest.importorskip("polars")

pytestmark = pytest.mark.slow

_MB = 1 << 20

_PROBE = r"""
import json, resource, sys, time
from pathlib import Path
from selrank.datasets import read_session_clicks, read_svmlight
from selrank.metrics.trec import read_qrels

reader, path, kwargs = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
fn = {"svmlight": read_svmlight, "clicks": read_session_clicks, "qrels": read_qrels}[reader]
warm = Path(sys.argv[4])
warm.joinpath("w.txt").write_text("1 qid:1 1:1\n")
warm.joinpath("w.clicks").write_text("SessionId\tItemId\tTime\n1\t2\t1396860669\n")
read_svmlight(warm / "w.txt"), read_session_clicks(warm / "w.clicks")  # compile the kernels
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    out = fn(path, **kwargs)
    result = f"{type(out).__name__}"
except ValueError as exc:
    result = f"ValueError: {exc}"
seconds = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_mb": (after - before) / 1024, "result": result, "seconds": seconds}))
"""


def _bomb(path: Path, unit: bytes, n_bytes: int, head: bytes = b"") -> Path:
    """A gzip file of ``head`` followed by ``unit`` repeated to ``n_bytes`` (written in blocks)."""
    block = unit * (_MB // len(unit))
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    with open(path, "wb") as fh:
        fh.write(z.compress(head))
        for _ in range(n_bytes // len(block)):
            fh.write(z.compress(block))
        fh.write(z.flush())
    return path


def _probe(tmp_path: Path, reader: str, path: Path, **kwargs) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path.cwd()), *sys.path]))
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, reader, str(path), json.dumps(kwargs), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]  # never a signal
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{reader} {path.name}: +{out['grew_mb']:.0f} MB peak, {out['seconds']:.2f} s")
    return out


def test_svmlight_gzip_of_newlines(tmp_path):
    path = _bomb(tmp_path / "nl.gz", b"\n", 256 * _MB)  # 0.25 MB on disk
    out = _probe(tmp_path, "svmlight", path)
    assert (
        out["result"]
        == f"ValueError: {path} holds no data lines (expected '<label> qid:<id> <id>:<value> ...')"
    )
    assert out["grew_mb"] < 200  # before: 256 million rows of arrays (about 7 GB)


def test_svmlight_one_unterminated_line(tmp_path):
    path = _bomb(tmp_path / "line.gz", b"1", 160 * _MB, head=b"1 qid:1 1:1\n2 qid:1 1:")
    out = _probe(tmp_path, "svmlight", path)
    assert out["result"].startswith(f"ValueError: {path}, line 2: the line is longer than")
    assert out["grew_mb"] < 400  # the 64 MB read buffer and one larger one; before: 5.3 GiB


def test_svmlight_blank_lines_around_rows(tmp_path):
    path = _bomb(tmp_path / "rows.gz", b"\n\n \t\r\n# c\n", 128 * _MB, head=b"1 qid:1 1:1 2:2\n")
    out = _probe(tmp_path, "svmlight", path, chunk_bytes=8 * _MB)
    assert out["result"] == "RankingSplit"
    assert out["grew_mb"] < 120


def test_clicks_gzip_of_blank_lines(tmp_path):
    path = _bomb(tmp_path / "c.gz", b"\n", 256 * _MB, head=b"SessionId\tItemId\tTime\n")
    out = _probe(tmp_path, "clicks", path)
    assert out["result"] == "DataFrame"  # a header and no clicks
    assert out["grew_mb"] < 120  # before: past 6 GiB


def test_clicks_gzip_of_rows_hits_the_row_limit(tmp_path):
    head = b"SessionId\tItemId\tTime\n"
    path = _bomb(tmp_path / "r.gz", b"1\t1\t1396860669\n", 64 * _MB, head=head)
    out = _probe(tmp_path, "clicks", path, max_rows=2_000_000)
    assert out["result"].startswith(
        f"ValueError: {path}, line 2000002: the click log has more than max_rows=2000000"
    )
    assert out["grew_mb"] < 150  # 48 MB of clicks and one chunk; before: past 6 GiB


def test_qrels_one_unterminated_line(tmp_path):
    path = _bomb(tmp_path / "q.gz", b"d", 64 * _MB, head=b"q1 0 d1 1\nq1 0 ")
    out = _probe(tmp_path, "qrels", path)
    assert out["result"].startswith(f"ValueError: {path}, line 2: the line is longer than 4 MiB")
    assert out["grew_mb"] < 60
    assert out["seconds"] < 5  # before: quadratic copying of the growing line


def test_qrels_gzip_of_newlines(tmp_path):
    path = _bomb(tmp_path / "qn.gz", b"\n", 128 * _MB, head=b"q1 0 d1 1\n")
    out = _probe(tmp_path, "qrels", path)
    assert out["result"] == "Qrels"
    assert out["grew_mb"] < 60
    assert out["seconds"] < 30  # empty lines are skipped in C (was one Python step per line)
