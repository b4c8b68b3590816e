"""selrank._validation: the shared input checks (one message format for every layer)."""

from __future__ import annotations

import numpy as np
import pytest

from selrank import _array as A
from selrank._validation import (
    REDUCTIONS,
    as_numeric_array,
    as_vector,
    as_weight,
    check_choice,
    check_reduction,
    finite_float,
    lookup,
    pass_through,
    positive_float,
)


def test_scalars():
    assert positive_float(2, "alpha", "X") == 2.0
    assert positive_float(0, "w", "X", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match=r"`alpha` of X must be finite and > 0; got -1"):
        positive_float(-1, "alpha", "X")
    with pytest.raises(TypeError, match="must be a real number"):
        positive_float("a", "alpha", "X")
    with pytest.raises(ValueError, match="must be finite"):
        finite_float(float("nan"), "beta", "X")
    # one home: the old alias in selrank._array is gone
    assert not hasattr(A, "positive_float") and not hasattr(A, "finite_float")


def test_choices():
    assert check_reduction("sum") == "sum" and REDUCTIONS == ("mean", "sum", "none")
    with pytest.raises(
        ValueError, match=r"`reduction` must be one of \['mean', 'sum', 'none'\]; got 'max'"
    ):
        check_reduction("max")
    with pytest.raises(
        ValueError, match=r"`target` of Pointwise must be one of \['score', 'link'\]"
    ):
        check_choice("y", "target", ("score", "link"), "Pointwise")


def test_vectors():
    assert as_vector([1, 2, 3], "y").dtype.kind == "i"
    assert as_vector(np.ones((3, 1)), "y", column_ok=True).shape == (3,)
    assert as_numeric_array(np.array([1, 2], dtype=object), "y").dtype == np.float64
    with pytest.raises(ValueError, match=r"`y` must be 1-D"):
        as_vector(np.ones((2, 2)), "y")
    with pytest.raises(TypeError, match="is required"):
        as_vector(None, "y")
    with pytest.raises(TypeError, match="real numeric dtype"):
        as_vector(np.array(["a"]), "y")


@pytest.mark.parametrize(
    ("w", "match"),
    [
        (np.array([1.0, -1.0]), "non-negative; index 1"),
        (np.array([1.0, np.nan]), "finite; index 1"),
        (np.zeros(2), "positive sum"),
        (np.ones(3), r"shape \(2,\); got shape \(3,\)"),
        (1.0, "got a scalar"),
    ],
)
def test_weights_refused(w, match):
    with pytest.raises(ValueError, match=match):
        as_weight(w, 2)


def test_weights():
    assert as_weight(None, 3) is None
    np.testing.assert_array_equal(as_weight(np.ones((1, 3)), 3), np.ones(3))
    np.testing.assert_array_equal(as_weight(np.zeros(2), 2, positive_sum=False), np.zeros(2))


def test_lookup():
    registry = {"one": lambda *, a=1: a}
    assert lookup(registry, "ONE", "thing", a=2) == 2
    with pytest.raises(ValueError, match=r"unknown thing 'two'; choose one of \['one'\]"):
        lookup(registry, "two", "thing")
    with pytest.raises(ValueError, match="bad parameters for thing 'one'"):
        lookup(registry, "one", "thing", b=1)
    with pytest.raises(TypeError, match="a thing must be a name or a Thing; got int"):
        lookup(registry, 3, "thing", accepts="a name or a Thing")
    assert pass_through(registry, {}, "thing") is registry
    with pytest.raises(ValueError, match="cannot be applied"):
        pass_through(registry, {"a": 1}, "thing")
