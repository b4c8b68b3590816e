"""``select``: train every candidate on every fold, choose on validation, compare on test."""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._candidates import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    DEFAULT_REGRESSION_CANDIDATES,
    REGRESSION_CANDIDATES,
    Candidate,
    TrainSettings,
    as_fit_result,
    timed_predict_ms,
)
from ._clicks import simulate_clicks
from ._data import Fold, Part, resolve_folds
from ._report import CandidateResult, Comparison, SelectionReport, signed
from ._stats import paired_difference, verdict

#: Ranking metrics' conventions (LightGBM's, as ``selrank train``): exponential gain, ties in
#: input order, a query without relevant documents scores 1 (NDCG, AP) or 0 (ERR).
CONVENTIONS = {"gain": "exponential", "ties": "stable"}
TASKS = ("ranking", "regression")


def _ranking_metrics(ks: Sequence[int], max_grade: float) -> dict[str, Callable[..., np.ndarray]]:
    from ..metrics import average_precision, err, ndcg

    out: dict[str, Callable[..., np.ndarray]] = {}
    for k in ks:
        out[f"ndcg@{k}"] = lambda y, s, g, k=k: np.asarray(
            ndcg(y, s, g, k=k, no_relevant="one", reduction="none", **CONVENTIONS)
        )
    out["map"] = lambda y, s, g: np.asarray(
        average_precision(y, s, g, ties="stable", no_relevant="one", reduction="none")
    )
    out["err"] = lambda y, s, g: np.asarray(
        err(y, s, g, ties="stable", max_grade=max_grade, reduction="none")
    )
    return out


def _regression_metrics(band: tuple[float, float] | None) -> dict[str, Callable[..., np.ndarray]]:
    out: dict[str, Callable[..., np.ndarray]] = {
        "mse": lambda y, s, g: (s - y) ** 2,
        "mae": lambda y, s, g: np.abs(s - y),
    }
    if band is not None:
        lo, hi = band

        def inside(values: np.ndarray, y: np.ndarray) -> np.ndarray:
            return np.where((y >= lo) & (y <= hi), values, np.nan)

        out["band_mse"] = lambda y, s, g: inside((s - y) ** 2, y)
        out["band_mae"] = lambda y, s, g: inside(np.abs(s - y), y)
    return out


def _higher_is_better(metric: str) -> bool:
    return metric.split("_")[-1] not in ("mse", "mae")


def _metric_label(metric: str) -> str:
    names = {"map": "MAP", "err": "ERR", "mse": "MSE", "mae": "MAE"}
    if metric.startswith("ndcg@"):
        return "NDCG@" + metric[5:]
    if metric.startswith("band_"):
        return names[metric[5:]] + " in band"
    return names.get(metric, metric)


def _resolve_candidates(
    candidates: Sequence[str | Candidate] | Mapping[str, Any] | None, task: str
) -> tuple[list[Candidate], bool]:
    """The candidates to run, and whether the user named them (so that a candidate the labels
    rule out is an error rather than a note)."""
    registry = CANDIDATES if task == "ranking" else REGRESSION_CANDIDATES
    if candidates is None:
        default = DEFAULT_CANDIDATES if task == "ranking" else DEFAULT_REGRESSION_CANDIDATES
        return [registry[n] for n in default], False
    out: list[Candidate] = []
    if isinstance(candidates, Mapping):
        for name, fit in candidates.items():
            if isinstance(fit, Candidate):
                out.append(fit)
            elif callable(fit):
                out.append(Candidate(str(name), fit, description=str(name)))
            else:
                raise TypeError(
                    f"candidate {name!r} must be a fit(train, valid, settings) callable or a "
                    f"Candidate; got {type(fit).__name__}"
                )
        return out, True
    if isinstance(candidates, str):
        candidates = [c.strip() for c in candidates.split(",") if c.strip()]
    for c in candidates:
        if isinstance(c, Candidate):
            out.append(c)
        elif isinstance(c, str) and c in registry:
            out.append(registry[c])
        else:
            raise ValueError(f"unknown candidate {c!r} for {task}; choose from {sorted(registry)}")
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names must be distinct; got {names}")
    if not out:
        raise ValueError("no candidates to run")
    return out, True


def _check_labels(
    cands: list[Candidate], labels: np.ndarray, named: bool
) -> tuple[list[Candidate], list[str]]:
    """Candidates that can take ``labels`` (adapted where they can be), with notes on the rest."""
    kept: list[Candidate] = []
    notes: list[str] = []
    for c in cands:
        if c.check is None:
            kept.append(c)
            continue
        try:
            c.check(labels)
            kept.append(c)
            continue
        except ValueError as exc:
            reason = str(exc)
        if c.adapt is not None:
            adapted, note = c.adapt(labels)
            try:
                if adapted.check is not None:
                    adapted.check(labels)
                kept.append(adapted)
                if note:
                    notes.append(note)
                continue
            except ValueError as exc:
                reason = str(exc)
        if named:
            raise ValueError(f"candidate {c.name!r} cannot take these labels: {reason}")
        notes.append(f"{c.name} left out: {reason}")
    return kept, notes


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the ``n_jobs`` workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass(frozen=True)
class _Task:
    candidate: int
    regime: str
    fold: int
    seed: int

    def file_name(self, name: str) -> str:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)
        return f"{safe}__{self.regime}__fold{self.fold}__seed{self.seed}.pkl"


@dataclass
class _TaskOut:
    valid_scores: np.ndarray
    test_scores: np.ndarray
    rounds: int
    curve: list[float]
    model_bytes: int
    cpu_seconds: float
    latency_ms: float
    model: Any = field(default=None, repr=False)


@dataclass
class _State:
    cands: list[Candidate]
    folds: list[Fold]
    settings: dict[int, TrainSettings]
    clicks_sessions: int
    seed: int
    keep_models: bool


_STATE: _State | None = None  # what the worker processes read (inherited on fork)


def _run_task(task: _Task, state: _State | None = None) -> _TaskOut:
    """Fit one candidate on one fold (clean or click labels) with one seed, and score it."""
    state = state if state is not None else _STATE
    if state is None:  # pragma: no cover - set before the pool starts
        raise RuntimeError("a selection task ran outside select()")
    cand = state.cands[task.candidate]
    fold = state.folds[task.fold]
    train, valid_fit = fold.train, fold.valid
    if task.regime == "clicks":
        rng = np.random.default_rng(state.seed + 1000 + task.fold)
        sessions = state.clicks_sessions
        train = Part(
            train.X, simulate_clicks(train.y, train.group, sessions=sessions, seed=rng), train.group
        )
        valid_fit = Part(
            valid_fit.X,
            simulate_clicks(valid_fit.y, valid_fit.group, sessions=sessions, seed=rng),
            valid_fit.group,
        )
    c0 = time.process_time()
    fitted = as_fit_result(cand.fit(train, valid_fit, state.settings[task.seed]), cand.name)
    cpu = time.process_time() - c0
    valid_scores = np.asarray(fitted.predict(fold.valid.X), dtype=np.float64)
    clean = task.regime == "clean"
    test_scores = (
        np.asarray(fitted.predict(fold.test.X), dtype=np.float64) if clean else np.zeros(0)
    )
    latency = (
        timed_predict_ms(fitted.predict_one or fitted.predict, fold.test)
        if clean and task.seed == 0 and task.fold == 0
        else float("nan")
    )
    keep = clean and task.seed == 0 and state.keep_models
    return _TaskOut(
        valid_scores,
        test_scores,
        int(fitted.rounds),
        list(fitted.curve),
        int(fitted.model_bytes),
        cpu,
        latency,
        fitted.model if keep else None,
    )


def _run_tasks(
    tasks: list[_Task],
    state: _State,
    n_jobs: int,
    output_dir: str | os.PathLike | None,
    signature: dict[str, Any],
    prog: _Progress,
    data_name: str,
) -> dict[_Task, _TaskOut]:
    """Every task's output: read from ``output_dir`` where a finished fit is there, else run
    (in ``n_jobs`` processes) and written there."""
    global _STATE
    folder = None if output_dir is None else Path(output_dir).expanduser()
    done: dict[_Task, _TaskOut] = {}
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        sig_path = folder / "selection_run.json"
        text = json.dumps(signature, indent=2, sort_keys=True)
        if sig_path.exists() and sig_path.read_text(encoding="utf-8").strip() != text.strip():
            raise ValueError(
                f"output_dir {folder} holds a run with other data or settings "
                f"({sig_path}); give a new folder to start afresh"
            )
        sig_path.write_text(text + "\n", encoding="utf-8")
        for t in tasks:
            f = folder / t.file_name(state.cands[t.candidate].name)
            if f.exists():
                with open(f, "rb") as fh:
                    done[t] = pickle.load(fh)
    todo = [t for t in tasks if t not in done]

    def finish(t: _Task, out: _TaskOut) -> None:
        done[t] = out
        cand = state.cands[t.candidate]
        fold = state.folds[t.fold]
        prog(
            f"{data_name} {fold.name} {cand.name}"
            + (f" seed {state.settings[t.seed].seed}" if len(state.settings) > 1 else "")
            + (" (click labels)" if t.regime == "clicks" else "")
            + f": {out.cpu_seconds:.1f} CPU s"
        )
        if folder is not None:
            tmp = folder / (t.file_name(cand.name) + ".tmp")
            with open(tmp, "wb") as fh:
                pickle.dump(out, fh)
            tmp.replace(folder / t.file_name(cand.name))

    for t in tasks:
        if t in done:
            prog(f"{data_name} {state.folds[t.fold].name} {state.cands[t.candidate].name}: resumed")
    workers = (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)
    if workers <= 1 or len(todo) <= 1:
        for t in todo:
            finish(t, _run_task(t, state))
        return done
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods():
        raise ValueError("n_jobs > 1 needs the 'fork' start method (Linux, macOS)")
    _STATE = state
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_run_task, t): t for t in todo}
            from concurrent.futures import as_completed

            for fut in as_completed(futures):
                finish(futures[fut], fut.result())
    finally:
        _STATE = None
    return done


class _Progress:
    def __init__(self, progress: bool | Callable[[str], None], total: int) -> None:
        self.total = total
        self.done = 0
        if progress is True:
            self.fn: Callable[[str], None] | None = lambda m: print(m, file=sys.stderr, flush=True)
        elif callable(progress):
            self.fn = progress
        else:
            self.fn = None

    def __call__(self, message: str) -> None:
        self.done += 1
        if self.fn is not None:
            self.fn(f"[{self.done}/{self.total}] {message}")


def select(
    data: Any,
    y: Any = None,
    qid: Any = None,
    *,
    validation: Any = None,
    test: Any = None,
    folds: Sequence[int] | None = None,
    cv: int = 5,
    test_size: float = 0.2,
    task: str = "ranking",
    candidates: Sequence[str | Candidate] | Mapping[str, Any] | str | None = None,
    metric: str | None = None,
    ks: Sequence[int] = (1, 3, 5, 10),
    prefer_builtin: bool = True,
    band: Sequence[float] | None = None,
    prefer_band: bool = False,
    n_seeds: int = 1,
    seed: int = 0,
    n_rounds: int = 1000,
    learning_rate: float = 0.05,
    early_stopping_rounds: int = 50,
    num_leaves: int = 31,
    tree_params: Mapping[str, Any] | None = None,
    num_threads: int | None = 1,
    click_noise: bool | int = False,
    n_resamples: int = 2000,
    keep_models: bool = True,
    n_jobs: int = 1,
    output_dir: str | os.PathLike | None = None,
    progress: bool | Callable[[str], None] = False,
) -> SelectionReport:
    """Train every candidate objective on the same folds, choose one on validation only and
    compare it on test with the best built-in: the selection report.

    Parameters
    ----------
    data
        A packaged collection (``"mq2008"``, ``"ohsumed"``: the five official folds), a LETOR /
        MSLR folder (its folds, or its ``train/vali/test`` files), one or more
        :class:`~selrank.datasets.RankingDataset`, or the training features ``X`` (NumPy,
        pandas or polars) with ``y`` and ``qid``.
    y, qid
        Labels and per-row query ids of array data (``qid`` not needed for regression).
    validation, test : tuple, optional
        ``(X, y, qid)`` (regression: ``(X, y)``) of array data. Without ``validation``, grouped
        ``cv``-fold cross-validation on the training queries validates (the test scores are
        the mean of the fold models); without ``test``, ``test_size`` of the training queries
        are held out (seeded).
    folds : sequence of int, optional
        The folds of a packaged collection or folder to run (default: all).
    task : {"ranking", "regression"}
    candidates : sequence of str or Candidate, mapping, or comma-separated str, optional
        Names from :data:`CANDIDATES` (ranking) or :data:`REGRESSION_CANDIDATES`, candidate
        objects, or ``{name: fit}`` with ``fit(train, valid, settings)`` returning a
        :class:`FitResult` or a ``predict(X)`` callable. Default: every registered default.
    metric : str, optional
        What the choice maximises on validation: ``"ndcg@K"``, ``"map"``, ``"err"`` (ranking;
        default ``"ndcg@10"``) or ``"mse"``, ``"mae"``, ``"band_mse"``, ``"band_mae"``
        (regression; default ``"mse"``, ``"band_mse"`` with ``prefer_band``).
    ks : sequence of int
        NDCG cut-offs the report shows (the metric's cut-off is added).
    prefer_builtin : bool
        The choice rule: when the best candidate on validation is not a built-in, it is chosen
        only if it beats the best built-in on validation (the 95% CI of the paired difference
        excludes 0); otherwise the built-in is preferred. ``False``: the best on validation.
    band : (low, high), optional
        Regression: the band whose rows the ``band_*`` metrics score and the capped SmeLU
        candidate is sensitive on (default :func:`selrank.dwell.suggest_band` of the training
        labels of the first fold when ``prefer_band`` or the ``smelu`` candidate asks for one).
    prefer_band : bool
        Regression: choose on the error inside the band.
    n_seeds : int
        Training seeds per candidate and fold (``feature_fraction=0.8`` is set when > 1 so that
        the seed changes the trees); the CIs include the seed variance.
    seed : int
        First training seed (and the seed of the folds, the hold-out and the bootstrap).
    n_rounds, learning_rate, early_stopping_rounds, num_leaves, tree_params
        The trees every candidate grows (:class:`TrainSettings`).
    num_threads : int or None
        Threads per fit (default 1: the fits are small, and on a shared machine more threads
        spin idle; ``None``: the library's default).
    click_noise : bool or int
        Ranking: also train every candidate on click counts simulated from the labels
        (:func:`simulate_clicks`; an int gives the sessions per query, ``True`` 50) and report
        how its validation score (on the true labels) moves.
    n_resamples : int
        Bootstrap resamples of each CI.
    keep_models : bool
        Keep the fitted models (seed ``seed``) in the report for :meth:`SelectionReport.save_best`.
    n_jobs : int
        Fits run side by side in this many processes (``-1``: one per CPU).
    output_dir : str or path-like, optional
        A folder that keeps every finished fit (its scores, rounds, timing and model); a run
        interrupted and started again with the same folder and settings resumes where it
        stopped. A folder written with other data or settings is refused.
    progress : bool or callable
        ``True`` prints one line per fit on stderr; a callable receives the lines.

    Returns
    -------
    SelectionReport

    Examples
    --------
    >>> from selrank.selection import select
    >>> report = select("mq2008", folds=[1], candidates=["listwise", "lambdarank"],
    ...                 n_rounds=20, num_threads=1)          # doctest: +SKIP
    >>> print(report.recommendation)                         # doctest: +SKIP
    """
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}; got {task!r}")
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"`n_seeds` must be an int >= 1; got {n_seeds!r}")
    ks = sorted({int(k) for k in ks})
    if metric is None:
        metric = "ndcg@10" if task == "ranking" else ("band_mse" if prefer_band else "mse")
    metric = metric.lower()
    if task == "ranking":
        if not (metric in ("map", "err") or metric.startswith("ndcg@")):
            raise ValueError(f"ranking `metric` must be 'ndcg@K', 'map' or 'err'; got {metric!r}")
        if metric.startswith("ndcg@"):
            try:
                k_metric = int(metric[5:])
            except ValueError:
                raise ValueError(f"`metric` {metric!r}: K of ndcg@K must be an int") from None
            ks = sorted({*ks, k_metric})
        else:
            k_metric = 10
    else:
        if metric not in ("mse", "mae", "band_mse", "band_mae"):
            raise ValueError(
                f"regression `metric` must be 'mse', 'mae', 'band_mse' or 'band_mae'; got {metric!r}"
            )
        if prefer_band and not metric.startswith("band_"):
            metric = "band_" + metric
        k_metric = 10
    cands, named = _resolve_candidates(candidates, task)
    source = resolve_folds(
        data, y, qid, validation=validation, test=test, folds=folds, cv=cv,
        test_size=test_size, seed=seed, task=task,
    )  # fmt: skip
    # read every fold before the first fit: a damaged file or bad labels fail before training
    loaded: list[Fold] = [source.load(i) for i in range(source.n_folds)]
    labels = np.concatenate([np.concatenate([f.train.y, f.valid.y]) for f in loaded])
    cands, notes = _check_labels(cands, labels, named)
    notes = [*source.notes, *notes]
    if not cands:
        raise ValueError("no candidate can take these labels: " + "; ".join(notes))
    band_t: tuple[float, float] | None = None
    if task == "regression":
        needs_band = metric.startswith("band_") or any(c.name == "smelu" for c in cands)
        if band is not None:
            band_t = (float(band[0]), float(band[1]))
        elif needs_band:
            from ..dwell import suggest_band

            b = suggest_band(loaded[0].train.y)
            band_t = (float(b[0]), float(b[1]))
            notes.append(
                f"band {band_t[0]:.3g}..{band_t[1]:.3g} from suggest_band of the training labels ({b.method})"
            )
    if task == "ranking":
        if np.any(labels < 0):
            raise ValueError("ranking labels must be >= 0 (NDCG, MAP and ERR grade them)")
        max_grade = float(max(labels.max(), max(f.test.y.max() for f in loaded)))
        metric_fns = _ranking_metrics(ks, max_grade)
    else:
        metric_fns = _regression_metrics(band_t)
    clicks_sessions = 50 if click_noise is True else int(click_noise or 0)
    if clicks_sessions and task != "ranking":
        raise ValueError("`click_noise` simulates clicks on ranked lists: ranking only")

    base_tree = dict(tree_params or {})
    if n_seeds > 1:
        base_tree.setdefault("feature_fraction", 0.8)
    regimes = ["clean", *(["clicks"] if clicks_sessions else [])]
    prog = _Progress(progress, len(cands) * len(loaded) * n_seeds * len(regimes))

    results: dict[str, CandidateResult] = {}
    click_valid: dict[str, np.ndarray] = {}
    started = time.perf_counter()
    cpu_started = _cpu_seconds()
    test_ids = sorted({f.test_id for f in loaded})
    shared: dict[Any, Any] = {}  # the LightGBM built-ins' binned datasets, per split
    settings_of = {
        si: TrainSettings(
            n_rounds=n_rounds,
            learning_rate=learning_rate,
            early_stopping_rounds=early_stopping_rounds,
            k=k_metric,
            num_leaves=num_leaves,
            tree_params=base_tree,
            num_threads=num_threads,
            seed=seed + si,
            band=band_t,
            shared=shared,
        )
        for si in range(n_seeds)
    }
    tasks = [
        _Task(ci, regime, fi, si)
        for ci in range(len(cands))
        for regime in regimes
        for fi in range(len(loaded))
        for si in range(n_seeds)
    ]
    state = _State(cands, loaded, settings_of, clicks_sessions, seed, keep_models)
    signature = {
        "data": source.name,
        "protocol": source.protocol,
        "settings": {k: repr(v) for k, v in vars(settings_of[0]).items() if k != "shared"},
        "n_seeds": n_seeds,
        "clicks": clicks_sessions,
    }
    outputs = _run_tasks(tasks, state, n_jobs, output_dir, signature, prog, source.name)
    for ci, cand in enumerate(cands):
        valid_vals: dict[str, list[list[np.ndarray]]] = {
            m: [[] for _ in range(n_seeds)] for m in metric_fns
        }
        test_scores: dict[int, list[list[np.ndarray]]] = {
            t: [[] for _ in range(n_seeds)] for t in test_ids
        }
        rounds: list[int] = []
        curves: list[list[float]] = []
        models: list[Any] = []
        cpu = 0.0
        sizes: list[int] = []
        latency = float("nan")
        click_vals: list[list[np.ndarray]] = [[] for _ in range(n_seeds)]
        for tk in tasks:
            if tk.candidate != ci:
                continue
            out = outputs[tk]
            fold = loaded[tk.fold]
            si = tk.seed
            if tk.regime == "clicks":
                click_vals[si].append(
                    metric_fns[metric](fold.valid.y, out.valid_scores, fold.valid.group)
                )
                continue
            cpu += out.cpu_seconds
            rounds.append(out.rounds)
            sizes.append(out.model_bytes)
            for m, fn in metric_fns.items():
                valid_vals[m][si].append(fn(fold.valid.y, out.valid_scores, fold.valid.group))
            test_scores[fold.test_id][si].append(out.test_scores)
            if si == 0:
                curves.append(out.curve)
                if keep_models:
                    models.append(out.model)
                if tk.fold == 0:
                    latency = out.latency_ms
        test_vals: dict[str, list[list[np.ndarray]]] = {
            m: [[] for _ in range(n_seeds)] for m in metric_fns
        }
        for t in test_ids:
            part = next(f.test for f in loaded if f.test_id == t)
            for si in range(n_seeds):
                s = np.mean(test_scores[t][si], axis=0)  # grouped K-fold: the fold models' mean
                for m, fn in metric_fns.items():
                    test_vals[m][si].append(fn(part.y, s, part.group))
        results[cand.name] = CandidateResult(
            name=cand.name,
            description=cand.description,
            builtin=cand.builtin,
            family=cand.family,
            valid={
                m: np.array([np.concatenate(v) for v in vals]) for m, vals in valid_vals.items()
            },
            test={m: np.array([np.concatenate(v) for v in vals]) for m, vals in test_vals.items()},
            rounds=rounds,
            cpu_seconds=cpu,
            model_bytes=float(np.mean(sizes)) if sizes else 0.0,
            latency_ms=latency,
            curves=curves,
            models=models,
        )
        if clicks_sessions:
            click_valid[cand.name] = np.array([np.concatenate(v) for v in click_vals])

    higher = _higher_is_better(metric)
    chosen, best_builtin, rule, reason, valid_cmp = _choose(
        results, metric, higher, prefer_builtin, n_resamples, seed
    )
    if best_builtin is None:
        notes.append("no built-in among the candidates: nothing to compare the choice with on test")
    elif all(r.builtin for r in results.values()):
        notes.append("only built-ins among the candidates: no selrank objective to compare on test")
    comparisons = _test_comparisons(
        results, metric, higher, chosen, best_builtin, n_resamples, seed
    )
    n_valid = results[cands[0].name].valid[metric].shape[1]
    n_test = results[cands[0].name].test[metric].shape[1]
    unit = "queries" if task == "ranking" else "rows"
    return SelectionReport(
        dataset=source.name,
        task=task,
        protocol=source.protocol,
        n_folds=len(loaded),
        n_valid=n_valid,
        n_test=n_test,
        unit=unit,
        metric=metric,
        metric_label=_metric_label(metric),
        metrics=list(metric_fns),
        metric_labels={m: _metric_label(m) for m in metric_fns},
        higher_is_better=higher,
        rule=rule,
        chosen=chosen,
        best_builtin=best_builtin,
        choice_reason=reason,
        validation_comparison=valid_cmp,
        comparisons=comparisons,
        results=results,
        notes=notes,
        settings={
            "n_rounds": n_rounds,
            "learning_rate": learning_rate,
            "early_stopping_rounds": early_stopping_rounds,
            "early_stopping_metric": f"NDCG@{k_metric} on the validation part"
            if task == "ranking"
            else "RMSE on the validation part",
            "num_leaves": num_leaves,
            "tree_params": base_tree,
            "num_threads": num_threads,
            "n_seeds": n_seeds,
            "seed": seed,
            "n_resamples": n_resamples,
            "band": band_t,
            "click_noise_sessions": clicks_sessions or None,
        },
        click_valid=click_valid or None,
        wall_seconds=time.perf_counter() - started,
        cpu_seconds=_cpu_seconds() - cpu_started,
    )


def _mean(values: np.ndarray) -> float:
    return float(np.nanmean(values)) if np.any(~np.isnan(values)) else float("nan")


def choice_rule(label: str, higher: bool, prefer_builtin: bool) -> str:
    """The choice rule as the report writes it (``label``: e.g. ``"NDCG@10"``)."""
    word = "highest" if higher else "lowest"
    if not prefer_builtin:
        return f"the {word} validation {label}"
    return (
        f"the {word} validation {label}; a candidate that is not a built-in is chosen over the "
        f"best built-in only if it beats it on validation (95% CI of the paired difference "
        f"excludes 0), otherwise the built-in is preferred"
    )


def _choose(
    results: dict[str, CandidateResult],
    metric: str,
    higher: bool,
    prefer_builtin: bool,
    n_resamples: int,
    seed: int,
) -> tuple[str, str | None, str, str, Comparison | None]:
    """The choice on validation only: ``(chosen, best built-in, rule, reason, comparison)``."""
    label = _metric_label(metric)
    sign = 1.0 if higher else -1.0
    score = {n: sign * _mean(r.valid[metric]) for n, r in results.items()}
    best = max(score, key=lambda n: score[n])
    builtins = [n for n, r in results.items() if r.builtin]
    best_builtin = max(builtins, key=lambda n: score[n]) if builtins else None
    word = "highest" if higher else "lowest"
    rule = choice_rule(label, higher, prefer_builtin and best_builtin is not None)
    if not prefer_builtin or best_builtin is None:
        return best, best_builtin, rule, f"it has the {word} validation {label}", None
    if best == best_builtin:
        return best, best_builtin, rule, f"it has the {word} validation {label}", None
    d = paired_difference(
        results[best].valid[metric], results[best_builtin].valid[metric],
        n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    cmp = Comparison(
        best, best_builtin, d["delta"], d["low"], d["high"], d["p"], d["p"], int(d["n"]), ""
    )
    beats = d["low"] > 0 if higher else d["high"] < 0
    if beats:
        cmp.verdict = "better"
        return (
            best,
            best_builtin,
            rule,
            (
                f"it has the {word} validation {label} and beats the best built-in, {best_builtin}, "
                f"on validation (Δ = {signed(d['delta'])} [{signed(d['low'])}, {signed(d['high'])}])"
            ),
            cmp,
        )
    cmp.verdict = "parity"
    return (
        best_builtin,
        best_builtin,
        rule,
        (
            f"{best} has the {word} validation {label} but is within the validation CI of this "
            f"built-in (Δ = {signed(d['delta'])} [{signed(d['low'])}, {signed(d['high'])}]), so the built-in is preferred"
        ),
        cmp,
    )


def _test_comparisons(
    results: dict[str, CandidateResult],
    metric: str,
    higher: bool,
    chosen: str,
    best_builtin: str | None,
    n_resamples: int,
    seed: int,
) -> list[Comparison]:
    """On test: the best candidate of each non-built-in family (by validation) against the best
    built-in (by validation), Holm over these comparisons; the chosen candidate's first."""
    from ..metrics import holm

    if best_builtin is None:
        return []
    sign = 1.0 if higher else -1.0
    best_of: dict[str, str] = {}
    for n, r in results.items():
        if r.builtin:
            continue
        f = r.family
        if f not in best_of or sign * _mean(r.valid[metric]) > sign * _mean(
            results[best_of[f]].valid[metric]
        ):
            best_of[f] = n
    names = sorted(best_of.values(), key=lambda n: -sign * _mean(results[n].valid[metric]))
    if chosen in names:
        names.remove(chosen)
        names.insert(0, chosen)
    if not names:
        return []
    raw = [
        paired_difference(
            results[n].test[metric],
            results[best_builtin].test[metric],
            n_resamples=n_resamples,
            seed=seed,
        )
        for n in names
    ]
    p_adj = holm(np.array([d["p"] for d in raw])) if raw else np.array([])
    out = []
    for n, d, pa in zip(names, raw, p_adj, strict=True):
        out.append(
            Comparison(
                n,
                best_builtin,
                d["delta"],
                d["low"],
                d["high"],
                d["p"],
                float(pa),
                int(d["n"]),
                verdict(d["low"], d["high"], float(pa), higher),
            )  # fmt: skip
        )
    return out
