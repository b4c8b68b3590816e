r"""Gradient-boosting objectives: selrank losses for LightGBM and XGBoost.

:func:`lightgbm_objective` and :func:`xgboost_objective` turn any core loss into a custom
objective. The gradient and Hessian diagonal are the core loss's
(:meth:`~selrank.losses.BoundLoss.grad_hess`); the adapters add group plumbing (LightGBM's
query sizes, XGBoost's ``group_ptr`` / ``qid``), multi-class layouts, the intercept (training
starts from the loss's optimal constant through ``init_score`` / ``base_margin``), a Hessian
policy (:data:`HESSIAN_POLICIES`) and validation of labels, weights and groups before the
first tree is built. Both adapters ``train`` (from the optimal constant), ``predict``,
``save_model`` and ``load_model`` the same way, and the intercept travels with the booster.
:func:`cv` cross-validates on folds of whole queries; :mod:`selrank.gbdt.dask` trains with
``xgboost.dask``.

Examples
--------
>>> import numpy as np, lightgbm as lgb
>>> from selrank.gbdt import lightgbm_objective
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 4)); y = rng.integers(0, 3, 300).astype(float)
>>> obj = lightgbm_objective("pairwise", pairs="distinct")
>>> train = obj.set_init_score(lgb.Dataset(X, y, group=[100, 100, 100]))
>>> booster = lgb.train({"objective": obj, "verbose": -1}, train, num_boost_round=3)
>>> booster.num_trees()
3
"""

from __future__ import annotations

from ._lightgbm import _MIN_ROWS_ALIASES as LIGHTGBM_MIN_DATA_ALIASES
from ._lightgbm import (
    LightGBMObjective,
    booster_with_intercept,
    import_lightgbm,
    lightgbm_objective,
)
from ._objective import (
    DEFAULT_HESSIAN_FLOOR,
    HESSIAN_POLICIES,
    NOMINAL_LEAF_ROWS,
    GBDTObjective,
)
from ._progress import lightgbm_progress, xgboost_progress
from ._xgboost import XGBoostObjective, import_xgboost, xgboost_objective
from .cv import cv

__all__ = [
    "GBDTObjective",
    "LightGBMObjective",
    "XGBoostObjective",
    "lightgbm_objective",
    "xgboost_objective",
    "cv",
    "HESSIAN_POLICIES",
    "DEFAULT_HESSIAN_FLOOR",
    "NOMINAL_LEAF_ROWS",
    # for the estimators' backends (selrank.estimators.backends)
    "LIGHTGBM_MIN_DATA_ALIASES",
    "booster_with_intercept",
    "import_lightgbm",
    "import_xgboost",
    "lightgbm_progress",
    "xgboost_progress",
]
