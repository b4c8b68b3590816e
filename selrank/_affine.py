"""Shared machinery for functions of a standardized argument with optional caps.

Links (``h``) and scalings (``q``) in selrank are both a triple of a function, its
derivative and its primitive, evaluated at a standardized argument ``x`` (``α(z − β)`` for
links, ``α(z + β)`` for scalings, following the paper). Unbounded functions (``exp``,
``sinh``) overflow, so either may be *capped*: evaluated exactly on ``[lo, hi]`` and
continued beyond it linearly (first-order Taylor: stays monotone, finite and once
differentiable) or flat (constant). The continuation of the primitive follows by
integration, so the triple stays consistent (``F' = f``, ``f' = df``) everywhere.

This module holds that logic once for both, and the parameter bookkeeping (``get_params``,
``repr``, equality, hashing) that links, scalings and losses share (:class:`Params`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ._array import Array, get_namespace, is_torch
from ._validation import finite_float, positive_float


def torch_aminmax(x):
    """(min, max) of a tensor as Python floats, without recording autograd."""
    import torch

    with torch.no_grad():
        mn, mx = torch.aminmax(x.detach())
    return float(mn), float(mx)


__all__ = ["Capped", "Params", "params_equal", "parse_cap"]

_CAP_MODES = ("linear", "flat")


def parse_cap(cap, cap_mode: str, owner: str, *, sides: str) -> tuple[float, float]:
    """Turn a user ``cap`` into ``(lo, hi)`` bounds on the standardized argument.

    ``cap`` is ``None`` (no cap), a positive number ``c`` (applied to the unbounded
    ``sides`` — ``"high"``, ``"low"`` or ``"both"`` — as ``x ≤ c`` / ``x ≥ -c``), or a pair
    ``(lo, hi)`` with either entry ``None``.
    """
    if cap_mode not in _CAP_MODES:
        raise ValueError(f"`cap_mode` of {owner} must be one of {_CAP_MODES}; got {cap_mode!r}")
    if cap is None:
        return (-math.inf, math.inf)
    if isinstance(cap, tuple | list):
        if len(cap) != 2:
            raise ValueError(
                f"`cap` of {owner} must be a number or a (low, high) pair; got {cap!r}"
            )
        lo = -math.inf if cap[0] is None else float(cap[0])
        hi = math.inf if cap[1] is None else float(cap[1])
        if math.isnan(lo) or math.isnan(hi) or not lo < hi:
            raise ValueError(f"`cap` of {owner} must satisfy low < high; got {cap!r}")
        return (lo, hi)
    try:
        c = float(cap)
    except (TypeError, ValueError):
        raise TypeError(f"`cap` of {owner} must be a number, a pair or None; got {cap!r}") from None
    if not (math.isfinite(c) and c > 0):
        raise ValueError(f"`cap` of {owner} must be a finite number > 0; got {cap!r}")
    return {
        "high": (-math.inf, c),
        "low": (-c, math.inf),
        "both": (-c, c),
    }[sides]


def params_equal(a: dict, b: dict) -> bool:
    """Equality of two parameter dicts; array-valued entries compare element by element."""
    if a.keys() != b.keys():
        return False
    for k in a:
        va, vb = a[k], b[k]
        if isinstance(va, np.ndarray | list | tuple) or isinstance(vb, np.ndarray | list | tuple):
            try:
                if not np.array_equal(np.asarray(va, dtype=object), np.asarray(vb, dtype=object)):
                    return False
            except Exception:
                return False
        elif va != vb:
            return False
    return True


class Params:
    """Mixin: constructor parameters in ``_params`` give ``get_params``, ``repr``, ``==``, ``hash``.

    Links, scalings and losses store what they were built with in ``self._params``; two objects
    are equal when they are of the same type with equal parameters (as scikit-learn compares
    estimators' parameters), which lets them serve as dictionary keys and survive
    :func:`sklearn.base.clone`.
    """

    _params: dict[str, Any]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (for ``repr``, equality and :func:`sklearn.base.clone`)."""
        return dict(getattr(self, "_params", {}))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _repr_html_(self) -> str:
        """Notebook display: the object's name, kind and parameters as a small table."""
        from ._repr import html_table

        rows: list[tuple[str, Any]] = []
        for attr in ("name", "structure"):
            value = getattr(self, attr, None)
            if isinstance(value, str) and value:
                rows.append((attr, value))
        rows += [(k, repr(v) if isinstance(v, Params) else v) for k, v in self.get_params().items()]
        return html_table(rows, header=("parameter", "value"), title=type(self).__name__)

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return False
        return params_equal(self.get_params(), other.get_params())  # same type as self: a Params

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.get_params())))


class Capped:
    """Mixin: evaluate ``_f``, ``_df``, ``_F`` (standardized argument) with caps.

    Subclasses define ``_f(x, xp)``, ``_df(x, xp)``, ``_F(x, xp)`` on the exact region; the
    constructor helper :meth:`_set_affine` sets the scale, shift and ``_lo``, ``_hi``,
    ``_cap_mode`` from the user's ``alpha``, ``beta``, ``cap`` and ``cap_mode``.
    """

    _lo: float = -math.inf
    _hi: float = math.inf
    _cap_mode: str = "linear"
    #: Which unbounded sides a numeric ``cap`` applies to: "high", "low" or "both".
    _cap_sides: ClassVar[str] = "both"
    #: The cap that ``cap="default"`` stands for.
    _default_cap: ClassVar[float | None] = None

    def _set_affine(self, alpha: Any, beta: Any, cap: Any, cap_mode: str) -> Any:
        """Validate and set ``alpha``, ``beta`` and the caps; returns the cap in effect."""
        owner = type(self).__name__
        self.alpha = positive_float(alpha, "alpha", owner)
        self.beta = finite_float(beta, "beta", owner)
        cap_value = self._default_cap if isinstance(cap, str) and cap == "default" else cap
        if isinstance(cap_value, str):
            raise ValueError(
                f"`cap` of {owner} must be a number, a pair, None or 'default'; got {cap!r}"
            )
        self._lo, self._hi = parse_cap(cap_value, cap_mode, owner, sides=self._cap_sides)
        self._cap_mode = cap_mode
        return cap_value

    def _f(self, x, xp):
        raise NotImplementedError

    def _df(self, x, xp):
        raise NotImplementedError

    def _F(self, x, xp):
        raise NotImplementedError

    @property
    def capped(self) -> bool:
        return math.isfinite(self._lo) or math.isfinite(self._hi)

    @property
    def caps(self) -> tuple[float, float]:
        """The caps ``(lo, hi)`` on the standardized argument ``x`` (±inf where uncapped);
        read by the fast paths (``selrank.fast``) and the convexity checks."""
        return self._lo, self._hi

    @property
    def cap_mode(self) -> str:
        """How the function continues beyond the caps: ``"linear"`` or ``"flat"``."""
        return self._cap_mode

    def exact_triple(self, x: Array, xp: Any) -> tuple[Array, Array, Array]:
        """``(f, f', F)`` of the standardized argument on the exact region (no caps applied):
        the definition the fast paths (``selrank.fast``) copy or evaluate directly."""
        return self._f_df_F(x, xp)

    def inside_caps(self, x: Array) -> bool:
        """Cheap host-side check that every ``x`` is inside the caps.

        Lets the common case skip the continuation arithmetic. Done for NumPy arrays and CPU
        tensors (no autograd graph is affected: the exact branch is the same function there);
        device arrays always take the branch-free path (no device synchronisation).
        """
        if not self.capped:
            return True
        if isinstance(x, np.ndarray):
            return x.size > 0 and bool(x.min() >= self._lo and x.max() <= self._hi)
        if is_torch(x) and x.device.type == "cpu" and x.numel() > 0:
            # one-sided caps need one reduction (NaN compares False: not inside)
            if math.isinf(self._lo):
                return float(x.detach().amax()) <= self._hi
            if math.isinf(self._hi):
                return float(x.detach().amin()) >= self._lo
            lo, hi = torch_aminmax(x)
            return bool(lo >= self._lo and hi <= self._hi)
        return False

    def _clip(self, x, xp):
        lo = None if math.isinf(self._lo) else self._lo
        hi = None if math.isinf(self._hi) else self._hi
        return xp.clip(x, lo, hi)

    def _cf(self, x, xp=None):
        xp = xp or get_namespace(x)
        if self.inside_caps(x):
            return self._f(x, xp)
        xc = self._clip(x, xp)
        if self._cap_mode == "flat":
            return self._f(xc, xp)
        return self._f(xc, xp) + self._df(xc, xp) * (x - xc)

    def _cdf(self, x, xp=None):
        xp = xp or get_namespace(x)
        if self.inside_caps(x):
            return self._df(x, xp)
        xc = self._clip(x, xp)
        d = self._df(xc, xp)
        if self._cap_mode == "flat":
            return xp.where(x == xc, d, xp.zeros_like(d))
        return d

    def _cF(self, x, xp=None):
        xp = xp or get_namespace(x)
        if self.inside_caps(x):
            return self._F(x, xp)
        xc = self._clip(x, xp)
        t = x - xc
        out = self._F(xc, xp) + self._f(xc, xp) * t
        if self._cap_mode == "linear":
            out = out + 0.5 * self._df(xc, xp) * t * t
        return out

    def _f_df_F(self, x, xp):
        """``(f, f', F)`` on the exact region; subclasses override it to share work."""
        return self._f(x, xp), self._df(x, xp), self._F(x, xp)

    def _f_df(self, x, xp):
        """``(f, f')`` on the exact region; subclasses override it to share work."""
        return self._f(x, xp), self._df(x, xp)

    def _c_triple(self, x, xp=None):
        """Capped ``(f, f', F)`` from one evaluation of the exact triple at the clipped argument."""
        xp = xp or get_namespace(x)
        if self.inside_caps(x):
            return self._f_df_F(x, xp)
        xc = self._clip(x, xp)
        f, df, F = self._f_df_F(xc, xp)
        t = x - xc
        if self._cap_mode == "flat":
            return f, xp.where(t == 0, df, xp.zeros_like(df)), F + f * t
        return f + df * t, df, F + (f + 0.5 * df * t) * t

    def _c_pair(self, x, xp=None):
        """Capped ``(f, f')`` from one evaluation of the exact pair at the clipped argument."""
        xp = xp or get_namespace(x)
        if self.inside_caps(x):
            return self._f_df(x, xp)
        xc = self._clip(x, xp)
        f, df = self._f_df(xc, xp)
        t = x - xc
        if self._cap_mode == "flat":
            return f, xp.where(t == 0, df, xp.zeros_like(df))
        return f + df * t, df

    def same_cap_piece(self, x_a: Array, x_b: Array, xp: Any) -> Array | None:
        """True where ``x_a`` and ``x_b`` lie in the same piece (inside, above or below the caps).

        The Taylor form of a Bregman divergence is only exact between points of one smooth piece.
        """
        if not self.capped:
            return None
        same = xp.ones_like(x_a, dtype=xp.bool)
        if math.isfinite(self._hi):
            same = same & ((x_a > self._hi) == (x_b > self._hi))
        if math.isfinite(self._lo):
            same = same & ((x_a < self._lo) == (x_b < self._lo))
        return same

    def _cap_repr(self) -> str:
        if not self.capped:
            return ""
        lo = None if math.isinf(self._lo) else self._lo
        hi = None if math.isinf(self._hi) else self._hi
        return f", cap=({lo}, {hi}), cap_mode={self._cap_mode!r}"
