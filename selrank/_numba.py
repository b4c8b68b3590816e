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
disk, keyed on the files of every kernel module the kernel's code comes from (an edit to
``selrank/fast/_links.py`` makes the pairwise kernels' cached code stale, not only an edit to
their own files). A location that cannot be written is read where it holds the kernel's
cache (``selrank.fast.warm_up()`` run into ``NUMBA_CACHE_DIR`` or the install by an image
build, then made read-only); where no location is usable at all (an arbitrary user id, a
read-only home and a read-only install: numba's ``cannot cache function ...: no locator
available``) the kernel is compiled without a cache instead of failing — each process then
compiles again.

When a kernel runs: the kernel policy
-------------------------------------
Compiling a kernel costs CPU seconds once per process (without a disk cache; 2.6 s for the
pairwise kernel, 5-9 s for the sampled-pairs ones and 5.5-7 s for the weighted ones, one per
pair method and link family, here), while every
kernel has a generic NumPy / torch path that is tested equal to it. A short fit on small data
finishes on the generic path before a compile would pay. :func:`use_kernel` is the one
decision, called by each dispatch site (``selrank.losses.Pairwise``,
``selrank.losses.WeightedPairwise``, the torch heads' kernels) with the call number of its
binding and the work of one call:

* ``"auto"`` (the default): the generic path runs until the work it has done reaches the
  work a compile costs (:data:`BREAK_EVEN`, measured: compile CPU s divided by the time the
  kernel saves per unit of work), then the kernel — the ski-rental rule, which never spends
  more than about twice the better of the two choices. The generic pairwise paths keep about
  40 bytes per pair, so a call over more than :data:`GENERIC_PAIR_CAP` pairs runs the kernel
  at once. The switch point is a pure function of the work and the call number, never of
  the process (a numba cache on disk, the time taken): the same fit gives the same model in
  any process. A GBDT round evaluated in row blocks weighs the whole round's work
  (:func:`shared_calls`): one compile serves every block.
* ``"eager"``: the kernel from the first call (what earlier versions did; the test suite
  runs this way, so that the kernels are what it checks).
* ``"never"``: the generic path only (numba is never imported by a loss), whatever the
  memory it needs.

Set it with :func:`set_kernel_policy` (also ``selrank.set_kernel_policy``) or the
environment variable ``SELRANK_KERNELS`` (checked when ``selrank.losses`` is imported — a value that is
not a policy raises ``ValueError`` — and read at each decision; :func:`set_kernel_policy`
wins over it). The kernels and the generic paths agree to a few units in the last place,
not bit for bit, so a model trained under ``"auto"`` may differ from one trained under
``"eager"`` in the last bits of its leaf values (and, rarely, in a split that those bits
decide); under one policy a fit is reproducible.
"""

from __future__ import annotations

import glob
import hashlib
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = [
    "available",
    "installed",
    "numba",
    "LazyKernel",
    "caching",
    "POLICIES",
    "BREAK_EVEN",
    "GENERIC_PAIR_CAP",
    "set_kernel_policy",
    "kernel_policy",
    "use_kernel",
    "pair_work",
    "planned_calls",
    "shared_calls",
]

# -- the kernel policy (module docstring) ---------------------------------------------------

POLICIES = ("auto", "eager", "never")
"""The values of :func:`set_kernel_policy` and ``SELRANK_KERNELS``."""

ENV = "SELRANK_KERNELS"

BREAK_EVEN: dict[str, int] = {
    # units of work of the generic path that cost as much CPU as compiling the kernel from
    # scratch: compile CPU s / CPU s the kernel saves per unit (2-core x86-64, numba 0.6x;
    # benchmarks/cold_start.py, docs/benchmarks.md "Cold start")
    "pairwise": 85_000_000,  # pairs; 2.6 s / 30 ns (Sinh link, 50 documents per query)
    # selected pairs; 6.8 s / 125-165 ns (top-k, the default link's kernel; mean 5.1 s, other
    # links' top-k 8.7 s: one kernel per pair method and link family since issue 29, was one
    # 10.7 s kernel and 75 million pairs)
    "pairwise_sampled": 45_000_000,
    # pairs; 5.5 s / 120 ns (top-30, 120 documents per query; one kernel per pair method and
    # link family since issue 29, no library sort: was 12 s / 90 ns)
    "weighted_pairwise": 45_000_000,
    "exp_bregman": 220_000_000,  # items (+ EXP_BREGMAN_CALL per call); 1.1 s / 5 ns
}
"""Generic work (pairs, or items) after which :func:`use_kernel` switches to the kernel."""

EXP_BREGMAN_CALL = 8_000
"""Items' worth of work the exp link's torch kernel saves per call beyond the items (40 µs)."""

GENERIC_PAIR_CAP = 1 << 23
"""Pairs per call above which ``"auto"`` runs a pairwise kernel at once (8.4 million: about
340 MB of pair arrays on the generic path)."""

_policy: list[str | None] = [None]  # set_kernel_policy's value; None: SELRANK_KERNELS
# the calls a fit has planned (planned_calls); None: unknown. A context variable: each thread
# (and each asyncio task) that trains sees its own fit's plan.
_planned: ContextVar[int | None] = ContextVar("selrank_planned_calls", default=None)
# the parts one step's work is split into (shared_calls): a GBDT round over row blocks
_shared: ContextVar[int] = ContextVar("selrank_shared_calls", default=1)


def _checked(policy: object, source: str) -> str:
    if not isinstance(policy, str) or policy.strip().lower() not in POLICIES:
        raise ValueError(
            f"{source} must be one of {', '.join(repr(p) for p in POLICIES)}; got {policy!r}"
        )
    return policy.strip().lower()


# a typo in the environment is refused when the losses are imported, as set_kernel_policy refuses
# it (and again at each decision that reads it)
if os.environ.get(ENV, "").strip():
    _checked(os.environ[ENV], f"environment variable {ENV}")


def set_kernel_policy(policy: str | None) -> str | None:
    """Choose when the numba kernels run: ``"auto"``, ``"eager"`` or ``"never"`` (see
    :mod:`selrank._numba`); ``None`` goes back to ``SELRANK_KERNELS`` (default ``"auto"``).
    Returns the previous setting (``None`` when it came from the environment).

    Examples
    --------
    >>> import selrank
    >>> previous = selrank.set_kernel_policy("never")
    >>> selrank.kernel_policy()
    'never'
    >>> _ = selrank.set_kernel_policy(previous)
    """
    new = None if policy is None else _checked(policy, "the kernel policy")
    old, _policy[0] = _policy[0], new
    return old


def kernel_policy() -> str:
    """The kernel policy in force: :func:`set_kernel_policy`'s, else ``SELRANK_KERNELS``'s,
    else ``"auto"``. A bad ``SELRANK_KERNELS`` raises ``ValueError`` naming it."""
    policy = _policy[0]
    if policy is not None:
        return policy
    env = os.environ.get(ENV, "")
    return _checked(env, f"environment variable {ENV}") if env.strip() else "auto"


def pair_work(sizes, method: str, per_item: int | None = None) -> int:
    """The pairs one pairwise call walks, for :func:`use_kernel`: every within-list pair of
    lists of ``sizes`` items for ``method="all"``, else ``per_item`` pairs per item (the
    ``num_pair_per_sample`` of ``"topk"`` / ``"mean"``; an upper bound for ``"topk"``).

    >>> pair_work([3, 4], "all"), pair_work([3, 4], "mean", 2)
    (9, 14)
    """
    import numpy as np

    n = np.asarray(sizes, dtype=np.int64)
    if method == "all":
        return int(np.sum(n * (n - 1) // 2))
    return int(n.sum()) * int(per_item or 0)


def use_kernel(kernel: str, call: int, work: int) -> bool:
    """Whether call number ``call`` (0 for the first call of a binding or head) of the
    generic-or-kernel operation ``kernel`` (a key of :data:`BREAK_EVEN`), doing ``work``
    units per call (pairs, or items), runs the compiled kernel.

    ``"auto"``: once the generic work done before this call, ``call * work``, reaches
    ``BREAK_EVEN[kernel]``, or at once for a pairwise call over more than
    :data:`GENERIC_PAIR_CAP` pairs, or at once when the fit has announced its length
    (:func:`planned_calls`) and ``planned * work`` reaches ``BREAK_EVEN[kernel]``: a fit known
    to be long compiles from the start instead of paying for the generic path first. A pure
    function of its arguments, the plan and the policy.

    Examples
    --------
    >>> previous = set_kernel_policy("auto")
    >>> use_kernel("pairwise", 0, 1_000_000), use_kernel("pairwise", 85, 1_000_000)
    (False, True)
    >>> use_kernel("pairwise", 0, 10_000_000)  # the generic pair arrays would not pay
    True
    >>> with planned_calls(100):  # 100 rounds of a million pairs: compile at once
    ...     use_kernel("pairwise", 0, 1_000_000)
    True
    >>> _ = set_kernel_policy(previous)
    """
    policy = kernel_policy()
    if policy != "auto":
        return policy == "eager"
    limit = BREAK_EVEN.get(kernel)
    if limit is None:
        raise KeyError(f"no break-even work for kernel {kernel!r}: one of {sorted(BREAK_EVEN)}")
    if kernel != "exp_bregman" and work > GENERIC_PAIR_CAP:
        return True
    work *= _shared.get()  # the whole step's work pays for the compile, not one block's
    planned = _planned.get()
    if planned is not None and planned * work >= limit:
        return True
    return call * work >= limit


@contextmanager
def shared_calls(n: int) -> Iterator[None]:
    """Within the block, each loss call is one of ``n`` about equal parts of one step (the row
    blocks of a GBDT round, evaluated by separately bound losses): :func:`use_kernel` weighs
    ``n`` times the call's work, because one compile serves every part. (Without it a round
    split into 16 blocks would stay on the generic path 16 times as long.) The memory cap
    :data:`GENERIC_PAIR_CAP` still applies to the call's own pairs.

    >>> previous = set_kernel_policy("auto")
    >>> with planned_calls(20):
    ...     alone = use_kernel("weighted_pairwise", 0, 2_000_000)
    ...     with shared_calls(15):
    ...         shared = use_kernel("weighted_pairwise", 0, 2_000_000)
    >>> alone, shared
    (False, True)
    >>> _ = set_kernel_policy(previous)
    """
    if isinstance(n, bool) or int(n) != n or int(n) < 1:
        raise ValueError(f"shared_calls takes a positive integer; got {n!r}")
    token = _shared.set(int(n))
    try:
        yield
    finally:
        _shared.reset(token)


@contextmanager
def planned_calls(n: int | None) -> Iterator[None]:
    """Within the block, a fit plans ``n`` calls of its losses (boosting rounds, or a torch
    head's forward passes over all epochs); ``None``: unknown (the default).

    The trainers announce it (``LightGBMObjective.train``, ``XGBoostObjective.train``, the
    estimators, :class:`~selrank.estimators.NeuralRanker`), so that under ``"auto"``
    :func:`use_kernel` compiles from the first call when the planned work pays for the
    compile — a fit that stops early (early stopping) has paid for a compile it might not have
    needed, at most one compile. Plain ``lightgbm.train`` with a selrank objective does not
    tell its length: its losses switch when the work done pays (the ski-rental rule).
    """
    if n is not None and (isinstance(n, bool) or int(n) != n or int(n) < 0):
        raise ValueError(f"planned_calls takes a non-negative integer or None; got {n!r}")
    token = _planned.set(None if n is None else int(n))
    try:
        yield
    finally:
        _planned.reset(token)


_lock = threading.RLock()
_state: dict[str, Any] = {}  # "module": the numba module or None once tried
_kernels: dict[str, list[LazyKernel]] = {}  # per defining module, in definition order
_uncached: list[str] = []  # kernels compiled without a disk cache (no location)
_depends: dict[str, set[str]] = {}  # the kernel modules whose code each built module uses


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


def _njit(func, options: dict, files: tuple[str, ...] = ()):
    """``numba.njit(**options)(func)``; with ``cache``, the disk cache of :func:`_disk_cache`
    (keyed on ``files`` too), or none where numba finds no location for it."""
    nb = _import()
    if nb is None:
        raise NumbaMissing(
            f"{func.__module__}.{func.__name__} needs numba: pip install 'selrank[fast]' "
            "(or 'selrank[data]', which includes it)"
        )
    dispatcher = nb.njit(**{**options, "cache": False})(func)
    if options.get("cache"):
        try:
            dispatcher._cache = _disk_cache()(func, files)
        except RuntimeError as err:  # numba: "cannot cache function ...: no locator available"
            if "cannot cache" not in str(err):
                raise
            _uncached.append(f"{func.__module__}.{func.__name__}")
    return dispatcher


def _files_stamp(files: tuple[str, ...]) -> str:
    """A digest of the contents of ``files`` (the kernel modules a kernel's code comes from)."""
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            digest.update(path.encode() + b"\0" + f.read())
    return digest.hexdigest()


def _disk_cache():
    """numba's ``FunctionCache`` for the kernels, with two changes (made once):

    * the stamp that tells a fresh cache from a stale one covers the files of every kernel
      module the kernel's code comes from (``_build`` lists them: the link of
      ``selrank.fast._links`` inlined into the pairwise kernels, say), not only the kernel's
      own file — numba's own stamp missed an edit to an imported kernel module and ran the
      stale code;
    * a location that cannot be written is still read when it holds this kernel's cache (an
      image or CI step that ran ``selrank.fast.warm_up()`` into a read-only
      ``NUMBA_CACHE_DIR`` or install), and a failed write keeps the compiled code in memory
      instead of raising.
    """
    if "cache" in _state:
        return _state["cache"]
    from numba.core import caching

    def readable(locator: type) -> type:
        class Readable(locator):
            def __init__(self, py_func, py_file):
                super().__init__(py_func, py_file)
                module = py_func.__module__.rsplit(".", 1)[-1]
                self._selrank_name = f"{module}.{py_func.__qualname__}"

            def ensure_cache_path(self):
                try:
                    super().ensure_cache_path()
                except OSError:  # not writable: usable if it holds this kernel's index
                    pattern = os.path.join(
                        glob.escape(self.get_cache_path()), f"{self._selrank_name}-*.nbi"
                    )
                    if not glob.glob(pattern):
                        raise

        Readable.__name__ = Readable.__qualname__ = f"Readable{locator.__name__}"
        return Readable

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes: list[Any] = [
            readable(c) for c in caching.CompileResultCacheImpl._locator_classes
        ]

    class KernelCache(caching.FunctionCache):
        _impl_class = Impl

        def __init__(self, py_func, files: tuple[str, ...]):
            super().__init__(py_func)
            stamp = (self._impl.locator.get_source_stamp(), _files_stamp(files))
            self._cache_file = caching.IndexDataCacheFile(
                cache_path=self._cache_path,
                filename_base=self._impl.filename_base,
                source_stamp=stamp,
            )

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except OSError:  # a read-only location: this process keeps what it compiled
                pass

    _state["cache"] = KernelCache
    return KernelCache


class LazyKernel:
    """A function to be jitted with ``options`` when a kernel of its module first runs."""

    def __init__(self, func, options: dict):
        self.func = func
        self.options = dict(options)
        self.module = func.__module__
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self.dispatcher: Any = None  # numba's Dispatcher, made by _build on the first call
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
        # kernels imported from another kernel module are built (and rebound) there first;
        # their modules' files key this module's disk cache too
        deps = {module}
        for value in list(namespace.values()):
            if isinstance(value, LazyKernel) and value.module != module:
                _build(value.module)
                deps |= _depends.get(value.module, {value.module})
        _depends[module] = deps
        files = tuple(sorted(str(sys.modules[m].__file__) for m in deps))
        for k in kernels:
            if k.dispatcher is None:
                k.dispatcher = _njit(k.func, k.options, files)
        if isinstance(namespace.get("numba"), _LazyNumba):
            # compiled code that names numba itself (``with numba.objmode(...)``) sees the
            # real module
            namespace["numba"] = _import()
        for key, value in list(namespace.items()):
            if isinstance(value, LazyKernel) and value.dispatcher is not None:
                namespace[key] = value.dispatcher


class _LazyNumba:
    """Stands for the numba module at decoration time: ``njit`` returns :class:`LazyKernel`."""

    # the names kernels use inside compiled code: read from the real module, which _build
    # puts in this object's place before anything compiles
    objmode: Any

    def njit(self, *args, **options):
        if args and callable(args[0]):
            return LazyKernel(args[0], options)
        return lambda func: LazyKernel(func, options)


numba = _LazyNumba()
