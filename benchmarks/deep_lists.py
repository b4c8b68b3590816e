"""Deep lists: the pairwise objective with pair sampling (``pair_method``) vs LightGBM lambdarank.

1. **Speed.** Synthetic MSLR-shaped rows (``make_mslr_like``, 136 features) regrouped into
   queries of exactly 1,000 and 4,000 documents (200k rows each by default). For LightGBM's
   built-in ``lambdarank`` (its default truncation: pairs whose better document is in the
   top 30) and the selrank pairwise objective (capped sinh, ``label_scale=0.25``) with
   ``pair_method`` = ``all``, ``topk`` (k = 32, XGBoost's default) and ``mean`` (one partner
   per document), one ``lightgbm.Booster`` each on the same data set with identical tree
   parameters on one thread (``num_threads=1``, ``n_jobs=1``) is boosted round by round,
   the boosters taking turns (their order rotates every round), so that machine load hits
   them alike. Recorded: seconds per ``Booster.update`` and, for selrank, the seconds spent
   inside the objective callable; each round's ratio ``objective seconds / lambdarank
   round`` is taken within the round, and the table shows medians over the rounds (the first
   round, which compiles and binds, is not timed).
2. **Quality.** MQ2008 and OHSUMED, the 5 official folds (``selrank.datasets.load_letor``): the pairwise
   objective with ``all`` pairs vs ``topk`` (k = 10, the evaluation cutoff) and ``mean``
   (m = 1), learning rate 0.05, early stopping on validation NDCG@10 (patience 50, at most 500
   rounds), test NDCG@10 per query (queries without relevant documents left out), pooled over
   the folds. The paired difference (method - all) gets a 95% percentile bootstrap CI over
   queries (10,000 resamples).

Targets (issue 13): at 1,000 and at 4,000 documents per query the ``topk`` objective costs at
most one LightGBM ``lambdarank`` round; NDCG at parity with all pairs (paired CI).

Run: ``python benchmarks/deep_lists.py`` (a few minutes on one core); ``--quick`` for a short
run, ``--smoke`` to check in seconds that it runs (CI; JSON to a temporary folder). Writes ``benchmarks/results/deep_lists.json``.
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
    "num_threads": 1,
}
LABEL_SCALE = 0.25
TOPK = 32
QUALITY_METHODS = {
    "all": {},
    "topk (k=10)": {"pair_method": "topk", "num_pair_per_sample": 10},
    "mean (m=1)": {"pair_method": "mean", "num_pair_per_sample": 1},
}


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


def deep_data(n_rows: int, docs: int):
    """MSLR-shaped rows in queries of exactly ``docs`` documents."""
    from selrank.datasets import make_mslr_like

    data = make_mslr_like(n_rows, n_features=136, mean_docs_per_query=docs, seed=0)
    n_q = n_rows // docs
    return (
        data.X[: n_q * docs],
        np.asarray(data.y[: n_q * docs], dtype=np.float64),
        np.full(n_q, docs),
    )


def speed_methods():
    from selrank.gbdt import lightgbm_objective

    def obj(**kw):
        return lightgbm_objective("pairwise", label_scale=LABEL_SCALE, n_jobs=1, **kw)

    return {
        "LightGBM lambdarank": None,
        "selrank pairwise all": lambda: obj(),
        f"selrank pairwise topk (k={TOPK})": lambda: obj(
            pair_method="topk", num_pair_per_sample=TOPK
        ),
        "selrank pairwise mean (m=1)": lambda: obj(pair_method="mean", num_pair_per_sample=1),
    }


def speed(docs: int, n_rows: int, n_rounds: int) -> dict:
    import lightgbm as lgb

    X, y, group = deep_data(n_rows, docs)
    train = lgb.Dataset(
        X, y, group=group, params={"max_bin": 255, "verbosity": -1}, free_raw_data=False
    )
    train.construct()
    methods = speed_methods()
    names = list(methods)
    boosters, timed = {}, {}
    for name, make in methods.items():
        if make is None:
            boosters[name] = lgb.Booster({**TREE_PARAMS, "objective": "lambdarank"}, train)
        else:
            o = make()
            # from the Dataset: its labels are checked (the objective refuses an unchecked
            # one); 0 for a pairwise loss, so the shared Dataset needs no init score
            o.fit_intercept(train)
            timed[name] = Timed(o)
            boosters[name] = lgb.Booster({**TREE_PARAMS, "objective": "none"}, train)
    per_round = {k: [] for k in names}
    for t in range(1 + n_rounds):  # round 0 is a warm-up (binding, numba compilation)
        order = names[t % len(names) :] + names[: t % len(names)]  # rotate: no method always first
        for name in order:
            t0 = time.perf_counter()
            boosters[name].update(fobj=timed.get(name))
            if t:
                per_round[name].append(time.perf_counter() - t0)
        print(
            f"  {docs} docs/query, round {t}/{n_rounds}: "
            + ", ".join(
                f"{k.replace('selrank pairwise ', '')} {v[-1]:.3f}s"
                for k, v in per_round.items()
                if t
            ),
            file=sys.stderr,
            flush=True,
        )
    lam = np.asarray(per_round[names[0]])
    rows = [{"method": names[0], "seconds_per_round": float(np.median(lam))}]
    for name in names[1:]:
        obj = np.asarray(timed[name].seconds[1:])
        ratio = obj / lam  # within each round: the methods ran back to back
        rows.append(
            {
                "method": name,
                "seconds_per_round": float(np.median(per_round[name])),
                "objective_seconds_per_round": float(np.median(obj)),
                "objective_over_lambdarank_round": float(np.median(ratio)),
                "ratios_per_round": ratio.tolist(),
            }
        )
    n_pairs = int(np.sum(group * (group - 1) // 2))
    return {
        "docs_per_query": docs,
        "rows": int(y.size),
        "queries": int(group.size),
        "pairs": n_pairs,
        "rounds_timed": n_rounds,
        "methods": rows,
    }


# ---- quality on LETOR -----------------------------------------------------------------------------
def train_pairwise(split, kw: dict, max_rounds: int):
    import lightgbm as lgb

    from selrank.gbdt import lightgbm_objective
    from selrank.metrics import ndcg

    tr, va = split.train, split.validation
    obj = lightgbm_objective("pairwise", label_scale=LABEL_SCALE, n_jobs=1, **kw)
    dtrain = obj.set_init_score(lgb.Dataset(tr.X, tr.y, group=tr.group))
    dvalid = lgb.Dataset(va.X, va.y, group=va.group, reference=dtrain)
    obj.fit_intercept(tr.y, group=tr.group)
    dvalid.set_init_score(obj.init_score(va.y.size))
    params = {
        "objective": obj,
        "learning_rate": 0.05,
        "verbosity": -1,
        "metric": "None",
        "num_threads": 1,
        "seed": 0,
        "deterministic": True,
    }
    feval = lambda p, d: ("ndcg@10", float(ndcg(va.y, p, va.group, k=10)), True)  # noqa: E731
    t0 = time.perf_counter()
    booster = lgb.train(
        params,
        dtrain,
        max_rounds,
        valid_sets=[dvalid],
        feval=feval,
        callbacks=[lgb.early_stopping(50, verbose=False)],
    )
    seconds = time.perf_counter() - t0
    scores = booster.predict(split.test.X, num_iteration=booster.best_iteration) + obj.intercept_
    return scores, int(booster.best_iteration), seconds


def bootstrap_ci(d: np.ndarray, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(n_resamples, d.size))
    means = d[idx].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def quality(dataset: str, folds, max_rounds: int) -> dict:
    from selrank.datasets import load_letor
    from selrank.metrics import ndcg

    per_query = {k: [] for k in QUALITY_METHODS}
    details = []
    for fold in folds:
        split = load_letor(dataset, fold=fold)
        te = split.test
        for name, kw in QUALITY_METHODS.items():
            scores, best, seconds = train_pairwise(split, kw, max_rounds)
            v = np.asarray(
                ndcg(te.y, scores, te.group, k=10, no_relevant="exclude", reduction="none")
            )
            per_query[name].append(v)
            details.append(
                {
                    "fold": fold,
                    "method": name,
                    "best_iteration": best,
                    "train_seconds": seconds,
                    "test_ndcg@10": float(np.nanmean(v)),
                }
            )
            print(
                f"  {dataset} fold {fold} {name}: NDCG@10 {np.nanmean(v):.4f} ({best} rounds, {seconds:.1f}s)",
                file=sys.stderr,
                flush=True,
            )
    pooled = {k: np.concatenate(v) for k, v in per_query.items()}
    keep = ~np.isnan(pooled["all"])
    out = {
        "data": f"{dataset} (selrank.datasets.load_letor)",
        "learning_rate": 0.05,
        "max_rounds": max_rounds,
        "early_stopping": "validation NDCG@10, patience 50",
        "label_scale": LABEL_SCALE,
        "folds": list(folds),
        "queries": int(keep.sum()),
        "per_fold": details,
        "comparisons": [],
    }
    for name in list(QUALITY_METHODS)[1:]:
        d = pooled[name][keep] - pooled["all"][keep]
        lo, hi = bootstrap_ci(d)
        out["comparisons"].append(
            {
                "method": name,
                "baseline": "all",
                "mean_ndcg@10": float(pooled[name][keep].mean()),
                "baseline_ndcg@10": float(pooled["all"][keep].mean()),
                "diff": float(d.mean()),
                "ci95": [lo, hi],
                "ci_contains_0": bool(lo <= 0.0 <= hi),
                "n_better": int(np.sum(d > 0)),
                "n_worse": int(np.sum(d < 0)),
            }
        )
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rows", type=int, default=200_000, help="rows of each synthetic speed data set"
    )
    parser.add_argument("--rounds", type=int, default=6, help="timed boosting rounds (interleaved)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: small data, 2 rounds, 1,000 documents per query only, fold 1",
    )
    parser.add_argument(
        "--part",
        choices=("all", "speed", "quality"),
        default="all",
        help="run one part only; the other is kept from --out",
    )
    parser.add_argument(
        "--datasets", default="mq2008,ohsumed", help="LETOR collections of the quality part"
    )
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "deep_lists.json"))
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) 4,000 rows, 2 rounds, 1,000 documents per query, MQ2008 fold 1, 5 rounds",
    )
    args = parser.parse_args(argv)

    import lightgbm

    import selrank

    warnings.filterwarnings("ignore", category=UserWarning)
    docs_list = (1000, 4000)
    folds, max_rounds = (1, 2, 3, 4, 5), 500
    if args.quick:
        args.rows, args.rounds = 40_000, 2
        docs_list, folds, max_rounds = (1000,), (1,), 60
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.rounds, args.part, args.datasets = 4_000, 2, "all", "mq2008"
        docs_list, folds, max_rounds = (1000,), (1,), 5
        args.out = str(smoke_out("deep_lists"))
    out = Path(args.out)
    old = json.loads(out.read_text()) if args.part != "all" and out.exists() else {}
    t_start = time.perf_counter()
    if args.part == "quality":
        speed_rows = old["speed"]["results"]
        for key in ("machine", "runtime_seconds"):  # the earlier run's, kept with its speed part
            if key in old and key not in old["speed"]:
                old["speed"][key] = old[key]
    else:
        speed_rows = [speed(d, args.rows, args.rounds) for d in docs_list]
    if args.part == "speed":
        quals = {
            k[len("quality_") :] if k != "quality" else "mq2008": v
            for k, v in old.items()
            if k.startswith("quality")
        }
    else:
        quals = {ds: quality(ds, folds, max_rounds) for ds in args.datasets.split(",")}

    print(
        f"\nSeconds per boosting round, 1 thread, {TREE_PARAMS['num_leaves']} leaves; selrank: time inside the "
        "objective and its ratio to one LightGBM lambdarank round (median over interleaved rounds)"
    )
    print(
        f"{'docs/query':>10s} {'method':36s} {'s/round':>8s} {'objective s':>12s} {'obj / lambdarank':>17s}"
    )
    for block in speed_rows:
        for r in block["methods"]:
            obj = (
                f"{r['objective_seconds_per_round']:12.4f}"
                if "objective_seconds_per_round" in r
                else f"{'-':>12s}"
            )
            rat = (
                f"{r['objective_over_lambdarank_round']:16.2f}x"
                if "objective_over_lambdarank_round" in r
                else f"{'-':>17s}"
            )
            print(
                f"{block['docs_per_query']:10d} {r['method']:36s} {r['seconds_per_round']:8.3f} {obj} {rat}"
            )
    for ds, qual in quals.items():
        print(
            f"\n{ds} test NDCG@10, {len(qual['folds'])} fold(s) pooled ({qual['queries']} queries with a relevant "
            "document): method - all pairs, 95% bootstrap CI"
        )
        for c in qual["comparisons"]:
            print(
                f"  {c['method']:14s} {c['mean_ndcg@10']:.4f} vs {c['baseline_ndcg@10']:.4f}: diff {c['diff']:+.4f} "
                f"[{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}] (better on {c['n_better']}, worse on {c['n_worse']})"
            )

    targets = {}
    for block in speed_rows:
        top = next(r for r in block["methods"] if r["method"].startswith("selrank pairwise topk"))
        targets[f"topk objective <= 1 lambdarank round at {block['docs_per_query']} docs"] = bool(
            top["objective_over_lambdarank_round"] <= 1.0
        )
    for ds, qual in quals.items():
        topk_q = next(c for c in qual["comparisons"] if c["method"].startswith("topk"))
        targets[f"topk NDCG@10 at parity with all on {ds} (CI contains 0)"] = topk_q[
            "ci_contains_0"
        ]
    print("\ntargets:", ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in targets.items()))
    doc = {
        "benchmark": "deep_lists",
        "quick": bool(args.quick),
        "speed": old.get("speed")
        if args.part == "quality"
        else {
            "data": "selrank.datasets.make_mslr_like(seed=0, n_features=136), regrouped into equal queries",
            "tree_params": TREE_PARAMS,
            "label_scale": LABEL_SCALE,
            "lightgbm_lambdarank_truncation": 30,
            "results": speed_rows,
            "runtime_seconds": time.perf_counter() - t_start,
            "machine": {
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            },
        },
        **{("quality" if ds == "mq2008" else f"quality_{ds}"): q for ds, q in quals.items()},
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
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out}")
    return doc


if __name__ == "__main__":
    main()
