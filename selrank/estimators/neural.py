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

from .._groups import Groups, as_groups
from .._numba import planned_calls
from .._validation import as_numeric_array, as_vector, as_weight
from ..torch import RankingHead
from ._validation import (
    _as_group,
    as_seed,
    check_feature_names,
    is_verbose,
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
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - scikit-learn is optional

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
# validation helpers
# --------------------------------------------------------------------------------------


def _features(X, name: str = "X") -> np.ndarray:
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    if hasattr(X, "toarray"):  # scipy sparse
        X = X.toarray()
    if torch.is_tensor(X):
        X = X.detach().cpu().numpy()
    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D [n_samples, n_features]; got shape {arr.shape}")
    arr = arr.astype(np.float32, copy=False)
    if not np.all(np.isfinite(arr)):
        r, c = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"`{name}` must be finite; row {int(r)}, column {int(c)} holds {arr[r, c]!r}"
        )
    return arr


def _labels(y, n: int, name: str = "y") -> np.ndarray:
    arr = as_vector(y, name, column_ok=True)
    if arr.shape != (n,):
        raise ValueError(
            f"`{name}` must have shape ({n},), one label per row of X; got {arr.shape}"
        )
    arr = arr.astype(np.float32)
    if not np.all(np.isfinite(arr)):
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"`{name}` must be finite; row {i} holds {arr[i]!r}")
    return arr


def _positive_int(value, name: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"`{name}` of NeuralRanker must be a positive integer{' or None' if allow_none else ''}; got {value!r}"
        )
    return int(value)


def _device(device) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"`device` of NeuralRanker must be 'cpu', 'cuda', 'cuda:N' or 'auto'; got {device!r}"
        ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"`device`={device!r} but CUDA is not available")
    return dev


def _distributed() -> tuple[int, int]:
    """``(rank, world_size)`` of an initialised default process group, else ``(0, 1)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class _Lists:
    """Rows of one data set in grouped order with the machinery to cut padded query batches."""

    def __init__(self, X: np.ndarray, y: np.ndarray, groups: Groups, w: np.ndarray | None, device):
        self.groups = groups
        self.X = torch.as_tensor(groups.to_grouped(X), device=device)
        self.y = torch.as_tensor(groups.to_grouped(y), device=device)
        self.w = (
            None
            if w is None
            else torch.as_tensor(groups.to_grouped(w).astype(np.float32), device=device)
        )
        self.sizes = groups.sizes
        self.offsets = groups.offsets
        self.device = device

    def batch(self, queries: np.ndarray):
        """Row indices ``[n_real]``, targets/mask/weights ``[b, L]`` of ``queries``."""
        if queries.size == 0:  # an empty slice (data parallel): one fully padded list
            mask = torch.zeros(1, 1, dtype=torch.bool, device=self.device)
            y = torch.zeros(1, 1, dtype=self.y.dtype, device=self.device)
            rows = torch.zeros(0, dtype=torch.long, device=self.device)
            w = (
                None
                if self.w is None
                else torch.zeros(1, 1, dtype=self.w.dtype, device=self.device)
            )
            return rows, y, mask, w
        sizes = self.sizes[queries]
        L = int(sizes.max())
        pos = np.arange(L)[None, :]
        mask_np = pos < sizes[:, None]
        rows_np = (self.offsets[queries][:, None] + pos)[mask_np]
        mask = torch.as_tensor(mask_np, device=self.device)
        rows = torch.as_tensor(rows_np, device=self.device)
        y = torch.zeros(mask.shape, dtype=self.y.dtype, device=self.device).masked_scatter(
            mask, self.y[rows]
        )
        w = None
        if self.w is not None:
            w = torch.zeros(mask.shape, dtype=self.w.dtype, device=self.device).masked_scatter(
                mask, self.w[rows]
            )
        return rows, y, mask, w


def _scores(
    model: nn.Module, X: torch.Tensor, rows: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Scores of the real rows only, scattered into the padded ``[b, L]`` layout."""
    s = model(X[rows])
    return torch.zeros(mask.shape, dtype=s.dtype, device=s.device).masked_scatter(mask, s)


class NeuralRanker:
    """Neural learning-to-rank estimator with a scikit-learn interface.

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
    def _check_params(self):
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

    def _make_head(self) -> RankingHead:
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
        hidden = self._check_params()
        device = _device(self.device)
        check_feature_names(self, X, reset=True)
        X = _features(X)
        y = _labels(y, X.shape[0])
        if group is None and qid is None:  # warns, as SelectiveRanker does
            _as_group(None, X.shape[0], required="warn")
        groups = as_groups(group, X.shape[0], qid=qid)
        w = self._row_weights(sample_weight, groups)
        evals = self._eval_data(eval_set, eval_group, X.shape[1], eval_qid)
        head = self._make_head()

        self.n_features_in_ = X.shape[1]
        if self.standardize:
            mean = X.mean(axis=0, dtype=np.float64)
            std = X.std(axis=0, dtype=np.float64)
            self.feature_mean_ = mean.astype(np.float32)
            self.feature_scale_ = np.where(std > 0, std, 1.0).astype(np.float32)
        else:
            self.feature_mean_ = np.zeros(X.shape[1], dtype=np.float32)
            self.feature_scale_ = np.ones(X.shape[1], dtype=np.float32)
        train = _Lists(self._transform(X), y, groups, w, device)
        evals = [(self._transform(Xe), ye, ge) for Xe, ye, ge in evals]

        rank, world = _distributed()
        seed = self._seed(rank, world)
        rng = np.random.default_rng(seed)
        fork = (
            [device.index if device.index is not None else torch.cuda.current_device()]
            if device.type == "cuda"
            else []
        )
        with torch.random.fork_rng(devices=fork):
            torch.manual_seed(seed)
            model = MLPScorer(X.shape[1], hidden, self.activation, float(self.dropout)).to(device)
            # the head's forward passes over the fit: the kernel policy may compile at once
            batches = -(-train.groups.n_groups // (int(self.batch_queries) * world))
            with planned_calls(int(self.epochs) * batches):
                self._train(model, head, train, evals, rng, rank, world, device)
        self.head_ = head
        return self

    def _seed(self, rank: int, world: int) -> int:
        seed = as_seed(self.random_state)
        if seed is None:
            seed = int(np.random.default_rng().integers(2**62))
        if world > 1:  # every rank must draw the same query order
            t = torch.tensor([seed], dtype=torch.int64)
            torch.distributed.broadcast(t, src=0)
            seed = int(t.item())
        return int(seed)

    def _train(self, model, head, train, evals, rng, rank, world, device):
        from torch.nn.parallel import DistributedDataParallel

        from ..metrics import ndcg

        net = model
        if world > 1:
            ids = (
                [device.index if device.index is not None else torch.cuda.current_device()]
                if device.type == "cuda"
                else None
            )
            net = DistributedDataParallel(model, device_ids=ids)
        opt = torch.optim.Adam(
            model.parameters(), lr=float(self.learning_rate), weight_decay=float(self.weight_decay)
        )
        bq = int(self.batch_queries)
        ks = self._eval_ks()
        keys = [f"ndcg@{k}" if k is not None else "ndcg" for k in ks]
        patience = self.early_stopping_rounds or None
        history: dict[str, dict[str, list[float]]] = {"train": {"loss": []}}
        for i in range(len(evals)):
            history[f"valid_{i}"] = {key: [] for key in keys}
        best, best_epoch, best_state, since = -math.inf, 0, None, 0
        bar = self._progress(rank)
        n_q = train.groups.n_groups
        epoch = 0
        for epoch in range(1, int(self.epochs) + 1):
            model.train()
            order = rng.permutation(n_q)
            total, steps = 0.0, 0
            for start in range(0, n_q, bq * world):
                global_q = order[start : start + bq * world]
                _, y_all, m_all, w_all = train.batch(global_q)
                denom = head.total_weight(y_all, y_all, mask=m_all, sample_weight=w_all)
                if not bool((denom > 0).any()):
                    continue  # nothing to learn from (e.g. only lists without relevant items)
                local = global_q[rank * bq : (rank + 1) * bq]
                rows, yb, mb, wb = train.batch(local)
                scores = _scores(net, train.X, rows, mb)
                loss = (
                    head.partial_mean(scores, yb, total_weight=denom, mask=mb, sample_weight=wb)
                    * world
                )
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) / world
                steps += 1
            if world > 1:  # the loss of the global batches: every rank's share, summed
                t = torch.tensor([total], dtype=torch.float64)
                torch.distributed.all_reduce(t)
                total = float(t.item())
            history["train"]["loss"].append(total / max(steps, 1))
            stop = False
            if evals:
                first = None
                for i, (Xe, ye, ge) in enumerate(evals):
                    pred = self._predict_with(model, Xe, device)
                    for k, key in zip(ks, keys):
                        value = float(ndcg(ye, pred, ge, k=k))
                        history[f"valid_{i}"][key].append(value)
                        first = value if first is None else first
                if first is not None and first > best:  # (None: no metric, never here)
                    best, best_epoch, since = first, epoch, 0
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                else:
                    since += 1
                    stop = patience is not None and since >= patience
                if world > 1:  # rank 0 decides, so all ranks leave the loop together
                    flag = torch.tensor([int(stop)], dtype=torch.int64)
                    torch.distributed.broadcast(flag, src=0)
                    stop = bool(flag.item())
            bar.update(history, epoch, keys[0])
            if stop:
                break
        bar.close()
        if best_state is not None:
            model.load_state_dict(best_state)
        self.model_ = model.eval()
        self.evals_result_ = history
        self.n_epochs_ = epoch
        self.best_iteration_ = best_epoch if best_state is not None else epoch
        self.best_score_ = float(best) if best_state is not None else None

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
        return self._predict_with(self.model_, self._transform(X), device)

    def _predict_with(self, model, X: np.ndarray, device, chunk: int = 65536) -> np.ndarray:
        was_training = model.training
        model.eval()
        out = []
        with torch.no_grad():
            for s in range(0, X.shape[0], chunk):
                out.append(
                    model(torch.as_tensor(X[s : s + chunk], device=device)).float().cpu().numpy()
                )
        model.train(was_training)
        return np.concatenate(out).astype(np.float64) if out else np.zeros(0)

    # -- helpers ------------------------------------------------------------------------
    def _transform(self, X: np.ndarray) -> np.ndarray:
        return ((X - self.feature_mean_) / self.feature_scale_).astype(np.float32)

    @staticmethod
    def _row_weights(sample_weight, groups: Groups) -> np.ndarray | None:
        if sample_weight is None:
            return None
        w = as_numeric_array(sample_weight, "sample_weight").astype(np.float64).reshape(-1)
        if w.size == groups.n_groups and w.size != groups.n_rows:
            w = groups.from_grouped(np.repeat(w, groups.sizes))  # per query -> per row
        if w.size != groups.n_rows:
            raise ValueError(
                f"`sample_weight` must have one weight per row ({groups.n_rows}) or per query "
                f"({groups.n_groups}); got {w.size}"
            )
        return as_weight(w, groups.n_rows, unit="row")

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

    def _progress(self, rank: int):
        return _Progress(is_verbose(self.verbose) and rank == 0, int(self.epochs))


class _Progress:
    def __init__(self, enabled: bool, total: int):
        self.bar = None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, desc="NeuralRanker", unit="epoch")
            except ImportError:
                self.bar = None

    def update(self, history, epoch: int, key: str):
        if not self.enabled:
            return
        info = {"loss": f"{history['train']['loss'][-1]:.4g}"}
        if "valid_0" in history:
            info[key] = f"{history['valid_0'][key][-1]:.4f}"
        if self.bar is not None:
            self.bar.set_postfix(info)
            self.bar.update(1)
        else:
            logger.info(
                "NeuralRanker epoch %d: %s", epoch, ", ".join(f"{k}={v}" for k, v in info.items())
            )

    def close(self):
        if self.bar is not None:
            self.bar.close()
