r"""Numba kernel: the exp link's matching loss and gradient per item after the two exponentials.

:meth:`selrank.links.Link.bregman_grad` of the exp link on CPU tensors (the default link of
:class:`~selrank.torch.PointwiseLoss`) is two exponentials followed by about fifteen
elementwise torch passes: the gradient, the direct form, the selection of the near pairs
(:math:`|\hat s - s|` below :func:`~selrank._functions.bregman_threshold`) and their Taylor
form (Simpson's rule with the midpoint derivative :math:`\sqrt{e^{\hat s} e^{s}}`), each pass
reading and writing the whole batch. This kernel does everything after the exponentials in
one pass, in place: the gradient :math:`e^{\hat s} - e^{s}` into the buffer of
:math:`e^{\hat s}` and the loss into that of :math:`e^{s}`.

Every value is the same sequence of IEEE operations as the torch path
(:func:`selrank.fast._bregman_torch.bregman_grad_torch` with its
``_taylor_near``): the gradient ``a − b``, the direct
form ``(a − b) − d·b``, the near form ``(d·d / 6)·(b + 2·sqrt(a·b))`` selected where ``|d| <
threshold`` (the threshold rounded to the tensors' dtype, as torch compares) and ``max(·, 0)``
— without reassociation or contraction (``fastmath`` off). The gradient and the direct form
are equal bit for bit; at the near pairs the loss may differ in the last bit, because the
kernel's square root is correctly rounded and torch's vectorised one is not always
(``tests/torch/test_head_fast_paths.py``). Where the direct form is not finite the item
keeps it, as :meth:`~selrank.links.Link.bregman` does (there is no 0/1 product to poison,
so no fallback to :meth:`~selrank.links.Link.bregman` is needed). The pointwise head's
fused and general paths both call it, so they still agree bit for bit.

It applies to exactly :class:`selrank.links.Exp` with ``alpha = 1`` and ``beta = 0`` (any
cap, the scores inside it), contiguous CPU tensors of one dtype, float32 or float64, and
needs numba (the ``fast`` extra); everything else takes the torch path. The one-sided cap
(the default) is checked in the same pass, against the cap as a double like
:meth:`selrank._affine.Capped.inside_caps` (so without its two reductions); a score beyond
it, or NaN, discards the pass and the torch path runs. Two-sided caps are checked first, by
``inside_caps`` itself.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
import torch

from .._functions import bregman_threshold
from .._numba import EXP_BREGMAN_CALL, use_kernel
from ..links import Exp

__all__ = ["available", "exp_bregman_grad"]

from .._numba import available as _numba_available
from .._numba import installed as _numba_installed
from .._numba import numba

# numba is optional (the "fast" extra) and imported only when a kernel first runs
# (selrank._numba): the decorations below are lazy, and cached where a location is writable
_NUMBA = _numba_installed()


def _kernel(zh, z, a, b, thr, two, six, lo, hi):  # pragma: no cover - jitted
    n = zh.shape[0]
    if z.shape[0] != n or a.shape[0] != n or b.shape[0] != n:  # bounds of the writes below
        raise IndexError("exp link kernel: arrays of different lengths")
    inside = True  # every score in [lo, hi] (the caps; NaN is not): else the caller discards
    for i in range(zh.shape[0]):
        ea = a[i]
        eb = b[i]
        inside &= (zh[i] >= lo) & (zh[i] <= hi) & (z[i] >= lo) & (z[i] <= hi)
        d = zh[i] - z[i]
        g = ea - eb
        v = g - d * eb
        if abs(d) < thr:
            # numba's sqrt of a float32 returns a float64: stored in b it is the float32
            # sqrt (rounding a double's correctly rounded sqrt to float is exact for sqrt)
            b[i] = np.sqrt(ea * eb)
            v = ((d * d) / six) * (eb + two * b[i])
        if v < 0:
            v = v - v  # 0 (NaN stays NaN)
        a[i] = g
        b[i] = v
    return inside


if _NUMBA:
    _kernel = numba.njit(nogil=True, cache=True)(_kernel)


def available() -> bool:
    """True when numba is installed (the kernel can run); imports numba, compiles nothing."""
    return _NUMBA and _numba_available()


_calls: dict[int, int] = {}  # per link object: its calls that the kernel could serve


def _call_number(link) -> int:
    """The number of earlier calls for ``link`` that the kernel could have served (the kernel
    policy's call number, :func:`selrank._numba.use_kernel`: per link object, so per head)."""
    key = id(link)
    n = _calls.get(key)
    if n is None:
        weakref.finalize(link, _calls.pop, key, None)
        n = 0
    _calls[key] = n + 1
    return n


def exp_bregman_grad(link, z_hat: torch.Tensor, z: torch.Tensor):
    """``link.bregman_grad(z_hat, z)`` through the kernel, or None where it does not apply."""
    if not (
        type(link) is Exp
        and link.alpha == 1.0
        and link.beta == 0.0
        and z_hat.dtype in (torch.float32, torch.float64)
        and z.dtype == z_hat.dtype
        and z_hat.shape == z.shape
        and z_hat.device.type == "cpu"
        and z.device.type == "cpu"
        and z_hat.numel() > 0
        and z_hat.is_contiguous()
        and z.is_contiguous()
        and not (z_hat.requires_grad or z.requires_grad)
        and use_kernel("exp_bregman", _call_number(link), z_hat.numel() + EXP_BREGMAN_CALL)
        and available()
    ):
        return None
    lo, hi = (float(c) for c in link.caps)
    if math.isfinite(lo) and math.isfinite(hi):  # two caps: Capped.inside_caps as it is
        if not (link.inside_caps(z_hat) and link.inside_caps(z)):
            return None
        lo, hi = -math.inf, math.inf
    grad = torch.exp(z_hat)
    values = torch.exp(z)
    np_dtype = np.float32 if z.dtype == torch.float32 else np.float64
    # a one-sided cap (the default) is checked in the same pass, against the cap as a double
    # like Capped.inside_caps (two reductions and synchronisations less); a score beyond it,
    # or NaN, discards the pass: the torch path
    inside = _kernel(
        z_hat.numpy().reshape(-1),
        z.numpy().reshape(-1),
        grad.numpy().reshape(-1),
        values.numpy().reshape(-1),
        np_dtype(bregman_threshold(z, torch)),
        np_dtype(2.0),
        np_dtype(6.0),
        lo,
        hi,
    )
    return (values, grad) if inside else None


def warm_up() -> None:
    """Compile the kernel for float32 and float64 now (see
    :func:`selrank.fast.warm_up`)."""
    if not available():
        return
    from .._numba import set_kernel_policy

    link = Exp()
    previous = set_kernel_policy("eager")  # whatever the policy: this is the compile step
    try:
        for dtype in (torch.float32, torch.float64):
            z = torch.linspace(-1.0, 1.0, 8, dtype=dtype)
            exp_bregman_grad(link, z, torch.zeros(8, dtype=dtype))
    finally:
        set_kernel_policy(previous)
