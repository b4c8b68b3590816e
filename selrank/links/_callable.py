"""A user-defined link from a callable ``h`` alone (autodiff slope, quadrature primitive,
bisection inverse).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import _array as A
from .._array import Array
from ._base import Link, _clip_at_zero, _quad


class CallableLink(Link):
    r"""A user-defined link from a callable ``h`` alone.

    Parameters
    ----------
    h : callable
        Monotone non-decreasing function of an array. Written with array-API functions
        (or torch functions) it also works on tensors; written with NumPy, on NumPy arrays.
    dh, H, h_inv : callable, optional
        Closed forms where known. Otherwise ``dh`` comes from torch autograd when ``h``
        accepts tensors (``derivative="autodiff"``) or central differences, ``H`` from
        composite Gauss–Legendre quadrature (slower: 256 evaluations of ``h`` per point) and
        ``h_inv`` from bisection.
    domain : (float, float)
        Open interval of valid scores.
    derivative : {"auto", "autodiff", "differences"}
        How ``dh`` is obtained when not given.
    name : str
        The link's name (in its repr and parameters).

    Notes
    -----
    Only the gradient ``h(ẑ) − h(s)`` is needed to train — "losses with analytical gradients
    even if there is no analytical expression for the loss".

    Examples
    --------
    >>> link = CallableLink(lambda z: z ** 3 + z)
    >>> round(float(link.dh(1.0)), 5), round(float(link.H(1.0)), 6)
    (4.0, 0.75)
    """

    name = "callable"

    def __init__(
        self,
        h: Callable,
        *,
        dh: Callable | None = None,
        H: Callable | None = None,
        h_inv: Callable | None = None,
        domain: tuple[float, float] = (-math.inf, math.inf),
        derivative: str = "auto",
        name: str = "callable",
        smooth: bool = True,
    ):
        if not callable(h):
            raise TypeError(f"`h` of CallableLink must be callable; got {type(h).__name__}")
        for nm, f in (("dh", dh), ("H", H), ("h_inv", h_inv)):
            if f is not None and not callable(f):
                raise TypeError(
                    f"`{nm}` of CallableLink must be callable or None; got {type(f).__name__}"
                )
        if derivative not in ("auto", "autodiff", "differences"):
            raise ValueError(
                f"`derivative` of CallableLink must be 'auto', 'autodiff' or 'differences'; got {derivative!r}"
            )
        lo, hi = (float(domain[0]), float(domain[1]))
        if not lo < hi:
            raise ValueError(
                f"`domain` of CallableLink must be an interval (low < high); got {domain!r}"
            )
        self._h, self._dh, self._H, self._hinv = h, dh, H, h_inv
        self.domain = (lo, hi)
        self.name = name
        self.smooth = smooth
        self._derivative = derivative
        self._autodiff_ok: bool | None = None if derivative != "differences" else False
        self._params = {
            "h": h,
            "dh": dh,
            "H": H,
            "h_inv": h_inv,
            "domain": domain,
            "derivative": derivative,
            "name": name,
            "smooth": smooth,
        }

    def h(self, z: Array) -> Array:
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        out = self._h(z)
        return A.as_float_array(out, xp, like=z)

    def dh(self, z: Array) -> Array:
        if self._dh is not None:
            xp = A.get_namespace(z)
            z = A.as_float_array(z, xp)
            return A.as_float_array(self._dh(z), xp, like=z)
        if self._autodiff_ok is not False:
            out = self._autodiff(z)
            if out is not None:
                return out
        return Link.dh(self, z)

    def _autodiff(self, z):
        try:
            import torch
        except ImportError:
            if self._derivative == "autodiff":
                raise ImportError(
                    "derivative='autodiff' requires torch: pip install 'selrank[torch]'"
                ) from None
            self._autodiff_ok = False
            return None
        xp = A.get_namespace(z)
        zt = torch.as_tensor(A.to_numpy(A.as_float_array(z, xp)) if not A.is_torch(z) else z)
        create = bool(A.is_torch(z) and z.requires_grad)
        leaf = zt if create else zt.detach().clone().requires_grad_(True)
        try:
            with torch.enable_grad():
                val = self._h(leaf)
                if not (torch.is_tensor(val) and val.requires_grad):
                    raise TypeError("h did not return a differentiable tensor")
                (g,) = torch.autograd.grad(val.sum(), leaf, create_graph=create)
        except Exception:
            if self._derivative == "autodiff":
                raise
            self._autodiff_ok = False
            return None
        self._autodiff_ok = True
        if A.is_torch(z):
            return g
        return A.as_float_array(g.detach().numpy(), xp, like=A.as_float_array(z, xp))

    def H(self, z: Array) -> Array:
        if self._H is not None:
            xp = A.get_namespace(z)
            z = A.as_float_array(z, xp)
            return A.as_float_array(self._H(z), xp, like=z)
        return Link.H(self, z)

    def h_inv(self, y: Array) -> Array:
        if self._hinv is not None:
            xp = A.get_namespace(y)
            y = A.as_float_array(y, xp)
            return A.as_float_array(self._hinv(y), xp, like=y)
        return Link.h_inv(self, y)

    def bregman(self, z_hat: Array, z: Array) -> Array:
        if self._H is not None:
            return Link.bregman(self, z_hat, z)
        # integrate h(t) - h(z) over [z, z_hat] directly: no cancellation, no reference point
        xp = A.get_namespace(z_hat, z)
        z_hat = A.as_float_array(z_hat, xp)
        z = A.as_float_array(z, xp, like=z_hat)
        hz = self.h(z)
        flat_hz = xp.reshape(hz, (-1, 1))
        out = _quad(
            lambda t: self.h(t) - flat_hz, xp.reshape(z, (-1,)), xp.reshape(z_hat, (-1,)), xp
        )
        out = xp.reshape(out, z.shape)
        return _clip_at_zero(out, xp)
