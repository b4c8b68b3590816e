"""NeuralRanker: scikit-learn conventions, reproducibility, early stopping, weights, every
head, validation, data parallel training with 2 gloo processes, and MQ2008 (slow)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
import torch

from selrank.estimators.neural import NeuralRanker, NotFittedError
from selrank.losses import Listwise, get_loss
from selrank.metrics import ndcg
from selrank.torch import HEADS, ListwiseLoss

from ._ddp import fit_params, synthetic

FAST = {"hidden_layers": (8,), "epochs": 4, "batch_queries": 4, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    X, y, sizes = synthetic(40, seed=1)
    Xv, yv, sv = synthetic(12, seed=2)
    return X, y, sizes, Xv, yv, sv


def test_fit_predict_and_fitted_attributes(data):
    X, y, sizes, Xv, yv, sv = data
    r = NeuralRanker(**FAST)
    assert r.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv]) is r
    p = r.predict(Xv)
    assert p.shape == (Xv.shape[0],) and p.dtype == np.float64 and np.all(np.isfinite(p))
    assert r.n_features_in_ == 5 and isinstance(r.head_, ListwiseLoss)
    assert (
        len(r.evals_result_["train"]["loss"])
        == r.n_epochs_
        == len(r.evals_result_["valid_0"]["ndcg@10"])
    )
    assert r.best_score_ == max(r.evals_result_["valid_0"]["ndcg@10"])
    # the kept weights are the best epoch's
    assert ndcg(yv, p, sv, k=10) == pytest.approx(r.best_score_, abs=1e-12)


def test_learns_the_ranking(data):
    X, y, sizes, Xv, yv, sv = data
    r = NeuralRanker(
        hidden_layers=(16,),
        epochs=40,
        batch_queries=8,
        learning_rate=0.01,
        random_state=0,
        early_stopping_rounds=None,
    )
    r.fit(X, y, group=sizes)
    rng = np.random.default_rng(0)
    chance = np.mean([ndcg(yv, rng.normal(size=yv.size), sv, k=5) for _ in range(20)])
    learned = ndcg(yv, r.predict(Xv), sv, k=5)
    assert learned > 0.9 > chance + 0.1


def test_reproducible_with_random_state(data):
    X, y, sizes, *_ = data
    a = NeuralRanker(**{**FAST, "dropout": 0.2}).fit(X, y, group=sizes).predict(X)
    b = NeuralRanker(**{**FAST, "dropout": 0.2}).fit(X, y, group=sizes).predict(X)
    c = (
        NeuralRanker(**{**FAST, "dropout": 0.2, "random_state": 1})
        .fit(X, y, group=sizes)
        .predict(X)
    )
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    state = torch.get_rng_state()
    NeuralRanker(**FAST).fit(X, y, group=sizes)
    assert torch.equal(state, torch.get_rng_state())  # the global generator is left alone


def test_sklearn_protocol(data):
    sklearn_base = pytest.importorskip("sklearn.base")
    r = NeuralRanker("pairwise", hidden_layers=(4,), epochs=2)
    params = r.get_params()
    assert params["loss"] == "pairwise" and params["hidden_layers"] == (4,)
    c = sklearn_base.clone(r)
    assert c.get_params() == params and not hasattr(c, "model_")
    assert r.set_params(epochs=3) is r and r.epochs == 3
    with pytest.raises(ValueError, match="invalid parameter"):
        r.set_params(n_estimators=3)
    assert "pairwise" in repr(r)
    X, y, sizes, *_ = data
    with pytest.raises(NotFittedError):
        NeuralRanker().predict(X)


def test_pickle_round_trip(data):
    import pickle

    X, y, sizes, *_ = data
    r = NeuralRanker(**FAST).fit(X, y, group=sizes)
    again = pickle.loads(pickle.dumps(r))
    np.testing.assert_array_equal(again.predict(X), r.predict(X))


@pytest.mark.gpu
def test_cuda_training_matches_cpu_roughly(data):
    X, y, sizes, Xv, yv, sv = data
    cpu = NeuralRanker(**FAST).fit(X, y, group=sizes)
    gpu = NeuralRanker(**FAST, device="cuda").fit(X, y, group=sizes)
    assert next(gpu.model_.parameters()).device.type == "cuda"
    np.testing.assert_allclose(gpu.predict(Xv), cpu.predict(Xv), rtol=1e-3, atol=1e-3)


def test_query_ids_and_per_query_weights_match_sizes_and_per_row_weights(data):
    X, y, sizes, *_ = data
    ids = np.repeat(np.arange(sizes.size), sizes)
    # interleave the queries' rows, keeping each query's first appearance and inner order
    pos = np.concatenate([np.arange(m) for m in sizes])
    order = np.lexsort((ids, pos))
    base = NeuralRanker(**FAST).fit(X, y, group=sizes).predict(X)
    mixed = NeuralRanker(**FAST).fit(X[order], y[order], qid=ids[order]).predict(X)
    np.testing.assert_allclose(mixed, base, rtol=1e-5, atol=1e-6)
    wq = np.linspace(0.5, 2.0, sizes.size)
    a = NeuralRanker(**FAST).fit(X, y, group=sizes, sample_weight=wq).predict(X)
    b = NeuralRanker(**FAST).fit(X, y, group=sizes, sample_weight=np.repeat(wq, sizes)).predict(X)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert not np.allclose(a, base)


@pytest.mark.parametrize(
    "loss",
    sorted(set(HEADS) - {"multiclass", "combined"})
    + ["reweighted_square", "core-listwise", "combined"],
)
def test_every_head_trains(loss, data):
    X, y, sizes, Xv, yv, sv = data
    if loss == "core-listwise":
        loss = Listwise("sigmoid")
    elif loss == "combined":
        loss = get_loss("combined", losses=["pointwise", "listwise"], weights=[1.0, 0.5])
    r = NeuralRanker(loss, hidden_layers=(4,), epochs=2, batch_queries=8, random_state=0)
    r.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
    assert np.all(np.isfinite(r.predict(Xv)))
    assert np.all(np.isfinite(r.evals_result_["train"]["loss"]))


def test_early_stopping_and_eval_at_sequence(data):
    X, y, sizes, Xv, yv, sv = data
    r = NeuralRanker(
        hidden_layers=(4,),
        epochs=200,
        learning_rate=0.05,
        early_stopping_rounds=2,
        eval_at=(3, 10),
        random_state=0,
    )
    r.fit(X, y, group=sizes, eval_set=[(Xv, yv), (X, y)], eval_group=[sv, sizes])
    hist = r.evals_result_
    assert set(hist["valid_1"]) == {"ndcg@3", "ndcg@10"}
    assert r.n_epochs_ < 200 and r.n_epochs_ - r.best_iteration_ == 2
    assert r.best_score_ == max(hist["valid_0"]["ndcg@3"])


def test_progress_bar_can_be_turned_off(data, capsys):
    X, y, sizes, Xv, yv, sv = data
    NeuralRanker(**{**FAST, "epochs": 2}).fit(X, y, group=sizes)
    quiet = capsys.readouterr()
    assert quiet.out == "" and quiet.err == ""
    NeuralRanker(**{**FAST, "epochs": 2, "verbose": True}).fit(
        X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv]
    )
    loud = capsys.readouterr()
    assert "ndcg@10" in loud.out + loud.err


@pytest.mark.parametrize(
    ("kwargs", "fit_kwargs", "exc", "match"),
    [
        ({"epochs": 0}, {}, ValueError, "epochs"),
        ({"learning_rate": -1.0}, {}, ValueError, "learning_rate"),
        ({"dropout": 1.0}, {}, ValueError, "dropout"),
        ({"hidden_layers": (4, 0)}, {}, ValueError, "hidden_layers"),
        ({"activation": "sigmoidal"}, {}, ValueError, "activation"),
        ({"device": "tpu"}, {}, ValueError, "device"),
        ({"eval_at": 0}, {}, ValueError, "eval_at"),
        ({"random_state": 1.5}, {}, TypeError, "random_state"),
        ({"loss": "lambdamart"}, {}, ValueError, "unknown head"),
        ({"loss_params": [1]}, {}, TypeError, "loss_params"),
        ({}, {"group": [3, 3]}, ValueError, "add up to"),
        ({}, {"sample_weight": np.ones(3)}, ValueError, "sample_weight"),
        ({}, {"eval_set": [(np.zeros((2, 5)), np.zeros(2))]}, ValueError, "eval_group"),
        (
            {},
            {"eval_set": [(np.zeros((2, 4)), np.zeros(2))], "eval_group": [[2]]},
            ValueError,
            "features",
        ),
    ],
)
def test_bad_input(kwargs, fit_kwargs, exc, match, data):
    X, y, sizes, *_ = data
    fit_kwargs = {"group": sizes, **fit_kwargs}
    with pytest.raises(exc, match=match):
        NeuralRanker(**{**FAST, **kwargs}).fit(X, y, **fit_kwargs)


def test_bad_data(data):
    X, y, sizes, *_ = data
    r = NeuralRanker(**FAST)
    with pytest.raises(ValueError, match="2-D"):
        r.fit(X[:, 0], y, group=sizes)
    with pytest.raises(ValueError, match="one label per row"):
        r.fit(X, y[:-1], group=sizes)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3, column 1"):
        r.fit(bad, y, group=sizes)
    r.fit(X, y, group=sizes)
    with pytest.raises(ValueError, match="features"):
        r.predict(X[:, :3])


def test_selective_ranker_routes_to_neural_ranker(data):
    estimators = pytest.importorskip("selrank.estimators")
    X, y, sizes, Xv, yv, sv = data
    est = estimators.SelectiveRanker(
        "listwise", backend="torch", hidden_layers=(4,), epochs=2, random_state=0
    )
    est.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
    assert isinstance(est.model_, NeuralRanker)
    np.testing.assert_allclose(est.predict(Xv), est.model_.predict(Xv))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_distributed_data_parallel_equals_single_process(tmp_path):
    """2 gloo processes with 3 queries each per step = 1 process with 6 queries per step.

    25 queries make the last global batch a single query, so one rank trains on an empty
    slice (a fully padded list) in that step.
    """
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    from ._ddp import worker

    torch.multiprocessing.spawn(
        worker, args=(2, _free_port(), str(tmp_path), "listwise"), nprocs=2, join=True
    )
    r0 = torch.load(tmp_path / "rank0.pt")
    r1 = torch.load(tmp_path / "rank1.pt")
    single = fit_params(batch_queries=6)
    for k, v in single.model_.state_dict().items():
        torch.testing.assert_close(r0["state"][k], r1["state"][k], rtol=0, atol=0)
        torch.testing.assert_close(r0["state"][k], v, rtol=1e-4, atol=1e-5)
    assert r0["history"] == r1["history"]
    np.testing.assert_allclose(
        r0["history"]["train"]["loss"], single.evals_result_["train"]["loss"], rtol=1e-5
    )
    np.testing.assert_allclose(
        r0["history"]["valid_0"]["ndcg@10"], single.evals_result_["valid_0"]["ndcg@10"], rtol=1e-6
    )


@pytest.mark.slow
def test_mq2008_listwise_beats_chance():
    pytest.importorskip("polars")  # load_letor
    datasets = pytest.importorskip("selrank.datasets")
    d = datasets.load_letor("mq2008", fold=1)
    r = NeuralRanker("listwise", random_state=0)
    r.fit(
        d.train.X,
        d.train.y,
        group=d.train.group,
        eval_set=[(d.validation.X, d.validation.y)],
        eval_group=[d.validation.group],
    )
    score = ndcg(d.test.y, r.predict(d.test.X), d.test.group, k=10, no_relevant="exclude")
    rng = np.random.default_rng(0)
    chance = np.mean(
        [
            ndcg(
                d.test.y, rng.normal(size=d.test.y.size), d.test.group, k=10, no_relevant="exclude"
            )
            for _ in range(10)
        ]
    )
    assert score > chance + 0.15, (score, chance)
