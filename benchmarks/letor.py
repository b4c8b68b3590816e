"""LETOR benchmark: built-in LightGBM / XGBoost ranking objectives against selrank's defaults.

Protocol (the datasets' official 5-fold rotation, ``selrank.datasets.load_letor``): for each
fold, train on the training split, early-stop on the validation split, report the test split.

* Every method stops early on NDCG@10 of the validation split, computed by
  ``selrank.metrics.ndcg`` (exponential gain, ties averaged), after 50 rounds without
  improvement, at most 1000 rounds, learning rate 0.05, one thread.
* LightGBM methods use LightGBM's default trees (31 leaves, 20 rows per leaf); XGBoost
  methods XGBoost's (depth 6, ``tree_method="hist"``).
* selrank rows are ``SelectiveRanker(loss=...)`` with every other parameter at its default
  (LightGBM backend): the library defaults, chosen on the *validation* splits only.

Test NDCG@1/3/5/10 are reported as mean ± standard deviation over the five folds with
exponential gain ``2**label - 1``, tied scores averaged over their orderings, and queries
without a relevant document counted as NDCG = 0 (the convention of trec_eval and LETOR's
evaluation script; the JSON also holds the "count as 1" and "leave out" conventions, which
shift every method by the same amount per fold).

The test queries of all folds are also pooled (each query once) and every selrank row is compared
with ``lambdarank`` and ``rank_xendcg`` query by query (``selrank.metrics.paired_comparison``: mean
difference, bootstrap 95% CI, paired t-test, Holm, verdict) at NDCG@1, @3 and @10. Two ablations
isolate selectivity: the listwise loss with the constant scaling instead of exp (ListNet-like) and
the pointwise loss with the identity link instead of exp (squared error), each compared with the
selective loss it ablates.

Run: ``python benchmarks/letor.py`` (about 5 minutes on one core); ``--quick`` runs fold 1 only, ``--smoke`` checks in seconds that it runs (CI).
Writes ``benchmarks/results/letor.json``. ``--sweep`` runs the model-size sweep (stumps to
8-leaf trees, 5 to 50 trees, no early stopping) and writes ``benchmarks/results/letor_sweep.json``.

``--tune`` instead reproduces how the defaults were chosen, on the validation splits only: each
fold's validation queries are split in two halves; a model early-stops on one half and is scored
on the other, and the other way round (so early stopping does not also pick the score it is
judged by). Candidates are scored by NDCG@1/3/5/10 averaged over both datasets, the five folds
and both halves; the test splits are never read. Writes ``benchmarks/results/letor_tuning.json``.
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

CUTOFFS = (1, 3, 5, 10)
CONVENTIONS = ("zero", "one", "exclude")
LEARNING_RATE = 0.05
MAX_ROUNDS = 1000
PATIENCE = 50
SMOKE_ROUNDS: dict = {}  # --smoke only: fewer rounds than the library's defaults


def _ndcg_feval(y, group):
    from selrank.metrics import ndcg

    return lambda scores: float(ndcg(y, scores, group, k=10))


def run_lightgbm(objective, split):
    import lightgbm as lgb

    tr, va = split.train, split.validation
    params = {
        "objective": objective,
        "learning_rate": LEARNING_RATE,
        "verbosity": -1,
        "metric": "None",
        "num_threads": 1,
        "seed": 0,
    }
    dtrain = lgb.Dataset(tr.X, tr.y, group=tr.group)
    dvalid = lgb.Dataset(va.X, va.y, group=va.group, reference=dtrain)
    metric = _ndcg_feval(va.y, va.group)
    booster = lgb.train(
        params,
        dtrain,
        MAX_ROUNDS,
        valid_sets=[dvalid],
        feval=lambda p, d: ("ndcg@10", metric(p), True),
        callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
    )
    return booster.predict(
        split.test.X, num_iteration=booster.best_iteration
    ), booster.best_iteration


def run_xgboost(objective, split):
    import xgboost as xgb

    tr, va = split.train, split.validation
    params = {
        "objective": objective,
        "eta": LEARNING_RATE,
        "tree_method": "hist",
        "nthread": 1,
        "seed": 0,
        "disable_default_eval_metric": 1,
    }
    dtrain = xgb.DMatrix(tr.X, tr.y)
    dtrain.set_group(tr.group)
    dvalid = xgb.DMatrix(va.X, va.y)
    dvalid.set_group(va.group)
    metric = _ndcg_feval(va.y, va.group)
    booster = xgb.train(
        params,
        dtrain,
        MAX_ROUNDS,
        evals=[(dvalid, "valid")],
        custom_metric=lambda p, d: ("ndcg@10", metric(p)),
        early_stopping_rounds=PATIENCE,
        maximize=True,
        verbose_eval=False,
    )
    best = booster.best_iteration + 1
    return booster.predict(xgb.DMatrix(split.test.X), iteration_range=(0, best)), best


def run_selrank(loss, split, **params):
    from selrank import SelectiveRanker

    tr, va = split.train, split.validation
    ranker = SelectiveRanker(loss=loss, random_state=0, num_threads=1, **params, **SMOKE_ROUNDS)
    ranker.fit(tr.X, tr.y, group=tr.group, eval_set=[(va.X, va.y)], eval_group=[va.group])
    return ranker.predict(split.test.X), ranker.best_iteration_


METHODS = {
    "LightGBM lambdarank": lambda s: run_lightgbm("lambdarank", s),
    "LightGBM rank_xendcg": lambda s: run_lightgbm("rank_xendcg", s),
    "LightGBM regression": lambda s: run_lightgbm("regression", s),
    "XGBoost rank:ndcg": lambda s: run_xgboost("rank:ndcg", s),
    "XGBoost rank:pairwise": lambda s: run_xgboost("rank:pairwise", s),
    "selrank pointwise": lambda s: run_selrank("pointwise", s),
    "selrank pairwise": lambda s: run_selrank("pairwise", s),
    "selrank listwise": lambda s: run_selrank("listwise", s),
    # ablations: the same loss and label scale without selectivity
    "ablation listwise constant": lambda s: run_selrank("listwise", s, scaling="constant"),
    "ablation pointwise identity": lambda s: run_selrank("pointwise", s, link="identity"),
}
# each selrank or ablation row is compared query by query with these (Holm over them)
PAIRED_BASELINES = ("LightGBM lambdarank", "LightGBM rank_xendcg")
# and each ablation with the selective loss it removes selectivity from
ABLATIONS = {
    "ablation listwise constant": "selrank listwise",
    "ablation pointwise identity": "selrank pointwise",
}


# candidates compared on the validation splits (--tune); the defaults are the best listwise one
TUNING_CANDIDATES = {
    "LightGBM lambdarank": ("lightgbm", "lambdarank"),
    "LightGBM rank_xendcg": ("lightgbm", "rank_xendcg"),
    "LightGBM regression": ("lightgbm", "regression"),
    **{
        f"listwise exp, label_scale {t}, gamma {g}": (
            "selrank",
            {"loss": "listwise", "label_scale": t, "loss_params": {"gamma": g}},
        )
        for t in (0.25, 0.5, 1.0)
        for g in (1.0, 2.0, 4.0)
    },
    "listwise constant (ListNet-like), label_scale 1": (
        "selrank",
        {
            "loss": "listwise",
            "label_scale": 1.0,
            "loss_params": {"scaling": "constant", "gamma": 1.0},
        },
    ),
    **{
        f"pointwise exp, label_scale {t}": ("selrank", {"loss": "pointwise", "label_scale": t})
        for t in (0.25, 0.5, 1.0)
    },
    **{
        f"pairwise sinh cap 3, label_scale {t}": ("selrank", {"loss": "pairwise", "label_scale": t})
        for t in (0.25, 1.0)
    },
    "pairwise sigmoid, label_scale 1": (
        "selrank",
        {"loss": "pairwise", "link": "sigmoid", "label_scale": 1.0},
    ),
    "pairwise sigmoid distinct, label_scale 1": (
        "selrank",
        {
            "loss": "pairwise",
            "link": "sigmoid",
            "label_scale": 1.0,
            "loss_params": {"pairs": "distinct"},
        },
    ),
    "listwise exp, label_scale 0.25, gamma 4, hessian floor 0.5": (
        "selrank",
        {
            "loss": "listwise",
            "label_scale": 0.25,
            "loss_params": {"gamma": 4.0},
            "hessian_floor": 0.5,
        },
    ),
    "listwise exp, label_scale 0.25, gamma 4, exact Hessian": (
        "selrank",
        {
            "loss": "listwise",
            "label_scale": 0.25,
            "loss_params": {"gamma": 4.0},
            "hessian": "exact",
        },
    ),
}


def _halves(split, seed: int):
    """The validation queries in two halves: ``((rows_a, sizes_a), (rows_b, sizes_b))``."""
    sizes = np.asarray(split.group)
    in_a = np.zeros(sizes.size, dtype=bool)
    in_a[np.random.default_rng(seed).permutation(sizes.size)[: sizes.size // 2]] = True
    rows_a = np.flatnonzero(np.repeat(in_a, sizes))
    rows_b = np.flatnonzero(np.repeat(~in_a, sizes))
    return (rows_a, sizes[in_a]), (rows_b, sizes[~in_a])


def _fit_predict(kind, spec, train, X_stop, y_stop, g_stop, X_eval):
    import lightgbm as lgb

    if kind == "lightgbm":
        params = {
            "objective": spec,
            "learning_rate": LEARNING_RATE,
            "verbosity": -1,
            "metric": "None",
            "num_threads": 1,
            "seed": 0,
        }
        dtrain = lgb.Dataset(train.X, train.y, group=train.group)
        dstop = lgb.Dataset(X_stop, y_stop, group=g_stop, reference=dtrain)
        metric = _ndcg_feval(y_stop, g_stop)
        booster = lgb.train(
            params,
            dtrain,
            MAX_ROUNDS,
            valid_sets=[dstop],
            feval=lambda p, d: ("ndcg@10", metric(p), True),
            callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
        )
        return booster.predict(X_eval, num_iteration=booster.best_iteration)
    from selrank import SelectiveRanker

    ranker = SelectiveRanker(random_state=0, num_threads=1, **spec)
    ranker.fit(
        train.X, train.y, group=train.group, eval_set=[(X_stop, y_stop)], eval_group=[g_stop]
    )
    return ranker.predict(X_eval)


def tune(datasets, folds, out_path) -> dict:
    """Score every candidate on the validation splits (cross-fitted halves; see the module docstring)."""
    from selrank.datasets import load_letor
    from selrank.metrics import ndcg

    warnings.filterwarnings("ignore", category=UserWarning)
    scores: dict = {name: {} for name in TUNING_CANDIDATES}
    for ds in datasets:
        for fold in folds:
            split = load_letor(ds, fold=fold)
            va = split.validation
            (ra, ga), (rb, gb) = _halves(va, seed=fold)
            for name, (kind, spec) in TUNING_CANDIDATES.items():
                vals = []
                for (rs, gs), (re, ge) in (((ra, ga), (rb, gb)), ((rb, gb), (ra, ga))):
                    pred = _fit_predict(kind, spec, split.train, va.X[rs], va.y[rs], gs, va.X[re])
                    vals.append(
                        [float(ndcg(va.y[re], pred, ge, k=k, no_relevant="zero")) for k in CUTOFFS]
                    )
                scores[name].setdefault(ds, []).append(np.mean(vals, axis=0).tolist())
            print(f"tuning: {ds} fold {fold} done", file=sys.stderr, flush=True)
    table = {}
    for name in TUNING_CANDIDATES:
        per_ds = {ds: float(np.mean(scores[name][ds])) for ds in datasets}
        table[name] = {
            "per_dataset": per_ds,
            "mean": float(np.mean(list(per_ds.values()))),
            "ndcg_at": {ds: np.mean(scores[name][ds], axis=0).tolist() for ds in datasets},
        }
    ranked = sorted(table, key=lambda n: -table[n]["mean"])
    print("\nValidation (cross-fitted halves), mean NDCG@1/3/5/10, empty queries = 0")
    print(f"{'candidate':60s}" + "".join(f"{d:>10s}" for d in datasets) + f"{'mean':>10s}")
    for name in ranked:
        row = table[name]
        print(
            f"{name:60s}"
            + "".join(f"{row['per_dataset'][d]:10.4f}" for d in datasets)
            + f"{row['mean']:10.4f}"
        )
    doc = {
        "benchmark": "letor_tuning",
        "protocol": "validation splits only, cross-fitted halves; see --tune",
        "folds": folds,
        "candidates": {n: (k, s) for n, (k, s) in TUNING_CANDIDATES.items()},
        "results": table,
        "ranking": ranked,
    }
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(doc, indent=1, default=str))
    print(f"wrote {out_path}")
    return doc


# --sweep: small models, fixed size, no early stopping (where the loss shapes the few splits a
# model can afford)
SWEEP_SIZES = ((2, 5), (2, 20), (4, 10), (4, 50), (8, 10), (8, 50))
SWEEP_METHODS = {
    "LightGBM lambdarank": ("lightgbm", "lambdarank"),
    "LightGBM rank_xendcg": ("lightgbm", "rank_xendcg"),
    "selrank listwise": ("selrank", {"loss": "listwise"}),
    "ablation listwise constant": ("selrank", {"loss": "listwise", "scaling": "constant"}),
    "selrank pointwise": ("selrank", {"loss": "pointwise"}),
    "ablation pointwise identity": ("selrank", {"loss": "pointwise", "link": "identity"}),
}


def _fit_fixed(kind, spec, split, leaves, trees):
    import lightgbm as lgb

    tr = split.train
    tree = {"num_leaves": leaves, "min_data_in_leaf": 20, "num_threads": 1}
    if kind == "lightgbm":
        params = {"objective": spec, "learning_rate": 0.1, "verbosity": -1, "seed": 0, **tree}
        booster = lgb.train(params, lgb.Dataset(tr.X, tr.y, group=tr.group), trees)
        return booster.predict(split.test.X)
    from selrank import SelectiveRanker

    ranker = SelectiveRanker(random_state=0, n_estimators=trees, learning_rate=0.1, **tree, **spec)
    return ranker.fit(tr.X, tr.y, group=tr.group).predict(split.test.X)


def sweep(datasets, folds, out_path) -> dict:
    """Model-size sweep: pooled test NDCG@1/@10 and paired differences against lambdarank."""
    from selrank.datasets import load_letor
    from selrank.metrics import paired_comparison

    warnings.filterwarnings("ignore", category=UserWarning)
    out: dict = {}
    for ds in datasets:
        splits = [load_letor(ds, fold=k) for k in folds]
        y = np.concatenate([s.test.y for s in splits])
        group = np.concatenate([np.asarray(s.test.group) for s in splits])
        out[ds] = {}
        for leaves, trees in SWEEP_SIZES:
            scores = {
                m: np.concatenate([_fit_fixed(kind, spec, s, leaves, trees) for s in splits])
                for m, (kind, spec) in SWEEP_METHODS.items()
            }
            cmp = paired_comparison(
                scores,
                y,
                group,
                reference="LightGBM lambdarank",
                metrics=["ndcg@1", "ndcg@3", "ndcg@10"],
                no_relevant="zero",
                n_resamples=5000,
            )
            size = f"{leaves} leaves x {trees} trees"
            out[ds][size] = cmp.drop("test").to_dicts()
            for r in cmp.filter(cmp["metric"] == "ndcg@10").iter_rows(named=True):
                print(
                    f"{ds} {size:20s} {r['system']:28s} NDCG@10 {r['mean']:.4f}  vs lambdarank "
                    f"{r['diff']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] {r['verdict']}",
                    file=sys.stderr,
                    flush=True,
                )
    doc = {
        "benchmark": "letor_sweep",
        "protocol": "fixed-size models (no early stopping), learning rate 0.1, 20 rows per leaf, one thread, "
        "seed 0; test queries of all folds pooled; paired_comparison against LightGBM lambdarank "
        "(5,000 bootstrap resamples, t-test, Holm over the five other methods per metric); "
        "empty queries = 0",
        "sizes": SWEEP_SIZES,
        "methods": {m: v for m, v in SWEEP_METHODS.items()},
        "results": out,
    }
    Path(out_path).write_text(json.dumps(doc, indent=1, default=str))
    print(f"wrote {out_path}")
    return doc


def evaluate(y, scores, group) -> dict:
    from selrank.metrics import ndcg

    out = {}
    for conv in CONVENTIONS:
        out[conv] = {
            f"ndcg@{k}": float(ndcg(y, scores, group, k=k, no_relevant=conv)) for k in CUTOFFS
        }
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["mq2008", "ohsumed"])
    parser.add_argument("--folds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument(
        "--methods", nargs="+", default=list(METHODS), help="subset of the method names"
    )
    parser.add_argument("--quick", action="store_true", help="fold 1 only")
    parser.add_argument(
        "--tune", action="store_true", help="score the default candidates on the validation splits"
    )
    parser.add_argument(
        "--sweep", action="store_true", help="model-size sweep (fixed small models)"
    )
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--smoke", action="store_true", help="(CI) MQ2008 fold 1, every method, 3 rounds"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        global MAX_ROUNDS, PATIENCE, SMOKE_ROUNDS
        MAX_ROUNDS, PATIENCE = 3, 2
        SMOKE_ROUNDS = {"n_estimators": 3, "early_stopping_rounds": 2}
        args.datasets, args.quick, args.tune, args.sweep = ["mq2008"], True, False, False
        args.out = str(smoke_out("letor"))
    folds = [1] if args.quick else args.folds
    results_dir = Path(__file__).parent / "results"
    if args.tune:
        return tune(args.datasets, folds, args.out or results_dir / "letor_tuning.json")
    if args.sweep:
        return sweep(args.datasets, folds, args.out or results_dir / "letor_sweep.json")
    args.out = args.out or str(results_dir / "letor.json")
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {list(METHODS)}")

    import lightgbm
    import xgboost

    import selrank
    from selrank.datasets import load_letor

    warnings.filterwarnings("ignore", category=UserWarning)
    results: dict = {}
    paired: dict = {}
    for name in args.datasets:
        results[name] = {m: {"folds": []} for m in args.methods}
        test_scores: dict = {m: [] for m in args.methods}
        test_y, test_group = [], []
        for fold in folds:
            split = load_letor(name, fold=fold)
            test_y.append(split.test.y)
            test_group.append(np.asarray(split.test.group))
            for method in args.methods:
                t0 = time.perf_counter()
                scores, rounds = METHODS[method](split)
                seconds = time.perf_counter() - t0
                scores = np.asarray(scores, dtype=np.float64)
                test_scores[method].append(scores)
                entry = {
                    "fold": fold,
                    "rounds": int(rounds),
                    "seconds": round(seconds, 3),
                    **evaluate(split.test.y, scores, split.test.group),
                }
                results[name][method]["folds"].append(entry)
                print(
                    f"{name} fold {fold} {method:24s} ndcg@10 {entry['zero']['ndcg@10']:.4f} "
                    f"({rounds} rounds, {seconds:.1f}s)",
                    file=sys.stderr,
                    flush=True,
                )
        paired[name] = _paired(
            np.concatenate(test_y),
            np.concatenate(test_group),
            {m: np.concatenate(v) for m, v in test_scores.items()},
        )
        for method in args.methods:
            rec = results[name][method]
            for conv in CONVENTIONS:
                rec[conv] = {}
                for k in CUTOFFS:
                    vals = np.array([f[conv][f"ndcg@{k}"] for f in rec["folds"]])
                    rec[conv][f"ndcg@{k}"] = {"mean": float(vals.mean()), "std": float(vals.std())}

    summary = _summary(results, args.datasets, args.methods)
    doc = {
        "benchmark": "letor",
        "protocol": {
            "folds": folds,
            "early_stopping": f"NDCG@10 on the validation split, patience {PATIENCE}",
            "max_rounds": MAX_ROUNDS,
            "learning_rate": LEARNING_RATE,
            "threads": 1,
            "metric": "selrank.metrics.ndcg: gain 2**label - 1, ties averaged; std over folds (population)",
            "paired": "selrank.metrics.paired_comparison on the test queries of all folds pooled: mean per-query "
            "difference, 95% percentile bootstrap CI (10,000 resamples), paired t-test, Holm over the "
            "comparisons of one row, verdict; empty queries = 0",
            "empty_queries": {
                "zero": "NDCG = 0 (trec_eval, LETOR eval script; the table)",
                "one": "NDCG = 1 (LightGBM, XGBoost)",
                "exclude": "left out of the mean",
            },
        },
        "versions": {
            "selrank": selrank.__version__,
            "lightgbm": lightgbm.__version__,
            "xgboost": xgboost.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "results": results,
        "summary": summary,
        "paired": paired,
    }
    _print_table(results, args.datasets, args.methods, summary)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"\nwrote {out}")
    return doc


def _paired(y, group, scores) -> dict:
    """Pooled per-query comparisons: every selrank row against the built-in baselines, and
    every ablation against its selective loss, at NDCG@1, @3 (the top) and @10."""
    from selrank.metrics import format_comparison, paired_comparison

    out = {}
    metrics = ["ndcg@1", "ndcg@3", "ndcg@10"]
    for m in scores:
        if not (m.startswith("selrank") or m.startswith("ablation")):
            continue
        refs = [b for b in PAIRED_BASELINES if b in scores]
        if m in ABLATIONS and ABLATIONS[m] in scores:
            refs = [ABLATIONS[m], *refs]
        if not refs:
            continue
        cmp = paired_comparison(
            {m: scores[m], **{r: scores[r] for r in refs}},
            y,
            group,
            candidate=m,
            metrics=metrics,
            no_relevant="zero",
        )
        print(
            format_comparison(cmp.filter(cmp["metric"] == "ndcg@10")), file=sys.stderr, flush=True
        )
        out[m] = cmp.drop("test").to_dicts()
    return out


def _summary(results, datasets, methods) -> dict:
    """Best built-in and best selrank per dataset on mean test NDCG@10, with paired fold differences."""
    out = {}
    for name in datasets:
        mean = {m: results[name][m]["zero"]["ndcg@10"]["mean"] for m in methods}
        builtin = [m for m in methods if not m.startswith("selrank")]
        ours = [m for m in methods if m.startswith("selrank")]
        if not builtin or not ours:
            continue
        b = max(builtin, key=mean.get)
        s = max(ours, key=mean.get)
        diffs = {}
        for m in ours:
            d = np.array([x["zero"]["ndcg@10"] for x in results[name][m]["folds"]]) - np.array(
                [x["zero"]["ndcg@10"] for x in results[name][b]["folds"]]
            )
            diffs[m] = {
                "mean": float(d.mean()),
                "std": float(d.std()),
                "folds_not_worse": int(np.sum(d >= 0)),
            }
        out[name] = {
            "best_builtin": b,
            "best_builtin_ndcg@10": mean[b],
            "best_selrank": s,
            "best_selrank_ndcg@10": mean[s],
            "selrank_minus_best_builtin_ndcg@10": diffs,
            "goal_met": bool(mean[s] >= mean[b]),
        }
    return out


def _print_table(results, datasets, methods, summary) -> None:
    for name in datasets:
        print(
            f"\n{name.upper()} — test NDCG (mean ± std over folds; gain 2^l-1, ties averaged, empty queries = 0)"
        )
        print(f"{'method':24s}" + "".join(f"{'NDCG@' + str(k):>17s}" for k in CUTOFFS))
        for m in methods:
            rec = results[name][m]["zero"]
            print(
                f"{m:24s}"
                + "".join(
                    f"{rec[f'ndcg@{k}']['mean']:>10.4f} ± {rec[f'ndcg@{k}']['std']:.3f}"
                    for k in CUTOFFS
                )
            )
        if name in summary:
            s = summary[name]
            d = s["selrank_minus_best_builtin_ndcg@10"][s["best_selrank"]]
            print(
                f"best built-in: {s['best_builtin']} ({s['best_builtin_ndcg@10']:.4f}); best selrank: "
                f"{s['best_selrank']} ({s['best_selrank_ndcg@10']:.4f}); paired difference "
                f"{d['mean']:+.4f} ± {d['std']:.4f}, not worse on {d['folds_not_worse']}/{len(results[name][m]['folds'])} folds"
            )


if __name__ == "__main__":
    main()
