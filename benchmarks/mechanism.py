"""Benchmarks that show (or fail to show) the mechanism: model families, region metrics, distillation.

All on MQ2008 (labels 0/1/2; ``--dataset ohsumed`` for OHSUMED, also 0/1/2), the five official folds (``selrank.datasets.load_letor``), test
queries of the five folds pooled (784 queries, each once), queries without a relevant
document counted as NDCG = 0, one thread everywhere. Nothing is chosen on the test splits.

1. **Model families.** Each family is trained with the selective listwise loss (exp scaling)
   and with its non-selective counterpart (constant scaling, ListNet-like), same label scale
   (0.25) and temperature (``gamma`` 4), early stopping on validation NDCG@10:

   * GBDT: ``SelectiveRanker(loss="listwise")`` with ``scaling="exp"`` (the default) or
     ``"constant"`` (LightGBM, default trees, learning rate and patience of the estimator);
   * linear: ``NeuralRanker(hidden_layers=())`` (a single ``Linear(46, 1)``), learning rate
     1e-2 (1e-3, the estimator's default, stopped after one epoch on fold 1's validation
     split; 1e-2 was the better of {1e-2, 1e-4} there), patience 20 epochs, at most 100;
   * MLP: ``NeuralRanker(hidden_layers=(64, 32))`` with the estimator's defaults
     (learning rate 1e-3, patience 10, at most 100 epochs).

   Neural rankers get ``0.25 * label`` as target scores (what ``SelectiveRanker`` does with
   its ``label_scale``) and early-stop on NDCG@10 of the raw validation labels.
   Paired comparison per family: constant minus exp, NDCG@1/3/10.

2. **Region metrics.** For exp vs constant scaling (every family) and for the pointwise GBDT
   with the exp link vs the identity link (squared error on ``0.25 * label``): pairwise
   accuracy per query among pairs (2, 1) — the top grades, where exp is steep — among pairs
   (1, 0) — the low grades, where it is flat — and across (2, 0), and NDCG@1/3 against
   NDCG@10. Differences are per query, bootstrap 95% CIs over the queries that have such a
   pair (``selrank.metrics.paired_bootstrap_ci``), paired t-test.

3. **Distillation.** Teacher: LightGBM ``lambdarank``, 300 trees, learning rate 0.05, default
   trees, trained on the training split (no early stopping). Its scores on the training rows,
   **standardised per query** (z-score within each query; a query with one document or
   constant scores gets 0), are the targets of a small student: ``SelectiveRegressor``
   (pointwise loss), 4 leaves × 30 trees, learning rate 0.1, 20 rows per leaf, fixed size.
   Students: squared error (identity link) vs the exp link and the shifted sigmoid link;
   link parameters chosen by student NDCG@10 on the validation splits (true labels, pooled
   over the five folds). Reported: student test NDCG@10 against the true labels and top-5
   agreement with the teacher (``topk_agreement``), paired differences vs the squared-error
   student.

Run: ``python benchmarks/mechanism.py`` (about 4 minutes on one core) writes
``benchmarks/results/mechanism.json``; ``--quick`` runs fold 1 only with fewer resamples and
writes nothing unless ``--out`` is given; ``--smoke`` checks in seconds that it runs (CI).
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

DATASET = "mq2008"
LABEL_SCALE = 0.25
GAMMA = 4.0
REGIONS = {
    "top (2 vs 1)": ((1, 2), None),
    "low (1 vs 0)": ((0, 1), None),
    "across (2 vs 0)": ((2, 2), (0, 0)),
}
NDCG_METRICS = ("ndcg@1", "ndcg@3", "ndcg@10")
TOP_KS = (1, 5)
TEACHER_TREES = 300
SMOKE_GBDT: dict = {}  # --smoke only: fewer rounds / epochs than the estimators' defaults
SMOKE_NEURAL: dict = {}
STUDENT = {"n_estimators": 30, "num_leaves": 4, "learning_rate": 0.1, "min_data_in_leaf": 20}
# link candidates of the distillation students (chosen on validation NDCG@10)
STUDENT_LINKS = {
    "squared error (identity)": [("identity", {})],
    "exp": [("exp", {"alpha": a}) for a in (0.25, 0.5, 1.0, 2.0)],
    "shifted sigmoid": [
        ("sigmoid", {"alpha": a, "beta": b}) for a in (1.0, 2.0) for b in (0.5, 1.0, 1.5, 2.0, 2.5)
    ],
}


# --------------------------------------------------------------------------------------
# metric helpers (tested in tests/test_mechanism_helpers.py)
# --------------------------------------------------------------------------------------


def _offsets(group) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(group, dtype=np.int64))])


def topk_agreement(reference, score, group, k: int = 5) -> np.ndarray:
    """Per query, ``|top-k(reference) ∩ top-k(score)| / min(k, size)``.

    Top-k of a score vector: the ``k`` rows with the highest scores, ties broken by row order
    (a stable sort of ``-score``). Queries are consecutive blocks of ``group`` sizes.
    """
    reference, score = np.asarray(reference, float), np.asarray(score, float)
    off = _offsets(group)
    out = np.empty(len(off) - 1)
    for q in range(len(off) - 1):
        a, b = off[q], off[q + 1]
        m = min(k, b - a)
        top_r = np.argsort(-reference[a:b], kind="stable")[:m]
        top_s = np.argsort(-score[a:b], kind="stable")[:m]
        out[q] = np.intersect1d(top_r, top_s).size / m
    return out


def standardize_per_query(score, group) -> np.ndarray:
    """Z-score of ``score`` within each query (population std); constant queries give 0."""
    score = np.asarray(score, float)
    off = _offsets(group)
    sizes = np.diff(off)
    qid = np.repeat(np.arange(sizes.size), sizes)
    mean = np.bincount(qid, weights=score) / sizes
    centred = score - mean[qid]
    std = np.sqrt(np.bincount(qid, weights=centred**2) / sizes)
    safe = np.where(std > 0, std, 1.0)
    return np.where(std[qid] > 0, centred / safe[qid], 0.0)


def region_accuracy_per_query(y, score, group, region, against=None) -> np.ndarray:
    """Per-query pair accuracy in a grade region (NaN where a query has no such pair)."""
    from selrank.metrics import region_pairwise_accuracy

    return region_pairwise_accuracy(y, score, group, region=region, against=against, average="none")


def paired_summary(a, b, *, n_resamples: int, seed: int = 0) -> dict:
    """Mean of ``a - b`` over the entries where both are finite, bootstrap 95% CI, t-test."""
    from selrank.metrics.significance import paired_bootstrap_ci, paired_t_test

    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    lo, hi = paired_bootstrap_ci(a, b, n_resamples=n_resamples, seed=seed)
    _, p = paired_t_test(a, b)
    return {
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "diff": float((a - b).mean()),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "p_value": float(p),
        "n": int(ok.sum()),
    }


# --------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------


def fit_gbdt(split, **params):
    from selrank import SelectiveRanker

    tr, va = split.train, split.validation
    r = SelectiveRanker(random_state=0, num_threads=1, **params, **SMOKE_GBDT)
    r.fit(tr.X, tr.y, group=tr.group, eval_set=[(va.X, va.y)], eval_group=[va.group])
    return r.predict(split.test.X)


def fit_neural(split, scaling, hidden_layers, **params):
    from selrank.estimators import NeuralRanker

    tr, va = split.train, split.validation
    r = NeuralRanker(
        "listwise",
        loss_params={"scaling": scaling, "gamma": GAMMA},
        hidden_layers=hidden_layers,
        random_state=0,
        **params,
        **SMOKE_NEURAL,
    )
    r.fit(
        tr.X,
        LABEL_SCALE * tr.y,
        group=tr.group,
        eval_set=[(va.X, va.y)],
        eval_group=[va.group],
    )
    return r.predict(split.test.X)


FAMILIES = {
    "GBDT": lambda s, sc: fit_gbdt(s, loss="listwise", scaling=sc),
    "linear": lambda s, sc: fit_neural(s, sc, (), learning_rate=1e-2, early_stopping_rounds=20),
    "MLP (64, 32)": lambda s, sc: fit_neural(s, sc, (64, 32)),
}
POINTWISE = {
    "exp": lambda s: fit_gbdt(s, loss="pointwise"),
    "identity": lambda s: fit_gbdt(s, loss="pointwise", link="identity"),
}


def fit_teacher(split):
    import lightgbm as lgb

    tr = split.train
    params = {
        "objective": "lambdarank",
        "learning_rate": 0.05,
        "verbosity": -1,
        "num_threads": 1,
        "seed": 0,
    }
    return lgb.train(params, lgb.Dataset(tr.X, tr.y, group=tr.group), TEACHER_TREES)


def fit_student(X, target, link, link_params):
    from selrank import SelectiveRegressor

    reg = SelectiveRegressor(
        link=link, loss_params=link_params or None, random_state=0, num_threads=1, **STUDENT
    )
    return reg.fit(X, target)


# --------------------------------------------------------------------------------------
# the three parts
# --------------------------------------------------------------------------------------


def _pooled(splits, part):
    y = np.concatenate([getattr(s, part).y for s in splits])
    group = np.concatenate([np.asarray(getattr(s, part).group) for s in splits])
    return y, group


def _comparison_rows(systems, y, group, reference, n_resamples):
    from selrank.metrics import paired_comparison

    cmp = paired_comparison(
        systems,
        y,
        group,
        reference=reference,
        metrics=list(NDCG_METRICS),
        no_relevant="zero",
        n_resamples=n_resamples,
    )
    return cmp


def families(splits, n_resamples, log):
    from selrank.metrics import format_comparison

    y, group = _pooled(splits, "test")
    scores, rows, seconds = {}, {}, {}
    for fam, fit in FAMILIES.items():
        for sc in ("exp", "constant"):
            t = time.perf_counter()
            scores[(fam, sc)] = np.concatenate([fit(s, sc) for s in splits])
            seconds[f"{fam} {sc}"] = round(time.perf_counter() - t, 1)
            log(f"families: {fam} {sc} done in {seconds[f'{fam} {sc}']} s")
        cmp = _comparison_rows(
            {f"{fam} exp": scores[(fam, "exp")], f"{fam} constant": scores[(fam, "constant")]},
            y,
            group,
            f"{fam} exp",
            n_resamples,
        )
        rows[fam] = cmp.drop("test").to_dicts()
        print(format_comparison(cmp))
    return scores, {"comparisons": rows, "seconds": seconds}


def regions(splits, listwise_scores, n_resamples, log):

    y, group = _pooled(splits, "test")
    t = time.perf_counter()
    pointwise = {link: np.concatenate([fit(s) for s in splits]) for link, fit in POINTWISE.items()}
    log(f"regions: pointwise exp/identity done in {time.perf_counter() - t:.0f} s")
    contrasts = {
        f"{fam}: listwise constant − exp": (
            listwise_scores[(fam, "constant")],
            listwise_scores[(fam, "exp")],
        )
        for fam in FAMILIES
    }
    contrasts["GBDT: pointwise identity − exp"] = (pointwise["identity"], pointwise["exp"])
    out = {}
    for name, (a, b) in contrasts.items():
        res = {}
        for region, (reg, against) in REGIONS.items():
            res[f"pair accuracy {region}"] = paired_summary(
                region_accuracy_per_query(y, a, group, reg, against),
                region_accuracy_per_query(y, b, group, reg, against),
                n_resamples=n_resamples,
            )
        for m in NDCG_METRICS:
            k = int(m.split("@")[1])
            res[m] = paired_summary(
                ndcg_per_query(y, a, group, k),
                ndcg_per_query(y, b, group, k),
                n_resamples=n_resamples,
            )
        out[name] = res
        print(f"\n{name}")
        for metric, r in res.items():
            print(
                f"  {metric:30s} {r['mean_a']:.4f} vs {r['mean_b']:.4f}  Δ {r['diff']:+.4f} "
                f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]  p = {r['p_value']:.2g}  ({r['n']} queries)"
            )
    return out


def ndcg_per_query(y, score, group, k):
    """Per-query NDCG@k (exponential gain, ties averaged, empty queries 0)."""
    from selrank.metrics import ndcg

    return ndcg(y, score, group, k=k, no_relevant="zero", reduction="none")


def distillation(splits, n_resamples, log):
    from selrank.metrics import ndcg

    teachers = []
    t = time.perf_counter()
    for s in splits:
        booster = fit_teacher(s)
        teachers.append(
            {part: booster.predict(getattr(s, part).X) for part in ("train", "validation", "test")}
        )
    log(f"distillation: {len(splits)} teachers in {time.perf_counter() - t:.0f} s")
    yv, gv = _pooled(splits, "validation")
    yt, gt = _pooled(splits, "test")

    def student_scores(link, params, part):
        return np.concatenate(
            [
                fit_student(
                    s.train.X,
                    standardize_per_query(tch["train"], s.train.group),
                    link,
                    params,
                ).predict(getattr(s, part).X)
                for s, tch in zip(splits, teachers)
            ]
        )

    # link parameters: validation NDCG@10 (true labels), pooled over the folds
    chosen, validation = {}, {}
    for name, candidates in STUDENT_LINKS.items():
        best = None
        for link, params in candidates:
            v = float(
                ndcg(yv, student_scores(link, params, "validation"), gv, k=10, no_relevant="zero")
            )
            validation[f"{name} {link} {params}"] = v
            if best is None or v > best[0]:
                best = (v, link, params)
        chosen[name] = {"link": best[1], "params": best[2], "validation_ndcg@10": best[0]}
        log(f"distillation: {name} chose {best[1]} {best[2]} (validation NDCG@10 {best[0]:.4f})")
    teacher_test = np.concatenate([tch["test"] for tch in teachers])
    test_scores = {
        name: student_scores(c["link"], c["params"], "test") for name, c in chosen.items()
    }
    ref = "squared error (identity)"
    per_query = {
        name: {
            "ndcg@10": ndcg_per_query(yt, sc, gt, 10),
            **{f"top-{k} agreement": topk_agreement(teacher_test, sc, gt, k) for k in TOP_KS},
        }
        for name, sc in test_scores.items()
    }
    teacher_row = {
        "ndcg@10": float(ndcg(yt, teacher_test, gt, k=10, no_relevant="zero")),
    }
    rows = {}
    for name in test_scores:
        rows[name] = {
            "means": {m: float(np.mean(v)) for m, v in per_query[name].items()},
        }
        if name != ref:
            rows[name]["vs squared error"] = {
                m: paired_summary(per_query[name][m], per_query[ref][m], n_resamples=n_resamples)
                for m in per_query[name]
            }
    print(
        f"\nteacher (lambdarank, {TEACHER_TREES} trees) test NDCG@10 {teacher_row['ndcg@10']:.4f}"
    )
    for name, r in rows.items():
        line = f"{name:28s} " + "  ".join(f"{m} {v:.4f}" for m, v in r["means"].items())
        print(line)
        for m, d in r.get("vs squared error", {}).items():
            print(
                f"    vs squared error {m:18s} Δ {d['diff']:+.4f} [{d['ci_low']:+.4f}, {d['ci_high']:+.4f}] "
                f"p = {d['p_value']:.2g}"
            )
    return {
        "teacher": teacher_row,
        "chosen": chosen,
        "validation": validation,
        "students": rows,
        "standardisation": "teacher scores z-scored within each query (population std)",
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fold 1 only, 1,000 resamples")
    ap.add_argument("--out", default=None, help="JSON path (default results/mechanism.json)")
    ap.add_argument("--parts", default="families,regions,distillation")
    ap.add_argument(
        "--dataset",
        default=DATASET,
        choices=("mq2008", "ohsumed"),
        help="packaged LETOR set (default mq2008; ohsumed writes results/mechanism_ohsumed.json)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) fold 1, 3 rounds / 1 epoch, one link candidate each, 200 resamples",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        global TEACHER_TREES, STUDENT, STUDENT_LINKS, SMOKE_GBDT, SMOKE_NEURAL
        TEACHER_TREES, STUDENT = 3, {**STUDENT, "n_estimators": 3}
        STUDENT_LINKS = {name: cands[:1] for name, cands in STUDENT_LINKS.items()}
        SMOKE_GBDT, SMOKE_NEURAL = {"n_estimators": 3, "early_stopping_rounds": 2}, {"epochs": 1}
        args.quick, args.out = True, str(smoke_out("mechanism"))

    import torch

    from selrank.datasets import load_letor

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=UserWarning)
    folds = [1] if args.quick else [1, 2, 3, 4, 5]
    n_resamples = 200 if args.smoke else 1000 if args.quick else 10_000
    start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - start:6.0f} s] {msg}", file=sys.stderr, flush=True)

    splits = [load_letor(args.dataset, fold=k) for k in folds]
    parts = set(args.parts.split(","))
    doc: dict = {
        "benchmark": "mechanism",
        "dataset": args.dataset,
        "folds": folds,
        "n_test_queries": int(sum(len(s.test.group) for s in splits)),
        "protocol": (__doc__ or "").strip(),
        "bootstrap_resamples": n_resamples,
    }
    if parts & {"families", "regions"}:
        print("== model families: constant − exp scaling, pooled test queries ==")
        scores, doc["families"] = families(splits, n_resamples, log)
        if "regions" in parts:
            print("\n== region metrics (a − b per query) ==")
            doc["regions"] = regions(splits, scores, n_resamples, log)
    if "distillation" in parts:
        print("\n== distillation ==")
        doc["distillation"] = distillation(splits, n_resamples, log)
    doc["seconds"] = round(time.perf_counter() - start, 1)
    doc["machine"] = {"python": platform.python_version(), "threads": 1}
    name = "mechanism.json" if args.dataset == DATASET else f"mechanism_{args.dataset}.json"
    out = args.out or (None if args.quick else Path(__file__).parent / "results" / name)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out}")
    log("done")
    return doc


if __name__ == "__main__":
    main()
