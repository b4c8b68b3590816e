"""The torch backend: ``SelectiveRanker(backend="torch")`` trains a :class:`NeuralRanker`."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import _array as A
from ._backend import Backend
from ._validation import Features

if TYPE_CHECKING:
    from ..losses import Loss
    from .neural import NeuralRanker


def _neural_ranker() -> type[NeuralRanker]:
    try:
        from .neural import NeuralRanker
    except ImportError as exc:
        raise ImportError(
            f"backend='torch' needs selrank.estimators.NeuralRanker ({exc}): pip install 'selrank[torch]'"
        ) from None
    return NeuralRanker


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
        return set(_neural_ranker()._get_param_names())

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
    ) -> None:
        if est._kind not in self.kinds:
            raise ValueError(
                f"backend='torch' is available for SelectiveRanker only; got it for {type(est).__name__}"
            )
        if callbacks is not None or init_model is not None:
            raise ValueError(
                "`callbacks` and `init_model` are LightGBM / XGBoost training options; "
                "backend='torch' takes neither (use early_stopping_rounds= and verbose=)"
            )
        ranker_class = _neural_ranker()
        if est.n_estimators is not None:
            raise ValueError(
                "`n_estimators` applies to the GBDT backends; give `epochs=` for backend='torch'"
            )
        accepted = inspect.signature(ranker_class).parameters
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
        for name in ("hessian", "hessian_floor"):
            if getattr(est, name) != inspect.signature(type(est)).parameters[name].default:
                raise ValueError(f"`{name}` applies to the GBDT backends, not to backend='torch'")
        kwargs.update(est._backend_params)
        scale = float(est.label_scale_)  # target scores are label_scale_ * label on every backend
        model = ranker_class(**kwargs)
        fit_kw: dict[str, Any] = {"group": group.sizes, "sample_weight": sample_weight}
        if eval_sets:
            fit_kw["eval_set"] = [(ev["X"].data, ev["y"] * scale) for ev in eval_sets]
            fit_kw["eval_group"] = [ev["group"].sizes for ev in eval_sets]
        model.fit(X.data, y * scale, **fit_kw)
        est.model_ = model
        est.loss_ = loss

    def predict(self, est: Any, data: Features) -> np.ndarray:
        return np.asarray(A.to_numpy(est.model_.predict(data)), dtype=np.float64)

    def model_fields(self, est: Any) -> dict[str, Any]:
        raise ValueError(
            "save() covers the GBDT backends; for backend='torch' save the network with "
            "est.model_.save(path) (NeuralRanker.save) or pickle the estimator"
        )
