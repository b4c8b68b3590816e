"""The backend seam after issue 31: one network trainer for NeuralRanker and backend="torch",
and backends that call only public hooks of the estimators they train."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import selrank.estimators as estimators_package
from selrank import SelectiveRanker
from selrank.estimators._backend import BackendEstimator

ESTIMATORS = Path(estimators_package.__file__).resolve().parent


def _private_reaches(path: Path) -> list[str]:
    """``x._name`` accesses on objects other than self / cls (the seam's private reaches)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                continue
            obj = node.value
            if isinstance(obj, ast.Name) and obj.id in ("self", "cls", "A"):
                continue
            out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_backends_reach_no_private_attribute_of_another_object():
    files = sorted(ESTIMATORS.glob("_*_backend.py")) + [ESTIMATORS / "_backend.py"]
    assert len(files) >= 5
    found = [r for f in files for r in _private_reaches(f)]
    assert found == []


def test_the_hooks_a_backend_calls_are_declared_on_the_seam():
    """Every ``est.<name>(...)`` a backend calls is a public hook of BackendEstimator."""
    declared = {n for n in vars(BackendEstimator) if not n.startswith("_")}
    called = set()
    for f in sorted(ESTIMATORS.glob("_*_backend.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("est", "fitted")
            ):
                called.add(node.func.attr)
    assert called and called <= declared, called - declared


torch = pytest.importorskip("torch")


def _ranking(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.3, size=120)), 0, 2)
    return X, y, [30, 30, 30, 30]


def test_neural_ranker_and_the_torch_backend_share_one_trainer(monkeypatch):
    from selrank.estimators import _torch_backend
    from selrank.estimators.neural import NeuralRanker

    calls = []
    real = _torch_backend.train_network

    def counting(settings, *args, **kwargs):
        calls.append(settings)
        return real(settings, *args, **kwargs)

    monkeypatch.setattr(_torch_backend, "train_network", counting)
    fit_calls = []
    real_fit = NeuralRanker.fit

    def fit_spy(self, *args, **kwargs):
        fit_calls.append(1)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(NeuralRanker, "fit", fit_spy)
    X, y, group = _ranking()
    kw = {"hidden_layers": (8,), "epochs": 4, "random_state": 0, "early_stopping_rounds": None}
    net = NeuralRanker("listwise", **kw).fit(X, y * 0.25, group=group)
    est = SelectiveRanker(
        "listwise", backend="torch", label_scale=0.25, loss_params={"gamma": 1.0}, **kw
    ).fit(X, y, group=group)
    assert len(calls) == 2  # both trained by the one trainer
    assert fit_calls == [1]  # the backend checks the data once: not through NeuralRanker.fit
    assert isinstance(est.model_, NeuralRanker)
    np.testing.assert_allclose(est.predict(X), net.predict(X), rtol=1e-5, atol=1e-6)


def test_network_parameters_of_the_backend_are_neural_rankers():
    from selrank.estimators._torch_backend import NETWORK_PARAMETERS
    from selrank.estimators.neural import NeuralRanker

    names = [p for p in inspect.signature(NeuralRanker).parameters]
    assert sorted(NETWORK_PARAMETERS) == sorted(names)
