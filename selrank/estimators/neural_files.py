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
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._files import open_read, open_write
from ..torch import RankingHead
from ._codec import _decode, _encode

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
    try:
        with open_read(path) as fh:  # gzip recognised by its first bytes
            payload = io.BytesIO(fh.read())
        doc = torch.load(payload, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a foreign file
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
        hidden = est._check_params()
        fitted = json.loads(doc["fitted"])
        for k, v in fitted.items():
            setattr(est, k, np.asarray(v, dtype=object) if k == "feature_names_in_" else v)
        est.feature_mean_ = doc["feature_mean"].numpy()
        est.feature_scale_ = doc["feature_scale"].numpy()
        model = scorer(est.n_features_in_, hidden, est.activation, float(est.dropout))
        model.load_state_dict(doc["state"])
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise ValueError(f"{where} is a damaged NeuralRanker file: {exc}") from None
    est.model_ = model.to(to_device(device)).eval()
    est.head_ = est._make_head()
    return est


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
