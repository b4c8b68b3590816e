"""How the objectives' cost grows: time and peak memory per call vs rows and vs documents per query.

Data: ``selrank.datasets.make_mslr_like`` with ``--features`` features (default 16: the
objective calls need only labels, predictions and query sizes, and a LightGBM round at 10^7
rows with 136 features would not fit this machine's time and memory), graded labels 0-4.

1. **Rows** (10^4 ... 10^7 by default, about 120 documents per query): one objective call
   (gradient + Hessian + Hessian policy, what LightGBM calls each round) for the pointwise
   (exp link), pairwise (capped sinh; all pairs and ``pair_method="topk"``, k = 32) and
   listwise (exp composite softmax, gamma 4) families, with the estimator defaults
   (``label_scale=0.25``, one thread), next to one LightGBM round (``Booster.update``) with
   its built-in objectives: ``regression`` (the pointwise counterpart) and ``lambdarank`` (the
   group counterpart), on the same ``--features`` features.
2. **Documents per query** (10 ... 10,000, queries of exactly that size, 100,000 rows): the
   same measurements (all pairs included: 10 queries of 10,000 documents are 5·10^8 pairs).

Each point runs in two subprocesses (``--worker``): one for the times, with the default
allocator, and one for the memory, with ``MALLOC_MMAP_THRESHOLD_=65536`` so that glibc maps
every large array afresh and unmaps it when freed (a reused heap would hide allocations from the
resident set; the fresh mappings' page faults slowed calls at 10^7 rows about 1.7x, hence the
separate timing worker). Per point:

* **seconds**: after a warm-up call / round each, the objective calls and the two boosters'
  rounds take turns ``--repeats`` times (default 3); the median of each.
* **peak RSS delta** (``VmHWM - VmRSS`` after resetting the high-water mark through
  ``/proc/self/clear_refs``): the extra resident memory at the peak of one more call / round,
  the same measure for selrank and LightGBM. It does not count memory a booster holds
  between rounds (LightGBM keeps its gradient, Hessian and score buffers: ``booster_setup``
  in the JSON is the RSS delta of building the booster and its first round).
* **tracemalloc peak** of one more objective call (selrank only): NumPy's allocations are
  traced; the numba kernels' own scratch arrays (O(longest query)) are not.

Predictions are ``N(0, 0.5)``. Log-log plots of time and memory for both sweeps go to
``docs/figures/scaling.png``. Run: ``python benchmarks/scaling.py`` (about 10 minutes);
``--quick`` for a short run, ``--smoke`` to check in seconds that it runs (CI). Writes ``benchmarks/results/scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LABEL_SCALE = 0.25
TREE_PARAMS = {
    "num_leaves": 31,
    "learning_rate": 0.1,
    "min_data_in_leaf": 20,
    "max_bin": 255,
    "verbosity": -1,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
}
ENV = {
    "MALLOC_MMAP_THRESHOLD_": "65536",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}
THREADS = {k: v for k, v in ENV.items() if k.endswith("THREADS")}
MIB = 2.0**20


def families():
    from selrank.gbdt import lightgbm_objective

    def make(loss, **kw):
        return lambda: lightgbm_objective(loss, label_scale=LABEL_SCALE, n_jobs=1, **kw)

    return {
        "pointwise (exp)": make("pointwise", link="exp"),
        "pairwise all": make("pairwise"),
        "pairwise topk (k=32)": make("pairwise", pair_method="topk", num_pair_per_sample=32),
        "listwise (exp, gamma 4)": make("listwise", scaling="exp", gamma=4.0),
    }


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"^{key}:\s+(\d+) kB", f.read(), re.M).group(1))


def rss_peak_delta(fn) -> int:
    """Bytes by which the resident set's peak during ``fn()`` exceeds the resident set before it."""
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    fn()
    return 1024 * (_status_kib("VmHWM") - before)


def traced_peak(fn) -> int:
    """Peak bytes of traced (Python and NumPy) allocations during ``fn()``."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def measure(X, y, group, repeats: int, mode: str) -> dict:
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    pred = rng.normal(scale=0.5, size=y.size)
    calls = {}
    for name, make in families().items():
        obj = make()
        g = group if obj.structure == "group" else None
        calls[name] = lambda obj=obj, g=g: obj(y, pred, None, g)
    train = lgb.Dataset(X, y, group=group, params={"max_bin": 255, "verbosity": -1})
    train.construct()
    setup = {}
    for objective in ("regression", "lambdarank"):
        box = {}

        def build(objective=objective, box=box):
            box["b"] = lgb.Booster({**TREE_PARAMS, "objective": objective}, train)
            box["b"].update()  # warm-up round

        setup[f"LightGBM {objective} round"] = rss_peak_delta(build)
        calls[f"LightGBM {objective} round"] = box["b"].update
    for name, fn in calls.items():  # warm-up (binding, numba compilation)
        if not name.startswith("LightGBM"):
            fn()
    if mode == "memory":
        return {
            "rss_peak_delta_bytes": {k: rss_peak_delta(fn) for k, fn in calls.items()},
            "tracemalloc_peak_bytes": {
                k: traced_peak(fn) for k, fn in calls.items() if not k.startswith("LightGBM")
            },
            "booster_setup_rss_delta_bytes": setup,
        }
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):  # interleaved: machine load hits every method alike
        for name, fn in calls.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {"seconds": {k: float(np.median(v)) for k, v in times.items()}}


def worker(kind: str, n: int, docs: int, features: int, repeats: int, mode: str) -> dict:
    from selrank.datasets import make_mslr_like

    warnings.filterwarnings("ignore", category=UserWarning)
    t0 = time.perf_counter()
    if kind == "rows":
        data = make_mslr_like(n, n_features=features, mean_docs_per_query=120, seed=0)
        X, y, group = data.X, np.asarray(data.y, dtype=np.float64), np.asarray(data.group)
    else:
        data = make_mslr_like(n, n_features=features, mean_docs_per_query=docs, seed=0)
        n_q = n // docs
        X, y = data.X[: n_q * docs], np.asarray(data.y[: n_q * docs], dtype=np.float64)
        group = np.full(n_q, docs)
    del data
    gen = time.perf_counter() - t0
    res = measure(X, y, group, repeats, mode)
    res.update(
        {
            "rows": int(y.size),
            "queries": int(len(group)),
            "mean_docs_per_query": float(y.size / len(group)),
            "max_docs_per_query": int(np.max(group)),
            "pairs": int(np.sum(group * (group - 1) // 2)),
            "features": features,
            "data_seconds": gen,
            f"{mode}_worker_max_rss_bytes": 1024 * _status_kib("VmHWM"),
        }
    )
    return res


def run_point(kind: str, n: int, docs: int, features: int, repeats: int) -> dict:
    """Times in one worker with the default allocator, memory in another with ``ENV``."""
    res: dict = {}
    for mode in ("time", "memory"):
        cmd = [sys.executable, __file__, "--worker", kind, str(n), str(docs), str(features)]
        cmd += ["--repeats", str(repeats), "--mode", mode]
        env = {**os.environ, **(ENV if mode == "memory" else THREADS)}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"worker {cmd} failed:\n{proc.stderr[-3000:]}")
        res.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return res


def sweep(kind: str, points, n_rows: int, features: int, repeats: int) -> list[dict]:
    out = []
    for p in points:
        n, docs = (p, 120) if kind == "rows" else (n_rows, p)
        t0 = time.perf_counter()
        r = run_point(kind, n, docs, features, repeats)
        if kind == "docs":
            r["docs_per_query"] = int(docs)
        out.append(r)
        label = f"rows {n:>11,}" if kind == "rows" else f"docs/query {docs:>6,}"
        print(
            f"  {label} ({time.perf_counter() - t0:.0f}s): "
            + ", ".join(
                f"{k} {v:.4f}s/{r['rss_peak_delta_bytes'][k] / MIB:.0f}MiB"
                for k, v in r["seconds"].items()
            ),
            file=sys.stderr,
            flush=True,
        )
    return out


def tables(rows, docs) -> str:
    """The sweeps as Markdown tables: seconds, peak RSS delta and tracemalloc peak (MiB)."""
    names = list(rows[0]["seconds"])
    sel = [n for n in names if not n.startswith("LightGBM")]
    lines = []
    for title, sw, key, what in (
        ("rows (≈120 docs / query)", rows, "rows", "rows"),
        ("docs / query (100,000 rows)", docs, "docs_per_query", "docs"),
    ):
        for metric, cols, fmt, unit in (
            ("seconds", names, "{:.4f}", "seconds per call / round"),
            ("rss_peak_delta_bytes", names, "{:.1f}", "peak RSS delta, MiB"),
            ("tracemalloc_peak_bytes", sel, "{:.1f}", "tracemalloc peak, MiB"),
        ):
            lines.append(f"\n{unit} vs {what}\n")
            lines.append(f"| {title} | " + " | ".join(cols) + " |")
            lines.append("|---:|" + "---:|" * len(cols))
            setup = metric == "rss_peak_delta_bytes"
            if setup:  # what a booster holds between rounds (built with its first round)
                lines[-2] += " LightGBM regression booster setup | lambdarank booster setup |"
                lines[-1] += "---:|---:|"
            for r in sw:
                vals = [r[metric][c] if metric == "seconds" else r[metric][c] / MIB for c in cols]
                if setup:
                    vals += [v / MIB for v in r["booster_setup_rss_delta_bytes"].values()]
                lines.append(f"| {r[key]:,} | " + " | ".join(fmt.format(v) for v in vals) + " |")
    return "\n".join(lines)


def plot(rows, docs, path: Path) -> None:
    """Time (top) and memory (bottom) vs rows (left) and documents per query (right).

    Memory: the tracemalloc peak of a selrank call (solid), and what a LightGBM booster holds
    between rounds (dashed: RSS delta of building it with its first round); the RSS delta of a
    LightGBM round itself was 0 at every point (its buffers are allocated once)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8.4))
    names = list(rows[0]["seconds"])
    for col, (sweep_, key, label) in enumerate(
        (
            (rows, "rows", "rows (about 120 documents per query)"),
            (docs, "docs_per_query", "documents per query (100,000 rows)"),
        )
    ):
        xs = [r[key] for r in sweep_]
        ax = axes[0, col]
        for i, name in enumerate(names):
            style = "--" if name.startswith("LightGBM") else "-"
            ax.plot(
                xs,
                [r["seconds"][name] for r in sweep_],
                style,
                marker="o",
                color=f"C{i}",
                label=name,
            )
        ax.set_ylabel("seconds per call / round (1 thread)")
        ax = axes[1, col]
        for i, name in enumerate(names):
            if name.startswith("LightGBM"):
                vals = [r["booster_setup_rss_delta_bytes"][name] / MIB for r in sweep_]
                lab = name.replace(" round", " booster (RSS delta of setup)")
                ax.plot(xs, vals, "--", marker="s", color=f"C{i}", label=lab)
            else:
                vals = [r["tracemalloc_peak_bytes"][name] / MIB for r in sweep_]
                ax.plot(xs, vals, "-", marker="o", color=f"C{i}", label=f"{name} (tracemalloc)")
        ax.set_ylabel("peak memory per call (MiB)")
        for ax in axes[:, col]:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(label)
            ax.grid(True, which="both", alpha=0.3)
    axes[0, 1].legend(fontsize=7)
    axes[1, 1].legend(fontsize=7)
    fig.suptitle(
        "selrank objective calls (solid) vs LightGBM (dashed), one thread; the extra RSS of a "
        "LightGBM round was 0",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes")
    parser.add_argument("--features", type=int, default=16, help="features of the data sets")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs=4, metavar=("KIND", "N", "DOCS", "FEATURES"))
    parser.add_argument("--mode", choices=("time", "memory"), default="time")
    parser.add_argument("--replot", action="store_true", help="only redraw from --out")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "scaling.json"))
    parser.add_argument("--figure", default=str(ROOT / "docs" / "figures" / "scaling.png"))
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) one point per sweep (2,000 rows), once; JSON and figure to a temporary folder",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.repeats, args.out = 1, str(smoke_out("scaling"))
        args.figure = str(Path(args.out).with_suffix(".png"))
    if args.replot:  # redraw the figure (and print the tables) from an existing JSON
        doc = json.loads(Path(args.out).read_text())
        print(tables(doc["rows_sweep"], doc["docs_sweep"]))
        plot(doc["rows_sweep"], doc["docs_sweep"], Path(args.figure))
        return doc
    if args.worker:
        kind, n, docs, features = args.worker
        print(json.dumps(worker(kind, int(n), int(docs), int(features), args.repeats, args.mode)))
        return {}

    import lightgbm

    import selrank

    sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000, 10_000_000)
    docs_list = (10, 100, 1000) if args.quick else (10, 100, 1000, 4000, 10_000)
    n_docs_rows = 20_000 if args.quick else 100_000
    if args.smoke:
        sizes, docs_list, n_docs_rows = (2_000,), (10,), 2_000
    t0 = time.perf_counter()
    rows = sweep("rows", sizes, 0, args.features, args.repeats)
    docs = sweep("docs", docs_list, n_docs_rows, args.features, args.repeats)
    print(tables(rows, docs))
    plot(rows, docs, Path(args.figure))
    doc = {
        "benchmark": "scaling",
        "quick": bool(args.quick),
        "features": args.features,
        "repeats": args.repeats,
        "label_scale": LABEL_SCALE,
        "tree_params": TREE_PARAMS,
        "worker_env": {"time": THREADS, "memory": ENV},
        "memory": "rss_peak_delta_bytes: VmHWM - VmRSS around one more call/round after "
        "clear_refs, in a subprocess per point; tracemalloc_peak_bytes: traced peak of one "
        "more call (numba-internal scratch not traced)",
        "git_head": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip(),
        "rows_sweep": rows,
        "docs_sweep": docs,
        "runtime_seconds": time.perf_counter() - t0,
        "versions": {
            "selrank": selrank.__version__,
            "lightgbm": lightgbm.__version__,
            "numpy": np.__version__,
        },
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "note": "shared 2-core machine with other jobs running",
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out} and {args.figure}")
    return doc


if __name__ == "__main__":
    main()
