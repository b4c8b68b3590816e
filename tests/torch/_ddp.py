"""Worker of the data-parallel test: one process of a 2-process gloo group (spawned)."""

from __future__ import annotations

import os

import numpy as np
import torch


def synthetic(n_queries: int = 25, seed: int = 3):
    """Queries of 3..12 documents; labels 0..3 from a noisy linear score."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 13, size=n_queries)
    X = rng.normal(size=(int(sizes.sum()), 5)).astype(np.float32)
    score = X @ np.array([1.5, -1.0, 0.5, 0.0, 0.0]) + 0.3 * rng.normal(size=X.shape[0])
    y = np.digitize(score, [-1.0, 0.5, 1.5]).astype(np.float64)
    return X, y, sizes


def fit_params(batch_queries: int, loss: str = "listwise"):
    from selrank.estimators import NeuralRanker

    X, y, sizes = synthetic()
    Xv, yv, sv = synthetic(8, seed=4)
    ranker = NeuralRanker(
        loss,
        hidden_layers=(8,),
        epochs=3,
        batch_queries=batch_queries,
        learning_rate=0.01,
        random_state=7,
        early_stopping_rounds=50,
    )
    ranker.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
    return ranker


def worker(rank: int, world: int, port: int, out_dir: str, loss: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ranker = fit_params(batch_queries=3, loss=loss)
        state = {k: v.detach().cpu() for k, v in ranker.model_.state_dict().items()}
        torch.save(
            {"state": state, "history": ranker.evals_result_, "epochs": ranker.n_epochs_},
            os.path.join(out_dir, f"rank{rank}.pt"),
        )
    finally:
        torch.distributed.destroy_process_group()
