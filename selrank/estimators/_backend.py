"""The backend seam: what an estimator asks of the library that trains it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from ..losses import Loss
    from ._validation import Features


class BackendEstimator:
    """Base of the estimators that train through a backend (``_SelectiveEstimator``), so a
    backend recognises one (LightGBM's ``init_model=``) without importing the estimators.

    It declares the seam from the backend's side: the public hooks a backend may call on the
    estimator it trains (besides the constructor parameters and the fitted attributes it
    sets). A backend reads no private attribute of the estimator.
    """

    backend: str
    #: The estimator's kind, checked against :attr:`Backend.kinds`.
    kind: ClassVar[str] = "estimator"

    def backend_kwargs(self) -> dict[str, Any]:
        """The keyword arguments given for the backend (``num_leaves=``, ``epochs=``, ...)."""
        raise NotImplementedError

    def eval_ks(self) -> list[int]:
        """The checked cut-offs of ``eval_at`` (the first drives early stopping)."""
        raise NotImplementedError

    def rounds_without_eval(self) -> int:
        """Boosting rounds when neither ``n_estimators`` nor an ``eval_set`` is given."""
        raise NotImplementedError

    def parameter_default(self, name: str) -> Any:
        """The default of the constructor parameter ``name``."""
        raise NotImplementedError

    def check_fitted(self) -> None:
        """Raise scikit-learn's ``NotFittedError`` unless the estimator is fitted."""
        raise NotImplementedError

    def network_estimator_class(self) -> type:
        """The class the torch backend fits as ``model_`` (:class:`NeuralRanker`; imports torch)."""
        raise NotImplementedError


class Backend:
    """One training library under the estimators (stateless; one instance per library).

    An estimator holds its parameters and its fitted state; everything that depends on the
    library goes through the backend its ``backend=`` names (:func:`get_backend`): which
    keyword arguments it accepts, how the training data and eval sets become its datasets,
    training, prediction, the model stored in the estimator's file, and export. A new backend
    subclasses this class, fills the hooks below and registers itself in :data:`BACKENDS`
    (CONTRIBUTING.md, "Add a backend").
    """

    #: The value of the estimators' ``backend=`` parameter.
    name: ClassVar[str] = ""
    #: Estimator kinds (``_SelectiveEstimator.kind``) the backend trains.
    kinds: ClassVar[tuple[str, ...]] = ("ranker", "regressor", "classifier")
    #: Whether ``fit`` / ``predict`` take scipy sparse matrices (scikit-learn's input tag).
    sparse: ClassVar[bool] = True
    #: Whether ``loss="pairwise"`` switches to top-k pairs on long lists (see
    #: ``SelectiveRanker._pairs_for_list_length``).
    topk_pairs_on_long_lists: ClassVar[bool] = True
    #: Export formats (:data:`selrank.estimators.EXPORT_FORMATS`) its models can be written to.
    export_formats: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # -- parameters --------------------------------------------------------------------------------
    def parameter_names(self, params: dict[str, Any]) -> set[str]:
        """Names (and aliases) of the keyword arguments the library accepts."""
        raise NotImplementedError

    def deterministic(self, est: Any) -> bool:
        """Whether two fits of ``est`` give the same model (scikit-learn's tag)."""
        return True

    # -- training and prediction -------------------------------------------------------------------
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
        """Train on checked data and set ``est``'s fitted attributes.

        ``options`` holds the LightGBM ``fit`` options given (``eval_names``, ``eval_metric``,
        ``init_score``, ``eval_init_score``, ``feature_name``, ``categorical_feature``); a
        backend that has none refuses them (:meth:`refuse_options`)."""
        raise NotImplementedError

    def refuse_options(self, options: dict[str, Any] | None) -> None:
        """Refuse LightGBM ``fit`` options on a backend that does not take them."""
        if options:
            raise ValueError(
                f"{sorted(options)} are LightGBM fit options (as in LGBMRanker.fit); backend={self.name!r} "
                "takes none of them: use backend='lightgbm'"
            )

    def predict(self, est: Any, data: Any) -> np.ndarray:
        """Raw scores (score space, intercept included) of checked features ``data``."""
        raise NotImplementedError

    def feature_gain(self, est: Any, importance_type: str = "gain") -> np.ndarray:
        """Per feature: total split gain (``"gain"``) or the number of splits (``"split"``)."""
        raise AttributeError(
            f"feature_importances_ is defined for the GBDT backends, not backend={self.name!r}"
        )

    # -- the estimator's file (selrank.estimators.persistence) -------------------------------------
    def model_fields(self, est: Any) -> dict[str, Any]:
        """The ``"model"`` and ``"intercept_in_model"`` fields of the estimator's JSON file."""
        raise NotImplementedError

    def check_model_field(self, model: str, where: str) -> None:
        """Refuse a ``"model"`` field that cannot be this library's model (before parsing)."""
        raise NotImplementedError

    #: A stand-alone Python script that parses the ``"model"`` field (read from stdin) and
    #: prints ``finite`` when one row of zeros predicts a finite score (run in a child process
    #: for files without a checksum).
    child_parse_script: ClassVar[str] = ""

    def restore(self, est: Any, doc: dict) -> None:
        """Rebuild the fitted model of ``est`` from a saved document (its other fields are set)."""
        raise NotImplementedError

    # -- export (selrank.estimators.export) ----------------------------------------------------------
    def export(self, booster: Any, path: str, format: str, n_rounds: int | None) -> None:
        """Write ``booster`` (intercept folded in) to ``path`` in one of :attr:`export_formats`."""
        raise NotImplementedError

    def to_treelite(self, booster: Any, n_rounds: int | None) -> Any:
        raise NotImplementedError

    def to_onnx(self, booster: Any, n_rounds: int | None, inputs: Any, opset: int) -> Any:
        """``(onnx model, n_outputs)`` from the onnxmltools converter of the library."""
        raise NotImplementedError
