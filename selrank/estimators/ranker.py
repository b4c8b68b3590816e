"""SelectiveRanker: learning to rank with a selective matching loss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .._array import Array
from .._groups import Groups
from ..gbdt import DEFAULT_HESSIAN_FLOOR
from ..losses import Loss
from ._validation import (
    _as_float_labels,
    _as_group,
    _as_query_or_row_weight,
    refuse_dask,
    refuse_ungrouped_scoring,
)
from .base import RANKER_LOSS_DEFAULTS, _SelectiveEstimator, lightgbm_fit_options

#: Mean documents per query from which ``loss="pairwise"`` (without ``pair_method``) uses
#: ``pair_method="topk"`` (k = 32) instead of all pairs (see ``SelectiveRanker``).
PAIRWISE_TOPK_FROM = 200


class SelectiveRanker(_SelectiveEstimator):
    r"""Learning to rank with a selective matching loss (LightGBM, XGBoost or a torch network).

    Parameters
    ----------
    loss : str or Loss, default "listwise"
        ``"listwise"`` (composite softmax over each query), ``"pairwise"``, ``"pointwise"``,
        or a :class:`~selrank.losses.Loss`. ``"pairwise"`` walks all pairs of each query
        when queries hold fewer than 200 documents on average (:data:`PAIRWISE_TOPK_FROM`)
        and the pairs of the current top 32 (``pair_method="topk"``) on longer lists, where
        all pairs cost O(n²) (about 1.9× a ``lambdarank`` fit at 1,000 documents per query);
        set ``loss_params={"pair_method": "all"}`` to keep all pairs (GBDT backends).
    link, scaling : str or object, optional
        The link (pointwise, pairwise) or scaling (listwise) by name or object; ``None``
        keeps the loss's default (``scaling="exp"``, ``Sinh(cap=3)``, ``link="exp"``).
    target : {"score", "link"}, optional
        Space of the targets (default: the loss's, ``"score"``).
    loss_params : dict, optional
        Further loss / link / scaling parameters (``alpha``, ``beta``, ``gamma``, ``cap``,
        ``pairs``, ...). Unless given, the listwise loss uses ``gamma=4``
        (:data:`RANKER_LOSS_DEFAULTS`).
    label_scale : float or "auto", default "auto"
        Target scores are ``label_scale * label``. ``"auto"`` divides by the largest training
        label: ``0.5 / max|y|`` (0.25 for LETOR grades 0-2, the scale chosen on them), so a
        monotone relabelling to a wider range (click counts 0-31, scores 0-100) neither
        saturates nor collapses the fit; the value used is ``label_scale_``.
    hessian : {"floor", "exact", "upper", "constant"}
        Hessian policy (:class:`selrank.gbdt.GBDTObjective`).
    hessian_floor : float
        Floor as a fraction of the loss's reference Hessian.
    backend : {"lightgbm", "xgboost", "torch"}
    n_estimators : int, optional
        Boosting rounds (default 1000 with an ``eval_set`` and early stopping, else 300).
    learning_rate : float, optional
        Default 0.05 for the GBDT backends; ``backend="torch"`` uses NeuralRanker's default.
    early_stopping_rounds : int, optional
        Rounds without improvement of NDCG@``eval_at`` on the first ``eval_set`` before
        stopping (default 50; 0 disables).
    eval_at : int or sequence of int
        Cut-off ``k`` of NDCG@k for early stopping (the first one).
    random_state : int, numpy RandomState / Generator, optional
        As in scikit-learn: an int seeds every fit alike; a ``RandomState`` gives one seed per
        fit drawn from it.
    verbose : bool or int
        ``True`` or a positive number logs training; ``False``, 0 and negative numbers
        (LightGBM's ``verbose=-1``) are silent.
    importance_type : {None, "split", "gain"}, optional
        What ``feature_importances_`` holds: ``None`` the normalised total gain; ``"split"``
        / ``"gain"`` as LightGBM means them (split counts, or total gain, not normalised).
    **backend_params
        Passed to the backend unchanged: LightGBM / XGBoost parameters (``num_leaves``,
        ``min_data_in_leaf``, ``max_depth``, ``device="cuda"``, ...) or NeuralRanker's
        (``hidden_layers``, ``epochs``, ``batch_queries``, ``device``, ...).

    Attributes
    ----------
    booster_ : lightgbm.Booster or xgboost.Booster
    model_ : selrank.estimators.NeuralRanker
        (``backend="torch"``)
    loss_ : Loss
    objective_ : LightGBMObjective or XGBoostObjective
    intercept_ : float
        The optimal constant training started from (included in predictions).
    best_iteration_ : int or None
        Rounds kept by early stopping.
    evals_result_ : dict
        Metric history on the eval sets.
    n_features_in_ : int
    """

    kind = "ranker"
    _EXPECTED_FAILED_CHECKS = {
        **_SelectiveEstimator._EXPECTED_FAILED_CHECKS,
        "check_fit_score_takes_y": (
            "score(X, y) without qid/group is refused: a ranking score never ranks all rows "
            "as one list (issue 18); the check passes no query ids"
        ),
        "check_pipeline_consistency": (
            "compares score(X, y) without qid/group, which a ranker refuses (issue 18)"
        ),
    }
    _default_loss = "listwise"
    _loss_defaults = RANKER_LOSS_DEFAULTS

    def __init__(
        self,
        loss: Loss | str = "listwise",
        *,
        link: Any = None,
        scaling: Any = None,
        target: str | None = None,
        loss_params: dict[str, Any] | None = None,
        label_scale: float | str = "auto",
        hessian: str = "floor",
        hessian_floor: float = DEFAULT_HESSIAN_FLOOR,
        backend: str = "lightgbm",
        n_estimators: int | None = None,
        learning_rate: float | None = None,
        early_stopping_rounds: int | None = None,
        eval_at: int | Sequence[int] = 10,
        random_state: int | None = None,
        verbose: bool = False,
        importance_type: str | None = None,
        **backend_params: Any,
    ) -> None:
        super().__init__(
            loss,
            link=link,
            scaling=scaling,
            target=target,
            loss_params=loss_params,
            label_scale=label_scale,
            hessian=hessian,
            hessian_floor=hessian_floor,
            backend=backend,
            n_estimators=n_estimators,
            learning_rate=learning_rate,
            early_stopping_rounds=early_stopping_rounds,
            eval_at=eval_at,
            random_state=random_state,
            verbose=verbose,
            importance_type=importance_type,
            **backend_params,
        )

    def _loss_arguments(self) -> dict[str, Any]:
        params = super()._loss_arguments()
        if isinstance(self.loss, str) and self.loss.lower() == "weighted_pairwise":
            # the |delta NDCG| gains 2**label - 1 of the unscaled labels (built in fit, after
            # label_scale_ is resolved)
            params.setdefault("gain_scale", float(self.label_scale_))
        return params

    def fit(
        self,
        X: Array,
        y: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
        eval_set: Any = None,
        eval_group: Any = None,
        eval_qid: Any = None,
        eval_sample_weight: Any = None,
        callbacks: Sequence[Any] | None = None,
        init_model: Any = None,
        eval_names: Sequence[str] | None = None,
        eval_metric: Any = None,
        init_score: Array | None = None,
        eval_init_score: Any = None,
        feature_name: Any = "auto",
        categorical_feature: Any = "auto",
    ) -> SelectiveRanker:
        """Fit on rows ``X`` with graded labels ``y`` partitioned into queries by ``group`` or ``qid``.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            A NumPy array, scipy sparse matrix, or a pandas / polars DataFrame (column names
            are kept as ``feature_names_in_`` and must match at prediction; pandas
            Categorical columns are categorical features).
        y : array-like of shape (n_rows,)
            Relevance labels (or teacher scores).
        group : array-like of int, optional
            Query sizes, adding up to ``n_rows`` (LightGBM's ``group``); ``[1] * n`` is
            ``n`` one-row queries. With neither ``group`` nor ``qid`` all rows are one
            query, with a warning.
        qid : array-like, optional
            One query id per row instead (XGBoost's ``qid``), each query's rows contiguous.
            Give ``group`` or ``qid``; ``qid`` is the one scikit-learn's cross-validation
            can route and split (``docs/estimators.md``).
        sample_weight : array-like of shape (n_rows,) or (n_queries,), optional
            Per-row weights (a query's loss is weighted by the mean of its rows' weights) or,
            as XGBoost's rankers take them, one weight per query.
        eval_set : list of (X, y), optional
            Validation data; the first drives early stopping on NDCG@``eval_at``. Its
            labels, groups and weights are checked before boosting starts.
        eval_group, eval_qid : list of arrays
            Query sizes or per-row ids, one per ``eval_set`` item.
        eval_sample_weight : list, optional
        callbacks : list, optional
            Training callbacks of the GBDT backend, as in ``LGBMRanker.fit``:
            ``[lightgbm.early_stopping(20), lightgbm.log_evaluation(10)]`` (a LightGBM early
            stopping callback replaces the built-in one) or XGBoost ``TrainingCallback``
            objects.
        init_model : SelectiveRanker or lightgbm.Booster, optional
            Continue training from this model (LightGBM's ``init_model``; backend
            ``"lightgbm"``): the new trees start from its predictions, intercept included, and
            the fitted model predicts with both (``intercept_`` is then 0: the old intercept
            is in the first tree's leaves). A path is read as a LightGBM model file, as
            LightGBM's ``init_model`` is.
        eval_names, eval_metric, init_score, eval_init_score, feature_name, categorical_feature
            LightGBM's ``fit`` options, as ``LGBMRanker.fit`` takes them (backend
            ``"lightgbm"`` only): names of the eval sets in ``evals_result_`` and
            ``best_score_``; further metrics recorded on the eval sets (LightGBM metric names
            and/or callables ``f(y_true, y_pred[, weight[, group]]) -> (name, value,
            higher_is_better)``; early stopping stays on NDCG@``eval_at``); training start
            scores (training then starts from them instead of the intercept, which is 0, and
            predictions exclude them, as in LightGBM); feature names; categorical columns by
            index or name. ``docs/estimators.md``, "LightGBM's fit conventions".

        Returns
        -------
        self
        """
        self._check_config()
        refuse_dask(
            f"{type(self).__name__}.fit",
            X=X,
            y=y,
            group=group,
            qid=qid,
            sample_weight=sample_weight,
            eval_set=eval_set,
            eval_group=eval_group,
            eval_qid=eval_qid,
            eval_sample_weight=eval_sample_weight,
        )
        feats = self._features(X, reset=True)
        n = feats.n_rows
        y = _as_float_labels(y, n)
        groups = cast(Groups, _as_group(group, n, qid=qid, required="warn"))  # "warn": never None
        self._resolve_label_scale(y)
        w = _as_query_or_row_weight(sample_weight, groups)
        eval_sets = self._eval_sets(
            eval_set,
            eval_group=eval_group,
            eval_qid=eval_qid,
            eval_sample_weight=eval_sample_weight,
            labels=_as_float_labels,
            groups_needed=True,
            groups_required=True,
        )
        loss = self._build_loss()
        if self._backend().topk_pairs_on_long_lists:
            loss = self._pairs_for_list_length(loss, groups)
        # straight to the backend (config checked above): one frame fewer to the link
        self._backend().fit(
            self,
            feats,
            y,
            group=groups,
            sample_weight=w,
            eval_sets=eval_sets,
            loss=loss,
            n_classes=None,
            metric="ndcg",
            callbacks=callbacks,
            init_model=init_model,
            options=lightgbm_fit_options(
                eval_names=eval_names,
                eval_metric=eval_metric,
                init_score=init_score,
                eval_init_score=eval_init_score,
                feature_name=feature_name,
                categorical_feature=categorical_feature,
            ),
        )
        return self

    def _pairs_for_list_length(self, loss: Loss, groups: Groups) -> Loss:
        """``loss="pairwise"`` without a ``pair_method``: top-k pairs on long lists.

        All pairs cost O(n²) per query: at 1,000 documents per query the objective alone
        costs about one LightGBM ``lambdarank`` round, at 4,000 four; top-k (k = 32) costs
        0.13× at both, and on MQ2008 (top-k, k = 10) it is at parity with all pairs
        (``docs/gbdt.md``, "Deep lists"). Below :data:`PAIRWISE_TOPK_FROM` documents per
        query on average top-k saves nothing (it ranks each query every round), so all
        pairs stay the default there.
        """
        if not (isinstance(self.loss, str) and self.loss.lower() == "pairwise"):
            return loss
        if "pair_method" in (self.loss_params or {}) or getattr(loss, "pair_method", None) != "all":
            return loss
        mean_size = groups.n_rows / max(groups.n_groups, 1)
        if mean_size < PAIRWISE_TOPK_FROM:
            return loss
        params = {**loss.get_params(), "pair_method": "topk"}
        params.pop("num_pair_per_sample", None)
        return type(loss)(**params)

    def predict(self, X: Array) -> np.ndarray:
        """Ranking scores (higher ranks first), intercept included."""
        return self.decision_function(X)

    def score(
        self,
        X: Array,
        y: Array,
        *,
        group: Array | None = None,
        qid: Array | None = None,
        sample_weight: Array | None = None,
    ) -> float:
        """Mean NDCG@k (the first ``eval_at``) of the predictions; exponential gain, ties averaged.

        ``group`` (query sizes) or ``qid`` (per-row ids) as in :meth:`fit`; without them the
        score is refused (it never ranks all rows as one list). In scikit-learn
        cross-validation route ``qid`` to it: ``est.set_score_request(qid=True)`` (or use
        :func:`selrank.estimators.ndcg_scorer`).
        """
        from ..metrics import ndcg

        self._check_fitted()
        scores = self.predict(X)  # checks X first (width and columns as in fit)
        n = scores.shape[0]
        y = _as_float_labels(y, n)
        if group is None and qid is None:
            refuse_ungrouped_scoring(f"{type(self).__name__}.score", n)
        groups = _as_group(group, n, qid=qid)
        return float(ndcg(y, scores, groups, k=self.eval_ks()[0]))


def ndcg_scorer(k: int | None = 10, **ndcg_options: Any) -> Any:
    """A scikit-learn scorer of mean NDCG@k that takes the query ids as ``qid`` (metadata routing).

    For ``cross_val_score`` / ``GridSearchCV`` on ranking data: with
    ``sklearn.set_config(enable_metadata_routing=True)``, pass ``params={"qid": qid,
    "groups": qid}`` (the estimator's ``set_fit_request(qid=True)``, a ``GroupKFold`` on the
    same ids). The scorer requests ``qid`` itself; called without ``qid`` (routing not
    enabled, or ``params`` without ``qid``) it raises instead of ranking the fold as one list.

    Parameters
    ----------
    k : int or None
        The cut-off.
    **ndcg_options
        Passed to :func:`selrank.metrics.ndcg` (``gain``, ``ties``, ``no_relevant``).

    Examples
    --------
    >>> import numpy as np, sklearn
    >>> from sklearn.model_selection import GroupKFold, cross_val_score
    >>> from selrank import SelectiveRanker
    >>> from selrank.estimators import ndcg_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    >>> qid = np.repeat(np.arange(15), 20)
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     est = SelectiveRanker(n_estimators=5).set_fit_request(qid=True)
    ...     scores = cross_val_score(est, X, y, cv=GroupKFold(3), scoring=ndcg_scorer(k=5),
    ...                              params={"qid": qid, "groups": qid})
    >>> scores.shape
    (3,)
    """
    from sklearn import config_context
    from sklearn.metrics import make_scorer

    from ..metrics import ndcg

    def ndcg_at_k(y_true, y_score, *, qid=None, group=None):
        if qid is None and group is None:
            refuse_ungrouped_scoring(f"ndcg_scorer(k={k})", len(y_true))
        return float(ndcg(y_true, y_score, group, qid=qid, k=k, **ndcg_options))

    scorer = make_scorer(ndcg_at_k, greater_is_better=True)
    with config_context(enable_metadata_routing=True):
        return scorer.set_score_request(qid=True)
