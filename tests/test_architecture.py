"""The package's architecture: no import cycles (imports inside functions included), the
layers of the import contract in ``pyproject.toml`` (``[tool.importlinter]``) and public seams
(no module imports another package's private modules or names).

Run as a script to list the import cycles, the private imports across packages and the
function-level imports::

    python tests/test_architecture.py [--all]
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "selrank"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by dotted name."""
    return {_module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imported(name: str, modules: dict[str, Path]) -> str | None:
    """The package module that ``name`` (or its nearest parent) is, or None outside the package."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_edges(modules: dict[str, Path] | None = None) -> list[tuple[str, str, int, str]]:
    """``(importer, imported, line, where)`` for every import between package modules.

    ``importlib.import_module("...")`` with a literal name counts as an import. ``where`` is
    ``"module"`` (runs on import), ``"function"`` (inside a function or method:
    runs when called) or ``"alias"`` (inside a module-level ``__getattr__``, PEP 562: a
    compatibility alias that runs only when someone asks for a moved name). ``from pkg import
    name`` counts as an import of ``pkg.name`` where that is a module (as grimp counts it),
    else of ``pkg``. Imports under ``if TYPE_CHECKING:`` are left out (they never run).
    """
    modules = package_modules() if modules is None else modules
    edges = []
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skip.update(id(n) for child in node.body for n in ast.walk(child))
        nested: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                nested.update(id(n) for child in node.body for n in ast.walk(child))
        aliases: set[int] = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                aliases.update(id(n) for child in node.body for n in ast.walk(child))
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_package, node.level, node.module)
                for alias in node.names:
                    full = f"{base}.{alias.name}" if base else alias.name
                    targets.append(full if full in modules else base)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                targets = [
                    node.args[0].value
                ]  # importlib.import_module("selrank.x"): an import too
            for target in targets:
                found = _imported(target, modules)
                if found is not None and found != mod:
                    where = (
                        "alias"
                        if id(node) in aliases
                        else "function"
                        if id(node) in nested
                        else "module"
                    )
                    edges.append((mod, found, node.lineno, where))
    return sorted(set(edges))


def import_cycles(edges=None) -> list[list[str]]:
    """Strongly connected components of more than one module (each holds at least one cycle).

    Module- and function-level imports count; PEP 562 compatibility aliases do not (they are
    listed, with the reason, in the import contract's ``ignore_imports``).
    """
    edges = import_edges() if edges is None else edges
    graph: dict[str, set[str]] = {}
    for a, b, _, where in edges:
        if where == "alias":
            continue
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan; the package graph is small, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycles():
    cycles = import_cycles()
    assert cycles == [], f"import cycles (imports inside functions included): {cycles}"


def test_aliases_are_in_the_contract():
    """Every PEP 562 alias that imports upwards is listed (with its reason) in ignore_imports."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for a, b, _, where in import_edges():
        if where == "alias":
            assert f'"{a} -> {b}"' in text, (
                f"alias import {a} -> {b} is not in [tool.importlinter] ignore_imports"
            )


def test_import_contract():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install 'selrank[dev]')")
    proc = subprocess.run(
        [exe, "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**_env(), "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ----------------------------------------------------------------------------------------------
# Public seams: what an upper layer needs, a lower one exports under a public name
# ----------------------------------------------------------------------------------------------

#: Root modules that every module may use, private names included: the bottom of the layers.
BASE_MODULES = frozenset(
    ["_array", "_validation", "_affine", "_functions", "_groups", "_numba", "_display", "_repr"]
    + ["_files", "_threads"]
)

#: Cross-package private imports that a named branch of issue 19 removes: ``(importer, private
#: target)`` prefixes -> the branch. The coordinator empties this after merging; an entry that
#: excuses nothing fails :func:`test_no_private_imports_across_packages`, so it only shrinks.
PRIVATE_IMPORT_ALLOWLIST: dict[tuple[str, str], str] = {}


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _private_owner(target: str, name: str | None, modules: dict[str, Path]) -> str | None:
    """The package that a private module or name belongs to (None: public, or a base module).

    ``selrank.gbdt._lightgbm.x`` belongs to ``selrank.gbdt``; a private name belongs to the
    package of its module, or to the module itself at the root (each root module is a layer).
    """
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if _is_private(part):
            if i == 1:
                return None if part in BASE_MODULES else ".".join(parts[:2])
            return ".".join(parts[:i])
    if name is None or not _is_private(name):
        return None
    if len(parts) == 2 and parts[1] in BASE_MODULES:
        return None
    path = modules.get(target)
    if path is None or path.name == "__init__.py" or len(parts) == 2:
        return target
    return ".".join(parts[:-1])


def private_imports(
    modules: dict[str, Path] | None = None, root: Path = ROOT
) -> list[tuple[str, int, str, str]]:
    """``(file, line, importer, target)`` for every import of another package's private module
    or name, from anywhere in a module (functions, ``TYPE_CHECKING`` blocks and literal
    ``importlib.import_module`` calls included).

    A module may use the private modules and names of its own package, of the packages above
    it in the tree and of its subpackages (a subpackage is part of its parent), and those of
    the root's base modules (:data:`BASE_MODULES`); ``target`` is ``module`` or
    ``module.name``.
    """
    modules = package_modules(root) if modules is None else modules
    found = []
    for mod, path in modules.items():
        is_package = path.name == "__init__.py"
        own = mod if is_package or mod.count(".") == 1 else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            pairs: list[tuple[str, str | None]] = []
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_package, node.level, node.module)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    pairs.append((full, None) if full in modules else (base, alias.name))
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                pairs = [(node.args[0].value, None)]
            for target, name in pairs:
                if not _within(target, PACKAGE):
                    continue
                owner = _private_owner(target, name, modules)
                if owner is None or _within(own, owner):
                    continue
                if own != PACKAGE and _within(owner, own):
                    continue
                rel = path.relative_to(root).as_posix()
                found.append((rel, node.lineno, mod, f"{target}.{name}" if name else target))
    return sorted(set(found))


def _allowed(importer: str, target: str) -> tuple[str, str] | None:
    for key in PRIVATE_IMPORT_ALLOWLIST:
        if _within(importer, key[0]) and target.startswith(key[1]):
            return key
    return None


def test_no_private_imports_across_packages():
    """No module imports another package's ``_``-modules or ``_``-names (public seams)."""
    found = private_imports()
    offenders = [
        f"{file}:{line}: {importer} imports {target}"
        for file, line, importer, target in found
        if _allowed(importer, target) is None
    ]
    assert not offenders, (
        "private imports across packages (export a public name from the lower package and "
        "import that):\n" + "\n".join(offenders)
    )
    used = {_allowed(importer, target) for _, _, importer, target in found}
    stale = sorted(set(PRIVATE_IMPORT_ALLOWLIST) - used)
    assert not stale, f"PRIVATE_IMPORT_ALLOWLIST entries that excuse nothing (remove them): {stale}"


def test_private_import_check_sees_every_kind_of_import(tmp_path):
    """The scan finds module-level, function-level and importlib imports of private modules
    and names across packages, and leaves a package's own private imports alone."""
    pkg = tmp_path / PACKAGE
    for sub in ("", "low", "low/deep", "up"):
        (pkg / sub).mkdir(exist_ok=True)
        (pkg / sub / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "_array.py").write_text("_x = 1\n", encoding="utf-8")
    (pkg / "low" / "_impl.py").write_text("_y = 1\nz = 2\n", encoding="utf-8")
    (pkg / "low" / "pub.py").write_text("_w = 1\nfrom .deep._hidden import h\n", encoding="utf-8")
    (pkg / "low" / "deep" / "_hidden.py").write_text("h = 1\n", encoding="utf-8")
    (pkg / "top.py").write_text(
        "from .low._impl import z\nfrom ._array import _x\n", encoding="utf-8"
    )
    (pkg / "low" / "deep" / "mod.py").write_text(
        "from .._impl import _y\nfrom ..pub import _w\nfrom ..._array import _x\n",
        encoding="utf-8",
    )
    (pkg / "up" / "mod.py").write_text(
        "import importlib\n"
        "from ..low._impl import z\n"  # 2: a private module
        "from ..low.pub import _w\n"  # 3: a private name
        "from .._array import _x\n"  # 4: a base module: allowed
        "def f():\n"
        "    from selrank.low import _impl\n"  # 6: inside a function
        "    return importlib.import_module('selrank.low._impl')\n",  # 7: importlib
        encoding="utf-8",
    )
    modules = package_modules(tmp_path, PACKAGE)
    assert len(modules) == 11
    found = [(file, line, target) for file, line, _, target in private_imports(modules, tmp_path)]
    assert found == [
        ("selrank/top.py", 1, "selrank.low._impl.z"),  # a root module is a package of its own
        ("selrank/up/mod.py", 2, "selrank.low._impl.z"),
        ("selrank/up/mod.py", 3, "selrank.low.pub._w"),
        ("selrank/up/mod.py", 6, "selrank.low._impl"),
        ("selrank/up/mod.py", 7, "selrank.low._impl"),
    ]


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _main(argv: list[str]) -> int:
    edges = import_edges()
    cycles = import_cycles(edges)
    for comp in cycles:
        members = set(comp)
        print("cycle:", " <-> ".join(comp))
        for a, b, line, where in edges:
            if a in members and b in members and where != "alias":
                print(f"    {a}:{line} -> {b}  ({where} level)")
    print("private imports across packages (file:line importer -> target):")
    for file, line, importer, target in private_imports():
        key = _allowed(importer, target)
        why = f"  [allowlisted: {PRIVATE_IMPORT_ALLOWLIST[key]}]" if key else ""
        print(f"    {file}:{line} {importer} -> {target}{why}")
    print("compatibility aliases (module __getattr__, not counted):")
    for a, b, line, where in edges:
        if where == "alias":
            print(f"    {a}:{line} -> {b}")
    if "--all" in argv:
        print("function-level imports between package modules:")
        for a, b, line, where in edges:
            if where == "function":
                print(f"    {a}:{line} -> {b}")
    if not cycles:
        print("no import cycles")
    return 1 if cycles else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
