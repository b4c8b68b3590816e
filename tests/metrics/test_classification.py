"""Single-logit classification metrics against scikit-learn and brute-force pair counts."""

from __future__ import annotations

import numpy as np
import pytest

from selrank.metrics import (
    auprc,
    logit_separation_violations,
    per_class_auprc,
    precision_at_recall,
    single_logit_scores,
)


def logits_with_ties(rng, n, k, levels=None):
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    if levels is not None:  # coarse logits: many ties inside each class column
        z = np.round(z * levels) / levels
    return y, z


@pytest.mark.parametrize("levels", [None, 2])
def test_auprc_matches_sklearn_average_precision(rng, levels):
    metrics = pytest.importorskip("sklearn.metrics")
    y, z = logits_with_ties(rng, 3000, 12, levels)
    if levels is not None:
        assert all(np.unique(z[:, j]).size < 200 for j in range(12))  # ties really occur
    got = per_class_auprc(y, z)
    want = [metrics.average_precision_score(y == j, z[:, j]) for j in range(12)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert auprc(y, z) == pytest.approx(np.mean(want), rel=1e-12)
    assert metrics.average_precision_score(np.eye(12)[y], z, average="macro") == pytest.approx(
        auprc(np.eye(12)[y], z), rel=1e-12
    )


def test_trapezoid_matches_sklearn_auc(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    y, z = logits_with_ties(rng, 800, 5, levels=3)
    got = per_class_auprc(y, z, interpolation="trapezoid")
    for j in range(5):
        p, r, _ = metrics.precision_recall_curve(y == j, z[:, j])
        assert got[j] == pytest.approx(metrics.auc(r, p), rel=1e-12)
    # linear interpolation overestimates the area of a PR curve
    assert np.all(got >= per_class_auprc(y, z) - 1e-12)


def _sklearn_precision_at_recall(yj, zj, r, interpolate):
    metrics = pytest.importorskip("sklearn.metrics")
    p, rec, _ = metrics.precision_recall_curve(yj, zj)
    p, rec = p[:-1], rec[:-1]  # drop the artificial (recall 0, precision 1) end point
    ok = rec >= r - 1e-12
    if interpolate:
        return p[ok].max()
    return p[np.flatnonzero(ok)[-1]]  # thresholds ascend: the last one still reaching r


@pytest.mark.parametrize("recall", [0.5, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("interpolate", [False, True])
def test_precision_at_recall_matches_sklearn_curve(rng, recall, interpolate):
    y, z = logits_with_ties(rng, 1500, 6, levels=4)
    got = precision_at_recall(y, z, recall, average=None, interpolate=interpolate)
    want = [_sklearn_precision_at_recall(y == j, z[:, j], recall, interpolate) for j in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert precision_at_recall(y, z, recall, interpolate=interpolate) == pytest.approx(
        np.mean(want)
    )


def test_exact_recall_boundary():
    # 100 true examples: recall 0.55 needs 55 hits, though 0.55 * 100 = 55.00000000000001
    y = np.r_[np.ones(100), np.zeros(100)]
    col = np.r_[np.arange(300.0, 245.0, -1), np.arange(45.0), np.arange(100.0, 200.0)]
    z = np.c_[col, np.zeros(200)]  # 55 true on top, then 100 false, then 45 true
    ind = np.c_[y, 1 - y]
    assert precision_at_recall(ind, z, 0.55, average=None)[0] == 1.0
    assert precision_at_recall(ind, z, 0.56, average=None)[0] == pytest.approx(56 / 156)


def test_pols_violations_brute_force(rng):
    y, z = logits_with_ties(rng, 60, 4, levels=2)
    true_mask = np.zeros_like(z, dtype=bool)
    true_mask[np.arange(60), y] = True
    t, f = z[true_mask], z[~true_mask]
    brute = np.count_nonzero(t[:, None] <= f[None, :])
    assert logit_separation_violations(y, z, normalize=False) == brute
    assert logit_separation_violations(y, z) == pytest.approx(brute / (60 * 60 * 3))
    by_class = sum(
        np.count_nonzero(z[y == j, j][:, None] <= z[y != j, j][None, :]) for j in range(4)
    )
    pairs = sum((y == j).sum() * (y != j).sum() for j in range(4))
    assert logit_separation_violations(y, z, level="class", normalize=False) == by_class
    assert logit_separation_violations(y, z, level="class") == pytest.approx(by_class / pairs)
    assert 0 < by_class and by_class < brute


def test_class_level_violation_is_one_minus_auc_without_ties(rng):
    metrics = pytest.importorskip("sklearn.metrics")
    y, z = logits_with_ties(rng, 500, 3)
    for j in range(3):
        yj = (y == j).astype(int)
        # the one-class problem: class j against the rest, through the indicator form
        ind = np.c_[yj, 1 - yj]
        zz = np.c_[z[:, j], np.full(500, -1e9)]
        got = logit_separation_violations(ind[:, :1], zz[:, :1], level="class")
        assert got == pytest.approx(1 - metrics.roc_auc_score(yj, z[:, j]), rel=1e-12)


def test_separated_logits_are_perfect():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 5, 400)
    z = rng.uniform(-1, 0, size=(400, 5))
    z[np.arange(400), y] = rng.uniform(1, 2, size=400)
    s = single_logit_scores(y, z)
    assert s == {
        "auprc": 1.0,
        "precision@0.9": 1.0,
        "precision@0.99": 1.0,
        "pols_violations": 0.0,
        "pols_violations_class": 0.0,
    }
    # per-class separation without sample-level separation: class 1's logits sit lower
    z[:, 1] -= 5.0
    assert logit_separation_violations(y, z, level="class") == 0.0
    assert logit_separation_violations(y, z) > 0.0
    assert auprc(y, z) == 1.0


def test_cross_entropy_like_shift_breaks_pols_not_argmax(rng):
    """The paper's counter-example: adding an example-wise constant keeps every argmax (and
    the cross entropy) but moves true logits of one example below false logits of another."""
    y = rng.integers(0, 4, 300)
    z = rng.normal(size=(300, 4))
    z[np.arange(300), y] += 3.0
    shifted = z + rng.normal(0, 10.0, size=(300, 1))
    assert np.array_equal(z.argmax(1), shifted.argmax(1))
    assert logit_separation_violations(y, shifted) > 10 * logit_separation_violations(y, z)
    assert auprc(y, shifted) < auprc(y, z)


def test_inputs_and_missing_classes(rng):
    y, z = logits_with_ties(rng, 200, 4)
    y[y == 3] = 2  # class 3 never true
    per = per_class_auprc(y, z)
    assert np.isnan(per[3]) and np.all(np.isfinite(per[:3]))
    assert auprc(y, z) == pytest.approx(per[:3].mean())
    torch = pytest.importorskip("torch")
    assert auprc(torch.tensor(y), torch.tensor(z, dtype=torch.float32)) == pytest.approx(
        auprc(y, z.astype(np.float32))
    )
    pl = pytest.importorskip("polars")
    assert auprc(pl.Series(y), z) == auprc(y, z)
    with pytest.raises(ValueError, match="no class"):
        auprc(np.zeros((3, 2)), np.ones((3, 2)))


def test_chunked_columns_agree(rng, monkeypatch):
    import selrank.metrics.classification as cls

    y, z = logits_with_ties(rng, 300, 9, levels=2)
    whole = (
        per_class_auprc(y, z),
        precision_at_recall(y, z, 0.9, average=None),
        logit_separation_violations(y, z, level="class"),
    )
    monkeypatch.setattr(cls, "_CHUNK_CELLS", 600)  # two columns per chunk
    parts = (
        per_class_auprc(y, z),
        precision_at_recall(y, z, 0.9, average=None),
        logit_separation_violations(y, z, level="class"),
    )
    np.testing.assert_allclose(whole[0], parts[0], rtol=1e-14)
    np.testing.assert_array_equal(whole[1], parts[1])
    assert whole[2] == parts[2]


@pytest.mark.parametrize(
    ("y", "z", "match"),
    [
        ([0, 1], [[0.1, 0.2]], "2 labels"),
        ([0, 2], [[0.1, 0.2], [0.3, 0.1]], r"\[0, 1\]"),
        ([0, 1], [0.1, 0.2], "2-D"),
        ([0, 1], [[0.1, np.nan], [0.3, 0.1]], "NaN"),
        ([[0, 2], [1, 0]], [[0.1, 0.2], [0.3, 0.1]], "only 0 and 1"),
        ([[0, 1]], [[0.1, 0.2], [0.3, 0.1]], "shape"),
        ([0.5, 1], [[0.1, 0.2], [0.3, 0.1]], "whole numbers"),
    ],
)
def test_bad_input_raises(y, z, match):
    with pytest.raises(ValueError, match=match):
        auprc(y, z)


def test_bad_options_raise():
    y, z = [0, 1], [[0.1, 0.2], [0.3, 0.1]]
    with pytest.raises(ValueError, match="interpolation"):
        auprc(y, z, interpolation="linear")
    with pytest.raises(ValueError, match="average"):
        auprc(y, z, average="micro")
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        precision_at_recall(y, z, 1.5)
    with pytest.raises(TypeError, match="recall"):
        precision_at_recall(y, z, "0.9")
    with pytest.raises(ValueError, match="level"):
        logit_separation_violations(y, z, level="batch")
    with pytest.raises(ValueError, match="pair"):
        logit_separation_violations([[1, 1]], [[0.1, 0.2]])
