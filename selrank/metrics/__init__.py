"""Evaluation metrics.

* :mod:`selrank.metrics.ranking`: NDCG, DCG, MAP, MRR, ERR, precision@k, recall@k with
  explicit gain, tie and empty-query conventions.
* :mod:`selrank.metrics.evaluation`: :func:`evaluate` (tidy polars summary).
* :mod:`selrank.metrics.comparison`: :func:`paired_report`, the one comparison entry point
  (per-query paired differences with bootstrap CIs, paired tests, Holm correction and a
  verdict, of arrays of scores or of TREC runs, as a :class:`ComparisonReport`);
  :func:`paired_comparison` is its frame and :func:`compare` its alias for runs (for arrays,
  the p-value table of several systems against a baseline).
* :mod:`selrank.metrics.significance`: the paired tests (t, Wilcoxon, permutation), the
  paired bootstrap CI and Holm's correction.
* :mod:`selrank.metrics.trec`: TREC runs and qrels (read, write, :func:`evaluate_run` with
  trec_eval's conventions).
* :mod:`selrank.metrics.measures`: one record (:class:`Measure`) per measure, the single
  source of the grammar, the engine, the CLI and the docs table; :func:`register` adds one.
* :mod:`selrank.metrics.names`: the one grammar of metric names (selrank/ranx, trec_eval and
  ir_measures spellings) that every function here and the CLI read.
* :mod:`selrank.metrics.report`: :class:`ComparisonReport` (what :func:`compare` returns for
  TREC runs: text, Markdown and LaTeX tables); :mod:`selrank.metrics.reporting`:
  :func:`trec_report` (evaluate or compare runs as printable text; the CLI's entry point).
* :mod:`selrank.metrics.classification`: single-logit classification metrics (per-class
  AUPRC, precision at a fixed recall, Principle-of-Logit-Separation violations).
* :mod:`selrank.metrics.region`: errors, pairwise accuracy and ranking metrics inside label or
  score regions; properness per feature cell.
* :mod:`selrank.metrics.dwell`: dwell-time metrics (error inside the engaged band and
  overall, within-session NDCG / Kendall tau, calibration, :func:`dwell_report`).

This package never imports :mod:`selrank.losses`; it needs NumPy, plus polars for
:func:`evaluate` and :func:`compare`.
"""

from __future__ import annotations

from .classification import (
    auprc,
    logit_separation_violations,
    per_class_auprc,
    precision_at_recall,
    single_logit_scores,
)
from .comparison import compare, format_comparison, paired_comparison, paired_report
from .dwell import (
    band_error,
    calibration_table,
    dwell_report,
    expected_calibration_error,
    overall_error,
    session_ranking,
)
from .evaluation import evaluate
from .measures import MEASURES, METRICS, Measure, Param, register
from .names import MetricSpec, parse_metrics
from .ranking import (
    CONVENTIONS,
    average_precision,
    bpref,
    dcg,
    err,
    ndcg,
    parse_metric,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
    success_at_k,
)
from .region import (
    PropernessReport,
    in_region,
    properness_check,
    region_error,
    region_pairwise_accuracy,
    region_ranking,
    region_report,
)
from .report import ComparisonReport
from .reporting import trec_report
from .significance import (
    holm,
    paired_bootstrap_ci,
    paired_permutation_test,
    paired_t_test,
    wilcoxon_signed_rank_test,
)
from .trec import (
    Qrels,
    Run,
    evaluate_run,
    labels_to_qrels,
    read_qrels,
    read_run,
    scores_to_run,
    write_qrels,
    write_run,
)

__all__ = [
    # ranking
    "ndcg",
    "dcg",
    "average_precision",
    "reciprocal_rank",
    "err",
    "precision_at_k",
    "recall_at_k",
    "r_precision",
    "bpref",
    "success_at_k",
    "evaluate",
    "compare",
    "parse_metric",
    "paired_t_test",
    "paired_permutation_test",
    "paired_comparison",
    "paired_report",
    "format_comparison",
    "paired_bootstrap_ci",
    "wilcoxon_signed_rank_test",
    "holm",
    "METRICS",
    "CONVENTIONS",
    # single-logit classification
    "auprc",
    "per_class_auprc",
    "precision_at_recall",
    "logit_separation_violations",
    "single_logit_scores",
    # region metrics
    "in_region",
    "region_error",
    "region_report",
    "region_pairwise_accuracy",
    "region_ranking",
    "properness_check",
    "PropernessReport",
    # dwell time
    "band_error",
    "overall_error",
    "session_ranking",
    "calibration_table",
    "expected_calibration_error",
    "dwell_report",
    # TREC runs and qrels
    "Qrels",
    "Run",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
    "labels_to_qrels",
    "scores_to_run",
    "evaluate_run",
    # the measures' records, metric names and run comparison reports
    "MEASURES",
    "Measure",
    "Param",
    "register",
    "parse_metrics",
    "MetricSpec",
    "ComparisonReport",
    "trec_report",
]
