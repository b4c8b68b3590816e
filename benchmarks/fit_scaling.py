"""Whole-fit cost as data grows: selrank's ranking losses against LightGBM's lambdarank (issue 29).

Four fits on the same MSLR-shaped data (``selrank.datasets.make_mslr_like``: 136 float32
features, grades 0-4), the same trees (``num_leaves`` 31, learning rate 0.1, ``--trees``
rounds, ``--threads`` LightGBM threads, default 1):

* ``lambdarank``: ``lightgbm.LGBMRanker(objective="lambdarank")`` (the anchor);
* ``default``: ``SelectiveRanker()`` (the listwise composite softmax);
* ``pairwise``: ``SelectiveRanker(loss="pairwise")`` (all pairs up to 128 documents per query
  on average, the top-32 pairs beyond: the estimator's default);
* ``weighted``: ``SelectiveRanker(loss="weighted_pairwise")`` (|ΔNDCG| weights, top-30 pairs).

Two sweeps, one table each:

1. **rows** ``--rows`` (default 10^5, 10^6, 10^7) at about 120 documents per query;
2. **documents per query** ``--docs`` (default 100, 1,000, 10,000: queries of exactly that size)
   at ``--docs-rows`` rows (default 10^6).

Every fit runs in a fresh subprocess (``--worker``) that loads the data from ``.npy`` files
written once per point and fits once:

* **CPU s** and **wall s** are measured around ``fit`` only, after the imports (CPU: all the
  process's threads);
* **peak RSS** is the child's ``ru_maxrss`` (from ``wait4``): the loaded data plus everything
  the fit allocated at its peak; ``data_rss_mb`` (the resident set after loading the data,
  before the fit, the same on every side) is in the JSON, and **above data** is peak minus that.

The sides take turns (round robin, the order reversed every repeat) so that the machine's load
hits them alike; medians over ``--repeats`` (default 2; 1 at 10^7 rows). ``selrank.fast.warm_up()``
fills the numba cache first, in another process (the cold start is ``cold_start.py``'s).
**Slope** is the least-squares slope of log(time) and log(peak RSS) against log(rows) (or
log(documents per query)), per side. The load average before and after each point is in the JSON.

Run: ``python benchmarks/fit_scaling.py`` (about an hour on 2 cores, ~10 GB of memory at 10^7
rows and 8 GB of disk in ``--data-dir``), ``--part rows|docs``, or ``--smoke`` (seconds, tiny
data, JSON to ``$SELRANK_SMOKE_DIR``). Writes ``benchmarks/results/fit_scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._smoke import smoke_out  # noqa: E402

THREADS = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}
SIDES = ("lambdarank", "default", "pairwise", "weighted")
LOSS = {"default": None, "pairwise": "pairwise", "weighted": "weighted_pairwise"}


# -- data ----------------------------------------------------------------------------------------
def data_dir(folder: Path, rows: int, docs: int | None, seed: int = 0) -> Path:
    """``X.npy`` (float32, C order), ``y.npy`` and ``g.npy`` (query sizes), written once."""
    name = f"mslr_{rows}" + ("" if docs is None else f"_docs{docs}")
    path = folder / name
    if (path / "done").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    from selrank.datasets import make_mslr_like

    t0 = time.perf_counter()
    if docs is None:
        X, y, g = make_mslr_like(rows, n_features=136, seed=seed)
    else:  # queries of exactly `docs` documents: the same generator, sizes cut evenly
        X, y, _ = make_mslr_like(rows, n_features=136, seed=seed, mean_docs_per_query=docs)
        n_q = max(1, rows // docs)
        X, y = X[: n_q * docs], y[: n_q * docs]
        g = np.full(n_q, docs, dtype=np.int64)
    np.save(path / "X.npy", np.ascontiguousarray(X, dtype=np.float32))
    np.save(path / "y.npy", np.asarray(y, dtype=np.float64))
    np.save(path / "g.npy", np.asarray(g, dtype=np.int64))
    del X, y, g
    (path / "done").write_text(f"{time.perf_counter() - t0:.1f} s\n")
    return path


# -- one fit in a fresh process ------------------------------------------------------------------
def worker(path: str, side: str, trees: int, threads: int) -> None:
    """One fit in this process; prints a JSON line (fit CPU and wall seconds, data RSS)."""
    X = np.load(os.path.join(path, "X.npy"))
    y = np.load(os.path.join(path, "y.npy"))
    g = np.load(os.path.join(path, "g.npy"))
    with open("/proc/self/status") as f:
        rss0 = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")) / 1024
    params = {
        "n_estimators": trees,
        "num_leaves": 31,
        "learning_rate": 0.1,
        "num_threads": threads,
    }
    if side == "lambdarank":  # imports before the clock: the fit only (cold_start.py has the rest)
        import lightgbm as lgb

        est = lgb.LGBMRanker(objective="lambdarank", verbosity=-1, **params)
    else:
        from selrank.estimators import SelectiveRanker

        loss = {} if LOSS[side] is None else {"loss": LOSS[side]}
        est = SelectiveRanker(verbosity=-1, **loss, **params)
    t0, w0 = time.process_time(), time.perf_counter()
    est.fit(X, y, group=g)
    out = {"cpu_s": time.process_time() - t0, "wall_s": time.perf_counter() - w0}
    out["data_rss_mb"] = rss0
    print("RESULT " + json.dumps(out), flush=True)


def child_result(cmd: list[str], what: str, threads: dict[str, str] = THREADS) -> dict:
    """Run ``cmd`` (this repository first on the path, with the environment ``threads``: one
    BLAS/OpenMP thread unless the fit sets its own): the JSON of its ``RESULT`` line plus its
    peak RSS (``wait4``). Output goes to files, so a talkative child never fills a pipe."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **threads)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        err.seek(0)
        text, error = out.read().decode(), err.read().decode()
    if status != 0:
        raise RuntimeError(f"{what} failed ({status}):\n{error[-3000:]}")
    line = next(ln for ln in text.splitlines() if ln.startswith("RESULT "))
    result = json.loads(line[len("RESULT ") :])
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result


def run_fit(path: Path, side: str, trees: int, threads: int) -> dict:
    """A fresh subprocess fits once: its result line plus its peak RSS."""
    cmd = [sys.executable, __file__, "--worker", str(path), side, str(trees), str(threads)]
    result = child_result(cmd, f"{side} fit on {path}")
    result["above_data_mb"] = result["peak_rss_mb"] - result["data_rss_mb"]
    return result


def point(path: Path, trees: int, threads: int, repeats: int, label: str) -> dict:
    """All sides at one data point, interleaved; medians and ratios to lambdarank."""
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {s: [] for s in SIDES}
    for r in range(repeats):
        order = SIDES if r % 2 == 0 else tuple(reversed(SIDES))
        for side in order:
            runs[side].append(run_fit(path, side, trees, threads))
            res = runs[side][-1]
            print(
                f"  {label:>22s} {side:10s} cpu {res['cpu_s']:8.1f} s  wall {res['wall_s']:8.1f} s  "
                f"peak {res['peak_rss_mb']:8.0f} MB  (data {res['data_rss_mb']:.0f} MB)",
                flush=True,
            )
    keys = ("cpu_s", "wall_s", "peak_rss_mb", "data_rss_mb", "above_data_mb")
    med = {s: {k: statistics.median(x[k] for x in v) for k in keys} for s, v in runs.items()}
    anchor = med["lambdarank"]
    ratios = {
        s: {
            "cpu": med[s]["cpu_s"] / anchor["cpu_s"],
            "wall": med[s]["wall_s"] / anchor["wall_s"],
            "peak_rss": med[s]["peak_rss_mb"] / anchor["peak_rss_mb"],
        }
        for s in SIDES
    }
    return {
        "trees": trees,
        "threads": threads,
        "repeats": repeats,
        "median": med,
        "ratio_to_lambdarank": ratios,
        "runs": runs,
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }


def slopes(points: list[dict], x_key: str) -> dict:
    """Least-squares slope of log(cpu s), log(wall s) and log(peak RSS) against log(x), per side."""
    if len(points) < 2:
        return {}
    x = np.log([p[x_key] for p in points])
    out = {}
    for side in SIDES:
        out[side] = {
            k: float(np.polyfit(x, np.log([p["median"][side][k] for p in points]), 1)[0])
            for k in ("cpu_s", "wall_s", "peak_rss_mb")
        }
    return out


def table(points: list[dict], x_key: str, x_name: str, slope: dict) -> str:
    lines = [
        f"| {x_name} | side | CPU s | × lambdarank | wall s | peak RSS MB | × lambdarank | above data MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        for side in SIDES:
            m, r = p["median"][side], p["ratio_to_lambdarank"][side]
            lines.append(
                f"| {p[x_key]:,} | {side} | {m['cpu_s']:.1f} | {r['cpu']:.2f} | {m['wall_s']:.1f} | "
                f"{m['peak_rss_mb']:.0f} | {r['peak_rss']:.2f} | {m['above_data_mb']:.0f} |"
            )
    if slope:
        lines.append("")
        lines.append(f"| log-log slope vs {x_name} | CPU s | wall s | peak RSS |")
        lines.append("|---|---|---|---|")
        for side in SIDES:
            s = slope[side]
            lines.append(
                f"| {side} | {s['cpu_s']:.2f} | {s['wall_s']:.2f} | {s['peak_rss_mb']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", nargs=4, metavar=("PATH", "SIDE", "TREES", "THREADS"))
    parser.add_argument("--part", choices=("rows", "docs", "all"), default="all")
    parser.add_argument("--rows", default="100000,1000000,10000000")
    parser.add_argument("--docs", default="100,1000,10000")
    parser.add_argument("--docs-rows", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--repeats-largest", type=int, default=1)
    parser.add_argument("--data-dir", default=None, help="where the .npy data go (kept)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/fit_scaling.json"))
    parser.add_argument("--smoke", action="store_true", help="(CI) tiny data, 2 trees")
    args = parser.parse_args(argv)
    if args.worker:
        path, side, trees, threads = args.worker
        worker(path, side, int(trees), int(threads))
        return 0
    if args.smoke:
        args.rows, args.docs, args.docs_rows = "2000,6000", "20,200", 4000
        args.trees, args.repeats, args.repeats_largest = 2, 1, 1
        args.out = str(smoke_out("fit_scaling"))
    temp = args.data_dir is None
    folder = Path(args.data_dir or tempfile.mkdtemp(prefix="selrank_fit_scaling_"))
    folder.mkdir(parents=True, exist_ok=True)
    result: dict = {
        "benchmark": "fit_scaling",
        "sides": {
            "lambdarank": "lightgbm.LGBMRanker(objective='lambdarank')",
            "default": "SelectiveRanker()",
            "pairwise": "SelectiveRanker(loss='pairwise')",
            "weighted": "SelectiveRanker(loss='weighted_pairwise')",
        },
        "features": 136,
        "trees": args.trees,
        "threads": args.threads,
        "smoke": args.smoke,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "git_head": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
    }
    try:
        import lightgbm

        result["lightgbm"] = lightgbm.__version__
        # fill the numba cache of every kernel (a tiny fit would stay on the generic path)
        subprocess.run(
            [sys.executable, "-c", "import selrank.fast as f; f.warm_up(torch=False)"],
            env=dict(os.environ, PYTHONPATH=str(ROOT), **THREADS),
            check=True,
        )
        if args.part in ("rows", "all"):
            sizes = [int(s) for s in args.rows.split(",")]
            pts = []
            for rows in sizes:
                path = data_dir(folder, rows, None)
                reps = (
                    args.repeats_largest if rows == max(sizes) and len(sizes) > 1 else args.repeats
                )
                p = point(path, args.trees, args.threads, reps, f"{rows:,} rows")
                p["rows"] = rows
                p["queries"] = int(np.load(path / "g.npy").size)
                pts.append(p)
            result["rows_sweep"] = pts
            result["rows_slopes"] = slopes(pts, "rows")
            print(table(pts, "rows", "rows", result["rows_slopes"]), flush=True)
        if args.part in ("docs", "all"):
            pts = []
            for docs in [int(d) for d in args.docs.split(",")]:
                path = data_dir(folder, args.docs_rows, docs)
                p = point(path, args.trees, args.threads, args.repeats, f"{docs:,} docs/query")
                p["docs_per_query"] = docs
                p["rows"] = int(np.load(path / "y.npy", mmap_mode="r").shape[0])
                pts.append(p)
            result["docs_sweep"] = pts
            result["docs_slopes"] = slopes(pts, "docs_per_query")
            print(table(pts, "docs_per_query", "docs per query", result["docs_slopes"]), flush=True)
    finally:
        if temp:
            shutil.rmtree(folder, ignore_errors=True)
    out = Path(args.out)
    if not args.smoke and out.exists() and args.part != "all":  # keep the other sweep's table
        old = json.loads(out.read_text())
        for key in ("rows_sweep", "rows_slopes", "docs_sweep", "docs_slopes"):
            if key not in result and key in old:
                result[key] = old[key]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
