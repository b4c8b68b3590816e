"""Issue 22: every export route, loaded by its own runtime in a process without selrank, scores
what ``decision_function`` (or ``NeuralRanker.predict``) scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxmltools")
pytest.importorskip("treelite")

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor  # noqa: E402
from selrank.estimators import NeuralRanker  # noqa: E402
from selrank.estimators.export import EXPORT_FORMATS, export_model  # noqa: E402

from ._plain_runtime import plain_predictions  # noqa: E402

LGB = {"num_leaves": 4, "min_data_in_leaf": 5, "num_threads": 1}
XGB = {"max_depth": 2, "nthread": 1}


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 4))
    y = np.log1p(np.exp(3.0 + X[:, 0]))
    qid = np.repeat(np.arange(10), 20)
    cls3 = np.digitize(X[:, 1], [-0.5, 0.5])
    models = {}
    for backend, extra in (("lightgbm", LGB), ("xgboost", XGB)):
        models[f"{backend}_regressor"] = SelectiveRegressor(
            link="exp", n_estimators=6, backend=backend, **extra
        ).fit(X, y)
        models[f"{backend}_binary"] = SelectiveClassifier(
            n_estimators=6, backend=backend, **extra
        ).fit(X, X[:, 2] > 0)
        models[f"{backend}_multiclass"] = SelectiveClassifier(
            n_estimators=6, backend=backend, **extra
        ).fit(X, cls3)
    # early stopping: exports keep the best rounds only
    models["lightgbm_ranker"] = SelectiveRanker(
        n_estimators=20, early_stopping_rounds=2, **LGB
    ).fit(X, np.round(y) % 3, qid=qid, eval_set=[(X, np.round(y) % 3)], eval_qid=[qid])
    net = NeuralRanker("listwise", hidden_layers=(8,), epochs=2, random_state=0)
    models["neural"] = net.fit(X.astype(np.float32), np.round(y) % 3, group=np.full(10, 20))
    return X, models


def _routes(name: str) -> list[tuple[str, str]]:
    """(export format, runtime) pairs that apply to a model."""
    if name == "neural":
        return [("onnx", "onnx")]
    if name.startswith("lightgbm"):
        # (lleaves 1.3 does not run with the llvmlite of numba >= 0.62: not tested, see the docs)
        return [("lightgbm", "lightgbm"), ("onnx", "onnx"), ("treelite", "treelite")]
    routes = [("xgboost-json", "xgboost"), ("xgboost-ubj", "xgboost"), ("treelite", "treelite")]
    if "multiclass" not in name:
        routes.append(("onnx", "onnx"))
    return routes


def test_every_route_scores_like_the_model_in_its_own_runtime(fitted, tmp_path):
    X, models = fitted
    jobs, want = {}, {}
    for name, model in models.items():
        for fmt, runtime in _routes(name):
            key = f"{name}-{fmt}-{runtime}"
            path = export_model(model, tmp_path / key, fmt)
            jobs[key] = (runtime, path, X.tolist())
            want[key] = (
                model.predict(X.astype(np.float32))
                if name == "neural"
                else model.decision_function(X)
            )
    got = plain_predictions(jobs)
    for key, w in want.items():
        # float32 runtimes (onnxruntime, treelite on float32 thresholds) agree to ~1e-6 relative
        exact = key.endswith(("-lightgbm", "-xgboost"))
        np.testing.assert_allclose(
            got[key].reshape(w.shape), w, rtol=1e-6 if exact else 1e-5, atol=1e-6, err_msg=key
        )
    assert models["lightgbm_ranker"].best_iteration_ < 20


def _walk(node, x):
    while "leaf_value" not in node:
        v = x[node["split_feature"]]
        go_left = v <= node["threshold"] if not np.isnan(v) else node["default_left"]
        node = node["left_child"] if go_left else node["right_child"]
    return node["leaf_value"]


def test_lightgbm_json_dump_holds_the_intercept(fitted, tmp_path):
    """LightGBM has no loader for its JSON dump: its trees are walked here."""
    X, models = fitted
    model = models["lightgbm_regressor"]
    path = export_model(model, tmp_path / "m.json", "lightgbm-json")
    dump = json.loads(open(path).read())
    scores = [sum(_walk(t["tree_structure"], x) for t in dump["tree_info"]) for x in X[:20]]
    np.testing.assert_allclose(scores, model.decision_function(X[:20]), rtol=1e-9)


def test_export_errors(fitted, tmp_path):
    _, models = fitted
    with pytest.raises(ValueError, match="must be one of"):
        export_model(models["lightgbm_regressor"], tmp_path / "x", "pmml")
    with pytest.raises(ValueError, match="needs an XGBoost model"):
        export_model(models["lightgbm_regressor"], tmp_path / "x", "xgboost-json")
    with pytest.raises(ValueError, match="torch model"):
        export_model(models["neural"], tmp_path / "x", "lightgbm")
    with pytest.raises(NotImplementedError, match="multi-class XGBoost"):
        export_model(models["xgboost_multiclass"], tmp_path / "x", "onnx")
    assert "onnx" in EXPORT_FORMATS
