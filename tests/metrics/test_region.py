"""Region metrics, checked against plain-Python reimplementations on random data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selrank.links import get_link
from selrank.metrics.region import (
    REGION_ERRORS,
    in_region,
    properness_check,
    region_error,
    region_pairwise_accuracy,
    region_ranking,
    region_report,
)
from selrank.paper.underspecification import fit_linear

# ---------------------------------------------------------------------------------------
# plain-Python references
# ---------------------------------------------------------------------------------------


def _ref_error(y, p, w, lo, hi, on, metric):
    rows = [i for i in range(len(y)) if lo <= (y[i] if on == "label" else p[i]) <= hi]
    ws = [1.0 if w is None else w[i] for i in rows]
    tot = sum(ws)
    if metric == "mae":
        return sum(wi * abs(p[i] - y[i]) for wi, i in zip(ws, rows)) / tot
    if metric == "mse":
        return sum(wi * (p[i] - y[i]) ** 2 for wi, i in zip(ws, rows)) / tot
    if metric == "rmse":
        return math.sqrt(sum(wi * (p[i] - y[i]) ** 2 for wi, i in zip(ws, rows)) / tot)
    if metric == "bias":
        return sum(wi * (p[i] - y[i]) for wi, i in zip(ws, rows)) / tot
    # exp link with alpha = 1: L(p, y) = e^p - e^y - (p - y) e^y
    return (
        sum(
            wi * (math.exp(p[i]) - math.exp(y[i]) - (p[i] - y[i]) * math.exp(y[i]))
            for wi, i in zip(ws, rows)
        )
        / tot
    )


def _ref_pairwise(y, s, qid, inside_a, inside_b, against):
    """Per query: (correct, pairs) by a double loop over rows."""
    out = {}
    for q in dict.fromkeys(qid):
        rows = [i for i in range(len(y)) if qid[i] == q]
        c = n = 0.0
        for i in rows:
            for j in rows:
                if not y[i] > y[j]:
                    continue
                if against:
                    ok = (inside_a[i] and inside_b[j]) or (inside_b[i] and inside_a[j])
                else:
                    ok = inside_a[i] and inside_a[j]
                if not ok:
                    continue
                n += 1
                c += 1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0
        out[q] = (c, n)
    return out


def _ref_ndcg(labels, scores):
    order = sorted(range(len(labels)), key=lambda i: -scores[i])
    dcg = sum((2 ** labels[i] - 1) / math.log2(r + 2) for r, i in enumerate(order))
    ideal = sorted(labels, reverse=True)
    idcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 1.0


# ---------------------------------------------------------------------------------------
# in_region and region_error
# ---------------------------------------------------------------------------------------


def test_in_region_closed_sides():
    v = [1.0, 2.0, 3.0, 4.0]
    assert in_region(v, (2, 3)).tolist() == [False, True, True, False]
    assert in_region(v, (2, 3), closed="left").tolist() == [False, True, False, False]
    assert in_region(v, (2, 3), closed="right").tolist() == [False, False, True, False]
    assert in_region(v, (2, 3), closed="neither").tolist() == [False, False, False, False]
    assert in_region(v, (None, 2)).tolist() == [True, True, False, False]
    assert in_region(v, (3, math.inf)).tolist() == [False, False, True, True]


@pytest.mark.parametrize("bad", [(3, 2), (1,), "ab", 5, (float("nan"), 1)])
def test_in_region_refuses_bad_regions(bad):
    with pytest.raises((ValueError, TypeError), match="region"):
        in_region([1.0], bad)


@pytest.mark.parametrize("metric", sorted(REGION_ERRORS))
@pytest.mark.parametrize("on", ["label", "score"])
@pytest.mark.parametrize("weighted", [False, True])
def test_region_error_matches_plain_python(rng, metric, on, weighted):
    y = rng.normal(size=300)
    p = y + rng.normal(scale=0.5, size=300)
    w = rng.uniform(0.1, 2.0, size=300) if weighted else None
    for lo, hi in [(0.5, 2.0), (-1.0, 0.0), (-10.0, 10.0)]:
        got = region_error(y, p, region=(lo, hi), on=on, metric=metric, sample_weight=w, link="exp")
        want = _ref_error(
            y.tolist(), p.tolist(), None if w is None else w.tolist(), lo, hi, on, metric
        )
        assert got == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_region_error_selects_by_score_not_label():
    y = np.array([0.0, 0.0, 5.0])
    p = np.array([5.0, 0.0, 0.0])
    assert region_error(y, p, region=(4, None), on="label") == 5.0  # the row labelled 5
    assert region_error(y, p, region=(4, None), on="score") == 5.0  # the row predicted 5
    assert region_error(y, p, region=(4, None), on="label", metric="bias") == -5.0
    assert region_error(y, p, region=(4, None), on="score", metric="bias") == 5.0


def test_region_error_validation():
    y, p = np.arange(5.0), np.arange(5.0) + 1
    with pytest.raises(ValueError, match="no rows"):
        region_error(y, p, region=(10, None))
    with pytest.raises(ValueError, match="no rows"):
        region_error(y, p, region=(3, None), sample_weight=[1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="`metric`"):
        region_error(y, p, region=(0, 1), metric="mape")
    with pytest.raises(ValueError, match="`on`"):
        region_error(y, p, region=(0, 1), on="both")
    with pytest.raises(ValueError, match="needs a `link`"):
        region_error(y, p, region=(0, 1), metric="bregman")
    with pytest.raises(ValueError, match="same shape"):
        region_error(y, p[:3], region=(0, 1))
    with pytest.raises(ValueError, match="finite"):
        region_error([0.0, np.nan], [0.0, 1.0], region=(0, 1))


# ---------------------------------------------------------------------------------------
# region_report
# ---------------------------------------------------------------------------------------


def test_region_report_rows_equal_region_error(rng):
    y = rng.integers(0, 5, size=400).astype(float)
    p = y + rng.normal(size=400)
    rep = region_report(y, p, as_frame=False, link="identity")
    assert rep["region"] == ["0", "1", "2", "3", "4"]
    for g, n, mae, rmse, bias, breg in zip(
        range(5), rep["n"], rep["mae"], rep["rmse"], rep["bias"], rep["bregman"]
    ):
        assert n == int(np.sum(y == g))
        assert mae == pytest.approx(region_error(y, p, region=(g, g)))
        assert rmse == pytest.approx(region_error(y, p, region=(g, g), metric="rmse"))
        assert bias == pytest.approx(region_error(y, p, region=(g, g), metric="bias"))
        assert breg == pytest.approx(0.5 * region_error(y, p, region=(g, g), metric="mse"))


def test_region_report_edges_are_half_open_and_empty_regions_are_nan():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    rep = region_report(y, y + 1, regions=[0, 1, 2, 3], as_frame=False)
    assert rep["n"].tolist() == [1, 1, 2]  # [0,1) [1,2) [2,3]
    pairs = region_report(y, y + 1, regions=[(0, 1), (1, 3)], as_frame=False)
    assert pairs["n"].tolist() == [2, 3]  # explicit pairs are closed on both sides
    named = region_report(y, y, regions={"short": (None, 0.5), "none": (10, 20)}, as_frame=False)
    assert named["region"] == ["short", "none"]
    assert named["n"].tolist() == [1, 0]
    assert math.isnan(named["mae"][1])


def test_region_report_frame():
    pl = pytest.importorskip("polars")
    df = region_report([0, 1, 1], [0.0, 1.0, 2.0], regions={"top": (1, None)})
    assert isinstance(df, pl.DataFrame)
    assert df.columns == ["region", "lo", "hi", "n", "weight", "mae", "rmse", "bias"]
    assert df["mae"].to_list() == [0.5]


# ---------------------------------------------------------------------------------------
# ranking inside regions
# ---------------------------------------------------------------------------------------


def _random_queries(rng, n_queries=60):
    sizes = rng.integers(1, 12, size=n_queries)
    n = int(sizes.sum())
    y = rng.integers(0, 5, size=n).astype(float)
    s = np.round(rng.normal(size=n), 1)  # rounding makes score ties
    qid = np.repeat(np.arange(n_queries), sizes)
    return y, s, sizes, qid


@pytest.mark.parametrize("against", [None, (0, 1)])
def test_region_pairwise_accuracy_matches_double_loop(rng, against):
    y, s, sizes, qid = _random_queries(rng)
    assert np.unique(s).size < s.size  # ties are exercised
    region = (3, 4)
    a = in_region(y, region).tolist()
    b = in_region(y, against).tolist() if against else a
    ref = _ref_pairwise(y.tolist(), s.tolist(), qid.tolist(), a, b, against is not None)
    correct = np.array([ref[q][0] for q in range(sizes.size)])
    pairs = np.array([ref[q][1] for q in range(sizes.size)])
    assert pairs.sum() > 50
    micro = region_pairwise_accuracy(y, s, sizes, region=region, against=against)
    assert micro == pytest.approx(correct.sum() / pairs.sum(), rel=1e-12)
    per_query = region_pairwise_accuracy(
        y, s, sizes, region=region, against=against, average="none"
    )
    has = pairs > 0
    assert np.all(np.isnan(per_query[~has]))
    np.testing.assert_allclose(per_query[has], correct[has] / pairs[has], rtol=1e-12)
    macro = region_pairwise_accuracy(y, s, sizes, region=region, against=against, average="queries")
    assert macro == pytest.approx(np.mean(correct[has] / pairs[has]), rel=1e-12)


def test_region_pairwise_accuracy_with_shuffled_query_ids(rng):
    y, s, sizes, qid = _random_queries(rng, 20)
    perm = rng.permutation(y.size)
    ids = (qid * 7 + 3)[perm]  # non-contiguous, unsorted ids
    got = region_pairwise_accuracy(y[perm], s[perm], qid=ids, region=(2, None))
    assert got == pytest.approx(region_pairwise_accuracy(y, s, sizes, region=(2, None)), rel=1e-12)


def test_region_pairwise_accuracy_perfect_and_reversed():
    y = np.array([4, 3, 2, 0, 4, 3])
    assert region_pairwise_accuracy(y, y.astype(float), [4, 2], region=(3, 4)) == 1.0
    assert region_pairwise_accuracy(y, -y.astype(float), [4, 2], region=(3, 4)) == 0.0
    assert region_pairwise_accuracy(y, np.zeros(6), [4, 2], region=(3, 4)) == 0.5


def test_region_pairwise_accuracy_validation():
    y, s = np.array([1.0, 2.0]), np.array([0.0, 1.0])
    with pytest.raises(ValueError, match="overlap"):
        region_pairwise_accuracy(y, s, region=(1, 3), against=(2, 5))
    with pytest.raises(ValueError, match="no query"):
        region_pairwise_accuracy(y, s, region=(5, None))
    with pytest.raises(ValueError, match="`average`"):
        region_pairwise_accuracy(y, s, region=(0, None), average="micro")


def test_region_ranking_ndcg_matches_subset_reference(rng):
    y, s, sizes, qid = _random_queries(rng)
    s = s + 1e-6 * np.arange(s.size)  # distinct scores: no tie convention involved
    want = []
    for q in range(sizes.size):
        rows = [i for i in range(y.size) if qid[i] == q and y[i] >= 2]
        if len(rows) >= 2:
            want.append(_ref_ndcg([y[i] for i in rows], [s[i] for i in rows]))
    got = region_ranking(y, s, sizes, region=(2, None), reduction="none")
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert region_ranking(y, s, sizes, region=(2, None)) == pytest.approx(np.mean(want))
    # ndcg@1 through the metric name
    want1 = []
    for q in range(sizes.size):
        rows = [i for i in range(y.size) if qid[i] == q and y[i] >= 2]
        if len(rows) >= 3:
            top = max(rows, key=lambda i: s[i])
            want1.append((2 ** y[top] - 1) / (2 ** max(y[i] for i in rows) - 1))
    got1 = region_ranking(
        y, s, sizes, region=(2, None), metric="ndcg@1", min_rows=3, reduction="none"
    )
    np.testing.assert_allclose(got1, want1, rtol=1e-10)


def test_region_ranking_validation():
    with pytest.raises(ValueError, match="no query"):
        region_ranking([0, 1], [0.0, 1.0], region=(1, None))
    with pytest.raises(ValueError, match="min_rows"):
        region_ranking([0, 1], [0.0, 1.0], region=(0, None), min_rows=0)
    with pytest.raises(ValueError, match="twice"):
        region_ranking([0, 1], [0.0, 1.0], region=(0, None), metric="ndcg@2", k=3)
    with pytest.raises(ValueError, match="unknown metric"):
        region_ranking([0, 1], [0.0, 1.0], region=(0, None), metric="auc")


# ---------------------------------------------------------------------------------------
# properness per cell
# ---------------------------------------------------------------------------------------


def _cell_data(rng, n=600):
    X = np.column_stack([rng.integers(0, 3, size=n), rng.integers(0, 2, size=n)])
    y = 0.5 * X[:, 0] - X[:, 1] + rng.normal(scale=1.0, size=n)
    return X, y


@pytest.mark.parametrize(
    "name,params",
    [("exp", {}), ("sigmoid", {"beta": 1.0}), ("negexp", {"alpha": 0.5}), ("identity", {})],
)
def test_properness_optimum_minimises_each_cell_loss(rng, name, params):
    scipy_opt = pytest.importorskip("scipy.optimize")
    link = get_link(name, **params)
    X, y = _cell_data(rng)
    rep = properness_check(X, y, np.zeros_like(y), link)
    assert rep.cells.shape == (6, 2) and rep.n.sum() == y.size
    for cell, opt in zip(rep.cells, rep.optimum):
        yc = y[np.all(X == cell, axis=1)]
        ref = scipy_opt.minimize_scalar(
            lambda c, yc=yc: float(np.sum(link.bregman(np.full_like(yc, c), yc))),
            bracket=(-3.0, 3.0),
            tol=1e-12,
        ).x
        assert opt == pytest.approx(ref, abs=1e-5)
    if name == "identity":
        np.testing.assert_allclose(rep.optimum, rep.mean_label, rtol=1e-12)
    else:  # a selective link's optimum is not the mean label
        assert np.max(np.abs(rep.optimum - rep.mean_label)) > 0.05


def test_properness_of_a_model_trained_with_the_matching_loss(rng):
    link = get_link("exp", alpha=1.5)
    X, y = _cell_data(rng)
    cells, inv = np.unique(X, axis=0, return_inverse=True)
    onehot = np.eye(cells.shape[0])[inv.reshape(-1)]
    fit = fit_linear(link, onehot, y)
    pred = onehot @ fit.coef
    rep = properness_check(X, y, pred, link)
    assert rep.passed(atol=1e-7)
    assert np.max(np.abs(rep.link_gap)) < 1e-9
    assert np.all(rep.spread < 1e-12)
    # the square-loss fit (cell means) is not proper for the exp link
    bad = properness_check(
        X, y, rep.mean_label[np.unique(X, axis=0, return_inverse=True)[1].reshape(-1)], link
    )
    assert not bad.passed(atol=1e-3)
    assert np.all(bad.deviation < 0)  # exp leans towards high scores: cell means are too low


def test_properness_weights_and_bounded_links():
    link = get_link("sigmoid")
    cells = np.array([0, 0, 1])
    y = np.array([-1.0, 3.0, 2.0])
    rep = properness_check(cells, y, np.zeros(3), link, sample_weight=[3.0, 1.0, 1.0])
    mean_h = (3 * link.h(-1.0) + link.h(3.0)) / 4
    assert rep.optimum[0] == pytest.approx(float(link.h_inv(np.array([mean_h]))[0]), rel=1e-12)
    assert rep.optimum[1] == pytest.approx(2.0, rel=1e-9)
    logit = get_link("logit")
    with pytest.raises(ValueError, match="domain"):
        properness_check(cells, y, y, logit)
    with pytest.raises(ValueError, match="X_cells"):
        properness_check(np.zeros(2), y, y, link)
    with pytest.raises(ValueError, match="weight 0"):
        properness_check(cells, y, y, link, sample_weight=[1.0, 1.0, 0.0])


def test_properness_frame():
    pytest.importorskip("polars")
    df = properness_check(
        np.array([[0, 1], [0, 1], [1, 1]]), np.array([0.0, 1.0, 2.0]), np.ones(3), "exp"
    ).to_frame()
    assert df.columns[:2] == ["x0", "x1"] and df.height == 2


def test_cell_optimum_is_exact_where_the_link_underflows():
    # exp link: a cell of scores at -40 has its optimum at -40 (the old absolute 1e-12 floor
    # on the mean of h gave log(1e-12) = -27.63); the same in a properness check
    from selrank.links import get_link
    from selrank.metrics import properness_check
    from selrank.metrics.region import cell_optimum

    y = np.array([-40.0, -40.0, -800.0, 2.0, 2.0])
    inv = np.array([0, 0, 1, 2, 2])
    _, opt = cell_optimum(get_link("exp"), y, inv, 3, np.ones(5))
    np.testing.assert_allclose(opt, [-40.0, -800.0, 2.0], rtol=1e-12)
    _, opt = cell_optimum(get_link("negexp"), -y, inv, 3, np.ones(5))
    np.testing.assert_allclose(opt, [40.0, 800.0, -2.0], rtol=1e-12)
    rep = properness_check(inv, y, y, "exp")
    assert rep.passed() and rep.max_abs_deviation == 0.0
