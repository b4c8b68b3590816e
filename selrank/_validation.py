"""Input checks shared by every layer: scalars, choices, vectors, weights, registry lookup.

Validation happens at the edges (constructors, ``fit``, metric entry points, readers) and
raises ``TypeError`` for a bad type and ``ValueError`` for a bad value or shape, saying what
was expected and what came. Each check is written once here.

This module sits at the bottom of the package beside :mod:`selrank._array` (which it uses
to bring tensors and frames to NumPy); it imports nothing else from selrank.

Examples
--------
>>> positive_float(2, "alpha", "Sigmoid")
2.0
>>> check_choice("max", "reduction", REDUCTIONS)
Traceback (most recent call last):
...
ValueError: `reduction` must be one of ['mean', 'sum', 'none']; got 'max'
>>> lookup({"a": dict}, "b", "thing")
Traceback (most recent call last):
...
ValueError: unknown thing 'b'; choose one of ['a']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

import numpy as np

from ._array import is_numpy, is_torch, to_numpy

__all__ = [
    "REDUCTIONS",
    "positive_float",
    "finite_float",
    "check_choice",
    "check_reduction",
    "as_numeric_array",
    "as_vector",
    "as_weight",
    "lookup",
    "pass_through",
]

#: The reductions every loss, head and metric accepts.
REDUCTIONS = ("mean", "sum", "none")

T = TypeVar("T")


# --------------------------------------------------------------------------------------
# Scalars and choices
# --------------------------------------------------------------------------------------


def positive_float(value: Any, name: str, owner: str, *, allow_zero: bool = False) -> float:
    """Validate a positive (or non-negative) finite scalar parameter."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` of {owner} must be a real number; got {value!r}") from None
    ok = v >= 0 if allow_zero else v > 0
    if not (math.isfinite(v) and ok):
        cmp = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"`{name}` of {owner} must be finite and {cmp}; got {value!r}")
    return v


def finite_float(value: Any, name: str, owner: str) -> float:
    """Validate a finite real scalar parameter."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` of {owner} must be a real number; got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"`{name}` of {owner} must be finite; got {value!r}")
    return v


def check_choice(value: Any, name: str, choices: Sequence[str], owner: str | None = None) -> str:
    """``value`` if it is one of ``choices``, else ``ValueError`` naming them."""
    if not isinstance(value, str) or value not in choices:
        of = f" of {owner}" if owner else ""
        raise ValueError(f"`{name}`{of} must be one of {list(choices)}; got {value!r}")
    return value


def check_reduction(reduction: Any, owner: str | None = None) -> str:
    """``reduction`` if it is one of :data:`REDUCTIONS`."""
    return check_choice(reduction, "reduction", REDUCTIONS, owner)


# --------------------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------------------


def as_numeric_array(x: Any, name: str) -> np.ndarray:
    """A real numeric NumPy array from an array, tensor, polars/pandas Series or sequence.

    Object arrays of numbers are converted to float64; anything else non-numeric raises
    ``TypeError``.
    """
    if x is None:
        raise TypeError(f"`{name}` is required; got None")
    if not is_numpy(x) and not is_torch(x) and hasattr(x, "to_numpy"):
        x = x.to_numpy()  # polars / pandas
    arr = to_numpy(x)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"`{name}` must be numeric; got values of type object") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must have a real numeric dtype; got {arr.dtype}")
    return arr


def as_vector(x: Any, name: str, *, column_ok: bool = False) -> np.ndarray:
    """A 1-D NumPy array (see :func:`as_numeric_array`).

    ``column_ok`` also accepts a single row or column (``(n, 1)`` / ``(1, n)``) and flattens it.
    """
    arr = as_numeric_array(x, name)
    if column_ok and arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (one value per row); got shape {arr.shape}")
    return arr


@overload
def as_weight(
    sample_weight: None, n: int, name: str = ..., *, positive_sum: bool = ..., unit: str = ...
) -> None: ...
@overload
def as_weight(
    sample_weight: Any, n: int, name: str = ..., *, positive_sum: bool = ..., unit: str = ...
) -> np.ndarray: ...
def as_weight(
    sample_weight: Any,
    n: int,
    name: str = "sample_weight",
    *,
    positive_sum: bool = True,
    unit: str = "index",
) -> np.ndarray | None:
    """Validate weights: shape ``(n,)`` (a single row or column is flattened), finite,
    non-negative and, with ``positive_sum``, not all 0. Returns float64, or None for None.

    ``unit`` names a position in the errors (``"index 3 holds inf"``; the estimators say
    ``"row"``).
    """
    if sample_weight is None:
        return None
    w = np.asarray(as_numeric_array(sample_weight, name), dtype=np.float64)
    if w.ndim == 0:
        raise ValueError(f"`{name}` must be an array of shape ({n},); got a scalar")
    w = w.reshape(-1) if w.ndim == 2 and 1 in w.shape else w
    if w.shape != (n,):
        raise ValueError(f"`{name}` must have shape ({n},); got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        bad = int(np.flatnonzero(~np.isfinite(w))[0])
        raise ValueError(f"`{name}` must be finite; {unit} {bad} holds {w[bad]!r}")
    if np.any(w < 0):
        bad = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"`{name}` must be non-negative; {unit} {bad} holds {w[bad]!r}")
    if positive_sum and not w.sum() > 0:
        raise ValueError(f"`{name}` must have a positive sum; all weights are zero")
    return w


# --------------------------------------------------------------------------------------
# Registries
# --------------------------------------------------------------------------------------


def lookup(
    registry: Mapping[str, Callable[..., T]],
    name: Any,
    kind: str,
    *,
    instance_of: type | tuple[type, ...] = (),
    accepts: str = "a name",
    **params: Any,
) -> T:
    """Build the registry entry ``name`` (case-insensitive) with ``params``.

    The one lookup behind ``get_link``, ``get_scaling``, ``get_loss`` and ``get_head``: an
    ``instance_of`` object passes through unchanged (:func:`pass_through`: ``params`` must be
    empty), another non-string raises ``TypeError("a {kind} must be {accepts}; ...")``, an
    unknown name ``ValueError("unknown {kind} {name!r}; choose one of [...]")`` and an
    unexpected keyword ``ValueError("bad parameters for {kind} {name!r}: ...")``.
    """
    if instance_of and isinstance(name, instance_of):
        return pass_through(name, params, kind)
    if not isinstance(name, str):
        raise TypeError(f"a {kind} must be {accepts}; got {type(name).__name__}")
    key = name.lower()
    if key not in registry:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {sorted(registry)}")
    try:
        return registry[key](**params)
    except TypeError as exc:
        if "unexpected keyword" not in str(exc):
            raise
        raise ValueError(f"bad parameters for {kind} {name!r}: {exc}") from None


def pass_through(obj: Any, params: Mapping[str, Any], kind: str) -> Any:
    """``obj`` unchanged, or ``ValueError`` if ``params`` would have to be applied to it."""
    if params:
        raise ValueError(
            f"parameters {sorted(params)} cannot be applied to an existing {kind} {obj!r}"
        )
    return obj
