"""Exporting fitted models for serving stacks that do not run selrank.

Every GBDT model selrank trains carries its intercept inside the library's own model (the
first tree's leaves for LightGBM, ``base_score`` for XGBoost), so each route below scores
what ``decision_function`` scores, loaded by its own runtime in a process without selrank:

========================  ==============================================  =====================
``format``                file / object                                   runtime
========================  ==============================================  =====================
``"lightgbm"``            LightGBM model text                             ``lightgbm.Booster``,
                                                                          LightGBM C API,
                                                                          treelite
``"lightgbm-json"``       LightGBM's JSON dump (``Booster.dump_model``)   for inspection; no
                                                                          LightGBM loader
``"xgboost-json"``        XGBoost JSON model                              ``xgboost.Booster``
``"xgboost-ubj"``         XGBoost UBJSON model                            ``xgboost.Booster``
``"onnx"``                ONNX graph (GBDT: onnxmltools; NeuralRanker:    onnxruntime
                          ``torch.onnx``), input ``"X"`` float32
                          ``[n, n_features]``, output ``"score"``
``"treelite"``            treelite checkpoint                             ``treelite.gtil`` /
                                                                          TL2cgen
========================  ==============================================  =====================

Scores are the model's raw scores (``decision_function``: score space, intercept included;
``[n]`` or ``[n, n_classes]``); the link, ``label_scale`` and class probabilities that
``predict`` / ``predict_proba`` apply on top are not part of the exported model.
"""

from __future__ import annotations

import os
from typing import Any

from ._backend import Backend
from .backends import get_backend

__all__ = ["EXPORT_FORMATS", "export_model", "to_onnx"]

EXPORT_FORMATS = (
    "lightgbm",
    "lightgbm-json",
    "xgboost-json",
    "xgboost-ubj",
    "onnx",
    "treelite",
)

#: ONNX opset of the exported graphs (the newest onnxmltools' tree converters support).
ONNX_OPSET = 15


def _booster(model) -> tuple[Any, Backend]:
    """The fitted estimator's booster (intercept folded in) and its backend object."""
    booster = getattr(model, "booster_", None)
    if booster is None:
        if hasattr(model, "model_"):
            raise ValueError("this model has no booster (a torch model): use format='onnx'")
        raise ValueError(f"{type(model).__name__} is not a fitted GBDT estimator")
    objective = model.objective_
    if not objective.fold_intercept(booster):
        raise ValueError(
            "this booster cannot hold its intercept (e.g. LightGBM linear_tree): an exported model "
            "would predict scores without it"
        )
    return booster, get_backend(objective.backend)


def _n_rounds(model) -> int | None:
    best = getattr(model, "best_iteration_", None)
    return None if best is None else int(best)


def export_model(model: Any, path: str | os.PathLike, format: str) -> str:
    """Write ``model`` (a fitted selrank estimator or NeuralRanker) for another runtime.

    Parameters
    ----------
    model
        A fitted :class:`~selrank.SelectiveRanker`, :class:`~selrank.SelectiveRegressor`,
        :class:`~selrank.SelectiveClassifier` (GBDT backends), or a fitted
        :class:`~selrank.estimators.NeuralRanker` / ``backend="torch"`` ranker (``"onnx"``).
    path : str or path-like
    format : str
        One of :data:`EXPORT_FORMATS` (see the module docstring).

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> import numpy as np, os, tempfile, lightgbm as lgb
    >>> from selrank import SelectiveRegressor
    >>> from selrank.estimators.export import export_model
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(200, 3)); y = 5 + X[:, 0]
    >>> model = SelectiveRegressor(n_estimators=5).fit(X, y)
    >>> path = export_model(model, os.path.join(tempfile.mkdtemp(), "m.txt"), "lightgbm")
    >>> plain = lgb.Booster(model_file=path).predict(X)   # no selrank needed to read it
    >>> bool(np.allclose(plain, model.predict(X)))
    True
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"`format` must be one of {EXPORT_FORMATS}; got {format!r}")
    path = os.fspath(path)
    if format == "onnx":
        onx = to_onnx(model)
        with open(path, "wb") as fh:
            fh.write(onx.SerializeToString())
        return path
    booster, backend = _booster(model)
    rounds = _n_rounds(model)
    if format not in backend.export_formats:
        library = "a LightGBM" if format.startswith("lightgbm") else "an XGBoost"
        raise ValueError(f"format={format!r} needs {library} model; this one is {backend.name}")
    if format == "treelite":
        to_treelite(model).serialize(path)
    else:  # the library's own files
        backend.export(booster, path, format, rounds)
    return path


def to_treelite(model):
    """A ``treelite.Model`` of a fitted GBDT estimator (``treelite.gtil.predict`` scores it)."""
    try:
        import treelite  # noqa: F401 (the backend converts)
    except ImportError:
        raise ImportError(
            "the treelite export needs treelite: pip install 'selrank[export]'"
        ) from None
    booster, backend = _booster(model)
    return backend.to_treelite(booster, _n_rounds(model))


def to_onnx(model: Any) -> Any:
    """An ONNX model (``onnx.ModelProto``) of ``model``'s raw scores.

    Input ``"X"``: float32 ``[n, n_features]``; output ``"score"``: float32 ``[n]`` (one
    output) or ``[n, n_classes]``. GBDT models go through onnxmltools (trees evaluated in
    float32 by onnxruntime: about 1e-6 relative to ``decision_function``); a
    :class:`~selrank.estimators.NeuralRanker` (or a ``backend="torch"`` ranker) through
    :func:`torch.onnx.export`, feature standardisation included.
    """
    net = getattr(model, "model_", None)
    if net is not None and hasattr(net, "model_"):  # SelectiveRanker(backend="torch")
        return _neural_onnx(net)
    if net is not None and not hasattr(model, "booster_"):
        return _neural_onnx(model)
    try:
        import onnxmltools  # noqa: F401 (the backend converts)
        from onnxmltools.convert.common.data_types import FloatTensorType
    except ImportError:
        raise ImportError(
            "the ONNX export needs onnxmltools: pip install 'selrank[export]'"
        ) from None
    booster, backend = _booster(model)
    inputs = [("X", FloatTensorType([None, int(model.n_features_in_)]))]
    onx, k = backend.to_onnx(booster, _n_rounds(model), inputs, ONNX_OPSET)
    return _raw_score_graph(onx, k)


def _raw_score_graph(onx, k: int):
    """Turn the converter's graph into raw scores named ``"score"`` (no softmax, no labels)."""
    import onnx
    from onnx import helper

    graph = onx.graph
    default = [op for op in onx.opset_import if op.domain in ("", "ai.onnx")]
    if not default:
        onx.opset_import.append(helper.make_opsetid("", ONNX_OPSET))
    for op in default:  # the Reshape below takes its shape as an input (opset >= 5)
        op.version = max(op.version, ONNX_OPSET)
    for node in graph.node:
        if node.op_type in ("TreeEnsembleClassifier", "TreeEnsembleRegressor"):
            for attr in node.attribute:
                if attr.name == "post_transform":
                    attr.s = b"NONE"
    if k > 1:  # classifier graph: keep the probability output, now raw scores
        scores = next(o for o in graph.output if "prob" in o.name.lower())
    else:
        scores = graph.output[0]
    target = scores.name
    shape = [None] if k == 1 else [None, k]
    final = "score"
    if k == 1:
        graph.node.append(helper.make_node("Reshape", [target, "selrank_flat"], [final]))
        graph.initializer.append(
            helper.make_tensor("selrank_flat", onnx.TensorProto.INT64, [1], [-1])
        )
    else:
        graph.node.append(helper.make_node("Identity", [target], [final]))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info(final, onnx.TensorProto.FLOAT, shape))
    onnx.checker.check_model(onx)
    return onx


def _neural_onnx(ranker):
    """torch.onnx export of a NeuralRanker's scorer with its feature standardisation."""
    import io
    import warnings

    import onnx
    import torch

    class _Scorer(torch.nn.Module):
        def __init__(self, net, mean, scale):
            super().__init__()
            self.net = net
            self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
            self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))

        def forward(self, X):
            return self.net((X - self.mean) / self.scale)

    net = ranker.model_
    device = next(net.parameters()).device
    module = _Scorer(net.cpu().eval(), ranker.feature_mean_, ranker.feature_scale_).eval()
    example = torch.zeros((2, int(ranker.n_features_in_)), dtype=torch.float32)
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DeprecationWarning
        )  # the TorchScript exporter (no onnxscript)
        torch.onnx.export(
            module,
            (example,),
            buf,  # type: ignore[arg-type]  # torch's annotation omits the file objects it takes
            input_names=["X"],
            output_names=["score"],
            dynamic_axes={"X": {0: "n"}, "score": {0: "n"}},
            opset_version=17,
            dynamo=False,
        )
    net.to(device)
    return onnx.load_from_string(buf.getvalue())
