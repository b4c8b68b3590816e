r"""Distributed training with ``xgboost.dask`` and a selrank objective.

XGBoost's Dask interface calls a custom objective on every worker with the predictions and
the *local* DMatrix (the worker's partitions), so a group loss only sees the queries a worker
holds: each query must lie inside one partition. :func:`check_query_partitions` checks that
(one small task per partition, no loop over queries) and :func:`xgboost_dask_train` runs it
before training, computes the intercept and sets it as the base margin.

LightGBM's Dask estimators (``lightgbm.DaskLGBMRanker``, ``DaskLGBMRegressor``,
``DaskLGBMClassifier``) take the callable objective as it is: the estimator is pickled to
every worker, each worker concatenates its partitions and calls ``LGBMRanker.fit`` with its
local ``group`` in a LightGBM network (``tree_learner="data"``), and LightGBM >= 4.7 passes
that local ``group`` to the 4-argument objective. ``group`` must be partitioned like ``X``
(partition k's query sizes add up to partition k's rows), so a query never spans workers.
Two things go wrong silently or late without help: an objective not fitted on the client is
fitted by each worker on its own rows (different intercepts and Hessian floors per worker),
and misaligned ``group`` partitions fail inside a worker. :func:`lightgbm_dask_fit` checks the
partitions on the client, fits the intercept there and passes it as ``init_score``.

Examples
--------
>>> import numpy as np, dask.array as da
>>> from selrank.gbdt.dask import check_query_partitions
>>> check_query_partitions(da.from_array(np.array([0, 0, 1, 1, 2, 2]), chunks=2))
>>> check_query_partitions(da.from_array(np.array([0, 0, 0, 1]), chunks=2))
Traceback (most recent call last):
...
ValueError: query 0 spans partitions 0 and 1: keep each query inside one partition ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from ..losses import Loss
from ._xgboost import XGBoostObjective, import_xgboost

#: The Dask estimator :func:`lightgbm_dask_fit` fits and returns.
_Model = TypeVar("_Model", bound=Any)

__all__ = [
    "check_query_partitions",
    "check_group_partitions",
    "lightgbm_dask_fit",
    "xgboost_dask_train",
    "xgboost_dask_predict",
]


def _import_dask():
    try:
        import dask
        import dask.array
    except ImportError:
        raise ImportError(
            "distributed training requires dask: pip install 'selrank[dask]'"
        ) from None
    return dask


def _partitions(collection) -> list:
    parts = collection.to_delayed()
    return list(parts.ravel()) if isinstance(parts, np.ndarray) else list(parts)


def _summary(part) -> tuple[Any, Any, bool, int]:
    q = np.asarray(part.to_numpy() if hasattr(part, "to_numpy") else part).reshape(-1)
    if q.size == 0:
        return None, None, True, 0
    return q[0].item(), q[-1].item(), bool(np.all(q[1:] >= q[:-1])), int(q.size)


def check_query_partitions(qid: Any) -> None:
    """Raise ``ValueError`` unless every query lies inside one partition, in sorted order.

    Parameters
    ----------
    qid : dask array or dask Series
        One query id per row, partitioned like the features.

    Notes
    -----
    Query ids must be non-decreasing within and across partitions (what XGBoost requires of
    ``qid``); a query then lies inside one partition when no partition starts with the id
    the previous non-empty partition ended with.
    """
    dask = _import_dask()
    summaries = dask.compute(*[dask.delayed(_summary)(p) for p in _partitions(qid)])
    prev_last, prev_k = None, None
    for k, (first, last, ordered, size) in enumerate(summaries):  # one entry per partition
        if size == 0:
            continue
        if not ordered:
            raise ValueError(
                f"query ids of partition {k} are not sorted: sort the rows by query id (XGBoost needs qid "
                "non-decreasing) before partitioning"
            )
        if prev_last is not None:
            if first == prev_last:
                raise ValueError(
                    f"query {first!r} spans partitions {prev_k} and {k}: keep each query inside one partition "
                    "(repartition on query boundaries, e.g. dask.dataframe set_index('qid') with divisions)"
                )
            if first < prev_last:
                raise ValueError(
                    f"query ids are not sorted across partitions: partition {k} starts with {first!r} after "
                    f"partition {prev_k} ended with {prev_last!r}"
                )
        prev_last, prev_k = last, k


def _full_like(y, value: np.ndarray):
    """A Dask collection partitioned like ``y`` holding ``value`` on every row."""
    import dask.array as da

    if value.ndim == 0:
        return y * 0.0 + float(value)
    if not isinstance(y, da.Array):
        y = y.to_dask_array(lengths=True)
    k = value.size
    return y.map_blocks(
        lambda b: np.tile(value, (len(b), 1)),
        dtype=np.float64,
        new_axis=1,
        chunks=(y.chunks[0], (k,)),
    )


def xgboost_dask_train(
    client: Any,
    objective: XGBoostObjective | Loss | str,
    params: dict,
    X: Any,
    y: Any,
    *,
    qid: Any = None,
    sample_weight: Any = None,
    num_boost_round: int = 10,
    evals: Sequence[tuple[Any, ...]] = (),
    **train_kwargs: Any,
) -> dict:
    """Train with ``xgboost.dask.train`` and a selrank objective; returns its ``{"booster", "history"}``.

    Parameters
    ----------
    client : dask.distributed.Client
    objective : XGBoostObjective, Loss or str
        The objective (a loss or name is wrapped with :func:`~selrank.gbdt.xgboost_objective`).
    params : dict
        XGBoost parameters.
    X, y : dask array or dask DataFrame / Series
    qid : dask array or Series, optional
        Query ids (needed by group losses), partitioned like ``X``; checked with
        :func:`check_query_partitions` before training.
    sample_weight : optional
        Row weights (XGBoost's Dask interface has no per-query weights: not with ``qid``).
    evals : sequence of ``(X, y, qid, name)``
        Evaluation data, given as collections; base margins are set to the intercept.
    **train_kwargs
        Passed to :func:`xgboost.dask.train` (``early_stopping_rounds``, ``custom_metric``, ...).

    Notes
    -----
    The intercept (the loss's optimal constant) is computed on the client from ``y`` and
    ``qid`` (one pass over the labels) and set as every partition's base margin.
    """
    import_xgboost()
    from xgboost import dask as dxgb

    obj = objective if isinstance(objective, XGBoostObjective) else XGBoostObjective(objective)
    if obj.structure == "group":
        if qid is None:
            raise ValueError(f"the {obj.loss.name} loss needs query ids: pass qid=")
        check_query_partitions(qid)
    y_local = np.asarray(y.compute()).astype(np.float64)
    q_local = None if qid is None else np.asarray(qid.compute())
    w_local = None if sample_weight is None else np.asarray(sample_weight.compute())
    n_classes = (
        int(params["num_class"])
        if obj.structure == "multiclass" and "num_class" in params
        else None
    )
    obj.fit_intercept(y_local, qid=q_local, sample_weight=w_local, n_classes=n_classes)
    c = np.asarray(obj.intercept_)
    dtrain = dxgb.DaskDMatrix(
        client, X, y, qid=qid, weight=sample_weight, base_margin=_full_like(y, c)
    )
    dev = []
    for ex, ey, eq, name in evals:
        dev.append((dxgb.DaskDMatrix(client, ex, ey, qid=eq, base_margin=_full_like(ey, c)), name))
    out = dxgb.train(
        client, params, dtrain, num_boost_round=num_boost_round, evals=dev, obj=obj, **train_kwargs
    )
    obj.adopt_booster(out["booster"], obj.intercept_)  # the booster keeps its intercept
    return out


def xgboost_dask_predict(
    client: Any, objective: XGBoostObjective, booster: Any, X: Any, y_like: Any = None
) -> Any:
    """Scores (intercept included) of a booster trained by :func:`xgboost_dask_train`, as a Dask collection.

    ``y_like`` is any collection partitioned like ``X`` with one entry per row (default: the
    first column of ``X``), used to lay out the base margins.
    """
    from xgboost import dask as dxgb

    if objective.intercept_ is None:
        raise ValueError("the objective has no intercept: train it with xgboost_dask_train first")
    c = np.asarray(objective.intercept_)
    if y_like is None:
        y_like = X[:, 0] if hasattr(X, "ndim") and not hasattr(X, "columns") else X.iloc[:, 0]
    data = dxgb.DaskDMatrix(client, X, base_margin=_full_like(y_like, c))
    return dxgb.predict(client, booster, data, output_margin=True)


def _rows_per_partition(collection) -> list[int]:
    dask = _import_dask()
    if hasattr(collection, "chunks") and collection.chunks is not None:
        return [int(c) for c in collection.chunks[0]]
    parts = _partitions(collection)
    return [int(n) for n in dask.compute(*[dask.delayed(len)(p) for p in parts])]


def _group_total(part) -> int:
    g = np.asarray(part.to_numpy() if hasattr(part, "to_numpy") else part)
    return int(g.sum())


def check_group_partitions(X: Any, group: Any) -> None:
    """Raise ``ValueError`` unless ``group`` is partitioned like ``X`` (LightGBM's Dask rule).

    ``DaskLGBMRanker`` pairs partition k of ``group`` with partition k of ``X``: the query
    sizes of each group partition must add up to the rows of the matching data partition.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> X = da.zeros((40, 2), chunks=(20, 2))
    >>> check_group_partitions(X, da.from_array(np.full(4, 10), chunks=2))
    >>> check_group_partitions(X, da.from_array(np.full(4, 10), chunks=3))
    Traceback (most recent call last):
    ...
    ValueError: group is not partitioned like X: ...
    """
    dask = _import_dask()
    rows = _rows_per_partition(X)
    totals = list(dask.compute(*[dask.delayed(_group_total)(p) for p in _partitions(group)]))
    if len(rows) != len(totals):
        raise ValueError(
            f"group is not partitioned like X: X has {len(rows)} partitions, group has {len(totals)}; "
            "give group one partition per data partition, holding the sizes of the queries in it"
        )
    for k, (n, t) in enumerate(zip(rows, totals)):
        if n != t:
            raise ValueError(
                f"group is not partitioned like X: partition {k} of group adds up to {t} rows but "
                f"partition {k} of X has {n} rows; cut X at query boundaries and give group one "
                "partition per data partition, holding the sizes of the queries in it"
            )


def lightgbm_dask_fit(
    model: _Model,
    X: Any,
    y: Any,
    *,
    group: Any = None,
    sample_weight: Any = None,
    **fit_kwargs: Any,
) -> _Model:
    """Fit a LightGBM Dask estimator whose ``objective`` is a selrank LightGBM objective.

    Checks ``group`` against the partitions of ``X`` (:func:`check_group_partitions`), fits
    the objective's intercept on the client from ``y`` and ``group`` (one pass over the
    labels; every worker then gets the same intercept and Hessian floor with the pickled
    objective) and passes it as ``init_score`` partitioned like ``y``. Returns ``model``;
    scores are ``model.predict(X, raw_score=True) + model.objective.intercept_``.

    Parameters
    ----------
    model : lightgbm.DaskLGBMRanker, DaskLGBMRegressor or DaskLGBMClassifier
        Built with ``objective=lightgbm_objective(...)``.
    X, y : dask array or dask DataFrame / Series
    group : dask array or Series, optional
        Query sizes, one partition per partition of ``X`` (needed by group losses).
    sample_weight : optional
        Row weights, partitioned like ``X``.
    **fit_kwargs
        Passed to ``model.fit`` (``eval_set``, ``eval_group``, ...).
    """
    from ._lightgbm import LightGBMObjective

    obj = model.objective  # get_params() would hand back a copy
    if not isinstance(obj, LightGBMObjective):
        raise TypeError(
            "lightgbm_dask_fit() needs a model built with objective=lightgbm_objective(...); "
            f"got objective={obj!r}"
        )
    if obj.structure == "group":
        if group is None:
            raise ValueError(f"the {obj.loss.name} loss needs query sizes: pass group=")
    if group is not None:
        check_group_partitions(X, group)
    y_local = np.asarray(y.compute()).astype(np.float64)
    obj.fit_intercept(
        y_local,
        group=None if group is None else np.asarray(group.compute()),
        sample_weight=None if sample_weight is None else np.asarray(sample_weight.compute()),
        n_classes=int(np.max(y_local)) + 1 if obj.structure == "multiclass" else None,
    )
    c = np.asarray(obj.intercept_)
    if group is not None:
        fit_kwargs["group"] = group
    model.fit(X, y, sample_weight=sample_weight, init_score=_full_like(y, c), **fit_kwargs)
    return model
