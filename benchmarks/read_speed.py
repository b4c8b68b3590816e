"""Read speed and peak memory of ``selrank.datasets.read_svmlight`` on a large synthetic file.

    python benchmarks/read_speed.py [--rows 200000] [--features 136] [--gzip] [--sklearn] [--out F.json]

Writes an MSLR-shaped file (``make_mslr_like`` + ``write_svmlight``, dense lines as in
MSLR-WEB30K) to a temporary folder, then reads it in a fresh process per measurement so that
peak resident memory (``VmHWM``, Linux) belongs to that read alone. The compiled parser is loaded
(from numba's cache) on a tiny file before the clock starts; the first-ever compilation is a
one-off of a few seconds and is not part of the read speed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time, pathlib, tempfile
import numpy as np
from selrank.datasets import read_svmlight
path, reader = sys.argv[1], sys.argv[2]

def high_water():
    # VmHWM: this process's peak resident memory (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

warm = pathlib.Path(tempfile.mkdtemp()) / "warm.txt"
warm.write_text("0 qid:1 1:1\n")
read_svmlight(warm)
if reader == "sklearn":
    from sklearn.datasets import load_svmlight_file
base = high_water()
t = time.perf_counter()
if reader == "selrank":
    X = read_svmlight(path).X
else:
    X = load_svmlight_file(path, query_id=True)[0]
    X = X.data  # CSR values: the bulk of its memory
seconds = time.perf_counter() - t
peak = high_water()
print(json.dumps({"seconds": seconds, "peak_rss": peak, "base_rss": base, "out_bytes": X.nbytes}))
"""


def measure(path: Path, reader: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), reader], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--gzip", action="store_true", help="also time a gzip-compressed copy")
    parser.add_argument("--sklearn", action="store_true", help="also time scikit-learn's reader")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="also write the rows to this JSON file")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) 2,000 rows x 20 features, the gzip copy too, once",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.features, args.repeat, args.gzip = 2_000, 20, 1, True
        args.out = str(smoke_out("read_speed"))

    from selrank.datasets import make_mslr_like, write_svmlight

    with tempfile.TemporaryDirectory() as tmp:
        data = make_mslr_like(args.rows, args.features, seed=0)
        files = {"plain": Path(tmp) / "mslr_like.txt"}
        t = time.perf_counter()
        write_svmlight(files["plain"], data.X, data.y, data.qid)
        write_s = time.perf_counter() - t
        if args.gzip:
            files["gzip"] = Path(tmp) / "mslr_like.txt.gz"
            write_svmlight(files["gzip"], data.X, data.y, data.qid)
        mb = files["plain"].stat().st_size / 1e6
        del data
        print(
            f"{args.rows:,} rows x {args.features} features: {mb:.0f} MB of text, "
            f"written in {write_s:.1f} s ({mb / write_s:.0f} MB/s)"
        )
        runs = [(name, "selrank") for name in files]
        if args.sklearn:
            runs.append(("plain", "sklearn"))
        results = []
        for name, reader in runs:
            best = min(
                (measure(files[name], reader) for _ in range(args.repeat)),
                key=lambda r: r["seconds"],
            )
            row = {
                "file": name,
                "reader": reader,
                "text_MB": round(mb, 1),
                "seconds": round(best["seconds"], 2),
                "MB_per_s": round(mb / best["seconds"], 1),
                "peak_rss_MB": round(best["peak_rss"] / 1e6),
                "rss_before_MB": round(best["base_rss"] / 1e6),
                "output_MB": round(best["out_bytes"] / 1e6),
            }
            results.append(row)
            print(json.dumps(row))
    if args.out:
        doc = {"benchmark": "read_speed", "rows": args.rows, "features": args.features}
        Path(args.out).write_text(json.dumps({**doc, "results": results}, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
