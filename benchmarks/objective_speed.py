"""Speed of selrank's GBDT objectives on MSLR-shaped data.

Data: ``selrank.datasets.make_mslr_like(1_000_000)`` — 1M rows, 136 features, about 120
documents per query, graded labels 0–4 in MSLR-WEB's proportions.

1. Gradient/Hessian throughput (rows per second, median of repeats) for each loss family with
   the estimator defaults (``label_scale=0.25``; pointwise exp link, pairwise capped sinh on all
   pairs, listwise exp composite softmax with gamma 4):
   * ``memory floor`` — streaming the arrays an elementwise objective must touch (read the
     predictions and targets, write gradient and Hessian: 32 bytes per row), measured in the
     same run: no objective can produce its output faster from memory;
   * ``plain NumPy`` — a direct NumPy transcription of the same formulas (the pairwise one on
     a 100k-row slice: materialising all 60M pairs of the full set takes several GB);
   * ``selrank core`` — ``loss.bind(...).grad_hess`` in one piece;
   * ``selrank objective`` — what LightGBM calls: ``lightgbm_objective`` (query-aligned blocks,
     its default thread pool, the Hessian floor).
2. End-to-end seconds per boosting round of ``lightgbm.train`` with identical tree parameters,
   for LightGBM's built-in ``lambdarank`` and ``regression`` and for the selrank objectives,
   and the share of each round spent in the objective (timed inside the callable); LightGBM and
   the objective get the same number of threads (``--threads``, default 1).

Targets (issue 3): the objective takes at most 10% of a round for pointwise and listwise
losses and 25% for pairwise; pointwise at least 100M rows/s.

Run: ``python benchmarks/objective_speed.py`` (a few minutes; ``--rows`` to shrink; ``--smoke``
checks in seconds that it runs).
Writes ``benchmarks/results/objective_speed.json``.

``--listwise-numpy`` runs only the listwise comparison of issue 13 instead (1M rows, 8 features:
the objective needs only labels, predictions and query sizes): the listwise loss (exp composite
softmax, ``label_scale=0.25``) against :func:`numpy_listwise_general`, a plain NumPy transcription
of the same formulas (segment softmax with ``np.maximum.reduceat`` / ``np.add.reduceat``),
checked equal to selrank's gradient and Hessian to 1e-10, for gamma 1 and 4, with an explicit
``bind`` (``bound.grad_hess(pred)`` against the transcription given the targets' ``h(s)``) and
without (``loss.grad_hess(pred, s, group=...)`` against the transcription computing ``h(s)`` too).
Timings: both sides interleaved call by call, median of ``--repeats`` (default 15), one
thread. ``--label`` names the run (e.g. ``before``/``after`` a library change); runs are kept
side by side in ``benchmarks/results/listwise_numpy.json``.
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

TREE_PARAMS = {
    "num_leaves": 31,
    "learning_rate": 0.1,
    "min_data_in_leaf": 20,
    "max_bin": 255,
    "verbosity": -1,
    "deterministic": True,
    "force_row_wise": True,
}
LABEL_SCALE = 0.25


def median_time(fn, repeats: int) -> float:
    fn()  # warm-up (numba compilation, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


# ---- plain NumPy transcriptions of the default losses (references only) ----------------------------
def numpy_pointwise(pred, hs):
    """Exp link: g = exp(p) - exp(s), h = exp(p)."""
    e = np.exp(pred)
    return e - hs, e


def numpy_listwise(pred, offsets, hy, gamma):
    """Exp-scaling composite softmax per query: p = softmax(exp(z) / gamma), g = q p - h(s)."""
    starts = offsets[:-1]
    sizes = np.diff(offsets)
    q = np.exp(pred)
    a = q / gamma
    m = np.repeat(np.maximum.reduceat(a, starts), sizes)
    s = np.add.reduceat(np.exp(a - m), starts)
    logp = a - m - np.repeat(np.log(s), sizes)
    p = np.exp(logp)
    h = q * p
    return h - hy, p * (q + (1.0 - p) * q * q / gamma)


def numpy_segment_softmax(z, offsets, gamma):
    """Exp-scaling composite softmax per query (alpha 1, beta 0, inside the cap):
    ``q = e^z`` (also ``q'`` and ``Q``), ``p = softmax(Q / gamma)`` per segment."""
    starts, sizes = offsets[:-1], np.diff(offsets)
    q = np.exp(z)
    a = q / gamma
    m = np.repeat(np.maximum.reduceat(a, starts), sizes)
    e = np.exp(a - m)
    p = e / np.repeat(np.add.reduceat(e, starts), sizes)
    return q, p


def numpy_listwise_general(pred, offsets, gamma, hy=None, s=None):
    """``g = q p - h(s)``, ``hess = p (q' + (1 - p) q^2 / gamma)`` [C.6]; ``h(s)`` from ``s``
    when ``hy`` is not given."""
    if hy is None:
        qs, ps = numpy_segment_softmax(s, offsets, gamma)
        hy = qs * ps
    q, p = numpy_segment_softmax(pred, offsets, gamma)
    return q * p - hy, p * (q + (1.0 - p) * q * q / gamma)


def listwise_vs_numpy(rows: int, repeats: int) -> list[dict]:
    """selrank's listwise gradient/Hessian against :func:`numpy_listwise_general`, interleaved."""
    from selrank.datasets import make_mslr_like
    from selrank.losses import get_loss

    data = make_mslr_like(rows, n_features=8, mean_docs_per_query=120, seed=0)
    sizes = np.asarray(data.group)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    s = LABEL_SCALE * np.asarray(data.y, dtype=np.float64)
    pred = np.random.default_rng(0).normal(scale=0.5, size=s.size)
    out = []
    for gamma in (1.0, 4.0):
        loss = get_loss("listwise", scaling="exp", gamma=gamma)
        assert loss.scaling._hi > max(pred.max(), s.max())  # the transcription has no cap
        bound = loss.bind(s, group=sizes)
        qs, ps = numpy_segment_softmax(s, offsets, gamma)
        hy = qs * ps
        g0, h0 = bound.grad_hess(pred)
        g1, h1 = numpy_listwise_general(pred, offsets, gamma, hy=hy)
        g2, h2 = loss.grad_hess(pred, s, group=sizes)
        err = max(float(np.max(np.abs(a - b))) for a, b in ((g0, g1), (h0, h1), (g2, g1), (h2, h1)))
        if not err <= 1e-10:
            raise AssertionError(f"gamma {gamma}: selrank and NumPy differ by {err:.3g}")
        cases = {
            "explicit bind": (
                lambda bound=bound: bound.grad_hess(pred),
                lambda gamma=gamma, hy=hy: numpy_listwise_general(pred, offsets, gamma, hy=hy),
            ),
            "no bind": (
                lambda loss=loss: loss.grad_hess(pred, s, group=sizes),
                lambda gamma=gamma: numpy_listwise_general(pred, offsets, gamma, s=s),
            ),
        }
        for case, (sel, ref) in cases.items():
            sel()
            ref()
            ts, tn = [], []
            for _ in range(repeats):
                for fn, acc in ((sel, ts), (ref, tn)):
                    t0 = time.perf_counter()
                    fn()
                    acc.append(time.perf_counter() - t0)
            row = {
                "gamma": gamma,
                "case": case,
                "selrank_seconds": float(np.median(ts)),
                "numpy_seconds": float(np.median(tn)),
                "ratio_median": float(np.median(ts) / np.median(tn)),
                "ratio_paired_median": float(np.median(np.array(ts) / np.array(tn))),
                "max_abs_diff": err,
            }
            out.append(row)
            print(
                f"  gamma {gamma:g}, {case:13s}: selrank {1e3 * row['selrank_seconds']:7.1f} ms, "
                f"NumPy {1e3 * row['numpy_seconds']:7.1f} ms, ratio {row['ratio_median']:.2f} "
                f"(paired {row['ratio_paired_median']:.2f}), max |diff| {err:.1e}",
                flush=True,
            )
    return out


def numpy_pairwise(pred, y, offsets, cap=3.0):
    """All pairs, capped sinh link (linear beyond |x| = cap): vectorised over every pair."""
    sizes = np.diff(offsets)
    ii, jj = [], []
    for m in np.unique(sizes):  # one step per distinct query size, as selrank does
        sel = np.flatnonzero(sizes == m)
        ti, tj = np.triu_indices(int(m), 1)
        ii.append((offsets[sel][:, None] + ti).ravel())
        jj.append((offsets[sel][:, None] + tj).ravel())
    i, j = np.concatenate(ii), np.concatenate(jj)
    swap = y[i] < y[j]
    a, b = np.where(swap, j, i), np.where(swap, i, j)

    def f(x):
        xc = np.clip(x, -cap, cap)
        return np.sinh(xc) + np.cosh(xc) * (x - xc), np.cosh(xc)

    fh, dfh = f(pred[a] - pred[b])
    ft, _ = f(y[a] - y[b])
    g = fh - ft
    n = pred.size
    grad = np.bincount(a, g, n) - np.bincount(b, g, n)
    hess = np.bincount(a, dfh, n) + np.bincount(b, dfh, n)
    return grad, hess


def throughput(data, repeats: int) -> list[dict]:
    from selrank.gbdt import lightgbm_objective
    from selrank.losses import get_loss

    y = np.asarray(data.y, dtype=np.float64)
    sizes = np.asarray(data.group)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = y.size
    rng = np.random.default_rng(0)
    pred = rng.normal(scale=0.5, size=n)
    s = LABEL_SCALE * y
    rows = []

    g = np.empty(n)
    h = np.empty(n)

    def floor():
        np.subtract(pred, s, out=g)
        np.copyto(h, pred)

    t = median_time(floor, repeats)
    rows.append(
        {"family": "all", "method": "memory floor (32 B/row)", "seconds": t, "rows_per_s": n / t}
    )

    losses = {
        "pointwise": get_loss("pointwise", link="exp"),
        "pairwise": get_loss("pairwise"),
        "listwise": get_loss("listwise", scaling="exp", gamma=4.0),
    }
    for family, loss in losses.items():
        group = sizes if loss.structure == "group" else None
        if family == "pointwise":
            hs = np.exp(s)
            t = median_time(lambda hs=hs: numpy_pointwise(pred, hs), repeats)
            rows.append(
                {"family": family, "method": "plain NumPy", "seconds": t, "rows_per_s": n / t}
            )
        elif family == "listwise":
            hy = loss.bind(s, group=sizes).hy
            t = median_time(lambda hy=hy: numpy_listwise(pred, offsets, hy, 4.0), repeats)
            rows.append(
                {"family": family, "method": "plain NumPy", "seconds": t, "rows_per_s": n / t}
            )
        else:
            # the queries of the first 100k rows (all of them on a smaller set)
            cut = min(int(np.searchsorted(offsets, 100_000)), len(offsets) - 1)
            sub = slice(0, int(offsets[cut]))
            t = median_time(
                lambda sub=sub, cut=cut: numpy_pairwise(pred[sub], s[sub], offsets[: cut + 1]),
                max(1, repeats // 2),
            )
            m = offsets[cut]
            rows.append(
                {
                    "family": family,
                    "method": f"plain NumPy ({m} rows)",
                    "seconds": t * n / m,
                    "rows_per_s": m / t,
                }
            )
        bound = loss.bind(s, group=group)
        t = median_time(lambda bound=bound: bound.grad_hess(pred), repeats)
        rows.append({"family": family, "method": "selrank core", "seconds": t, "rows_per_s": n / t})
        obj = lightgbm_objective(loss, label_scale=LABEL_SCALE)
        t = median_time(lambda obj=obj, group=group: obj(y, pred, None, group), repeats)
        rows.append(
            {"family": family, "method": "selrank objective", "seconds": t, "rows_per_s": n / t}
        )
        print(f"  {family}: done", file=sys.stderr, flush=True)
    return rows


class Timed:
    """A LightGBM objective that records the time spent in it (signature (preds, train_set))."""

    def __init__(self, objective):
        self.objective = objective
        self.seconds: list[float] = []

    def __deepcopy__(self, memo):  # lightgbm.train deep-copies its params: keep recording here
        return self

    def __call__(self, preds, dataset):
        t0 = time.perf_counter()
        out = self.objective(preds, dataset)
        self.seconds.append(time.perf_counter() - t0)
        return out


def rounds(data, n_rounds: int, threads: int) -> list[dict]:
    import lightgbm as lgb

    from selrank.gbdt import lightgbm_objective

    train = lgb.Dataset(
        data.X,
        data.y,
        group=data.group,
        params={"max_bin": 255, "verbosity": -1},
        free_raw_data=False,
    )
    t0 = time.perf_counter()
    train.construct()
    print(f"  dataset constructed in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    methods = {
        "LightGBM lambdarank": "lambdarank",
        "LightGBM regression": "regression",
        "selrank pointwise": lightgbm_objective(
            "pointwise", label_scale=LABEL_SCALE, n_jobs=threads
        ),
        "selrank pairwise": lightgbm_objective("pairwise", label_scale=LABEL_SCALE, n_jobs=threads),
        "selrank listwise": lightgbm_objective(
            "listwise", gamma=4.0, label_scale=LABEL_SCALE, n_jobs=threads
        ),
    }
    out = []
    for name, objective in methods.items():
        timed = Timed(objective) if callable(objective) else None
        params = {**TREE_PARAMS, "num_threads": threads, "objective": timed or objective}
        if timed is not None:
            # intercept and init score from the Dataset itself: its labels are checked (the
            # objective refuses a Dataset whose labels it never saw)
            objective.set_init_score(train)
        else:
            train.set_init_score(None)
        stamps: list[float] = []

        def stamp(env, stamps=stamps):
            stamps.append(time.perf_counter())

        # the first round is a warm-up (binding, numba compilation): rounds are timed between stamps
        lgb.train(params, train, num_boost_round=1 + n_rounds, callbacks=[stamp])
        per_round = float(np.mean(np.diff(stamps)))
        if timed is not None:
            timed.seconds = timed.seconds[1:]
        row = {"method": name, "seconds_per_round": per_round}
        if timed is not None:
            obj_s = float(np.mean(timed.seconds))
            row.update({"objective_seconds_per_round": obj_s, "objective_share": obj_s / per_round})
        out.append(row)
        print(f"  {name}: {per_round:.3f}s/round", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads of LightGBM and of the selrank objective in part 2 (the same for both)",
    )
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "objective_speed.json")
    )
    parser.add_argument(
        "--listwise-numpy",
        action="store_true",
        help="only the listwise vs plain NumPy comparison (issue 13); writes listwise_numpy.json",
    )
    parser.add_argument("--label", default="run", help="name of the --listwise-numpy run")
    parser.add_argument("--smoke", action="store_true", help="(CI) 10,000 rows, 1 repeat, 2 rounds")
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.repeats, args.rounds, args.listwise_numpy = 10_000, 1, 2, False
        args.out = str(smoke_out("objective_speed"))
    if args.listwise_numpy:
        return listwise_numpy_main(args)

    import lightgbm

    import selrank
    from selrank.datasets import make_mslr_like

    warnings.filterwarnings("ignore", category=UserWarning)
    t0 = time.perf_counter()
    data = make_mslr_like(args.rows, n_features=136, mean_docs_per_query=120, seed=0)
    print(
        f"data: {data.X.shape}, {len(data.group)} queries ({time.perf_counter() - t0:.1f}s)",
        file=sys.stderr,
    )
    speed = throughput(data, args.repeats)
    per_round = rounds(data, args.rounds, args.threads)

    n = len(data.y)
    print(
        f"\nGradient + Hessian throughput, {n:,} rows ({len(data.group):,} queries, "
        f"{int(np.sum(np.asarray(data.group) * (np.asarray(data.group) - 1) // 2)):,} pairs)"
    )
    print(f"{'family':10s} {'method':32s} {'ms':>9s} {'M rows/s':>10s}")
    for r in speed:
        print(
            f"{r['family']:10s} {r['method']:32s} {1e3 * r['seconds']:9.1f} {r['rows_per_s'] / 1e6:10.1f}"
        )
    print(
        f"\nSeconds per boosting round (LightGBM and objective on {args.threads} thread(s), identical trees: "
        f"{TREE_PARAMS['num_leaves']} leaves)"
    )
    print(f"{'method':22s} {'s/round':>9s} {'objective s':>12s} {'share':>7s}")
    for r in per_round:
        share = f"{100 * r['objective_share']:6.1f}%" if "objective_share" in r else "      -"
        obj = (
            f"{r['objective_seconds_per_round']:12.3f}"
            if "objective_seconds_per_round" in r
            else f"{'-':>12s}"
        )
        print(f"{r['method']:22s} {r['seconds_per_round']:9.3f} {obj} {share}")

    shares = {r["method"]: r.get("objective_share") for r in per_round}
    point = next(
        r for r in speed if r["family"] == "pointwise" and r["method"] == "selrank objective"
    )
    targets = {
        "pointwise share <= 10%": bool(shares["selrank pointwise"] <= 0.10),
        "listwise share <= 10%": bool(shares["selrank listwise"] <= 0.10),
        "pairwise share <= 25%": bool(shares["selrank pairwise"] <= 0.25),
        "pointwise >= 100M rows/s": bool(point["rows_per_s"] >= 100e6),
    }
    print("\ntargets:", ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in targets.items()))
    doc = {
        "benchmark": "objective_speed",
        "data": {
            "rows": n,
            "features": int(data.X.shape[1]),
            "queries": len(data.group),
            "generator": "selrank.datasets.make_mslr_like(seed=0)",
        },
        "tree_params": TREE_PARAMS,
        "threads": args.threads,
        "label_scale": LABEL_SCALE,
        "throughput": speed,
        "rounds": per_round,
        "targets": targets,
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
    print(f"wrote {out}")
    return doc


def listwise_numpy_main(args) -> dict:
    import subprocess

    import selrank

    repeats = args.repeats if args.repeats != 5 else 15
    print(f"listwise vs plain NumPy, {args.rows:,} rows, run {args.label!r}", flush=True)
    rows = listwise_vs_numpy(args.rows, repeats)
    out = Path(args.out).with_name("listwise_numpy.json")
    doc = json.loads(out.read_text()) if out.exists() else {"benchmark": "listwise_numpy"}
    doc.setdefault("runs", {})
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    doc["runs"][args.label] = {
        "rows": args.rows,
        "repeats": repeats,
        "label_scale": LABEL_SCALE,
        "git_head": commit,
        "results": rows,
        "versions": {"selrank": selrank.__version__, "numpy": np.__version__},
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
    }
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out}")
    return doc


if __name__ == "__main__":
    main()
