"""A scikit-learn style neural ranker: an MLP scorer trained with any head.

(:mod:`selrank` re-exports it; ``selrank.torch.NeuralRanker``, the 0.2 alias, was removed in 0.3.)

:class:`NeuralRanker` takes LETOR-style data — a feature matrix, one label per row and the
query groups (sizes as ``group=`` or per-row ids as ``qid=``) — batches whole queries into padded ``[batch, list]``
tensors and trains an :class:`MLPScorer` with any head of :func:`selrank.torch.get_head`
(a selective head, a torch baseline or a core loss). ``eval_set`` drives early stopping on
NDCG@k (:func:`selrank.metrics.ndcg`).

Under ``torch.distributed`` (an initialised process group) the scorer is wrapped in
``DistributedDataParallel``: every rank draws the same query order, takes its own slice of
each global batch of ``batch_queries × world_size`` queries, and scales its summed loss by
the total weight of the global batch, so the averaged gradient is exactly that of the mean
loss over the global batch (a rank whose slice is empty contributes a fully padded list:
zero loss, zero gradient).
"""

from __future__ import annotations

import inspect
import logging
import math
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._array import Array

try:
    import torch
    from torch import nn
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError("NeuralRanker requires torch: pip install 'selrank[torch]'") from exc

from .._groups import as_groups
from ..torch import RankingHead
from ._torch_backend import (
    NetworkSettings,
    fit_network,
    network_features,
    network_labels,
    predict_network,
    row_weights,
    standardize,
    torch_device,
)
from ._validation import (
    _as_group,
    check_feature_names,
    refuse_ungrouped_scoring,
)

logger = logging.getLogger("selrank")


__all__ = ["NeuralRanker", "MLPScorer", "ACTIVATIONS", "NotFittedError"]

#: Activations of the hidden layers of :class:`MLPScorer`.
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "silu": nn.SiLU,
}

try:  # the scikit-learn exception when scikit-learn is installed, so `except` clauses match
    from sklearn.base import BaseEstimator as _EstimatorBase
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - scikit-learn is optional
    _EstimatorBase = object

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """Raised by :meth:`NeuralRanker.predict` before :meth:`NeuralRanker.fit`."""


class MLPScorer(nn.Module):
    """Feed-forward scorer: ``Linear → activation → dropout`` per hidden layer, then ``Linear(·, 1)``.

    Maps ``[..., n_features]`` to ``[...]`` scores.

    Parameters
    ----------
    n_features : int
    hidden_layers : sequence of int
        Widths of the hidden layers (empty: a linear model).
    activation : {"relu", "gelu", "tanh", "elu", "silu"}
    dropout : float
        Dropout probability after each hidden layer.

    Examples
    --------
    >>> import torch
    >>> scorer = MLPScorer(5, (8, 4))
    >>> scorer(torch.zeros(3, 7, 5)).shape
    torch.Size([3, 7])
    """

    def __init__(
        self,
        n_features: int,
        hidden_layers: Sequence[int] = (64, 32),
        activation: str = "relu",
        dropout: float = 0.0,
    ):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"`activation` must be one of {sorted(ACTIVATIONS)}; got {activation!r}"
            )
        layers: list[nn.Module] = []
        width = int(n_features)
        for h in hidden_layers:
            layers += [nn.Linear(width, int(h)), ACTIVATIONS[activation]()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = int(h)
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


# --------------------------------------------------------------------------------------
# validation helpers (the network's inputs: selrank.estimators._torch_backend)
# --------------------------------------------------------------------------------------
_features = network_features
_labels = network_labels


def _positive_int(value, name: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"`{name}` of NeuralRanker must be a positive integer{' or None' if allow_none else ''}; got {value!r}"
        )
    return int(value)


_device = torch_device


class NeuralRanker(_EstimatorBase):
    """Neural learning-to-rank estimator with a scikit-learn interface.

    A scikit-learn estimator (``BaseEstimator``): ``get_params`` / ``set_params``,
    ``sklearn.base.clone``, its tags, and metadata routing — ``set_fit_request(qid=True)``
    routes per-row query ids through ``cross_val_score`` / ``GridSearchCV``
    (``docs/estimators.md``). It trains with the torch backend's network trainer, as
    ``SelectiveRanker(backend="torch")`` does (:mod:`selrank.estimators._torch_backend`).

    Parameters
    ----------
    loss : str, Loss or RankingHead
        Any head of :func:`selrank.torch.get_head`: ``"listwise"`` (default, exp composite
        softmax), ``"pairwise"``, ``"pointwise"``, a torch baseline (``"listnet"``,
        ``"ranknet"``, ...), a name of :data:`selrank.losses.LOSSES`, a core
        :class:`~selrank.losses.Loss` instance or a head.
    loss_params : dict, optional
        Parameters of the head when ``loss`` is a name.
    hidden_layers : tuple of int
        Widths of the scorer's hidden layers.
    activation : str
        See :data:`ACTIVATIONS`.
    dropout : float
        Dropout probability after each hidden layer.
    epochs : int
        Maximum number of passes over the training queries.
    learning_rate : float
        Adam learning rate.
    weight_decay : float
        Adam (L2) weight decay.
    batch_queries : int
        Queries per optimisation step (per rank under data parallelism).
    standardize : bool
        Standardise features with the training mean and standard deviation.
    early_stopping_rounds : int or None
        Stop when NDCG@``eval_at`` on the first ``eval_set`` has not improved for this many
        epochs and restore the best weights; ``None`` or 0 trains all epochs (the weights of
        the best epoch are still restored when there is an ``eval_set``).
    eval_at : int, sequence of int, or None
        Cut-off(s) of the NDCG recorded on ``eval_set`` (``None``: whole list); the first
        drives early stopping.
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
    random_state : int, numpy RandomState / Generator, or None
        Seeds weight initialisation, dropout and the query order; the same value gives the
        same model (on the same device and thread count).
    verbose : bool
        Show a progress bar (tqdm when installed, otherwise one line per epoch).

    Attributes
    ----------
    model_ : MLPScorer
        The trained scorer (on ``device``).
    head_ : RankingHead
        The loss head used.
    n_features_in_ : int
    evals_result_ : dict
        ``{"train": {"loss": [...]}, "valid_0": {"ndcg@10": [...]}, ...}`` per epoch.
    best_iteration_ : int
        Epoch (1-based) whose weights were kept.
    best_score_ : float or None
        Its validation NDCG (None without ``eval_set``).
    n_epochs_ : int
        Epochs run.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(float) + (X[:, 0] > 1)
    >>> ranker = NeuralRanker("listwise", hidden_layers=(8,), epochs=30, random_state=0)
    >>> ranker.fit(X, y, group=[20, 20, 20]).predict(X).shape
    (60,)
    """

    # fitted attributes (set by fit, through selrank.estimators._torch_backend.fit_network)
    model_: MLPScorer
    head_: RankingHead
    n_features_in_: int
    feature_mean_: np.ndarray
    feature_scale_: np.ndarray
    evals_result_: dict
    best_iteration_: int
    best_score_: float | None
    n_epochs_: int

    def __init__(
        self,
        loss: Any = "listwise",
        *,
        loss_params: dict | None = None,
        hidden_layers: tuple[int, ...] = (64, 32),
        activation: str = "relu",
        dropout: float = 0.0,
        epochs: int = 100,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        batch_queries: int = 32,
        standardize: bool = True,
        early_stopping_rounds: int | None = 10,
        eval_at: int | None = 10,
        device: Any = "cpu",
        random_state: int | None = None,
        verbose: bool = False,
    ):
        self.loss = loss
        self.loss_params = loss_params
        self.hidden_layers = hidden_layers
        self.activation = activation
        self.dropout = dropout
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.batch_queries = batch_queries
        self.standardize = standardize
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_at = eval_at
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # -- scikit-learn parameter protocol ------------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values() if p.name != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (scikit-learn protocol)."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> NeuralRanker:
        """Set constructor parameters (scikit-learn protocol)."""
        valid = set(self._get_param_names())
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"invalid parameter {key!r} for NeuralRanker; valid parameters: {sorted(valid)}"
                )
            setattr(self, key, value)
        return self

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified (the network takes dense rows)
        tags.target_tags.required = True
        tags.non_deterministic = self.random_state is None
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"requires_y": True, "non_deterministic": self.random_state is None}

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = []
        for k, v in self.get_params().items():
            d = defaults.get(k, inspect.Parameter.empty)
            try:
                same = v is d or bool(v == d)
            except Exception:
                same = False
            if not same:
                changed.append(f"{k}={v!r}")
        return f"NeuralRanker({', '.join(changed)})"

    # -- validation -----------------------------------------------------------------------
    def check_params(self) -> tuple[int, ...]:
        """Check the parameters; returns the hidden layer sizes. Called by :meth:`fit`,
        :meth:`network_settings` and the file loader (``neural_files.load_neural_ranker``)."""
        for name in ("learning_rate",):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                or not (math.isfinite(v) and float(v) > 0)
            ):
                raise ValueError(f"`{name}` of NeuralRanker must be a positive number; got {v!r}")
        for name in ("weight_decay", "dropout"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, numbers.Real)
                or not (math.isfinite(v) and float(v) >= 0)
            ):
                raise ValueError(
                    f"`{name}` of NeuralRanker must be a non-negative number; got {v!r}"
                )
        if self.dropout >= 1:
            raise ValueError(f"`dropout` of NeuralRanker must be < 1; got {self.dropout!r}")
        _positive_int(self.epochs, "epochs")
        _positive_int(self.batch_queries, "batch_queries")
        if self.early_stopping_rounds != 0:
            _positive_int(self.early_stopping_rounds, "early_stopping_rounds", allow_none=True)
        for k in self._eval_ks():
            _positive_int(k, "eval_at", allow_none=True)
        try:
            hidden = tuple(int(h) for h in self.hidden_layers)
        except TypeError:
            raise TypeError(
                f"`hidden_layers` of NeuralRanker must be a sequence of ints; got {self.hidden_layers!r}"
            ) from None
        if any(h < 1 for h in hidden):
            raise ValueError(
                f"`hidden_layers` of NeuralRanker must hold positive widths; got {self.hidden_layers!r}"
            )
        if self.loss_params is not None and not isinstance(self.loss_params, dict):
            raise TypeError(
                f"`loss_params` of NeuralRanker must be a dict or None; got {type(self.loss_params).__name__}"
            )
        if self.random_state is not None and (
            isinstance(self.random_state, bool)
            or not isinstance(
                self.random_state, numbers.Integral | np.random.RandomState | np.random.Generator
            )
        ):
            raise TypeError(
                "`random_state` of NeuralRanker must be None, an int, or a numpy RandomState / "
                f"Generator; got {self.random_state!r}"
            )
        return hidden

    def _eval_ks(self) -> list[int | None]:
        if self.eval_at is None or isinstance(self.eval_at, numbers.Integral):
            return [self.eval_at]
        try:
            ks = list(self.eval_at)  # type: ignore[call-overload]  # not an int: a sequence
        except TypeError:
            raise TypeError(
                f"`eval_at` of NeuralRanker must be an int, a sequence of ints or None; got {self.eval_at!r}"
            ) from None
        if not ks:
            raise ValueError("`eval_at` of NeuralRanker must not be empty")
        return ks

    def make_head(self) -> RankingHead:
        """The loss head ``loss`` / ``loss_params`` name (for :meth:`network_settings` and the
        file loader, which sets ``head_`` from it)."""
        from ..torch.heads import get_head

        return get_head(self.loss, **(self.loss_params or {}))

    # -- fit / predict ------------------------------------------------------------------
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
    ) -> NeuralRanker:
        """Train the scorer.

        Parameters
        ----------
        X : array-like [n_samples, n_features]
        y : array-like [n_samples]
            Relevance labels (or teacher scores, with a head that accepts them).
        group : array-like, optional
            Query sizes (summing to ``n_samples``); ``[1] * n`` is ``n`` one-row queries.
        qid : array-like, optional
            One query id per row instead of ``group`` (rows of a query need not be
            adjacent). Neither: all rows are one query, with a warning.
        sample_weight : array-like, optional
            One weight per row or per query.
        eval_set : list of (X, y) pairs, optional
            Validation data; the first pair drives early stopping.
        eval_group, eval_qid : list of array-like, optional
            Query sizes or per-row ids of the ``eval_set`` pairs (one of them is required
            with ``eval_set``).

        Returns
        -------
        self
        """
        self.check_params()
        torch_device(self.device)  # checked before the data
        check_feature_names(self, X, reset=True)
        X = _features(X)
        y = _labels(y, X.shape[0])
        if group is None and qid is None:  # warns, as SelectiveRanker does
            _as_group(None, X.shape[0], required="warn")
        groups = as_groups(group, X.shape[0], qid=qid)
        w = row_weights(sample_weight, groups)
        evals = self._eval_data(eval_set, eval_group, X.shape[1], eval_qid)
        fit_network(self, X, y, groups, w, evals)  # the trainer of backend="torch" too
        return self

    def network_settings(self, n_features: int) -> NetworkSettings:
        """The checked settings :func:`~selrank.estimators._torch_backend.train_network` trains
        with: the scorer factory (an :class:`MLPScorer` of ``n_features`` inputs), the head,
        the optimiser and early-stopping options (the torch backend's hook into this estimator)."""
        hidden = self.check_params()
        activation, dropout = self.activation, float(self.dropout)
        return NetworkSettings(
            make_scorer=lambda: MLPScorer(n_features, hidden, activation, dropout),
            head=self.make_head(),
            epochs=int(self.epochs),
            batch_queries=int(self.batch_queries),
            learning_rate=float(self.learning_rate),
            weight_decay=float(self.weight_decay),
            patience=self.early_stopping_rounds or None,
            eval_ks=self._eval_ks(),
            random_state=self.random_state,
            device=self.device,
            verbose=self.verbose,
        )

    def score(
        self, X: Array, y: Array, *, group: Array | None = None, qid: Array | None = None
    ) -> float:
        """Mean NDCG@k (the first ``eval_at``) of the predictions; ``group`` sizes or ``qid`` ids as in :meth:`fit`."""
        from ..metrics import ndcg

        scores = self.predict(X)  # checks X (columns as in fit)
        y = _labels(y, scores.shape[0])
        if group is None and qid is None:
            refuse_ungrouped_scoring("NeuralRanker.score", scores.shape[0])
        return float(ndcg(y, scores, group, qid=qid, k=self._eval_ks()[0]))

    # -- persistence (selrank.estimators.neural_files) --------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted ranker (parameters, network weights, feature scaling) with :func:`torch.save`.

        The file holds tensors and JSON text only, so :meth:`load` reads it with
        ``torch.load(weights_only=True)``. The loss must be a name or a registry
        :class:`~selrank.losses.Loss` (a custom head object cannot be stored: pickle the
        ranker instead).
        """
        from .neural_files import save_neural_ranker

        if not hasattr(self, "model_"):
            raise NotFittedError(
                "this NeuralRanker is not fitted yet; call fit(X, y, group=...) first"
            )
        save_neural_ranker(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, device: Any = "cpu") -> NeuralRanker:
        """Read a ranker written by :meth:`save` onto ``device``; it predicts as the saved one."""
        from .neural_files import load_neural_ranker

        return load_neural_ranker(cls, path, device=device, scorer=MLPScorer, to_device=_device)

    def predict(self, X: Array) -> np.ndarray:
        """Scores of the rows of ``X`` (higher ranks first), shape ``[n_samples]``."""
        if not hasattr(self, "model_"):
            raise NotFittedError(
                "this NeuralRanker is not fitted yet; call fit(X, y, group=...) first"
            )
        check_feature_names(self, X, reset=False)
        X = _features(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but NeuralRanker was fitted with {self.n_features_in_}"
            )
        device = next(self.model_.parameters()).device
        return predict_network(self.model_, self._transform(X), device)

    # -- helpers ------------------------------------------------------------------------
    def _transform(self, X: np.ndarray) -> np.ndarray:
        return standardize(X, self.feature_mean_, self.feature_scale_)

    def _eval_data(self, eval_set, eval_group, n_features: int, eval_qid=None):
        if eval_set is None:
            if eval_group is not None or eval_qid is not None:
                raise ValueError("`eval_group` / `eval_qid` given without `eval_set`")
            return []
        if (
            isinstance(eval_set, tuple)
            and len(eval_set) == 2
            and not isinstance(eval_set[0], tuple)
        ):
            raise TypeError("`eval_set` must be a list of (X, y) pairs, e.g. [(X_valid, y_valid)]")
        eval_set = list(eval_set)
        if eval_group is not None and eval_qid is not None:
            raise ValueError(
                "give either `eval_group` (query sizes) or `eval_qid` (per-row query ids), not both"
            )
        given, name = (eval_qid, "eval_qid") if eval_qid is not None else (eval_group, "eval_group")
        if given is None or len(list(given)) != len(eval_set):
            raise ValueError(
                f"`eval_group` or `eval_qid` must give the queries of each of the {len(eval_set)} eval_set pair(s); "
                f"got {given!r:.80}"
            )
        out = []
        for i, (pair, g) in enumerate(zip(eval_set, given)):
            try:
                Xe, ye = pair
            except (TypeError, ValueError):
                raise TypeError(
                    f"eval_set[{i}] must be an (X, y) pair; got {type(pair).__name__}"
                ) from None
            check_feature_names(self, Xe, reset=False)  # columns as in the training frame
            Xe = _features(Xe, f"eval_set[{i}] X")
            if Xe.shape[1] != n_features:
                raise ValueError(
                    f"eval_set[{i}] X has {Xe.shape[1]} features; the training data has {n_features}"
                )
            ye = _labels(ye, Xe.shape[0], f"eval_set[{i}] y")
            try:  # validate now, with the pair's row count
                groups = (
                    as_groups(None, Xe.shape[0], qid=g)
                    if name == "eval_qid"
                    else as_groups(g, Xe.shape[0])
                )
            except ValueError as exc:
                raise ValueError(f"{name}[{i}]: {exc}") from None
            out.append((Xe, ye, groups))
        return out
