"""Command line: ``selrank train | predict | evaluate | sensitivity | losses | datasets | demo``.

``selrank train`` is the library's main job, on packaged data or on the user's own files (a
LETOR / MSLR folder ``--data DIR``, a public benchmark by name, or ``--train F --valid F
--test F``): on each of the five official folds (or one, ``--fold``) it trains a gradient-boosted ranker with a selective
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
    $ selrank train --dataset mslr-web10k --data ~/data/MSLR-WEB10K --fold 1
    $ selrank train --data ~/data/my_letor_folder --json results.json.gz
    $ selrank train --train a.txt --valid b.txt --test c.txt --save model.json.gz
    $ selrank predict --model model.json.gz --data c.txt --out run.txt --qrels-out c.qrels
    $ selrank evaluate --qrels c.qrels --run run.txt --metrics ndcg@10,map
    $ selrank sensitivity exp --kind link --param alpha=1.5 --figure exp.png
    $ selrank losses --task ranking
    $ selrank datasets
    $ selrank demo
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _fit_baseline(objective: str, split, tree_params: dict, seed: int, n_rounds: int, esr: int):
    """LightGBM's built-in ``objective`` through the estimators' LightGBM backend: the same
    datasets, parameters and early stopping (selrank's NDCG@10 on the validation split) as
    ``SelectiveRanker``; returns the test scores and the rounds kept."""
    from .estimators.backends import LightGBMBackend, ndcg_metric

    lgbm = LightGBMBackend()
    tr, va = split.train, split.validation
    params = {"objective": objective, **lgbm.base_params(LEARNING_RATE, seed=seed), **tree_params}
    dtrain, valids = lgbm.datasets(
        tr.X, tr.y, group=tr.group, eval_sets=[(va.X, va.y, va.group, None)]
    )
    booster, best, _ = lgbm.boost(
        params,
        dtrain,
        valids,
        n_rounds,
        metric_fns=[ndcg_metric(va.y, va.group, 10)],
        early_stopping_rounds=esr,
    )
    kept = best if best is not None else booster.current_iteration()
    return booster.predict(split.test.X, num_iteration=kept), int(kept)


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


def _not_tree_params() -> set[str]:
    """The estimator's own parameters: never tree parameters of the LightGBM baselines."""
    from .estimators import SelectiveRanker

    return set(SelectiveRanker._get_param_names())


PACKAGED = ("mq2008", "ohsumed")
#: the public benchmarks read from the user's download (selrank.datasets.BENCHMARKS)
BENCHMARK_NAMES = ("mslr-web10k", "mslr-web30k", "istella-s", "mq2007")


@dataclass
class _Source:
    """Where ``selrank train`` reads its folds: packaged data, a folder, or three files."""

    name: str
    folds: list[int]
    load: Callable[[int], Any]
    describe: dict[str, Any] = field(default_factory=dict)


def _cache_option(args) -> Any:
    if args.no_cache:
        return False
    return Path(args.cache).expanduser() if args.cache else True


def _source(args) -> _Source:
    """Resolve the data options and check that every file exists, before any work."""
    from .datasets import (
        benchmark_files,
        load_benchmark,
        load_letor,
        load_ranking_files,
        load_ranking_folder,
        ranking_folder_files,
        ranking_folder_folds,
    )

    cache = _cache_option(args)
    singles = {"--train": args.train, "--valid": args.valid, "--test": args.test}
    if any(v is not None for v in singles.values()):
        if args.data is not None or args.dataset is not None:
            raise CLIError("--train/--valid/--test name single files; drop --data and --dataset")
        missing = [k for k, v in singles.items() if v is None]
        if missing:
            raise CLIError(
                f"single files need --train, --valid and --test (the validation file early-stops "
                f"every model); missing {', '.join(missing)}"
            )
        if args.fold is not None:
            raise CLIError("--fold picks a fold of a folder; three single files are one split")
        for option, value in singles.items():
            if not Path(value).expanduser().is_file():
                raise CLIError(f"{option} {value}: no such file")
        paths = [Path(v).expanduser() for v in singles.values()]
        return _Source(
            paths[0].stem,
            [1],
            lambda k: load_ranking_files(*paths, cache=cache),
            {
                "kind": "files",
                "train": str(paths[0]),
                "valid": str(paths[1]),
                "test": str(paths[2]),
            },
        )
    if args.data is not None:
        root = Path(args.data).expanduser()
        if args.dataset in PACKAGED:
            raise CLIError(
                f"--dataset {args.dataset} is packaged with selrank: drop --data, or name the "
                f"benchmark your folder holds ({', '.join(BENCHMARK_NAMES)}), or give --data alone"
            )
        if not root.is_dir():
            raise CLIError(
                f"--data {root}: no such folder (give the folder holding Fold1 ... Fold5, "
                "or train.txt / vali.txt / test.txt)"
            )
        if args.dataset is not None:  # a public benchmark: official layout and counts
            name = args.dataset
            n_folds = 1 if name == "istella-s" else 5
            folds = [args.fold] if args.fold else list(range(1, n_folds + 1))
            for k in folds:
                benchmark_files(name, root, k)  # a missing folder or file, before any work
            verify = not args.no_verify
            return _Source(
                name,
                folds,
                lambda k: load_benchmark(name, root, k, cache=cache, verify=verify),
                {"kind": "benchmark", "path": str(root), "verified": verify},
            )
        if args.fold is not None:
            folds = [args.fold]
        else:
            folds = ranking_folder_folds(root) or [1]
        for k in folds:
            _, vali, _ = ranking_folder_files(root, k)  # raises, naming the layouts it expects
            if vali is None:
                raise CLIError(
                    f"{root} fold {k} has no validation file (vali.txt or valid.txt): "
                    "selrank train early-stops every model on it"
                )
        return _Source(
            root.name,
            folds,
            lambda k: load_ranking_folder(root, k, cache=cache),
            {"kind": "folder", "path": str(root)},
        )
    name = args.dataset or "mq2008"
    if name in BENCHMARK_NAMES:
        raise CLIError(
            f"--dataset {name} is read from your download: add --data DIR, the folder it was "
            "extracted to (selrank cannot redistribute it; see `selrank datasets`)"
        )
    folds = [args.fold] if args.fold else [1, 2, 3, 4, 5]
    return _Source(name, folds, lambda k: load_letor(name, fold=k), {"kind": "packaged"})


def _check_outputs(outputs: dict[str, str | os.PathLike | None]) -> None:
    """Every output path writable and distinct, before any work starts."""
    from ._files import check_distinct_outputs, check_output_path

    for option, value in outputs.items():
        if value is not None:
            check_output_path(value, option)
    check_distinct_outputs(outputs)


def _write_json(path: str, doc: dict) -> None:
    from ._files import open_write

    with open_write(path, text=True) as fh:
        json.dump(doc, fh, indent=2, default=str)


def _train(args) -> int:
    from .estimators import SelectiveRanker
    from .metrics import format_comparison, paired_comparison

    _check_outputs({"--save": args.save, "--json": args.json})
    _check_loss_for_ranking(args.loss)
    source = _source(args)
    kwargs = _selrank_kwargs(args)
    backend_params = _parse_params(args.backend_param, "--backend-param")
    tree_params = (
        {k: v for k, v in backend_params.items() if k not in _not_tree_params()}
        if args.backend == "lightgbm"
        else {}
    )
    n_rounds = int(backend_params.get("n_estimators", MAX_ROUNDS))
    esr = int(backend_params.get("early_stopping_rounds", PATIENCE))
    folds = source.folds
    baselines = [] if args.no_baseline else list(BASELINES)
    name = f"selrank {args.loss}"
    systems = [name] + [f"LightGBM {b}" for b in baselines]
    # Read (and, for a benchmark, verify) every fold before the first fit, so that a damaged
    # file is reported before any training; with the cache on, the loop re-reads arrays.
    loaded = {}
    for fold in folds:
        ds = source.load(fold)
        if ds.train is None or ds.validation is None or ds.test is None:
            raise CLIError(f"{source.name} fold {fold} lacks a train, validation or test split")
        if fold == folds[0]:
            loaded[fold] = ds

    bar = _progress(len(folds) * len(systems), source.name)
    per_fold: list[dict] = []
    pooled_y: list[np.ndarray] = []
    pooled_group: list[np.ndarray] = []
    pooled: dict[str, list[np.ndarray]] = {s: [] for s in systems}
    rounds: dict[str, list[int]] = {s: [] for s in systems}
    seconds = {s: 0.0 for s in systems}
    n_queries = 0
    for fold in folds:
        split = loaded.pop(fold, None) or source.load(fold)
        tr, va, te = split.train, split.validation, split.test
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
    if source.describe["kind"] == "files":
        where = "one split"
    print(
        f"{source.name}, {where}: {n_queries} test queries"
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
        "dataset": source.name,
        "source": source.describe,
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
        _write_json(args.json, doc)
        print(f"results written to {args.json}")
    return 0


def _load_model(path: str):
    """A model file written by ``save()``: a GBDT estimator (JSON) or a NeuralRanker (torch)."""
    from ._files import open_read

    p = Path(path).expanduser()
    if not p.is_file():
        raise CLIError(f"--model {p}: no such file")
    try:
        with open_read(p) as fh:
            head = fh.read(64).lstrip()
    except (EOFError, OSError, zlib.error) as exc:
        raise CLIError(
            f"--model {p}: cannot be read, the gzip stream is truncated or corrupt "
            f"({type(exc).__name__}: {exc}); copy the file again"
        ) from None
    if head.startswith(b"{"):
        from .estimators import load

        return load(p)
    if head.startswith(b"PK"):  # torch.save's zip container
        from .estimators import NeuralRanker

        return NeuralRanker.load(p)
    raise CLIError(
        f"--model {p}: not a selrank model file (expected the JSON written by save() of a "
        "selrank estimator, or a NeuralRanker file)"
    )


def _predict(args) -> int:
    from .datasets import read_svmlight
    from .metrics import labels_to_qrels, scores_to_run, write_qrels, write_run

    _check_outputs({"--out": args.out, "--qrels-out": args.qrels_out})
    model = _load_model(args.model)
    data = Path(args.data).expanduser()
    if not data.is_file():
        raise CLIError(f"--data {data}: no such file")
    width = int(model.n_features_in_)
    split = read_svmlight(data, n_features=width, keep_comments=True)
    docid = split.docid
    named = docid is not None and bool(np.all(docid != ""))
    docno = docid if named else None  # else each row's index in the file, as labels_to_qrels
    t0 = time.perf_counter()
    scores = np.asarray(model.predict(split.X), dtype=np.float64)
    seconds = time.perf_counter() - t0
    run = scores_to_run(scores, split.group, qid=split.qid, docno=docno, tag=args.tag)
    write_run(run, args.out)
    print(
        f"{split.n_rows} documents of {split.n_queries} queries scored in {seconds:.2f} s; "
        f"TREC run written to {args.out} (documents named by "
        f"{'their #docid' if named else 'their row in the file, from 0'})"
    )
    if args.qrels_out:
        write_qrels(
            labels_to_qrels(split.y, split.group, qid=split.qid, docno=docno), args.qrels_out
        )
        print(f"the file's labels written as qrels to {args.qrels_out}")
    return 0


def _metric_names(items: Sequence[str] | None) -> list[str]:
    """The metric names of ``--metrics``, read by the one grammar of ``selrank.metrics``
    (trec_eval, ir_measures and ranx spellings; ``P.5,10`` is P@5 and P@10)."""
    from .metrics import parse_metrics

    try:
        specs = parse_metrics(list(items) if items else ["ndcg@10", "map", "P@10", "recip_rank"])
    except ValueError as exc:
        raise CLIError(f"--metrics: {exc}") from None
    return [spec.name for spec in specs]


def _evaluate(args) -> int:
    from .metrics import evaluate_run, read_qrels, read_run

    _check_outputs({"--json": args.json})
    metrics = _metric_names(args.metrics)
    for option, value in [("--qrels", args.qrels)] + [("--run", r) for r in args.run]:
        if not Path(value).expanduser().is_file():
            raise CLIError(f"{option} {value}: no such file")
    qrels = read_qrels(args.qrels)
    runs = {r: read_run(r) for r in args.run}
    options = {
        "metrics": metrics,
        "relevance_level": args.relevance_level,
        "gain": args.gain,
        "queries": args.queries,
    }
    frames = {r: evaluate_run(qrels, run, **options) for r, run in runs.items()}
    width = max(12, *(len(r) for r in runs))
    print(f"{'run':{width}s}" + "".join(f"{m:>13s}" for m in metrics) + f"{'queries':>9s}")
    doc: dict[str, Any] = {"qrels": args.qrels, "options": options, "runs": {}}
    for r, frame in frames.items():
        means = dict(zip(frame["metric"].to_list(), frame["mean"].to_list()))
        n = int(frame["n_queries"].to_numpy().max())
        print(f"{r:{width}s}" + "".join(f"{means[m]:13.4f}" for m in metrics) + f"{n:9d}")
        doc["runs"][r] = {"summary": frame.to_dicts()}
        if args.per_query:
            doc["runs"][r]["per_query"] = evaluate_run(
                qrels, runs[r], **options, per_query=True
            ).to_dicts()
    print(
        f"(mean over the queries of the qrels{'' if args.queries == 'qrels' else ' and the run'}; "
        f"trec_eval's conventions: {args.gain} gain, relevant at level >= {args.relevance_level}, "
        "ties by decreasing docno)"
    )
    if args.per_query:
        for r in runs:
            print(f"\nper query, {r}:")
            table = evaluate_run(qrels, runs[r], **options, per_query=True)
            print("".join(f"{c:>13s}" for c in table.columns))
            for row in table.iter_rows():
                print(
                    "".join(f"{v:>13.4f}" if isinstance(v, float) else f"{v!s:>13s}" for v in row)
                )
    if len(runs) > 1:
        from .metrics import trec_report

        reference = args.reference if args.reference is not None else args.run[0]
        if reference not in runs:
            raise CLIError(f"--reference {reference}: not one of the --run files {list(runs)}")
        named = {r: runs[r] for r in runs}
        print(f"\npaired comparison against {reference} (per-query differences, Holm):")
        print(
            trec_report(
                qrels,
                named,
                metrics=metrics,
                fmt=args.format,
                reference=reference,
                relevance_level=args.relevance_level,
                gain=args.gain,
                queries=args.queries,
            )
        )
    if args.json:
        _write_json(args.json, doc)
        print(f"results written to {args.json}")
    return 0


def _sensitivity(args) -> int:
    from .links import LINKS, get_link
    from .paper.underspecification import sensitivity_report
    from .scalings import SCALINGS, get_scaling

    _check_outputs({"--figure": args.figure})
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
    from .datasets import BENCHMARKS, DWELL_DATASETS, LETOR_DATASETS, cache_dir, data_dirs

    print("packaged data directories searched:", ", ".join(str(d) for d in data_dirs()))
    print("LETOR:", ", ".join(sorted(LETOR_DATASETS)), "  (load_letor(name, fold=1..5))")
    print("dwell:", ", ".join(sorted(DWELL_DATASETS)), "  (load_dwell(name))")
    print(
        "public benchmarks from your download (selrank train --dataset NAME --data DIR; "
        "load_benchmark(name, DIR, fold)):"
    )
    for b in BENCHMARKS.values():
        layout = f"{b.subdir}/" if b.n_folds == 1 else "Fold1..Fold5/"
        print(
            f"  {b.name:12s} {b.title:16s} {b.n_rows:>10,} rows {b.n_queries:>7,} queries "
            f"{b.n_features:>4} features  {layout}{{train,vali,test}}.txt  {b.url}"
        )
    print(f"binary cache of text files: {cache_dir()} (--cache DIR, $SELRANK_CACHE_DIR)")
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
        help="train a selective ranker on packaged LETOR data or your own files (all five "
        "folds, or one) and compare it with LightGBM lambdarank and rank_xendcg",
    )
    t.add_argument(
        "--dataset",
        choices=[*PACKAGED, *BENCHMARK_NAMES],
        help="packaged: mq2008 (the default), ohsumed; a public benchmark read from your "
        "download with --data DIR (official layout and counts checked)",
    )
    t.add_argument(
        "--data",
        metavar="DIR",
        help="a LETOR / MSLR folder: Fold1..Fold5/{train,vali,test}.txt (or train.txt directly; "
        "each may be .gz)",
    )
    t.add_argument("--train", metavar="FILE", help="training file (with --valid and --test)")
    t.add_argument("--valid", metavar="FILE", help="validation file (early stopping)")
    t.add_argument("--test", metavar="FILE", help="test file (the report)")
    t.add_argument(
        "--fold", type=int, choices=[1, 2, 3, 4, 5], help="one fold only (default: all folds)"
    )
    t.add_argument(
        "--cache",
        metavar="DIR",
        help="folder of the binary cache of your text files (default $SELRANK_CACHE_DIR or "
        "~/.cache/selrank)",
    )
    t.add_argument("--no-cache", action="store_true", help="parse the text files every time")
    t.add_argument(
        "--no-verify",
        action="store_true",
        help="read a benchmark folder whose counts differ from the official release",
    )
    t.add_argument(
        "--loss",
        default="listwise",
        help="listwise (default), pairwise, weighted_pairwise, pointwise (see `selrank losses`)",
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
        "--save",
        metavar="PATH",
        help="save the fitted selrank model (of the last fold); gzip when PATH ends in .gz",
    )
    t.add_argument(
        "--json",
        metavar="PATH",
        help="write every result (per fold, comparisons, parameters) as JSON",
    )
    t.add_argument("--no-baseline", action="store_true", help="skip the LightGBM baselines")
    t.set_defaults(func=_train)

    pr = sub.add_parser(
        "predict", help="score an SVMlight / LETOR file with a saved model; write a TREC run"
    )
    pr.add_argument("--model", required=True, metavar="PATH", help="a file written by save()")
    pr.add_argument("--data", required=True, metavar="FILE", help="SVMlight file (plain or .gz)")
    pr.add_argument("--out", required=True, metavar="PATH", help="the TREC run (.gz: gzip)")
    pr.add_argument("--tag", default="selrank", help="the run's name (last column)")
    pr.add_argument(
        "--qrels-out", metavar="PATH", help="also write the file's labels as TREC qrels"
    )
    pr.set_defaults(func=_predict)

    ev = sub.add_parser("evaluate", help="evaluate TREC runs against qrels, as trec_eval does")
    ev.add_argument("--qrels", required=True, metavar="PATH")
    ev.add_argument("--run", required=True, nargs="+", metavar="PATH", help="one or more runs")
    ev.add_argument(
        "--metrics",
        action="append",
        metavar="LIST",
        help="comma-separated, repeatable: ndcg@10, map, P@10, recip_rank, recall@100, "
        "ndcg_cut_10, ... (default ndcg@10,map,P@10,recip_rank)",
    )
    ev.add_argument("--relevance-level", type=int, default=1, help="trec_eval -l (default 1)")
    ev.add_argument("--gain", choices=["linear", "exponential"], default="linear")
    ev.add_argument(
        "--queries",
        choices=["qrels", "both"],
        default="qrels",
        help="average over every query of the qrels (trec_eval -c), or those in both",
    )
    ev.add_argument("--per-query", action="store_true", help="also print each query")
    ev.add_argument(
        "--reference",
        metavar="PATH",
        help="with several runs: the run the others are compared to (default the first)",
    )
    ev.add_argument(
        "--format",
        choices=["text", "markdown", "latex"],
        default="text",
        help="with several runs: the comparison table as text, Markdown or LaTeX",
    )
    ev.add_argument("--json", metavar="PATH", help="write the results as JSON (.gz: gzip)")
    ev.set_defaults(func=_evaluate)

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
