"""A user's MSLR download: reading, the binary cache, training time and peak memory vs LightGBM.

    nice -n 10 python benchmarks/user_data.py [--rows 1200192] [--queries 10000] [--rounds 10]
        [--repeat 1] [--workdir DIR] [--steps parse,cache_first,...]

Writes one synthetic folder in exactly MSLR-WEB10K's format and layout
(``Fold1/{train,vali,test}.txt``, dense ``<label> qid:<id> 1:<v> ... 136:<v>`` lines; by
default exactly MSLR-WEB10K's 1,200,192 rows in 10,000 queries, split 3/1/1 by query as the
official subsets are), then measures, each in a fresh process so that peak resident memory
(``VmHWM``) belongs to that step alone:

* ``load_benchmark("mslr-web10k", folder)`` parsing the text (no cache), the first load with
  the cache (parse + write the ``.npy`` arrays) and the second load (from the cache);
* the training file turned into a constructed ``lightgbm.Dataset``: by LightGBM itself from
  the same rows in its own text format (LightGBM's LibSVM parser refuses ``qid:`` tokens, so
  the file is the same lines without them plus LightGBM's ``.query`` file of group sizes), by
  LightGBM from its own binary file (``Dataset.save_binary``, LightGBM's cache), and by
  selrank (cached arrays -> ``lgb.Dataset(X, y, group=...)``);
* training for ``--rounds`` rounds: ``SelectiveRanker`` (default listwise loss) from the
  cached arrays, and ``lgb.train(objective="lambdarank")`` from LightGBM's text file (the
  whole process: loading included in both).

Prints a table and writes ``benchmarks/results/user_data.json``. The defaults take about
12 minutes on the shared 2-core development machine under load (writing the 1.5 GB folder
alone takes 2.5 minutes); the committed results used ``--rounds 20 --repeat 2`` (32 minutes
at a load average of about 12).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "user_data.json"

CHILD = r"""
import json, sys, time
step, root, cache, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
verify = sys.argv[5] == "1"  # official counts: only when the folder has MSLR-WEB10K's size
import numpy as np

def high_water():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

from selrank.datasets import load_benchmark, read_svmlight, read_svmlight_cached
import lightgbm as lgb
import tempfile, pathlib
warm = pathlib.Path(tempfile.mkdtemp()) / "warm.txt"
warm.write_text("0 qid:1 1:1\n")
read_svmlight(warm)  # the compiled parser loaded (numba cache) before the clock starts
fold = pathlib.Path(root) / "Fold1"
params = {"verbosity": -1, "num_threads": 2, "seed": 0}
if step.startswith("train_"):  # compiled kernels and libraries loaded before the clock starts
    from selrank import SelectiveRanker
    rng = np.random.default_rng(0)
    Xw, yw = rng.normal(size=(200, 5)), rng.integers(0, 3, 200).astype(float)
    SelectiveRanker(n_estimators=1).fit(Xw, yw, group=[20] * 10)
    lgb.train({**params, "objective": "lambdarank"}, lgb.Dataset(Xw, yw, group=[20] * 10), 1)
base = high_water()
t = time.perf_counter()
info = {}
if step == "parse":
    ds = load_benchmark("mslr-web10k", root, cache=False, verify=verify)
    info["rows"] = sum(s.n_rows for s in ds)
elif step in ("cache_first", "cache_second"):
    ds = load_benchmark("mslr-web10k", root, cache=cache, verify=verify)
    info["rows"] = sum(s.n_rows for s in ds)
elif step == "lgb_text":
    d = lgb.Dataset(str(fold / "train.lgb.txt"), params=params).construct()
    info["rows"] = d.num_data()
    if not (fold / "train.lgb.bin").exists():
        d.save_binary(str(fold / "train.lgb.bin"))
elif step == "lgb_binary":
    d = lgb.Dataset(str(fold / "train.lgb.bin"), params=params).construct()
    info["rows"] = d.num_data()
elif step == "selrank_dataset":
    s = read_svmlight_cached(fold / "train.txt", cache=cache, n_features=136)
    d = lgb.Dataset(s.X, s.y, group=s.group, params=params).construct()
    info["rows"] = d.num_data()
elif step == "train_selrank":
    from selrank import SelectiveRanker
    s = read_svmlight_cached(fold / "train.txt", cache=cache, n_features=136)
    m = SelectiveRanker(n_estimators=rounds, random_state=0, num_threads=2).fit(s.X, s.y, group=s.group)
    info["rows"] = s.n_rows
    info["trees"] = int(m.n_estimators_)
elif step == "train_lgb":
    d = lgb.Dataset(str(fold / "train.lgb.txt"), params=params)
    b = lgb.train({**params, "objective": "lambdarank"}, d, num_boost_round=rounds)
    info["rows"] = d.num_data()
    info["trees"] = b.current_iteration()
info["seconds"] = time.perf_counter() - t
info["peak_rss"] = high_water()
info["base_rss"] = base
print(json.dumps(info))
"""


def run_step(step: str, root: Path, cache: Path, rounds: int, verify: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, step, str(root), str(cache), str(rounds), str(int(verify))],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def query_sizes(rng: np.random.Generator, n_rows: int, n_queries: int) -> np.ndarray:
    """Over-dispersed query sizes (at least 1) that sum to exactly ``n_rows``."""
    raw = rng.gamma(1.5, n_rows / n_queries / 1.5, size=n_queries)
    sizes = np.maximum(1, np.floor(raw / raw.sum() * n_rows)).astype(np.int64)
    gap = n_rows - int(sizes.sum())
    order = np.argsort(-sizes)
    step = 1 if gap > 0 else -1
    i = 0
    while gap:
        j = order[i % n_queries]
        if sizes[j] + step >= 1:
            sizes[j] += step
            gap -= step
        i += 1
    return sizes


def write_folder(root: Path, n_rows: int, n_queries: int, seed: int = 0) -> dict:
    """Fold1 of an MSLR-format folder, plus LightGBM's own text format of its train file."""
    from selrank.datasets import make_mslr_like, write_svmlight

    rng = np.random.default_rng(seed)
    data = make_mslr_like(n_rows, 136, mean_docs_per_query=n_rows / n_queries, seed=seed)
    X = data.X
    X[:, 34:] = np.round(X[:, 34:], 4)  # MSLR-like text: counts, and decimals of a few digits
    y = data.y.astype(np.int64)
    sizes = query_sizes(rng, n_rows, n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), sizes)
    # five query-disjoint subsets of (nearly) equal query counts; fold 1 = S1-S3 / S4 / S5
    subset = np.repeat(np.arange(n_queries) * 5 // n_queries, sizes)
    fold = root / "Fold1"
    fold.mkdir(parents=True)
    t = time.perf_counter()
    for name, keep in (
        ("train", subset <= 2),
        ("vali", subset == 3),
        ("test", subset == 4),
    ):
        write_svmlight(fold / f"{name}.txt", X[keep], y[keep], qid[keep])
    write_s = time.perf_counter() - t
    # LightGBM's own format: the same lines without the qid token, and a .query file
    qtok = re.compile(rb" qid:\d+")
    with open(fold / "train.txt", "rb") as src, open(fold / "train.lgb.txt", "wb") as dst:
        while chunk := src.read(64 << 20):
            dst.write(qtok.sub(b"", chunk))  # tokens never straddle: " qid:" follows a label
    train_sizes = sizes[np.arange(n_queries) * 5 // n_queries <= 2]
    (fold / "train.lgb.txt.query").write_text("\n".join(map(str, train_sizes.tolist())) + "\n")
    return {
        "rows": n_rows,
        "queries": n_queries,
        "train_rows": int((subset <= 2).sum()),
        "text_MB": round(
            sum((fold / f"{n}.txt").stat().st_size for n in ("train", "vali", "test")) / 1e6
        ),
        "train_text_MB": round((fold / "train.txt").stat().st_size / 1e6),
        "write_seconds": round(write_s, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_200_192)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each load step (best kept)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep the generated folder and cache here (reused when it exists: rerun steps "
        "without writing 1.5 GB again); default a temporary folder, removed at the end",
    )
    parser.add_argument(
        "--steps", help="comma-separated subset of the steps (default all; see the table)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="(CI) 2,000 rows in 20 queries, 2 rounds, four steps"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import smoke_out

        args.rows, args.queries, args.rounds, args.repeat = 2_000, 20, 2, 1
        # one fresh process a step: the cache's both loads and both trainings cover the paths
        args.steps = args.steps or "cache_first,cache_second,train_selrank,train_lgb"
        args.workdir, args.out = None, smoke_out("user_data")

    with tempfile.TemporaryDirectory(prefix="selrank_user_data_") as tmp:
        work = args.workdir or Path(tmp)
        root = work / "MSLR-WEB10K"
        cache = work / "cache"
        if (root / "Fold1" / "folder.json").is_file():
            folder = json.loads((root / "Fold1" / "folder.json").read_text())
        else:
            folder = write_folder(root, args.rows, args.queries)
            (root / "Fold1" / "folder.json").write_text(json.dumps(folder))
        verify = (folder["rows"], folder["queries"]) == (1_200_192, 10_000)
        folder["official_counts_checked"] = verify
        print(
            f"synthetic MSLR-WEB10K folder: {folder['rows']:,} rows, {folder['queries']:,} "
            f"queries, 136 features, Fold1 {folder['text_MB']:,} MB of text (train "
            f"{folder['train_rows']:,} rows, {folder['train_text_MB']:,} MB), written in "
            f"{folder['write_seconds']} s"
        )
        steps = [
            ("parse", "load_benchmark, text parsed (cache=False)", "fold"),
            ("cache_first", "load_benchmark, first load (parse + write cache)", "fold"),
            ("cache_second", "load_benchmark, second load (from cache)", "fold"),
            ("lgb_text", "lgb.Dataset(text file).construct()", "train"),
            ("lgb_binary", "lgb.Dataset(LightGBM binary file).construct()", "train"),
            ("selrank_dataset", "selrank cache -> lgb.Dataset(X, y, group).construct()", "train"),
            ("train_selrank", f"SelectiveRanker fit, {args.rounds} rounds (from cache)", "train"),
            ("train_lgb", f"lgb.train lambdarank, {args.rounds} rounds (from text)", "train"),
        ]
        if args.steps:
            chosen = set(args.steps.split(","))
            steps = [st for st in steps if st[0] in chosen]
        rows = []
        for step, label, what in steps:
            repeat = 1 if step in ("cache_first", "train_selrank", "train_lgb") else args.repeat
            if step == "cache_first":  # a first load: no cache entry yet
                shutil.rmtree(cache, ignore_errors=True)
            runs = [run_step(step, root, cache, args.rounds, verify) for _ in range(repeat)]
            best = min(runs, key=lambda r: r["seconds"])
            row = {
                "step": step,
                "what": label,
                "data": what,
                "rows": best["rows"],
                "seconds": round(best["seconds"], 2),
                "all_seconds": [round(r["seconds"], 2) for r in runs],
                "peak_rss_MB": round(best["peak_rss"] / 1e6),
                "rss_before_MB": round(best["base_rss"] / 1e6),
                **({"trees": best["trees"]} if "trees" in best else {}),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)

    by = {r["step"]: r["seconds"] for r in rows}
    pairs = {
        "parse_over_cached_load": ("parse", "cache_second"),
        "lgb_text_over_selrank_cached_dataset": ("lgb_text", "selrank_dataset"),
        "selrank_fit_over_lgb_train": ("train_selrank", "train_lgb"),
    }
    ratios = {k: round(by[a] / by[b], 2) for k, (a, b) in pairs.items() if a in by and b in by}
    print()
    print(f"{'step':58s}{'data':>7s}{'rows':>11s}{'seconds':>9s}{'peak RSS MB':>13s}")
    for r in rows:
        print(
            f"{r['what']:58s}{r['data']:>7s}{r['rows']:>11,}{r['seconds']:>9.2f}{r['peak_rss_MB']:>13,}"
        )
    for k, v in ratios.items():
        print(f"{k}: {v}")
    doc = {
        "benchmark": "user_data",
        "command": "nice -n 10 python benchmarks/user_data.py " + " ".join(argv or sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "note": "shared 2-core machine, other jobs running; run under nice",
        },
        "load_average_1min_at_end": round(os.getloadavg()[0], 1),
        "folder": folder,
        "rounds": args.rounds,
        "steps": rows,
        "ratios": ratios,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
