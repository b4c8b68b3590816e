"""TREC runs as the systems of :func:`~selrank.metrics.compare` and
:func:`~selrank.metrics.paired_comparison`: recognise them, name them, and compute their
per-query values on one set of queries with :func:`~selrank.metrics.evaluate_run`'s
conventions."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .trec import (
    Qrels,
    Run,
    _as_qrels,
    _as_run,
    _evaluate,
    _parse_trec_metrics,
    _ranx,
    _run_options,
)

_PATH = (str, os.PathLike)


def _single_run(x: Any) -> bool:
    """A :class:`Run` (or ranx's), or one ``{qid: {docno: score}}`` mapping (not a mapping of
    runs)."""
    if isinstance(x, Run) or _ranx(x, "Run"):
        return True
    if not isinstance(x, Mapping):
        return False
    for docs in x.values():
        if not isinstance(docs, Mapping):
            return False
        for score in docs.values():
            return not isinstance(score, Mapping)
    return True


def is_trec_input(systems: Any, y_true: Any, runs: Any, data: Any, group: Any, qid: Any) -> bool:
    """Whether a comparison call is about TREC runs (else: flat arrays of scores)."""
    if runs is not None:
        return True
    if isinstance(systems, Qrels | str | os.PathLike) or _ranx(systems, "Qrels"):
        return True  # ranx's order, compare(qrels, runs)
    if isinstance(y_true, Qrels | Mapping) or _ranx(y_true, "Qrels"):
        return True  # labels are arrays or columns, never mappings
    if isinstance(y_true, os.PathLike):
        return True
    if isinstance(y_true, str) and data is None and group is None and qid is None:
        return True  # a column name needs `data`: without it, a qrels file
    return isinstance(systems, Sequence) and not isinstance(systems, str) and systems != []


def _name_of(run: Any, given: Any, i: int) -> str:
    if isinstance(given, Run):
        return given.tag
    if _ranx(given, "Run") and run.tag != "ranx":
        return run.tag
    if isinstance(given, _PATH):
        return run.tag
    return f"run_{i + 1}"


def resolve(systems: Any, y_true: Any, runs: Any) -> tuple[Qrels, dict[str, Run]]:
    """``(qrels, {name: run})`` from ``(runs, qrels)``, ``(qrels, runs=...)`` or, when the
    qrels are a :class:`Qrels` or a path, ``(qrels, runs)``.

    Runs are :class:`Run` objects, nested mappings ``{qid: {docno: score}}`` or paths of run
    files, as a mapping ``name -> run`` or a sequence (named by their tag; by the file name
    when two tags clash; ``run_1``, ``run_2``, ... for plain mappings).
    """
    if runs is not None:
        if y_true is not None:
            raise TypeError(
                "with `runs=`, give the qrels as the first argument and nothing as the second: "
                "compare(qrels, runs=[...])"
            )
        qrels_in, runs_in = systems, runs
    elif isinstance(systems, Qrels | str | os.PathLike) or _ranx(systems, "Qrels"):
        qrels_in, runs_in = systems, y_true  # compare(qrels, runs), ranx's order
    else:
        qrels_in, runs_in = y_true, systems
    if qrels_in is None:
        raise TypeError("give the qrels: compare(qrels, runs=[...]) or compare(runs, qrels)")
    qrels = _as_qrels(qrels_in)
    if _single_run(runs_in):
        raise ValueError("compare at least two runs; got one run")
    if isinstance(runs_in, Mapping):
        items = list(runs_in.items())
        named = {str(k): _as_run(v) for k, v in items}
    elif isinstance(runs_in, Sequence) and not isinstance(runs_in, str):
        loaded = [_as_run(r) for r in runs_in]
        names = [_name_of(r, g, i) for i, (r, g) in enumerate(zip(loaded, runs_in))]
        clash = [names.count(n) > 1 for n in names]
        for i, given in enumerate(runs_in):
            if clash[i] and isinstance(given, _PATH):
                names[i] = Path(given).name  # two files with one tag: their file names
        clash = [names.count(n) > 1 for n in names]
        seen: dict[str, int] = {}
        for i, name in enumerate(list(names)):
            if clash[i]:
                seen[name] = seen.get(name, 0) + 1
                names[i] = f"{name}#{seen[name]}"
        named = dict(zip(names, loaded))
    else:
        raise TypeError(
            "`runs` must be a mapping name -> run or a list of runs (Run objects, dicts "
            f"{{qid: {{docno: score}}}} or run file paths); got {type(runs_in).__name__}"
        )
    if len(named) < 2:
        raise ValueError(f"compare at least two runs; got {len(named)}")
    if len(named) != len(runs_in):
        raise ValueError(f"the runs' names are not unique: {list(runs_in)}")
    return qrels, named


def per_query_values(
    qrels: Qrels,
    runs: dict[str, Run],
    metrics: Any,
    *,
    relevance_level: int,
    ties: str | None,
    gain: str | None,
    no_relevant: str | None,
    max_grade: Any,
    queries: str,
) -> tuple[list[str], dict[str, dict[str, np.ndarray]], list[str]]:
    """Metric names, ``{system: {metric: per-query values}}`` (NaN = left out), query ids.

    Every run is evaluated on the queries of the qrels (a query a run misses scores 0, as
    trec_eval ``-c``); ``queries="both"`` keeps only the queries every run retrieves for.
    """
    parsed = _parse_trec_metrics(metrics)
    options = _run_options(
        relevance_level, "trec_eval" if ties is None else ties,
        "linear" if gain is None else gain, queries,
        "zero" if no_relevant is None else no_relevant, max_grade,
    )  # fmt: skip
    options["queries"] = "qrels"  # the same queries for every run; "both" is applied below
    per_system, qids, retrieved = {}, None, None
    for name, run in runs.items():
        ev = _evaluate(qrels, run, parsed, **options)
        per_system[name] = ev.values
        qids = ev.qids
        got = ev.n_docs > 0
        retrieved = got if retrieved is None else retrieved & got
    assert qids is not None and retrieved is not None
    if queries == "both":
        if not retrieved.any():
            raise ValueError("no query is retrieved by every run (queries='both')")
        for values in per_system.values():
            for v in values.values():
                v[~retrieved] = np.nan
    return [s.name for s in parsed], per_system, qids
