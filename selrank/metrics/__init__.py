"""Evaluation metrics.

* :mod:`selrank.metrics.ranking`: NDCG, DCG, MAP, MRR, ERR, precision@k, recall@k with
  explicit gain, tie and empty-query conventions; :func:`evaluate` (tidy polars summary)
  and :func:`compare` (several systems, paired significance tests).
* :mod:`selrank.metrics.classification`: single-logit classification metrics (per-class
  AUPRC, precision at a fixed recall, Principle-of-Logit-Separation violations).

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
from .ranking import (
    CONVENTIONS,
    METRICS,
    average_precision,
    compare,
    dcg,
    err,
    evaluate,
    ndcg,
    paired_permutation_test,
    paired_t_test,
    parse_metric,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
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
    "evaluate",
    "compare",
    "parse_metric",
    "paired_t_test",
    "paired_permutation_test",
    "METRICS",
    "CONVENTIONS",
    # single-logit classification
    "auprc",
    "per_class_auprc",
    "precision_at_recall",
    "logit_separation_violations",
    "single_logit_scores",
]
