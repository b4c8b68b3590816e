"""The one evaluation engine: measures (their records, :mod:`selrank.metrics.measures`) on a
ranking of rows plus the judgments of each query.

Arrays of labels and scores come here directly (every row judged: the judgments are the
rows, :meth:`Judgments.of_rows`); a TREC run comes as the arrays of its retrieved documents
plus the per-query counts of its qrels (:func:`selrank.metrics.trec._evaluate` builds them).
The same kernels, the same policy for queries without relevant documents and the same
summary serve :func:`~selrank.metrics.evaluate`, :func:`~selrank.metrics.evaluate_run`, the
comparisons and the public metric functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._groups import Groups
from ._kernels import Judgments, Ranking, _check_nonnegative, _require_polars, rank_groups
from .measures import MEASURES, Measure
from .names import MetricSpec

__all__ = ["check_for_arrays", "validate_labels", "per_query", "evaluate_arrays", "summary"]

GEOMETRIC_FLOOR = 1e-5  # trec_eval's MIN_GEO_MEAN: gm_map floors each query's AP here


def check_for_arrays(specs: Sequence[MetricSpec], ties: str) -> None:
    """Refuse what flat arrays cannot give: measures about unjudged documents, and measures
    without an exact average over tied orderings under ``ties="average"``."""
    for spec in specs:
        measure = MEASURES[spec.measure]
        if measure.needs_unjudged:
            raise ValueError(
                f"metric {spec.name!r} needs qrels and a run, where documents may be unjudged "
                "(selrank.metrics.evaluate_run); with one label per row every row is judged"
            )
        if ties == "average" and not measure.average_ties:
            raise ValueError(
                f"metric {spec.name!r} has no exact average over tied orderings: pass "
                "ties='stable', 'pessimistic' or 'optimistic' (or conventions='trec_eval')"
            )


def validate_labels(label: np.ndarray, specs: Sequence[MetricSpec], options: Mapping) -> None:
    """What each measure needs of the labels of arrays, and the shared options' types."""
    for spec in specs:
        measure = MEASURES[spec.measure]
        gain = spec.gain or options.get("gain")
        if measure.labels == "nonnegative":
            _check_nonnegative(label, measure.name.upper())
        elif measure.labels == "nonnegative_exponential" and gain == "exponential":
            _check_nonnegative(label, "the exponential gain 2^rel - 1")
    if "relevance_threshold" in options:
        thr = options["relevance_threshold"]
        if isinstance(thr, bool) or not isinstance(thr, int | float | np.number):
            raise TypeError(f"`relevance_threshold` must be a real number; got {thr!r}")
        if not math.isfinite(float(thr)):
            raise ValueError(f"`relevance_threshold` must be finite; got {thr!r}")
    grade = options.get("max_grade")
    if grade is not None:
        if isinstance(grade, bool) or not isinstance(grade, int | float | np.number):
            raise TypeError(f"`max_grade` must be a number >= 0 or None; got {grade!r}")
        if not (math.isfinite(float(grade)) and grade >= 0):
            raise ValueError(f"`max_grade` must be a finite number >= 0 or None; got {grade!r}")


def _empty(measure: Measure, n_relevant: np.ndarray, top_grade: np.ndarray) -> np.ndarray:
    """The queries without relevant documents, as the measure counts them."""
    return top_grade <= 0 if measure.empty == "grade" else n_relevant == 0


def per_query(
    rk: Ranking | None,
    specs: Sequence[MetricSpec],
    *,
    judgments: Judgments | None,
    options: Mapping[str, Any],
    policy: str,
    n_relevant: np.ndarray,
    top_grade: np.ndarray,
    where: np.ndarray | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-query values (policy applied; NaN: excluded) and no-relevant masks, per spec.

    ``rk`` ranks the rows of the queries that have rows (``where``: their indices among all
    the queries, ``None`` when every query has rows); a query without rows scores 0.
    ``n_relevant`` and ``top_grade`` describe every query (the judgments, not the rows).
    ``judgments`` describes the queries of ``rk``. ``options``: ``gain``,
    ``relevance_threshold``, ``capped``, ``max_grade``.
    """
    n_queries = n_relevant.size
    values, masks = [], []
    for spec in specs:
        measure = MEASURES[spec.measure]
        full = np.zeros(n_queries)
        if rk is not None:
            kwargs = {**options, **dict(spec.params), "judgments": judgments}
            if spec.gain is not None:
                kwargs["gain"] = spec.gain
            got = np.asarray(measure.kernel(rk, spec.k, **kwargs), dtype=np.float64)
            if where is None:
                full = got.copy()
            else:
                full[where] = got
        mask = _empty(measure, n_relevant, top_grade)
        if policy == "exclude":
            full[mask] = np.nan
        elif policy == "one" and measure.normalised:
            full[mask] = 1.0
        elif measure.zero_when_empty:
            full[mask] = 0.0
        values.append(full)
        masks.append(mask)
    return values, masks


def evaluate_arrays(
    label: np.ndarray,
    score: np.ndarray,
    groups: Groups,
    specs: Sequence[MetricSpec],
    ties: str,
    policy: str,
    options: Mapping[str, Any],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``{spec.name: per-query values}`` and ``{spec.name: no-relevant mask}`` of flat arrays
    (every row judged), ranked once for every spec."""
    rk = rank_groups(label, score, groups, ties)
    threshold = float(options.get("relevance_threshold", 0.0))
    judgments = Judgments.of_rows(rk, threshold)
    top_grade = np.maximum.reduceat(rk.label, rk.offsets[:-1])
    opts = {"relevance_threshold": threshold, **options}
    values, masks = per_query(
        rk, specs, judgments=judgments, options=opts, policy=policy,
        n_relevant=judgments.n_relevant, top_grade=top_grade,
    )  # fmt: skip
    names = [s.name for s in specs]
    return dict(zip(names, values)), dict(zip(names, masks))


def _aggregate(measure: Measure, kept: np.ndarray) -> float | None:
    if not kept.size:
        return None
    if measure.aggregate == "sum":
        return float(kept.sum())
    if measure.aggregate == "geometric":
        return float(np.exp(np.log(np.maximum(kept, GEOMETRIC_FLOOR)).mean()))
    return float(kept.mean())


def summary(
    names: Sequence[str],
    specs: Sequence[MetricSpec],
    values: Mapping[str, np.ndarray],
    masks: Mapping[str, np.ndarray],
) -> Any:
    """The summary frame of :func:`~selrank.metrics.evaluate` and
    :func:`~selrank.metrics.evaluate_run`: one row per metric. ``mean`` combines the kept
    queries as the measure's record says (a mean; trec_eval's sum for its counts and its
    geometric mean for ``gm_map``)."""
    pl = _require_polars()
    rows = []
    for name, spec in zip(names, specs):
        v = values[name]
        kept = v[~np.isnan(v)]
        rows.append(
            {
                "metric": name,
                "mean": _aggregate(MEASURES[spec.measure], kept),
                "std": float(kept.std(ddof=1)) if kept.size > 1 else None,
                "n_queries": int(kept.size),
                "n_no_relevant": int(masks[name].sum()),
                "n_excluded": int(v.size - kept.size),
            }
        )
    schema = {
        "metric": pl.String, "mean": pl.Float64, "std": pl.Float64, "n_queries": pl.Int64,
        "n_no_relevant": pl.Int64, "n_excluded": pl.Int64,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema)
