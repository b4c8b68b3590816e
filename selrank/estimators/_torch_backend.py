"""The torch backend and the one network trainer.

``SelectiveRanker(backend="torch")`` and :class:`~selrank.estimators.NeuralRanker` train the
same way: :func:`fit_network` standardises the checked rows and :func:`train_network` runs the
training loop (padded query batches, any head of :func:`selrank.torch.get_head`, early stopping
on NDCG, data parallelism). ``NeuralRanker`` is the thin public estimator on top (its
parameters, checks, ``predict``, ``save``); the backend checks the data once (as the GBDT
backends do) and fits a ``NeuralRanker`` as ``model_`` through the same function.

torch is imported inside the functions, so importing this module (every estimator does,
through :mod:`selrank.estimators.backends`) does not import it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _array as A
from .._groups import Groups
from .._numba import planned_calls
from .._validation import as_numeric_array, as_vector, as_weight
from ._backend import Backend
from ._validation import Features, as_seed, is_verbose

if TYPE_CHECKING:
    from ..losses import Loss

logger = logging.getLogger("selrank")


#: The constructor parameters of :class:`~selrank.estimators.NeuralRanker` (the keyword
#: arguments ``SelectiveRanker(backend="torch")`` passes on; a test keeps them equal).
NETWORK_PARAMETERS: tuple[str, ...] = (
    "activation",
    "batch_queries",
    "device",
    "dropout",
    "early_stopping_rounds",
    "epochs",
    "eval_at",
    "hidden_layers",
    "learning_rate",
    "loss",
    "loss_params",
    "random_state",
    "standardize",
    "verbose",
    "weight_decay",
)


class TorchBackend(Backend):
    """A torch MLP scorer (:class:`~selrank.estimators.NeuralRanker`) trained with the loss.

    Target scores are ``label_scale_ * label`` as on the GBDT backends (the labels handed to
    the network are scaled); keyword arguments are NeuralRanker's (``hidden_layers``,
    ``epochs``, ``batch_queries``, ``device``, ...). Rankers only; no sparse input, no
    ``callbacks`` / ``init_model``, no ``save()`` (``est.model_.save(path)``).
    """

    name = "torch"
    kinds: ClassVar[tuple[str, ...]] = ("ranker",)
    sparse = False
    topk_pairs_on_long_lists = False
    export_formats: ClassVar[tuple[str, ...]] = ("onnx",)

    def parameter_names(self, params: dict[str, Any]) -> set[str]:
        return set(NETWORK_PARAMETERS)

    def deterministic(self, est: Any) -> bool:
        return est.random_state is not None

    def fit(
        self,
        est: Any,
        X: Features,
        y: np.ndarray,
        *,
        group: Any,
        sample_weight: np.ndarray | None,
        eval_sets: list[dict],
        loss: Loss,
        n_classes: int | None,
        metric: str,
        callbacks: Sequence[Any] | None = None,
        init_model: Any = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.refuse_options(options)
        if est.kind not in self.kinds:
            raise ValueError(
                f"backend='torch' is available for SelectiveRanker only; got it for {type(est).__name__}"
            )
        if callbacks is not None or init_model is not None:
            raise ValueError(
                "`callbacks` and `init_model` are LightGBM / XGBoost training options; "
                "backend='torch' takes neither (use early_stopping_rounds= and verbose=)"
            )
        if est.n_estimators is not None:
            raise ValueError(
                "`n_estimators` applies to the GBDT backends; give `epochs=` for backend='torch'"
            )
        for name in ("hessian", "hessian_floor"):
            if getattr(est, name) != est.parameter_default(name):
                raise ValueError(f"`{name}` applies to the GBDT backends, not to backend='torch'")
        net_class = est.network_estimator_class()
        accepted = set(NETWORK_PARAMETERS)
        kwargs: dict[str, Any] = {"loss": loss}
        optional = {
            "learning_rate": est.learning_rate,
            "early_stopping_rounds": est.early_stopping_rounds,
            "eval_at": est.eval_at,
            "random_state": est.random_state,
            "verbose": est.verbose,
        }
        for name, value in optional.items():
            if value is not None and name in accepted:
                kwargs[name] = value
        kwargs.update(est.backend_kwargs())
        net = net_class(**kwargs)
        scale = float(est.label_scale_)  # target scores are label_scale_ * label on every backend
        rows = network_features(X.data)
        evals = [
            (
                network_features(ev["X"].data, f"eval_set[{k}] X"),
                network_labels(ev["y"] * scale, ev["X"].n_rows, f"eval_set[{k}] y"),
                ev["group"],
            )
            for k, ev in enumerate(eval_sets)
        ]
        fit_network(
            net,
            rows,
            network_labels(y * scale, rows.shape[0]),
            group,
            row_weights(sample_weight, group),
            evals,
        )
        est.model_ = net
        est.loss_ = loss

    def predict(self, est: Any, data: Features) -> np.ndarray:
        return np.asarray(A.to_numpy(est.model_.predict(data)), dtype=np.float64)

    def model_fields(self, est: Any) -> dict[str, Any]:
        raise ValueError(
            "save() covers the GBDT backends; for backend='torch' save the network with "
            "est.model_.save(path) (NeuralRanker.save) or pickle the estimator"
        )


def row_weights(sample_weight: Any, groups: Groups) -> np.ndarray | None:
    """Per-row weights of the network's loss from per-row or per-query ``sample_weight``."""
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


# ----------------------------------------------------------------------------------------------
# the network trainer: the one training loop of NeuralRanker and backend="torch"
# ----------------------------------------------------------------------------------------------
class NetworkSettings:
    """What the network trainer needs from an estimator, already checked (plain values).

    :class:`~selrank.estimators.NeuralRanker` builds one from its parameters
    (:meth:`NeuralRanker.network_settings`); ``SelectiveRanker(backend="torch")`` builds the
    same through its ``model_`` (a NeuralRanker), so both train with :func:`train_network`.
    """

    def __init__(
        self,
        *,
        make_scorer: Callable[[], Any],
        head: Any,
        epochs: int,
        batch_queries: int,
        learning_rate: float,
        weight_decay: float,
        patience: int | None,
        eval_ks: Sequence[int | None],
        random_state: Any,
        device: Any,
        verbose: bool,
        name: str = "NeuralRanker",
    ) -> None:
        self.make_scorer = make_scorer
        self.head = head
        self.epochs = int(epochs)
        self.batch_queries = int(batch_queries)
        self.learning_rate = float(learning_rate)
        self.weight_decay = float(weight_decay)
        self.patience = patience
        self.eval_ks = list(eval_ks)
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.name = name


class NetworkFit:
    """The result of :func:`train_network`: the trained scorer (eval mode) and its history."""

    def __init__(
        self,
        model: Any,
        evals_result: dict,
        n_epochs: int,
        best_iteration: int,
        best_score: float | None,
    ) -> None:
        self.model = model
        self.evals_result = evals_result
        self.n_epochs = n_epochs
        self.best_iteration = best_iteration
        self.best_score = best_score


def torch_device(device: Any) -> Any:
    """``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"auto"`` or a ``torch.device``) checked."""
    import torch

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
    import torch

    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class _Lists:
    """Rows of one data set in grouped order with the machinery to cut padded query batches."""

    def __init__(self, X: np.ndarray, y: np.ndarray, groups: Groups, w: np.ndarray | None, device):
        import torch

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
        import torch

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


def _scores(model: Any, X: Any, rows: Any, mask: Any) -> Any:
    """Scores of the real rows only, scattered into the padded ``[b, L]`` layout."""
    import torch

    s = model(X[rows])
    return torch.zeros(mask.shape, dtype=s.dtype, device=s.device).masked_scatter(mask, s)


def predict_network(model: Any, X: np.ndarray, device: Any, chunk: int = 65536) -> np.ndarray:
    """Scores of the (transformed) rows ``X`` by the scorer ``model``, in chunks, as float64."""
    import torch

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


def _seed(random_state: Any, world: int) -> int:
    import torch

    seed = as_seed(random_state)
    if seed is None:
        seed = int(np.random.default_rng().integers(2**62))
    if world > 1:  # every rank must draw the same query order
        t = torch.tensor([seed], dtype=torch.int64)
        torch.distributed.broadcast(t, src=0)
        seed = int(t.item())
    return int(seed)


def train_network(
    settings: NetworkSettings,
    X: np.ndarray,
    y: np.ndarray,
    groups: Groups,
    w: np.ndarray | None,
    evals: Sequence[tuple[np.ndarray, np.ndarray, Groups]],
) -> NetworkFit:
    """Train a scorer on checked, transformed data: the one network trainer.

    ``X`` float32 rows (standardised as the estimator predicts them), ``y`` the targets,
    ``groups`` the queries, ``w`` per-row weights or None, ``evals`` ``(X, y, groups)`` of the
    eval sets (the first drives early stopping on NDCG at ``settings.eval_ks[0]``). Under
    ``torch.distributed`` the scorer is wrapped in ``DistributedDataParallel`` (see
    :mod:`selrank.estimators.neural`).
    """
    import torch

    device = torch_device(settings.device)
    train = _Lists(X, y, groups, w, device)
    rank, world = _distributed()
    seed = _seed(settings.random_state, world)
    rng = np.random.default_rng(seed)
    fork = (
        [device.index if device.index is not None else torch.cuda.current_device()]
        if device.type == "cuda"
        else []
    )
    with torch.random.fork_rng(devices=fork):
        torch.manual_seed(seed)
        model = settings.make_scorer().to(device)
        # the head's forward passes over the fit: the kernel policy may compile at once
        batches = -(-train.groups.n_groups // (settings.batch_queries * world))
        with planned_calls(settings.epochs * batches):
            return _train(settings, model, train, evals, rng, rank, world, device)


def _train(settings, model, train, evals, rng, rank, world, device) -> NetworkFit:
    import torch
    from torch.nn.parallel import DistributedDataParallel

    from ..metrics import ndcg

    head = settings.head
    net = model
    if world > 1:
        ids = (
            [device.index if device.index is not None else torch.cuda.current_device()]
            if device.type == "cuda"
            else None
        )
        net = DistributedDataParallel(model, device_ids=ids)
    opt = torch.optim.Adam(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    bq = settings.batch_queries
    ks = settings.eval_ks
    keys = [f"ndcg@{k}" if k is not None else "ndcg" for k in ks]
    patience = settings.patience or None
    history: dict[str, dict[str, list[float]]] = {"train": {"loss": []}}
    for i in range(len(evals)):
        history[f"valid_{i}"] = {key: [] for key in keys}
    best, best_epoch, best_state, since = -math.inf, 0, None, 0
    bar = _Progress(is_verbose(settings.verbose) and rank == 0, settings.epochs, settings.name)
    n_q = train.groups.n_groups
    epoch = 0
    for epoch in range(1, settings.epochs + 1):
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
                head.partial_mean(scores, yb, total_weight=denom, mask=mb, sample_weight=wb) * world
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
                pred = predict_network(model, Xe, device)
                for k, key in zip(ks, keys):
                    value = float(ndcg(ye, pred, ge, k=k))
                    history[f"valid_{i}"][key].append(value)
                    first = value if first is None else first
            if first is not None and first > best:
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
    return NetworkFit(
        model.eval(),
        history,
        epoch,
        best_epoch if best_state is not None else epoch,
        float(best) if best_state is not None else None,
    )


class _Progress:
    def __init__(self, enabled: bool, total: int, name: str = "NeuralRanker"):
        self.bar = None
        self.enabled = enabled
        self.name = name
        if enabled:
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, desc=name, unit="epoch")
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
                "%s epoch %d: %s", self.name, epoch, ", ".join(f"{k}={v}" for k, v in info.items())
            )

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ----------------------------------------------------------------------------------------------
# checked inputs of the network (float32 features, finite labels) and the fit of a NeuralRanker
# ----------------------------------------------------------------------------------------------
def network_features(X: Any, name: str = "X") -> np.ndarray:
    """``X`` as a finite float32 ``[n_samples, n_features]`` array (the network's input)."""
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    if hasattr(X, "toarray"):  # scipy sparse
        X = X.toarray()
    if A.is_torch(X):
        X = A.to_numpy(X)
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


def network_labels(y: Any, n: int, name: str = "y") -> np.ndarray:
    """``y`` as finite float32 labels, one per row."""
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


def standardize(X: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The network's input transform: ``(X - mean) / scale`` as float32."""
    return ((X - mean) / scale).astype(np.float32)


def fit_network(
    net: Any,
    X: np.ndarray,
    y: np.ndarray,
    groups: Groups,
    w: np.ndarray | None,
    evals: Sequence[tuple[np.ndarray, np.ndarray, Groups]],
) -> None:
    """Fit the :class:`~selrank.estimators.NeuralRanker` ``net`` on checked float32 data.

    The feature standardisation (``feature_mean_``, ``feature_scale_``) is taken from ``X``,
    the network is trained by :func:`train_network` with ``net.network_settings(...)``, and
    ``net``'s fitted attributes are set (``model_``, ``head_``, ``n_features_in_``,
    ``evals_result_``, ``n_epochs_``, ``best_iteration_``, ``best_score_``).
    ``NeuralRanker.fit`` (after checking its arguments) and ``SelectiveRanker(backend="torch")``
    (with the rows it checked) both train here.
    """
    settings = net.network_settings(X.shape[1])
    if net.standardize:
        mean = X.mean(axis=0, dtype=np.float64)
        std = X.std(axis=0, dtype=np.float64)
        net.feature_mean_ = mean.astype(np.float32)
        net.feature_scale_ = np.where(std > 0, std, 1.0).astype(np.float32)
    else:
        net.feature_mean_ = np.zeros(X.shape[1], dtype=np.float32)
        net.feature_scale_ = np.ones(X.shape[1], dtype=np.float32)
    net.n_features_in_ = X.shape[1]
    moved = standardize(X, net.feature_mean_, net.feature_scale_)
    evals = [
        (standardize(Xe, net.feature_mean_, net.feature_scale_), ye, ge) for Xe, ye, ge in evals
    ]
    fit = train_network(settings, moved, y, groups, w, evals)
    net.model_ = fit.model
    net.evals_result_ = fit.evals_result
    net.n_epochs_ = fit.n_epochs
    net.best_iteration_ = fit.best_iteration
    net.best_score_ = fit.best_score
    net.head_ = settings.head
