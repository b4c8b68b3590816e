"""Choose SelectiveRanker's defaults by a recorded protocol on validation data only.

Protocol
--------
* Data: both packaged LETOR sets (MQ2008 and OHSUMED), the five official folds of each
  (``selrank.datasets.load_letor``): ten (dataset, fold) splits with train / validation / test.
* Candidates: :data:`GRID`, a modest grid (19) over the loss family (listwise / pairwise /
  pointwise), the scaling or link and its parameters, ``gamma`` and ``label_scale``. The
  first grid's best validation score lay on its edge (largest ``gamma``, smallest
  ``label_scale``), so it was extended past that edge once (``gamma`` 8, ``label_scale``
  0.125) before any report ran. Every
  candidate is ``SelectiveRanker(**spec, random_state=0, num_threads=1)`` with the library's
  GBDT defaults (LightGBM, 31 leaves, learning rate 0.05, at most 1000 rounds, early stopping
  after 50 rounds without a gain in validation NDCG@10).
* Baselines: LightGBM ``lambdarank`` and ``rank_xendcg`` with the same tree parameters,
  learning rate, round limit, seed and early stopping (on the same validation NDCG@10).
* Score: NDCG@10 (gain ``2**label - 1``, tied scores averaged, a query without a relevant
  document scores 1) on each split's *validation* queries.
* Choice: the candidate with the highest validation NDCG@10, averaged over the five folds
  of each dataset and then over the two datasets (each dataset weighs the same). The test
  splits are not read by the choice.
* Nested estimate of the protocol: for each outer (dataset, fold), the choice is re-made on
  the validation scores of the other splits, leaving out the split whose validation subset
  is the outer test subset; that choice's test scores on the outer fold are pooled over
  folds. This estimates what the *procedure* (not the one chosen configuration) gives.
* Report: the chosen default's test NDCG@10 against each baseline per dataset, pooled over
  the five folds' test queries (each query once), with the paired difference, a bootstrap
  95% CI (percentile, 10,000 resamples, seed 0), a paired t-test with Holm's correction
  over the two baselines, and a verdict (:func:`selrank.metrics.paired_comparison`).
  The same for the current default and, on a synthetic deep-list set nobody tuned on
  (:func:`selrank.datasets.make_mslr_like`, ~200 documents per query, labels 0-4), for the
  chosen and the current default.

Run: ``python benchmarks/choose_defaults.py`` (about 15 minutes on one core; fits are cached
in ``--cache`` so a rerun only reports). Writes ``benchmarks/results/choose_defaults.json``.
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

DATASETS = ("mq2008", "ohsumed")
FOLDS = (1, 2, 3, 4, 5)
LEARNING_RATE = 0.05
MAX_ROUNDS = 1000
PATIENCE = 50
METRIC = {"k": 10, "gain": "exponential", "ties": "average", "no_relevant": "one"}
CURRENT_DEFAULT = "listwise exp, gamma 4, label_scale 0.25"
SYNTHETIC_ROWS = 150_000
SMOKE_ROUNDS: dict = {}  # --smoke only: fewer rounds than the library's defaults


def _grid() -> dict[str, dict]:
    grid: dict[str, dict] = {}
    for g in (1.0, 2.0, 4.0):
        for t in (0.25, 0.5, 1.0):
            grid[f"listwise exp, gamma {g:g}, label_scale {t:g}"] = {
                "loss": "listwise",
                "scaling": "exp",
                "label_scale": t,
                "loss_params": {"gamma": g},
            }
    # The first grid's best validation score lay on its edge (largest gamma, smallest label
    # scale), so the grid was extended past that edge once, before the report was run.
    for g, t in ((4.0, 0.125), (8.0, 0.125), (8.0, 0.25), (8.0, 0.5)):
        grid[f"listwise exp, gamma {g:g}, label_scale {t:g}"] = {
            "loss": "listwise",
            "scaling": "exp",
            "label_scale": t,
            "loss_params": {"gamma": g},
        }
    for t in (0.5, 1.0):
        grid[f"listwise constant (ListNet-like), label_scale {t:g}"] = {
            "loss": "listwise",
            "scaling": "constant",
            "label_scale": t,
            "loss_params": {"gamma": 1.0},
        }
    grid["pairwise sigmoid, label_scale 1"] = {
        "loss": "pairwise",
        "link": "sigmoid",
        "label_scale": 1.0,
    }
    grid["pairwise sinh cap 3, label_scale 0.25"] = {
        "loss": "pairwise",
        "link": "sinh",
        "label_scale": 0.25,
        "loss_params": {"cap": 3.0},
    }
    for t in (0.25, 0.5):
        grid[f"pointwise exp, label_scale {t:g}"] = {
            "loss": "pointwise",
            "link": "exp",
            "label_scale": t,
        }
    return grid


GRID = _grid()
BASELINES = {"LightGBM lambdarank": "lambdarank", "LightGBM rank_xendcg": "rank_xendcg"}


def _ndcg10(y, scores, group) -> float:
    from selrank.metrics import ndcg

    return float(ndcg(y, scores, group, **METRIC))


def fit_baseline(objective, train, valid, X_test):
    import lightgbm as lgb

    params = {
        "objective": objective,
        "learning_rate": LEARNING_RATE,
        "verbosity": -1,
        "metric": "None",
        "num_threads": 1,
        "seed": 0,
    }
    dtrain = lgb.Dataset(train.X, train.y, group=train.group)
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.group, reference=dtrain)
    booster = lgb.train(
        params,
        dtrain,
        MAX_ROUNDS,
        valid_sets=[dvalid],
        feval=lambda p, d: ("ndcg@10", _ndcg10(valid.y, p, valid.group), True),
        callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
    )
    it = booster.best_iteration
    return booster.predict(valid.X, num_iteration=it), booster.predict(X_test, num_iteration=it), it


def fit_selrank(spec, train, valid, X_test):
    from selrank import SelectiveRanker

    spec = dict(spec)
    if "scaling" in spec and spec.get("loss") == "listwise":
        spec["loss_params"] = {**spec.get("loss_params", {}), "scaling": spec.pop("scaling")}
    ranker = SelectiveRanker(random_state=0, num_threads=1, **spec, **SMOKE_ROUNDS)
    ranker.fit(
        train.X, train.y, group=train.group, eval_set=[(valid.X, valid.y)], eval_group=[valid.group]
    )
    return ranker.predict(valid.X), ranker.predict(X_test), ranker.best_iteration_


def fit_all(methods, splits, cache: Path) -> dict:
    """Fit every method on every split (cached): validation NDCG@10, test scores, rounds."""
    cache.mkdir(parents=True, exist_ok=True)
    out: dict = {}
    for key, split in splits.items():
        for name, (kind, spec) in methods.items():
            f = cache / f"{key.replace('/', '-')}__{name.replace(' ', '_').replace('/', '_')}.npz"
            if not f.exists():
                t0 = time.perf_counter()
                fit = fit_baseline if kind == "baseline" else fit_selrank
                v, t, it = fit(spec, split.train, split.validation, split.test.X)
                np.savez(
                    f,
                    valid=np.asarray(v, float),
                    test=np.asarray(t, float),
                    rounds=int(it or 0),
                    seconds=time.perf_counter() - t0,
                )
            z = np.load(f)
            val = _ndcg10(split.validation.y, z["valid"], split.validation.group)
            out[(key, name)] = {
                "validation_ndcg@10": val,
                "valid_scores": z["valid"],
                "test_scores": z["test"],
                "rounds": int(z["rounds"]),
                "seconds": float(z["seconds"]),
            }
            print(
                f"{key:12s} {name:48s} valid NDCG@10 {val:.4f} ({int(z['rounds'])} rounds, "
                f"{float(z['seconds']):.1f}s)",
                file=sys.stderr,
                flush=True,
            )
    return out


def _outer_excluded(ds: str, fold: int) -> set[str]:
    """Splits an outer (dataset, fold) may not choose on: itself, and the fold of the same
    dataset whose validation subset is the outer test subset."""
    from selrank.datasets import fold_subsets

    test_subset = fold_subsets(fold)[2]
    same = {f"{ds}/{k}" for k in FOLDS if fold_subsets(k)[1] == test_subset}
    return {f"{ds}/{fold}"} | same


def choose(candidates, valid: dict, keys) -> str:
    """The candidate with the best validation NDCG@10, averaged per dataset, then over datasets."""

    def score(name):
        per_ds = {}
        for key in keys:
            per_ds.setdefault(key.split("/")[0], []).append(valid[(key, name)])
        return float(np.mean([np.mean(v) for v in per_ds.values()]))

    return max(candidates, key=score)


def _compare(systems, y, group, candidate, n_resamples, quiet=False):
    from selrank.metrics import format_comparison, paired_comparison

    cmp = paired_comparison(
        systems,
        y,
        group,
        candidate=candidate,
        metrics=["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"],
        n_resamples=n_resamples,
        seed=0,
        gain=METRIC["gain"],
        ties=METRIC["ties"],
        no_relevant=METRIC["no_relevant"],
    )
    if not quiet:
        print(format_comparison(cmp.filter(cmp["metric"] == "ndcg@10")))
    return cmp.drop("test").to_dicts()


def synthetic_deep_lists(seed: int = 0):
    """A deep-list set nobody tuned on: ~750 queries of ~200 documents, labels 0-4, split by query 60/20/20."""
    from types import SimpleNamespace

    from selrank.datasets import make_mslr_like

    data = make_mslr_like(SYNTHETIC_ROWS, 40, mean_docs_per_query=200, seed=seed)
    sizes = np.asarray(data.group)
    n_q = sizes.size
    order = np.random.default_rng(seed).permutation(n_q)
    parts = np.split(order, [int(0.6 * n_q), int(0.8 * n_q)])
    starts = np.r_[0, np.cumsum(sizes)[:-1]]

    def take(qs):
        qs = np.sort(qs)
        rows = np.concatenate([np.arange(starts[q], starts[q] + sizes[q]) for q in qs])
        return SimpleNamespace(X=data.X[rows], y=data.y[rows], group=sizes[qs])

    tr, va, te = (take(p) for p in parts)
    return SimpleNamespace(train=tr, validation=va, test=te)


def report(fits, splits, args) -> dict:
    keys = list(splits)
    valid = {k: v["validation_ndcg@10"] for k, v in fits.items()}
    names = list(GRID)
    table = {}
    for name in [*BASELINES, *names]:
        per = {k: valid[(k, name)] for k in keys}
        per_ds = {
            ds: float(np.mean([v for k, v in per.items() if k.startswith(ds)])) for ds in DATASETS
        }
        table[name] = {
            "per_split": per,
            "per_dataset": per_ds,
            "mean": float(np.mean(list(per_ds.values()))),
        }
    chosen = choose(names, valid, keys)
    ranked = sorted(names, key=lambda n: -table[n]["mean"])
    print("\nValidation NDCG@10 (the choice reads only these)")
    print(f"{'candidate':52s}" + "".join(f"{d:>10s}" for d in DATASETS) + f"{'mean':>10s}")
    for name in [*BASELINES, *ranked]:
        r = table[name]
        print(
            f"{name:52s}"
            + "".join(f"{r['per_dataset'][d]:10.4f}" for d in DATASETS)
            + f"{r['mean']:10.4f}"
            + ("   <- chosen" if name == chosen else "")
        )
    # nested: each outer split chooses on the validation scores of the others
    nested = {}
    for key in keys:
        ds, fold = key.split("/")
        inner = [k for k in keys if k not in _outer_excluded(ds, int(fold))]
        nested[key] = choose(names, valid, inner)
    print("\nnested choices (outer split: choice on the other splits' validation):")
    for key, name in nested.items():
        print(f"  {key:10s} {name}")

    out_valid = {}
    for ds in DATASETS:
        dkeys = [k for k in keys if k.startswith(ds)]
        y = np.concatenate([splits[k].validation.y for k in dkeys])
        group = np.concatenate([np.asarray(splits[k].validation.group) for k in dkeys])
        sub = {
            n: np.concatenate([fits[(k, n)]["valid_scores"] for k in dkeys])
            for n in (chosen, *BASELINES)
        }
        print(
            f"\n{ds.upper()} validation, 5 folds pooled ({group.size} queries; the splits that also "
            "early-stopped every model):"
        )
        out_valid[ds] = _compare(sub, y, group, chosen, args.n_resamples)

    out_tests = {}
    post_hoc = {}
    systems = [chosen, CURRENT_DEFAULT, *BASELINES]
    for ds in DATASETS:
        dkeys = [k for k in keys if k.startswith(ds)]
        scores = {}
        for name in dict.fromkeys(systems):
            scores[name] = np.concatenate([fits[(k, name)]["test_scores"] for k in dkeys])
        scores["nested protocol"] = np.concatenate(
            [fits[(k, nested[k])]["test_scores"] for k in dkeys]
        )
        y = np.concatenate([splits[k].test.y for k in dkeys])
        group = np.concatenate([np.asarray(splits[k].test.group) for k in dkeys])
        print(f"\n{ds.upper()} test, 5 folds pooled ({group.size} queries):")
        res = {"n_queries": int(group.size)}
        for cand in dict.fromkeys([chosen, CURRENT_DEFAULT, "nested protocol"]):
            sub = {cand: scores[cand], **{b: scores[b] for b in BASELINES}}
            label = cand if cand != chosen else f"{cand} (chosen)"
            res[label] = _compare(sub, y, group, cand, args.n_resamples)
        out_tests[ds] = res
        # every candidate's test verdicts, computed after the choice and not used by it: do
        # any of them reach parity with both baselines?
        all_scores = {
            n: np.concatenate([fits[(k, n)]["test_scores"] for k in dkeys]) for n in names
        }
        for n in names:
            rows = _compare(
                {n: all_scores[n], **{b: scores[b] for b in BASELINES}},
                y,
                group,
                n,
                args.n_resamples,
                quiet=True,
            )
            post_hoc.setdefault(n, {})[ds] = {
                r["reference"]: {
                    "diff": r["diff"],
                    "ci": [r["ci_low"], r["ci_high"]],
                    "p_holm": r["p_holm"],
                    "verdict": r["verdict"],
                }
                for r in rows
                if r["metric"] == "ndcg@10"
            }
    at_parity = [
        n
        for n in names
        if all(v["verdict"] != "worse" for ds in DATASETS for v in post_hoc[n][ds].values())
    ]
    print(
        "\npost hoc (test, not used for the choice): candidates not significantly below either baseline on "
        f"both datasets: {at_parity or 'none'}"
    )

    print(
        "\nSynthetic deep lists (make_mslr_like: 150,000 rows, ~200 documents per query, labels 0-4):"
    )
    syn = synthetic_deep_lists()
    syn_scores, syn_rounds = {}, {}
    for name in dict.fromkeys(systems):
        f = Path(args.cache) / f"synthetic150k__{name.replace(' ', '_')}.npz"
        if not f.exists():
            kind, spec = methods_table()[name]
            fit = fit_baseline if kind == "baseline" else fit_selrank
            t0 = time.perf_counter()
            _, t, it = fit(spec, syn.train, syn.validation, syn.test.X)
            np.savez(
                f, test=np.asarray(t, float), rounds=int(it or 0), seconds=time.perf_counter() - t0
            )
        z = np.load(f)
        syn_scores[name], syn_rounds[name] = z["test"], int(z["rounds"])
    syn_res = {"n_queries": int(syn.test.group.size), "rounds": syn_rounds}
    for cand in dict.fromkeys([chosen, CURRENT_DEFAULT]):
        sub = {cand: syn_scores[cand], **{b: syn_scores[b] for b in BASELINES}}
        syn_res[cand] = _compare(sub, syn.test.y, syn.test.group, cand, args.n_resamples)

    import lightgbm

    import selrank

    doc = {
        "benchmark": "choose_defaults",
        "protocol": __doc__.split("Protocol\n--------\n")[1].split("\n\nRun:")[0],
        "metric": METRIC,
        "gbdt": {
            "learning_rate": LEARNING_RATE,
            "max_rounds": MAX_ROUNDS,
            "early_stopping_rounds": PATIENCE,
            "num_leaves": 31,
            "threads": 1,
            "seed": 0,
        },
        "grid": GRID,
        "baselines": BASELINES,
        "validation": table,
        "validation_ranking": ranked,
        "chosen": {"name": chosen, "spec": GRID[chosen]},
        "current_default": {"name": CURRENT_DEFAULT, "spec": GRID[CURRENT_DEFAULT]},
        "nested_choices": nested,
        "validation_comparison": out_valid,
        "test": out_tests,
        "post_hoc_test_not_used_for_choice": {"ndcg@10": post_hoc, "at_parity_on_both": at_parity},
        "synthetic_deep_lists": syn_res,
        "rounds": {f"{k[0]} | {k[1]}": v["rounds"] for k, v in fits.items()},
        "versions": {
            "selrank": selrank.__version__,
            "lightgbm": lightgbm.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1, default=str))
    print(f"\nwrote {args.out}")
    return doc


def letor_splits() -> dict:
    from selrank.datasets import load_letor

    return {f"{ds}/{k}": load_letor(ds, fold=k) for ds in DATASETS for k in FOLDS}


def methods_table() -> dict:
    return {
        **{n: ("baseline", o) for n, o in BASELINES.items()},
        **{n: ("selrank", s) for n, s in GRID.items()},
    }


def _smoke(args) -> None:
    """Shrink the protocol to seconds (the whole path still runs); output to a temporary folder."""
    import tempfile

    from _smoke import smoke_out

    global DATASETS, FOLDS, GRID, MAX_ROUNDS, PATIENCE, SYNTHETIC_ROWS, SMOKE_ROUNDS
    SMOKE_ROUNDS = {"n_estimators": 3, "early_stopping_rounds": 2}
    DATASETS, FOLDS, MAX_ROUNDS, PATIENCE, SYNTHETIC_ROWS = ("mq2008",), (1, 2, 3), 3, 2, 3_000
    GRID = {
        n: s for n, s in GRID.items() if n in (CURRENT_DEFAULT, "pairwise sigmoid, label_scale 1")
    }
    args.cache = tempfile.mkdtemp(prefix="selrank-smoke-cache-")
    args.out, args.n_resamples = str(smoke_out("choose_defaults")), 200


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--cache",
        default="/tmp/selrank_choose_defaults_cache",
        help="where fitted scores are cached (not part of the results)",
    )
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "choose_defaults.json")
    )
    parser.add_argument(
        "--fit-only", action="store_true", help="fit and cache the LETOR grid, no report"
    )
    parser.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument(
        "--smoke", action="store_true", help="(CI) MQ2008 folds 1-3, 2 candidates, 3 rounds"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        _smoke(args)
    warnings.filterwarnings("ignore", category=UserWarning)
    splits = letor_splits()
    fits = fit_all(methods_table(), splits, Path(args.cache))
    if args.fit_only:
        return {}
    return report(fits, splits, args)


if __name__ == "__main__":
    main()
