r"""Standardized function triples :math:`f, f', F` shared by links and scalings.

A catalogue link is :math:`h(z) = f(\alpha(z - \beta))` and a catalogue scaling
:math:`q(z) = \alpha f(\alpha(z + \beta))`; several of them use the same standardized
function :math:`f` of :math:`x`, with derivative :math:`f'` and primitive :math:`F`. Each
triple is written here once, as a mixin of ``_f``, ``_df``, ``_F`` (and the fused ``_f_df``,
``_f_df_F`` that share the transcendental work), and both layers inherit it: ``Exp`` and
``ExpScaling`` are the same three functions under two parameterisations.

The mixins read no state except :class:`SmeLUFunction` (its half-width ``self.c``). Link-only
pieces (the inverse ``_finv``, the conjugate ``_Fconj``, the range of ``f``) stay with the
links.

This module sits below :mod:`selrank.scalings` and :mod:`selrank.links` and imports only
:mod:`selrank._array`.
"""

from __future__ import annotations

from typing import Any

from . import _array as A

__all__ = [
    "DEFAULT_CAP",
    "bregman_threshold",
    "ExpFunction",
    "NegExpFunction",
    "SigmoidFunction",
    "SinhFunction",
    "SmeLUFunction",
    "StepFunction",
]

#: Default cap (on the standardized argument ``x``) of the unbounded exponential links and
#: scalings: exact for ``|x| <= 30`` and continued linearly beyond, which keeps float32 finite
#: (``e**30 ≈ 1e13``) for scores up to ±1e4 and beyond.
DEFAULT_CAP = 30.0


def bregman_threshold(x: Any, xp: Any) -> float:
    """Distance (in ``x`` units) below which a Bregman divergence uses its Taylor form.

    Direct ``H(x̂) - H(x) - d·h(x)`` loses ``eps·|H| / d²`` relative accuracy to
    cancellation; Simpson's rule on the integral form loses ``O(d³)``. They cross near
    ``eps**(1/5)``.
    """
    return 4.0 * float(xp.finfo(x.dtype).eps) ** 0.2


class ExpFunction:
    r""":math:`f = f' = F = e^{x}`."""

    def _f(self, x, xp):
        return xp.exp(x)

    _df = _f
    _F = _f

    def _f_df(self, x, xp):
        e = xp.exp(x)
        return e, e

    def _f_df_F(self, x, xp):
        e = xp.exp(x)
        return e, e, e

    def _df_midpoint(self, df_a, df_b):
        """:math:`f'((a+b)/2) = \\sqrt{f'(a) f'(b)}` from :math:`f'` at both ends (torch; into ``df_a``)."""
        return df_a.mul_(df_b).sqrt_()


class NegExpFunction:
    r""":math:`f = -e^{-x}`, :math:`f' = F = e^{-x}`."""

    def _f(self, x, xp):
        return -xp.exp(-x)

    def _df(self, x, xp):
        return xp.exp(-x)

    def _F(self, x, xp):
        return xp.exp(-x)

    def _f_df(self, x, xp):
        e = xp.exp(-x)
        return -e, e

    def _f_df_F(self, x, xp):
        e = xp.exp(-x)
        return -e, e, e

    def _df_midpoint(self, df_a, df_b):
        """:math:`f'((a+b)/2) = \\sqrt{f'(a) f'(b)}` from :math:`f'` at both ends (torch; into ``df_a``)."""
        return df_a.mul_(df_b).sqrt_()


class SigmoidFunction:
    r""":math:`f = \sigma(x)`, :math:`f' = \sigma(x)(1 - \sigma(x))`, :math:`F = \mathrm{softplus}(x)`."""

    def _f(self, x, xp):
        return A.sigmoid(x, xp)

    def _df(self, x, xp):
        s = A.sigmoid(x, xp)
        return s * (1.0 - s)

    def _F(self, x, xp):
        return A.softplus(x, xp)

    def _f_df(self, x, xp):
        s = A.sigmoid(x, xp)
        return s, s * (1.0 - s)

    def _f_df_F(self, x, xp):
        s = A.sigmoid(x, xp)
        return s, s * (1.0 - s), A.softplus(x, xp)


class SinhFunction:
    r""":math:`f = \sinh x`, :math:`f' = F = \cosh x`."""

    def _f(self, x, xp):
        return xp.sinh(x)

    def _df(self, x, xp):
        return xp.cosh(x)

    def _F(self, x, xp):
        return xp.cosh(x)

    def _f_df(self, x, xp):
        return xp.sinh(x), xp.cosh(x)

    def _f_df_F(self, x, xp):
        c = xp.cosh(x)
        return xp.sinh(x), c, c


class SmeLUFunction:
    r"""SmeLU gradient of half-width ``self.c``: :math:`f = \mathrm{clip}((x + c)/2c, 0, 1)`,
    :math:`F = \mathrm{SmeLU}(x)`."""

    c: float

    def _f(self, x, xp):
        return xp.clip((x + self.c) / (2.0 * self.c), 0.0, 1.0)

    def _df(self, x, xp):
        inside = (x > -self.c) & (x < self.c)
        return xp.astype(inside, x.dtype) * (0.5 / self.c)

    def _f_df(self, x, xp):
        u = (x + self.c) * (0.5 / self.c)
        inside = (u > 0.0) & (u < 1.0)
        return xp.clip(u, 0.0, 1.0), xp.astype(inside, x.dtype) * (0.5 / self.c)

    def _F(self, x, xp):
        xc = xp.clip(x, -self.c, self.c)
        band = (xc + self.c) ** 2 / (4.0 * self.c)
        return band + xp.maximum(x - self.c, xp.zeros_like(x))


class StepFunction:
    r"""Heaviside step: :math:`f = \mathbb{1}[x > 0]` (½ at 0), :math:`f' = 0`, :math:`F = \max(x, 0)`."""

    def _f(self, x, xp):
        return xp.where(
            x > 0, xp.ones_like(x), xp.where(x < 0, xp.zeros_like(x), xp.full_like(x, 0.5))
        )

    def _df(self, x, xp):
        return xp.zeros_like(x)

    def _F(self, x, xp):
        return xp.maximum(x, xp.zeros_like(x))
