r"""The fast paths: every fast copy of a formula, in one place, registered against its class.

A link or scaling *defines* its maths once (:mod:`selrank.links`, :mod:`selrank.scalings`),
and generic code derives every loss, gradient and Hessian from that definition. For a few
classes that matter for speed, the same formula is written again here — as a numba kernel,
fused NumPy or in-place torch code — and each such copy is

* **registered** in :data:`FAST_PATHS` against the class it accelerates, the operation and
  the backend (this is the only place a loss or head learns that a fast copy exists: they
  ask :func:`lookup`);
* **tested equal** to the generic definition, at extreme scores too, in float32 and float64,
  by tests generated from this registry (``tests/fast/``): a new entry is tested without a
  test edit;
* **reported when missing**: :func:`paths_for` lists what a link or scaling has, and a loss
  or head that has fast paths for other classes warns once (:class:`FastPathWarning`, once
  per class and operation) when it takes the generic path because the class has none.

The registry
------------

Each row is one entry of :data:`FAST_PATHS` (``print(selrank.fast.table())`` prints it as it
is at run time)::

    class        operation          backend  the fast copy                  matches     used by
    Identity     pairwise           numba    fast._sampled, fast._pairwise  exactly     Pairwise (NumPy float64),
    Exp          pairwise           numba    (links: fast._links)           exactly       PairwiseLoss (CPU tensors)
    Sinh         pairwise           numba                                   exactly
    Sigmoid      pairwise           numba                                   exactly
    Identity     weighted_pairwise  numba    fast._weighted_pairwise        exactly     WeightedPairwise (NumPy)
    Exp          weighted_pairwise  numba                                   exactly
    Sinh         weighted_pairwise  numba                                   exactly
    Sigmoid      weighted_pairwise  numba                                   exactly
    Exp          bregman_grad       numba    fast._pointwise_torch          exactly     PointwiseLoss (CPU tensors;
                                                                                          alpha 1, beta 0)
    Link         bregman_grad       torch    fast._bregman_torch            subclasses  PointwiseLoss (tensors)
      (the affine catalogue: the subclasses that keep its bregman_grad and Link.bregman)
    Scaling      composite_softmax  numpy    fast._softmax                  subclasses  Listwise (NumPy)
    Scaling      composite_softmax  torch    fast._softmax_torch            subclasses  ListwiseLoss (tensors)

Every other link (Softplus added by a user, :class:`~selrank.links.SmeLU` in
:class:`~selrank.losses.Pairwise`, a :class:`~selrank.links.CallableLink`, ...) takes the
generic path, which is correct for any link; the only cost is speed, and it is reported.

*Exactly* means ``type(obj) is cls``: the numba kernels re-implement the link's formula
(``_f``, ``_df``, ``_F`` of :class:`~selrank.links.Sinh`, say), so a subclass that changes
any of them would silently get the parent's maths. The composite-softmax copies only fuse the
softmax arithmetic around the scaling's own ``q_dq_Q``, which any subclass keeps; the affine
links' in-place torch Bregman code uses the link's own ``_f_df_F`` and is skipped for a class
that overrides :meth:`~selrank.links.Link.bregman`. Backends: ``numba`` — a numba kernel (on
NumPy arrays, or on CPU tensors through NumPy views; needs the ``fast`` extra), ``numpy`` —
fused NumPy code, ``torch`` — in-place torch code.

The numba kernels of ``_pairwise``, ``_sampled`` and ``_weighted_pairwise`` inline the capped
links of ``_links``; their disk cache is keyed on every kernel module their code comes from
(:mod:`selrank._numba`), so an edit to ``_links.py`` recompiles them.

Examples
--------
>>> from selrank import fast
>>> from selrank.links import Sinh, get_link
>>> fast.paths_for(Sinh())
[('pairwise', 'numba'), ('weighted_pairwise', 'numba'), ('bregman_grad', 'torch')]
>>> fast.paths_for(get_link("smelu"))
[('bregman_grad', 'torch')]
>>> fast.lookup(Sinh(), "pairwise", "numba").classes
('Identity', 'Exp', 'Sinh', 'Sigmoid')
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .._affine import Capped
from ..links import Exp, Link
from ..scalings import Scaling
from ._links import _GOLDEN as GOLDEN
from ._links import KINDS, available, draw_key, kernel_fcaps, kernel_link, mix64
from ._pairwise import pairwise_grad_hess, pairwise_target_grad
from ._sampled import pairwise_list_terms, pairwise_sampled
from ._softmax import segment_softmax_h_hess
from ._weighted_pairwise import weighted_pairwise

__all__ = [
    "FastPath",
    "FAST_PATHS",
    "FastPathWarning",
    "lookup",
    "paths_for",
    "table",
    "off",
    "available",
    "warm_up",
    "kernel_link",
    "kernel_fcaps",
    "draw_key",
    "mix64",
    "GOLDEN",
    "pairwise_grad_hess",
    "pairwise_target_grad",
    "pairwise_sampled",
    "pairwise_list_terms",
    "weighted_pairwise",
    "segment_softmax_h_hess",
]


class FastPathWarning(UserWarning):
    """A loss or head takes its generic path because the link or scaling has no fast copy of
    the operation (which other classes have). Issued once per class and operation; silence it
    with ``warnings.simplefilter("ignore", selrank.fast.FastPathWarning)``."""


@dataclass(frozen=True)
class FastPath:
    """One fast copy of a formula: the class it accelerates, what it computes, where it lives.

    Attributes
    ----------
    cls : type
        The class (a :class:`~selrank.links.Link` or :class:`~selrank.scalings.Scaling`).
    operation : str
        What it computes (``"pairwise"``, ``"weighted_pairwise"``, ``"bregman_grad"``,
        ``"composite_softmax"``).
    backend : str
        ``"numba"``, ``"numpy"`` or ``"torch"``.
    function : str
        ``"module:name"`` of the entry point, imported on first :meth:`load` (torch and numba
        are imported only then).
    generic : str
        The generic definition it is tested equal to.
    subclasses : bool
        Whether subclasses of ``cls`` are served too (else exactly ``cls``).
    excludes : callable or None
        For ``subclasses`` entries: a class for which it returns True is not served (a
        subclass that overrides the formula the copy repeats).
    condition : str
        When it applies beyond the class (runtime conditions its entry point checks itself,
        returning ``None`` for the caller's generic path where they fail).
    """

    cls: type
    operation: str
    backend: str
    function: str
    generic: str
    subclasses: bool = False
    excludes: Callable[[type], bool] | None = field(default=None, compare=False)
    condition: str = ""

    def serves(self, kind: type) -> bool:
        """Whether this fast path applies to objects of class ``kind``."""
        if not self.subclasses:
            return kind is self.cls
        if not issubclass(kind, self.cls):
            return False
        return self.excludes is None or not self.excludes(kind)

    @property
    def classes(self) -> tuple[str, ...]:
        """Names of the exact classes of this entry's operation and backend (for messages)."""
        return tuple(
            p.cls.__name__
            for p in FAST_PATHS.values()
            if (p.operation, p.backend) == (self.operation, self.backend)
        )

    def load(self) -> Any:
        """The entry point (its module imported on the first call)."""
        module, name = self.function.split(":")
        return getattr(importlib.import_module(module), name)


def _not_affine_generic(kind: Any) -> bool:
    """Not a link of the affine catalogue that keeps its generic Bregman form: the torch copy
    repeats the catalogue's ``bregman_grad`` (``selrank.links._AffineLink``, private to links:
    reached here through :class:`~selrank.links.Exp`, which inherits it) on the class's own
    ``_f_df_F``, so a class that writes its own loss (the ``bregman`` hook) or its own
    ``bregman_grad``, or has no caps machinery, is not served."""
    return (
        not issubclass(kind, Capped)
        or "bregman" in kind.hooks
        or kind.bregman_grad is not Exp.bregman_grad
    )


_PAIR_LINKS = tuple(KINDS)  # the classes the pairwise kernels implement
_ENTRIES: list[FastPath] = [
    *(
        FastPath(
            cls,
            "pairwise",
            "numba",
            "selrank.fast._sampled:pairwise_sampled",  # (and pairwise_list_terms for the head)
            "selrank.losses.Pairwise (pair arrays and link.h_dh, link.bregman)",
            condition="NumPy float64 scores in grouped order, or CPU tensors without a graph",
        )
        for cls in _PAIR_LINKS
    ),
    *(
        FastPath(
            cls,
            "weighted_pairwise",
            "numba",
            "selrank.fast._weighted_pairwise:weighted_pairwise",
            "selrank.losses.WeightedPairwise (NumPy pair arrays)",
            condition="NumPy scores",
        )
        for cls in _PAIR_LINKS
    ),
    FastPath(
        Exp,
        "bregman_grad",
        "numba",
        "selrank.fast._pointwise_torch:exp_bregman_grad",
        "selrank.links.Link.bregman_grad (link.bregman, link.h)",
        condition="alpha 1, beta 0, contiguous CPU float32/float64 tensors without a graph, "
        "scores inside the caps",
    ),
    FastPath(
        Link,
        "bregman_grad",
        "torch",
        "selrank.fast._bregman_torch:bregman_grad_torch",
        "selrank.links.Link.bregman_grad (link.bregman, link.h)",
        subclasses=True,
        excludes=_not_affine_generic,
        condition="floating tensors of one dtype, scores inside the caps",
    ),
    FastPath(
        Scaling,
        "composite_softmax",
        "numpy",
        "selrank.fast._softmax:segment_softmax_h_hess",
        "selrank.scalings.composite_softmax, composite_softmax_hess_diag",
        subclasses=True,
        condition="NumPy scores in grouped order",
    ),
    FastPath(
        Scaling,
        "composite_softmax",
        "torch",
        "selrank.fast._softmax_torch:softmax_terms_fast",
        "selrank.scalings.composite_softmax, composite_softmax_bregman",
        subclasses=True,
        condition="tensors outside an autograd graph, target='score', no list in the Taylor range",
    ),
]

#: The registry: ``(class, operation, backend)`` to its :class:`FastPath`.
FAST_PATHS: dict[tuple[type, str, str], FastPath] = {
    (p.cls, p.operation, p.backend): p for p in _ENTRIES
}

_warned: set[tuple[type, str, str]] = set()
_warn_lock = threading.Lock()


def lookup(obj: Any, operation: str, backend: str, *, warn: bool = True) -> FastPath | None:
    """The fast path of ``operation`` on ``backend`` for ``obj``'s class, or None.

    Exact entries match ``type(obj)`` only; ``subclasses`` entries match along its MRO. With
    ``warn`` (the default), a class without a fast path for an operation that other classes
    have gets one :class:`FastPathWarning` (per class, operation and backend): the caller is
    about to take the slower generic path. Call it only where the fast path would otherwise
    run (the right arrays, numba importable), so that the warning means what it says.
    """
    if not _enabled.get():
        return None
    kind = type(obj)
    hit = FAST_PATHS.get((kind, operation, backend))
    if hit is not None:
        return hit
    for base in kind.__mro__[1:]:
        hit = FAST_PATHS.get((base, operation, backend))
        if hit is not None and hit.serves(kind):
            return hit
    others = [p for p in _ENTRIES if (p.operation, p.backend) == (operation, backend)]
    if warn and others:
        with _warn_lock:
            first = (kind, operation, backend) not in _warned
            _warned.add((kind, operation, backend))
        if first:
            names = ", ".join(p.cls.__name__ for p in others)
            warnings.warn(
                f"no fast {operation} path ({backend}) for {kind.__name__}: the generic path "
                f"runs, correct but slower (fast paths exist for {names}; "
                "selrank.fast.paths_for(obj), docs/architecture.md#fast-paths)",
                FastPathWarning,
                stacklevel=_caller_level(),
            )
    return None


_enabled: ContextVar[bool] = ContextVar("selrank_fast_paths", default=True)


@contextmanager
def off() -> Iterator[None]:
    """Switch every fast path off in this context (thread or task): :func:`lookup` returns
    None without a warning, so losses bound and heads run inside take their generic paths —
    the reference the equivalence tests compare against, and a way to rule a fast path out
    when chasing a numerical question.

    Examples
    --------
    >>> from selrank import fast
    >>> from selrank.links import Exp
    >>> with fast.off():
    ...     print(fast.lookup(Exp(), "pairwise", "numba"))
    None
    """
    token = _enabled.set(False)
    try:
        yield
    finally:
        _enabled.reset(token)


def _caller_level() -> int:
    """``stacklevel`` of the first frame outside selrank (the user's call that bound the loss)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("selrank."):
        frame = frame.f_back
        level += 1
    return level


def paths_for(obj: Any) -> list[tuple[str, str]]:
    """The ``(operation, backend)`` fast paths that serve ``obj`` (a link or scaling, or its
    class), in registry order; ``[]`` when it has none. Nothing is imported or compiled."""
    kind = obj if isinstance(obj, type) else type(obj)
    return [(p.operation, p.backend) for p in _ENTRIES if p.serves(kind)]


def table() -> str:
    """The registry as a plain-text table (class, operation, backend, entry point)."""
    rows = [("class", "operation", "backend", "entry point", "matches")]
    for p in _ENTRIES:
        rows.append(
            (
                p.cls.__name__,
                p.operation,
                p.backend,
                p.function,
                "subclasses" if p.subclasses else "exactly",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def warm_up(*, torch: bool = True) -> None:
    """Compile the numba kernels now, for the argument types the losses and heads pass (one
    specialisation each), so that a container image or CI cache can hold the compiled code:
    ``python -c "import selrank.fast; selrank.fast.warm_up()"`` after installing. With a
    writable numba cache (``NUMBA_CACHE_DIR`` or the package folder) later processes load them
    instead of compiling (``benchmarks/cold_start.py``). With ``torch`` (and torch installed)
    the torch pointwise head's kernel too. Without numba it does nothing."""
    if not available():
        return
    import numpy as np

    from ..links import Sigmoid, Sinh

    params = kernel_link(Sinh(cap=3.0))
    assert params is not None  # (Sinh is a kernel class)
    offsets = np.array([0, 3, 5], dtype=np.int64)
    pred, y = np.linspace(-1.0, 1.0, 5), np.array([2.0, 0.0, 1.0, 1.0, 0.0])
    target = pairwise_target_grad(y, offsets, None, False, params)
    pairwise_grad_hess(pred, y, offsets, None, False, params, target)
    sigmoid = kernel_link(Sigmoid())
    assert sigmoid is not None  # (Sigmoid is a kernel class)
    # the sampled-pairs kernels (one per pair method and link family): all / top-k pairs with
    # the default odd link, with any other link, and the "mean" draws
    pairwise_sampled(pred, y, offsets, None, False, params, "topk", 2, 0, None, (0.0, 0.0))
    pairwise_sampled(pred, y, offsets, None, False, sigmoid, "topk", 2, 0, None, (0.0, 0.0))
    pairwise_sampled(pred, y, offsets, None, False, params, "mean", 2, 0, None, (0.0, 0.0))
    # the weighted loss's kernels of the default link (sinh) and of the lambdarank twin
    # (sigmoid, target "order"), all pairs and top-k, and its "mean" draws
    gain, inv = y.copy(), np.ones(2)
    weighted_pairwise(pred, y, gain, offsets, None, inv, params, False, 0.0, "topk", 2, 0, True)
    weighted_pairwise(pred, y, gain, offsets, None, inv, sigmoid, True, 1.0, "topk", 2, 0, True)
    weighted_pairwise(pred, y, gain, offsets, None, inv, params, False, 0.0, "mean", 2, 0, True)
    if torch and importlib.util.find_spec("torch") is not None:
        from ._pointwise_torch import warm_up as warm_up_torch

        warm_up_torch()
