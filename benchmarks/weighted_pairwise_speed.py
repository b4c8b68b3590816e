"""Speed of the metric-weighted pairwise loss against the unweighted one (issue 21).

For each data shape and pair selection, :class:`selrank.losses.WeightedPairwise` (|ΔNDCG|
weights, ``lambdarank_norm``) and :class:`selrank.losses.Pairwise` with the same link and the
same ``pair_method`` are bound once on the same rows; ``bound.grad_hess(pred)`` (the numba
kernels, float64, one thread) is then called on fresh predictions, the two losses taking
turns call by call so that machine load hits them alike. Reported: the median seconds per
call of each and the median of the per-turn ratios weighted / unweighted (target: at most
1.5). The first call of each (compilation, target-side work) is not timed.

Data: ``selrank.datasets.make_mslr_like`` labels (grades 0-4 in MSLR's proportions, times the
ranker's ``label_scale`` 0.25), queries of exactly 120 (MSLR-shaped) and 1,000 documents
(deep lists). Predictions start as the targets plus Gaussian noise (SD 0.5: a mid-training
ranking) and move by Gaussian steps of SD ``--step`` (default 0.05) between calls, as
boosting rounds move them; the weighted kernel re-sorts each query starting from the previous
call's ranking (an insertion sort, a full sort when too many documents move), so
``--step 1`` shows the cost when the ranking is reshuffled every call.

Run: ``python benchmarks/weighted_pairwise_speed.py`` (about a minute); ``--quick`` for a
short run (writes nothing), ``--smoke`` to check in seconds that it runs (CI). Writes ``benchmarks/results/weighted_pairwise_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("NUMBA_NUM_THREADS", "1")


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--step", type=float, default=0.05, help="SD of the score change between calls")
    ap.add_argument("--out", default="benchmarks/results/weighted_pairwise_speed.json")
    ap.add_argument(
        "--smoke", action="store_true", help="(CI) 1,200 and 2,000 rows, 1 timed call each"
    )
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    shapes = [("~120 docs/query", 120_000, 120), ("1,000 docs/query", 100_000, 1000)]
    if args.quick:
        shapes = [("~120 docs/query", 12_000, 120), ("1,000 docs/query", 10_000, 1000)]
        args.repeats = 3
    if args.smoke:
        from _smoke import smoke_out

        shapes = [("~120 docs/query", 1_200, 120), ("1,000 docs/query", 2_000, 1000)]
        args.repeats, args.out = 1, str(smoke_out("weighted_pairwise_speed"))
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
    result = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "repeats": args.repeats,
        "rows": rows,
    }
    if not args.quick or args.smoke:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
