"""Single-query latency of every deployment route, and selrank's own predict overhead.

Protocol
--------
* Data: :func:`selrank.datasets.make_mslr_like` (136 features), 20,000 training rows; the
  query scored is ``--docs`` documents (default 100) of another draw (seed 1), as a
  C-contiguous float64 array (float32 for the ONNX and NeuralRanker routes, which take
  float32).
* Models: ``SelectiveRanker`` with LightGBM (``--rounds`` trees of 31 leaves) and XGBoost
  (the same rounds, depth 6), one thread (``num_threads`` / ``nthread`` = 1) so that the
  numbers do not depend on how busy the other cores are; ``NeuralRanker`` (two hidden
  layers of 64).
* Routes: ``model.predict`` on a NumPy array (the fast path), on a pandas DataFrame (the
  checked path), the booster's own predict, the exported file loaded by its runtime
  (LightGBM text, XGBoost UBJ, onnxruntime with one intra-op thread, treelite GTIL, a
  TL2cgen-compiled shared library with one thread), ``NeuralRanker.predict`` and its ONNX
  graph.
* Timing: ``--repeats`` calls per route after 20 warm-up calls, routes interleaved in
  rounds of 10 calls; the median and the 10th / 90th percentiles of the per-call time, in
  microseconds. The overhead of ``model.predict`` over the booster's own predict is the
  difference of their 10th percentiles (on a loaded machine the medians mostly measure the
  scheduler); the input checks that the NumPy fast path skips are timed alone too. Each route's scores are compared with ``decision_function`` (max relative
  difference) in the same run.

Run: ``nice python benchmarks/deployment.py`` (about a minute). Writes
``benchmarks/results/deployment.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _timer(fn, repeats: int):
    def run(n):
        out = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=400)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "deployment.json"))
    parser.add_argument(
        "--smoke", action="store_true", help="(CI) 2,000 training rows, 3 rounds, 5 calls a route"
    )
    args = parser.parse_args()
    n_rows = 20_000
    if args.smoke:
        from _smoke import smoke_out

        n_rows, args.docs, args.rounds, args.repeats = 2_000, 20, 3, 5
        args.out = str(smoke_out("deployment"))

    import lightgbm as lgb
    import onnxruntime as ort
    import pandas as pd
    import tl2cgen
    import treelite
    import xgboost as xgb

    from selrank import SelectiveRanker
    from selrank.datasets import make_mslr_like
    from selrank.estimators import NeuralRanker
    from selrank.estimators.export import export_model, to_treelite

    warnings.simplefilter("ignore")
    X, y, sizes = make_mslr_like(n_rows=n_rows, seed=0)
    X = np.asarray(X, dtype=np.float64)
    sizes = np.append(sizes, 0)  # (the training set below is every query: sizes[:-1])
    n_train = X.shape[0]
    Xq = np.ascontiguousarray(make_mslr_like(n_rows=5_000, seed=1).X[: args.docs], dtype=np.float64)
    Xq32 = Xq.astype(np.float32)
    frame = pd.DataFrame(Xq)
    tmp = Path(tempfile.mkdtemp())
    routes: dict[str, tuple] = {}  # name -> (callable, reference scores)

    lgb_model = SelectiveRanker(
        n_estimators=args.rounds, num_threads=1, random_state=0, verbose=False
    ).fit(X[:n_train], y[:n_train], group=sizes[:-1])
    ref = lgb_model.decision_function(Xq)
    booster = lgb_model.booster_
    plain = lgb.Booster(model_file=export_model(lgb_model, tmp / "l.txt", "lightgbm"))
    onx = ort.InferenceSession(
        str(export_model(lgb_model, tmp / "l.onnx", "onnx")),
        _onnx_options(ort),
        providers=["CPUExecutionProvider"],
    )
    tl = to_treelite(lgb_model)
    tl2cgen.export_lib(
        tl, toolchain="gcc", libpath=str(tmp / "l.so"), params={"parallel_comp": 1}, verbose=False
    )
    compiled = tl2cgen.Predictor(str(tmp / "l.so"), nthread=1)
    routes["lightgbm: model.predict(ndarray)"] = (lambda: lgb_model.predict(Xq), ref)
    routes["lightgbm: model.predict(DataFrame)"] = (lambda: lgb_model.predict(frame), ref)
    # the input checks alone (what the fast path skips), no booster call
    routes["checks only: _features(ndarray) (checked path)"] = (
        lambda: lgb_model._features(Xq, reset=False),
        None,
    )
    routes["checks only: _features(DataFrame)"] = (
        lambda: lgb_model._features(frame, reset=False),
        None,
    )
    routes["lightgbm: booster.predict(raw_score=True)"] = (
        lambda: booster.predict(Xq, raw_score=True),
        ref,
    )
    routes["lightgbm: plain lightgbm.Booster(model_file)"] = (lambda: plain.predict(Xq), ref)
    routes["lightgbm: onnxruntime"] = (lambda: onx.run(["score"], {"X": Xq32})[0], ref)
    routes["lightgbm: treelite.gtil"] = (
        lambda: treelite.gtil.predict(tl, Xq, pred_margin=True, nthread=1).reshape(-1),
        ref,
    )
    routes["lightgbm: tl2cgen compiled"] = (
        lambda: compiled.predict(tl2cgen.DMatrix(Xq), pred_margin=True).reshape(-1),
        ref,
    )

    xgb_model = SelectiveRanker(
        n_estimators=args.rounds, backend="xgboost", nthread=1, max_depth=6, random_state=0
    ).fit(X[:n_train], y[:n_train], group=sizes[:-1])
    xref = xgb_model.decision_function(Xq)
    xbooster = xgb_model.booster_
    xplain = xgb.Booster(model_file=export_model(xgb_model, tmp / "x.ubj", "xgboost-ubj"))
    xplain.set_param({"nthread": 1})
    xonx = ort.InferenceSession(
        str(export_model(xgb_model, tmp / "x.onnx", "onnx")),
        _onnx_options(ort),
        providers=["CPUExecutionProvider"],
    )
    xtl = to_treelite(xgb_model)
    tl2cgen.export_lib(
        xtl, toolchain="gcc", libpath=str(tmp / "x.so"), params={"parallel_comp": 1}, verbose=False
    )
    xcompiled = tl2cgen.Predictor(str(tmp / "x.so"), nthread=1)
    routes["xgboost: model.predict(ndarray)"] = (lambda: xgb_model.predict(Xq), xref)
    routes["xgboost: booster.inplace_predict(margin)"] = (
        lambda: xbooster.inplace_predict(Xq, predict_type="margin"),
        xref,
    )
    routes["xgboost: plain xgboost.Booster(model_file)"] = (
        lambda: xplain.inplace_predict(Xq, predict_type="margin"),
        xref,
    )
    routes["xgboost: onnxruntime"] = (lambda: xonx.run(["score"], {"X": Xq32})[0], xref)
    routes["xgboost: treelite.gtil"] = (
        lambda: treelite.gtil.predict(xtl, Xq, pred_margin=True, nthread=1).reshape(-1),
        xref,
    )
    routes["xgboost: tl2cgen compiled"] = (
        lambda: xcompiled.predict(tl2cgen.DMatrix(Xq), pred_margin=True).reshape(-1),
        xref,
    )

    import torch

    torch.set_num_threads(1)
    net = NeuralRanker("listwise", hidden_layers=(64, 64), epochs=3, random_state=0).fit(
        X[:n_train].astype(np.float32), y[:n_train], group=sizes[:-1]
    )
    nref = net.predict(Xq32)
    nonx = ort.InferenceSession(
        str(export_model(net, tmp / "n.onnx", "onnx")),
        _onnx_options(ort),
        providers=["CPUExecutionProvider"],
    )
    routes["neural: NeuralRanker.predict"] = (lambda: net.predict(Xq32), nref)
    routes["neural: onnxruntime"] = (lambda: nonx.run(["score"], {"X": Xq32})[0], nref)

    timings: dict[str, list[float]] = {k: [] for k in routes}
    for fn, _ in routes.values():
        for _ in range(20):
            fn()
    rounds = max(1, args.repeats // 10)
    for _ in range(rounds):
        for name, (fn, _) in routes.items():
            timings[name].extend(_timer(fn, args.repeats)(10))
    rows = []
    for name, (fn, want) in routes.items():
        diff = None
        if want is not None:
            got = np.asarray(fn(), dtype=np.float64).reshape(want.shape)
            diff = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
        t = np.asarray(timings[name]) * 1e6
        rows.append(
            {
                "route": name,
                "median_us": float(np.median(t)),
                "p10_us": float(np.percentile(t, 10)),
                "p90_us": float(np.percentile(t, 90)),
                "max_rel_diff": diff,
            }
        )
    width = max(len(r["route"]) for r in rows)
    print(f"{'route':<{width}}  median us   p10 us   p90 us   max rel diff")
    for r in rows:
        diff = "-" if r["max_rel_diff"] is None else f"{r['max_rel_diff']:.1e}"
        print(
            f"{r['route']:<{width}}  {r['median_us']:9.0f}  {r['p10_us']:7.0f}  {r['p90_us']:7.0f}   {diff}"
        )
    # under load the medians carry the scheduler's noise: the 10th percentiles are the
    # closer estimate of the cost itself; both are kept
    med = {r["route"]: r["p10_us"] for r in rows}
    overhead = {
        "lightgbm": med["lightgbm: model.predict(ndarray)"]
        - med["lightgbm: booster.predict(raw_score=True)"],
        "xgboost": med["xgboost: model.predict(ndarray)"]
        - med["xgboost: booster.inplace_predict(margin)"],
    }
    print(
        "selrank predict overhead over the booster (10th percentiles, us):",
        {k: round(v) for k, v in overhead.items()},
    )
    out = {
        "benchmark": "deployment",
        "docs_per_query": args.docs,
        "n_features": int(X.shape[1]),
        "rounds": args.rounds,
        "repeats": rounds * 10,
        "rows": rows,
        "predict_overhead_us_p10": overhead,
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpu_count": os.cpu_count(),
            "loadavg": os.getloadavg(),
        },
        "versions": _versions(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print("wrote", args.out)


def _onnx_options(ort):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return opts


def _versions() -> dict[str, str]:
    import importlib

    out = {}
    for name in (
        "selrank",
        "lightgbm",
        "xgboost",
        "onnxruntime",
        "onnxmltools",
        "treelite",
        "tl2cgen",
        "torch",
        "numpy",
    ):
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception:
            out[name] = "?"
    return out


if __name__ == "__main__":
    main()
