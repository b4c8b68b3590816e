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
import tempfile
from typing import Any

from .._files import check_output_path, open_write
from ._backend import Backend
from .backends import get_backend

__all__ = ["EXPORT_FORMATS", "SUFFIX_FORMATS", "check_export_suffix", "export_model", "to_onnx"]

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
        A name ending in ``.gz`` is written gzip-compressed, as every file selrank writes
        (the serving runtimes read the uncompressed file: decompress it first); a suffix that
        names another format (``.json`` for ``"xgboost-ubj"``, ``.txt`` for ``"onnx"``,
        ``.pkl``; see :data:`SUFFIX_FORMATS`) is refused before anything is written. The
        file appears under its name only once it is complete.
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
    check_export_suffix(path, format)
    check_output_path(path, "export path")
    if format == "onnx":
        data = to_onnx(model).SerializeToString()
    else:
        booster, backend = _booster(model)
        rounds = _n_rounds(model)
        if format not in backend.export_formats:
            library = "a LightGBM" if format.startswith("lightgbm") else "an XGBoost"
            raise ValueError(f"format={format!r} needs {library} model; this one is {backend.name}")
        if format == "treelite":
            data = bytes(to_treelite(model).serialize_bytes())
        else:  # the library's own files, written by the backend to a scratch file first
            with tempfile.TemporaryDirectory(prefix="selrank-export-") as scratch:
                tmp = os.path.join(scratch, "model")
                backend.export(booster, tmp, format, rounds)
                with open(tmp, "rb") as fh:
                    data = fh.read()
    # the package's one rule (selrank._files): gzip under a ``.gz`` name, and the final name
    # appears only once the whole file is written
    with open_write(path) as out:
        out.write(data)
    return path


#: File name suffixes that name a format, and the export formats each may hold.
SUFFIX_FORMATS: dict[str, tuple[str, ...]] = {
    ".json": ("lightgbm-json", "xgboost-json"),
    ".ubj": ("xgboost-ubj",),
    ".onnx": ("onnx",),
    ".txt": ("lightgbm", "lightgbm-json", "xgboost-json"),
    ".pkl": (),
    ".pickle": (),
    ".joblib": (),
    ".pt": (),
    ".pth": (),
}


def check_export_suffix(path: str | os.PathLike, format: str) -> None:
    """Refuse a file name whose suffix names another format than ``format``.

    A trailing ``.gz`` is the package's compression rule (the file is written gzip-compressed)
    and is looked through: ``model.txt.gz`` names LightGBM text. Suffixes that name no format
    (``.bin``, ``.model``, none) are accepted for every format.

    Examples
    --------
    >>> check_export_suffix("model.ubj", "xgboost-ubj")
    >>> check_export_suffix("model.json", "xgboost-ubj")
    Traceback (most recent call last):
    ...
    ValueError: model.json: the suffix '.json' names another format than 'xgboost-ubj' ...
    """
    name = os.path.basename(os.fspath(path)).lower()
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    suffix = os.path.splitext(name)[1]
    allowed = SUFFIX_FORMATS.get(suffix)
    if allowed is None or format in allowed:
        return
    fits = [s for s, formats in SUFFIX_FORMATS.items() if format in formats and s not in (".txt",)]
    fits = fits or [".txt" if format == "lightgbm" else ".bin"]
    what = ", ".join(repr(f) for f in allowed) if allowed else "a pickle / torch file"
    raise ValueError(
        f"{os.fspath(path)}: the suffix {suffix!r} names another format than {format!r} "
        f"({suffix!r} is read as {what}; a runtime choosing its parser by the name would fail); "
        f"name the file e.g. 'model{fits[0]}' for format={format!r}"
    )


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
    float32 by onnxruntime; LightGBM's thresholds become the largest float32 at or below
    each, so every float32 input takes LightGBM's branches and scores agree to about 1e-6
    relative to ``decision_function``); a
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
    rounds = _n_rounds(model)
    if backend.name == "lightgbm":
        # onnxruntime compares float32 inputs with float32 thresholds: give it the ones that
        # send every float32 value where LightGBM's double comparison sends it
        booster = _lightgbm_float32_thresholds(booster, rounds)
        rounds = None
    inputs = [("X", FloatTensorType([None, int(model.n_features_in_)]))]
    onx, k = backend.to_onnx(booster, rounds, inputs, ONNX_OPSET)
    return _raw_score_graph(onx, k)


def float32_down(values: Any) -> Any:
    """The largest float32 at or below each value (as float64; ``-inf`` stays ``-inf``).

    For a float32 ``x`` and a double threshold ``t``, ``x <= t`` (LightGBM's comparison, in
    double) holds exactly when ``x <= float32_down(t)`` does in float32, which is the
    comparison an ONNX runtime makes. Rounding to the *nearest* float32 instead sends the
    inputs between ``t`` and ``float32(t) > t`` down the wrong branch.

    Examples
    --------
    >>> import numpy as np
    >>> t = 0.1  # float32(0.1) = 0.10000000149 > 0.1
    >>> x = np.float32(0.1)
    >>> bool(float(x) <= t), bool(x <= np.float32(t)), bool(x <= np.float32(float32_down(t)))
    (False, True, False)
    """
    import numpy as np

    t = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        t32 = t.astype(np.float32)
    up = t32.astype(np.float64) > t
    t32[up] = np.nextafter(t32[up], np.float32(-np.inf))
    return t32.astype(np.float64)


def _lightgbm_float32_thresholds(booster: Any, n_rounds: int | None) -> Any:
    """A copy of a LightGBM booster whose numerical thresholds are :func:`float32_down`.

    For float32 inputs the copy takes every branch the original takes (categorical splits
    and everything else are kept as written); the ONNX converter then casts each threshold
    to float32 without changing it.
    """
    import lightgbm as lgb

    lines = booster.model_to_string(num_iteration=n_rounds).split("\n")
    # the tree sizes (in characters) change with the numbers; LightGBM parses without them
    lines = [line for line in lines if not line.startswith("tree_sizes=")]
    threshold_at = None
    for i, line in enumerate(lines):
        if line.startswith("Tree="):
            threshold_at = None
        elif line.startswith("threshold="):
            threshold_at = i
        elif line.startswith("decision_type=") and threshold_at is not None:
            values = lines[threshold_at][len("threshold=") :].split(" ")
            kinds = line[len("decision_type=") :].split(" ")
            if len(kinds) != len(values):
                raise ValueError("LightGBM model text whose thresholds and decision types differ")
            down = float32_down([float(v) for v in values])
            lines[threshold_at] = "threshold=" + " ".join(
                v if int(kind) & 1 else repr(float(d))  # bit 0: categorical (an index, kept)
                for v, kind, d in zip(values, kinds, down)
            )
            threshold_at = None
    copy = lgb.Booster(model_str="\n".join(lines))
    for key, value in booster.params.items():
        copy.params.setdefault(key, value)
    return copy


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
