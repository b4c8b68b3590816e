"""The training libraries under the estimators, one :class:`Backend` object each.

An estimator's ``backend=`` names one of :data:`BACKENDS`; :func:`get_backend` gives its
object, through which the estimator builds its datasets, trains, predicts, stores its model in
the estimator's file and exports it (``docs/architecture.md``, "The backend seam"):

==============  ================================  ==========================================
name            class                             trains
==============  ================================  ==========================================
``"lightgbm"``  :class:`LightGBMBackend`          every estimator (default); ``init_model``
``"xgboost"``   :class:`XGBoostBackend`           every estimator
``"torch"``     :class:`TorchBackend`             ``SelectiveRanker`` (a ``NeuralRanker``)
==============  ================================  ==========================================

Examples
--------
>>> from selrank.estimators.backends import get_backend
>>> get_backend("lightgbm")
LightGBMBackend()
>>> get_backend("torch").kinds
('ranker',)
"""

from __future__ import annotations

from ._backend import Backend
from ._gbdt_backend import GBDT_DEFAULTS, GBDTBackend, ndcg_metric
from ._lightgbm_backend import LightGBMBackend
from ._torch_backend import TorchBackend
from ._xgboost_backend import XGBoostBackend

__all__ = [
    "Backend",
    "GBDTBackend",
    "LightGBMBackend",
    "XGBoostBackend",
    "TorchBackend",
    "BACKENDS",
    "GBDT_DEFAULTS",
    "get_backend",
    "ndcg_metric",
]

_REGISTRY: dict[str, Backend] = {
    b.name: b for b in (LightGBMBackend(), XGBoostBackend(), TorchBackend())
}

#: Names of the estimators' backends (``backend=``).
BACKENDS = tuple(_REGISTRY)


def get_backend(name: str) -> Backend:
    """The backend object of ``name`` (one of :data:`BACKENDS`)."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"`backend` must be one of {BACKENDS}; got {name!r}") from None
