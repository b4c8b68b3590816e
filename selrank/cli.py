"""Command line: ``selrank train | predict | evaluate | sensitivity | losses | datasets | select | demo``.

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


def _fit_baseline(
    objective: str,
    split,
    tree_params: dict,
    seed: int,
    n_rounds: int,
    esr: int,
    threads: int | None = None,
):
    """LightGBM's built-in ``objective`` through the estimators' LightGBM backend: the same
    datasets, parameters and early stopping (selrank's NDCG@10 on the validation split) as
    ``SelectiveRanker``; returns the test scores and the rounds kept."""
    from ._threads import default_threads, user_threads
    from .estimators.backends import LightGBMBackend, ndcg_metric

    lgbm = LightGBMBackend()
    tr, va = split.train, split.validation
    params = {"objective": objective, **lgbm.base_params(LEARNING_RATE, seed=seed), **tree_params}
    if not user_threads(params):  # as the estimators: physical cores, fewer for small data
        params["num_threads"] = threads or default_threads(len(tr.y))
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
    if getattr(args, "threads", None) is not None:
        from ._threads import user_threads

        if user_threads(backend_params):
            raise CLIError("--threads and a thread --backend-param both set the threads; give one")
        kwargs["num_threads" if args.backend == "lightgbm" else "n_jobs"] = args.threads
    return kwargs


def _not_tree_params() -> set[str]:
    """The estimator's own parameters: never tree parameters of the LightGBM baselines."""
    from .estimators import SelectiveRanker

    return set(SelectiveRanker().get_params(deep=False))


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
    #: the train / validation / test files of a fold (None: packaged data or no such split)
    files: Callable[[int], list[Path | None]] = lambda k: [None, None, None]


def _printer(*outputs: Any) -> Callable[..., None]:
    """``print`` for the human-readable report: to stderr when a data output is stdout."""
    stream = sys.stderr if _to_stdout(*outputs) else None

    def say(*values: Any) -> None:
        print(*values, file=stream if stream is not None else sys.stdout)

    return say


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
            files=lambda k: list(paths),
            describe={
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
        if root.exists() and not root.is_dir():
            raise CLIError(
                f"--data {root} is a file; --data takes a folder (holding Fold1 ... Fold5, "
                "train.txt / vali.txt / test.txt, or LightGBM's rank.train / rank.vali / "
                "rank.test with their .query files). For single files give --train FILE "
                "--valid FILE --test FILE"
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
                files=lambda k: list(benchmark_files(name, root, k)),
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
            files=lambda k: list(ranking_folder_files(root, k)),
        )
    name = args.dataset or "mq2008"
    if name in BENCHMARK_NAMES:
        raise CLIError(
            f"--dataset {name} is read from your download: add --data DIR, the folder it was "
            "extracted to (selrank cannot redistribute it; see `selrank datasets`)"
        )
    folds = [args.fold] if args.fold else [1, 2, 3, 4, 5]
    return _Source(name, folds, lambda k: load_letor(name, fold=k), {"kind": "packaged"})


STDIO = "-"  # standard input / output, as trec_eval and most tools take it


def _check_outputs(
    outputs: dict[str, str | os.PathLike | None], inputs: dict[str, Any] | None = None
) -> None:
    """Every output path writable, distinct and none of the inputs, before any work starts;
    ``-`` (standard output) for at most one of them."""
    from ._files import check_distinct_outputs, check_output_path, check_outputs_not_inputs

    to_stdout = [o for o, v in outputs.items() if v is not None and os.fspath(v) == STDIO]
    if len(to_stdout) > 1:
        raise CLIError(
            f"{' and '.join(to_stdout)} both write to standard output (-); give one a file name"
        )
    files = {o: v for o, v in outputs.items() if v is not None and os.fspath(v) != STDIO}
    for option, value in files.items():
        check_output_path(value, option)
    check_distinct_outputs(files)
    if inputs:
        check_outputs_not_inputs(files, inputs)


def _to_stdout(*values: Any) -> bool:
    return any(v is not None and os.fspath(v) == STDIO for v in values)


def _write_json(path: str, doc: dict) -> None:
    from ._files import open_write

    if path == STDIO:
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    with open_write(path, text=True) as fh:
        json.dump(doc, fh, indent=2, default=str)


class _Stdin:
    """``-`` among the inputs: standard input copied once to a temporary file named ``stdin``
    (so the readers see a file: gzip is recognised, errors name its lines); messages name it
    ``<stdin>``."""

    def __init__(self) -> None:
        self._tmp: Any = None
        self.path: Path | None = None

    def resolve(self, option: str, value: str) -> str:
        if value != STDIO:
            return value
        if self.path is not None:
            raise CLIError(f"{option} -: standard input is already read by another option")
        import shutil
        import tempfile

        self._tmp = tempfile.TemporaryDirectory(prefix="selrank_stdin_")
        self.path = Path(self._tmp.name) / "stdin"
        with open(self.path, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh)
        return str(self.path)

    def message(self, exc: BaseException) -> str:
        text = str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
        return text if self.path is None else text.replace(str(self.path), "<stdin>")

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
        self._tmp = self.path = None


_STDIN = _Stdin()


def _line_of_row(path: Path, row: int) -> int | None:
    """The line of data row ``row`` (from 0) of a text file: blank and ``#`` lines are not rows."""
    from ._files import open_read

    seen = -1
    try:
        with open_read(path) as fh:
            for lineno, raw in enumerate(fh, 1):
                text = raw.strip()
                if text and not text.startswith(b"#"):
                    seen += 1
                    if seen == row:
                        return lineno
    except OSError:  # pragma: no cover - the file went away
        return None
    return None


def _where(files: list[Path | None], k: int, row: int, fold: int, split: str) -> str:
    f = files[k] if k < len(files) else None
    if f is None:
        return f"fold {fold} {split} split, row {row + 1}"
    line = _line_of_row(Path(f), row)
    return f"{f}, line {line}" if line is not None else f"{f}, data row {row + 1}"


def _check_labels(source: _Source, fold: int, ds: Any, baselines: list[str]) -> int:
    """Refuse, before any training, labels the report or the baselines cannot take; returns
    the largest label of the training and validation splits.

    Every split: finite and >= 0 (NDCG's gain; early stopping and the report use it). With the
    LightGBM baselines: whole numbers in the training and validation splits (LightGBM's
    lambdarank and rank_xendcg refuse fractional grades)."""
    files = source.files(fold)
    top = 0
    for k, (split_name, split) in enumerate(
        (("train", ds.train), ("validation", ds.validation), ("test", ds.test))
    ):
        y = np.asarray(split.y, dtype=np.float64)
        bad = ~np.isfinite(y) | (y < 0)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise CLIError(
                f"{_where(files, k, r, fold, split_name)}: label {y[r]:g}; selrank train needs "
                "relevance labels >= 0 in every split (NDCG, used for early stopping and the "
                "report, takes gain 2^label - 1)"
            )
        if baselines and split_name != "test":
            frac = y != np.floor(y)
            if frac.any():
                r = int(np.flatnonzero(frac)[0])
                raise CLIError(
                    f"{_where(files, k, r, fold, split_name)}: label {y[r]:g} is not a whole "
                    "number; LightGBM's lambdarank and rank_xendcg (the baselines) take integer "
                    "relevance grades. Round the labels, or pass --no-baseline to train selrank "
                    "alone"
                )
            top = max(top, int(y.max()) if y.size else 0)
    return top


class _QuietFds:
    """Silence file descriptors 1 and 2 (LightGBM's C++ logs write to them directly)."""

    def __enter__(self) -> _QuietFds:
        sys.stdout.flush()
        sys.stderr.flush()
        self._saved = [os.dup(1), os.dup(2)]
        self._null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(self._null, 1)
        os.dup2(self._null, 2)
        return self

    def __exit__(self, *exc: Any) -> None:
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in (*self._saved, self._null):
            os.close(fd)


def _probe_parameters(args, kwargs: dict, tree_params: dict, n_features: int) -> None:
    """Fit one round of every system on a tiny data set as wide as the data, so that a
    parameter the backend refuses (``--backend-param num_leaves=1``) is one line and exit 2
    before any training, not a traceback after it."""
    import warnings

    from .estimators import SelectiveRanker

    rng = np.random.default_rng(0)
    X = rng.random((120, max(1, int(n_features))))
    y = rng.integers(0, 3, 120).astype(np.float64)
    group = [10] * 12
    systems: list[tuple[str, Callable[[], Any]]] = [
        (
            "the selrank model",
            lambda: SelectiveRanker(**{**kwargs, "n_estimators": 1}).fit(
                X, y, group=group, eval_set=[(X, y)], eval_group=[group]
            ),
        )
    ]
    if not args.no_baseline:
        import lightgbm as lgb

        params = {"objective": "lambdarank", "verbosity": -1, "num_threads": 1, **tree_params}
        for key in ("n_estimators", "early_stopping_rounds"):
            params.pop(key, None)
        systems.append(
            (
                "the LightGBM baselines",
                lambda: lgb.train(params, lgb.Dataset(X, y, group=group), num_boost_round=1),
            )
        )
    for what, fit in systems:
        try:
            with warnings.catch_warnings(), _QuietFds():
                warnings.simplefilter("ignore")
                fit()
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            given = " ".join(f"--backend-param {p}" for p in args.backend_param or [])
            raise CLIError(
                f"{given or 'the parameters'}: {what} cannot be trained with them: "
                f"{type(exc).__name__}: {first}"
            ) from None


def _train(args) -> int:
    from .estimators import SelectiveRanker
    from .metrics import format_comparison, paired_comparison

    if args.save == STDIO:
        raise CLIError("--save -: a model is saved to a file; give a file name")
    outputs = {"--save": args.save, "--json": args.json}
    _check_outputs(outputs)
    _check_loss_for_ranking(args.loss)
    source = _source(args)
    inputs = {
        f"fold {k} {name}": f
        for k in source.folds
        for name, f in zip(("train", "validation", "test"), source.files(k))
    }
    _check_outputs(outputs, inputs)
    say = _printer(args.json)
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
    top_label = 0
    for fold in folds:
        ds = source.load(fold)
        if ds.train is None or ds.validation is None or ds.test is None:
            raise CLIError(f"{source.name} fold {fold} lacks a train, validation or test split")
        top_label = max(top_label, _check_labels(source, fold, ds, baselines))
        if fold == folds[0]:
            loaded[fold] = ds
    # LightGBM's lambdarank / rank_xendcg know grades 0..30 (label_gain 2^i - 1): above that,
    # the same gain (the report's 2^rel - 1) for every grade present
    if baselines and top_label > 30 and "label_gain" not in tree_params:
        tree_params["label_gain"] = [float(2.0**i - 1.0) for i in range(top_label + 1)]
    _probe_parameters(args, kwargs, tree_params, loaded[folds[0]].train.n_features)

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
                b, split, tree_params, args.seed, n_rounds, esr, args.threads
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
    say(
        f"{source.name}, {where}: {n_queries} test queries"
        + ("" if len(folds) == 1 else " (each fold's test split, pooled)")
    )
    header = (
        f"{'system':28s}"
        + "".join(f"{'NDCG@' + str(k):>9s}" for k in NDCG_AT)
        + f"{'rounds':>8s}{'seconds':>9s}"
    )
    say(header)
    say("-" * len(header))
    for s in systems:
        say(
            f"{s:28s}"
            + "".join(f"{means[s][f'ndcg@{k}']:9.4f}" for k in NDCG_AT)
            + f"{np.mean(rounds[s]):8.0f}{seconds[s]:9.1f}"
        )
    say(
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
        say()
        say(format_comparison(cmp.filter(cmp["metric"] == "ndcg@10")))
        say(
            "(Δ: mean per-query difference over the test queries; [95% bootstrap CI]; p: paired t-test, "
            "Holm-adjusted over the baselines; better/worse: CI excludes 0 and p < 0.05, "
            "otherwise parity = no significant difference)"
        )
    if args.json:
        _write_json(args.json, doc)
        if args.json != STDIO:
            say(f"results written to {args.json}")
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


def _write_to_stdout(write: Callable[[str], None]) -> None:
    """Run a writer that takes a path into a temporary file and copy it to standard output."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="selrank_stdout_") as tmp:
        path = str(Path(tmp) / "out.txt")
        write(path)
        with open(path, "rb") as fh:
            sys.stdout.flush()
            shutil.copyfileobj(fh, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def _predict(args) -> int:
    from .datasets import read_svmlight
    from .datasets.lightgbm_files import is_lightgbm_ranking_file, read_lightgbm_ranking
    from .metrics import labels_to_qrels, scores_to_run, write_qrels, write_run

    outputs = {"--out": args.out, "--qrels-out": args.qrels_out}
    _check_outputs(outputs, {"--model": args.model, "--data": args.data})
    say = _printer(args.out, args.qrels_out)
    model = _load_model(args.model)
    data = Path(_STDIN.resolve("--data", args.data)).expanduser()
    if data.is_dir():
        raise CLIError(f"--data {data} is a folder; predict scores one SVMlight file")
    if not data.is_file():
        raise CLIError(f"--data {data}: no such file")
    width = int(model.n_features_in_)
    if is_lightgbm_ranking_file(data):  # LightGBM's rank.test + rank.test.query
        split = read_lightgbm_ranking(data, n_features=width)
    else:
        split = read_svmlight(data, n_features=width, keep_comments=True)
    docid = split.docid
    named = docid is not None and bool(np.all(docid != ""))
    docno = docid if named else None  # else each row's index in the file, as labels_to_qrels
    t0 = time.perf_counter()
    scores = np.asarray(model.predict(split.X), dtype=np.float64)
    seconds = time.perf_counter() - t0
    run = scores_to_run(scores, split.group, qid=split.qid, docno=docno, tag=args.tag)
    if args.out == STDIO:
        _write_to_stdout(lambda path: write_run(run, path))
    else:
        write_run(run, args.out)
    shown = "standard output" if args.out == STDIO else args.out
    say(
        f"{split.n_rows} documents of {split.n_queries} queries scored in {seconds:.2f} s; "
        f"TREC run written to {shown} (documents named by "
        f"{'their #docid' if named else 'their row in the file, from 0'})"
    )
    if args.qrels_out:
        qrels = labels_to_qrels(split.y, split.group, qid=split.qid, docno=docno)
        if args.qrels_out == STDIO:
            _write_to_stdout(lambda path: write_qrels(qrels, path))
        else:
            write_qrels(qrels, args.qrels_out)
        shown = "standard output" if args.qrels_out == STDIO else args.qrels_out
        say(f"the file's labels written as qrels to {shown}")
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
    from .metrics import compare, evaluate_run, read_qrels, read_run, trec_report

    _check_outputs({"--json": args.json}, {"--qrels": args.qrels, "--run": list(args.run)})
    metrics = _metric_names(args.metrics)
    if len(set(args.run)) != len(args.run):
        raise CLIError(f"--run names a file twice: {args.run}")
    if args.reference is not None and args.reference not in args.run:
        raise CLIError(f"--reference {args.reference}: not one of the --run files {args.run}")
    qrels_path = _STDIN.resolve("--qrels", args.qrels)
    run_paths = {r: _STDIN.resolve("--run", r) for r in args.run}
    for option, value in [("--qrels", qrels_path)] + [("--run", r) for r in run_paths.values()]:
        if Path(value).expanduser().is_dir():
            raise CLIError(f"{option} {value} is a folder; give the file")
        if not Path(value).expanduser().is_file():
            raise CLIError(f"{option} {value}: no such file")
    # stdout holds only the data when it is asked for: the JSON (--json -), or the table in
    # the chosen format (--format markdown / latex); the rest goes to stderr
    data_only = args.json == STDIO or args.format != "text"
    say = _printer(STDIO if data_only else None)
    qrels = read_qrels(qrels_path)
    runs = {r: read_run(p) for r, p in run_paths.items()}
    options = {
        "metrics": metrics,
        "relevance_level": args.relevance_level,
        "gain": args.gain,
        "queries": args.queries,
    }
    frames = {r: evaluate_run(qrels, run, **options) for r, run in runs.items()}
    width = max(12, *(len(r) for r in runs))
    say(f"{'run':{width}s}" + "".join(f"{m:>13s}" for m in metrics) + f"{'queries':>9s}")
    doc: dict[str, Any] = {"qrels": args.qrels, "options": options, "runs": {}}
    for r, frame in frames.items():
        means = dict(zip(frame["metric"].to_list(), frame["mean"].to_list()))
        n = int(frame["n_queries"].to_numpy().max())
        say(f"{r:{width}s}" + "".join(f"{means[m]:13.4f}" for m in metrics) + f"{n:9d}")
        doc["runs"][r] = {"summary": frame.to_dicts()}
        if args.per_query:
            doc["runs"][r]["per_query"] = evaluate_run(
                qrels, runs[r], **options, per_query=True
            ).to_dicts()
    say(
        f"(mean over the queries of the qrels{'' if args.queries == 'qrels' else ' and the run'}; "
        f"trec_eval's conventions: {args.gain} gain, relevant at level >= {args.relevance_level}, "
        "ties by decreasing docno)"
    )
    if args.per_query:
        for r in runs:
            say(f"\nper query, {r}:")
            table = evaluate_run(qrels, runs[r], **options, per_query=True)
            say("".join(f"{c:>13s}" for c in table.columns))
            for row in table.iter_rows():
                say("".join(f"{v:>13.4f}" if isinstance(v, float) else f"{v!s:>13s}" for v in row))
    table_out = print if args.format != "text" and args.json != STDIO else say
    if len(runs) > 1:
        reference = args.reference if args.reference is not None else args.run[0]
        report = compare(
            dict(runs),
            qrels,
            metrics=metrics,
            baseline=reference,
            test="t",
            relevance_level=args.relevance_level,
            gain=args.gain,
            queries=args.queries,
        )
        say(f"\npaired comparison against {reference} (per-query differences, Holm):")
        if args.format == "markdown":
            table_out(report.to_markdown())
        elif args.format == "latex":
            table_out(report.to_latex())
        else:
            say(str(report))
        doc["comparison"] = {
            "reference": reference,
            "test": "paired t-test, Holm-adjusted over the systems compared on each metric",
            "confidence": report.confidence,
            "rows": report.table.to_dicts(),
        }
    elif args.format != "text":  # one run: its summary as a Markdown or LaTeX table
        table_out(
            trec_report(
                qrels,
                next(iter(runs.values())),
                metrics=metrics,
                fmt=args.format,
                relevance_level=args.relevance_level,
                gain=args.gain,
                queries=args.queries,
            )
        )
    if args.json:
        _write_json(args.json, doc)
        if args.json != STDIO:
            say(f"results written to {args.json}")
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}")
    return value


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
        "each may be .gz), or LightGBM's rank.train / rank.vali / rank.test with .query files",
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
    t.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="threads of every fit (default: one per 20,000 training rows, at most the "
        "physical cores; LightGBM's own default is every logical CPU)",
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
        help="write every result (per fold, comparisons, parameters) as JSON (- : standard "
        "output, the report then goes to standard error)",
    )
    t.add_argument("--no-baseline", action="store_true", help="skip the LightGBM baselines")
    t.set_defaults(func=_train)

    pr = sub.add_parser(
        "predict", help="score an SVMlight / LETOR file with a saved model; write a TREC run"
    )
    pr.add_argument("--model", required=True, metavar="PATH", help="a file written by save()")
    pr.add_argument(
        "--data",
        required=True,
        metavar="FILE",
        help="SVMlight file (plain or .gz; LightGBM's rank.test with rank.test.query; - : "
        "standard input)",
    )
    pr.add_argument(
        "--out", required=True, metavar="PATH", help="the TREC run (.gz: gzip; - : standard output)"
    )
    pr.add_argument("--tag", default="selrank", help="the run's name (last column)")
    pr.add_argument(
        "--qrels-out", metavar="PATH", help="also write the file's labels as TREC qrels"
    )
    pr.set_defaults(func=_predict)

    ev = sub.add_parser("evaluate", help="evaluate TREC runs against qrels, as trec_eval does")
    ev.add_argument(
        "--qrels", required=True, metavar="PATH", help="qrels file (- : standard input)"
    )
    ev.add_argument(
        "--run",
        required=True,
        nargs="+",
        metavar="PATH",
        help="one or more runs (- : standard input, for one of --qrels / --run)",
    )
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
        help="the table as text, Markdown or LaTeX (markdown / latex: standard output holds "
        "only that table, the rest goes to standard error)",
    )
    ev.add_argument(
        "--json",
        metavar="PATH",
        help="write the results (and the comparison) as JSON (.gz: gzip; - : standard output)",
    )
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

    from .selection import add_select_command

    add_select_command(sub)  # `selrank select`: the selection report (selrank.selection)
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
        print(f"selrank: error: {_STDIN.message(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        # a backend's own error (LightGBMError, XGBoostError) is a user error in one line
        if type(exc).__name__ not in ("LightGBMError", "XGBoostError"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"selrank: error: {type(exc).__name__}: {first}", file=sys.stderr)
        return 2
    finally:
        _STDIN.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
