"""Speed and memory of the metric-weighted pairwise loss: whole fits against LightGBM's lambdarank.

**Fits** (the default; issue 29): ``SelectiveRanker(loss="weighted_pairwise")`` (LightGBM
backend, |ΔNDCG| weights, ``lambdarank_norm``, top-30 pairs: LightGBM's own truncation)
against ``lightgbm.LGBMRanker`` (``objective="lambdarank"``) on the same MSLR-shaped data
(``selrank.datasets.make_mslr_like``: 136 float32 features, about 120 documents per query,
grades 0-4) at 10^5, 3·10^5 and 10^6 rows, the same trees (``num_leaves`` 31, learning rate
0.1, one LightGBM thread). Every fit runs in a fresh subprocess (``--worker``) that loads the
data from a ``.npy`` cache and fits once, so that

* **CPU s** is the fit's own CPU time (all its threads: selrank evaluates query blocks in a
  small thread pool) and **wall s** its elapsed time, both measured around ``fit`` only;
* **peak RSS** is the child's ``ru_maxrss`` (data loaded + the fit at its peak: the data
  alone is the same on both sides, ``data_rss_mb`` in the JSON).

The two sides alternate fit by fit (round robin over ``--repeats``), so that the machine's
load hits them alike; the table gives medians and the ratio selrank / lambdarank of the
medians. The numba cache is warmed in a first, untimed fit (the cold start is
``benchmarks/cold_start.py``'s). The load average before and after is in the JSON.

**Calls** (``--calls``; issue 21): ``bound.grad_hess(pred)`` of the weighted loss against the
unweighted :class:`~selrank.losses.Pairwise` with the same link and ``pair_method``,
interleaved call by call, at 120 and 1,000 documents per query (target: at most 1.5x).

Run: ``python benchmarks/weighted_pairwise_speed.py`` (about 15 minutes on 2 cores) or
``--smoke`` (seconds, tiny data, JSON to a temporary file). Writes
``benchmarks/results/weighted_pairwise_fits.json`` (fits) or
``benchmarks/results/weighted_pairwise_speed.json`` (``--calls``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fit_scaling import child_result  # noqa: E402

THREADS = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}
os.environ.update({k: os.environ.get(k, v) for k, v in THREADS.items()})
TREES = {100_000: 100, 300_000: 50, 1_000_000: 50}


# -- whole fits --------------------------------------------------------------------------------
def data_file(folder: Path, rows: int) -> Path:
    """``X`` (float32), ``y`` and the query sizes of ``rows`` MSLR-shaped rows, cached as .npz."""
    path = folder / f"mslr_like_{rows}.npz"
    if not path.exists():
        from selrank.datasets import make_mslr_like

        X, y, g = make_mslr_like(rows, n_features=136, seed=0)
        np.savez(path, X=np.asarray(X, dtype=np.float32), y=np.asarray(y), g=np.asarray(g))
    return path


def worker(path: str, side: str, trees: int) -> None:
    """One fit in this process; prints a JSON line (fit CPU and wall seconds, RSS before)."""
    import resource

    with np.load(path) as f:
        X, y, g = f["X"], f["y"], f["g"]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    params = {"n_estimators": trees, "num_leaves": 31, "learning_rate": 0.1, "num_threads": 1}
    t0, w0 = time.process_time(), time.perf_counter()
    if side == "lambdarank":
        import lightgbm as lgb

        lgb.LGBMRanker(objective="lambdarank", verbosity=-1, **params).fit(X, y, group=g)
    else:
        from selrank.estimators import SelectiveRanker

        SelectiveRanker(loss="weighted_pairwise", verbosity=-1, **params).fit(X, y, group=g)
    out = {"cpu_s": time.process_time() - t0, "wall_s": time.perf_counter() - w0}
    out["data_rss_mb"] = rss0
    print("RESULT " + json.dumps(out), flush=True)


def run_fit(path: Path, side: str, trees: int) -> dict:
    """A fresh subprocess fits once; its result line plus its peak RSS (``wait4``)."""
    cmd = [sys.executable, __file__, "--worker", str(path), side, str(trees)]
    # (this process set the thread variables' defaults; the child inherits them as they are)
    return child_result(cmd, f"{side} fit", threads={})


def fits(args) -> dict:
    sizes = [int(s) for s in args.rows.split(",")]
    folder = Path(args.data_dir or tempfile.mkdtemp(prefix="selrank_wp_"))
    folder.mkdir(parents=True, exist_ok=True)
    rows_out = []
    load_before = os.getloadavg()
    for rows in sizes:
        trees = args.trees or TREES.get(rows, 50)
        path = data_file(folder, rows)
        run_fit(path, "selrank", 2)  # numba cache warm (the kernel of this loss compiled once)
        runs: dict[str, list[dict]] = {"selrank": [], "lambdarank": []}
        for r in range(args.repeats):
            for side in ("selrank", "lambdarank") if r % 2 == 0 else ("lambdarank", "selrank"):
                runs[side].append(run_fit(path, side, trees))
                print(f"  {rows:>9,} rows {side:10s} {runs[side][-1]}", flush=True)
        med = {
            side: {
                k: statistics.median(x[k] for x in v)
                for k in ("cpu_s", "wall_s", "peak_rss_mb", "data_rss_mb")
            }
            for side, v in runs.items()
        }
        row = {
            "rows": rows,
            "trees": trees,
            "selrank": med["selrank"],
            "lambdarank": med["lambdarank"],
            "cpu_ratio": med["selrank"]["cpu_s"] / med["lambdarank"]["cpu_s"],
            "wall_ratio": med["selrank"]["wall_s"] / med["lambdarank"]["wall_s"],
            "rss_ratio": med["selrank"]["peak_rss_mb"] / med["lambdarank"]["peak_rss_mb"],
            "runs": runs,
        }
        row["target_met"] = row["cpu_ratio"] <= 1.1 and row["rss_ratio"] <= 1.1
        rows_out.append(row)
    print(
        f"\n{'rows':>10} {'trees':>5} {'selrank CPU s':>13} {'lambdarank':>10} {'ratio':>6}"
        f" {'selrank MB':>10} {'lambdarank':>10} {'ratio':>6}"
    )
    for row in rows_out:
        s, lr = row["selrank"], row["lambdarank"]
        print(
            f"{row['rows']:>10,} {row['trees']:>5} {s['cpu_s']:>13.1f} {lr['cpu_s']:>10.1f}"
            f" {row['cpu_ratio']:>6.2f} {s['peak_rss_mb']:>10.0f} {lr['peak_rss_mb']:>10.0f}"
            f" {row['rss_ratio']:>6.2f}"
        )
    return {"rows": rows_out, "load_before": load_before, "load_after": os.getloadavg()}


# -- kernel calls (issue 21) -------------------------------------------------------------------
def cases():
    from selrank.losses import Pairwise, WeightedPairwise

    return [
        ("sinh, all pairs", Pairwise(), WeightedPairwise(pair_method="all")),
        (
            "sinh, top-30",
            Pairwise(pair_method="topk", num_pair_per_sample=30),
            WeightedPairwise(pair_method="topk", num_pair_per_sample=30),
        ),
        (
            "logistic, top-30 (lambdarank twin)",
            Pairwise("sigmoid", pairs="distinct", pair_method="topk", num_pair_per_sample=30),
            WeightedPairwise("sigmoid", target="order", pair_method="topk", num_pair_per_sample=30),
        ),
        (
            "sinh, mean (m=1)",
            Pairwise(pair_method="mean", num_pair_per_sample=1),
            WeightedPairwise(pair_method="mean", num_pair_per_sample=1),
        ),
    ]


def shape(rows: int, docs: int, seed: int = 0):
    from selrank.datasets import make_mslr_like

    _, y, _ = make_mslr_like(rows, n_features=2, mean_docs_per_query=docs, seed=seed)
    n_q = rows // docs
    y = np.asarray(y[: n_q * docs], dtype=np.float64) * 0.25  # label_scale of the ranker
    return y, np.full(n_q, docs, dtype=np.int64)


def time_pair(unweighted, weighted, y, group, repeats: int, rng, step: float):
    bu = unweighted.bind(y, group=group)
    bw = weighted.bind(y, group=group)
    pred = y + rng.normal(scale=0.5, size=y.size)
    bu.grad_hess(pred)  # compile and warm up
    bw.grad_hess(pred)
    tu, tw, ratios = [], [], []
    for r in range(repeats):
        pred = pred + rng.normal(scale=step, size=y.size)
        order = (bu, bw) if r % 2 == 0 else (bw, bu)
        t = {}
        for b in order:
            t0 = time.perf_counter()
            b.grad_hess(pred)
            t[id(b)] = time.perf_counter() - t0
        tu.append(t[id(bu)])
        tw.append(t[id(bw)])
        ratios.append(t[id(bw)] / t[id(bu)])
    return float(np.median(tu)), float(np.median(tw)), float(np.median(ratios))


def calls(args) -> dict:
    from selrank import set_kernel_policy

    set_kernel_policy("eager")  # the kernels, from the first call
    rng = np.random.default_rng(0)
    shapes = [("~120 docs/query", 120_000, 120), ("1,000 docs/query", 100_000, 1000)]
    if args.smoke:
        shapes = [("~120 docs/query", 1_200, 120), ("1,000 docs/query", 2_000, 1000)]
    rows = []
    for sname, n_rows, docs in shapes:
        y, group = shape(n_rows, docs)
        for cname, unweighted, weighted in cases():
            tu, tw, ratio = time_pair(unweighted, weighted, y, group, args.repeats, rng, args.step)
            rows.append(
                {
                    "data": sname,
                    "step": args.step,
                    "rows": int(y.size),
                    "case": cname,
                    "unweighted_s": tu,
                    "weighted_s": tw,
                    "ratio": ratio,
                    "target_met": ratio <= 1.5,
                }
            )
            print(
                f"{sname:18s} {cname:36s} unweighted {tu * 1e3:8.2f} ms  weighted "
                f"{tw * 1e3:8.2f} ms  ratio {ratio:5.2f}",
                flush=True,
            )
    return {"rows": rows, "load_after": os.getloadavg()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", action="store_true", help="kernel calls vs Pairwise (issue 21)")
    ap.add_argument("--smoke", action="store_true", help="seconds, tiny data, JSON to a temp file")
    ap.add_argument("--rows", default="100000,300000,1000000", help="fits: comma-separated sizes")
    ap.add_argument("--trees", type=int, default=None, help="fits: trees (default per size)")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--step", type=float, default=0.05, help="calls: SD of the score change")
    ap.add_argument("--data-dir", default=None, help="fits: where the .npz data are cached")
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker", nargs=3, metavar=("DATA", "SIDE", "TREES"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    if args.smoke:
        args.rows, args.trees, args.repeats = "3000", 3, 1
    if args.repeats is None:
        args.repeats = 15 if args.calls else 3
    result = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "load_avg": os.getloadavg(),
        "repeats": args.repeats,
        **(calls(args) if args.calls else fits(args)),
    }
    name = "weighted_pairwise_speed.json" if args.calls else "weighted_pairwise_fits.json"
    if args.out:
        out = Path(args.out)
    elif args.smoke:
        from _smoke import smoke_out

        out = smoke_out(name.removesuffix(".json"))
    else:
        out = ROOT / "benchmarks" / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
