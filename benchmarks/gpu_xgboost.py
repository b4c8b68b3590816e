"""XGBoost on CUDA with selrank objectives: correctness, host transfers, speed, the estimator.

One command measures everything issue 28 asks for and writes one JSON file (``--out``):

1. **environment** — ``nvidia-smi``, the device's name, the versions of XGBoost, CuPy, NumPy.
2. **correctness** (MSLR-shaped rows whose features are quantised to at most 32 values each,
   so that XGBoost's CPU and GPU sketches cut them at the same values) for the pointwise,
   listwise and pairwise losses:

   * gradients and Hessians of the objective on CuPy margins against NumPy margins;
   * the model grown by the device loop (``XGBoostObjective.train(..., data=X_gpu)``: margins,
     gradients and Hessians stay on the device) against ``xgboost.train(obj=...)`` on the same
     device (margins copied to the host each round) and against the same fit on the CPU:
     identical tree structures (split features and thresholds) and leaf values / predictions
     within float tolerance. XGBoost's own ``reg:squarederror`` and ``rank:ndcg`` trained on
     the GPU and on the CPU are the control: the GPU and CPU tree builders themselves sum
     histograms in different orders, so the selrank fit is held to the agreement the built-ins
     reach, with a float tolerance floor.

3. **transfers** — the device loop is profiled (``torch.profiler``, CUPTI: every memcpy of the
   process, XGBoost's and CuPy's included) over a few rounds: no copy of a row-sized array
   between host and device per round. ``xgboost.train(obj=...)`` on the same device is the
   positive control (it copies the margins to the host and the gradients back: the profiler
   must see those). CuPy's memory pool must not grow from round to round.
4. **speed** at 1M and 10M MSLR-shaped rows (136 float32 features, ~120 documents a query):
   seconds per round of XGBoost ``rank:ndcg`` on the GPU, the selrank objectives' device loop
   on the GPU, and the same selrank fit (``xgboost.train(obj=...)``) and ``rank:ndcg`` on the
   machine's CPU cores; the gradient's share of a GPU round; the device memory peak (NVML).
5. **estimator** — ``SelectiveRanker(backend="xgboost", device="cuda")`` fit with early
   stopping and predict, end to end, against the same estimator on the CPU.

Each section records its own error instead of stopping the others, and the JSON is rewritten
after each section (a run cut short still leaves what it measured).

Usage: ``python benchmarks/gpu_xgboost.py`` on a machine with a CUDA device and CuPy;
``--device cpu`` runs every section on the CPU with NumPy arrays standing in for the device
(the dry run that checks the script); ``--smoke`` does that on tiny data in seconds (CI).
``scripts/gpu_device.sh`` installs XGBoost's CUDA wheel on a bare device machine from parts
and runs this script there (docs/benchmarks.md, "GPU").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

LABEL_SCALE = 0.25
PARAMS: dict[str, Any] = {
    "tree_method": "hist",
    "max_depth": 8,
    "eta": 0.1,
    "min_child_weight": 1e-3,
    "max_bin": 256,
}
LOSSES = ("pointwise", "listwise", "pairwise")
_DEADLINE = [float("inf")]


def time_left() -> float:
    """Seconds left of ``--budget`` (sections skip what would not finish)."""
    return _DEADLINE[0] - time.perf_counter()


def _loss_options(name: str) -> dict:
    return {"gamma": 4.0} if name == "listwise" else {}


# -- device helpers ----------------------------------------------------------------------------------
class Device:
    """The array module standing for the device: CuPy on ``cuda``, NumPy on the dry run."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind == "cuda":
            import cupy

            self.xp = cupy
            self.name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        else:
            self.xp = np
            self.name = platform.processor() or platform.machine() or "cpu"

    @property
    def cuda(self) -> bool:
        return self.kind == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.xp.cuda.Stream.null.synchronize()

    def host(self, a) -> np.ndarray:
        return np.asarray(a.get() if self.cuda and hasattr(a, "get") else a)

    def free(self) -> None:
        gc.collect()
        if self.cuda:
            self.xp.get_default_memory_pool().free_all_blocks()


class MemoryPeak:
    """Peak device memory in use (NVML, every 10 ms) while the block runs, above what was in use
    before it; ``None`` without NVML (the CPU dry run)."""

    def __init__(self, device: Device):
        self.device, self.peak, self.base = device, None, None
        self._handle = None
        if device.cuda:
            try:
                import pynvml

                pynvml.nvmlInit()
                self._nvml = pynvml
                self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            except Exception:
                self._handle = None

    def _used(self) -> int:
        return int(self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used)

    def __enter__(self):
        if self._handle is None:
            return self
        self.base = self._used()
        self._max = self.base
        self._stop = threading.Event()

        def poll():
            while not self._stop.is_set():
                self._max = max(self._max, self._used())
                time.sleep(0.01)

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._handle is None:
            return False
        self._stop.set()
        self._thread.join()
        self._max = max(self._max, self._used())
        self.peak = self._max - self.base
        return False


WARM_ROUNDS = 2


def per_round(train_fn, n_rounds: int, device: Device | None = None) -> dict:
    """Seconds per boosting round, timed inside one training run.

    ``train_fn(n, callbacks)`` trains ``n`` rounds with the given XGBoost callbacks; a callback
    stamps the clock after each round (the device synchronised first), and the rounds after the
    first ``WARM_ROUNDS`` (binding, compilation, caches) are the measurement: their mean and
    median interval. (Differencing two whole trainings of 1 and 1 + n rounds is wrong here: a
    first call pays one-time costs that the second may not.)
    """
    import xgboost as xgb

    stamps: list[float] = []

    class Stamp(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if device is not None:
                device.sync()
            stamps.append(time.perf_counter())
            return False

    t0 = time.perf_counter()
    train_fn(WARM_ROUNDS + n_rounds, [Stamp()])
    total = time.perf_counter() - t0
    steps = np.diff(np.asarray(stamps[WARM_ROUNDS - 1 :]))
    if steps.size == 0:
        raise RuntimeError(f"no timed rounds: {len(stamps)} round stamps for {n_rounds} rounds")
    return {
        "seconds_per_round": float(np.mean(steps)),
        "median_seconds_per_round": float(np.median(steps)),
        "timed_rounds": int(steps.size),
        "first_rounds_seconds": float(stamps[WARM_ROUNDS - 1] - t0),
        "fit_seconds": total,
    }


# -- data ---------------------------------------------------------------------------------------------
def mslr_rows(n_rows: int, n_features: int, seed: int = 0, quantise: int | None = None):
    """MSLR-shaped rows (``make_mslr_like``): float32 X, labels, query sizes, qid.

    ``quantise=k`` replaces each feature by the nearest of its ``k + 1`` quantiles (values kept
    exactly, float32): at most ``k + 1`` distinct values a column, as in real LETOR features.
    """
    from selrank.datasets import make_mslr_like

    data = make_mslr_like(n_rows, n_features=n_features, mean_docs_per_query=120, seed=seed)
    X = np.ascontiguousarray(data.X, dtype=np.float32)
    if quantise:
        for j in range(X.shape[1]):
            edges = np.unique(
                np.quantile(X[:, j], np.linspace(0, 1, quantise + 1)).astype(np.float32)
            )
            idx = np.clip(np.searchsorted(edges, X[:, j]), 0, edges.size - 1)
            X[:, j] = edges[idx]
    y = np.asarray(data.y, dtype=np.float64)
    sizes = np.asarray(data.group, dtype=np.int64)
    qid = np.repeat(np.arange(sizes.size), sizes)
    return X, y, sizes, qid


# -- tree comparison -----------------------------------------------------------------------------------
def tree_parts(booster) -> tuple[list, list]:
    """Each tree's structure (node, split feature, threshold, children; depth-first) and leaves."""
    structures, leaves = [], []

    def walk(node, nodes: list, values: list) -> None:
        if "leaf" in node:
            nodes.append((node["nodeid"], "leaf"))
            values.append(float(node["leaf"]))
            return
        nodes.append(
            (node["nodeid"], node["split"], float(node["split_condition"]), node["yes"], node["no"])
        )
        for child in node["children"]:
            walk(child, nodes, values)

    for text in booster.get_dump(dump_format="json"):
        nodes: list = []
        values: list = []
        walk(json.loads(text), nodes, values)
        structures.append(nodes)
        leaves.append(values)
    return structures, leaves


def compare_models(a, b, pred_a: np.ndarray, pred_b: np.ndarray) -> dict:
    """How far two boosters agree: trees with the same structure, leaf and prediction gaps."""
    sa, la = tree_parts(a)
    sb, lb = tree_parts(b)
    same = [x == y for x, y in zip(sa, sb)]
    first_diff = next((k for k, s in enumerate(same) if not s), None)
    leaf_gap = max(
        (float(np.max(np.abs(np.subtract(x, y)))) for x, y, s in zip(la, lb, same) if s and x),
        default=0.0,
    )
    scale = float(np.std(pred_a)) or 1.0
    return {
        "trees": len(sa),
        "same_structure": int(sum(same)) if len(sa) == len(sb) else 0,
        "first_different_tree": first_diff,
        "max_leaf_gap_same_trees": leaf_gap,
        "max_pred_gap": float(np.max(np.abs(pred_a - pred_b))),
        "pred_std": scale,
        "max_pred_gap_rel": float(np.max(np.abs(pred_a - pred_b))) / scale,
        "pred_corr": float(np.corrcoef(pred_a, pred_b)[0, 1]) if pred_a.size > 1 else 1.0,
    }


# -- sections --------------------------------------------------------------------------------------------
def environment(device: Device) -> dict:
    import xgboost as xgb

    import selrank

    env: dict[str, Any] = {
        "device": device.name,
        "python": platform.python_version(),
        "selrank": selrank.__version__,
        "xgboost": xgb.__version__,
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
        "xgboost_build_cuda": bool(xgb.build_info().get("USE_CUDA")),
    }
    if device.cuda:
        env["cupy"] = device.xp.__version__
        env["cuda_runtime_cupy"] = int(device.xp.cuda.runtime.runtimeGetVersion())
        env["cuda_driver"] = int(device.xp.cuda.runtime.driverGetVersion())
        env["xgboost_cuda_version"] = xgb.build_info().get("CUDA_VERSION")
    try:
        smi = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        env["nvidia_smi"] = (smi.stdout or smi.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        env["nvidia_smi"] = f"not available: {err}"
    return env


def correctness(device: Device, rows: int, n_features: int, rounds: int) -> dict:
    """Gradients on the device vs the host; device loop vs host objective vs CPU; the built-ins'
    own GPU-vs-CPU agreement as the control."""
    import xgboost as xgb

    xp = device.xp
    X, y, sizes, qid = mslr_rows(rows, n_features, seed=1, quantise=31)
    X_dev = xp.asarray(X)
    params = {**PARAMS, "max_depth": 6, "device": device.kind, "seed": 0}
    d_dev = xgb.DMatrix(X_dev if device.cuda else X, y, qid=qid)
    d_cpu = xgb.DMatrix(X, y, qid=qid)
    out: dict[str, Any] = {"rows": rows, "queries": int(sizes.size), "rounds": rounds, "losses": {}}

    def predict_host(booster, obj=None):
        booster.set_param({"device": "cpu"})  # predict on the host: one code path for all
        p = obj.predict(booster, X) if obj is not None else booster.inplace_predict(X)
        return np.asarray(p, dtype=np.float64)

    for objective in ("reg:squarederror", "rank:ndcg"):
        p = {**params, "objective": objective}
        b_dev = xgb.train(p, d_dev, rounds)
        b_cpu = xgb.train({**p, "device": "cpu"}, d_cpu, rounds)
        out.setdefault("builtin_gpu_vs_cpu", {})[objective] = compare_models(
            b_dev, b_cpu, predict_host(b_dev), predict_host(b_cpu)
        )
    z = np.random.default_rng(0).normal(scale=0.5, size=y.size)
    for name in LOSSES:
        try:
            out["losses"][name] = _check_loss(
                device, name, X, X_dev, y, sizes, z, d_dev, d_cpu, params, rounds, predict_host
            )
        except Exception as err:
            out["losses"][name] = {
                "error": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc(),
            }
        device.free()
    return _verdicts(out)


def _check_loss(
    device, name, X, X_dev, y, sizes, z, d_dev, d_cpu, params, rounds, predict_host
) -> dict:
    from selrank.gbdt import xgboost_objective

    xp = device.xp
    cpu_params = {**params, "device": "cpu"}
    if True:
        res: dict[str, Any] = {}
        obj = xgboost_objective(
            name, label_scale=LABEL_SCALE, min_leaf_hessian=1e-3, **_loss_options(name)
        )
        g_h, h_h = obj.grad_hess(z, y, group=sizes)
        g_d, h_d = obj.grad_hess(xp.asarray(z), y, group=sizes)
        res["grad_namespace"] = type(g_d).__module__.split(".")[0]
        res["grad_max_rel_gap"] = float(
            np.max(np.abs(device.host(g_d) - g_h)) / max(1.0, float(np.max(np.abs(g_h))))
        )
        res["hess_max_rel_gap"] = float(
            np.max(np.abs(device.host(h_d) - h_h)) / max(1.0, float(np.max(np.abs(h_h))))
        )
        b_loop = obj.train(params, d_dev, rounds, data=X_dev)
        b_host = obj.train(params, d_dev, rounds)
        b_cpu = obj.train(cpu_params, d_cpu, rounds)
        p_loop, p_host, p_cpu = (predict_host(b, obj) for b in (b_loop, b_host, b_cpu))
        res["loop_vs_host_same_device"] = compare_models(b_loop, b_host, p_loop, p_host)
        res["device_vs_cpu"] = compare_models(b_loop, b_cpu, p_loop, p_cpu)
    return res


def _verdicts(out: dict) -> dict:
    # the verdicts, rules fixed before the run: gradients agree to float64 rounding; the device
    # loop grows the trees the host objective grows on the same device; against the CPU, the
    # selrank fit agrees as closely as XGBoost's own objectives agree between GPU and CPU
    builtin = out["builtin_gpu_vs_cpu"]
    ctrl_rel = max(v["max_pred_gap_rel"] for v in builtin.values())
    ctrl_same = min(v["same_structure"] / max(v["trees"], 1) for v in builtin.values())
    checks = {}
    for name, res in out["losses"].items():
        if "error" in res:
            checks[name] = {"ran": False}
            continue
        lh, dc = res["loop_vs_host_same_device"], res["device_vs_cpu"]
        checks[name] = {
            "gradients": res["grad_max_rel_gap"] < 1e-9 and res["hess_max_rel_gap"] < 1e-9,
            "loop_equals_host_objective": lh["same_structure"] == lh["trees"]
            and lh["max_pred_gap_rel"] < 1e-4,
            "gpu_matches_cpu": (
                dc["same_structure"] / max(dc["trees"], 1) >= min(ctrl_same, 1.0) - 1e-12
                or dc["max_pred_gap_rel"] <= max(1e-4, 2.0 * ctrl_rel)
            ),
        }
    out["checks"] = checks
    out["passed"] = all(all(c.values()) for c in checks.values())
    return out


def transfers(device: Device, rows: int, n_features: int, rounds: int) -> dict:
    """Host<->device copies per round of the device loop, with ``xgboost.train(obj=...)`` as the
    positive control; CuPy's memory pool round by round."""
    import xgboost as xgb

    from selrank.gbdt import xgboost_objective

    if not device.cuda:
        return {"skipped": "no CUDA device: nothing crosses a bus on the dry run"}
    import torch
    from torch.profiler import ProfilerActivity, profile

    xp = device.xp
    X, y, sizes, qid = mslr_rows(rows, n_features, seed=2)
    X_dev = xp.asarray(X)
    d = xgb.QuantileDMatrix(X_dev, y, qid=qid)
    params = {**PARAMS, "device": "cuda"}
    pool = xp.get_default_memory_pool()
    row_bytes = 4 * rows  # one float32 per row: anything this big is a row-sized array
    out: dict[str, Any] = {"rows": rows, "profiled_rounds": rounds, "row_array_bytes": row_bytes}
    torch.cuda.init()

    class Window(xgb.callback.TrainingCallback):
        """Profile rounds 2 .. 2 + rounds - 1 (the first rounds bind, compile and warm up)."""

        def __init__(self):
            self.prof = profile(activities=[ProfilerActivity.CUDA])
            self.pool_used: list[int] = []

        def before_iteration(self, model, epoch, evals_log):
            if epoch == 2:
                device.sync()
                self.prof.start()
            return False

        def after_iteration(self, model, epoch, evals_log):
            if epoch >= 2:
                device.sync()
                self.pool_used.append(int(pool.used_bytes()))
            if epoch == 1 + rounds:
                self.prof.stop()
            return False

    control = "listwise, xgboost.train (control)"
    runs = [(name, f"{name}, device loop") for name in LOSSES] + [("listwise", control)]
    for name, mode in runs:
        obj = xgboost_objective(
            name, label_scale=LABEL_SCALE, min_leaf_hessian=1e-3, **_loss_options(name)
        )
        win = Window()
        data = None if mode == control else X_dev
        obj.train(params, d, 2 + rounds, data=data, callbacks=[win])
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "trace.json"
            win.prof.export_chrome_trace(str(path))
            trace = json.loads(path.read_text())
        copies: dict[str, list[int]] = {}
        for ev in trace.get("traceEvents", []):
            if ev.get("cat") == "gpu_memcpy" or str(ev.get("name", "")).startswith("Memcpy"):
                kind = ev.get("name", "memcpy")
                copies.setdefault(kind, []).append(int(ev.get("args", {}).get("bytes", -1)))
        out[mode] = {
            "copies": {
                k: {
                    "count_per_round": len(v) / rounds,
                    "bytes_per_round": sum(v) / rounds,
                    "largest": max(v),
                    "row_sized_per_round": sum(1 for b in v if b >= row_bytes) / rounds,
                }
                for k, v in copies.items()
            },
            "pool_used_bytes": win.pool_used,
            "kernels_seen": sum(
                1 for ev in trace.get("traceEvents", []) if ev.get("cat") == "kernel"
            ),
        }
        device.free()

    def row_sized(mode, direction):
        return sum(
            v["row_sized_per_round"] for k, v in out[mode]["copies"].items() if direction in k
        )

    checks: dict[str, bool] = {
        "profiler_sees_control_copies": row_sized(control, "DtoH") >= 1
        and row_sized(control, "HtoD") >= 1
    }
    for name, mode in runs[:-1]:
        used = out[mode]["pool_used_bytes"]
        checks[f"{name}: no row-sized copy per round"] = (
            row_sized(mode, "DtoH") == 0 and row_sized(mode, "HtoD") == 0
        )
        # a leak grows by a row-sized array each round; allocator noise is far smaller
        checks[f"{name}: memory pool does not grow"] = len(used) > 1 and (
            max(used) - min(used) < row_bytes
        )
    out["checks"] = checks
    out["passed"] = all(out["checks"].values())
    return out


def speed(
    device: Device,
    rows: int,
    n_features: int,
    gpu_rounds: int,
    cpu_rounds: int,
    cpu_threads: int,
    losses,
) -> dict:
    """Seconds per round on the device and on the CPU cores; gradient share; memory peak."""
    import xgboost as xgb

    from selrank.gbdt import xgboost_objective
    from selrank.losses import get_loss

    xp = device.xp
    t0 = time.perf_counter()
    X, y, sizes, qid = mslr_rows(rows, n_features, seed=0)
    gen_s = time.perf_counter() - t0
    out: dict[str, Any] = {
        "rows": int(y.size),
        "queries": int(sizes.size),
        "features": n_features,
        "data_seconds": gen_s,
    }
    res: list[dict] = []
    out["results"] = res
    X_dev = xp.asarray(X)
    t0 = time.perf_counter()
    d_dev = (
        xgb.QuantileDMatrix(X_dev, y, qid=qid)
        if device.cuda
        else xgb.QuantileDMatrix(X, y, qid=qid, nthread=cpu_threads)
    )
    device.sync()
    out["dmatrix_seconds_device"] = time.perf_counter() - t0
    params = {**PARAMS, "device": device.kind, "nthread": cpu_threads}

    def measure(label, where, fn, n):
        if time_left() < 30:
            row = {"method": label, "where": where, "skipped": "out of time (--budget)"}
            res.append(row)
            return row
        try:
            with MemoryPeak(device) as mem:
                timing = per_round(fn, n, device)
                t = timing["seconds_per_round"]
        except Exception as err:
            row = {"method": label, "where": where, "error": f"{type(err).__name__}: {err}"}
            print(traceback.format_exc(), file=sys.stderr, flush=True)
            res.append(row)
            device.free()
            return row
        row = {
            "method": label,
            "where": where,
            "seconds_per_round": t,
            "rounds_per_second": 1.0 / t if t > 0 else None,
            **timing,
            "device_memory_peak_bytes": mem.peak,
        }
        res.append(row)
        print(f"  {rows:>10,} {label:38s} {where:5s} {t:8.4f} s/round", file=sys.stderr, flush=True)
        device.free()
        return row

    measure(
        "XGBoost rank:ndcg",
        device.kind,
        lambda n, cb: xgb.train({**params, "objective": "rank:ndcg"}, d_dev, n, callbacks=cb),
        gpu_rounds,
    )
    for name in losses:
        obj = xgboost_objective(
            name, label_scale=LABEL_SCALE, min_leaf_hessian=1e-3, **_loss_options(name)
        )
        row = measure(
            f"selrank {name} (device loop)",
            device.kind,
            lambda n, cb, obj=obj: obj.train(params, d_dev, n, data=X_dev, callbacks=cb),
            gpu_rounds,
        )
        if "seconds_per_round" not in row:
            continue
        loss = get_loss(name, **_loss_options(name))
        bound = loss.bind(LABEL_SCALE * y, group=sizes if loss.structure == "group" else None)
        z = xp.asarray(np.random.default_rng(0).normal(scale=0.5, size=y.size))
        bound.grad_hess(z)
        device.sync()
        t0 = time.perf_counter()
        for _ in range(3):
            bound.grad_hess(z)
        device.sync()
        g = (time.perf_counter() - t0) / 3
        row["gradient_seconds"] = g
        row["gradient_share"] = (
            g / row["seconds_per_round"] if row["seconds_per_round"] > 0 else None
        )
        del bound, z
        device.free()
    d_dev = None  # free the device matrix before the CPU runs
    device.free()
    if device.cuda and cpu_rounds > 0 and time_left() > 90:
        cpu_params = {**params, "device": "cpu"}
        t0 = time.perf_counter()
        d_cpu = xgb.QuantileDMatrix(X, y, qid=qid, nthread=cpu_threads)
        out["dmatrix_seconds_cpu"] = time.perf_counter() - t0
        measure(
            "XGBoost rank:ndcg",
            "cpu",
            lambda n, cb: xgb.train(
                {**cpu_params, "objective": "rank:ndcg"}, d_cpu, n, callbacks=cb
            ),
            cpu_rounds,
        )
        for name in losses:
            obj = xgboost_objective(
                name, label_scale=LABEL_SCALE, min_leaf_hessian=1e-3, **_loss_options(name)
            )
            measure(
                f"selrank {name} (xgboost.train)",
                "cpu",
                lambda n, cb, obj=obj: obj.train(cpu_params, d_cpu, n, callbacks=cb),
                cpu_rounds,
            )
        d_cpu = None
    return out


def estimator(device: Device, rows: int, n_features: int, n_estimators: int) -> dict:
    """SelectiveRanker(backend="xgboost", device=...) end to end, against the same on the CPU."""
    from selrank import SelectiveRanker
    from selrank.metrics import ndcg  # array metric: no polars on a bare device

    X, y, sizes, _ = mslr_rows(rows, n_features, seed=3)
    cut = int(np.searchsorted(np.cumsum(sizes), 0.8 * y.size))
    n_tr = int(np.sum(sizes[:cut]))
    Xt, yt, gt = X[:n_tr], y[:n_tr], sizes[:cut]
    Xv, yv, gv = X[n_tr:], y[n_tr:], sizes[cut:]
    out: dict[str, Any] = {"rows": rows, "n_estimators": n_estimators}
    for kind in (device.kind, "cpu") if device.cuda else (device.kind,):
        t0 = time.perf_counter()
        model = SelectiveRanker(
            backend="xgboost", device=kind, n_estimators=n_estimators, max_depth=6, random_state=0
        ).fit(Xt, yt, group=gt, eval_set=[(Xv, yv)], eval_group=[gv])
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = np.asarray(model.predict(Xv), dtype=np.float64)
        pred_s = time.perf_counter() - t0
        value = float(ndcg(yv, pred, gv, k=10))
        out[kind] = {
            "fit_seconds": fit_s,
            "predict_seconds": pred_s,
            "best_iteration": getattr(model, "best_iteration_", None),
            "ndcg@10_valid": value,
            "finite": bool(np.all(np.isfinite(pred))),
        }
    return out


# -- main ------------------------------------------------------------------------------------------------
def _write(doc: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str))


def _section(doc, key, path, fn, *args):
    print(f"== {key}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        doc[key] = fn(*args)
    except Exception as err:
        doc[key] = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
        print(doc[key]["traceback"], file=sys.stderr, flush=True)
    if isinstance(doc[key], dict):
        doc[key]["section_seconds"] = time.perf_counter() - t0
    _write(doc, path)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--device",
        default=None,
        choices=["cuda", "cpu"],
        help="default: cuda where CuPy sees a device, else cpu",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny data on the CPU, seconds (CI)")
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--gpu-rounds", type=int, default=20)
    parser.add_argument("--cpu-rounds", type=int, default=3)
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--check-rows", type=int, default=60_000)
    parser.add_argument("--check-rounds", type=int, default=20)
    parser.add_argument(
        "--sections",
        nargs="+",
        default=["environment", "correctness", "transfers", "speed", "estimator"],
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds: later measurements are skipped (and say so) once too little is left",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="JSON path (default benchmarks/results/gpu_xgboost.json; a temporary file with --smoke)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.device = args.device or "cpu"
        args.rows, args.features = [4000], 12
        args.gpu_rounds, args.cpu_rounds, args.cpu_threads = 2, 1, 1
        args.check_rows, args.check_rounds = 3000, 3
    if args.device is None:
        try:
            import cupy

            args.device = "cuda" if cupy.cuda.runtime.getDeviceCount() > 0 else "cpu"
        except Exception:
            args.device = "cpu"
    if args.out is None:
        if args.smoke:
            from _smoke import smoke_out  # benchmarks/_smoke.py: $SELRANK_SMOKE_DIR

            args.out = str(smoke_out("gpu_xgboost"))
        else:
            args.out = str(Path(__file__).parent / "results" / "gpu_xgboost.json")
    warnings.filterwarnings("ignore", category=UserWarning)
    device = Device(args.device)
    path = Path(args.out)
    doc: dict[str, Any] = {"benchmark": "gpu_xgboost", "args": vars(args), "params": PARAMS}
    started = time.perf_counter()
    if args.budget:
        _DEADLINE[0] = started + args.budget
    if "environment" in args.sections:
        _section(doc, "environment", path, environment, device)
    if "correctness" in args.sections:
        _section(
            doc,
            "correctness",
            path,
            correctness,
            device,
            args.check_rows,
            args.features,
            args.check_rounds,
        )
    if "transfers" in args.sections:
        _section(
            doc,
            "transfers",
            path,
            transfers,
            device,
            min(200_000, max(args.rows)),
            args.features,
            5,
        )
    if "speed" in args.sections:
        doc["speed"] = []
        for rows in args.rows:
            if time_left() < 150:
                doc["speed"].append({"rows": rows, "skipped": "out of time (--budget)"})
                continue
            losses = LOSSES if rows <= 1_000_000 else ("listwise",)
            rounds = args.gpu_rounds if rows <= 1_000_000 else max(1, args.gpu_rounds // 2)
            key = f"speed_{rows}"
            _section(
                doc,
                key,
                path,
                speed,
                device,
                rows,
                args.features,
                rounds,
                args.cpu_rounds,
                args.cpu_threads,
                losses,
            )
            doc["speed"].append(doc.pop(key))
            _write(doc, path)
    if "estimator" in args.sections and time_left() > 40:
        _section(
            doc,
            "estimator",
            path,
            estimator,
            device,
            min(100_000, max(args.rows)),
            args.features,
            200 if not args.smoke else 5,
        )
    doc["total_seconds"] = time.perf_counter() - started
    _write(doc, path)
    report(doc)
    print(f"wrote {path}")
    return doc


def report(doc: dict) -> None:
    """The tables the run measured (stdout)."""
    env = doc.get("environment", {})
    print(f"\nXGBoost {env.get('xgboost')} on {env.get('device')} ({env.get('nvidia_smi', '')})")
    corr = doc.get("correctness", {})
    if "losses" in corr:
        print(
            f"\ncorrectness ({corr['rows']:,} rows, {corr['rounds']} rounds): passed={corr['passed']}"
        )
        for name, res in corr["losses"].items():
            if "error" in res:
                print(f"  {name:10s} error: {res['error']}")
                continue
            dc, lh = res["device_vs_cpu"], res["loop_vs_host_same_device"]
            print(
                f"  {name:10s} grad gap {res['grad_max_rel_gap']:.1e}  loop=host trees {lh['same_structure']}/{lh['trees']}"
                f"  gpu=cpu trees {dc['same_structure']}/{dc['trees']} pred gap {dc['max_pred_gap_rel']:.1e}"
            )
        for name, c in corr.get("builtin_gpu_vs_cpu", {}).items():
            print(
                f"  control {name}: gpu=cpu trees {c['same_structure']}/{c['trees']} pred gap {c['max_pred_gap_rel']:.1e}"
            )
    tr = doc.get("transfers", {})
    if "checks" in tr:
        print(f"\ntransfers: {tr['checks']}")
    for block in doc.get("speed", []):
        if "results" not in block:
            continue
        print(f"\n{block['rows']:,} rows, {block['queries']:,} queries")
        print(
            f"{'method':40s} {'where':5s} {'s/round':>9s} {'rounds/s':>9s} {'grad share':>10s} {'mem GB':>7s}"
        )
        for r in block["results"]:
            if "seconds_per_round" not in r:
                print(f"{r['method']:40s} {r['where']:5s} {r.get('error') or r.get('skipped')}")
                continue
            share = r.get("gradient_share")
            mem = r.get("device_memory_peak_bytes")
            print(
                f"{r['method']:40s} {r['where']:5s} {r['seconds_per_round']:9.4f} {r['rounds_per_second'] or 0:9.2f}"
                f" {'' if share is None else f'{share:10.2f}':>10s} {'' if mem is None else f'{mem / 1e9:7.2f}':>7s}"
            )
    est = doc.get("estimator", {})
    if est and "error" not in est:
        print(
            f"\nestimator: {json.dumps({k: v for k, v in est.items() if isinstance(v, dict)}, default=str)}"
        )


if __name__ == "__main__":
    main()
