"""Time selrank's ranking metrics on 1M rows / 10k queries and write a JSON report.

Run from the repository root::

    python benchmarks/metrics_speed.py [--rows 1000000] [--queries 10000] [--repeat 5] [--smoke]

Prints one line per case (best and median wall time over ``--repeat`` runs) and writes
``benchmarks/results/metrics_speed.json``. Scores are drawn either continuous (no ties) or
from 20 levels (many ties, the "average" tie policy's slow path); labels are 0-4 with 60 %
zeros and every 10th query has no relevant row. Where LightGBM is installed, its own NDCG
evaluation of the same scores is timed for reference (one boosting round on one constant
feature, so the time includes a tiny bit of training).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from selrank.metrics import average_precision, err, evaluate, ndcg, reciprocal_rank


def make_data(n_rows: int, n_queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(n_rows - n_queries, np.full(n_queries, 1.0 / n_queries)) + 1
    y = rng.integers(0, 5, n_rows).astype(np.float64)
    y[rng.random(n_rows) < 0.6] = 0.0
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    empty = np.zeros(n_rows, dtype=bool)
    for a, m in zip(starts[::10], sizes[::10]):
        empty[a : a + m] = True
    y[empty] = 0.0
    s_cont = rng.normal(size=n_rows)
    s_tied = rng.integers(0, 20, n_rows).astype(np.float64)
    return y, s_cont, s_tied, sizes


def timed(fn, repeat: int):
    fn()  # warm caches
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def lightgbm_case(y, s, sizes):
    try:
        import lightgbm as lgb
    except ImportError:
        return None
    X = np.zeros((y.size, 1))

    def run():
        ds = lgb.Dataset(X, y, group=sizes, init_score=s, free_raw_data=False)
        lgb.train(
            {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "verbose": -1,
             "learning_rate": 1e-9, "num_threads": 2},
            ds, num_boost_round=1, valid_sets=[ds],
        )  # fmt: skip

    return run


TREC_METRICS = ["ndcg_cut_10", "map", "P_10", "recip_rank"]

_SELRANK = """
import sys, time
t0 = time.perf_counter()
from selrank.metrics import evaluate_run, read_qrels, read_run
t1 = time.perf_counter()
c1 = time.process_time()
frame = evaluate_run(read_qrels(sys.argv[1]), read_run(sys.argv[2]), metrics=sys.argv[3].split(","),
                     queries="both")
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, frame["mean"][0], int("numba" in sys.modules), time.process_time() - c1)
"""
_PYTREC = """
import sys, time
t0 = time.perf_counter()
import pytrec_eval
t1 = time.perf_counter()
c1 = time.process_time()
with open(sys.argv[1]) as q, open(sys.argv[2]) as r:
    qrels, run = pytrec_eval.parse_qrel(q), pytrec_eval.parse_run(r)
names = {"ndcg_cut_10": "ndcg_cut.10", "P_10": "P.10"}
measures = {names.get(m, m) for m in sys.argv[3].split(",")}
res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
mean = sum(v["ndcg_cut_10"] for v in res.values()) / len(res)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, mean, 0, time.process_time() - c1)
"""


def trec_case(n_lines: int, repeat: int, baseline: str | None = None) -> list[dict]:
    """A TREC run of ``n_lines`` lines (1,000 documents for each of n_lines/1000 queries) and
    its qrels, read and evaluated in a fresh process each time (the first call a user pays),
    selrank and pytrec_eval interleaved; the times exclude the interpreter start and import.

    ``baseline``: a directory holding another version of the ``selrank`` package (e.g.
    ``git archive <commit> selrank | tar -x -C DIR``), timed as a third side, interleaved."""
    rng = np.random.default_rng(0)
    n_q = max(1, n_lines // 1000)
    tmp = Path(tempfile.mkdtemp())
    qrels, run = tmp / "bench.qrels", tmp / "bench.run"
    with open(qrels, "w") as fq, open(run, "w") as fr:
        for q in range(n_q):
            judged = rng.choice(1000, 100, replace=False)
            fq.write("".join(f"{q} 0 D{d} {int(rng.integers(0, 3))}\n" for d in judged))
            scores = np.sort(rng.normal(size=1000))[::-1]
            fr.write(
                "".join(
                    f"{q} Q0 D{d} {i + 1} {s!r} bench\n"
                    for i, (d, s) in enumerate(zip(rng.permutation(1000), scores.tolist()))
                )
            )
    here = str(Path(__file__).resolve().parents[1])
    sides = {"selrank": (_SELRANK, here), "pytrec_eval": (_PYTREC, here)}
    if baseline:
        sides["selrank baseline"] = (_SELRANK, str(Path(baseline).resolve()))
    times: dict[str, list[float]] = {k: [] for k in sides}
    cpu: dict[str, list[float]] = {k: [] for k in sides}
    imports: dict[str, list[float]] = {k: [] for k in sides}
    means, numba = {}, {}
    for _ in range(repeat):
        for name, (code, path) in sides.items():  # interleaved: the machine is shared
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH")])),
            }
            out = subprocess.run(
                [sys.executable, "-c", code, str(qrels), str(run), ",".join(TREC_METRICS)],
                capture_output=True,
                text=True,
                check=True,
                env=env,
                cwd=tmp,  # not the repository root: `python -c` puts the cwd first on the path
            ).stdout.split()
            imports[name].append(float(out[0]))
            times[name].append(float(out[1]))
            means[name] = float(out[2])
            numba[name] = bool(int(out[3]))
            cpu[name].append(float(out[4]))
    rows = []
    for name in sides:
        rows.append({
            "case": f"TREC run {n_lines:,} lines -> {','.join(TREC_METRICS)}, fresh process ({name})",
            "best_s": min(times[name]), "median_s": statistics.median(times[name]),
            "times_s": times[name], "cpu_median_s": statistics.median(cpu[name]),
            "cpu_s": cpu[name], "import_median_s": statistics.median(imports[name]),
            "ndcg_cut_10": means[name], "numba_imported": numba[name],
        })  # fmt: skip
    for name in sides:
        if name != "pytrec_eval":
            ratio = statistics.median(times[name]) / statistics.median(times["pytrec_eval"])
            per_pair = [a / b for a, b in zip(times[name], times["pytrec_eval"])]
            cpu_ratio = statistics.median(cpu[name]) / statistics.median(cpu["pytrec_eval"])
            rows.append({
                "case": f"TREC run: {name} / pytrec_eval (median)", "ratio": ratio,
                "cpu_ratio": cpu_ratio, "ratio_per_interleaved_pair": per_pair,
            })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "metrics_speed.json")
    )
    parser.add_argument(
        "--trec-lines", type=int, default=0,
        help="also time reading and evaluating a TREC run of this many lines against "
        "pytrec_eval, each in a fresh process (issue 29; e.g. 1000000)",
    )  # fmt: skip
    parser.add_argument("--trec-only", action="store_true", help="only the TREC comparison")
    parser.add_argument(
        "--baseline", default=None,
        help="with the TREC comparison: a directory holding another selrank package to time "
        "as a third side (git archive <commit> selrank | tar -x -C DIR)",
    )  # fmt: skip
    parser.add_argument(
        "--smoke", action="store_true", help="(CI) 10,000 rows, 100 queries, 1 repeat"
    )
    args = parser.parse_args()
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.queries, args.repeat = 10_000, 100, 1
        args.out = str(smoke_out("metrics_speed"))
    if args.trec_only:
        load_start = os.getloadavg()
        lines = args.trec_lines or (10_000 if args.smoke else 1_000_000)
        rows = trec_case(lines, args.repeat, args.baseline)
        for r in rows:
            print(r)
        report = {
            "load_average_start": load_start, "load_average": os.getloadavg(),
            "cpu_count": os.cpu_count(), "repeat": args.repeat, "trec_lines": lines,
            "results": rows,
        }  # fmt: skip
        out = Path(args.out).with_name("metrics_speed_trec.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out}")
        return

    y, s_cont, s_tied, sizes = make_data(args.rows, args.queries)
    cases = {}
    for tag, s in (("continuous", s_cont), ("tied", s_tied)):
        for ties in ("average", "stable"):
            cases[f"ndcg@10 {tag} ties={ties}"] = lambda s=s, t=ties: ndcg(
                y, s, sizes, k=10, ties=t
            )
        cases[f"map {tag} ties=average"] = lambda s=s: average_precision(y, s, sizes)
        cases[f"mrr@10 {tag} ties=average"] = lambda s=s: reciprocal_rank(y, s, sizes, k=10)
        cases[f"err@10 {tag} ties=average"] = lambda s=s: err(y, s, sizes, k=10)
        cases[f"evaluate 7 metrics {tag}"] = lambda s=s: evaluate(
            y, s, sizes,
            metrics=["ndcg@10", "ndcg", "map", "mrr@10", "err@10", "precision@10", "recall@10"],
        )  # fmt: skip
    lgb_run = lightgbm_case(y, s_tied, sizes)

    results = []
    width = max(len(name) for name in cases) + 2
    print(f"{args.rows:,} rows, {args.queries:,} queries, best/median of {args.repeat}")
    print(f"{'case':<{width}}{'best s':>9}{'median s':>10}")
    for name, fn in cases.items():
        best, med = timed(fn, args.repeat)
        results.append({"case": name, "best_s": best, "median_s": med})
        print(f"{name:<{width}}{best:>9.3f}{med:>10.3f}")
    if args.trec_lines:
        for row in trec_case(args.trec_lines, args.repeat, args.baseline):
            results.append(row)
            print(row)
    if lgb_run is not None:
        best, med = timed(lgb_run, max(1, args.repeat // 2))
        name = "lightgbm ndcg@10 eval (1 round, tied)"
        results.append({"case": name, "best_s": best, "median_s": med})
        print(f"{name:<{width}}{best:>9.3f}{med:>10.3f}")

    report = {
        "rows": args.rows,
        "queries": args.queries,
        "repeat": args.repeat,
        "load_average": os.getloadavg(),
        "machine": {"python": platform.python_version(), "processor": platform.machine(),
                    "numpy": np.__version__, "cpu_count": __import__("os").cpu_count()},
        "results": results,
    }  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
