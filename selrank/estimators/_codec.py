"""(De)serialisation of losses, links and scalings (by registry name and parameters) for the
estimators' files (:mod:`selrank.estimators.persistence`, :mod:`selrank.estimators.neural_files`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..losses import LOSSES, Loss, get_loss


def _encode(value):
    from ..links import LINKS, Link
    from ..scalings import SCALINGS, Scaling

    registry: dict[str, Any]  # one of the three registries
    if isinstance(value, Loss):
        kind, registry, name = "loss", LOSSES, value.name
    elif isinstance(value, Link):
        kind, registry, name = "link", LINKS, value.name
    elif isinstance(value, Scaling):
        kind, registry, name = "scaling", SCALINGS, value.name
    elif isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    elif isinstance(value, np.generic):
        return value.item()
    elif value is None or isinstance(value, bool | int | float | str):
        return value
    else:
        raise TypeError(
            f"cannot save a parameter of type {type(value).__name__} ({value!r}); pickle the estimator instead"
        )
    if name not in registry:
        raise TypeError(
            f"cannot save the {kind} {value!r}: it is not a registry entry; pickle the estimator instead"
        )
    out = {"__selrank__": kind, "name": name, "params": _encode(value.get_params())}
    if _decode(out) != value:
        raise TypeError(
            f"cannot save the {kind} {value!r}: it does not rebuild from its parameters; pickle the estimator instead"
        )
    return out


def _decode(value):
    if isinstance(value, dict):
        kind = value.get("__selrank__")
        if kind is None:
            return {k: _decode(v) for k, v in value.items()}
        params = {k: _decode(v) for k, v in value["params"].items()}
        params = {
            k: tuple(v) if k == "cap" and isinstance(v, list) else v for k, v in params.items()
        }
        if kind == "loss":
            return get_loss(value["name"], **params)
        if kind == "link":
            from ..links import get_link

            return get_link(value["name"], **params)
        from ..scalings import get_scaling

        return get_scaling(value["name"], **params)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value
