"""``xgboost.dask`` on a two-worker ``LocalCluster``: selrank listwise objective vs ``rank:ndcg``.

Data: ``selrank.datasets.make_mslr_like`` (136 float32 features, ~120 documents per query),
generated on the client in one piece (one hidden relevance function), the first
``--test-rows`` rows' queries held out for NDCG@10 and the rest cut into ``--partitions`` blocks
at query boundaries and scattered to the workers. Every query lies inside one partition, which
:func:`selrank.gbdt.dask.check_query_partitions` checks before training.

Cluster: ``distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``,
XGBoost ``nthread=1`` on each worker. One ``DaskQuantileDMatrix`` is built and shared by
every run; its base margin is the selrank intercept (a constant, which ``rank:ndcg`` ignores:
its gradients depend only on score differences within a query).

Timing: runs alternate (selrank, rank:ndcg, selrank, ...; ``--reps`` each). A callback on
each worker records a timestamp after every boosting round; the seconds of a round are the
larger of the two workers' gaps between consecutive timestamps (the workers synchronise
every round through XGBoost's allreduce). Reported: median of the rounds after the first,
pooled over the repetitions, plus the wall time of each ``train`` call.

``python benchmarks/dask_xgboost.py`` (1M training rows, 10 rounds, 2 repetitions) or
``--quick`` (200k rows, 5 rounds, 1 repetition); ``--smoke`` (CI, seconds). Writes ``benchmarks/results/dask_xgboost.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import xgboost as xgb

LABEL_SCALE = 0.25
GAMMA = 4.0
PARAMS = {
    "tree_method": "hist",
    "max_depth": 6,
    "eta": 0.1,
    "min_child_weight": 1e-3,
    "max_bin": 256,
    "nthread": 1,
}


def _dask_data(client, X, y, qid, n_parts: int):
    """X, y, qid scattered to the workers as dask arrays of ``n_parts`` blocks cut at query boundaries."""
    import dask.array as da

    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cuts = [0] + [
        int(starts[np.searchsorted(starts, k * qid.size // n_parts)]) for k in range(1, n_parts)
    ]
    cuts.append(qid.size)
    out = []
    for a, dtype in ((X, np.float32), (y, np.float64), (qid, np.int64)):
        futures = client.scatter(
            [np.ascontiguousarray(a[i:j]) for i, j in zip(cuts[:-1], cuts[1:])]
        )
        out.append(
            da.concatenate(
                [
                    da.from_delayed(f, (j - i,) + a.shape[1:], dtype=dtype)
                    for f, i, j in zip(futures, cuts[:-1], cuts[1:])
                ]
            )
        )
    return tuple(out)


class RoundClock(xgb.callback.TrainingCallback):
    """A wall-clock timestamp after every round, written to one file per worker."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.stamps: list[float] = []

    def before_training(self, model):
        self.stamps = [time.time()]
        return model

    def after_iteration(self, model, epoch, evals_log):
        self.stamps.append(time.time())
        return False

    def after_training(self, model):
        Path(f"{self.prefix}.{os.getpid()}.json").write_text(json.dumps(self.stamps))
        return model


def _round_seconds(prefix: str) -> list[float]:
    files = sorted(Path(prefix).parent.glob(Path(prefix).name + ".*.json"))
    gaps = [np.diff(json.loads(f.read_text())) for f in files]
    n = min(len(g) for g in gaps)
    return np.max(np.stack([g[:n] for g in gaps]), axis=0).tolist()


def _worker_env() -> dict:
    import selrank

    return {"selrank": selrank.__file__, "pid": os.getpid()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--test-rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="200k rows, 5 rounds, 1 repetition")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "dask_xgboost.json")
    )
    parser.add_argument(
        "--smoke", action="store_true", help="(CI) 4,000 rows, 2 partitions, 3 rounds, 1 repetition"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.test_rows, args.partitions, args.rounds, args.reps = 4_000, 1_000, 2, 3, 1
        args.out = str(smoke_out("dask_xgboost"))
    elif args.quick:
        args.rows, args.test_rows, args.partitions, args.rounds, args.reps = (
            200_000,
            50_000,
            4,
            5,
            1,
        )

    import dask
    import distributed
    from xgboost import dask as dxgb

    from selrank.datasets import make_mslr_like
    from selrank.gbdt import xgboost_objective
    from selrank.gbdt.dask import check_query_partitions
    from selrank.metrics import ndcg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
            memory_limit="9GiB",
        )
    client = distributed.Client(cluster)
    try:
        env = client.run(_worker_env)
        print("workers:", env, flush=True)

        t0 = time.perf_counter()
        data = make_mslr_like(args.rows + args.test_rows, 136, seed=0)
        n_test_q = int(
            np.searchsorted(np.cumsum(data.group), args.test_rows)
        )  # first queries held out
        cut = int(np.sum(data.group[:n_test_q]))
        X, y, q = _dask_data(client, data.X[cut:], data.y[cut:], data.qid[cut:], args.partitions)
        Xt, yt, qt = _dask_data(client, data.X[:cut], data.y[:cut], data.qid[:cut], 2)
        del data
        t_data = time.perf_counter() - t0
        check_query_partitions(q)
        check_query_partitions(qt)

        obj = xgboost_objective(
            "listwise",
            gamma=GAMMA,
            label_scale=LABEL_SCALE,
            min_leaf_hessian=PARAMS["min_child_weight"],
        )
        y_np, q_np = y.compute(), q.compute()
        obj.fit_intercept(y_np, qid=q_np)
        c = float(np.asarray(obj.intercept_))
        t0 = time.perf_counter()
        dtrain = dxgb.DaskQuantileDMatrix(
            client, X, y, qid=q, base_margin=y * 0.0 + c, max_bin=PARAMS["max_bin"]
        )
        dtest = dxgb.DaskDMatrix(client, Xt, qid=qt, base_margin=yt * 0.0 + c)
        t_dmatrix = time.perf_counter() - t0
        print(
            f"data: {args.rows:,} training rows ({len(np.unique(q_np)):,} queries) + {args.test_rows:,} held out, "
            f"{args.partitions} partitions; generated in {t_data:.1f} s, DMatrix in {t_dmatrix:.1f} s",
            flush=True,
        )

        yt_np, qt_np = yt.compute(), qt.compute()
        _, gt = np.unique(qt_np, return_counts=True)
        methods = {
            "selrank listwise (exp, gamma 4)": ({**PARAMS, "disable_default_eval_metric": 1}, obj),
            "XGBoost rank:ndcg": (
                {**PARAMS, "objective": "rank:ndcg", "eval_metric": "ndcg@10"},
                None,
            ),
        }
        runs: dict[str, list] = {m: [] for m in methods}
        ndcgs: dict[str, float] = {}
        tmp = tempfile.mkdtemp(prefix="dask_xgb_")
        for rep in range(args.reps):
            for name, (params, o) in methods.items():
                prefix = os.path.join(tmp, f"r{rep}_{'sel' if o is not None else 'ndcg'}")
                t0 = time.perf_counter()
                out = dxgb.train(
                    client,
                    params,
                    dtrain,
                    num_boost_round=args.rounds,
                    obj=o,
                    callbacks=[RoundClock(prefix)],
                )
                wall = time.perf_counter() - t0
                secs = _round_seconds(prefix)
                runs[name].append({"wall_s": wall, "round_s": secs})
                print(
                    f"  rep {rep} {name}: train {wall:.1f} s, rounds after the first: median "
                    f"{np.median(secs[1:]):.3f} s",
                    flush=True,
                )
                if rep == 0:
                    scores = dxgb.predict(
                        client, out["booster"], dtest, output_margin=True
                    ).compute()
                    ndcgs[name] = float(ndcg(yt_np, scores, gt, k=10))
        env_load = os.getloadavg()
    finally:
        client.close()
        cluster.close()

    ndcg0 = float(ndcg(yt_np, np.zeros_like(yt_np), gt, k=10))
    rows = []
    for name in methods:
        later = np.concatenate([r["round_s"][1:] for r in runs[name]])
        rows.append(
            {
                "method": name,
                "median_round_s": float(np.median(later)),
                "first_round_s": float(np.median([r["round_s"][0] for r in runs[name]])),
                "train_wall_s": [r["wall_s"] for r in runs[name]],
                "heldout_ndcg10": ndcgs[name],
            }
        )
    print()
    print(
        f"xgboost.dask, LocalCluster 2 workers x 1 thread; {args.rows:,} x 136 float32 training rows, "
        f"{args.rounds} rounds x {args.reps} alternated repetitions; max_depth {PARAMS['max_depth']}, "
        f"{PARAMS['max_bin']} bins"
    )
    print(
        f"| method | s/round (median, rounds 2..{args.rounds}) | first round s | held-out NDCG@10 |"
    )
    print("|---|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['method']} | {r['median_round_s']:.3f} | {r['first_round_s']:.3f} | {r['heldout_ndcg10']:.4f} |"
        )
    print(f"| constant scores | | | {ndcg0:.4f} |")
    ratio = rows[0]["median_round_s"] / rows[1]["median_round_s"]
    print(f"selrank / rank:ndcg time per round: {ratio:.2f}; load average at the end {env_load}")

    result = {
        "config": {
            "rows": args.rows,
            "test_rows": args.test_rows,
            "partitions": args.partitions,
            "rounds": args.rounds,
            "reps": args.reps,
            "quick": args.quick,
            "params": PARAMS,
            "label_scale": LABEL_SCALE,
            "gamma": GAMMA,
            "cluster": "LocalCluster(n_workers=2, threads_per_worker=1, processes=True)",
        },
        "data_seconds": t_data,
        "dmatrix_seconds": t_dmatrix,
        "results": rows,
        "runs": runs,
        "constant_ndcg10": ndcg0,
        "ratio_selrank_over_rank_ndcg": ratio,
        "load_average_end": list(env_load),
        "versions": {
            "python": sys.version.split()[0],
            "xgboost": xgb.__version__,
            "dask": dask.__version__,
            "distributed": distributed.__version__,
            "numpy": np.__version__,
        },
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "workers": {str(k): v for k, v in env.items()},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
