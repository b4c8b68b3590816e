"""Count the reads and writes of another object's private attributes in the package (issue 31).

A *private reach* is an attribute access ``x._name`` (not a dunder) whose object is not
``self`` / ``cls`` / ``super()`` / ``type(...)``. It is one of three kinds:

* ``module``: ``A._x`` on a module imported by name (an import-level reach);
* ``class``: ``C._x`` where ``C`` is a class defined in the same module (the module using the
  private names of what it defines: an alternate constructor, a class attribute set after
  the class);
* ``object``: any other object, the reaches issue 31 asks to bring down to the few the seams
  declare. Those are listed in ``ALLOWED`` (file, attribute, why); an ``object`` reach not
  in it is *undeclared*, and ``tests/test_private_reaches.py`` fails on one.

Usage::

    python scripts/private_reaches.py [PACKAGE_DIR] [--list]
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

#: The object reaches that stay by design: (file relative to the package's parent, attribute,
#: why). Every other object reach is undeclared (a test fails on it).
ALLOWED: tuple[tuple[str, str, str], ...] = (
    (
        "selrank/_numba.py",
        "_cache",
        "numba's private API: the kernel cache keyed on the imported kernel modules (issue 31)",
    ),
    (
        "selrank/_numba.py",
        "_locator_classes",
        "numba's private API: where the cache of a kernel is found",
    ),
    (
        "selrank/fast/_bregman_torch.py",
        "_df_midpoint",
        "an optional link hook declared in Link.HOOKS, used after testing `link.hooks`",
    ),
    (
        "selrank/gbdt/_objective.py",
        "_selrank_intercept",
        "selrank's metadata on a library booster (prefixed so it cannot meet the library's names)",
    ),
    (
        "selrank/gbdt/_objective.py",
        "_selrank_in_model",
        "selrank's metadata on a library booster (prefixed so it cannot meet the library's names)",
    ),
    (
        "selrank/gbdt/_objective.py",
        "_fitted_intercepts",
        "the objective's thread-private copy of itself (same class): set up and adopted back",
    ),
    (
        "selrank/gbdt/_objective.py",
        "_warned",
        "the objective's thread-private copy of itself (same class): set up and adopted back",
    ),
    (
        "selrank/gbdt/_lightgbm.py",
        "_train",
        "train() runs its thread-private copy of the objective (same class)",
    ),
    (
        "selrank/gbdt/_xgboost.py",
        "_train",
        "train() runs its thread-private copy of the objective (same class)",
    ),
)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def reaches(package: Path) -> list[tuple[str, int, str, str]]:
    """``(file, line, kind, text)`` of every private reach; kind is "object" or "module"."""
    out = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:  # from .. import _array as A (a module)
                    if a.name[:1] == "_" or a.name.islower():
                        modules.add(a.asname or a.name)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            obj = node.value
            if isinstance(obj, ast.Name) and obj.id in ("self", "cls"):
                continue
            if (
                isinstance(obj, ast.Call)
                and isinstance(obj.func, ast.Name)
                and obj.func.id in ("super", "type")
            ):
                continue
            kind = "object"
            if isinstance(obj, ast.Name) and obj.id in classes:
                kind = "class"
            elif isinstance(obj, ast.Name) and obj.id in modules:
                kind = "module"
            rel = str(path.relative_to(package.parent))
            out.append((rel, node.lineno, kind, ast.unparse(node)))
    return out


def declared(rel: str, text: str) -> bool:
    """Whether the object reach ``text`` in file ``rel`` is in :data:`ALLOWED`."""
    attr = text.rsplit(".", 1)[-1]
    return any(rel == f and attr == a for f, a, _ in ALLOWED)


def undeclared(package: Path) -> list[str]:
    """``file:line: text`` of every object reach not in :data:`ALLOWED`."""
    return [
        f"{rel}:{line}: {text}"
        for rel, line, kind, text in reaches(package)
        if kind == "object" and not declared(rel, text)
    ]


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    package = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "selrank"
    found = reaches(package)
    if "--list" in argv:
        for rel, line, kind, text in found:
            mark = " (declared)" if kind == "object" and declared(rel, text) else ""
            print(f"{rel}:{line}: [{kind}] {text}{mark}")
    counts = Counter(kind for _, _, kind, _ in found)
    n_declared = sum(1 for rel, _, k, text in found if k == "object" and declared(rel, text))
    by_dir = Counter(
        Path(rel).parts[1] if len(Path(rel).parts) > 2 else "(root)"
        for rel, _, kind, _ in found
        if kind == "object"
    )
    print(
        f"object reaches: {counts['object']} (declared {n_declared}, "
        f"undeclared {counts['object'] - n_declared}), module reaches: {counts['module']}, "
        f"class reaches (own module): {counts['class']}"
    )
    print("object reaches by package:", dict(sorted(by_dir.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
