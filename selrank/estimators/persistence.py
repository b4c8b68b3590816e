"""Saving and loading the GBDT estimators (JSON: parameters, intercept, the booster's model)."""

from __future__ import annotations

import os

import numpy as np

from ..losses import LOSSES, Loss, get_loss

_FORMAT = "selrank-estimator"
_FORMAT_VERSION = 1

#: Saved-estimator classes by name; filled by ``_SelectiveEstimator.__init_subclass__`` so that
#: this module needs no import of the estimator modules (which import it).
ESTIMATOR_CLASSES: dict[str, type] = {}


# ----------------------------------------------------------------------------------------------
# (de)serialisation of losses, links and scalings for save()/load()
# ----------------------------------------------------------------------------------------------
def _encode(value):
    from ..links import LINKS, Link
    from ..scalings import SCALINGS, Scaling

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


def load(path: str | os.PathLike, *, expected: type | None = None):
    """Read an estimator saved with ``save()``.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from selrank import SelectiveRegressor
    >>> from selrank.estimators import load
    >>> rng = np.random.default_rng(0); X = rng.normal(size=(100, 3)); y = X[:, 0]
    >>> model = SelectiveRegressor(n_estimators=5).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.json"); model.save(path)
    >>> bool(np.array_equal(load(path).predict(X), model.predict(X)))
    True
    """
    import gzip
    import json
    import zlib

    from .._files import open_read

    with open_read(path, text=True) as fh:  # gzip recognised by its first bytes
        try:
            doc = json.load(fh)
        except (ValueError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise ValueError(
                f"{os.fspath(path)!r} is not a saved selrank estimator (not JSON: {exc})"
            ) from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(
            f"{os.fspath(path)!r} is not a saved selrank estimator (format {_FORMAT!r} expected)"
        )
    if doc.get("version") != _FORMAT_VERSION:
        raise ValueError(
            f"{os.fspath(path)!r} has format version {doc.get('version')!r}; this selrank reads {_FORMAT_VERSION}"
        )
    cls = ESTIMATOR_CLASSES.get(doc.get("estimator"))
    if cls is None:
        raise ValueError(f"{os.fspath(path)!r} holds an unknown estimator {doc.get('estimator')!r}")
    if expected is not None and cls is not expected:
        raise ValueError(f"{os.fspath(path)!r} holds a {cls.__name__}, not a {expected.__name__}")
    est = cls(**_decode(doc["params"]))
    est._restore(doc)
    return est
