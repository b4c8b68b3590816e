"""The package's architecture: no import cycles (imports inside functions included) and the
layers of the import contract in ``pyproject.toml`` (``[tool.importlinter]``).

Run as a script to list the import cycles and the function-level imports::

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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` by dotted name."""
    return {_module_name(p): p for p in sorted((root / package).rglob("*.py"))}


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
