"""CPU seconds of a small ``selrank train --data`` with OpenMP's default threads vs selrank's
default (issue 29: physical cores, one thread per 20,000 training rows).

    python benchmarks/threads.py [--rows 6000] [--features 46] [--repeat 2] [--resamples 1000]

Writes one LETOR-style folder (``train.txt`` / ``vali.txt`` / ``test.txt``, MQ2008-like size by
default) and runs the whole command in a fresh process per measurement, interleaved:

* ``openmp``: ``--backend-param num_threads=0`` (LightGBM's own default, one thread per logical
  CPU, for the selrank model and both LightGBM baselines), what every run did before;
* ``default``: no thread option (selrank's default: 1 thread below 40,000 training rows).

CPU seconds are the child's user + system time (``resource.getrusage(RUSAGE_CHILDREN)``).
Prints a table and writes ``benchmarks/results/threads.json`` with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "threads.json"
SETTINGS = {"openmp": ["--backend-param", "num_threads=0"], "default": []}


def write_folder(root: Path, rows: int, features: int) -> int:
    from selrank.datasets import make_mslr_like, write_svmlight

    data = make_mslr_like(rows, features, mean_docs_per_query=40, seed=0)
    part = np.repeat(np.arange(data.n_queries) % 5, data.group)
    root.mkdir(parents=True)
    for name, keep in (("train", part < 3), ("vali", part == 3), ("test", part == 4)):
        write_svmlight(root / f"{name}.txt", data.X[keep], data.y[keep], data.qid[keep])
    return int((part < 3).sum())


def run(root: Path, extra: list[str], resamples: int = 1000) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "selrank",
            "train",
            "--data",
            str(root),
            "--no-cache",
            "--n-resamples",
            str(resamples),
            *extra,
        ],
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "wall_s": wall, "load_1min": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6_000)
    parser.add_argument("--features", type=int, default=46)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--resamples", type=int, default=1000, help="--n-resamples of the run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) 600 rows, 8 features, once, 100 resamples; JSON to $SELRANK_SMOKE_DIR",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.features, args.repeat, args.resamples = 600, 8, 1, 100
        args.out = smoke_out("threads")
    with tempfile.TemporaryDirectory(prefix="selrank_threads_") as tmp:
        root = Path(tmp) / "letor"
        train_rows = write_folder(root, args.rows, args.features)
        run(root, ["--no-baseline", "--backend-param", "n_estimators=2"])  # warm numba's cache
        runs: dict[str, list[dict]] = {k: [] for k in SETTINGS}
        for _ in range(args.repeat):
            for name, extra in SETTINGS.items():
                r = run(root, extra, args.resamples)
                runs[name].append(r)
                print(json.dumps({"setting": name, **{k: round(v, 2) for k, v in r.items()}}))
    med = {
        k: {m: statistics.median(r[m] for r in v) for m in ("cpu_s", "wall_s")}
        for k, v in runs.items()
    }
    loads = [r["load_1min"] for v in runs.values() for r in v]
    doc = {
        "benchmark": "threads",
        "command": "python benchmarks/threads.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "rows": args.rows,
        "train_rows": train_rows,
        "features": args.features,
        "settings": {k: " ".join(v) or "(none)" for k, v in SETTINGS.items()},
        "n_resamples": args.resamples,
        "runs": runs,
        "median": med,
        "cpu_ratio_openmp_over_default": round(med["openmp"]["cpu_s"] / med["default"]["cpu_s"], 2),
        "load_average_1min": {"min": min(loads), "max": max(loads)},
    }
    print(f"{'setting':10s}{'CPU s':>10s}{'wall s':>10s}")
    for k, m in med.items():
        print(f"{k:10s}{m['cpu_s']:10.1f}{m['wall_s']:10.1f}")
    print(
        f"CPU openmp / default: {doc['cpu_ratio_openmp_over_default']}x; load {min(loads):.1f}-{max(loads):.1f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
