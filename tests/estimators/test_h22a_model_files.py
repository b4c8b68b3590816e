"""Issues 20 and 22: model files score the same everywhere, and damaged files never load silently.

* the intercept is inside the model a serving stack reads: plain LightGBM / XGBoost in a child
  interpreter *without selrank on its path* predicts ``decision_function``'s scores;
* files written by selrank 0.1 (format 1, ``data/v1_*.json``, made with the code before this
  change) load and predict what they predicted then;
* a damaged file (cut at every 1 %, random byte flips, ``"intercept": null``) raises a
  ``ValueError`` naming the file, or loads and predicts exactly the saved model's scores.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor  # noqa: E402
from selrank.estimators import load  # noqa: E402
from selrank.gbdt import lightgbm_objective, xgboost_objective  # noqa: E402

DATA = Path(__file__).parent / "data"
LGB = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1, "deterministic": True}
XGB = {"max_depth": 2, "nthread": 1}

from ._plain_runtime import plain_predictions as _plain_predictions  # noqa: E402


def _data(rng, n=240):
    X = rng.normal(size=(n, 4))
    dwell = np.log1p(np.exp(3.0 + X[:, 0] + 0.3 * rng.normal(size=n)))  # log1p seconds, ~4
    return X, dwell


def test_plain_libraries_without_selrank_predict_the_estimators_scores(rng, tmp_path):
    X, y = _data(rng)
    qid = np.repeat(np.arange(12), 20)
    cls3 = np.digitize(X[:, 1], [-0.5, 0.5])
    models, jobs = {}, {}
    for backend, extra in (("lightgbm", LGB), ("xgboost", XGB)):
        fitted = {
            "regressor": SelectiveRegressor(n_estimators=8, backend=backend, **extra).fit(X, y),
            "dwell_link": SelectiveRegressor(
                link="exp", n_estimators=8, backend=backend, **extra
            ).fit(X, y),
            "binary": SelectiveClassifier(n_estimators=8, backend=backend, **extra).fit(
                X, (X[:, 0] > 0.5).astype(int)
            ),
            "multiclass": SelectiveClassifier(n_estimators=8, backend=backend, **extra).fit(
                X, cls3
            ),
            "ranker": SelectiveRanker(n_estimators=8, backend=backend, **extra).fit(
                X, np.round(y) % 3, qid=qid
            ),
            # early stopping: the saved booster holds the best rounds only (plain XGBoost
            # predicts every tree of a model file)
            "early_stopped": SelectiveRanker(
                n_estimators=60, early_stopping_rounds=2, backend=backend, **extra
            ).fit(
                X[:160],
                np.round(y[:160]) % 3,
                qid=qid[:160],
                eval_set=[(X[160:], np.round(y[160:]) % 3)],
                eval_qid=[qid[160:]],
            ),
        }
        for name, m in fitted.items():
            key = f"{backend}_{name}"
            path = tmp_path / (key + (".txt" if backend == "lightgbm" else ".ubj"))
            m.booster_.save_model(str(path))
            models[key] = m
            jobs[key] = (backend, str(path), X.tolist())
        # XGBoost's JSON format too
        path = tmp_path / "xgb.json"
        fitted["dwell_link"].booster_.save_model(str(path))
        models["xgboost_json"] = fitted["dwell_link"] if backend == "xgboost" else None
        if backend == "xgboost":
            jobs["xgboost_json"] = ("xgboost", str(path), X.tolist())
    plain = _plain_predictions(jobs)
    for key, m in models.items():
        if key.endswith("early_stopped"):
            assert m.best_iteration_ < 60
        want = m.decision_function(X)
        assert abs(float(np.mean(want))) > 0.05 or key.endswith(("multiclass", "ranker", "stopped"))
        np.testing.assert_allclose(plain[key].reshape(want.shape), want, rtol=1e-6, atol=1e-9)


def test_obj_train_routes_give_plain_models_with_the_intercept(rng, tmp_path):
    X, y = _data(rng)
    lobj = lightgbm_objective("pointwise", link="identity")
    lb = lobj.train({**LGB, "verbose": -1}, lgb.Dataset(X, y), 6)
    lb.save_model(str(tmp_path / "l.txt"))
    xobj = xgboost_objective("pointwise", link="identity", min_leaf_hessian=1e-3)
    xb = xobj.train(XGB, xgb.DMatrix(X, y), 6)
    xb.save_model(str(tmp_path / "x.json"))
    dobj = xgboost_objective("pointwise", link="identity", min_leaf_hessian=1e-3)
    db = dobj.train(XGB, xgb.DMatrix(X, y), 6, data=X)  # the device-resident loop on the host
    db.save_model(str(tmp_path / "d.ubj"))
    plain = _plain_predictions(
        {
            "l": ("lightgbm", str(tmp_path / "l.txt"), X.tolist()),
            "x": ("xgboost", str(tmp_path / "x.json"), X.tolist()),
            "d": ("xgboost", str(tmp_path / "d.ubj"), X.tolist()),
        }
    )
    np.testing.assert_allclose(plain["l"], lobj.predict(lb, X), rtol=1e-6)
    np.testing.assert_allclose(plain["x"], xobj.predict(xb, X), rtol=1e-6)
    np.testing.assert_allclose(plain["d"], dobj.predict(db, X), rtol=1e-6)
    assert np.mean(plain["l"]) == pytest.approx(np.mean(y), abs=0.2)  # the intercept is in there


def test_linear_trees_keep_the_intercept_outside_with_a_warning(rng):
    X, y = _data(rng)
    obj = lightgbm_objective("pointwise", link="identity")
    with pytest.warns(UserWarning, match="could not be put inside"):
        b = obj.train({**LGB, "verbose": -1, "linear_tree": True}, lgb.Dataset(X, y), 4)
    assert not obj.intercept_in_model(b)
    np.testing.assert_allclose(
        obj.predict(b, X), b.predict(X, raw_score=True) + obj.booster_intercept(b)
    )


@pytest.mark.parametrize(
    "name", ["regressor_lightgbm", "regressor_xgboost", "classifier_lightgbm", "classifier_xgboost"]
)
def test_format_1_files_load_and_predict_as_before(name):
    expected = json.loads((DATA / "v1_expected.json").read_text())
    X = np.asarray(expected["X"])
    est = load(DATA / f"v1_{name}.json")
    got = est.predict_proba(X) if name.startswith("classifier") else est.predict(X)
    np.testing.assert_allclose(got, np.asarray(expected[f"v1_{name}"]), rtol=1e-6, atol=1e-9)
    assert est.objective_.intercept_in_model(est.booster_)  # folded on load: exports carry it


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(3)
    X, y = _data(rng, 120)
    out = {}
    for backend, extra in (("lightgbm", LGB), ("xgboost", XGB)):
        m = SelectiveRegressor(link="exp", n_estimators=5, backend=backend, **extra).fit(X, y)
        path = tmp_path_factory.mktemp("m") / f"{backend}.json"
        m.save(path)
        out[backend] = (path, X, m.predict(X))
    return out


def _refused_or_identical(path: Path, X, want) -> str:
    try:
        est = load(path)
    except ValueError as exc:
        assert os.fspath(path) in str(exc)
        return "refused"
    np.testing.assert_array_equal(est.predict(X), want)
    return "identical"


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_truncated_at_every_percent_and_flipped_files_never_load_silently(saved, backend, tmp_path):
    path, X, want = saved[backend]
    raw = path.read_bytes()
    bad = tmp_path / "bad.json"
    outcomes = []
    for pct in range(100):
        bad.write_bytes(raw[: len(raw) * pct // 100])
        outcomes.append(_refused_or_identical(bad, X, want))
    assert outcomes.count("refused") == 100
    rng = np.random.default_rng(11)
    for _ in range(60):
        flipped = bytearray(raw)
        for i in rng.integers(0, len(raw), size=int(rng.integers(1, 4))):
            flipped[i] ^= 1 << int(rng.integers(0, 8))
        bad.write_bytes(bytes(flipped))
        outcomes.append(_refused_or_identical(bad, X, want))
    assert outcomes.count("refused") >= 150


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_damaged_format_1_payloads_are_parsed_in_a_child_process(backend, tmp_path):
    """Format-1 files carry no checksum: a cut model inside valid JSON is refused (not a crash)."""
    name = f"v1_regressor_{backend}.json"
    doc = json.loads((DATA / name).read_text())
    model = doc["model"]
    bad = tmp_path / name
    for frac in (0.4, 0.9):
        cut = dict(doc)
        if backend == "lightgbm":
            cut["model"] = model[: int(len(model) * frac)] + "\nend of trees\n"
        else:
            raw = base64.b64decode(model)
            cut["model"] = base64.b64encode(raw[: int(len(raw) * frac)]).decode("ascii")
        bad.write_text(json.dumps(cut))
        with pytest.raises(ValueError, match=str(bad).replace("\\", "\\\\") + ".*damaged"):
            load(bad)


@pytest.mark.parametrize(
    "field, value",
    [
        ("intercept", None),
        ("intercept", "NaN"),
        ("intercept", [1.0, None]),
        ("n_features_in", -3),
        ("best_iteration", 0),
        ("model", 12),
    ],
)
def test_bad_fields_are_refused_before_parsing(saved, tmp_path, field, value):
    path, _, _ = saved["lightgbm"]
    doc = json.loads(path.read_text())
    doc[field] = value
    from selrank.estimators.persistence import document_checksum

    doc["checksum"] = document_checksum(doc)  # a consistent checksum: the structure check acts
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="bad.json"):
        load(bad)
    doc["version"] = 1  # and without a checksum
    del doc["checksum"]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="bad.json"):
        load(bad)


def test_a_changed_parameter_breaks_the_checksum(saved, tmp_path):
    path, _, _ = saved["lightgbm"]
    doc = json.loads(path.read_text())
    doc["params"]["label_scale"] = 2.0  # would halve every prediction
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="edited.json.*checksum"):
        load(bad)
