"""Compare systems query by query: :func:`compare` and :func:`paired_comparison`, of arrays of
scores or of TREC runs, and :func:`format_comparison`.

TREC runs as systems: recognise them, name them, and compute their per-query values on one set
of queries with :func:`~selrank.metrics.evaluate_run`'s conventions. The paired tests, the
bootstrap and Holm's correction are in :mod:`selrank.metrics.significance`; the report's
tables in :mod:`selrank.metrics.report`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import Array
from .._groups import Groups, as_groups
from .evaluation import _parse_metrics, _per_query_tables, _settings, _validate_all
from .ranking import _as_vector, _check_choice, _column, _prepare, _require_polars
from .report import ComparisonReport
from .significance import (
    _CORRECTIONS,
    _adjust,
    holm,
    paired_bootstrap_ci,
    paired_permutation_test,
    paired_t_test,
    wilcoxon_signed_rank_test,
)
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

if TYPE_CHECKING:
    import polars as pl

__all__ = ["paired_report", "compare", "paired_comparison", "format_comparison", "VERDICTS"]

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


def compare(
    systems: Any,
    y_true: Array | str | None = None,
    group: Array | str | None = None,
    *,
    runs: Any = None,
    qid: Array | str | None = None,
    metrics: str | Sequence[str] = ("ndcg@10",),
    baseline: str | None = None,
    test: str = "permutation",
    n_resamples: int = 10_000,
    seed: int | np.random.Generator | None = 0,
    correction: str | None = None,
    gain: str | None = None,
    ties: str | None = None,
    no_relevant: str | None = None,
    capped: bool | None = None,
    relevance_threshold: float = 0.0,
    max_grade: float | None = None,
    conventions: str | None = None,
    confidence: float = 0.95,
    relevance_level: int = 1,
    queries: str = "qrels",
    data: Any = None,
) -> ComparisonReport:
    """Compare the rankings of several systems on the same queries with a paired test.

    Two inputs:

    * **TREC runs** (the ranx workflow): ``compare(qrels, runs=[...], metrics=[...])`` or
      ``compare(runs, qrels)`` (or ``compare(qrels, runs)`` when the qrels are a
      :class:`~selrank.metrics.Qrels` or a path). ``qrels`` is a :class:`~selrank.metrics.Qrels`, a mapping
      ``{qid: {docno: rel}}`` or a qrels file path; ``runs`` a list of runs
      (:class:`~selrank.metrics.Run`, ``{qid: {docno: score}}`` or run file paths, named by
      their tag, or ``run_1``, ...) or a mapping ``name -> run``. Each run is evaluated as
      :func:`~selrank.metrics.evaluate_run` does (trec_eval's conventions, every query of
      the qrels), and every run is compared with the ``baseline`` as in
      :func:`paired_comparison`: mean per-query difference, bootstrap CI, the paired
      ``test``, Holm's correction over the runs compared on each metric and a verdict.
      Returns a :class:`~selrank.metrics.report.ComparisonReport` (``print`` it, or
      ``.to_markdown()``, ``.to_latex()``; ``.table`` is the frame).
    * **Arrays of scores** (below): each system's per-query metric values are paired with
      the baseline's on the queries every system keeps (the exclusion policy depends only
      on labels, so the set is the same for all systems); returns a frame of p-values.

    Parameters
    ----------
    systems : mapping of name -> scores, or qrels / runs
        Scores per system (arrays, tensors, Series or column names of ``data``); or the
        qrels with ``runs=``, or the runs with the qrels as ``y_true``.
    y_true, group, qid
        As in :func:`evaluate` (``group``: query sizes; ``qid``: per-row query ids). For
        runs: the qrels (or nothing, with ``runs=``).
    runs : sequence or mapping of runs, optional
        The TREC runs to compare, the qrels being the first argument.
    metrics : str or sequence of str
    baseline : str or None
        System the others are tested against; the first one by default.
    test : {"permutation", "t"} (runs: also "wilcoxon")
        Paired sign-flip randomisation test (:func:`paired_permutation_test`) or paired
        t-test (:func:`paired_t_test`). Both are two-sided and need only NumPy.
    n_resamples : int
        Random sign flips for the permutation test.
    seed : int or numpy.random.Generator
        Seed of the permutation test.
    correction : {None, "holm", "bonferroni"}
        Adjust the p-values over all (metric, system) tests of the call. With runs the
        report always applies Holm's correction per metric (None or "holm").
    gain, ties, no_relevant, capped, relevance_threshold, max_grade, conventions, data
        As in :func:`evaluate`. With runs, ``gain``, ``ties``, ``no_relevant`` and
        ``max_grade`` are :func:`~selrank.metrics.evaluate_run`'s (default: trec_eval's).
    confidence, relevance_level, queries
        For runs: the level of the CIs and verdicts (as in :func:`paired_comparison`), and
        :func:`~selrank.metrics.evaluate_run`'s ``relevance_level`` and ``queries``
        (``"both"``: only the queries every run retrieves for).

    Returns
    -------
    ComparisonReport (runs) or polars.DataFrame (arrays)
        Arrays: one row per (metric, system): ``metric``, ``system``, ``mean``, ``diff`` (system
        minus baseline), ``p_value`` (null for the baseline), ``n_queries``,
        ``n_better`` and ``n_worse`` (queries where the system beats or trails the
        baseline), ``test``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 200)
    >>> good = y + rng.normal(0, 0.5, 200)
    >>> bad = rng.normal(0, 1.0, 200)
    >>> df = compare({"random": bad, "model": good}, y, [10] * 20, metrics="ndcg@5")
    >>> df.select("system", "p_value").row(1)[1] < 0.01
    True
    """
    if is_trec_input(systems, y_true, runs, data, group, qid):
        if correction not in (None, "holm"):
            raise ValueError(
                f"runs are compared with Holm's correction per metric; got correction={correction!r}"
            )
        return paired_report(
            systems, y_true, group, runs=runs, qid=qid, reference=baseline, metrics=metrics,
            confidence=confidence, n_resamples=n_resamples, test=test, seed=seed, gain=gain,
            ties=ties, no_relevant=no_relevant, capped=capped,
            relevance_threshold=relevance_threshold, max_grade=max_grade,
            conventions=conventions, relevance_level=relevance_level, queries=queries, data=data,
        )  # fmt: skip
    _no_run_options(y_true, runs, relevance_level, queries)
    pl = _require_polars()
    if not isinstance(systems, Mapping) or len(systems) < 2:
        raise ValueError("`systems` must map at least two names to their scores")
    names = [str(s) for s in systems]
    if baseline is None:
        baseline = names[0]
    if baseline not in names:
        raise ValueError(f"`baseline` {baseline!r} is not one of the systems {names}")
    _check_choice(test, "test", ("permutation", "t"))
    if correction not in _CORRECTIONS:
        raise ValueError(f"`correction` must be one of {list(_CORRECTIONS)}; got {correction!r}")
    settings = _settings(conventions, gain, ties, no_relevant, capped)
    parsed = _parse_metrics(metrics, settings["ties"])
    groups = _prepare(y_true, next(iter(systems.values())), group, data, qid=qid)[2]
    per_system = _array_values(
        systems, y_true, groups, data, parsed, settings, relevance_threshold, max_grade
    )
    rows: list[dict[str, Any]] = []
    p_index: list[int] = []
    for metric in (spec.name for spec in parsed):
        base_v = per_system[baseline][metric]
        kept = ~np.isnan(base_v)
        for name in names:
            v = per_system[name][metric][kept]
            b = base_v[kept]
            row = {
                "metric": metric,
                "system": name,
                "mean": float(v.mean()) if v.size else None,
                "diff": float((v - b).mean()) if v.size else None,
                "p_value": None,
                "n_queries": int(v.size),
                "n_better": int(np.count_nonzero(v > b)),
                "n_worse": int(np.count_nonzero(v < b)),
                "test": test,
            }
            if name != baseline and v.size >= 2:
                if test == "t":
                    row["p_value"] = paired_t_test(v, b)[1]
                else:
                    row["p_value"] = paired_permutation_test(
                        v, b, n_resamples=n_resamples, seed=seed
                    )
                p_index.append(len(rows))
            rows.append(row)
    if p_index:
        adjusted = _adjust(np.array([rows[i]["p_value"] for i in p_index]), correction)
        for i, p in zip(p_index, adjusted):
            rows[i]["p_value"] = float(p)
    schema = {
        "metric": pl.String, "system": pl.String, "mean": pl.Float64, "diff": pl.Float64,
        "p_value": pl.Float64, "n_queries": pl.Int64, "n_better": pl.Int64,
        "n_worse": pl.Int64, "test": pl.String,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------------------
# paired_comparison: differences with confidence intervals, Holm and a verdict
# --------------------------------------------------------------------------------------

_TESTS = ("t", "wilcoxon", "permutation")
VERDICTS = ("better", "parity", "worse")


def _explicit_groups(group, qid, n_rows: int, data) -> Groups:
    """Query partition from ``group`` (sizes) or ``qid`` (per-row ids); never guessed."""
    if group is not None and qid is not None:
        raise ValueError("give `group` (query sizes) or `qid` (one query id per row), not both")
    if qid is not None:
        q = _as_vector(_column(qid, data, "qid"), "qid")
        if q.size != n_rows:
            raise ValueError(
                f"`qid` must give one query id per row: {n_rows} rows but {q.size} ids "
                "(for query sizes use `group=`)"
            )
        return Groups.from_ids(q)
    if group is None:
        raise TypeError("give `group` (query sizes, as LightGBM) or `qid` (per-row query ids)")
    if isinstance(group, Groups):
        return as_groups(group, n_rows)
    return Groups.from_sizes(_as_vector(_column(group, data, "group"), "group"), n_rows)


def _no_array_options(**given) -> None:
    """Refuse the array-only options in a comparison of TREC runs."""
    if given.pop("relevance_threshold") != 0.0:
        raise TypeError(
            "`relevance_threshold` applies to arrays of labels; for TREC runs give "
            "`relevance_level` (rel >= level is relevant, trec_eval -l)"
        )
    for name, value in given.items():
        if value is not None:
            raise TypeError(
                f"`{name}` applies to arrays of scores, not to TREC runs: the qrels give the "
                "queries and labels, and runs follow trec_eval's conventions (set `gain`, "
                "`ties`, `no_relevant` to change them)"
            )


def _no_run_options(y_true, runs, relevance_level, queries) -> None:
    if y_true is None:
        raise TypeError("give the labels `y_true` (or TREC runs and their qrels)")
    if relevance_level != 1 or queries != "qrels":
        raise TypeError(
            "`relevance_level` and `queries` apply to TREC runs; with arrays use "
            "`relevance_threshold` and `no_relevant`"
        )


def paired_comparison(
    systems: Any,
    y_true: Array | str | None = None,
    group: Array | str | None = None,
    *,
    runs: Any = None,
    qid: Array | str | None = None,
    reference: str | None = None,
    candidate: str | None = None,
    metrics: str | Sequence[str] = ("ndcg@10",),
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    ci: str = "percentile",
    test: str = "t",
    seed: int | np.random.Generator | None = 0,
    gain: str | None = None,
    ties: str | None = None,
    no_relevant: str | None = None,
    capped: bool | None = None,
    relevance_threshold: float = 0.0,
    max_grade: float | None = None,
    conventions: str | None = None,
    relevance_level: int = 1,
    queries: str = "qrels",
    data: Any = None,
) -> pl.DataFrame:
    """Each system against a reference: mean per-query difference, bootstrap CI, test, verdict.

    For every metric and every system other than ``reference``, the per-query metric values
    are paired with the reference's on the same queries and summarised by

    * ``diff``: the mean per-query difference (system minus reference);
    * ``ci_low``, ``ci_high``: a bootstrap confidence interval of that mean, resampling
      queries (:func:`~selrank.metrics.significance.paired_bootstrap_ci`);
    * ``p_value``: a two-sided paired test (``test``) and ``p_holm``, that p-value adjusted
      by Holm's method over the systems compared on the same metric (the family is "every
      system against the reference on this metric");
    * ``verdict``: ``"better"`` when the CI lies above 0 and ``p_holm < 1 - confidence``,
      ``"worse"`` when it lies below 0 and ``p_holm < 1 - confidence``, otherwise
      ``"parity"`` (no significant difference at that level; the CI bounds how large a
      difference the data still allow).

    Several folds or test sets pool by concatenation: give the rows of all of them with
    ``group`` sizes concatenated (each size is its own query), or with ``qid`` ids made
    unique per fold (e.g. ``fold * 10**6 + qid``). Each query then counts once.

    Parameters
    ----------
    systems : mapping of name -> scores
        One score per row for each system (arrays, tensors, Series or column names).
    y_true
        Labels.
    group : array-like of int, optional
        Query sizes (LightGBM's ``group``), in row order.
    qid : array-like, optional
        One query id per row (XGBoost's ``qid``). Give exactly one of ``group`` and ``qid``.
    reference : str, optional
        The system the others are compared with; the first one by default.
    candidate : str, optional
        Instead of ``reference``: compare this one system with each of the others (rows
        ``candidate vs other``, ``diff`` = candidate minus other; Holm over those
        comparisons). For "my model against each baseline".
    metrics : str or sequence of str
        As in :func:`evaluate`.
    confidence : float
        Level of the intervals and of the verdict (0.95: 95% CI, Holm-adjusted p < 0.05).
    n_resamples : int
        Bootstrap resamples (the same resampled queries serve every comparison).
    ci : {"percentile", "bca"}
        Bootstrap interval.
    test : {"t", "wilcoxon", "permutation"}
        Paired t-test (:func:`~selrank.metrics.significance.paired_t_test`, the default:
        it tests the mean, the quantity the CI is about), Wilcoxon signed-rank
        (:func:`~selrank.metrics.significance.wilcoxon_signed_rank_test`) or a sign-flip
        randomisation test (:func:`~selrank.metrics.significance.paired_permutation_test`
        with ``n_resamples`` flips).
    seed : int
        Seed of the bootstrap (and of the permutation test).
    gain, ties, no_relevant, capped, relevance_threshold, max_grade, conventions, data
        As in :func:`evaluate`. Queries excluded by ``no_relevant="exclude"`` are left out
        of every comparison.

    Returns
    -------
    polars.DataFrame
        One row per (metric, system other than the reference): ``metric``, ``system``,
        ``reference``, ``mean``, ``reference_mean``, ``diff``, ``ci_low``, ``ci_high``,
        ``p_value``, ``p_holm``, ``verdict``, ``n_queries``, ``n_better``, ``n_worse``,
        ``test``. :func:`format_comparison` turns it into one readable line per row.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000).astype(float)
    >>> good = y + rng.normal(0, 1.0, 2000)
    >>> df = paired_comparison({"noise": rng.normal(size=2000), "model": good,
    ...                         "model, reordered ties": good + 0.0},
    ...                        y, [20] * 100, metrics="ndcg@5", n_resamples=2000)
    >>> df.select("system", "verdict").rows()
    [('model', 'better'), ('model, reordered ties', 'better')]

    This is :func:`paired_report`'s frame (``paired_report(...).table``), the one comparison
    entry point; ``ComparisonReport(frame)`` gives the report back.
    """
    return paired_report(
        systems, y_true, group, runs=runs, qid=qid, reference=reference, candidate=candidate,
        metrics=metrics, confidence=confidence, n_resamples=n_resamples, ci=ci, test=test,
        seed=seed, gain=gain, ties=ties, no_relevant=no_relevant, capped=capped,
        relevance_threshold=relevance_threshold, max_grade=max_grade, conventions=conventions,
        relevance_level=relevance_level, queries=queries, data=data,
    ).table  # fmt: skip


def paired_report(
    systems: Any,
    y_true: Array | str | None = None,
    group: Array | str | None = None,
    *,
    runs: Any = None,
    qid: Array | str | None = None,
    reference: str | None = None,
    candidate: str | None = None,
    metrics: str | Sequence[str] = ("ndcg@10",),
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    ci: str = "percentile",
    test: str = "t",
    seed: int | np.random.Generator | None = 0,
    gain: str | None = None,
    ties: str | None = None,
    no_relevant: str | None = None,
    capped: bool | None = None,
    relevance_threshold: float = 0.0,
    max_grade: float | None = None,
    conventions: str | None = None,
    relevance_level: int = 1,
    queries: str = "qrels",
    data: Any = None,
) -> ComparisonReport:
    """The one comparison entry point: systems (arrays of scores or TREC runs) against a
    reference, query by query, as a :class:`~selrank.metrics.report.ComparisonReport`.

    Every comparison goes through here: :func:`paired_comparison` is its frame
    (``paired_report(...).table``) and :func:`compare` of TREC runs returns it (with a
    permutation test by default). The parameters are those of :func:`paired_comparison`;
    the report prints as text and writes Markdown and LaTeX tables.

    Examples
    --------
    >>> qrels = {f"q{i}": {"a": 1, "b": 0} for i in range(20)}
    >>> good = {q: {"a": 2.0, "b": 1.0} for q in qrels}
    >>> bad = {q: {"a": 1.0, "b": 2.0} for q in qrels}
    >>> report = paired_report(qrels, runs={"bad": bad, "good": good}, metrics="P@1")
    >>> report.table.select("system", "diff", "verdict").rows()
    [('good', 1.0, 'better')]
    """
    _require_polars()
    trec = is_trec_input(systems, y_true, runs, data, group, qid)
    if trec:
        _no_array_options(group=group, qid=qid, data=data, conventions=conventions,
                          capped=capped, relevance_threshold=relevance_threshold)  # fmt: skip
        qrels, systems = resolve(systems, y_true, runs)
    else:
        _no_run_options(y_true, runs, relevance_level, queries)
    if not isinstance(systems, Mapping) or len(systems) < 2:
        raise ValueError("`systems` must map at least two names to their scores")
    names = [str(s) for s in systems]
    if len(set(names)) != len(names):
        raise ValueError(f"`systems` has duplicate names: {names}")
    if reference is not None and candidate is not None:
        raise ValueError("give `reference` (others vs it) or `candidate` (it vs others), not both")
    for what, value in (("reference", reference), ("candidate", candidate)):
        if value is not None and value not in names:
            raise ValueError(f"`{what}` {value!r} is not one of the systems {names}")
    if candidate is None:
        reference = names[0] if reference is None else reference
        pairs = [(n, reference) for n in names if n != reference]
    else:
        pairs = [(candidate, n) for n in names if n != candidate]
    _check_choice(test, "test", _TESTS)
    _check_choice(ci, "ci", ("percentile", "bca"))
    if not (isinstance(confidence, float) and 0.5 <= confidence < 1.0):
        raise ValueError(f"`confidence` must be a float in [0.5, 1); got {confidence!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"`n_resamples` must be an int >= 100; got {n_resamples!r}")
    if trec:
        metric_names, per_system, _ = per_query_values(
            qrels, dict(systems), metrics, relevance_level=relevance_level, ties=ties,
            gain=gain, no_relevant=no_relevant, max_grade=max_grade, queries=queries,
        )  # fmt: skip
        table = _paired_table(
            per_system, metric_names, pairs, confidence=confidence,
            n_resamples=n_resamples, ci=ci, test=test, seed=seed,
        )  # fmt: skip
        return ComparisonReport(table, confidence=confidence)
    settings = _settings(conventions, gain, ties, no_relevant, capped)
    parsed = _parse_metrics(metrics, settings["ties"])
    label = _as_vector(_column(y_true, data, "y_true"), "y_true")
    groups = _explicit_groups(group, qid, label.size, data)
    per_system = _array_values(
        systems, y_true, groups, data, parsed, settings, relevance_threshold, max_grade
    )
    table = _paired_table(
        per_system, [spec.name for spec in parsed], pairs, confidence=confidence,
        n_resamples=n_resamples, ci=ci, test=test, seed=seed,
    )  # fmt: skip
    return ComparisonReport(table, confidence=confidence)


def _array_values(systems, y_true, groups, data, parsed, settings, relevance_threshold, max_grade):
    """``{system: {metric: per-query values}}`` of arrays of scores, on one query partition."""
    per_system = {}
    for i, (name, scores) in enumerate(systems.items()):
        lab, score, _ = _prepare(y_true, scores, groups, data)
        if i == 0:
            _validate_all(lab, parsed, settings, relevance_threshold, max_grade)
        per_system[str(name)], _ = _per_query_tables(
            lab, score, groups, parsed, settings, relevance_threshold, max_grade
        )
    return per_system


def _paired_table(per_system, metric_names, pairs, *, confidence, n_resamples, ci, test, seed):
    """paired_comparison's frame from ``{system: {metric: per-query values}}`` (NaN: left out)."""
    pl = _require_polars()
    alpha = 1.0 - confidence
    rows = []
    for metric in metric_names:
        # the exclusion policy depends on labels only: the same queries for every system
        kept = ~np.isnan(per_system[pairs[0][1]][metric])
        block: list[dict[str, Any]] = []
        for name, other in pairs:
            v = per_system[name][metric][kept]
            r = per_system[other][metric][kept]
            row: dict[str, Any] = {
                "metric": metric, "system": name, "reference": other,
                "mean": float(v.mean()) if v.size else None,
                "reference_mean": float(r.mean()) if r.size else None,
                "diff": float((v - r).mean()) if v.size else None,
                "ci_low": None, "ci_high": None, "p_value": None, "p_holm": None,
                "verdict": None, "n_queries": int(v.size),
                "n_better": int(np.count_nonzero(v > r)), "n_worse": int(np.count_nonzero(v < r)),
                "test": test,
            }  # fmt: skip
            if v.size >= 2:
                # one seed for every comparison: the same resampled queries throughout
                row["ci_low"], row["ci_high"] = paired_bootstrap_ci(
                    v, r, confidence=confidence, n_resamples=n_resamples, method=ci, seed=seed
                )
                if test == "t":
                    row["p_value"] = paired_t_test(v, r)[1]
                elif test == "wilcoxon":
                    row["p_value"] = wilcoxon_signed_rank_test(v, r)[1]
                else:
                    row["p_value"] = paired_permutation_test(
                        v, r, n_resamples=n_resamples, seed=seed
                    )
            block.append(row)
        p = np.array([np.nan if b["p_value"] is None else b["p_value"] for b in block])
        for b, ph in zip(block, holm(p)):
            if np.isnan(ph):
                continue
            b["p_holm"] = float(ph)
            significant = ph < alpha
            low, high = float(b["ci_low"]), float(b["ci_high"])  # set wherever a p-value is
            if significant and low > 0:
                b["verdict"] = "better"
            elif significant and high < 0:
                b["verdict"] = "worse"
            else:
                b["verdict"] = "parity"
        rows.extend(block)
    schema = {
        "metric": pl.String, "system": pl.String, "reference": pl.String, "mean": pl.Float64,
        "reference_mean": pl.Float64, "diff": pl.Float64, "ci_low": pl.Float64,
        "ci_high": pl.Float64, "p_value": pl.Float64, "p_holm": pl.Float64,
        "verdict": pl.String, "n_queries": pl.Int64, "n_better": pl.Int64,
        "n_worse": pl.Int64, "test": pl.String,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def _signed(x: float, digits: int) -> str:
    return f"{x:+.{digits}f}".replace("-", "\u2212")


def format_comparison(frame: pl.DataFrame, *, digits: int = 3) -> str:
    """One line per row of :func:`paired_comparison` (or of a ComparisonReport), for people.

    ``"model vs noise: ΔNDCG@5 = +0.210 [+0.190, +0.230], p = 1e-40 (t-test, Holm) → better"``.
    The interval is the bootstrap CI of the mean per-query difference; ``p`` is the
    Holm-adjusted p-value.

    Examples
    --------
    >>> import polars as pl
    >>> row = {"metric": "ndcg@10", "system": "a", "reference": "b", "diff": 0.0042,
    ...        "ci_low": -0.006, "ci_high": 0.0131, "p_holm": 0.42, "verdict": "parity",
    ...        "n_queries": 784, "test": "t"}
    >>> print(format_comparison(pl.DataFrame([row])))
    a vs b: ΔNDCG@10 = +0.004 [−0.006, +0.013], p = 0.42 (t-test, Holm; 784 queries) → parity
    """
    frame = getattr(frame, "table", frame)  # a ComparisonReport: its frame
    tests = {"t": "t-test", "wilcoxon": "Wilcoxon", "permutation": "permutation"}
    lines = []
    for r in frame.iter_rows(named=True):
        metric = r["metric"].upper()
        if r["diff"] is None or r["ci_low"] is None:
            lines.append(f"{r['system']} vs {r['reference']}: Δ{metric}: too few queries")
            continue
        p = r["p_holm"]
        p_text = f"{p:.2g}" if p >= 1e-3 else f"{p:.0e}"
        lines.append(
            f"{r['system']} vs {r['reference']}: Δ{metric} = {_signed(r['diff'], digits)} "
            f"[{_signed(r['ci_low'], digits)}, {_signed(r['ci_high'], digits)}], p = {p_text} "
            f"({tests.get(r['test'], r['test'])}, Holm; {r['n_queries']} queries) → {r['verdict']}"
        )
    return "\n".join(lines)
