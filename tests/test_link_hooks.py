"""The link hook protocol: ``Link.hooks`` lists the optional hooks a class supplies, and the
package finds hooks only through it (no ``hasattr`` / ``getattr(..., None)`` / method identity)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from selrank.links import LINKS, Exp, Identity, Link, Sigmoid

ROOT = Path(__file__).resolve().parents[1] / "selrank"


@pytest.mark.parametrize("name", sorted(LINKS))
def test_hooks_are_the_methods_a_class_defines(name):
    cls = LINKS[name]
    defined = {
        n for n in Link.HOOKS if any(n in vars(k) for k in cls.__mro__[: cls.__mro__.index(Link)])
    }
    assert cls.hooks == frozenset(defined)
    for n in Link.HOOKS:
        assert (n in cls.hooks) == (getattr(cls, n) is not getattr(Link, n))


def test_known_hooks():
    assert {"_finv", "_Fconj", "_log_mean_constants", "_df_midpoint"} <= Exp.hooks
    assert "_df_midpoint" not in Sigmoid.hooks
    assert "bregman" in Identity.hooks and "bregman" not in Exp.hooks
    assert Link.hooks == frozenset()


def test_a_missing_hook_raises_with_its_name():
    with pytest.raises(NotImplementedError, match="Sigmoid does not supply _df_midpoint"):
        Sigmoid()._df_midpoint(np.ones(2), np.ones(2))


def test_a_hook_is_used_when_a_class_supplies_it():
    """An affine link without ``_finv`` inverts by bisection; adding the hook is used as is."""
    from selrank._functions import SigmoidFunction
    from selrank.links import _AffineLink

    calls = []

    class NoInverse(SigmoidFunction, _AffineLink):
        name = "no_inverse"
        _f_range = (0.0, 1.0)

    class WithInverse(NoInverse):
        def _finv(self, y, xp):
            calls.append(1)
            return xp.log(y) - xp.log1p(-y)

    assert "_finv" not in NoInverse.hooks and "_finv" in WithInverse.hooks
    y = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(NoInverse().h_inv(y), WithInverse().h_inv(y), rtol=1e-9)
    assert calls == [1]


HOOK_PROBE = re.compile(
    r"(hasattr|getattr)\([^)]*[\"'](" + "|".join(Link.HOOKS) + r")[\"']"
    r"|\.(" + "|".join(Link.HOOKS) + r") is (not )?"
)


def test_no_other_hook_lookup_in_the_package():
    found = [
        f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
        for path in sorted(ROOT.rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HOOK_PROBE.search(line)
    ]
    assert found == [], "look hooks up through Link.hooks:\n" + "\n".join(found)
