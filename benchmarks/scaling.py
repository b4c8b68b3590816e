"""How the objectives' cost grows: time per call vs rows and vs documents per query.

Data: ``selrank.datasets.make_mslr_like`` (136 features), graded labels 0-4.

1. **Rows** (10^4 ... 10^6 by default, about 120 documents per query): seconds of one
   objective call (gradient + Hessian + Hessian policy, what LightGBM calls each round) for
   the pointwise (exp link), pairwise (capped sinh; all pairs and ``pair_method="topk"``,
   k = 32) and listwise (exp composite softmax, gamma 4) families, with the estimator
   defaults (``label_scale=0.25``, one thread), next to one LightGBM round with its built-in
   objectives: ``regression`` (the pointwise counterpart) and ``lambdarank`` (the group
   counterpart). Objective calls: median of 3 after a warm-up; LightGBM rounds: median of 3
   ``Booster.update`` after a warm-up round; everything on one thread.
2. **Documents per query** (10 ... 4,000, queries of exactly that size, 100,000 rows): the
   same measurements.

Predictions are ``N(0, 0.5)``. A log-log plot of both sweeps goes to
``docs/figures/scaling.png``. Peak memory is not measured here (``benchmarks/torch_heads.py``
measures it for the heads; the GBDT objectives' working sets are O(rows)).

Run: ``python benchmarks/scaling.py`` (a few minutes); ``--quick`` for a smoke run. Writes
``benchmarks/results/scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
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


def median_call(fn, repeats: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure(X, y, group, repeats: int = 3) -> dict:
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    pred = rng.normal(scale=0.5, size=y.size)
    out = {}
    for name, make in families().items():
        obj = make()
        g = group if obj.structure == "group" else None
        out[name] = median_call(lambda obj=obj, g=g: obj(y, pred, None, g), repeats)
    train = lgb.Dataset(
        X, y, group=group, params={"max_bin": 255, "verbosity": -1}, free_raw_data=False
    )
    train.construct()
    for objective in ("regression", "lambdarank"):
        booster = lgb.Booster({**TREE_PARAMS, "objective": objective}, train)
        booster.update()  # warm-up round
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            booster.update()
            times.append(time.perf_counter() - t0)
        out[f"LightGBM {objective} round"] = float(np.median(times))
    return out


def rows_sweep(sizes) -> list[dict]:
    from selrank.datasets import make_mslr_like

    rows = []
    for n in sizes:
        data = make_mslr_like(n, n_features=136, mean_docs_per_query=120, seed=0)
        y = np.asarray(data.y, dtype=np.float64)
        t = measure(data.X, y, np.asarray(data.group))
        rows.append({"rows": int(n), "queries": len(data.group), "seconds": t})
        print(
            f"  rows {n:>9,}: " + ", ".join(f"{k} {v:.4f}s" for k, v in t.items()),
            file=sys.stderr,
            flush=True,
        )
    return rows


def docs_sweep(n_rows: int, docs_list) -> list[dict]:
    from selrank.datasets import make_mslr_like

    rows = []
    for docs in docs_list:
        data = make_mslr_like(n_rows, n_features=136, mean_docs_per_query=docs, seed=0)
        n_q = n_rows // docs
        X, y = data.X[: n_q * docs], np.asarray(data.y[: n_q * docs], dtype=np.float64)
        group = np.full(n_q, docs)
        t = measure(X, y, group)
        rows.append(
            {"docs_per_query": int(docs), "rows": int(y.size), "queries": int(n_q), "seconds": t}
        )
        print(
            f"  docs/query {docs:>5}: " + ", ".join(f"{k} {v:.4f}s" for k, v in t.items()),
            file=sys.stderr,
            flush=True,
        )
    return rows


def plot(rows, docs, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, sweep, key, label in (
        (axes[0], rows, "rows", "rows (about 120 documents per query)"),
        (axes[1], docs, "docs_per_query", "documents per query (100,000 rows)"),
    ):
        xs = [r[key] for r in sweep]
        for name in sweep[0]["seconds"]:
            style = "--" if name.startswith("LightGBM") else "-"
            ax.plot(xs, [r["seconds"][name] for r in sweep], style, marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("seconds per call / round (1 thread)")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle("selrank objectives vs one LightGBM round (dashed)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "scaling.json"))
    parser.add_argument("--figure", default=str(ROOT / "docs" / "figures" / "scaling.png"))
    args = parser.parse_args(argv)

    import lightgbm

    import selrank

    warnings.filterwarnings("ignore", category=UserWarning)
    sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
    docs_list = (10, 100, 1000) if args.quick else (10, 100, 1000, 4000)
    n_docs_rows = 20_000 if args.quick else 100_000
    t0 = time.perf_counter()
    rows = rows_sweep(sizes)
    docs = docs_sweep(n_docs_rows, docs_list)
    names = list(rows[0]["seconds"])
    for title, sweep, key in (
        ("rows", rows, "rows"),
        ("documents per query", docs, "docs_per_query"),
    ):
        print(f"\nseconds per objective call / LightGBM round (1 thread) vs {title}")
        print(f"{key:>14s} " + " ".join(f"{n[:22]:>22s}" for n in names))
        for r in sweep:
            print(f"{r[key]:>14,} " + " ".join(f"{r['seconds'][n]:22.4f}" for n in names))
    plot(rows, docs, Path(args.figure))
    doc = {
        "benchmark": "scaling",
        "quick": bool(args.quick),
        "label_scale": LABEL_SCALE,
        "tree_params": TREE_PARAMS,
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
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out} and {args.figure}")
    return doc


if __name__ == "__main__":
    main()
