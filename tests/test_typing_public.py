"""Every public function of the covered packages carries type annotations.

"Public" is what a package exports in ``__all__`` (and what its public submodules export in
theirs): functions, and the public methods, ``__init__``, ``__call__`` and properties defined
by exported classes. Each parameter but ``self``/``cls`` needs an annotation, and so does the
return (not for ``__init__``). Duck-typed array code (NumPy, torch or CuPy through the array
namespace) annotates its arrays with :data:`selrank._array.Array`.

To extend the check to another package, add it to :data:`COVERED`. A module a package
re-exports from but that is not annotated yet goes into :data:`PENDING` with the reason.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

#: Packages (or modules) whose public API must be fully annotated.
COVERED = (
    "selrank",  # the whole package: every public module's __all__ (issue 19)
    "selrank.datasets",
    "selrank.dwell",
    "selrank.estimators",
    "selrank.fast",
    "selrank.gbdt",
    "selrank.links",
    "selrank.losses",
    "selrank.losses.classification",
    "selrank.losses.multiclass",
    "selrank.metrics",
    "selrank.paper",
    "selrank.paper.figures",
    "selrank.plots",
    "selrank.scalings",
    "selrank.torch",
)

#: Defining modules whose public functions the covered packages export but that are not
#: annotated yet, with the reason; their functions are left out of the check.
PENDING: dict[str, str] = {}


def _import(name: str) -> ModuleType:
    with warnings.catch_warnings():  # a deprecated alias module still has a public API
        warnings.simplefilter("ignore", DeprecationWarning)
        return importlib.import_module(name)


def _public_modules(name: str) -> Iterator[ModuleType]:
    """The module and, for a package, its public submodules (no ``_`` in the name)."""
    module = _import(name)
    yield module
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                yield _import(info.name)


def missing_annotations(func: Callable[..., Any], *, method: bool, needs_return: bool) -> list[str]:
    """Names of ``func``'s parameters without an annotation, plus ``"return"`` if it lacks one."""
    params = list(inspect.signature(func).parameters.values())
    if method and params:
        params = params[1:]  # self / cls
    out = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    if needs_return and inspect.signature(func).return_annotation is inspect.Signature.empty:
        out.append("return")
    return out


def _class_functions(cls: type) -> Iterator[tuple[str, Callable[..., Any], bool, bool]]:
    """``(name, function, is_method, needs_return)`` for what ``cls`` itself defines."""
    for attr, value in vars(cls).items():
        if attr.startswith("_") and attr not in ("__init__", "__call__"):
            continue
        if isinstance(value, property):
            if value.fget is not None:
                yield f"{cls.__name__}.{attr}", value.fget, True, True
        elif isinstance(value, staticmethod):
            yield f"{cls.__name__}.{attr}", value.__func__, False, True
        elif isinstance(value, classmethod):
            yield f"{cls.__name__}.{attr}", value.__func__, True, True
        elif inspect.isfunction(value):
            yield f"{cls.__name__}.{attr}", value, True, attr != "__init__"


def public_functions(package: str) -> dict[str, tuple[Callable[..., Any], bool, bool]]:
    """Public functions and methods of ``package``, by qualified name (see the module docstring)."""
    found: dict[str, tuple[Callable[..., Any], bool, bool]] = {}
    seen: set[int] = set()
    for module in _public_modules(package):
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            where = getattr(obj, "__module__", None) or ""
            if id(obj) in seen or not where.startswith("selrank") or where in PENDING:
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                for qual, func, is_method, needs_return in _class_functions(obj):
                    found[f"{where}.{qual}"] = (func, is_method, needs_return)
            elif inspect.isfunction(obj):
                found[f"{where}.{obj.__name__}"] = (obj, False, True)
    return found


def coverage(package: str) -> tuple[int, int, dict[str, list[str]]]:
    """``(typed, total, {name: missing})`` over the public functions of ``package``."""
    funcs = public_functions(package)
    missing = {
        name: gap
        for name, (func, is_method, needs_return) in funcs.items()
        if (gap := missing_annotations(func, method=is_method, needs_return=needs_return))
    }
    return len(funcs) - len(missing), len(funcs), missing


@pytest.mark.parametrize("package", COVERED)
def test_public_functions_are_annotated(package):
    typed, total, missing = coverage(package)
    assert total > 0, f"{package} exports no function: is the name in COVERED right?"
    lines = [f"{name}: {', '.join(gap)}" for name, gap in sorted(missing.items())]
    assert not missing, (
        f"{package}: {typed}/{total} public functions annotated; missing annotations:\n"
        + "\n".join(lines)
    )


def test_the_check_sees_missing_annotations():
    def untyped(a, b: int = 1):
        return a

    class Thing:
        def __init__(self, x):
            self.x = x

        def typed(self, y: int) -> int:
            return y

        @property
        def size(self):
            return 1

    assert missing_annotations(untyped, method=False, needs_return=True) == ["a", "return"]
    found = {name: f for name, f, *_ in _class_functions(Thing)}
    assert set(found) == {"Thing.__init__", "Thing.typed", "Thing.size"}
    gaps = {
        name: missing_annotations(f, method=m, needs_return=r)
        for name, f, m, r in _class_functions(Thing)
    }
    assert gaps == {"Thing.__init__": ["x"], "Thing.typed": [], "Thing.size": ["return"]}
