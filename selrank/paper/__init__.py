"""Reproductions of the selective-matching-loss paper: underspecification analyses and figures.

* :mod:`selrank.paper.underspecification`: BUST / BLUST (Theorem 1), Appendix F and I
  reproductions, sensitivity reports.
* :mod:`selrank.paper.figures`: the paper's figures drawn from the library's own definitions
  (also reachable as :mod:`selrank.plots`).

This package sits above the core (links, scalings, losses) and the metrics; nothing below it
imports it.
"""

from __future__ import annotations

from . import underspecification
from .underspecification import *  # noqa: F403

__all__ = list(underspecification.__all__)
