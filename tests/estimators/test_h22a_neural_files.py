"""Issue 20: a damaged NeuralRanker file never loads and predicts different numbers silently.

Format 2 stores a SHA-256 of the JSON fields and of every tensor's bytes; a file cut at every
1 % or with random byte flips is refused with a ``ValueError`` naming it, or (a flip that
changes nothing the checksum covers, e.g. in zip metadata) predicts exactly as saved.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from selrank.estimators import NeuralRanker  # noqa: E402

FAST = {"hidden_layers": (8,), "epochs": 2, "batch_queries": 4, "random_state": 0}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    r = NeuralRanker("listwise", **FAST).fit(X, y, group=np.full(12, 10))
    path = tmp_path_factory.mktemp("n") / "r.pt"
    r.save(path)
    return path, X, r.predict(X)


def _outcome(path, X, want) -> str:
    try:
        back = NeuralRanker.load(path)
    except ValueError as exc:
        assert os.fspath(path) in str(exc)
        return "refused"
    np.testing.assert_array_equal(back.predict(X), want)
    return "identical"


def test_cut_and_flipped_files_are_refused_or_identical(saved, tmp_path):
    path, X, want = saved
    raw = path.read_bytes()
    bad = tmp_path / "bad.pt"
    cuts = []
    for pct in range(100):
        bad.write_bytes(raw[: len(raw) * pct // 100])
        cuts.append(_outcome(bad, X, want))
    assert cuts.count("refused") == 100
    rng = np.random.default_rng(2)
    flips = []
    for _ in range(80):
        b = bytearray(raw)
        i = int(rng.integers(0, len(raw)))
        b[i] ^= 1 << int(rng.integers(0, 8))
        bad.write_bytes(bytes(b))
        flips.append(_outcome(bad, X, want))
    assert flips.count("refused") >= 40


def test_flipped_weight_bytes_are_caught_by_the_checksum(saved, tmp_path):
    """torch's zip reader does not check the tensor data: the checksum does."""
    path, X, want = saved
    doc = torch.load(path, weights_only=True)
    name = sorted(doc["state"])[0]
    doc["state"][name] = doc["state"][name].clone()
    doc["state"][name].view(-1)[0] += 1e-3
    bad = tmp_path / "edited.pt"
    torch.save(doc, bad)
    with pytest.raises(ValueError, match="edited.pt.*checksum"):
        NeuralRanker.load(bad)
    doc["version"] = 1  # format 1 files (no checksum) still load; non-finite weights do not
    del doc["checksum"]
    doc["state"][name].view(-1)[0] = float("nan")
    torch.save(doc, bad)
    with pytest.raises(ValueError, match="non-finite"):
        NeuralRanker.load(bad)
