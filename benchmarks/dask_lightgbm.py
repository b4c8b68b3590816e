"""A LightGBM fit with a selrank objective on a two-worker Dask ``LocalCluster`` against one process.

Data: MSLR-shaped rows (``selrank.datasets.make_mslr_like``: 136 float32 features, about 120
documents per query, grades 0-4; the ``.npy`` files of ``benchmarks/fit_scaling.py``, written
once to ``--data-dir``), ``--rows`` rows (default 10^7).

* **Dask**: ``distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``;
  the rows are cut into ``--partitions`` blocks at query boundaries, and each block is read
  from the ``.npy`` file by the worker that holds it (nothing passes through the client but
  the labels, for the intercept). ``lightgbm.DaskLGBMRanker`` with the objective
  ``lightgbm_objective("listwise")`` (the ranker's default loss) is fitted through
  :func:`selrank.gbdt.dask.lightgbm_dask_fit`, ``num_threads=1`` on each worker.
* **One process**: ``lightgbm.LGBMRanker`` with the same objective and intercept
  (``init_score``), ``num_threads=2`` (the same two cores), in a fresh subprocess.

Measured: the wall seconds of the fit call; the CPU seconds of the fit (Dask: the two workers'
CPU time during the fit, from ``resource.getrusage`` on each worker before and after; one
process: its own); the peak resident set of each worker process (``ru_maxrss``: data block,
LightGBM's Dataset and the fit) and of the single process (data + fit). The two setups take
turns ``--repeats`` times. The load average is recorded.

Run: ``python benchmarks/dask_lightgbm.py`` (about 20 minutes on 2 cores at 10^7 rows, ~12 GB
of memory) or ``--smoke`` (seconds, tiny data, JSON to ``$SELRANK_SMOKE_DIR``). Writes
``benchmarks/results/dask_lightgbm.json``.
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
from benchmarks.fit_scaling import THREADS, child_result, data_dir  # noqa: E402

LGB_PARAMS = {"num_leaves": 31, "learning_rate": 0.1, "verbosity": -1}


def objective():
    from selrank.gbdt import lightgbm_objective

    return lightgbm_objective("listwise")


def cuts(sizes: np.ndarray, parts: int) -> list[tuple[int, int, int, int]]:
    """``parts`` blocks of about equal rows ending on query boundaries: (row0, row1, q0, q1)."""
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])
    qcuts = np.searchsorted(offsets, np.linspace(0, n, parts + 1)[1:-1]).tolist()
    qb = [0, *qcuts, sizes.size]
    return [(int(offsets[a]), int(offsets[b]), a, b) for a, b in zip(qb[:-1], qb[1:]) if b > a]


def _rows(path: str, name: str, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of ``path/name`` (read by the worker that holds the block)."""
    return np.array(np.load(os.path.join(path, name), mmap_mode="r")[start:stop])


def _usage() -> dict:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": r.ru_utime + r.ru_stime, "maxrss_mb": r.ru_maxrss / 1024}


def dask_fit(client, path: Path, trees: int, parts: int) -> dict:
    """One fit on the cluster: wall and CPU seconds, each worker's peak RSS."""
    import dask
    import dask.array as da
    import lightgbm as lgb

    from selrank.gbdt.dask import lightgbm_dask_fit

    sizes = np.load(path / "g.npy")
    n_feat = int(np.load(path / "X.npy", mmap_mode="r").shape[1])
    blocks = cuts(sizes, parts)
    load = dask.delayed(_rows, pure=True)
    X = da.concatenate(
        [
            da.from_delayed(load(str(path), "X.npy", a, b), (b - a, n_feat), np.float32)
            for a, b, _, _ in blocks
        ]
    )
    y = da.concatenate(
        [
            da.from_delayed(load(str(path), "y.npy", a, b), (b - a,), np.float64)
            for a, b, _, _ in blocks
        ]
    )
    g = da.from_array(sizes, chunks=((tuple(q1 - q0 for _, _, q0, q1 in blocks)),))
    X, y = client.persist([X, y])  # the blocks read on the workers, before the clock
    client.wait_for_workers(2)
    from distributed import wait

    wait([X, y])
    before = client.run(_usage)
    model = lgb.DaskLGBMRanker(
        objective=objective(), n_estimators=trees, num_threads=1, **LGB_PARAMS
    )
    w0 = time.perf_counter()
    lightgbm_dask_fit(model, X, y, group=g)
    wall = time.perf_counter() - w0
    after = client.run(_usage)
    workers = sorted(after)
    out = {
        "wall_s": wall,
        "cpu_s": sum(after[w]["cpu_s"] - before[w]["cpu_s"] for w in workers),
        "worker_peak_rss_mb": [after[w]["maxrss_mb"] for w in workers],
        "worker_rows": [b - a for a, b, _, _ in blocks],
    }
    del X, y
    return out


def single_worker(path: str, trees: int, threads: int) -> None:
    import lightgbm as lgb

    X = np.load(os.path.join(path, "X.npy"))
    y = np.load(os.path.join(path, "y.npy"))
    g = np.load(os.path.join(path, "g.npy"))
    obj = objective()
    model = lgb.LGBMRanker(objective=obj, n_estimators=trees, num_threads=threads, **LGB_PARAMS)
    t0, w0 = time.process_time(), time.perf_counter()
    obj.fit_intercept(y, group=g)
    model.fit(X, y, group=g, init_score=np.full(y.size, float(obj.intercept_)))
    out = {"cpu_s": time.process_time() - t0, "wall_s": time.perf_counter() - w0}
    print("RESULT " + json.dumps(out), flush=True)


def single_fit(path: Path, trees: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--single", str(path), str(trees), str(threads)]
    return child_result(cmd, "single-process fit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--single", nargs=3, metavar=("PATH", "TREES", "THREADS"))
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", default=None, help="where the .npy data go (kept)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/dask_lightgbm.json"))
    parser.add_argument("--smoke", action="store_true", help="(CI) tiny data, 2 trees")
    args = parser.parse_args(argv)
    if args.single:
        path, trees, threads = args.single
        single_worker(path, int(trees), int(threads))
        return 0
    if args.smoke:
        args.rows, args.trees, args.repeats = 4000, 2, 1
        args.out = str(smoke_out("dask_lightgbm"))
    os.environ.update(THREADS)
    temp = args.data_dir is None
    folder = Path(args.data_dir or tempfile.mkdtemp(prefix="selrank_dask_lgb_"))
    folder.mkdir(parents=True, exist_ok=True)
    import dask
    import distributed
    import lightgbm

    result: dict = {
        "benchmark": "dask_lightgbm",
        "rows": args.rows,
        "trees": args.trees,
        "partitions": args.partitions,
        "objective": "lightgbm_objective('listwise')",
        "smoke": args.smoke,
        "python": platform.python_version(),
        "lightgbm": lightgbm.__version__,
        "dask": dask.__version__,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
        "git_head": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
    }
    try:
        path = data_dir(folder, args.rows, None)
        runs: dict[str, list[dict]] = {"dask": [], "single": []}
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                memory_limit=0,  # (no spilling or pausing: the peak is what is measured)
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            client.run(lambda: os.environ.update(THREADS))
            for r in range(args.repeats):
                for side in ("dask", "single") if r % 2 == 0 else ("single", "dask"):
                    if side == "dask":
                        res = dask_fit(client, path, args.trees, args.partitions)
                    else:
                        res = single_fit(path, args.trees, 2)
                    runs[side].append(res)
                    print(f"  {side:6s} {res}", flush=True)
                    client.restart()  # fresh worker processes: each peak is one fit's
        med = {
            "dask": {
                "wall_s": statistics.median(r["wall_s"] for r in runs["dask"]),
                "cpu_s": statistics.median(r["cpu_s"] for r in runs["dask"]),
                "worker_peak_rss_mb": max(max(r["worker_peak_rss_mb"]) for r in runs["dask"]),
            },
            "single": {
                k: statistics.median(r[k] for r in runs["single"])
                for k in ("wall_s", "cpu_s", "peak_rss_mb")
            },
        }
        result.update(runs=runs, median=med, load_after=os.getloadavg())
        result["wall_ratio_dask_to_single"] = med["dask"]["wall_s"] / med["single"]["wall_s"]
        result["memory_ratio_worker_to_single"] = (
            med["dask"]["worker_peak_rss_mb"] / med["single"]["peak_rss_mb"]
        )
        print(
            f"| setup | wall s | CPU s | peak RSS MB |\n|---|---|---|---|\n"
            f"| one process, 2 threads | {med['single']['wall_s']:.1f} | {med['single']['cpu_s']:.1f} | "
            f"{med['single']['peak_rss_mb']:.0f} |\n"
            f"| LocalCluster, 2 workers x 1 thread | {med['dask']['wall_s']:.1f} | "
            f"{med['dask']['cpu_s']:.1f} | {med['dask']['worker_peak_rss_mb']:.0f} per worker |",
            flush=True,
        )
    finally:
        if temp:
            shutil.rmtree(folder, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
