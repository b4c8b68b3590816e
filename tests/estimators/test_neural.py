"""NeuralRanker: save / load / score (issue 11: SelectiveRanker(backend="torch").save pointed at a
NeuralRanker save that did not exist), and the move to selrank.estimators."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from selrank.estimators import NeuralRanker, SelectiveRanker  # noqa: E402
from selrank.metrics import ndcg  # noqa: E402

FAST = {"hidden_layers": (8,), "epochs": 3, "batch_queries": 4, "random_state": 0}


@pytest.fixture
def data(rng):
    sizes = np.full(12, 10)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    return X, y, sizes


def test_save_load_round_trip_and_score(data, tmp_path):
    X, y, sizes = data
    r = NeuralRanker("listwise", **FAST).fit(X, y, group=sizes)
    r.save(tmp_path / "r.pt")
    back = NeuralRanker.load(tmp_path / "r.pt")
    np.testing.assert_array_equal(back.predict(X), r.predict(X))
    assert back.get_params() == r.get_params() and back.evals_result_ == r.evals_result_
    qid = np.repeat(np.arange(12), 10)
    assert r.score(X, y, qid=qid) == pytest.approx(ndcg(y, r.predict(X), sizes, k=10))
    assert r.score(X, y, group=sizes) == pytest.approx(r.score(X, y, qid=qid))
    with pytest.raises(ValueError, match="pass qid= instead"):
        NeuralRanker("listwise", **FAST).fit(
            X, y, group=qid
        )  # ids are never guessed from the length
    with pytest.raises(ValueError, match="not a saved NeuralRanker"):
        (tmp_path / "x.pt").write_bytes(b"not torch")
        NeuralRanker.load(tmp_path / "x.pt")


def test_torch_backed_selective_ranker_saves_its_network(data, tmp_path):
    X, y, sizes = data
    est = SelectiveRanker(backend="torch", **FAST).fit(X, y, group=sizes)
    with pytest.raises(ValueError, match=r"est.model_.save\(path\)"):
        est.save(tmp_path / "e.json")
    est.model_.save(tmp_path / "m.pt")
    np.testing.assert_allclose(NeuralRanker.load(tmp_path / "m.pt").predict(X), est.predict(X))


def test_top_level_import_path():
    from selrank import NeuralRanker as top

    assert top is NeuralRanker
