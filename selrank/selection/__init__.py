"""Which objective for *your* data? The selection report (issue 27).

:func:`select` trains every candidate objective — selrank's listwise, pairwise and
ΔNDCG-weighted pairwise losses with their main links and the twins that isolate selectivity,
next to LightGBM ``lambdarank`` / ``rank_xendcg`` and XGBoost ``rank:ndcg`` /
``rank:pairwise`` — with the same trees, early stopping and features, chooses one on
validation only with a written rule, and compares it on test with the best built-in
(per-query paired differences, bootstrap CI, paired test, Holm, verdict). It returns a
:class:`SelectionReport` (text, Markdown, LaTeX, JSON, HTML with plots; the chosen model
saved or exported). Regression and dwell time (``task="regression"``) run the same protocol
with squared error, Huber, the capped SmeLU of a band and the libraries' regression
objectives. ``selrank select`` is the command line.

Examples
--------
>>> from selrank.selection import CANDIDATES
>>> sorted(c for c in CANDIDATES if CANDIDATES[c].builtin)
['lambdarank', 'rank:ndcg', 'rank:pairwise', 'rank_xendcg']
"""

from __future__ import annotations

from ._candidates import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    DEFAULT_REGRESSION_CANDIDATES,
    REGRESSION_CANDIDATES,
    Candidate,
    FitResult,
    TrainSettings,
    register_candidate,
)
from ._clicks import simulate_clicks
from ._command import add_select_command, run_select
from ._data import PACKAGED, Part
from ._report import CandidateResult, Comparison, SelectionReport
from ._select import select

__all__ = [
    "select",
    "SelectionReport",
    "CandidateResult",
    "Comparison",
    "Candidate",
    "FitResult",
    "TrainSettings",
    "Part",
    "CANDIDATES",
    "REGRESSION_CANDIDATES",
    "DEFAULT_CANDIDATES",
    "DEFAULT_REGRESSION_CANDIDATES",
    "PACKAGED",
    "register_candidate",
    "simulate_clicks",
    "add_select_command",
    "run_select",
]
