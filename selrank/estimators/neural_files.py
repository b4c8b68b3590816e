"""Saving and loading :class:`~selrank.estimators.NeuralRanker` (``NeuralRanker.save`` / ``load``).

The file is a :func:`torch.save` dict of tensors and JSON text: parameters, fitted attributes,
the network's weights and the feature standardisation, with a SHA-256 ``"checksum"`` of all of
them (format 2). :func:`load_neural_ranker` reads it with ``torch.load(weights_only=True)``: no
code from the file runs.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._files import open_write
from ..torch import RankingHead
from . import file_limits
from ._codec import _decode, _encode
from .file_limits import read_capped

_FORMAT = "selrank-neural-ranker"
_FORMAT_VERSION = 2  # 2: with "checksum" (SHA-256 of the JSON fields and every tensor's bytes)
_READABLE_VERSIONS = (1, 2)
_FITTED = ("n_features_in_", "evals_result_", "best_iteration_", "best_score_", "n_epochs_")

__all__ = ["save_neural_ranker", "load_neural_ranker"]


def save_neural_ranker(ranker: Any, path: str | os.PathLike) -> None:
    """Write the fitted ranker (parameters, network weights, feature scaling) with :func:`torch.save`.

    The file holds tensors and JSON text only, so :func:`load_neural_ranker` reads it with
    ``torch.load(weights_only=True)``. The loss must be a name or a registry
    :class:`~selrank.losses.Loss` (a custom head object cannot be stored: pickle the
    ranker instead).
    """
    if isinstance(ranker.loss, RankingHead):
        raise TypeError(
            "cannot save a NeuralRanker whose loss is a head object; give the loss by name or "
            "as a selrank Loss, or pickle the ranker"
        )
    fitted = {k: getattr(ranker, k) for k in _FITTED}
    fitted["n_features_in_"] = int(fitted["n_features_in_"])
    if hasattr(ranker, "feature_names_in_"):
        fitted["feature_names_in_"] = [str(c) for c in ranker.feature_names_in_]
    doc = {
        "format": _FORMAT,
        "version": _FORMAT_VERSION,
        "params": json.dumps(
            _encode(
                {
                    k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in ranker.get_params().items()
                    if k != "device"
                }
            )
        ),
        "fitted": json.dumps(fitted),
        "state": {k: v.detach().cpu() for k, v in ranker.model_.state_dict().items()},
        "feature_mean": torch.as_tensor(ranker.feature_mean_),
        "feature_scale": torch.as_tensor(ranker.feature_scale_),
    }
    doc["checksum"] = _checksum(doc)
    with open_write(path) as fh:  # gzip when the name ends in .gz
        torch.save(doc, fh)


def load_neural_ranker(
    cls: type, path: str | os.PathLike, *, device: Any, scorer: type, to_device: Callable
) -> Any:
    """Read a ranker written by :func:`save_neural_ranker` onto ``device``; it predicts as the
    saved one. ``cls``: NeuralRanker; ``scorer``: its network class (MLPScorer); ``to_device``
    turns ``device`` into a :class:`torch.device`."""
    data = read_capped(path, repr(os.fspath(path)))  # gzip recognised; bombs refused
    _refuse_other_files(data, path)
    try:
        doc = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(
            f"{os.fspath(path)!r} is not a saved NeuralRanker ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(
            f"{os.fspath(path)!r} is not a saved NeuralRanker (format {_FORMAT!r} expected)"
        )
    if doc.get("version") not in _READABLE_VERSIONS:
        raise ValueError(
            f"{os.fspath(path)!r} has format version {doc.get('version')!r}; this selrank reads "
            f"{list(_READABLE_VERSIONS)}"
        )
    where = repr(os.fspath(path))
    try:
        if doc["version"] >= 2 and doc.get("checksum") != _checksum(doc):
            raise ValueError("the checksum of its content does not match the stored one")
        tensors = [doc["feature_mean"], doc["feature_scale"], *doc["state"].values()]
        if not all(torch.is_tensor(t) and bool(torch.isfinite(t).all()) for t in tensors):
            raise ValueError("it holds non-finite or missing weights")
        if not bool((doc["feature_scale"] > 0).all()):
            raise ValueError("its feature scales are not positive")
        params = _decode(json.loads(doc["params"]))
        params["hidden_layers"] = tuple(params["hidden_layers"])
        est = cls(**params, device=device)
        hidden = est.check_params()
        fitted = json.loads(doc["fitted"])
        for k, v in fitted.items():
            setattr(est, k, np.asarray(v, dtype=object) if k == "feature_names_in_" else v)
        est.feature_mean_ = doc["feature_mean"].numpy()
        est.feature_scale_ = doc["feature_scale"].numpy()
        _check_layer_sizes(doc, est.n_features_in_, hidden)  # before allocating the network
        model = scorer(est.n_features_in_, hidden, est.activation, float(est.dropout))
        model.load_state_dict(doc["state"])
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise ValueError(f"{where} is a damaged NeuralRanker file: {exc}") from None
    est.model_ = model.to(to_device(device)).eval()
    est.head_ = est.make_head()
    return est


def _refuse_other_files(data: bytes, path: str | os.PathLike) -> None:
    """Name what a file holds when it is not a torch file (a GBDT estimator's JSON, text)."""
    where = repr(os.fspath(path))
    if data[:2] == b"PK":  # a zip archive, as torch.save writes: its declared sizes are capped
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                total = sum(info.file_size for info in archive.infolist())
        except (zipfile.BadZipFile, ValueError, OSError) as exc:
            raise ValueError(f"{where} is a damaged NeuralRanker file ({exc})") from None
        if total > file_limits.MAX_FILE_BYTES:
            raise ValueError(
                f"{where} declares {total:,} bytes of tensors (more than "
                f"{file_limits.MAX_FILE_BYTES:,}); "
                "refused before allocating them"
            )
        return
    head = data[:4096].lstrip()
    if head[:1] == b"{":
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and doc.get("format") == "selrank-estimator":
            name = doc.get("estimator") if isinstance(doc.get("estimator"), str) else "GBDT"
            backend = (doc.get("params") or {}).get("backend", "lightgbm")
            raise ValueError(
                f"{where} holds a saved {name} (a GBDT estimator, backend {backend!r}), not a "
                f"NeuralRanker: read it with selrank.estimators.load(path) or {name}.load(path)"
            )
    raise ValueError(
        f"{where} is not a saved NeuralRanker (a torch file written by NeuralRanker.save "
        f"was expected; the file starts with {data[:16]!r})"
    )


def _check_layer_sizes(doc: dict, n_features: Any, hidden: Any) -> None:
    """The declared network (``n_features_in_``, ``hidden_layers``) must be the stored weights.

    A forged file may declare layers of a billion units; the network would be allocated
    before ``load_state_dict`` compared it with the weights. The parameter count the
    declaration implies must equal what the file holds (bounded by the file's size).
    """
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise ValueError(f"n_features_in_ must be a positive integer; got {n_features!r}")
    widths = [n_features, *(int(h) for h in hidden), 1]
    if any(w < 1 for w in widths):
        raise ValueError(f"the hidden layers {list(hidden)!r} are not positive widths")
    want = [(b, a) for a, b in zip(widths, widths[1:])]
    weights = [
        tuple(t.shape)
        for k, t in doc["state"].items()
        if str(k).endswith("weight") and t.dim() == 2
    ]
    held = sum(int(t.numel()) for t in doc["state"].values())
    declared = sum(b * a + b for b, a in want)
    if weights != want or held != declared:
        raise ValueError(
            f"it declares a network of layers {widths} ({declared:,} parameters) but holds "
            f"weights of shapes {weights} ({held:,} parameters)"
        )
    if tuple(doc["feature_mean"].shape) != (n_features,) or tuple(doc["feature_scale"].shape) != (
        n_features,
    ):
        raise ValueError(f"its feature scaling does not have {n_features} entries")


def _checksum(doc: dict) -> str:
    """SHA-256 of a saved ranker's JSON fields and the dtype, shape and bytes of every tensor."""
    h = hashlib.sha256()
    for key in ("format", "version", "params", "fitted"):
        h.update(f"{key}={doc.get(key)!r};".encode())
    tensors = [("feature_mean", doc["feature_mean"]), ("feature_scale", doc["feature_scale"])]
    tensors += sorted(doc["state"].items())
    for name, t in tensors:
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
