"""selrank uses LightGBM through its public API only (issue 31): no ``lightgbm.*._x`` name, no
private method or attribute of LightGBM's classes (``Dataset._update_params``,
``basic._ConfigAliases``, ...), so a LightGBM release cannot break it by renaming one.

The check reads every module of the package (AST): an attribute chain rooted at the
``lightgbm`` module (any alias) may not step through a ``_`` name, ``from lightgbm... import``
may not import one, and no attribute access or string constant (``getattr(x, "_name")``, a
class-name comparison) may name a private member of LightGBM's modules or classes that selrank
does not define itself.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import selrank

lgb = pytest.importorskip("lightgbm")

PACKAGE = Path(selrank.__file__).resolve().parent


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _lightgbm_private_names() -> set[str]:
    import lightgbm.basic
    import lightgbm.callback
    import lightgbm.engine
    import lightgbm.sklearn

    names: set[str] = set()
    for module in (lgb, lightgbm.basic, lightgbm.callback, lightgbm.engine, lightgbm.sklearn):
        for name, value in vars(module).items():
            if _is_private(name):
                names.add(name)
            if inspect.isclass(value) and getattr(value, "__module__", "").startswith("lightgbm"):
                names.update(n for n in dir(value) if _is_private(n))
    return names


def _trees():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _own_names() -> set[str]:
    """Private names selrank defines itself (its own methods and attributes may share a name)."""
    own: set[str] = set()
    for _, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
    return own


def _chain(node: ast.AST) -> tuple[str | None, list[str]]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else None), parts[::-1]


def lightgbm_private_uses() -> list[str]:
    private = _lightgbm_private_names() - _own_names()
    found = []
    for path, tree in _trees():
        rel = path.relative_to(PACKAGE.parent)
        aliases = {"lightgbm"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "lightgbm":
                        aliases.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                func = node.value.func
                if isinstance(func, ast.Name) and func.id == "import_lightgbm":
                    aliases.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lightgbm"):
                parts = (node.module or "").split(".") + [a.name for a in node.names]
                if any(_is_private(p) for p in parts):
                    found.append(f"{rel}:{node.lineno}: from {node.module} import ...")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in private:  # getattr(x, "_name"), type(x).__name__ == "_Name"
                    found.append(f"{rel}:{node.lineno}: {node.value!r} (LightGBM private, as text)")
            elif isinstance(node, ast.Attribute):
                root, parts = _chain(node)
                if root in aliases and any(_is_private(p) for p in parts):
                    found.append(f"{rel}:{node.lineno}: {root}.{'.'.join(parts)}")
                elif node.attr in private:
                    found.append(f"{rel}:{node.lineno}: .{node.attr} (LightGBM private)")
    return sorted(set(found))


def test_the_package_uses_no_private_lightgbm_name():
    assert lightgbm_private_uses() == []


def test_the_check_sees_the_names_it_must_refuse():
    """The scanner itself: the two private names issue 31 found are recognised."""
    private = _lightgbm_private_names()
    assert {"_update_params", "_ConfigAliases"} <= private
    tree = ast.parse("lgb.basic._ConfigAliases._get_all_param_aliases()")
    root, parts = _chain(tree.body[0].value.func)  # type: ignore[attr-defined]
    assert root == "lgb" and parts[1] == "_ConfigAliases"


def test_the_local_parameter_table_matches_the_installed_lightgbm():
    """The copy of LightGBM's parameter table (selrank/gbdt/_lightgbm_params.py) is current;
    regenerate it with scripts/lightgbm_param_table.py when this fails after an upgrade."""
    from selrank.gbdt._lightgbm_params import PARAMETER_ALIASES

    table = getattr(getattr(lgb.basic, "_ConfigAliases", None), "_get_all_param_aliases", None)
    if table is None:
        pytest.skip("this LightGBM has no _ConfigAliases table to compare with")
    installed = {k: set(v) for k, v in table().items()}
    assert {k: set(v) for k, v in PARAMETER_ALIASES.items()} == installed


if __name__ == "__main__":  # list the offenders
    print("\n".join(lightgbm_private_uses()) or "none")
