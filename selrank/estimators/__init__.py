r"""scikit-learn style estimators over the GBDT adapters (and the torch head).

:class:`SelectiveRanker`, :class:`SelectiveRegressor` and :class:`SelectiveClassifier`
train LightGBM (default) or XGBoost with a selective matching loss, starting from the loss's
optimal constant; ``SelectiveRanker(backend="torch")`` trains
:class:`~selrank.estimators.NeuralRanker` (:mod:`selrank.estimators.neural`, also importable
as ``selrank.NeuralRanker``) with the same loss. They follow scikit-learn's
conventions: ``__init__`` only stores parameters (backend parameters pass through as extra
keyword arguments, as in LightGBM's own estimators), ``get_params`` / ``set_params`` /
:func:`sklearn.base.clone` work, fitted attributes end in ``_`` and ``fit`` returns ``self``.

Losses are chosen by name or object: ``loss="listwise"`` with ``scaling="exp"``,
``loss="pointwise"`` with ``link="sigmoid"``, ``target="link"``, and any further loss, link or
scaling parameter in ``loss_params`` (``{"alpha": 0.5, "gamma": 2.0}``). Labels become target
scores ``label_scale * label`` for losses whose targets are scores.

Queries are given as sizes (``group=``, as LightGBM) or per-row ids (``qid=``, as XGBoost),
never guessed; :func:`ndcg_scorer` and ``set_fit_request(qid=True)`` route them through
scikit-learn's cross-validation. Data frames keep their column names
(``feature_names_in_``). Defaults (``docs/estimators.md`` explains how they were chosen on
the LETOR validation splits): the ranker uses the listwise composite softmax with the
exponential scaling.

Examples
--------
>>> import numpy as np
>>> from selrank import SelectiveRanker
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 5)); group = np.full(20, 30)
>>> y = np.clip(np.round(X[:, 0] + 0.3 * rng.normal(size=600) + 1), 0, 3)
>>> ranker = SelectiveRanker(n_estimators=20).fit(X, y, group=group)
>>> ranker.predict(X[:3]).shape
(3,)
"""

from __future__ import annotations

from typing import Any

from .base import BACKENDS, GBDT_DEFAULTS, RANKER_LABEL_SCALE, RANKER_LOSS_DEFAULTS
from .classifier import SelectiveClassifier
from .export import EXPORT_FORMATS, export_model
from .persistence import load
from .ranker import SelectiveRanker, ndcg_scorer
from .regressor import SelectiveRegressor

__all__ = [
    "SelectiveRanker",
    "SelectiveRegressor",
    "SelectiveClassifier",
    "NeuralRanker",
    "BACKENDS",
    "GBDT_DEFAULTS",
    "RANKER_LABEL_SCALE",
    "RANKER_LOSS_DEFAULTS",
    "load",
    "export_model",
    "EXPORT_FORMATS",
    "ndcg_scorer",
]

# NeuralRanker needs torch; imported on first use so that the GBDT estimators do not.
_LAZY = {"NeuralRanker": "selrank.estimators.neural", "MLPScorer": "selrank.estimators.neural"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'selrank.estimators' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
