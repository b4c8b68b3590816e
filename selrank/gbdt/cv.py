r"""Cross-validation of a selrank objective whose folds never cut a query.

:func:`lightgbm.cv` splits rows with ``KFold`` unless the objective is one of LightGBM's own
ranking objectives: with a custom (selrank) objective it cuts queries, so a query's documents
land in both the training and the held-out part and the scores are optimistic (NDCG@10 0.898
instead of 0.755 with query-grouped folds on MQ2008). :func:`cv` builds folds of whole queries
(or checks the folds it is given) and then runs :func:`lightgbm.cv`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._lightgbm import LightGBMObjective, _group_of, _n_rows, import_lightgbm

if TYPE_CHECKING:
    import lightgbm as lgb

__all__ = ["cv", "query_folds", "check_folds"]


def _row_queries(train_set) -> np.ndarray:
    """Query index of each row (each row its own unit when the data set has no groups)."""
    sizes = _group_of(train_set)
    n = _n_rows(train_set)
    if sizes is None or np.size(sizes) == 0:
        return np.arange(n)
    return np.repeat(np.arange(np.size(sizes)), np.asarray(sizes, dtype=np.int64))


def query_folds(
    row_query: np.ndarray, nfold: int = 5, *, shuffle: bool = True, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``nfold`` (train rows, test rows) pairs; each query's rows fall in one test fold.

    Queries are dealt to the folds (shuffled with ``seed`` when ``shuffle``), so fold sizes
    differ by at most one query.
    """
    if isinstance(nfold, bool) or not isinstance(nfold, int | np.integer) or nfold < 2:
        raise ValueError(f"`nfold` must be an int >= 2; got {nfold!r}")
    queries = np.unique(row_query)
    if queries.size < nfold:
        raise ValueError(f"{queries.size} queries cannot fill {nfold} folds of whole queries")
    if shuffle:
        queries = np.random.default_rng(seed).permutation(queries)
    fold_of = np.empty(int(row_query.max()) + 1, dtype=np.int64)
    fold_of[queries] = np.arange(queries.size) % nfold
    row_fold = fold_of[row_query]
    rows = np.arange(row_query.size)
    return [(rows[row_fold != k], rows[row_fold == k]) for k in range(nfold)]


def check_folds(folds: Any, row_query: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The folds as index pairs; ``ValueError`` naming the first fold and query that a fold cuts."""
    out = []
    for k, (train, test) in enumerate(folds):
        train, test = np.asarray(train, dtype=np.int64), np.asarray(test, dtype=np.int64)
        both = np.intersect1d(row_query[train], row_query[test])
        if both.size:
            raise ValueError(
                f"fold {k} cuts {both.size} queries (query {int(both[0])} has rows on both sides): a query's "
                "documents would be trained on and scored; use whole-query folds (selrank.gbdt.cv's default, or "
                "sklearn.model_selection.GroupKFold with the query index as groups)"
            )
        out.append((train, test))
    return out


def cv(
    params: dict[str, Any],
    train_set: lgb.Dataset,
    num_boost_round: int = 100,
    *,
    nfold: int = 5,
    folds: Any = None,
    shuffle: bool = True,
    seed: int = 0,
    **kwargs: Any,
) -> dict[str, list[float]]:
    """:func:`lightgbm.cv` with a selrank objective, on folds of whole queries.

    Parameters
    ----------
    params : dict
        LightGBM parameters with ``params["objective"]`` a
        :class:`~selrank.gbdt.LightGBMObjective`; LightGBM's own metrics work as usual
        (``"metric": "ndcg", "eval_at": [10]``).
    train_set : lightgbm.Dataset
        The data, with query sizes (``group``) for group losses.
    num_boost_round : int
    nfold : int
        Number of folds built when ``folds`` is not given.
    folds : splitter or iterable of (train_idx, test_idx), optional
        Folds to use instead: a scikit-learn splitter (its ``split`` gets the query index of
        each row as ``groups``: use ``GroupKFold``) or index pairs. Folds that cut a query
        are refused.
    shuffle, seed
        Order in which queries are dealt to the built folds.
    **kwargs
        Passed to :func:`lightgbm.cv` (``callbacks``, ``return_cvbooster``, ``feval``, ...).

    Returns
    -------
    dict
        :func:`lightgbm.cv`'s result.

    Notes
    -----
    Training starts from the optimal constant of the whole ``train_set`` (its init score is
    set once; each fold's training part then starts from that constant, a one-number summary
    of the labels).

    Examples
    --------
    >>> import numpy as np, lightgbm as lgb
    >>> from selrank.gbdt import cv, lightgbm_objective
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 3)); y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    >>> obj = lightgbm_objective("listwise")
    >>> res = cv({"objective": obj, "metric": "ndcg", "eval_at": [5], "verbose": -1},
    ...          lgb.Dataset(X, y, group=[20] * 20), 5, nfold=4)
    >>> len(res["valid ndcg@5-mean"])
    5
    """
    lgb = import_lightgbm()
    obj = params.get("objective")
    if not isinstance(obj, LightGBMObjective):
        raise TypeError(
            "selrank.gbdt.cv needs params['objective'] to be a selrank LightGBMObjective "
            f"(lightgbm_objective(...)); got {type(obj).__name__}"
        )
    if "nfold" in kwargs or "stratified" in kwargs:
        raise ValueError(
            "give `nfold` as a keyword of selrank.gbdt.cv; stratified folds would cut queries"
        )
    row_query = _row_queries(train_set)
    if folds is None:
        folds = query_folds(row_query, nfold, shuffle=shuffle, seed=seed)
    else:
        if hasattr(folds, "split"):
            folds = folds.split(np.empty((row_query.size, 1)), groups=row_query)
        folds = check_folds(folds, row_query)
    obj.set_init_score(train_set)
    return lgb.cv(dict(params), train_set, num_boost_round, folds=folds, stratified=False, **kwargs)
