r"""Single-logit classification (SLC) metrics (Keren, Sabato & Schuller).

In the SLC task a trained multi-class model answers "does example ``x`` belong to class
``j``?" from the single logit ``z_j(x)``, by thresholding it: ``z_j(x) > T``. The paper
evaluates this per class from the precision-recall curve of ``z_j`` over a test sample and
averages over classes:

* **AUPRC** of each class (:func:`per_class_auprc`, :func:`auprc`);
* **Precision@Recall** ``r`` (0.9 and 0.99 in the paper): the precision at the threshold
  that the recall ``r`` dictates (:func:`precision_at_recall`).

*Principle of Logit Separation* (PoLS, Definition 1 of the paper): for every pair of
labelled examples ``(x, y)``, ``(x', y')`` of the sample (``x = x'`` included) and every
``y'' != y'``, ``z_y(x) > z_{y''}(x')`` — every *true logit* (a logit of an example's own
class) exceeds every *false logit* (of any example, any other class).
:func:`logit_separation_violations` measures how far a model is from it: the fraction of
(true logit, false logit) pairs of the sample with ``true <= false``. The paper remarks that
separating true and false logits class by class is enough for SLC; ``level="class"``
counts only pairs of the same class.

Labels are either class indices (``y_true`` of shape ``(n,)``, one true class per
example, as in the paper) or a binary indicator matrix of shape ``(n, k)`` (several true
classes per example; the definitions carry over with "true logit" = indicator 1).
Classes are processed in column chunks, never per example.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._array import Array
from .._validation import as_numeric_array, check_choice

__all__ = [
    "per_class_auprc",
    "auprc",
    "precision_at_recall",
    "logit_separation_violations",
    "single_logit_scores",
]

INTERPOLATIONS = ("step", "trapezoid")
LEVELS = ("sample", "class")
_CHUNK_CELLS = 2_000_000  # cells of an (n, chunk) block processed at once


def _prepare(y_true, logits) -> tuple[np.ndarray, np.ndarray]:
    """Return the true-logit indicator ``Y`` (bool) and logits ``Z``, both ``(n, k)``."""
    z = as_numeric_array(logits, "logits")
    if z.ndim != 2:
        raise ValueError(f"`logits` must be 2-D (n_samples, n_classes); got shape {z.shape}")
    n, k = z.shape
    if n == 0 or k == 0:
        raise ValueError(f"`logits` is empty; got shape {z.shape}")
    if z.dtype.kind != "f":
        z = z.astype(np.float64)
    if np.isnan(z).any():
        bad = np.argwhere(np.isnan(z))[0]
        raise ValueError(f"`logits` has NaN values, first at (row, class) {tuple(bad.tolist())}")
    y = as_numeric_array(y_true, "y_true")
    if y.ndim == 1:
        if y.shape[0] != n:
            raise ValueError(
                f"`y_true` has {y.shape[0]} labels but `logits` has {n} rows (shape {z.shape})"
            )
        if y.dtype.kind == "f" and not np.all(y == np.round(y)):
            raise ValueError("`y_true` class indices must be whole numbers")
        yi = y.astype(np.int64)
        if yi.min() < 0 or yi.max() >= k:
            raise ValueError(
                f"`y_true` class indices must lie in [0, {k - 1}] for {k} logit columns; "
                f"got values in [{yi.min()}, {yi.max()}]"
            )
        ind = np.zeros((n, k), dtype=bool)
        ind[np.arange(n), yi] = True
        return ind, z
    if y.ndim == 2:
        if y.shape != z.shape:
            raise ValueError(
                f"indicator `y_true` must have the shape of `logits`; got {y.shape} and {z.shape}"
            )
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("indicator `y_true` must hold only 0 and 1")
        return y.astype(bool), z
    raise ValueError(
        f"`y_true` must be class indices (n,) or an indicator matrix (n, k); got shape {y.shape}"
    )


def _chunks(n: int, k: int):
    step = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, k, step):
        yield slice(start, min(k, start + step))


def _sorted_curves(y: np.ndarray, z: np.ndarray):
    """Sort each column by decreasing logit; return hits, block ends and positives.

    ``tp[i, c]``: true rows among the top ``i + 1`` of column ``c``. ``end[i, c]``: row ``i``
    is the last of its run of equal logits, so thresholds sit only at block ends (a tied
    run is accepted or rejected as a whole).
    """
    order = np.argsort(-z, axis=0, kind="stable")
    zs = np.take_along_axis(z, order, axis=0)
    ys = np.take_along_axis(y, order, axis=0)
    tp = np.cumsum(ys, axis=0, dtype=np.int64)
    end = np.ones_like(ys)
    np.not_equal(zs[1:], zs[:-1], out=end[:-1])
    return ys, tp, end


def _block_end_index(end: np.ndarray) -> np.ndarray:
    """For every row, the index of the last row of its tie block."""
    n = end.shape[0]
    idx = np.where(end, np.arange(n)[:, None], n)
    return np.minimum.accumulate(idx[::-1], axis=0)[::-1]


def per_class_auprc(y_true: Array, logits: Array, *, interpolation: str = "step") -> np.ndarray:
    r"""Area under the precision-recall curve of each class's own logit.

    For class ``j`` the examples are ranked by ``z_j``; each distinct logit value is a
    threshold (examples with ``z_j >= T`` are called positive, so tied logits enter
    together). With ``interpolation="step"`` the area is

    .. math:: \mathrm{AUPRC}_j = \sum_t (R_t - R_{t-1})\, P_t,

    the average precision of ``sklearn.metrics.average_precision_score`` (no linear
    interpolation, which over-estimates the area of a PR curve). ``"trapezoid"`` joins the
    points ``(0, 1), (R_1, P_1), …`` with straight lines, as
    ``sklearn.metrics.auc(recall, precision)`` does on ``precision_recall_curve``.

    Parameters
    ----------
    y_true : array-like
        Class indices, shape ``(n,)``, or binary indicator, shape ``(n, k)``.
    logits : array-like, shape (n, k)
    interpolation : {"step", "trapezoid"}

    Returns
    -------
    ndarray of shape (k,)
        NaN for a class without any true example (its PR curve is undefined).

    Examples
    --------
    >>> z = [[2.0, 0.0], [1.0, 0.5], [0.1, 0.2]]
    >>> per_class_auprc([0, 1, 0], z)
    array([0.8333..., 1.        ])
    """
    check_choice(interpolation, "interpolation", INTERPOLATIONS)

    def area(ys, tp, end):
        npos = tp[-1]
        last = _block_end_index(end)
        tp_end = np.take_along_axis(tp, last, axis=0)
        prec_end = tp_end / (last + 1.0)
        safe = np.where(npos > 0, npos, 1)
        if interpolation == "step":
            return (ys * prec_end).sum(axis=0) / safe
        rec = tp_end / safe
        rec_prev = np.vstack([np.zeros((1, rec.shape[1])), rec[:-1]])
        prec_prev = np.vstack([np.ones((1, rec.shape[1])), prec_end[:-1]])
        return ((rec - rec_prev) * (prec_end + prec_prev) / 2.0).sum(axis=0)

    return _per_class(y_true, logits, area)


def _per_class(y_true, logits, statistic) -> np.ndarray:
    """``statistic(ys, tp, end)`` of each class's sorted curve (:func:`_sorted_curves`), computed
    in column chunks; NaN for a class without a true example."""
    y, z = _prepare(y_true, logits)
    n, k = z.shape
    out = np.full(k, np.nan)
    for cols in _chunks(n, k):
        ys, tp, end = _sorted_curves(y[:, cols], z[:, cols])
        out[cols] = np.where(tp[-1] > 0, statistic(ys, tp, end), np.nan)
    return out


def _macro(per_class: np.ndarray, average: str | None, what: str):
    if average is None:
        return per_class
    if average != "macro":
        raise ValueError(f"`average` must be 'macro' or None; got {average!r}")
    kept = per_class[~np.isnan(per_class)]
    if kept.size == 0:
        raise ValueError(f"{what} is undefined: no class has a true example in `y_true`")
    return float(kept.mean())


def auprc(
    y_true: Array, logits: Array, *, average: str | None = "macro", interpolation: str = "step"
) -> float | np.ndarray:
    """Per-class AUPRC of single-logit thresholding, averaged over classes.

    Parameters
    ----------
    y_true, logits, interpolation
        As in :func:`per_class_auprc`.
    average : {"macro", None}
        ``"macro"``: the mean over the classes that have a true example (the paper's
        "averages over all the classes"); ``None``: the per-class array.

    Returns
    -------
    float or ndarray of shape (k,)

    Examples
    --------
    >>> auprc([0, 1, 0], [[2.0, 0.0], [1.0, 0.5], [0.1, 0.2]])  # mean of 5/6 and 1
    0.9166...
    """
    return _macro(per_class_auprc(y_true, logits, interpolation=interpolation), average, "AUPRC")


def precision_at_recall(
    y_true: Array,
    logits: Array,
    recall: float = 0.9,
    *,
    average: str | None = "macro",
    interpolate: bool = False,
) -> float | np.ndarray:
    """Precision of single-logit thresholding at a fixed recall, per class, averaged.

    For class ``j`` the threshold is the highest distinct value ``T`` of ``z_j`` at which
    the recall of ``z_j >= T`` reaches ``recall`` (the paper: the recall value "dictates
    the threshold T to use"); the metric is the precision at that threshold. With
    ``interpolate=True`` it is instead the best precision over all thresholds with recall
    at least ``recall`` (interpolated precision, as TensorFlow's ``PrecisionAtRecall``).

    Parameters
    ----------
    y_true, logits
        As in :func:`per_class_auprc`.
    recall : float in (0, 1]
    average : {"macro", None}
    interpolate : bool

    Returns
    -------
    float or ndarray of shape (k,)
        Per class: NaN for a class without true examples.

    Examples
    --------
    >>> y = [0, 0, 0, 1]
    >>> z = [[3.0, 0], [2.0, 0], [0.5, 0], [1.0, 1]]
    >>> precision_at_recall(y, z, 0.9, average=None)
    array([0.75, 1.  ])
    """
    if isinstance(recall, bool) or not isinstance(recall, int | float | np.floating):
        raise TypeError(f"`recall` must be a number in (0, 1]; got {recall!r}")
    if not 0.0 < float(recall) <= 1.0:
        raise ValueError(f"`recall` must be in (0, 1]; got {recall!r}")

    def precision(ys, tp, end):
        # smallest whole number of hits reaching the recall (guards 0.99 * 100 = 98.99..)
        need = np.ceil(float(recall) * tp[-1] - 1e-9)
        ok = end & (tp >= need)
        prec = tp / np.arange(1.0, tp.shape[0] + 1.0)[:, None]
        if interpolate:
            return np.where(ok, prec, -np.inf).max(axis=0)
        return prec[np.argmax(ok, axis=0), np.arange(prec.shape[1])]

    return _macro(_per_class(y_true, logits, precision), average, "precision at recall")


def logit_separation_violations(
    y_true: Array, logits: Array, *, level: str = "sample", normalize: bool = True
) -> float:
    r"""Violations of the Principle of Logit Separation in a sample.

    With ``level="sample"`` (Definition 1 of the paper) every pair of a true logit
    ``z_y(x)`` and a false logit ``z_{y''}(x')`` — any two examples of the sample, the same
    one included, ``y'' != y'`` — is checked, and a pair with ``z_y(x) <= z_{y''}(x')``
    (ties included: the principle asks for ``>``) is a violation. With single-label data
    there are ``n · n(k-1)`` such pairs. With ``level="class"`` only pairs of the same class
    ``j`` are checked (true ``z_j(x)`` for examples of class ``j`` against ``z_j(x')`` for
    examples of other classes): one minus the pooled per-class ROC AUC with ties counted
    as errors, the weaker separation that SLC needs.

    Parameters
    ----------
    y_true : array-like
        Class indices ``(n,)`` or indicator ``(n, k)``.
    logits : array-like, shape (n, k)
    level : {"sample", "class"}
    normalize : bool
        Return the fraction of violating pairs (0 when the principle holds); ``False``
        returns their number.

    Returns
    -------
    float or int

    Examples
    --------
    >>> z = [[2.0, -1.0], [0.5, 1.5]]           # true logits 2.0 and 1.5; false -1.0, 0.5
    >>> logit_separation_violations([0, 1], z)
    0.0
    >>> z = [[2.0, 1.0], [1.5, 1.2]]            # false logit 1.5 beats true logit 1.2
    >>> logit_separation_violations([0, 1], z, normalize=False)
    1
    """
    check_choice(level, "level", LEVELS)
    y, z = _prepare(y_true, logits)
    n, k = z.shape
    if level == "sample":
        true = z[y]
        false = np.sort(z[~y])
        count = int(false.size * true.size - np.searchsorted(false, true, side="left").sum())
        pairs = true.size * false.size
    else:
        count, pairs = 0, 0
        for cols in _chunks(n, k):
            yc, zc = y[:, cols], z[:, cols]
            # ascending logits, true rows first among ties, so equal false logits come after
            order = np.lexsort((~yc, zc), axis=0)
            ys = np.take_along_axis(yc, order, axis=0)
            neg_seen = np.cumsum(~ys, axis=0)
            n_neg = neg_seen[-1]
            count += int(np.where(ys, n_neg[None, :] - neg_seen, 0).sum())
            pairs += int((ys.sum(axis=0) * n_neg).sum())
    if not normalize:
        return count
    if pairs == 0:
        raise ValueError("no (true logit, false logit) pair in the sample: need both kinds")
    return count / pairs


def single_logit_scores(
    y_true: Array,
    logits: Array,
    *,
    recalls: Sequence[float] = (0.9, 0.99),
    interpolation: str = "step",
) -> dict[str, float]:
    """All SLC metrics of the paper's Table 1 (and the PoLS violation rates) in one dict.

    Keys: ``"auprc"``, ``"precision@<r>"`` for each recall, ``"pols_violations"``
    (sample level) and ``"pols_violations_class"`` (class level). The paper reports one
    minus each of the first ones.

    Examples
    --------
    >>> s = single_logit_scores([0, 1], [[2.0, -1.0], [0.5, 1.5]])
    >>> sorted(s)
    ['auprc', 'pols_violations', 'pols_violations_class', 'precision@0.9', 'precision@0.99']
    >>> s["auprc"]
    1.0
    """
    y, z = _prepare(y_true, logits)
    # average="macro" (the default): floats
    out = {"auprc": float(auprc(y, z, interpolation=interpolation))}
    for r in recalls:
        out[f"precision@{r:g}"] = float(precision_at_recall(y, z, r))
    out["pols_violations"] = logit_separation_violations(y, z, level="sample")
    out["pols_violations_class"] = logit_separation_violations(y, z, level="class")
    return out
