"""Does ``label_scale="auto"`` (0.125 on 0-4 grades) rank as well as the previous fixed 0.25?

Protocol
--------
* Question: ``SelectiveRanker()``'s default ``label_scale="auto"`` is
  ``AUTO_TARGET_TOP / max|y_train|`` (0.5 / max|y|). On LETOR 0-2 grades it equals the
  previous default 0.25; on 0-4 grades (MSLR-WEB, Istella) it is 0.125. Compared here:
  ``auto`` against 0.25 (the previous default), with 0.0625 and 0.5 for context.
* Data, validation only (no test split is read):

  - synthetic MSLR-like sets: :func:`selrank.datasets.make_mslr_like` (labels 0-4, MSLR
    label shares, 40 features, 100,000 rows, ~150 documents per query), generator seeds
    0, 1, 2; each set is split by query 50 / 25 / 25 into train, validation A (early
    stopping) and validation B (the comparison);
  - synthetic deep lists as in ``benchmarks/choose_defaults.py`` (``make_mslr_like(150_000,
    40, mean_docs_per_query=200)``), generator seeds 0, 1, 2, split the same way;
  - MQ2008 with its grades relabelled 0->0, 1->2, 2->4 (the same data on a 0-4 scale, so
    only the scale changes), the five official folds: trained on the fold's train split;
    the fold's official validation queries are split in two halves (seeded by the fold):
    A for early stopping, B for the comparison. Each query is a validation query of one
    fold only, so pooling the folds' B halves counts each query once.
* Training: ``SelectiveRanker(label_scale=..., random_state=s, num_threads=1,
  bagging_fraction=0.8, bagging_freq=1, feature_fraction=0.8)`` with the library's other
  defaults (listwise exp, gamma 4, LightGBM, learning rate 0.05, at most 1000 rounds, early
  stopping after 50 rounds without a gain in NDCG@10 on validation A). Row and feature
  subsampling is switched on only so that the training seeds ``s`` in (0, 1) give different
  models (without it LightGBM's fit does not depend on the seed); it is the same for every
  candidate. ``--no-subsample`` reruns everything with the library's default trees (no
  subsampling) and training seed 0 only (``label_scale_auto_no_subsample.json``).
* Score: NDCG@10 (gain ``2**label - 1``, tied scores averaged, a query without a relevant
  document scores 1) on validation B, with the labels the model was trained on.
* Comparison: per (family, training seed), the candidate ``auto`` against each other
  label scale, pooled over the family's data sets / folds (each query once), with
  :func:`selrank.metrics.paired_comparison` (mean per-query difference, bootstrap 95% CI,
  10,000 resamples, seed 0, paired t-test, Holm over the three comparisons). And a
  seed-averaged comparison: each query's NDCG@10 averaged over the training seeds, then the
  same statistics (:func:`selrank.metrics.significance.paired_bootstrap_ci`,
  ``paired_t_test``, ``holm``) on the per-query differences.

Run: ``python benchmarks/label_scale_auto.py`` (about 10 minutes on one core of a loaded
machine, 120 fits; fits are cached in ``--cache``, so a rerun only reports). Writes ``benchmarks/results/label_scale_auto.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

METRIC = {"k": 10, "gain": "exponential", "ties": "average", "no_relevant": "one"}
CANDIDATES = {"auto": "auto", "0.0625": 0.0625, "0.25": 0.25, "0.5": 0.5}
TRAIN_SEEDS = (0, 1)
GEN_SEEDS = (0, 1, 2)
METRIC_EVAL = {k: v for k, v in METRIC.items() if k != "k"}
SUBSAMPLE = {"bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.8}
MQ2008_FOLDS = (1, 2, 3, 4, 5)
SMOKE_ROUNDS: dict = {}  # --smoke only: fewer rounds than the library's defaults


def _take(X, y, sizes, qs):
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    qs = np.sort(qs)
    rows = np.concatenate([np.arange(starts[q], starts[q] + sizes[q]) for q in qs])
    return SimpleNamespace(X=X[rows], y=np.asarray(y)[rows], group=np.asarray(sizes)[qs])


def synthetic_split(seed: int, n_rows: int, docs_per_query: float = 150):
    """make_mslr_like (labels 0-4), split by query 50/25/25: train, validation A, validation B."""
    from selrank.datasets import make_mslr_like

    data = make_mslr_like(n_rows, 40, mean_docs_per_query=docs_per_query, seed=seed)
    sizes = np.asarray(data.group)
    order = np.random.default_rng(seed).permutation(sizes.size)
    parts = np.split(order, [int(0.5 * sizes.size), int(0.75 * sizes.size)])
    tr, va, vb = (_take(data.X, data.y, sizes, p) for p in parts)
    return SimpleNamespace(train=tr, valid_a=va, valid_b=vb)


def mq2008_split(fold: int):
    """MQ2008 fold, grades x2 (0-4): train split; official validation halved into A and B."""
    from selrank.datasets import load_letor

    ds = load_letor("mq2008", fold=fold)
    relabel = lambda part: SimpleNamespace(  # noqa: E731
        X=part.X, y=np.asarray(part.y, float) * 2.0, group=np.asarray(part.group)
    )
    tr, va = relabel(ds.train), relabel(ds.validation)
    order = np.random.default_rng(1000 + fold).permutation(va.group.size)
    half = va.group.size // 2
    return SimpleNamespace(
        train=tr,
        valid_a=_take(va.X, va.y, va.group, order[:half]),
        valid_b=_take(va.X, va.y, va.group, order[half:]),
    )


def fit_predict(label_scale, seed: int, split, subsample: dict):
    from selrank import SelectiveRanker

    ranker = SelectiveRanker(
        label_scale=label_scale, random_state=seed, num_threads=1, **subsample, **SMOKE_ROUNDS
    )
    va = split.valid_a
    ranker.fit(
        split.train.X, split.train.y, group=split.train.group,
        eval_set=[(va.X, va.y)], eval_group=[va.group],
    )  # fmt: skip
    return ranker.predict(split.valid_b.X), int(ranker.best_iteration_ or 0), ranker.label_scale_


def _per_query_ndcg(y, scores, group) -> np.ndarray:
    from selrank.metrics import evaluate

    df = evaluate(y, scores, group, metrics="ndcg@10", per_query=True, **METRIC_EVAL)
    return df["ndcg@10"].to_numpy()


def run_family(
    name: str, splits: dict, cache: Path, n_resamples: int, seeds=TRAIN_SEEDS, subsample=SUBSAMPLE
) -> dict:
    from selrank.metrics import format_comparison, paired_comparison
    from selrank.metrics.significance import holm, paired_bootstrap_ci, paired_t_test

    cache.mkdir(parents=True, exist_ok=True)
    scores: dict = {}
    info: dict = {}
    for key, split in splits.items():
        for seed in seeds:
            for cand, value in CANDIDATES.items():
                tag = "" if subsample else "_nosub"
                f = cache / f"{name}{tag}_{key}_s{seed}_{cand}.npz"
                if not f.exists():
                    t0 = time.perf_counter()
                    pred, rounds, resolved = fit_predict(value, seed, split, subsample)
                    np.savez(
                        f, pred=np.asarray(pred, float), rounds=rounds, resolved=resolved,
                        seconds=time.perf_counter() - t0,
                    )  # fmt: skip
                z = np.load(f)
                scores[(key, seed, cand)] = z["pred"]
                info[(key, seed, cand)] = (int(z["rounds"]), float(z["resolved"]))
                print(
                    f"{name} {key} seed {seed} label_scale {cand:6s} -> {float(z['resolved']):g}: "
                    f"{int(z['rounds'])} rounds, {float(z['seconds']):.1f}s",
                    file=sys.stderr,
                    flush=True,
                )
    keys = list(splits)
    y = np.concatenate([splits[k].valid_b.y for k in keys])
    group = np.concatenate([splits[k].valid_b.group for k in keys])
    out: dict = {
        "splits": keys,
        "n_queries": int(group.size),
        "n_rows": int(group.sum()),
        "resolved_label_scale": {
            c: sorted({info[(k, s, c)][1] for k in keys for s in seeds}) for c in CANDIDATES
        },
        "rounds": {f"{k} seed {s} {c}": info[(k, s, c)][0] for (k, s, c) in info},
        "per_seed": {},
    }
    per_query = {}
    for seed in seeds:
        systems = {
            f"label_scale={c}": np.concatenate([scores[(k, seed, c)] for k in keys])
            for c in CANDIDATES
        }
        cmp = paired_comparison(
            systems, y, group, candidate="label_scale=auto", metrics="ndcg@10",
            n_resamples=n_resamples, seed=0, **METRIC_EVAL,
        )  # fmt: skip
        print(f"\n{name}, training seed {seed}, validation B ({group.size} queries):")
        print(format_comparison(cmp))
        out["per_seed"][str(seed)] = cmp.drop("test").to_dicts()
        for sysname, s in systems.items():
            per_query.setdefault(sysname, []).append(_per_query_ndcg(y, s, group))
    avg = {k: np.mean(v, axis=0) for k, v in per_query.items()}
    rows = []
    ref = avg["label_scale=auto"]
    others = [s for s in avg if s != "label_scale=auto"]
    for other in others:
        d = ref - avg[other]
        lo, hi = paired_bootstrap_ci(ref, avg[other], n_resamples=n_resamples, seed=0)
        _, p = paired_t_test(ref, avg[other])
        rows.append({
            "system": "label_scale=auto", "reference": other, "mean": float(ref.mean()),
            "reference_mean": float(avg[other].mean()), "diff": float(d.mean()),
            "ci_low": float(lo), "ci_high": float(hi), "p_value": float(p),
            "n_queries": int(d.size), "n_better": int((d > 0).sum()), "n_worse": int((d < 0).sum()),
        })  # fmt: skip
    for r, ph in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        r["p_holm"] = float(ph)
        sig = ph < 0.05
        r["verdict"] = (
            "better"
            if sig and r["ci_low"] > 0
            else "worse"
            if sig and r["ci_high"] < 0
            else "parity"
        )
    print(f"\n{name}, NDCG@10 averaged over training seeds {tuple(seeds)}, auto minus other:")
    for r in rows:
        print(
            f"  auto vs {r['reference']:18s} {r['mean']:.4f} vs {r['reference_mean']:.4f}  "
            f"diff {r['diff']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]  "
            f"p_holm {r['p_holm']:.3g}  {r['verdict']}  (+{r['n_better']}/-{r['n_worse']})"
        )
    out["seed_averaged"] = rows
    out["mean_ndcg@10_seed_averaged"] = {k: float(v.mean()) for k, v in avg.items()}
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=str(Path.home() / ".cache/selrank/label_scale_auto"))
    parser.add_argument("--n-rows", type=int, default=100_000, help="rows per synthetic set")
    parser.add_argument("--n-resamples", type=int, default=10_000)
    parser.add_argument("--skip-deep", action="store_true")
    parser.add_argument("--skip-mq2008", action="store_true")
    parser.add_argument(
        "--no-subsample",
        action="store_true",
        help="the library's default trees (no row/feature subsampling), training seed 0 only",
    )
    parser.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) 3,000-row synthetic sets and MQ2008 fold 1, 3 rounds, no deep lists",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        import tempfile

        from _smoke import smoke_out

        global MQ2008_FOLDS, SMOKE_ROUNDS
        MQ2008_FOLDS, SMOKE_ROUNDS = (1,), {"n_estimators": 3, "early_stopping_rounds": 2}
        args.n_rows, args.n_resamples, args.skip_deep = 3_000, 200, True
        args.cache = tempfile.mkdtemp(prefix="selrank-smoke-cache-")
        args.out = str(smoke_out("label_scale_auto"))
    name = "label_scale_auto_no_subsample" if args.no_subsample else "label_scale_auto"
    out = args.out or str(Path(__file__).parent / f"results/{name}.json")
    seeds, subsample = ((0,), {}) if args.no_subsample else (TRAIN_SEEDS, SUBSAMPLE)
    cache = Path(args.cache)
    t0 = time.perf_counter()
    result: dict = {}

    def family(label, splits):
        return run_family(label, splits, cache, args.n_resamples, seeds, subsample)

    syn = {f"gen{s}": synthetic_split(s, args.n_rows) for s in GEN_SEEDS}
    result["synthetic_mslr_like"] = family(f"mslr_like_{args.n_rows}", syn)
    if not args.skip_deep:
        deep = {f"gen{s}": synthetic_split(s, 150_000, 200) for s in GEN_SEEDS}
        result["synthetic_deep_lists"] = family("deep_150000", deep)
    if not args.skip_mq2008:
        mq = {f"fold{k}": mq2008_split(k) for k in MQ2008_FOLDS}
        result["mq2008_x2"] = family("mq2008_x2", mq)

    import lightgbm

    import selrank

    doc = {
        "benchmark": "label_scale_auto",
        "protocol": __doc__.split("Protocol\n--------\n")[1].split("\n\nRun:")[0],
        "metric": METRIC,
        "candidates": {k: v for k, v in CANDIDATES.items()},
        "training_seeds": list(seeds),
        "generator_seeds": list(GEN_SEEDS),
        "synthetic_rows_per_set": args.n_rows,
        "subsampling": subsample,
        **result,
        "seconds": time.perf_counter() - t0,
        "versions": {
            "selrank": selrank.__version__,
            "lightgbm": lightgbm.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "machine": platform.platform(),
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(doc, indent=1, default=float) + "\n")
    print(f"\nwrote {out} ({doc['seconds']:.0f}s)")
    return doc


if __name__ == "__main__":
    main()
