"""Array-namespace helpers and numerically stable primitives.

Every formula in selrank is written once against the *array namespace* of its input
(`array-api-compat <https://data-apis.org/array-api-compat/>`_), so the same definition
serves NumPy, PyTorch (with autograd) and CuPy arrays in float32 and float64.

The primitives here are the only place where overflow-prone expressions are written out:
``softplus``, ``sigmoid``, ``log_sigmoid`` and ``logsumexp`` never evaluate ``exp`` of a
large positive number, and both branches of every ``where`` are finite so that autograd
through the unused branch cannot produce ``0 * inf = nan``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import array_api_compat
import numpy as np

#: An array of any supported namespace (NumPy, PyTorch, CuPy) or, where a function converts
#: its input, anything :func:`numpy.asarray` accepts. The code is duck-typed over the array
#: namespace, so to a type checker this is :data:`typing.Any`; annotations use it to say
#: "an array" where no single library's array type is right.
Array: TypeAlias = Any

__all__ = [
    "Array",
    "get_namespace",
    "as_float_array",
    "is_torch",
    "is_numpy",
    "to_numpy",
    "float_dtype_of",
    "finfo",
    "less_as_float",
    "softplus",
    "sigmoid",
    "log_sigmoid",
    "logsumexp",
    "log_softmax",
    "log_mean_exp",
    "xlogx",
]


def is_torch(x: Any) -> bool:
    """True for a ``torch.Tensor`` (without importing torch)."""
    return array_api_compat.is_torch_array(x)


def is_numpy(x: Any) -> bool:
    """True for a NumPy array or NumPy scalar."""
    return isinstance(x, np.ndarray | np.generic)


def get_namespace(*arrays: Any):
    """Return the array-API namespace shared by ``arrays``.

    Python scalars, lists and ``None`` are ignored; if nothing array-like remains the
    NumPy namespace is returned. Mixing libraries (a NumPy label array with a torch score
    tensor) resolves to the namespace of the first non-NumPy array, into which the others
    are converted by :func:`as_float_array`; that is what a training loop that keeps its
    labels in NumPy expects.
    """
    first = arrays[0] if arrays else None
    if len(arrays) <= 2 and (
        len(arrays) < 2 or arrays[1] is None or type(arrays[1]) is type(first)
    ):
        # fast paths for the common cases (one namespace); array_namespace() costs microseconds
        if isinstance(first, np.ndarray):
            return _NUMPY_NS
        if is_torch(first):
            return _torch_ns()
    found = None
    for a in arrays:
        if a is None or isinstance(a, int | float | bool | list | tuple):
            continue
        if is_numpy(a):
            if found is None:
                found = a
            continue
        if array_api_compat.is_array_api_obj(a):
            return array_api_compat.array_namespace(a)
    return array_api_compat.array_namespace(np.asarray(0.0) if found is None else found)


_NUMPY_NS = array_api_compat.array_namespace(np.asarray(0.0))
_TORCH_NS = None


def _torch_ns():
    global _TORCH_NS
    if _TORCH_NS is None:
        import torch

        _TORCH_NS = array_api_compat.array_namespace(torch.zeros(()))
    return _TORCH_NS


def _device_of(x: Any):
    return array_api_compat.device(x) if x is not None and not is_numpy(x) else None


def float_dtype_of(xp, x):
    """The floating dtype a computation on ``x`` should run in.

    Floating inputs keep their dtype (float32 stays float32, bfloat16/float16 stay as they
    are); integers and booleans become ``float64`` in NumPy/CuPy and torch's default dtype.
    """
    dt = x.dtype
    if xp.isdtype(dt, "real floating"):
        return dt
    if is_torch(x):
        import torch

        return torch.get_default_dtype()
    return xp.float64


def as_float_array(x: Any, xp=None, *, like: Any = None, dtype=None, name: str = "array"):
    """Convert ``x`` to a floating array of namespace ``xp``.

    Parameters
    ----------
    x : array-like
        Input (NumPy array, tensor, list, scalar).
    xp : namespace, optional
        Target namespace; defaults to ``get_namespace(x)``.
    like : array, optional
        Take dtype and device from this array (used to bring NumPy labels onto the device
        and precision of a score tensor).
    dtype : dtype, optional
        Force this dtype.
    name : str
        Used in error messages.
    """
    if xp is None:
        xp = get_namespace(x, like)
    if isinstance(x, str | bytes):
        raise TypeError(f"`{name}` must be numeric array-like; got {type(x).__name__}")
    if like is not None and dtype is None:
        dtype = like.dtype if xp.isdtype(like.dtype, "real floating") else None
    device = _device_of(like)
    if is_torch(x) and (like is None or is_torch(like)):
        # already a tensor: keep it (and its autograd graph); only move it if needed
        arr = x if device is None or x.device == device else x.to(device)
    else:
        if is_torch(like) and is_numpy(x):
            import torch

            x = torch.from_numpy(np.ascontiguousarray(x))
        try:
            arr = xp.asarray(x, device=device) if device is not None else xp.asarray(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"`{name}` must be numeric array-like; got {type(x).__name__}") from exc
    if arr.dtype == getattr(xp, "bool", None) or not (
        xp.isdtype(arr.dtype, "real floating") or xp.isdtype(arr.dtype, "integral")
    ):
        if not xp.isdtype(arr.dtype, "bool"):
            raise TypeError(f"`{name}` must have a real numeric dtype; got {arr.dtype}")
    target = dtype if dtype is not None else float_dtype_of(xp, arr)
    if arr.dtype != target:
        arr = xp.astype(arr, target)
    return arr


def to_numpy(x: Any) -> np.ndarray:
    """Return ``x`` as a NumPy array (detached and on the host for tensors)."""
    if is_numpy(x):
        return np.asarray(x)
    if is_torch(x):
        return x.detach().cpu().numpy()
    if array_api_compat.is_cupy_array(x):
        return x.get()
    return np.asarray(x)


def finfo(xp, x):
    """``xp.finfo`` of the (floating) dtype of ``x``."""
    return xp.finfo(x.dtype)


def less_as_float(x: Any, bound: float, *, inplace: bool = False):
    """``x < bound`` as 0/1 numbers of ``x``'s (floating) dtype (into ``x`` if ``inplace``).

    For torch, one comparison written straight into a float tensor: on CPU a boolean
    tensor costs about as much as an ``exp`` to make and again to select with or convert
    (the 0/1 factor then selects by ``lerp`` or products, float passes).

    Examples
    --------
    >>> less_as_float(np.array([0.5, 2.0]), 1.0)
    array([1., 0.])
    """
    if is_torch(x):
        import torch

        return torch.lt(x, bound, out=x if inplace else torch.empty_like(x))
    xp = get_namespace(x)
    return xp.astype(x < bound, x.dtype)


# --------------------------------------------------------------------------------------
# Stable primitives. Each is written so that neither branch of a `where` can overflow.
# --------------------------------------------------------------------------------------


def softplus(x, xp=None):
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log1p(exp(-|x|))``.

    NumPy uses its fused ``logaddexp(x, 0)``, which is the same formula. Torch uses
    ``torch.nn.functional.softplus``: its double backward is finite for every ``x``, while
    that of ``torch.logaddexp(x, 0)`` is NaN for ``x`` below about -100 (float32). Its
    linear continuation starts where ``log1p(e^{-x})`` is below the dtype's rounding (20 for
    float32 and narrower, 40 for float64), so the value is exact to the last bit.
    """
    if is_numpy(x):
        return np.logaddexp(x, 0.0)
    if is_torch(x):
        import torch

        threshold = 40.0 if x.dtype == torch.float64 else 20.0
        return torch.nn.functional.softplus(x, beta=1.0, threshold=threshold)
    xp = xp or get_namespace(x)
    return xp.maximum(x, xp.zeros_like(x)) + xp.log1p(xp.exp(-xp.abs(x)))


def sigmoid(x, xp=None):
    """Logistic function ``1 / (1 + exp(-x))`` without overflow for either sign of ``x``.

    In NumPy ``exp(-x)`` may overflow to ``inf`` for ``x < -709``, giving the correctly rounded
    0 (the overflow is silenced); torch uses its own stable kernel.
    """
    if is_numpy(x):
        with np.errstate(over="ignore"):
            out = np.exp(-x)
            if isinstance(out, np.ndarray):  # reuse the buffer
                out += 1.0
                return np.reciprocal(out, out=out)
            return 1.0 / (1.0 + out)
    if is_torch(x):
        import torch

        return torch.sigmoid(x)
    xp = xp or get_namespace(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def log_sigmoid(x, xp=None):
    """``log σ(x) = -softplus(-x)``."""
    xp = xp or get_namespace(x)
    return -softplus(-x, xp)


def logsumexp(x, xp=None, *, axis: int = -1, keepdims: bool = False):
    """``log Σ exp(x)`` along ``axis`` with the max-subtraction trick.

    The maximum is treated as a constant (it cancels mathematically), so gradients are the
    softmax and no ``-inf - (-inf)`` appears for rows that are entirely ``-inf``.
    """
    xp = xp or get_namespace(x)
    m = xp.max(x, axis=axis, keepdims=True)
    if is_torch(m):
        m = m.detach()
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    total = xp.sum(xp.exp(x - m), axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):  # an all -inf row has log-sum-exp -inf
        out = xp.log(total) + m
    if not keepdims:
        out = xp.squeeze(out, axis=axis)
    return out


def log_mean_exp(x, weights=None) -> float:
    """Weighted ``log(Σ w e^x / Σ w)`` of a NumPy vector, exact far outside ``exp``'s range.

    The mean of ``e^x`` underflows for ``x < -745`` (float64) and loses all meaning once it is
    floored; shifting by the largest ``x`` with positive weight keeps every term in ``(0, 1]``.
    Zero weights drop their terms; the weights must sum to a positive number. The one-cell
    case of :func:`segment_log_mean_exp`.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    w = (
        np.ones_like(x)
        if weights is None
        else np.broadcast_to(np.asarray(weights, dtype=np.float64).reshape(-1), x.shape)
    )
    total = float(np.sum(w))
    if not np.any(w != 0) or not total > 0:
        raise ValueError(f"weights must sum to a positive number; got sum {total!r}")
    return float(segment_log_mean_exp(x, np.zeros(x.size, dtype=np.intp), 1, w)[0])


def segment_log_mean_exp(x, cells, n_cells: int, weights) -> np.ndarray:
    """:func:`log_mean_exp` of every cell at once: ``x[cells == j]`` for ``j < n_cells``.

    ``cells`` holds the cell (``0 .. n_cells-1``) of each element, ``weights`` (the shape of
    ``x``) the element weights; every cell must carry a positive total weight. Same shift by
    the cell's largest ``x`` with positive weight, so each cell is as exact as the scalar form.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    keep = w != 0
    total = np.bincount(cells, weights=w, minlength=n_cells)
    m = np.full(n_cells, -np.inf)
    np.maximum.at(m, cells[keep], x[keep])
    finite = np.isfinite(m)
    shift = np.where(finite, m, 0.0)
    with np.errstate(all="ignore"):
        terms = np.where(keep, w * np.exp(x - shift[cells]), 0.0)
        s = np.bincount(cells, weights=terms, minlength=n_cells)
        return np.where(finite, m + np.log(s / total), m)


def log_softmax(x, xp=None, *, axis: int = -1):
    """``x - logsumexp(x)`` along ``axis``, accurate to the rounding of ``x`` itself.

    Written as ``(x - m) - log Σ e^{x - m}`` with ``m`` the (constant) maximum: the shifted
    logits are exact differences, so no ``log Σ e^x ≈ 1e4`` is formed and subtracted. The
    plain ``x - logsumexp(x)`` loses the rounding of the large log-sum-exp (``1e-3`` absolute
    at logits of ``1e4`` in float32); this form keeps the float32 error at that of
    ``torch.log_softmax``. Rows that are entirely ``-inf`` give NaN, as ``torch`` does.
    """
    xp = xp or get_namespace(x)
    m = xp.max(x, axis=axis, keepdims=True)
    if is_torch(m):
        m = m.detach()
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    d = x - m
    with np.errstate(divide="ignore"):
        return d - xp.log(xp.sum(xp.exp(d), axis=axis, keepdims=True))


def xlogx(x, xp=None):
    """``x log x`` with the limit 0 at ``x = 0`` (finite gradient there too)."""
    xp = xp or get_namespace(x)
    pos = x > 0
    safe = xp.where(pos, x, xp.ones_like(x))
    return xp.where(pos, x * xp.log(safe), xp.zeros_like(x))


def check_finite(x, name: str) -> None:
    """Raise ``ValueError`` if ``x`` holds NaN or infinity (host arrays only: cheap check)."""
    xp = get_namespace(x)
    if not bool(xp.all(xp.isfinite(x))):
        arr = to_numpy(x)
        bad = np.flatnonzero(~np.isfinite(arr.reshape(-1)))
        raise ValueError(
            f"`{name}` must be finite; found {bad.size} NaN/inf value(s), first at index "
            f"{int(bad[0])} ({arr.reshape(-1)[bad[0]]!r})"
        )
