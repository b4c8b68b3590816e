"""The backend seam (selrank.estimators.backends) and the estimator's one label scale."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor  # noqa: E402
from selrank.estimators import BACKENDS, load  # noqa: E402
from selrank.estimators.backends import (  # noqa: E402
    Backend,
    LightGBMBackend,
    TorchBackend,
    XGBoostBackend,
    get_backend,
)
from selrank.estimators.persistence import document_checksum  # noqa: E402

FAST = {"num_leaves": 7, "min_data_in_leaf": 5, "num_threads": 1}


def _ranking(rng, n_queries=12, size=15, n_features=4):
    X = rng.normal(size=(n_queries * size, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=len(X)) + 1), 0, 2)
    return X, y, np.full(n_queries, size)


# -- the registry ---------------------------------------------------------------------------------
def test_every_backend_name_has_one_object():
    assert BACKENDS == ("lightgbm", "xgboost", "torch")
    kinds = {"lightgbm": LightGBMBackend, "xgboost": XGBoostBackend, "torch": TorchBackend}
    for name in BACKENDS:
        backend = get_backend(name)
        assert isinstance(backend, kinds[name]) and isinstance(backend, Backend)
        assert backend.name == name
        assert get_backend(name) is backend  # stateless: one instance per library
    with pytest.raises(
        ValueError,
        match=r"`backend` must be one of \('lightgbm', 'xgboost', 'torch'\); got 'sklearn'",
    ):
        get_backend("sklearn")
    with pytest.raises(ValueError, match="`backend` must be one of"):
        SelectiveRanker(backend="sklearn").fit(np.zeros((4, 2)), np.zeros(4), group=[4])


def test_the_estimator_trains_and_predicts_through_its_backend(rng, monkeypatch):
    """Training goes through the backend of ``backend=``; prediction through the backend that
    trained the model, even after ``set_params(backend=...)``."""
    X, y, group = _ranking(rng)
    calls = []
    original = LightGBMBackend.predict

    def spy(self, est, data):
        calls.append(type(self).__name__)
        return original(self, est, data)

    monkeypatch.setattr(LightGBMBackend, "predict", spy)
    est = SelectiveRanker(n_estimators=3, random_state=0, **FAST).fit(X, y, group=group)
    before = est.predict(X)
    est.set_params(backend="xgboost")
    np.testing.assert_array_equal(est.predict(X), before)
    assert calls == ["LightGBMBackend", "LightGBMBackend"]


def test_torch_backend_declares_what_it_does_not_do():
    torch_backend = get_backend("torch")
    assert torch_backend.kinds == ("ranker",)
    assert not torch_backend.sparse and not torch_backend.topk_pairs_on_long_lists
    assert torch_backend.export_formats == ("onnx",)
    assert get_backend("lightgbm").export_formats == (
        "lightgbm",
        "lightgbm-json",
        "onnx",
        "treelite",
    )
    with pytest.raises(ValueError, match="available for SelectiveRanker only"):
        SelectiveRegressor(backend="torch").fit(np.zeros((10, 2)), np.arange(10.0))


# -- the CLI's baselines train through the LightGBM backend ----------------------------------------
def _old_fit_baseline(objective, split, tree_params, seed, n_rounds, esr):
    """cli._fit_baseline before the backend object (selrank 0.3.0.dev, commit f8750d9)."""
    from selrank.metrics import ndcg

    tr, va = split.train, split.validation
    params = {
        "objective": objective,
        "learning_rate": 0.05,
        "verbosity": -1,
        "metric": "None",
        "seed": seed,
        **tree_params,
    }
    dtrain = lgb.Dataset(tr.X, tr.y, group=tr.group)
    dvalid = lgb.Dataset(va.X, va.y, group=va.group, reference=dtrain)
    booster = lgb.train(
        params,
        dtrain,
        num_boost_round=n_rounds,
        valid_sets=[dvalid],
        feval=lambda p, d: ("ndcg@10", float(ndcg(va.y, p, va.group, k=10)), True),
        callbacks=[lgb.early_stopping(esr, verbose=False)] if esr else [],
    )
    best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
    return booster.predict(split.test.X, num_iteration=best), int(best)


@pytest.mark.parametrize("objective", ["lambdarank", "rank_xendcg"])
@pytest.mark.parametrize("esr", [0, 3])
def test_cli_baseline_is_what_it_was(objective, esr, rng):
    from selrank.cli import _fit_baseline

    parts = [_ranking(rng, n_queries=20, size=12, n_features=5) for _ in range(3)]
    split = SimpleNamespace(
        **{
            k: SimpleNamespace(X=X, y=y, group=g)
            for k, (X, y, g) in zip(("train", "validation", "test"), parts)
        }
    )
    tree = {"num_leaves": 7, "min_data_in_leaf": 5, "num_threads": 1}
    new_scores, new_rounds = _fit_baseline(objective, split, tree, 0, 60, esr)
    old_scores, old_rounds = _old_fit_baseline(objective, split, tree, 0, 60, esr)
    assert new_rounds == old_rounds
    if esr:
        assert new_rounds < 60  # early stopping did stop (the comparison covers it)
    np.testing.assert_array_equal(new_scores, old_scores)


# -- label_scale: one owner, label_scale_ ----------------------------------------------------------
def test_label_scale_is_resolved_once_per_fit_and_read_from_the_fitted_value(rng):
    X = rng.normal(size=(200, 3))
    y = 5.0 + X[:, 0]
    reg = SelectiveRegressor(n_estimators=10, label_scale=2.0, **FAST).fit(X, y)
    assert reg.label_scale_ == 2.0
    pred = reg.predict(X)
    np.testing.assert_allclose(pred, reg.decision_function(X) / 2.0)
    assert np.mean(np.abs(pred - y)) < 0.5  # the space of y, not of the targets 2 * y
    reg.set_params(label_scale=4.0)  # a parameter change after fit does not rescale the model
    np.testing.assert_array_equal(reg.predict(X), pred)

    clf_y = (X[:, 0] > 0).astype(int)
    clf = SelectiveClassifier(link="exp", n_estimators=10, label_scale=0.5, **FAST).fit(X, clf_y)
    assert clf.label_scale_ == 0.5
    proba = clf.predict_proba(X)
    clf.set_params(label_scale=3.0)
    np.testing.assert_array_equal(clf.predict_proba(X), proba)


def test_every_saved_estimator_carries_its_label_scale(rng, tmp_path):
    X = rng.normal(size=(200, 3))
    y = 5.0 + X[:, 0]
    reg = SelectiveRegressor(n_estimators=10, label_scale=2.0, **FAST).fit(X, y)
    path = tmp_path / "reg.json"
    reg.save(path)
    doc = json.loads(path.read_text())
    assert doc["fitted"]["label_scale_"] == 2.0
    np.testing.assert_array_equal(load(path).predict(X), reg.predict(X))
    # a file of a regressor saved before label_scale_ was stored: the parameter is the scale
    del doc["fitted"]["label_scale_"]
    doc["checksum"] = document_checksum(doc)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    restored = load(old)
    assert restored.label_scale_ == 2.0
    np.testing.assert_array_equal(restored.predict(X), reg.predict(X))


def test_weighted_pairwise_gains_use_the_resolved_scale(rng):
    X, y, group = _ranking(rng)
    est = SelectiveRanker("weighted_pairwise", n_estimators=3, **FAST).fit(X, 3 * y, group=group)
    assert est.label_scale_ == pytest.approx(0.5 / (3 * y.max()))
    assert est.loss_.gain_scale == est.label_scale_
