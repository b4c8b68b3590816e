"""Read speed and peak memory of ``selrank.datasets.read_svmlight`` on a large synthetic file.

    python benchmarks/read_speed.py [--rows 200000] [--features 136] [--gzip] [--sklearn] [--out F.json]
    python benchmarks/read_speed.py --cache --rows 1200192 --repeat 3   # parse vs cached load

``--cache`` times, instead, ``read_svmlight`` (parsing the text) against the second load of
``read_svmlight_cached`` (the memory-mapped, checksum-verified ``.npy`` cache filled by a first
load that is not timed), interleaved (parse, cached, parse, cached, ...) each in a fresh
process, and writes ``benchmarks/results/read_speed_cache.json`` with the load average.

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
elif reader.startswith("cached:"):
    from selrank.datasets import read_svmlight_cached
    X = read_svmlight_cached(path, cache=reader.split(":", 1)[1]).X
else:
    X = load_svmlight_file(path, query_id=True)[0]
    X = X.data  # CSR values: the bulk of its memory
seconds = time.perf_counter() - t
peak = high_water()
print(json.dumps({"seconds": seconds, "peak_rss": peak, "base_rss": base, "out_bytes": X.nbytes}))
"""


def measure(path: Path, reader: str, pythonpath: str | None = None) -> dict:
    import os

    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), reader],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--gzip", action="store_true", help="also time a gzip-compressed copy")
    parser.add_argument("--sklearn", action="store_true", help="also time scikit-learn's reader")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--cache", action="store_true", help="time parsing against the cache's second load"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON: the rows (with --cache: the comparison)"
    )
    parser.add_argument(
        "--before",
        metavar="PYTHONPATH",
        help="with --cache: also time the cache of another selrank (e.g. an older version "
        "extracted with `git archive <commit> selrank | tar -x -C DIR`), interleaved",
    )
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
    if args.cache:
        return cache_speed(args)

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


def cache_speed(args) -> None:
    """Parse vs second cached load, interleaved in fresh processes; prints and writes JSON."""
    import os
    import platform
    import shutil
    import statistics

    from selrank.datasets import make_mslr_like, write_svmlight

    out = args.out or Path(__file__).resolve().parent / "results" / "read_speed_cache.json"
    with tempfile.TemporaryDirectory(prefix="selrank_read_speed_") as tmp:
        path = Path(tmp) / "mslr_like.txt"
        cache = Path(tmp) / "cache"
        data = make_mslr_like(args.rows, args.features, seed=0)
        t = time.perf_counter()
        write_svmlight(path, data.X, data.y, data.qid)
        write_s = time.perf_counter() - t
        del data
        mb = path.stat().st_size / 1e6
        print(
            f"{args.rows:,} rows x {args.features}: {mb:.0f} MB of text (written in {write_s:.0f} s)"
        )
        loads = [os.getloadavg()[0]]
        first = measure(path, f"cached:{cache}")  # parse + write the cache (not compared)
        print(json.dumps({"first_load_with_cache_write_s": round(first["seconds"], 2)}))
        steps = [("parse", "selrank", None), ("cached", f"cached:{cache}", None)]
        if args.before:
            before_cache = Path(tmp) / "cache_before"
            measure(path, f"cached:{before_cache}", args.before)  # fill the older cache
            steps.append(("cached_before", f"cached:{before_cache}", args.before))
        runs: dict[str, list[dict]] = {name: [] for name, _, _ in steps}
        for _ in range(args.repeat):
            for name, reader, pythonpath in steps:
                r = measure(path, reader, pythonpath)
                runs[name].append(r)
                loads.append(os.getloadavg()[0])
                print(json.dumps({"step": name, "seconds": round(r["seconds"], 3)}), flush=True)
        entry_mb = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) / 1e6
        shutil.rmtree(cache, ignore_errors=True)
    sec = {k: [r["seconds"] for r in v] for k, v in runs.items()}
    ratio_med = statistics.median(sec["parse"]) / statistics.median(sec["cached"])
    ratio_best = min(sec["parse"]) / min(sec["cached"])
    doc = {
        "benchmark": "read_speed --cache",
        "command": "python benchmarks/read_speed.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_1min": {"min": min(loads), "max": max(loads), "samples": loads},
        "rows": args.rows,
        "features": args.features,
        "text_MB": round(mb, 1),
        "cache_entry_MB": round(entry_mb, 1),
        "first_load_with_cache_write_s": round(first["seconds"], 2),
        "parse_s": [round(x, 3) for x in sec["parse"]],
        "cached_second_load_s": [round(x, 3) for x in sec["cached"]],
        "parse_peak_rss_MB": [round(r["peak_rss"] / 1e6) for r in runs["parse"]],
        "cached_peak_rss_MB": [round(r["peak_rss"] / 1e6) for r in runs["cached"]],
        "ratio_median": round(ratio_med, 1),
        "ratio_best": round(ratio_best, 1),
        **(
            {
                "before_pythonpath": args.before,
                "cached_before_second_load_s": [round(x, 3) for x in sec["cached_before"]],
                "ratio_median_before": round(
                    statistics.median(sec["parse"]) / statistics.median(sec["cached_before"]), 1
                ),
            }
            if args.before
            else {}
        ),
        "note": "each measurement a fresh process; parse and cached load interleaved; the "
        "cached load maps the arrays and verifies every byte's checksum",
    }
    print(
        f"parse {statistics.median(sec['parse']):.2f} s, cached second load "
        f"{statistics.median(sec['cached']):.2f} s (medians): {ratio_med:.1f}x "
        f"(best against best {ratio_best:.1f}x); load average {min(loads):.1f}-{max(loads):.1f}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
