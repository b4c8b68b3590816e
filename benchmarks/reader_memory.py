"""Peak memory and time of the file readers on ordinary files and on hostile ones (issue 20).

    python benchmarks/reader_memory.py [--clicks 2000000] [--bomb-mb 1024]

Each measurement runs in a fresh process (the compiled parsers are loaded on a tiny file
first) and reports the growth of the process's peak resident memory (``VmHWM``) during the
read, so polars', numba's and NumPy's allocations all count. Cases:

* ``clicks``: a ``SessionId ItemId Time`` log of ``--clicks`` rows (``read_session_clicks``);
* ``clicks-blank-bomb``: a gzip of a header and ``--bomb-mb`` MB of blank lines;
* ``clicks-row-bomb``: a gzip of ``--bomb-mb`` MB of rows, read with the default row limit;
* ``svmlight-newline-bomb``: a gzip of ``--bomb-mb`` MB of newlines (``read_svmlight``);
* ``svmlight-long-line``: a gzip of one unterminated line of ``--bomb-mb`` MB;
* ``qrels-long-line``: the same for ``read_qrels``.

Writes ``benchmarks/results/reader_memory.json`` (``--smoke``: seconds, to a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

CHILD = r"""
import json, sys, time, pathlib, tempfile
from selrank.datasets import read_session_clicks, read_svmlight
from selrank.metrics.trec import read_qrels

def high_water():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

reader, path = sys.argv[1], sys.argv[2]
warm = pathlib.Path(tempfile.mkdtemp())
(warm / "w.txt").write_text("0 qid:1 1:1\n")
(warm / "w.clicks").write_text("SessionId\tItemId\tTime\n1\t2\t1396860669\n")
read_svmlight(warm / "w.txt"), read_session_clicks(warm / "w.clicks")
fn = {"clicks": read_session_clicks, "svmlight": read_svmlight, "qrels": read_qrels}[reader]
base = high_water()
t = time.perf_counter()
try:
    out = fn(path)
    result = type(out).__name__ + (f" of {out.height} rows" if hasattr(out, "height") else "")
except ValueError as exc:
    msg = str(exc)
    result = "ValueError: " + msg[len(path):].lstrip(",: ")[:90]
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "grew_MB": (high_water() - base) / 1e6,
                  "base_MB": base / 1e6, "result": result}))
"""

_MB = 1 << 20


def _bomb(path: Path, unit: bytes, n_mb: int, head: bytes = b"") -> Path:
    block = unit * (_MB // len(unit))
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        fh.write(z.compress(head))
        for _ in range(n_mb):
            fh.write(z.compress(block))
        fh.write(z.flush())
    return path


def _clicks(path: Path, n: int) -> Path:
    rng = np.random.default_rng(0)
    session = np.sort(rng.integers(0, n // 5, n))
    item = rng.integers(0, 50_000, n)
    t = 1396860669.0 + np.cumsum(rng.integers(1, 3000, n)) / 1000
    with open(path, "w") as fh:
        fh.write("SessionId\tItemId\tTime\n")
        for lo in range(0, n, 500_000):
            hi = min(n, lo + 500_000)
            fh.write(
                "".join(
                    f"{a}\t{b}\t{c:.3f}\n"
                    for a, b, c in zip(
                        session[lo:hi].tolist(), item[lo:hi].tolist(), t[lo:hi].tolist()
                    )
                )
            )
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=2_000_000)
    parser.add_argument("--bomb-mb", type=int, default=1024)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "reader_memory.json")
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) 2,000 clicks, 1 MB bombs, one case per reader",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.clicks, args.bomb_mb, args.out = 2_000, 1, str(smoke_out("reader_memory"))
    header = b"SessionId\tItemId\tTime\n"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cases = [
            ("clicks", "clicks", lambda: _clicks(d / "clicks.txt", args.clicks)),
            (
                "clicks-blank-bomb",
                "clicks",
                lambda: _bomb(d / "cb.gz", b"\n", args.bomb_mb, header),
            ),
            (
                "clicks-row-bomb",
                "clicks",
                lambda: _bomb(d / "cr.gz", b"1\t1\t1396860669\n", args.bomb_mb, header),
            ),
            ("svmlight-newline-bomb", "svmlight", lambda: _bomb(d / "sn.gz", b"\n", args.bomb_mb)),
            (
                "svmlight-long-line",
                "svmlight",
                lambda: _bomb(d / "sl.gz", b"1", args.bomb_mb, b"1 qid:1 1:1\n2 qid:1 1:"),
            ),
            (
                "qrels-long-line",
                "qrels",
                lambda: _bomb(d / "ql.gz", b"d", args.bomb_mb, b"q1 0 d1 1\nq1 0 "),
            ),
        ]
        if args.smoke:  # each reader once: every case runs the same measuring code
            cases = [
                c for c in cases if c[0] in ("clicks", "svmlight-long-line", "qrels-long-line")
            ]
        for name, reader, make in cases:
            path = make()
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, reader, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            row = {
                "case": name,
                "file_MB": round(path.stat().st_size / 1e6, 2),
                "seconds": round(r["seconds"], 2),
                "peak_growth_MB": round(r["grew_MB"]),
                "result": r["result"],
            }
            rows.append(row)
            print(
                f"{name:24s} {row['file_MB']:8.2f} MB on disk  {row['seconds']:6.2f} s  "
                f"+{row['peak_growth_MB']:4d} MB  {row['result']}"
            )
            path.unlink()
    out = {
        "params": {"clicks": args.clicks, "bomb_MB_expanded": args.bomb_mb},
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
