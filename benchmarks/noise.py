"""Noisy and click-derived training labels: where does a selective loss win? (issue 21)

Protocol (one command; every choice on validation data only, the test split is read only to
score the chosen models):

* **Data.** MQ2008 and OHSUMED (the packaged LETOR collections, official folds, test NDCG@10
  on the *true* grades, queries of all folds pooled, each query once) and synthetic deep lists
  (``selrank.datasets.make_mslr_like``: about 330 documents per query, about 5 % relevant,
  one train / validation / test split per "fold" seed).
* **Label noise** on the training split (and, in the noisy-validation regime, the validation
  split):

  - ``swapP``: low-grade swaps, each grade-0 document becomes 1 and each grade-1 document
    becomes 0 with probability P; higher grades kept;
  - ``clicks``: a position-based click model. Each query gets ``--sessions`` sessions; a
    session shows the query's documents in a random order (a randomised logging policy),
    position ``r`` (from 0) is examined with probability ``1 / (r + 1)`` for ``r < 10`` (0
    below), and an examined document is clicked with probability ``eps(grade)`` =
    0.1 / 0.5 / 1.0 for grades 0 / 1 / >= 2 (the 0.1 is click noise). The training label is
    the document's click count over the sessions, capped at 4.
* **Validation regimes.** Each model is trained once; its number of rounds is chosen by early
  stopping on validation NDCG@10 (patience ``--patience``) computed twice, on the clean
  validation labels and on the same noise model applied to the validation labels (the
  realistic case: no clean labels at all). Training continues until both have stopped; each
  regime's test scores use its own best round.
* **Replicates.** ``--draws`` noise draws (1 for clean labels) times ``--seeds`` training seeds
  (``feature_fraction=0.8`` per tree, so the seed changes the model).
* **Systems.** LightGBM ``lambdarank`` and ``rank_xendcg``, XGBoost ``rank:ndcg``, and through
  selrank's LightGBM objective (library defaults: ``label_scale=0.25``, Hessian floor): the
  selective pairwise loss (capped sinh), the selective listwise loss (default, ``gamma=4``),
  the metric-weighted selective pairwise loss (:class:`selrank.losses.WeightedPairwise`,
  capped sinh, top-30 truncation, ``lambdarank_norm``), and its two ablations with the same
  weighting, truncation and normalisation: the logistic link with ``target="order"`` (the
  lambdarank twin: RankNet pairs) and the identity link (a non-selective matching loss).
  Trees: 31 leaves (XGBoost: ``lossguide``, 31 leaves), learning rate ``--lr``, one thread.
* **Statistics.** Per test query, NDCG@10 is averaged over the replicates; systems are
  compared query by query with :func:`selrank.metrics.paired_comparison` (bootstrap CI over
  queries). The reported CI adds the replicate (seed and noise-draw) variance: its standard
  error is ``sqrt(se_queries**2 + var_replicates / R)``, ``var_replicates`` the variance over
  the R replicates of the mean per-query difference; p from the normal approximation; Holm
  over the whole table; verdict "better"/"worse" when Holm p < 0.05, "parity" otherwise.
  The "best built-in" of a cell is the built-in with the highest mean *validation* NDCG@10
  in that regime (never the test score).

Run the full protocol: ``python benchmarks/noise.py --full`` (hours on one core); ``--smoke``
checks in seconds that the script runs (CI; its JSON goes to a temporary folder). The default
is a reduced protocol sized for a shared machine (see ``--help`` and the JSON's ``protocol``).
Results are written incrementally to ``--out`` (default ``benchmarks/results/noise.json``);
``--analyze --inputs A.json,B.json --out T.json`` computes the tables of several result files
with one Holm family and prints them as Markdown (the docs' tables). Also reported: how a gap
moves from clean to noisy labels (per query, the gap under noise minus the gap when clean,
clean-validation regime).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread everywhere (LightGBM's Dataset too)

BUILTINS = ("lambdarank", "rank_xendcg", "xgb_ndcg")
SYSTEMS = (
    "lambdarank",
    "rank_xendcg",
    "xgb_ndcg",
    "pairwise_sinh",
    "listwise",
    "wpair_sinh",
    "wpair_logistic",
    "wpair_identity",
)
SELECTIVE = ("pairwise_sinh", "listwise", "wpair_sinh")
LABEL_SCALE = 0.25
CLICK_EPS = (0.1, 0.5, 1.0)
CLICK_DEPTH = 10
CLICK_CAP = 4
REGIMES = ("clean_val", "noisy_val")
# gaps whose movement from clean to noisy labels is reported
SHIFTS = (
    ("wpair_sinh", "wpair_logistic"),
    ("wpair_sinh", "lambdarank"),
    ("pairwise_sinh", "rank_xendcg"),
)


# ---------------------------------------------------------------------------------------------
# data and noise
# ---------------------------------------------------------------------------------------------
class Split:
    def __init__(self, X, y, group):
        self.X = np.asarray(X, dtype=np.float32)
        self.y = np.asarray(y, dtype=np.float64)
        self.group = np.asarray(group, dtype=np.int64)


def load(dataset: str, fold: int, args):
    """(train, validation, test) Splits."""
    if dataset in ("mq2008", "ohsumed"):
        from selrank.datasets import load_letor

        d = load_letor(dataset, fold)
        return tuple(Split(s.X, s.y, s.group) for s in (d.train, d.validation, d.test))
    from selrank.datasets import make_mslr_like

    # ~5 % relevant: grades 1..4 in decreasing shares
    props = (0.95, 0.03, 0.012, 0.006, 0.002)
    data = make_mslr_like(
        args.deep_rows,
        n_features=40,
        mean_docs_per_query=args.deep_docs,
        seed=1000 + fold,
        label_proportions=props,
    )
    X, y, group = data
    bounds = np.cumsum(group)
    nq = group.size
    cut1, cut2 = int(0.6 * nq), int(0.8 * nq)
    r1, r2 = int(bounds[cut1 - 1]), int(bounds[cut2 - 1])
    return (
        Split(X[:r1], y[:r1], group[:cut1]),
        Split(X[r1:r2], y[r1:r2], group[cut1:cut2]),
        Split(X[r2:], y[r2:], group[cut2:]),
    )


def swap_low(y, p: float, rng) -> np.ndarray:
    """Grades 0 and 1 swapped with probability ``p`` each; other grades kept."""
    y = np.asarray(y, dtype=np.float64).copy()
    low = (y == 0) | (y == 1)
    flip = low & (rng.random(y.size) < p)
    y[flip] = 1.0 - y[flip]
    return y


def click_labels(y, group, sessions: int, rng) -> np.ndarray:
    """Click counts (capped) of a position-based model on randomly ordered sessions: the
    library's model (``selrank.selection.simulate_clicks``) with this benchmark's constants,
    drawing from ``rng``."""
    from selrank.selection import simulate_clicks

    return simulate_clicks(
        y, group, sessions=sessions, seed=rng, eps=CLICK_EPS, depth=CLICK_DEPTH, cap=CLICK_CAP
    )


def noisy(condition: str, y, group, rng, sessions: int) -> np.ndarray:
    if condition == "clean":
        return np.asarray(y, dtype=np.float64)
    if condition.startswith("swap"):
        return swap_low(y, float(condition[4:]), rng)
    if condition == "clicks":
        return click_labels(y, group, sessions, rng)
    raise ValueError(f"unknown condition {condition!r}")


# ---------------------------------------------------------------------------------------------
# training with two early-stopping regimes
# ---------------------------------------------------------------------------------------------
def _ndcg(y, s, group):
    from selrank.metrics import ndcg

    return float(ndcg(y, s, group, k=10, no_relevant="zero"))


class TwoStops:
    """Track validation NDCG@10 on clean and noisy labels; stop when both are stale."""

    def __init__(self, va: Split, y_noisy, patience: int):
        self.va, self.y_noisy, self.patience = va, y_noisy, patience
        self.best = {r: (-math.inf, 0) for r in REGIMES}

    def step(self, it: int, scores) -> bool:
        vals = {
            "clean_val": _ndcg(self.va.y, scores, self.va.group),
            "noisy_val": _ndcg(self.y_noisy, scores, self.va.group),
        }
        for r, v in vals.items():
            if v > self.best[r][0]:
                self.best[r] = (v, it + 1)
        return all(it + 1 - self.best[r][1] >= self.patience for r in REGIMES)


def selrank_objective(system: str):
    from selrank.estimators import RANKER_LOSS_DEFAULTS
    from selrank.gbdt import lightgbm_objective
    from selrank.losses import Listwise, Pairwise, WeightedPairwise

    if system == "pairwise_sinh":
        loss = Pairwise()
    elif system == "listwise":
        loss = Listwise(**RANKER_LOSS_DEFAULTS["listwise"])
    elif system == "wpair_sinh":
        loss = WeightedPairwise(gain_scale=LABEL_SCALE)
    elif system == "wpair_logistic":
        loss = WeightedPairwise("sigmoid", target="order", gain_scale=LABEL_SCALE)
    elif system == "wpair_identity":
        loss = WeightedPairwise("identity", gain_scale=LABEL_SCALE)
    else:
        raise ValueError(system)
    return lightgbm_objective(loss, label_scale=LABEL_SCALE, n_jobs=1)


def train_lightgbm(system, tr: Split, y_tr, va: Split, stops: TwoStops, seed, args):
    import lightgbm as lgb

    params = {
        "learning_rate": args.lr,
        "num_leaves": 31,
        "min_data_in_leaf": 20,
        "feature_fraction": 0.8,
        "feature_fraction_seed": seed,
        "seed": seed,
        "verbosity": -1,
        "num_threads": 1,
        "metric": "None",
    }
    fobj = None
    if system in ("lambdarank", "rank_xendcg"):
        params["objective"] = system
    else:
        params["objective"] = "none"
        fobj = selrank_objective(system)
    dparams = {"num_threads": 1, "verbosity": -1}
    dtr = lgb.Dataset(tr.X, y_tr, group=tr.group, params=dparams)
    dva = lgb.Dataset(va.X, va.y, group=va.group, reference=dtr, params=dparams)
    if fobj is not None:
        # the documented route for a hand-driven Booster: check the raw labels (LightGBM would
        # silently replace NaN ones) and start both sets from the loss's optimal constant
        fobj.set_init_score(dtr, dva)
    booster = lgb.Booster(params, dtr)
    booster.add_valid(dva, "valid")
    for it in range(args.max_rounds):
        if fobj is None:
            booster.update()
        else:
            booster.update(fobj=fobj)
        seen: list = []  # the validation set's running scores, through a custom metric
        booster.eval_valid(feval=lambda p, d, seen=seen: seen.append(np.array(p)) or ("x", 0, True))
        if stops.step(it, seen[0]):
            break
    if fobj is not None:  # the scores with the constant the training started from
        return lambda X, k: fobj.predict(booster, X, n_iterations=k)
    return lambda X, k: booster.predict(X, num_iteration=k, raw_score=True)


def train_xgboost(tr: Split, y_tr, va: Split, stops: TwoStops, seed, args):
    import xgboost as xgb

    params = {
        "objective": "rank:ndcg",
        "eta": args.lr,
        "tree_method": "hist",
        "grow_policy": "lossguide",
        "max_leaves": 31,
        "max_depth": 0,
        "min_child_weight": 1,
        "colsample_bytree": 0.8,
        "seed": seed,
        "nthread": 1,
        "disable_default_eval_metric": 1,
    }
    dtr = xgb.DMatrix(tr.X, y_tr)
    dtr.set_group(tr.group)
    dva = xgb.DMatrix(va.X)
    booster = xgb.Booster(params, [dtr, dva])
    for it in range(args.max_rounds):
        booster.update(dtr, it)
        if stops.step(it, booster.predict(dva, output_margin=True)):
            break
    return lambda X, k: booster.predict(xgb.DMatrix(X), output_margin=True, iteration_range=(0, k))


def run_one(system, tr, y_tr, va, y_va_noisy, te, seed, args):
    from selrank.metrics import ndcg

    stops = TwoStops(va, y_va_noisy, args.patience)
    t0 = time.process_time()
    if system == "xgb_ndcg":
        predict = train_xgboost(tr, y_tr, va, stops, seed, args)
    else:
        predict = train_lightgbm(system, tr, y_tr, va, stops, seed, args)
    out = {"cpu_s": round(time.process_time() - t0, 2)}
    for r in REGIMES:
        val, k = stops.best[r]
        s = predict(te.X, k)
        per_q = ndcg(te.y, s, te.group, k=10, no_relevant="zero", reduction="none")
        out[r] = {"val_ndcg10": val, "rounds": k, "test": np.round(per_q, 6).tolist()}
    return out


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------
def complete_folds(cell) -> list[str]:
    """The folds of a cell that every system of the cell has finished (all replicates): a
    run stopped part-way is analysed on these only."""
    runs = {s: r for s, r in cell["runs"].items() if r}
    if not runs:
        return []
    full = max(len(reps) for r in runs.values() for reps in r.values())
    folds = set.intersection(*(set(r) for r in runs.values()))
    return sorted(f for f in folds if all(len(r[f]) == full for r in runs.values()))


def _cell_scores(cell, system, regime):
    """Per-query test NDCG@10 of ``system`` (replicates x queries, the complete folds
    concatenated) and the mean validation NDCG@10."""
    reps = cell["runs"][system]  # fold -> list of replicate results
    folds = complete_folds(cell)
    if not folds:
        raise ValueError("no complete fold")
    n_rep = len(reps[folds[0]])
    mat = np.concatenate(
        [np.array([reps[f][i][regime]["test"] for i in range(n_rep)]) for f in folds], axis=1
    )
    val = float(np.mean([reps[f][i][regime]["val_ndcg10"] for f in folds for i in range(n_rep)]))
    return mat, val


def compare_values(a_mat, b_mat, n_resamples=2000, seed=0):
    """Mean per-query difference a - b with (1) the bootstrap CI over queries of
    :func:`selrank.metrics.significance.paired_bootstrap_ci` on replicate-averaged values and
    (2) the CI and p-value with the replicate variance added."""
    from selrank.metrics.significance import paired_bootstrap_ci

    a_q, b_q = a_mat.mean(axis=0), b_mat.mean(axis=0)
    d_q = a_q - b_q
    n, r = d_q.size, a_mat.shape[0]
    diff = float(d_q.mean())
    lo, hi = paired_bootstrap_ci(a_q, b_q, n_resamples=n_resamples, seed=seed)[:2]
    se_q = float(d_q.std(ddof=1) / math.sqrt(n))
    rep_means = (a_mat - b_mat).mean(axis=1)
    var_r = float(rep_means.var(ddof=1)) if r > 1 else 0.0
    se = math.sqrt(se_q**2 + var_r / r)
    z = diff / se if se > 0 else 0.0
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return {
        "diff": diff,
        "ci_queries": [float(lo), float(hi)],
        "se_queries": se_q,
        "sd_replicates": math.sqrt(var_r),
        "ci": [diff - 1.96 * se, diff + 1.96 * se],
        "p": p,
        "n_queries": n,
        "n_replicates": r,
    }


def analyze(results: dict) -> dict:
    from selrank.metrics import holm

    rows = []
    summary = []
    for key, cell in results["cells"].items():
        dataset, condition = key.split("/")
        systems = [s for s in SYSTEMS if s in cell["runs"] and cell["runs"][s]]
        for regime in REGIMES:
            if condition == "clean" and regime == "noisy_val":
                continue
            mats, vals = {}, {}
            for s in systems:
                try:
                    mats[s], vals[s] = _cell_scores(cell, s, regime)
                except (KeyError, ValueError):
                    continue
            if not mats:
                continue
            # the same folds for every system
            width = min(m.shape[1] for m in mats.values())
            mats = {s: m for s, m in mats.items() if m.shape[1] == width}
            for s, m in mats.items():
                summary.append(
                    {
                        "dataset": dataset,
                        "condition": condition,
                        "regime": regime,
                        "system": s,
                        "test_ndcg10": float(m.mean()),
                        "val_ndcg10": vals[s],
                        "replicates": int(m.shape[0]),
                        "queries": int(m.shape[1]),
                        "folds": complete_folds(cell),
                    }
                )
            builtins = [b for b in BUILTINS if b in mats]
            best = max(builtins, key=lambda b: vals[b]) if builtins else None
            pairs = []
            for s in SELECTIVE:
                if s in mats and best is not None:
                    pairs.append((s, best, "vs best built-in (by validation)"))
            for s, t, why in (
                ("wpair_sinh", "wpair_logistic", "selectivity: sinh vs logistic twin"),
                ("wpair_sinh", "wpair_identity", "sinh vs identity link"),
                ("wpair_logistic", "lambdarank", "twin vs LightGBM lambdarank"),
            ):
                if s in mats and t in mats:
                    pairs.append((s, t, why))
            for s, t, why in pairs:
                n_rep = min(mats[s].shape[0], mats[t].shape[0])
                c = compare_values(mats[s][:n_rep], mats[t][:n_rep])
                rows.append(
                    {
                        "dataset": dataset,
                        "condition": condition,
                        "regime": regime,
                        "system": s,
                        "reference": t,
                        "comparison": why,
                        **c,
                    }
                )
    # how a gap moves from clean to noisy labels (per query: gap at noise - gap when clean)
    for key, cell in results["cells"].items():
        dataset, condition = key.split("/")
        clean = results["cells"].get(f"{dataset}/clean")
        if condition == "clean" or clean is None:
            continue
        for s, t in SHIFTS:
            try:
                a1, _ = _cell_scores(cell, s, "clean_val")
                b1, _ = _cell_scores(cell, t, "clean_val")
                a0, _ = _cell_scores(clean, s, "clean_val")
                b0, _ = _cell_scores(clean, t, "clean_val")
            except (KeyError, ValueError):
                continue
            if not (a1.shape[1] == b1.shape[1] == a0.shape[1] == b0.shape[1]):
                continue
            r1 = min(a1.shape[0], b1.shape[0])
            r0 = min(a0.shape[0], b0.shape[0])
            d1, d0 = a1[:r1] - b1[:r1], a0[:r0] - b0[:r0]
            dq = d1.mean(axis=0) - d0.mean(axis=0)
            se_q = float(dq.std(ddof=1) / math.sqrt(dq.size))
            v1 = float(d1.mean(axis=1).var(ddof=1)) / r1 if r1 > 1 else 0.0
            v0 = float(d0.mean(axis=1).var(ddof=1)) / r0 if r0 > 1 else 0.0
            se = math.sqrt(se_q**2 + v1 + v0)
            diff = float(dq.mean())
            rows.append(
                {
                    "dataset": dataset,
                    "condition": condition,
                    "regime": "clean_val",
                    "system": s,
                    "reference": t,
                    "comparison": f"shift of the gap from clean to {condition}",
                    "diff": diff,
                    "ci": [diff - 1.96 * se, diff + 1.96 * se],
                    "p": math.erfc(abs(diff / se) / math.sqrt(2.0)) if se > 0 else 1.0,
                    "n_queries": int(dq.size),
                    "n_replicates": r1,
                }
            )
    p = np.array([r["p"] for r in rows]) if rows else np.zeros(0)
    adj = holm(p) if p.size else p
    for r, a in zip(rows, adj, strict=True):
        r["p_holm"] = float(a)
        sig = a < 0.05
        r["verdict"] = ("better" if r["diff"] > 0 else "worse") if sig else "parity"
    return {"summary": summary, "comparisons": rows, "holm_family": len(rows)}


def markdown(tables: dict) -> str:
    out = []
    cells: dict = {}
    for s in tables["summary"]:
        cells.setdefault((s["dataset"], s["condition"], s["regime"]), {})[s["system"]] = s
    out.append("| dataset | labels | validation | " + " | ".join(SYSTEMS) + " |")
    out.append("|---|---|---|" + "---|" * len(SYSTEMS))
    for (d, c, r), row in cells.items():
        vals = [f"{row[s]['test_ndcg10']:.4f}" if s in row else "–" for s in SYSTEMS]
        out.append(f"| {d} | {c} | {r} | " + " | ".join(vals) + " |")
    out.append("")
    out.append(
        "| dataset | labels | validation | system | reference | Δ NDCG@10 | 95% CI (queries + replicates) | Holm p | verdict |"
    )
    out.append("|---|---|---|---|---|---|---|---|---|")
    for r in tables["comparisons"]:
        out.append(
            f"| {r['dataset']} | {r['condition']} | "
            f"{'shift from clean' if r['comparison'].startswith('shift') else r['regime']} "
            f"| {r['system']} | {r['reference']} "
            f"| {r['diff']:+.4f} | [{r['ci'][0]:+.4f}, {r['ci'][1]:+.4f}] | {r['p_holm']:.3g} | {r['verdict']} |"
        )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="the full protocol (overrides sizes)")
    ap.add_argument("--datasets", default="mq2008")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--conditions", default="clean,swap0.3,clicks")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--max-rounds", type=int, default=300)
    ap.add_argument("--patience", type=int, default=30)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--deep-rows", type=int, default=60_000)
    ap.add_argument("--deep-docs", type=float, default=330.0)
    ap.add_argument("--out", default="benchmarks/results/noise.json")
    ap.add_argument(
        "--analyze",
        action="store_true",
        help="tables (one Holm family) from the result files --inputs, written to --out",
    )
    ap.add_argument(
        "--inputs",
        default="benchmarks/results/noise.json,benchmarks/results/noise_ohsumed.json,"
        "benchmarks/results/noise_deep.json",
    )
    ap.add_argument(
        "--smoke", action="store_true", help="(CI) MQ2008 fold 1, 3 rounds, one replicate"
    )
    args = ap.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.datasets, args.folds, args.conditions = "mq2008", "1", "clean,clicks"
        args.draws = args.seeds = 1
        args.max_rounds, args.patience, args.sessions = 3, 2, 2
        args.out = str(smoke_out("noise"))
        Path(args.out).unlink(missing_ok=True)  # no resume from an earlier smoke run
    out = Path(args.out)
    if args.analyze:
        # one Holm family over every result file given (cells of all datasets together)
        results = {"cells": {}, "protocols": {}}
        for name in args.inputs.split(","):
            part = json.loads(Path(name).read_text())
            results["cells"].update(part["cells"])
            results["protocols"][name] = part["protocol"]
        tables = {**analyze(results), "inputs": results["protocols"]}
        out.write_text(json.dumps(tables, indent=1))
        print(markdown(tables))
        return 0
    if args.full:
        args.datasets = "mq2008,ohsumed,deep"
        args.folds = "1,2,3,4,5"
        args.conditions = "clean,swap0.1,swap0.2,swap0.3,clicks"
        args.systems = ",".join(SYSTEMS)
        args.draws, args.seeds = max(args.draws, 3), max(args.seeds, 3)
    datasets = args.datasets.split(",")
    folds = [int(f) for f in args.folds.split(",")]
    conditions = args.conditions.split(",")
    systems = args.systems.split(",")
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"unknown system {s!r}; choose from {SYSTEMS}")
    results = {
        "protocol": {
            "command": " ".join([sys.executable, *sys.argv]),
            "datasets": datasets,
            "folds": folds,
            "conditions": conditions,
            "systems": systems,
            "draws": args.draws,
            "seeds": args.seeds,
            "lr": args.lr,
            "max_rounds": args.max_rounds,
            "patience": args.patience,
            "sessions": args.sessions,
            "click_eps": CLICK_EPS,
            "deep_rows": args.deep_rows,
            "deep_docs": args.deep_docs,
            "full": args.full,
        },
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "cells": {},
    }
    if out.exists():  # resume: keep what an earlier run of the same protocol measured
        old = json.loads(out.read_text())
        if old.get("protocol", {}).get("conditions") == conditions:
            results["cells"] = old.get("cells", {})
    out.parent.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore")
    t_start = time.time()
    # order: fold-major so that partial results already pool several folds per cell
    for dataset in datasets:
        for fold in folds:
            tr, va, te = load(dataset, fold, args)
            for condition in conditions:
                key = f"{dataset}/{condition}"
                cell = results["cells"].setdefault(key, {"runs": {}})
                n_draws = 1 if condition == "clean" else args.draws
                for draw in range(n_draws):
                    rng = np.random.default_rng([fold, draw, zlib.crc32(condition.encode())])
                    y_tr = noisy(condition, tr.y, tr.group, rng, args.sessions)
                    y_va = noisy(condition, va.y, va.group, rng, args.sessions)
                    for seed in range(args.seeds):
                        for system in systems:
                            runs = cell["runs"].setdefault(system, {}).setdefault(str(fold), [])
                            idx = draw * args.seeds + seed
                            if idx < len(runs):
                                continue
                            res = run_one(system, tr, y_tr, va, y_va, te, seed, args)
                            res.update({"draw": draw, "seed": seed})
                            runs.append(res)
                            print(
                                f"[{time.time() - t_start:7.0f}s] {key} fold {fold} draw {draw} "
                                f"seed {seed} {system}: val {res['clean_val']['val_ndcg10']:.4f} "
                                f"test {np.mean(res['clean_val']['test']):.4f} "
                                f"rounds {res['clean_val']['rounds']}/{res['noisy_val']['rounds']} "
                                f"cpu {res['cpu_s']}s",
                                flush=True,
                            )
                        tmp = out.with_suffix(".tmp")
                        tmp.write_text(json.dumps(results))
                        os.replace(tmp, out)
    results["tables"] = analyze(results)
    out.write_text(json.dumps(results))
    print(markdown(results["tables"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
