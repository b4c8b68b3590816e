"""XGBoost on the GPU with selrank objectives: seconds per boosting round and objective throughput.

Data: ``selrank.datasets.make_mslr_like`` (default 1M rows, 136 features, ~120 documents per
query). For each method, ``--rounds`` boosting rounds after one warm-up round:

* ``XGBoost rank:ndcg`` — the built-in objective (gradients computed by XGBoost on the device);
* ``selrank <loss>, xgboost.train`` — ``xgboost.train(obj=...)``: XGBoost copies the margins to
  the host every round and the objective computes there (NumPy), gradients go back;
* ``selrank <loss>, device loop`` — ``XGBoostObjective.train(..., data=cupy_X)``: margins stay
  on the device (each round adds the new trees' output), gradients and Hessians are computed
  with CuPy by the same core loss and handed to ``Booster.boost`` without a host round trip.

Also reports gradient/Hessian throughput of the core losses on CuPy arrays next to NumPy.

Run on a machine with a CUDA device and CuPy: ``python benchmarks/gpu_xgboost.py``.
``--device cpu`` runs the same code paths on the CPU with NumPy (to check the script).
Writes ``benchmarks/results/gpu_xgboost.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

LABEL_SCALE = 0.25
PARAMS = {
    "tree_method": "hist",
    "max_depth": 8,
    "eta": 0.1,
    "min_child_weight": 1e-3,
    "max_bin": 256,
}


def _sync(xp):
    if xp.__name__ == "cupy":
        xp.cuda.Stream.null.synchronize()


def per_round(train_fn, n_rounds: int) -> float:
    """Seconds per round: train 1 round (warm-up), then 1 + n_rounds, and take the difference."""
    t0 = time.perf_counter()
    train_fn(1)
    t1 = time.perf_counter()
    train_fn(1 + n_rounds)
    t2 = time.perf_counter()
    return ((t2 - t1) - (t1 - t0)) / n_rounds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--losses", nargs="+", default=["pointwise", "listwise", "pairwise"])
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "gpu_xgboost.json")
    )
    args = parser.parse_args(argv)

    import xgboost as xgb

    import selrank
    from selrank.datasets import make_mslr_like
    from selrank.gbdt import xgboost_objective
    from selrank.losses import get_loss

    if args.device == "cuda":
        try:
            import cupy as xp
        except ImportError:
            sys.exit(
                "the GPU benchmark needs CuPy (pip install cupy-cuda12x); use --device cpu to check the script"
            )
        device_name = xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    else:
        xp = np
        device_name = platform.processor() or "cpu"
    warnings.filterwarnings("ignore", category=UserWarning)

    data = make_mslr_like(args.rows, n_features=136, mean_docs_per_query=120, seed=0)
    X = np.ascontiguousarray(data.X, dtype=np.float32)
    y = np.asarray(data.y, dtype=np.float64)
    sizes = np.asarray(data.group)
    qid = np.repeat(np.arange(sizes.size), sizes)
    X_dev = xp.asarray(X)
    params = {**PARAMS, "device": args.device}
    dtrain = (
        xgb.QuantileDMatrix(X_dev, y, qid=qid)
        if args.device == "cuda"
        else xgb.DMatrix(X, y, qid=qid)
    )

    results = {"rounds": [], "throughput": []}

    def builtin(n):
        xgb.train({**params, "objective": "rank:ndcg"}, dtrain, n)

    t = per_round(builtin, args.rounds)
    results["rounds"].append({"method": "XGBoost rank:ndcg", "seconds_per_round": t})
    print(f"XGBoost rank:ndcg: {t:.4f}s/round", file=sys.stderr, flush=True)
    for name in args.losses:
        kw = {"gamma": 4.0} if name == "listwise" else {}
        for mode in ("xgboost.train", "device loop"):
            obj = xgboost_objective(name, label_scale=LABEL_SCALE, min_leaf_hessian=1e-3, **kw)

            def run(n, obj=obj, mode=mode):
                obj.train(params, dtrain, n, data=X_dev if mode == "device loop" else None)
                _sync(xp)

            t = per_round(run, args.rounds)
            results["rounds"].append({"method": f"selrank {name}, {mode}", "seconds_per_round": t})
            print(f"selrank {name}, {mode}: {t:.4f}s/round", file=sys.stderr, flush=True)

        loss = get_loss(name, **kw)
        bound = loss.bind(LABEL_SCALE * y, group=sizes if loss.structure == "group" else None)
        z_host = np.random.default_rng(0).normal(scale=0.5, size=y.size)
        for label, z in (
            ("numpy (host)", z_host),
            (f"{xp.__name__} ({args.device})", xp.asarray(z_host)),
        ):
            bound.grad_hess(z)
            _sync(xp)
            t0 = time.perf_counter()
            for _ in range(5):
                bound.grad_hess(z)
            _sync(xp)
            t = (time.perf_counter() - t0) / 5
            results["throughput"].append(
                {"loss": name, "arrays": label, "seconds": t, "rows_per_s": y.size / t}
            )

    print(
        f"\nXGBoost {xgb.__version__} on {device_name}: {y.size:,} rows, {sizes.size:,} queries, depth {PARAMS['max_depth']}"
    )
    print(f"{'method':34s} {'s/round':>9s}")
    for r in results["rounds"]:
        print(f"{r['method']:34s} {r['seconds_per_round']:9.4f}")
    print(f"\n{'loss':10s} {'arrays':18s} {'ms':>8s} {'M rows/s':>9s}")
    for r in results["throughput"]:
        print(
            f"{r['loss']:10s} {r['arrays']:18s} {1e3 * r['seconds']:8.2f} {r['rows_per_s'] / 1e6:9.1f}"
        )
    doc = {
        "benchmark": "gpu_xgboost",
        "device": device_name,
        "rows": int(y.size),
        "queries": int(sizes.size),
        "params": params,
        "results": results,
        "versions": {
            "selrank": selrank.__version__,
            "xgboost": xgb.__version__,
            "numpy": np.__version__,
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out}")
    return doc


if __name__ == "__main__":
    main()
