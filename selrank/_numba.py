r"""numba for the kernel modules: imported when a kernel first runs, cached where it can be.

A kernel module writes ``from .._numba import numba`` and decorates as with numba itself
(``numba.njit(nogil=True, cache=True)(f)``, ``numba.njit(inline="always")(g)``). Until one of
its kernels is first called nothing of numba is imported (``import selrank.losses`` does not
pay numba's ~0.4-1 s import); :func:`available` tells whether numba can be imported, and
imports it, without compiling anything.

On the first call of any kernel of a module, every kernel of that module is turned into a
real numba dispatcher, in definition order, and rebound under its module-level names (so a
jitted function calling another finds a dispatcher when it compiles; numba compiles each
signature on first use, nothing eagerly). ``cache=True`` asks numba to keep compiled code on
disk; where no cache location is writable (an arbitrary user id, a read-only home and a
read-only install: numba's ``cannot cache function ...: no locator available``) the kernel is
compiled without a cache instead of failing — each process then compiles again.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any

__all__ = ["available", "installed", "numba", "LazyKernel", "caching", "njit_now", "compiled"]

_lock = threading.RLock()
_state: dict[str, Any] = {}  # "module": the numba module or None once tried
_kernels: dict[str, list[LazyKernel]] = {}  # per defining module, in definition order
_uncached: list[str] = []  # kernels compiled without a disk cache (no writable location)


def _import():
    """numba, or None when it cannot be imported (tried once)."""
    if "module" not in _state:
        with _lock:
            if "module" not in _state:
                try:
                    _state["module"] = importlib.import_module("numba")
                except ImportError:
                    _state["module"] = None
    return _state["module"]


def installed() -> bool:
    """True when numba is installed (found on the path; nothing is imported)."""
    return importlib.util.find_spec("numba") is not None


def available() -> bool:
    """True when numba can be imported (imports it; compiles nothing)."""
    return _import() is not None


def caching() -> dict[str, bool]:
    """Whether each kernel built so far keeps its compiled code on disk (``name: bool``)."""
    return {
        k.name: k.dispatcher is not None and k.name not in _uncached
        for ks in _kernels.values()
        for k in ks
        if k.options.get("cache")
    }


class NumbaMissing(ImportError, RuntimeError):
    """numba is not installed and a compiled kernel was asked for (an ``ImportError`` naming
    the extra; also a ``RuntimeError``, what earlier releases raised)."""


def _njit(func, options: dict):
    """``numba.njit(**options)(func)``, without the disk cache where numba finds no writable
    location for it."""
    nb = _import()
    if nb is None:
        raise NumbaMissing(
            f"{func.__module__}.{func.__name__} needs numba: pip install 'selrank[fast]' "
            "(or 'selrank[data]', which includes it)"
        )
    try:
        return nb.njit(**options)(func)
    except RuntimeError as err:
        if not options.get("cache") or "cannot cache" not in str(err):
            raise
        _uncached.append(f"{func.__module__}.{func.__name__}")
        return nb.njit(**{**options, "cache": False})(func)


def njit_now(func, **options):
    """``numba.njit(**options)(func)`` at once (for modules that compile on their own first
    call), with the same fall-back to no disk cache where no location is writable."""
    return _njit(func, options)


def compiled(kernel):
    """The numba dispatcher of ``kernel`` (a :class:`LazyKernel` of another module is built
    with its module first), for a module that compiles its own kernels around it; anything
    else is returned as it is."""
    if isinstance(kernel, LazyKernel):
        if kernel.dispatcher is None:
            _build(kernel.module)
        return kernel.dispatcher
    return kernel


class LazyKernel:
    """A function to be jitted with ``options`` when a kernel of its module first runs."""

    def __init__(self, func, options: dict):
        self.func = func
        self.options = dict(options)
        self.module = func.__module__
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self.dispatcher = None
        _kernels.setdefault(self.module, []).append(self)

    @property
    def name(self) -> str:
        return f"{self.module}.{self.__name__}"

    def __call__(self, *args):
        if self.dispatcher is None:
            _build(self.module)
        return self.dispatcher(*args)

    def __repr__(self) -> str:
        state = "compiled lazily" if self.dispatcher is None else "built"
        return f"<LazyKernel {self.name} ({state})>"


def _build(module: str) -> None:
    """Make dispatchers for every kernel of ``module`` and rebind its module-level names."""
    with _lock:
        kernels = _kernels.get(module, [])
        if all(k.dispatcher is not None for k in kernels):
            return
        namespace = vars(sys.modules[module])
        # kernels imported from another kernel module are built (and rebound) there first
        for value in list(namespace.values()):
            if isinstance(value, LazyKernel) and value.module != module:
                _build(value.module)
        for k in kernels:
            if k.dispatcher is None:
                k.dispatcher = _njit(k.func, k.options)
        if isinstance(namespace.get("numba"), _LazyNumba):
            # compiled code that names numba itself (``with numba.objmode(...)``) sees the
            # real module
            namespace["numba"] = _import()
        for key, value in list(namespace.items()):
            if isinstance(value, LazyKernel) and value.dispatcher is not None:
                namespace[key] = value.dispatcher


class _LazyNumba:
    """Stands for the numba module at decoration time: ``njit`` returns :class:`LazyKernel`."""

    def njit(self, *args, **options):
        if args and callable(args[0]):
            return LazyKernel(args[0], options)
        return lambda func: LazyKernel(func, options)


numba = _LazyNumba()
