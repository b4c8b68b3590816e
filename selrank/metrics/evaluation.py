"""Evaluate rankings: :func:`evaluate`, a tidy polars table over the ranking measures.

:func:`evaluate` computes several measures from one ranking of the rows, through the one
engine (:mod:`selrank.metrics._engine`); the comparisons of several systems are in
:mod:`selrank.metrics.comparison`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import Array
from . import _engine
from ._kernels import TIES, segment_sum
from .names import MetricSpec, parse_metrics
from .ranking import (
    _DEFAULTS,
    CONVENTIONS,
    GAINS,
    NO_RELEVANT,
    _check_choice,
    _prepare,
    _require_polars,
)

if TYPE_CHECKING:
    import polars as pl

__all__ = ["evaluate"]


def _settings(conventions, gain, ties, no_relevant, capped) -> dict[str, Any]:
    if conventions is None:
        base = dict(_DEFAULTS)
    else:
        if not isinstance(conventions, str) or conventions not in CONVENTIONS:
            raise ValueError(
                f"unknown conventions {conventions!r}; choose one of {sorted(CONVENTIONS)}"
            )
        base = dict(CONVENTIONS[conventions])
    given = {"gain": gain, "ties": ties, "no_relevant": no_relevant, "capped": capped}
    base.update({key: v for key, v in given.items() if v is not None})
    _check_choice(base["gain"], "gain", GAINS)
    _check_choice(base["ties"], "ties", TIES)
    _check_choice(base["no_relevant"], "no_relevant", NO_RELEVANT)
    return base


def _parse_metrics(metrics, ties: str = "stable") -> list[MetricSpec]:
    """The specs of ``metrics`` that arrays can give (names shown lower-cased)."""
    specs = [replace(s, name=s.name.lower()) for s in parse_metrics(metrics)]
    _engine.check_for_arrays(specs, ties)
    return specs


def _options(settings, relevance_threshold, max_grade) -> dict[str, Any]:
    return {
        "gain": settings["gain"],
        "capped": bool(settings["capped"]),
        "relevance_threshold": relevance_threshold,
        "max_grade": max_grade,
    }


def _per_query_tables(label, score, groups, specs, settings, relevance_threshold, max_grade):
    """Per-query values (policy applied) and no-relevant masks for each metric."""
    return _engine.evaluate_arrays(
        label, score, groups, specs, settings["ties"], settings["no_relevant"],
        _options(settings, relevance_threshold, max_grade),
    )  # fmt: skip


def _validate_all(label, specs, settings, relevance_threshold, max_grade):
    opts = {"gain": settings["gain"], "relevance_threshold": relevance_threshold}
    if max_grade is not None:
        opts["max_grade"] = max_grade
    _engine.validate_labels(label, specs, opts)


def evaluate(
    y_true: Array | str,
    y_score: Array | str,
    group: Array | str | None = None,
    *,
    qid: Array | str | None = None,
    metrics: str | Sequence[str] = ("ndcg@10",),
    gain: str | None = None,
    ties: str | None = None,
    no_relevant: str | None = None,
    capped: bool | None = None,
    relevance_threshold: float = 0.0,
    max_grade: float | None = None,
    conventions: str | None = None,
    per_query: bool = False,
    data: Any = None,
) -> pl.DataFrame:
    """Evaluate several ranking metrics at once and return a tidy polars DataFrame.

    The rows are ranked once and every metric is computed from that ranking.

    Parameters
    ----------
    y_true, y_score, group
        As in :func:`ndcg` (``group``: query sizes, as LightGBM); column names when ``data``
        is given.
    qid : array-like or str, optional
        One query id per row (XGBoost's ``qid``) instead of ``group``; never guessed from
        the length of ``group``.
    metrics : str or sequence of str
        Names ``"ndcg"``, ``"dcg"``, ``"map"``, ``"mrr"``, ``"err"``, ``"precision"``,
        ``"recall"``, ``"success"``, each optionally with a cut-off ``"@k"``
        (``"ndcg@10"``), and ``"rprec"``, ``"bpref"``; trec_eval and ir_measures spellings
        (``"ndcg_cut_10"``, ``"P@5"``, ``"AP"``, ``"RR"``, ``"Rprec"``) work too, as a list
        or one comma-separated string (:func:`~selrank.metrics.names.parse_metrics`). The
        frame shows the names lower-cased.
    gain, ties, no_relevant, capped : optional
        As in the metric functions; ``None`` takes the value from ``conventions`` or the
        library default (``"exponential"``, ``"average"``, ``"one"``, ``False``).
        ``no_relevant="one"`` applies to the normalised metrics (NDCG, MAP, MRR, recall);
        DCG, ERR and precision keep their value 0 on those queries. ``"exclude"`` drops the
        queries without relevant rows from every metric.
    relevance_threshold : float
        Label above which a row is relevant (MAP, MRR, precision, recall).
    max_grade : float or None
        ERR's highest grade (default: the largest label).
    conventions : {"lightgbm", "xgboost", "trec_eval", "ranx", "sklearn"} or None
        Take ``gain``, ``ties``, ``no_relevant`` and ``capped`` from another library's
        defaults (see :data:`CONVENTIONS` and ``docs/metrics.md``).
    per_query : bool
        Return one row per query instead of the summary.
    data : DataFrame, optional
        Frame to look up column names in.

    Returns
    -------
    polars.DataFrame
        Summary (default): one row per metric with ``metric``, ``mean`` (over the queries
        kept), ``std`` (sample standard deviation across those queries), ``n_queries``
        (kept), ``n_no_relevant`` (queries without a relevant row, whatever the policy)
        and ``n_excluded``. With ``per_query=True``: ``query`` (the query id, or the
        query's index when ``group`` gave sizes), ``n_docs``, ``n_relevant`` and one column
        per metric, null where a query was excluded.

    Examples
    --------
    >>> df = evaluate([2, 1, 0, 0, 0], [0.3, 0.2, 0.1, 0.5, 0.4], [3, 2],
    ...               metrics=["ndcg@2", "mrr"], no_relevant="exclude")
    >>> df.select("metric", "mean", "n_queries", "n_no_relevant").rows()
    [('ndcg@2', 1.0, 1, 1), ('mrr', 1.0, 1, 1)]
    >>> evaluate([2, 1, 0, 0, 0], [0.3, 0.2, 0.1, 0.5, 0.4], [3, 2], metrics="ndcg",
    ...          per_query=True).rows()
    [(0, 3, 2, 1.0), (1, 2, 0, 1.0)]
    """
    pl = _require_polars()
    settings = _settings(conventions, gain, ties, no_relevant, capped)
    parsed = _parse_metrics(metrics, settings["ties"])
    label, score, groups = _prepare(y_true, y_score, group, data, qid=qid)
    _validate_all(label, parsed, settings, relevance_threshold, max_grade)
    values, masks = _per_query_tables(
        label, score, groups, parsed, settings, relevance_threshold, max_grade
    )
    if per_query:
        grouped = groups.to_grouped(label)
        cols = {
            "query": groups.ids if groups.ids is not None else np.arange(groups.n_groups),
            "n_docs": groups.sizes,
            "n_relevant": segment_sum(
                (grouped > relevance_threshold).astype(np.int64), groups.offsets[:-1]
            ),
        }
        frame = pl.DataFrame(cols)
        return frame.with_columns(
            [pl.Series(spec.name, values[spec.name], nan_to_null=True) for spec in parsed]
        )
    return _engine.summary([s.name for s in parsed], parsed, values, masks)
