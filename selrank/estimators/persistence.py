"""Saving and loading the GBDT estimators (JSON: parameters, intercept, the booster's model).

Format versions
---------------
1 (selrank 0.1): the booster's model without its intercept (selrank added it when predicting).
2: the intercept inside the booster's model (LightGBM: the first tree's leaves; XGBoost: its
``base_score``), ``"intercept_in_model": true``, and ``"checksum"``: the SHA-256 of the
canonical JSON of every other field, so a damaged file is refused before any library parses
it. Version 1 files still load (their model is parsed in a child process first, since they
carry no checksum, and the intercept is folded in): they predict as before.

Loading never executes code from the file: it is JSON, parsed by :mod:`json`, and the model
is parsed by LightGBM / XGBoost from text or bytes (no pickle).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

from ._codec import _decode

_FORMAT = "selrank-estimator"
_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
#: Seconds the child-process parse of a model without checksum may take.
ISOLATED_PARSE_TIMEOUT = 120.0

#: Saved-estimator classes by name; filled by ``_SelectiveEstimator.__init_subclass__`` so that
#: this module needs no import of the estimator modules (which import it).
ESTIMATOR_CLASSES: dict[str, type] = {}


def document_checksum(doc: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of ``doc`` without its ``"checksum"`` field."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    text = json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _refuse_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _finite_numbers(value, what: str, where: str):
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{where}: {what} must be a finite number or a list of them; got {value!r}"
        )
    return arr


def check_document(doc, where: str) -> None:
    """Structural checks of a saved estimator's JSON (types and ranges of every field)."""
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(f"{where} is not a saved selrank estimator (format {_FORMAT!r} expected)")
    version = doc.get("version")
    if version not in _READABLE_VERSIONS:
        raise ValueError(
            f"{where} has format version {version!r}; this selrank reads {list(_READABLE_VERSIONS)}"
        )
    if version >= 2:
        stored = doc.get("checksum")
        if not isinstance(stored, str):
            raise ValueError(f"{where} is damaged: its checksum is missing")
        if stored != document_checksum(doc):
            raise ValueError(
                f"{where} is damaged: the checksum of its content does not match the stored one"
            )
    checks = (
        ("estimator", str),
        ("params", dict),
        ("loss", dict),
        ("model", str),
    )
    for key, kind in checks:
        if not isinstance(doc.get(key), kind):
            raise ValueError(
                f"{where} is damaged: field {key!r} must be a {kind.__name__}; got {doc.get(key)!r:.80}"
            )
    backend = _file_backend(doc)
    if backend is None:
        raise ValueError(f"{where} is damaged: unknown backend {doc['params'].get('backend')!r}")
    _finite_numbers(doc.get("intercept"), "the intercept", where)
    n_feat = doc.get("n_features_in")
    if isinstance(n_feat, bool) or not isinstance(n_feat, int) or n_feat < 1:
        raise ValueError(
            f"{where} is damaged: n_features_in must be a positive integer; got {n_feat!r}"
        )
    best = doc.get("best_iteration")
    if best is not None and (isinstance(best, bool) or not isinstance(best, int) or best < 1):
        raise ValueError(
            f"{where} is damaged: best_iteration must be a positive integer or null; got {best!r}"
        )
    backend.check_model_field(doc["model"], where)


def _file_backend(doc: dict):
    """The backend object of a saved estimator (``None`` for one that saves no file)."""
    from .backends import BACKENDS, get_backend

    name = doc["params"].get("backend", "lightgbm")
    if not isinstance(name, str) or name not in BACKENDS:
        return None
    backend = get_backend(name)
    return backend if backend.child_parse_script else None


def parse_in_child(backend: str, model: str, where: str, timeout: float | None = None) -> None:
    """Parse ``model`` (and predict one row) in a child interpreter; ``ValueError`` if it fails.

    A damaged model can abort or hang LightGBM / XGBoost inside the parser: the child takes
    the signal or the time-out instead of the caller. The child runs isolated (``python -I``:
    no selrank, no user site, no working directory on its path).
    """
    from .backends import get_backend

    timeout = ISOLATED_PARSE_TIMEOUT if timeout is None else timeout
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", get_backend(backend).child_parse_script],
            input=model.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ValueError(
            f"{where} is damaged: parsing its {backend} model did not finish in {timeout:g} s"
        ) from None
    if done.returncode != 0 or done.stdout != b"finite":
        if done.returncode < 0:
            why = f"the parser died with signal {-done.returncode}"
        elif done.stdout == b"nonfinite":
            why = "the model predicts non-finite scores"
        else:
            last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
            why = f"{backend} refused it: {last[0][:300]}"
        raise ValueError(f"{where} is damaged or not a {backend} model: {why}")


def read_document(path: str | os.PathLike, *, isolate: bool | None = None) -> dict:
    """The checked JSON of a saved estimator (see :func:`load`)."""
    import gzip
    import zlib

    from .._files import open_read

    where = repr(os.fspath(path))
    try:
        with open_read(path, text=True) as fh:  # gzip recognised by its first bytes
            text = fh.read()
        doc = json.loads(text, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{where} is not a saved selrank estimator (not JSON: {exc})") from None
    except RecursionError:
        raise ValueError(
            f"{where} is not a saved selrank estimator (JSON nested too deep)"
        ) from None
    check_document(doc, where)
    if isolate or (isolate is None and "checksum" not in doc):
        parse_in_child(doc["params"].get("backend", "lightgbm"), doc["model"], where)
    return doc


def load(
    path: str | os.PathLike, *, expected: type | None = None, isolate: bool | None = None
) -> Any:
    """Read an estimator saved with ``save()``.

    The file is JSON; nothing in it is executed. It is checked before any library parses
    the model: the structure of every field, finite intercepts, and the checksum written by
    ``save()`` (format 2). Files without a checksum (format 1, selrank 0.1) have their model
    parsed first in a child process (``isolate=None``); ``isolate=True`` does that for every
    file (for model files from others: a checksum catches damage, not a forged file),
    ``False`` never. A damaged file raises ``ValueError`` naming it.

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
    doc = read_document(path, isolate=isolate)
    where = repr(os.fspath(path))
    cls = ESTIMATOR_CLASSES.get(str(doc.get("estimator")))
    if cls is None:
        raise ValueError(f"{where} holds an unknown estimator {doc.get('estimator')!r}")
    if expected is not None and cls is not expected:
        raise ValueError(f"{where} holds a {cls.__name__}, not a {expected.__name__}")
    try:
        est = cls(**_decode(doc["params"]))
        est._restore(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{where} is damaged or not readable: {type(exc).__name__}: {exc}"
        ) from None
    except Exception as exc:  # the libraries raise their own error types
        if type(exc).__name__ not in ("LightGBMError", "XGBoostError"):
            raise
        raise ValueError(f"{where} is damaged: {type(exc).__name__}: {exc}") from None
    _check_probe(est, where)
    return est


def _check_probe(est, where: str) -> None:
    """One prediction of a zero row: a model that gives NaN / inf there is refused."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = est.decision_function(np.zeros((1, int(est.n_features_in_))))
    except Exception:  # feature names or categories: the probe does not apply
        return
    if not np.all(np.isfinite(np.asarray(out, dtype=np.float64))):
        raise ValueError(f"{where} is damaged: its model predicts non-finite scores")
