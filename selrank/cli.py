"""Command line: ``selrank train | sensitivity | losses | datasets | demo``.

``selrank train`` is the library's main job on packaged data: on each of the five official
folds of a LETOR set (or one, ``--fold``) it trains a gradient-boosted ranker with a selective
matching loss (early stopping on the validation split) and LightGBM's built-in ``lambdarank``
and ``rank_xendcg`` with the same tree parameters, then prints NDCG@1/3/5/10 over the pooled
test queries (LightGBM's conventions: exponential gain, a query without relevant documents
scores 1) and, for each baseline, the mean per-query difference with a bootstrap 95% CI, a
Holm-adjusted paired t-test and a verdict (:func:`selrank.metrics.paired_comparison`).

Examples
--------
.. code-block:: console

    $ selrank train --dataset mq2008
    $ selrank train --dataset mq2008 --fold 1 --json results.json
    $ selrank train --dataset ohsumed --loss pairwise --backend xgboost --save model.json
    $ selrank sensitivity exp --kind link --param alpha=1.5 --figure exp.png
    $ selrank losses --task ranking
    $ selrank datasets
    $ selrank demo
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from collections.abc import Sequence

import numpy as np

__all__ = ["main"]

NDCG_AT = (1, 3, 5, 10)


class CLIError(Exception):
    """A user error: printed as ``selrank: error: ...`` with exit status 2."""


def _parse_value(text: str):
    if "," in text:  # a list of numbers: knots=0,1,2
        return tuple(_parse_value(t.strip()) for t in text.split(",") if t.strip())
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() == "none":
        return None
    return text


def _parse_params(items: Sequence[str] | None, what: str) -> dict:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise CLIError(f"{what} must look like name=value; got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = _parse_value(value.strip())
    return out


TASKS = ("ranking", "regression", "classification")
# Loss structures (selrank.losses.Loss.structure) each estimator trains; the regressor and a
# two-class classifier pass a link, so they take the pointwise losses that have one.
_TASK_STRUCTURES = {
    "ranking": ("pointwise", "group"),
    "regression": ("pointwise+link",),
    "classification": ("pointwise+link", "multiclass"),
}
BASELINES = ("lambdarank", "rank_xendcg")
LEARNING_RATE, MAX_ROUNDS, PATIENCE = 0.05, 1000, 50


def _loss_structures() -> dict[str, str | None]:
    """Structure of every registered loss built with its defaults; None when it needs arguments."""
    from .losses import LOSSES, get_loss

    out: dict[str, str | None] = {}
    for name, cls in LOSSES.items():
        try:
            out[name] = get_loss(name).structure
        except (TypeError, ValueError):
            out[name] = None
            continue
        if out[name] == "pointwise" and "link" in inspect.signature(cls).parameters:
            out[name] = "pointwise+link"
    return out


def _usable(registry, getter) -> tuple[list[str], list[str]]:
    """Names that build with their defaults, and names that need parameters."""
    ok, need = [], []
    for name in sorted(registry):
        try:
            getter(name)
            ok.append(name)
        except (TypeError, ValueError):
            need.append(name)
    return ok, need


def _task_losses(task: str, structures: dict[str, str | None]) -> list[str]:
    allowed = _TASK_STRUCTURES[task]
    if task == "ranking":
        allowed = (*allowed, "pointwise+link")
    return [n for n, st in structures.items() if st in allowed]


def _check_loss_for_ranking(loss: str) -> None:
    structures = _loss_structures()
    usable = _task_losses("ranking", structures)
    if loss not in structures:
        raise CLIError(
            f"unknown loss {loss!r}; for ranking choose one of {usable} (see `selrank losses`)"
        )
    if structures[loss] is None:
        raise CLIError(
            f"loss {loss!r} needs parameters the command line cannot give (e.g. its sub-losses); "
            f"use the Python API, or one of {usable}"
        )
    if loss not in usable:
        raise CLIError(
            f"loss {loss!r} is a multi-class loss (classification), not a ranking loss; "
            f"choose one of {usable} (see `selrank losses`)"
        )


def _per_query_ndcg_means(y, scores, group) -> dict[str, float]:
    from .metrics import ndcg

    return {f"ndcg@{k}": float(ndcg(y, scores, group, k=k, **_METRIC)) for k in NDCG_AT}


# LightGBM's conventions: exponential gain, ties in input order, a query without relevant
# documents scores 1.
_METRIC = {"gain": "exponential", "ties": "stable", "no_relevant": "one"}


def _progress(total: int, desc: str):
    """A tqdm bar on stderr when it is a terminal (and tqdm is installed); otherwise nothing."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is optional
        return None
    return tqdm(total=total, desc=desc, unit="fit", file=sys.stderr, leave=False)


def _fit_baseline(objective, split, tree_params, seed, n_rounds, esr):
    import lightgbm as lgb

    from .metrics import ndcg

    tr, va = split.train, split.validation
    params = {
        "objective": objective,
        "learning_rate": LEARNING_RATE,
        "verbosity": -1,
        "metric": "None",
        "seed": seed,
        **tree_params,
    }
    dtrain = lgb.Dataset(tr.X, tr.y, group=tr.group)
    dvalid = lgb.Dataset(va.X, va.y, group=va.group, reference=dtrain)
    # the same early-stopping score as SelectiveRanker: selrank's NDCG@10 on the validation split
    booster = lgb.train(
        params,
        dtrain,
        num_boost_round=n_rounds,
        valid_sets=[dvalid],
        feval=lambda p, d: ("ndcg@10", float(ndcg(va.y, p, va.group, k=10)), True),
        callbacks=[lgb.early_stopping(esr, verbose=False)] if esr else [],
    )
    best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
    return booster.predict(split.test.X, num_iteration=best), int(best)


def _selrank_kwargs(args) -> dict:
    loss_params = _parse_params(args.param, "--param")
    backend_params = _parse_params(args.backend_param, "--backend-param")
    kwargs = {"loss": args.loss, "backend": args.backend, **backend_params}
    if args.scaling:
        kwargs["scaling"] = args.scaling
    if args.link:
        kwargs["link"] = args.link
    if loss_params:
        kwargs["loss_params"] = loss_params
    kwargs["random_state"] = args.seed
    return kwargs


# estimator parameters that are not tree parameters of the LightGBM baselines
_NOT_TREE = {
    "n_estimators",
    "learning_rate",
    "early_stopping_rounds",
    "eval_at",
    "random_state",
    "verbose",
    "label_scale",
    "hessian",
    "hessian_floor",
}


def _train(args) -> int:
    from .datasets import load_letor
    from .estimators import SelectiveRanker
    from .metrics import format_comparison, paired_comparison

    _check_loss_for_ranking(args.loss)
    kwargs = _selrank_kwargs(args)
    backend_params = _parse_params(args.backend_param, "--backend-param")
    tree_params = (
        {k: v for k, v in backend_params.items() if k not in _NOT_TREE}
        if args.backend == "lightgbm"
        else {}
    )
    n_rounds = int(backend_params.get("n_estimators", MAX_ROUNDS))
    esr = int(backend_params.get("early_stopping_rounds", PATIENCE))
    folds = [args.fold] if args.fold else [1, 2, 3, 4, 5]
    baselines = [] if args.no_baseline else list(BASELINES)
    name = f"selrank {args.loss}"
    systems = [name] + [f"LightGBM {b}" for b in baselines]

    bar = _progress(len(folds) * len(systems), f"{args.dataset}")
    per_fold: list[dict] = []
    pooled_y: list[np.ndarray] = []
    pooled_group: list[np.ndarray] = []
    pooled: dict[str, list[np.ndarray]] = {s: [] for s in systems}
    rounds: dict[str, list[int]] = {s: [] for s in systems}
    seconds = {s: 0.0 for s in systems}
    n_queries = 0
    for fold in folds:
        split = load_letor(args.dataset, fold=fold)
        tr, va, te = split.train, split.validation, split.test
        if tr is None or va is None or te is None:  # packaged LETOR folds always have all three
            raise CLIError(f"{args.dataset} fold {fold} lacks a train, validation or test split")
        scores = {}
        t0 = time.perf_counter()
        model = SelectiveRanker(**kwargs).fit(
            tr.X, tr.y, group=tr.group, eval_set=[(va.X, va.y)], eval_group=[va.group]
        )
        seconds[name] += time.perf_counter() - t0
        scores[name] = model.predict(te.X)
        rounds[name].append(int(model.n_estimators_))
        if bar is not None:
            bar.update()
        if args.save and fold == folds[-1]:
            model.save(args.save)
        for b in baselines:
            t0 = time.perf_counter()
            scores[f"LightGBM {b}"], r = _fit_baseline(
                b, split, tree_params, args.seed, n_rounds, esr
            )
            seconds[f"LightGBM {b}"] += time.perf_counter() - t0
            rounds[f"LightGBM {b}"].append(r)
            if bar is not None:
                bar.update()
        entry = {
            "fold": fold,
            "test_queries": int(te.group.size),
            "systems": {
                s: {**_per_query_ndcg_means(te.y, scores[s], te.group), "rounds": rounds[s][-1]}
                for s in systems
            },
        }
        if baselines:
            cmp = paired_comparison(
                scores,
                te.y,
                te.group,
                candidate=name,
                metrics=[f"ndcg@{k}" for k in NDCG_AT],
                n_resamples=args.n_resamples,
                seed=args.seed,
                gain=_METRIC["gain"],
                ties=_METRIC["ties"],
                no_relevant=_METRIC["no_relevant"],
            )
            entry["comparisons"] = cmp.drop("test").to_dicts()
        per_fold.append(entry)
        pooled_y.append(te.y)
        pooled_group.append(np.asarray(te.group))
        for s in systems:
            pooled[s].append(scores[s])
        n_queries += int(te.group.size)
    if bar is not None:
        bar.close()

    y = np.concatenate(pooled_y)
    group = np.concatenate(pooled_group)  # sizes: each fold's test queries stay separate queries
    scores = {s: np.concatenate(pooled[s]) for s in systems}
    means = {s: _per_query_ndcg_means(y, scores[s], group) for s in systems}
    where = f"fold {folds[0]}" if len(folds) == 1 else f"{len(folds)} folds"
    print(
        f"{args.dataset}, {where}: {n_queries} test queries"
        + ("" if len(folds) == 1 else " (each fold's test split, pooled)")
    )
    header = (
        f"{'system':28s}"
        + "".join(f"{'NDCG@' + str(k):>9s}" for k in NDCG_AT)
        + f"{'rounds':>8s}{'seconds':>9s}"
    )
    print(header)
    print("-" * len(header))
    for s in systems:
        print(
            f"{s:28s}"
            + "".join(f"{means[s][f'ndcg@{k}']:9.4f}" for k in NDCG_AT)
            + f"{np.mean(rounds[s]):8.0f}{seconds[s]:9.1f}"
        )
    print(
        "(mean over test queries; gain 2^rel - 1, a query without relevant documents scores 1;"
        " rounds: mean trees after early stopping)"
    )
    doc = {
        "dataset": args.dataset,
        "folds": folds,
        "test_queries": n_queries,
        "parameters": {
            "selrank": {k: v for k, v in kwargs.items()},
            "baselines": {
                "objectives": list(baselines),
                "learning_rate": LEARNING_RATE,
                "max_rounds": n_rounds,
                "early_stopping_rounds": esr,
                "seed": args.seed,
                **tree_params,
            },
            "early_stopping": "NDCG@10 on the validation split (selrank.metrics.ndcg)",
            "metric": "NDCG, gain 2^rel - 1, ties in input order, a query without relevant documents scores 1",
            "statistics": {
                "difference": "mean per-query difference (selrank minus baseline), test queries of "
                "every fold pooled",
                "ci": f"{args.n_resamples} bootstrap resamples of queries, percentile 95% interval",
                "test": "paired t-test",
                "correction": "Holm over the baselines, per metric",
                "verdict": "better / worse: CI excludes 0 and Holm p < 0.05; otherwise parity",
            },
        },
        "systems": {
            s: {**means[s], "rounds_per_fold": rounds[s], "seconds": round(seconds[s], 3)}
            for s in systems
        },
        "per_fold": per_fold,
    }
    if baselines:
        cmp = paired_comparison(
            scores,
            y,
            group,
            candidate=name,
            metrics=[f"ndcg@{k}" for k in NDCG_AT],
            n_resamples=args.n_resamples,
            seed=args.seed,
            gain=_METRIC["gain"],
            ties=_METRIC["ties"],
            no_relevant=_METRIC["no_relevant"],
        )
        doc["comparisons"] = cmp.drop("test").to_dicts()
        print()
        print(format_comparison(cmp.filter(cmp["metric"] == "ndcg@10")))
        print(
            "(Δ: mean per-query difference over the test queries; [95% bootstrap CI]; p: paired t-test, "
            "Holm-adjusted over the baselines; better/worse: CI excludes 0 and p < 0.05, "
            "otherwise parity = no significant difference)"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=2, default=str)
        print(f"results written to {args.json}")
    return 0


def _sensitivity(args) -> int:
    from .links import LINKS, get_link
    from .paper.underspecification import sensitivity_report
    from .scalings import SCALINGS, get_scaling

    params = _parse_params(args.param, "--param")
    kinds = [k for k, reg in (("link", LINKS), ("scaling", SCALINGS)) if args.name in reg]
    if not kinds:
        raise CLIError(
            f"unknown link or scaling {args.name!r}; links: {sorted(LINKS)}; "
            f"scalings: {sorted(SCALINGS)}"
        )
    if args.kind is not None and args.kind not in kinds:
        raise CLIError(f"{args.name!r} is not a {args.kind}; it is a {' and a '.join(kinds)}")
    if args.kind is None and len(kinds) > 1:
        raise CLIError(
            f"{args.name!r} is both a link and a scaling: give --kind link (h, h' of the link) "
            f"or --kind scaling (the composite sigmoid of the scaling, which --gamma sets)"
        )
    kind = args.kind or kinds[0]
    if kind == "link" and args.gamma is not None:
        raise CLIError(
            "--gamma sets the temperature of a scaling's composite sigmoid; "
            f"{args.name!r} is shown as a link (use --kind scaling)"
        )
    getter = get_link if kind == "link" else get_scaling
    try:
        obj = getter(args.name, **params)
    except TypeError as exc:
        raise CLIError(
            f"{kind} {args.name!r} cannot be built from --param {params}: {exc}"
        ) from None
    gamma = 1.0 if args.gamma is None else args.gamma
    rep = sensitivity_report(obj, gamma=gamma)
    idx = np.linspace(0, rep.z.size - 1, args.rows).round().astype(int)
    cols = ["z", "h", "dh", "bust"] + [f"loss(s={s:g})" for s in rep.observed]
    table = rep.as_dict()
    print(f"sensitivity of {rep.name or rep.link!r}")
    print("".join(f"{c:>13s}" for c in cols))
    for i in idx:
        print("".join(f"{float(table[c][i]):13.5g}" for c in cols))
    if args.figure:
        fig = rep.figure()
        fig.savefig(args.figure, dpi=120)
        print(f"figure written to {args.figure}")
    return 0


def _datasets(args) -> int:
    from .datasets import DWELL_DATASETS, LETOR_DATASETS, data_dirs

    print("packaged data directories searched:", ", ".join(str(d) for d in data_dirs()))
    print("LETOR:", ", ".join(sorted(LETOR_DATASETS)), "  (load_letor(name, fold=1..5))")
    print("dwell:", ", ".join(sorted(DWELL_DATASETS)), "  (load_dwell(name))")
    return 0


def _losses(args) -> int:
    from .links import LINKS, get_link
    from .scalings import SCALINGS, get_scaling

    structures = _loss_structures()
    links, links_need = _usable(LINKS, get_link)
    scalings, scalings_need = _usable(SCALINGS, get_scaling)
    estimator = {
        "ranking": "SelectiveRanker / selrank train",
        "regression": "SelectiveRegressor",
        "classification": "SelectiveClassifier",
    }
    tasks = [args.task] if args.task else list(TASKS)
    for task in tasks:
        names = _task_losses(task, structures)
        if task == "classification":
            two = [n for n in names if structures[n] == "pointwise+link"]
            more = [n for n in names if structures[n] == "multiclass"]
            print(f"{task} ({estimator[task]}):")
            print("  two classes:  " + ", ".join(two) + " (with a link, default sigmoid)")
            print("  more classes: " + ", ".join(more))
            continue
        print(f"{task} ({estimator[task]}): " + ", ".join(names))
    print("links (--link, for pointwise and pairwise losses): " + ", ".join(links))
    print("scalings (--scaling, for listwise and composite_softmax losses): " + ", ".join(scalings))
    need = [n for n, st in structures.items() if st is None]
    if need or links_need or scalings_need:
        print(
            "need parameters the defaults cannot supply (Python API, or --param name=v1,v2,...): "
            + ", ".join(
                [
                    *(f"loss {n}" for n in need),
                    *(f"link {n}" for n in links_need),
                    *(f"scaling {n}" for n in scalings_need),
                ]
            )
        )
    both = sorted(set(LINKS) & set(SCALINGS))
    print("both a link and a scaling (selrank sensitivity needs --kind): " + ", ".join(both))
    return 0


def _demo(args) -> int:
    from .links import get_link
    from .losses import Listwise, Pointwise

    z = np.array([-3.0, 0.0, 3.0])
    print("Links: h(z) and sensitivity h'(z) at z = -3, 0, 3")
    for name, params in (
        ("identity", {}),
        ("exp", {}),
        ("sigmoid", {}),
        ("sinh", {"cap": 3.0}),
        ("smelu", {"c": 1.0}),
    ):
        link = get_link(name, **params)
        print(
            f"  {name:9s} h = {np.array2string(link.h(z), precision=3):28s} h' = {np.array2string(link.dh(z), precision=3)}"
        )
    print("\nThe same error costs more where the link is steep (exp link, error of 0.5):")
    loss = Pointwise("exp")
    for s in (-3.0, 0.0, 3.0):
        print(
            f"  observed {s:+.0f}: loss {float(loss.loss(np.array([s + 0.5]), np.array([s]))):.4f}"
        )
    print("\nListwise composite softmax (scaling exp) on one query, labels [2, 0, 1]:")
    g, h = Listwise("exp").grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), group=[3])
    print(
        f"  gradient {np.array2string(g, precision=3)}  hessian {np.array2string(h, precision=3)}"
    )
    print("\nTrain a ranker on packaged data: selrank train --dataset mq2008")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with the one error format of the command: ``selrank: error: ...``, status 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"selrank: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = _Parser(prog="selrank", description="Selective matching losses for ranking and dwell time.")
    p.add_argument("--version", action="version", version=f"selrank {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser(
        "train",
        help="train a selective ranker on packaged LETOR data (all five folds, or one) "
        "and compare it with LightGBM lambdarank and rank_xendcg",
    )
    t.add_argument("--dataset", default="mq2008", choices=["mq2008", "ohsumed"])
    t.add_argument(
        "--fold", type=int, choices=[1, 2, 3, 4, 5], help="one fold only (default: all five)"
    )
    t.add_argument(
        "--loss",
        default="listwise",
        help="listwise (default), pairwise, pointwise (see `selrank losses`)",
    )
    t.add_argument("--scaling", help="scaling of a listwise loss (e.g. exp, constant, smelu)")
    t.add_argument("--link", help="link of a pointwise/pairwise loss (e.g. exp, sinh, sigmoid)")
    t.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="loss/link/scaling parameter, repeatable",
    )
    t.add_argument("--backend", default="lightgbm", choices=["lightgbm", "xgboost"])
    t.add_argument(
        "--backend-param",
        action="append",
        metavar="NAME=VALUE",
        help="backend/tree parameter, repeatable; LightGBM tree parameters also apply to the baselines",
    )
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--n-resamples",
        type=int,
        default=10_000,
        help="bootstrap resamples of the confidence intervals",
    )
    t.add_argument(
        "--save", metavar="PATH", help="save the fitted selrank model (of the last fold)"
    )
    t.add_argument(
        "--json",
        metavar="PATH",
        help="write every result (per fold, comparisons, parameters) as JSON",
    )
    t.add_argument("--no-baseline", action="store_true", help="skip the LightGBM baselines")
    t.set_defaults(func=_train)

    s = sub.add_parser("sensitivity", help="h, h', loss curves and BUST of a link or scaling")
    s.add_argument("name", help="a link or scaling name")
    s.add_argument("--kind", choices=["link", "scaling"], help="required for names that are both")
    s.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="parameter, repeatable (lists: a=1,2,3)",
    )
    s.add_argument(
        "--gamma", type=float, help="temperature of a scaling's composite sigmoid (default 1)"
    )
    s.add_argument("--rows", type=int, default=11, help="rows of the printed table")
    s.add_argument(
        "--figure", metavar="PATH", help="save the sensitivity figure (needs matplotlib)"
    )
    s.set_defaults(func=_sensitivity)

    ls = sub.add_parser("losses", help="list the losses, links and scalings usable for each task")
    ls.add_argument("--task", choices=list(TASKS))
    ls.set_defaults(func=_losses)

    d = sub.add_parser("datasets", help="list the packaged datasets")
    d.set_defaults(func=_datasets)

    m = sub.add_parser("demo", help="a short demonstration of links and losses")
    m.set_defaults(func=_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``selrank`` command (and ``python -m selrank``); returns the exit status.

    Every user error prints one line ``selrank: error: ...`` on stderr and returns 2.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args) or 0)
    except (CLIError, ValueError, TypeError, KeyError, OSError, ImportError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"selrank: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
