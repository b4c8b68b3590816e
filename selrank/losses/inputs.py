"""The input checks of the losses, for the layers built on them.

The GBDT objectives (:mod:`selrank.gbdt`) and the torch heads (:mod:`selrank.torch`) check
targets, class indices and query weights exactly as the losses do; they import these
functions from here, the public seam of :mod:`selrank.losses`, rather than from its private
modules (``tests/test_architecture.py`` checks that no package imports another's private
modules or names).

* :func:`as_target_array` — targets: numeric and finite, in the array's own namespace;
* :func:`check_class_indices` — integer class indices, optionally below ``n_classes``;
* :func:`group_weights` — one weight per query from per-query or per-row weights (per-row
  weights are averaged within each query).

Examples
--------
>>> import numpy as np
>>> from selrank._groups import as_groups
>>> as_target_array([1, 0, 2])
array([1., 0., 2.])
>>> as_target_array([1.0, np.nan])
Traceback (most recent call last):
...
ValueError: `y_true` must be finite; found 1 NaN/inf value(s), first at index 1 (...)
>>> check_class_indices([0, 3], "MyLoss", n_classes=3)
Traceback (most recent call last):
...
ValueError: `y_true` class indices of MyLoss must be integers in [0, 3); index 1 holds 3
>>> check_class_indices([0, 2, 1], "MyLoss", n_classes=3)
array([0, 2, 1])
>>> group_weights(as_groups([2, 3], n_rows=5), [1.0, 1.0, 2.0, 2.0, 5.0])
array([1., 3.])
"""

from __future__ import annotations

from ._base import as_target_array, check_class_indices, group_weights

__all__ = ["as_target_array", "check_class_indices", "group_weights"]
