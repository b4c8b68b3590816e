"""Issue 31: private cross-object reaches are down to the few the seams declare.

``scripts/private_reaches.py`` finds every ``x._name`` whose object is not ``self`` / ``cls``
/ ``super()``, a module or a class of the same module; the ones that stay by design are in its
``ALLOWED`` list, each with its reason. A new reach into another object's private state fails
here: give the hook a public name declared where the seam lives, expose the state read-only,
or pass the value explicitly (docs/architecture.md, "Seams").
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "_private_reaches", ROOT / "scripts" / "private_reaches.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_no_undeclared_private_reach_into_another_object():
    assert _script().undeclared(ROOT / "selrank") == []


def test_the_declared_reaches_are_few_and_all_still_used():
    script = _script()
    found = script.reaches(ROOT / "selrank")
    objects = [(rel, text) for rel, _, kind, text in found if kind == "object"]
    assert len(objects) <= 10
    for rel, attr, why in script.ALLOWED:
        assert why, (rel, attr)
        assert any(r == rel and t.rsplit(".", 1)[-1] == attr for r, t in objects), (
            f"{rel}: {attr} is declared but no longer reached: remove it from ALLOWED"
        )


def test_the_counter_sees_a_reach_and_its_kind(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        "import os\n"
        "class C:\n"
        "    def _own(self):\n"
        "        return self._x, type(self)._y, super()._z\n"
        "def f(obj):\n"
        "    return obj._secret, C._own, os._exit\n",
        encoding="utf-8",
    )
    kinds = {text: kind for _, _, kind, text in _script().reaches(package)}
    assert kinds == {"obj._secret": "object", "C._own": "class", "os._exit": "module"}
    assert _script().undeclared(package) == ["pkg/m.py:6: obj._secret"]
