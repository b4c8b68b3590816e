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

import base64
import hashlib
import json
import os
import subprocess
import sys
import warnings
from typing import Any

import numpy as np

from ._codec import _decode
from .file_limits import MAX_FEATURES, MAX_LEAVES, MAX_TREES, read_capped

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
    if backend.name == "lightgbm":
        check_lightgbm_model(doc["model"], where, n_feat)
    elif backend.name == "xgboost":
        check_xgboost_model(base64.b64decode(doc["model"]), where, n_feat)


def _ints(line: str, key: str, where: str, tree: int) -> list[int]:
    try:
        values = np.array(line.split(), dtype=np.int64)
    except (ValueError, OverflowError):
        raise ValueError(
            f"{where} is damaged: tree {tree} of its LightGBM model has a non-integer {key}"
        ) from None
    return values.tolist()


def _floats(line: str, key: str, where: str, tree: int) -> np.ndarray:
    try:
        values = np.array(line.split(), dtype=np.float64)
    except ValueError:
        raise ValueError(
            f"{where} is damaged: tree {tree} of its LightGBM model has a non-number in {key}"
        ) from None
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"{where} is damaged: tree {tree} of its LightGBM model has a non-finite {key}"
        )
    return values


def check_lightgbm_model(text: str, where: str, n_features: int | None = None) -> None:
    """Walk a LightGBM model text once, bounded, before LightGBM parses it.

    LightGBM trusts its model text: a child index out of range, a cycle among the nodes, a
    feature index beyond the header or a wrong ``tree_sizes`` entry makes its parser or its
    predictor read out of bounds, abort the interpreter or loop forever. Checked here, each
    with a ``ValueError`` naming the file and the tree: the header (``max_feature_idx``,
    ``num_tree_per_iteration``), every tree's ``num_leaves`` / ``num_cat`` and the lengths of
    its arrays, split features below the number of features, finite thresholds and leaf
    values, categorical boundaries in range, child pointers that form one tree (every
    internal node reached once from the root, every leaf once: no cycle, nothing shared),
    and ``tree_sizes`` equal to the trees' sizes in characters.
    """

    def bad(msg: str) -> ValueError:
        return ValueError(f"{where} is damaged: its LightGBM model {msg}")

    head, sep, _ = text.partition("\nTree=")
    if not sep and "\nend of trees" not in text:
        raise bad("has no trees")
    header: dict[str, str] = {}
    for line in head.split("\n"):
        key, eq, value = line.partition("=")
        if eq:
            header[key] = value
    try:
        max_feature = int(header.get("max_feature_idx", ""))
        per_iteration = int(header.get("num_tree_per_iteration", "1"))
        n_class = int(header.get("num_class", "1"))
    except ValueError:
        raise bad("has a damaged header (max_feature_idx / num_tree_per_iteration)") from None
    if not 0 <= max_feature < MAX_FEATURES:
        raise bad(f"declares max_feature_idx={max_feature}")
    if n_features is not None and max_feature + 1 != n_features:
        raise bad(f"has {max_feature + 1} features; the file says n_features_in={n_features}")
    if not 1 <= per_iteration <= 1 << 16 or not 1 <= n_class <= 1 << 16:
        raise bad(f"declares {per_iteration} trees per iteration and {n_class} classes")
    declared = header.get("tree_sizes")
    starts = [i for i in _find_all(text, "\nTree=")]
    end = text.find("\nend of trees")
    if end < 0:
        raise bad("is cut: 'end of trees' is missing")
    if len(starts) > MAX_TREES:
        raise bad(f"has more than {MAX_TREES:,} trees")
    if declared is not None:
        try:
            sizes = [int(v) for v in declared.split()]
        except ValueError:
            raise bad("has a damaged tree_sizes line") from None
        actual = [b - a for a, b in zip(starts, [*starts[1:], end])]
        if sizes != actual:
            raise bad("has tree_sizes that do not match its trees (LightGBM would read past them)")
    for t, (a, b) in enumerate(zip(starts, [*starts[1:], end])):
        _check_tree(text[a + 1 : b], t, max_feature, where)


def _find_all(text: str, needle: str):
    i = text.find(needle)
    while i >= 0:
        yield i
        i = text.find(needle, i + 1)


def _check_tree(block: str, t: int, max_feature: int, where: str) -> None:
    fields: dict[str, str] = {}
    for line in block.split("\n"):
        key, eq, value = line.partition("=")
        if eq:
            fields[key] = value

    def bad(msg: str) -> ValueError:
        return ValueError(f"{where} is damaged: tree {t} of its LightGBM model {msg}")

    try:
        n_leaves = int(fields.get("num_leaves", ""))
        n_cat = int(fields.get("num_cat", "0"))
    except ValueError:
        raise bad("has no valid num_leaves / num_cat") from None
    if not 1 <= n_leaves <= MAX_LEAVES or not 0 <= n_cat < max(n_leaves, 1):
        raise bad(f"declares num_leaves={n_leaves}, num_cat={n_cat}")
    leaf_values = _floats(fields.get("leaf_value", ""), "leaf_value", where, t)
    if len(leaf_values) != n_leaves:
        raise bad(f"has {len(leaf_values)} leaf values for num_leaves={n_leaves}")
    if n_leaves == 1:
        return
    n = n_leaves - 1  # internal nodes
    arrays: dict[str, list[int]] = {}
    for key in ("split_feature", "decision_type", "left_child", "right_child"):
        arrays[key] = _ints(fields.get(key, ""), key, where, t)
    thresholds = _floats(fields.get("threshold", ""), "threshold", where, t)
    lengths = {key: len(values) for key, values in arrays.items()}
    lengths["threshold"] = len(thresholds)
    for key, length in lengths.items():
        if length != n:
            raise bad(f"has {length} {key} values for num_leaves={n_leaves} (needs {n})")
    if any(not 0 <= f <= max_feature for f in arrays["split_feature"]):
        raise bad(f"splits on a feature outside 0..{max_feature}")
    if any(not 0 <= d < 16 for d in arrays["decision_type"]):
        raise bad("has a decision_type outside 0..15")
    categorical = [i for i, d in enumerate(arrays["decision_type"]) if d & 1]
    if categorical:
        bounds = _ints(fields.get("cat_boundaries", ""), "cat_boundaries", where, t)
        words = _ints(fields.get("cat_threshold", ""), "cat_threshold", where, t)
        if len(bounds) != n_cat + 1 or bounds[0] != 0 or bounds[-1] != len(words):
            raise bad("has cat_boundaries that do not match num_cat / cat_threshold")
        if any(b < a for a, b in zip(bounds, bounds[1:])):
            raise bad("has decreasing cat_boundaries")
        for i in categorical:
            index = thresholds[i]
            if index != int(index) or not 0 <= int(index) < n_cat:
                raise bad(
                    f"has a categorical split {i} whose category set {index} is not in 0..{n_cat - 1}"
                )
    # the child pointers form one binary tree: a walk from the root meets every internal
    # node once and every leaf once (bounded: at most n_leaves - 1 internal nodes)
    seen_node = bytearray(n)
    seen_leaf = bytearray(n_leaves)
    stack = [0]
    while stack:
        node = stack.pop()
        if seen_node[node]:
            raise bad(f"reaches node {node} twice (a cycle or a shared child)")
        seen_node[node] = 1
        for child in (arrays["left_child"][node], arrays["right_child"][node]):
            if child >= 0:
                if child >= n or child == 0:
                    raise bad(f"has a child index {child} outside 1..{n - 1}")
                stack.append(child)
            else:
                leaf = ~child
                if leaf >= n_leaves:
                    raise bad(f"points to leaf {leaf}; it has {n_leaves}")
                if seen_leaf[leaf]:
                    raise bad(f"reaches leaf {leaf} twice")
                seen_leaf[leaf] = 1
    if not all(seen_node) or not all(seen_leaf):
        raise bad("has nodes or leaves that the root does not reach")


_UBJ_NUMBERS = {
    b"i": ">i1",
    b"U": ">u1",
    b"I": ">i2",
    b"l": ">i4",
    b"L": ">i8",
    b"d": ">f4",
    b"D": ">f8",
}


def ubjson_decode(data: bytes, where: str, max_depth: int = 64) -> Any:
    """A bounded decoder of UBJSON (XGBoost's ``ubj`` model format) for the checks.

    Typed arrays become NumPy arrays (no copy); a count is accepted only when the bytes it
    declares are in the file, and nesting stops at ``max_depth``: a forged file cannot make
    this allocate more than its own size or recurse without end. ``ValueError`` names the
    file and the byte offset of the first thing that is not valid UBJSON.
    """
    n = len(data)
    pos = 0

    def bad(msg: str) -> ValueError:
        return ValueError(f"{where} is damaged: its XGBoost model (UBJSON) {msg} at byte {pos}")

    def take(k: int) -> bytes:
        nonlocal pos
        if k < 0 or pos + k > n:
            raise bad("is cut")
        out = data[pos : pos + k]
        pos += k
        return out

    def number(marker: bytes) -> Any:
        dtype = _UBJ_NUMBERS[marker]
        return np.frombuffer(take(int(dtype[-1])), dtype=dtype)[0].item()

    def count() -> int:
        marker = take(1)
        if marker not in _UBJ_NUMBERS or marker in (b"d", b"D"):
            raise bad("has a length that is not an integer")
        k = number(marker)
        if not 0 <= k <= n:
            raise bad(f"declares a length of {k}")
        return int(k)

    def value(marker: bytes, depth: int) -> Any:
        if depth > max_depth:
            raise bad("is nested too deep")
        if marker in _UBJ_NUMBERS:
            return number(marker)
        if marker == b"S" or marker == b"H":
            return take(count()).decode("utf-8", "replace")
        if marker == b"C":
            return take(1).decode("latin-1")
        if marker in (b"T", b"F", b"Z"):
            return {b"T": True, b"F": False, b"Z": None}[marker]
        if marker == b"[":
            kind, k = None, None
            if data[pos : pos + 1] == b"$":
                take(1)
                kind = take(1)
            if data[pos : pos + 1] == b"#":
                take(1)
                k = count()
            elif kind is not None:
                raise bad("has a typed array without a count")
            if kind is not None:
                if kind not in _UBJ_NUMBERS:
                    raise bad(f"has a typed array of type {kind!r}")
                dtype = _UBJ_NUMBERS[kind]
                return np.frombuffer(take(int(k or 0) * int(dtype[-1])), dtype=dtype)
            items = []
            if k is not None:
                for _ in range(k):
                    items.append(value(take(1), depth + 1))
                return items
            while True:
                m = take(1)
                if m == b"]":
                    return items
                items.append(value(m, depth + 1))
        if marker == b"{":
            obj: dict[str, Any] = {}
            k = None
            if data[pos : pos + 1] == b"#":
                take(1)
                k = count()
            while k is None or len(obj) < k:
                if k is None and data[pos : pos + 1] == b"}":
                    take(1)
                    break
                key = take(count()).decode("utf-8", "replace")
                obj[key] = value(take(1), depth + 1)
            return obj
        if marker == b"N":
            return value(take(1), depth)
        raise bad(f"has an unknown marker {marker!r}")

    out = value(take(1), 0)
    return out


def check_xgboost_model(raw: bytes, where: str, n_features: int | None = None) -> None:
    """Walk an XGBoost UBJSON (or JSON) model once, bounded, before XGBoost parses it.

    XGBoost trusts the child indices and sizes in its model: a forged index makes it read
    out of bounds (a crash of the interpreter). Checked: the learner's ``num_feature``, the
    number of trees against ``gbtree_model_param`` and ``tree_info``, and per tree the
    lengths of its arrays against ``num_nodes``, split features below ``num_feature``,
    children that form one binary tree from the root (no cycle, nothing shared, every node
    reached), parents that agree, and the categorical segments inside their arrays.
    """

    def bad(msg: str) -> ValueError:
        return ValueError(f"{where} is damaged: its XGBoost model {msg}")

    if raw[:1] == b"{" and raw[1:2] in (b'"', b" ", b"\n"):
        try:
            doc = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise bad("is not JSON") from None
    else:
        doc = ubjson_decode(raw, where)
    try:
        learner = doc["learner"]
        n_feat = int(learner["learner_model_param"]["num_feature"])
        booster = learner["gradient_booster"]
        model = booster["model"] if "model" in booster else booster["gbtree"]["model"]
        trees = model["trees"]
        n_trees = int(model["gbtree_model_param"]["num_trees"])
        tree_info = model["tree_info"]
    except (KeyError, TypeError, ValueError):
        raise bad("lacks its learner, trees or their counts") from None
    if not 0 <= n_feat < MAX_FEATURES or (n_features is not None and n_feat not in (0, n_features)):
        raise bad(f"declares num_feature={n_feat}; the file says n_features_in={n_features}")
    if not isinstance(trees, list) or len(trees) != n_trees or len(tree_info) != n_trees:
        raise bad("has a number of trees that differs from its counts")
    for t, tree in enumerate(trees):
        _check_xgboost_tree(tree, t, n_feat, bad)


def _check_xgboost_tree(tree: Any, t: int, n_feat: int, bad: Any) -> None:
    try:
        n = int(tree["tree_param"]["num_nodes"])
        arrays = {
            key: np.asarray(tree[key])
            for key in (
                "left_children",
                "right_children",
                "parents",
                "split_indices",
                "split_conditions",
                "base_weights",
                "default_left",
                "split_type",
            )
        }
    except (KeyError, TypeError, ValueError):
        raise bad(f"tree {t} lacks its arrays or num_nodes") from None
    if not 1 <= n <= MAX_LEAVES * 2:
        raise bad(f"tree {t} declares num_nodes={n}")
    for key, array in arrays.items():
        if array.ndim != 1 or array.shape[0] != n:
            raise bad(f"tree {t} has {array.size} {key} for num_nodes={n}")
    left = arrays["left_children"].astype(np.int64)
    right = arrays["right_children"].astype(np.int64)
    parents = arrays["parents"].astype(np.int64)
    features = arrays["split_indices"].astype(np.int64)
    if not np.all(np.isfinite(arrays["split_conditions"].astype(np.float64))):
        raise bad(f"tree {t} has a non-finite split condition or leaf")
    seen = bytearray(n)
    stack = [0]
    while stack:
        node = stack.pop()
        if seen[node]:
            raise bad(f"tree {t} reaches node {node} twice (a cycle or a shared child)")
        seen[node] = 1
        a, b = int(left[node]), int(right[node])
        if a == -1 and b == -1:
            continue
        if not (0 < a < n and 0 < b < n):
            raise bad(f"tree {t} node {node} has children {a}, {b} outside 1..{n - 1}")
        if int(parents[a]) != node or int(parents[b]) != node:
            raise bad(f"tree {t} node {node}'s children name another parent")
        if n_feat and not 0 <= int(features[node]) < n_feat:
            raise bad(f"tree {t} splits on feature {int(features[node])}; it has {n_feat}")
        stack += [a, b]
    if not all(seen):
        raise bad(f"tree {t} has nodes that the root does not reach")
    kinds = arrays["split_type"].astype(np.int64)
    if np.any(kinds != 0):
        try:
            cats = np.asarray(tree["categories"], dtype=np.int64)
            nodes = np.asarray(tree["categories_nodes"], dtype=np.int64)
            seg = np.asarray(tree["categories_segments"], dtype=np.int64)
            sizes = np.asarray(tree["categories_sizes"], dtype=np.int64)
        except (KeyError, TypeError, ValueError):
            raise bad(f"tree {t} has categorical splits without their categories") from None
        if not (nodes.size == seg.size == sizes.size) or np.any(nodes < 0) or np.any(nodes >= n):
            raise bad(f"tree {t} has damaged categorical nodes")
        if np.any(seg < 0) or np.any(sizes < 0) or np.any(seg + sizes > cats.size):
            raise bad(f"tree {t} has categorical segments outside its categories")


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
    where = repr(os.fspath(path))
    data = read_capped(path, where)  # gzip recognised by its first bytes; bombs refused
    if data[:2] == b"PK":  # a zip archive: what torch.save writes
        raise ValueError(
            f"{where} is a zip archive (what NeuralRanker.save writes), not a saved GBDT "
            "estimator: read a NeuralRanker with selrank.estimators.NeuralRanker.load(path)"
        )
    try:
        text = data.decode("utf-8")
        doc = json.loads(text, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
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
        est.restore_fitted(doc)
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
