"""Count the reads and writes of another object's private attributes in the package (issue 31).

A *private reach* is an attribute access ``x._name`` (not a dunder) whose object is not
``self`` / ``cls`` / ``super()`` and not a module imported by name (``A._x`` on a module is
an import-level reach, counted apart as ``module``). Usage::

    python scripts/private_reaches.py [PACKAGE_DIR] [--list]
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def reaches(package: Path) -> list[tuple[str, int, str, str]]:
    """``(file, line, kind, text)`` of every private reach; kind is "object" or "module"."""
    out = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()
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
            kind = "module" if isinstance(obj, ast.Name) and obj.id in modules else "object"
            rel = str(path.relative_to(package.parent))
            out.append((rel, node.lineno, kind, ast.unparse(node)))
    return out


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    package = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "selrank"
    found = reaches(package)
    if "--list" in argv:
        for rel, line, kind, text in found:
            print(f"{rel}:{line}: [{kind}] {text}")
    counts = Counter(kind for _, _, kind, _ in found)
    by_dir = Counter(
        Path(rel).parts[1] if len(Path(rel).parts) > 2 else "(root)"
        for rel, _, kind, _ in found
        if kind == "object"
    )
    print(f"object reaches: {counts['object']}, module reaches: {counts['module']}")
    print("object reaches by package:", dict(sorted(by_dir.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
