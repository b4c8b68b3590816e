"""Cold start: CPU seconds of a fresh process's first fit, per loss family, beside LightGBM.

Every row is a new Python process (interpreter start, imports, data, one fit) with an empty
numba cache directory (``NUMBA_CACHE_DIR`` set to a fresh temporary folder), so compiled
kernels are never reused between rows: what a new container, CI job or serverless start pays.
The CPU time is the child's user + system time (all its threads), read from ``wait4``.

Rows:

* ``import selrank.losses``: the import alone (numba is imported only when a kernel runs);
* ``lightgbm (lambdarank)``: plain ``lightgbm.LGBMRanker`` — the reference;
* one row per GBDT loss family through its estimator (``SelectiveRanker`` for the group and
  row losses, ``SelectiveClassifier`` for the multi-class ones), LightGBM backend;
* the torch heads that run numba kernels on the CPU (pairwise, pointwise exp link) and a
  torch baseline head without kernels (``softmax_ce``), one epoch of ``NeuralRanker``;
* the numba users again where the cache was filled beforehand by the kernels' ``warm_up()``
  in another process (what an image build step or a CI cache gives; not counted).

The same synthetic data everywhere: 5,000 rows (100 queries of 50 documents, 20 features,
graded labels 0-4), 2 boosting rounds, as in issue 22's measurement. Prints a table and
writes ``benchmarks/results/cold_start.json``.

    python benchmarks/cold_start.py [--repeats 3] [--only pairwise,lightgbm]
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cold_start.json"

DATA = """
import numpy as np
rng = np.random.default_rng(0)
n_q, n_d, n_f = 100, 50, 20
X = rng.normal(size=(n_q * n_d, n_f))
y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n_q * n_d) + 1.5), 0, 4)
group = np.full(n_q, n_d)
"""

GBDT = (
    DATA
    + """
from selrank.estimators import SelectiveRanker
SelectiveRanker(loss={loss!r}, n_estimators=2, verbose=False).fit(X, y, group=group)
"""
)

CLASSIFIER = (
    DATA
    + """
from selrank.estimators import SelectiveClassifier
SelectiveClassifier(loss={loss!r}, n_estimators=2, verbose=False).fit(X, y.astype(int))
"""
)

TORCH = (
    DATA
    + """
from selrank.estimators import NeuralRanker
NeuralRanker(loss={loss!r}, epochs=1, random_state=0).fit(X.astype("float32"), y, group=group)
"""
)

CASES = {
    "import selrank.losses": "import selrank.losses",
    "lightgbm (lambdarank)": DATA
    + """
import lightgbm as lgb
lgb.LGBMRanker(n_estimators=2, verbose=-1).fit(X, y, group=group)
""",
    "pointwise": GBDT.format(loss="pointwise"),
    "pairwise": GBDT.format(loss="pairwise"),
    "listwise": GBDT.format(loss="listwise"),
    "combined": DATA
    + """
from selrank.estimators import SelectiveRanker
from selrank.losses import Combined
SelectiveRanker(loss=Combined(["pointwise", "pairwise"]), n_estimators=2).fit(X, y, group=group)
""",
    "decomposed": CLASSIFIER.format(loss="decomposed"),
    "composite_softmax": CLASSIFIER.format(loss="composite_softmax"),
    "torch head: softmax_ce": TORCH.format(loss="softmax_ce"),
    "torch head: pairwise": TORCH.format(loss="pairwise"),
    "torch head: pointwise": TORCH.format(loss="pointwise"),
}

WARM_UP = """
from selrank.fast import warm_up
warm_up()  # the pairwise kernels and, with torch, the pointwise head's
"""
# the same first fits where the numba cache was filled beforehand (an image build step)
PREBUILT = {
    "pairwise, cache from warm_up": "pairwise",
    "combined, cache from warm_up": "combined",
    "torch head: pairwise, warm_up": "torch head: pairwise",
    "torch head: pointwise, warm_up": "torch head: pointwise",
}


def run_case(code: str, setup: str | None = None) -> float:
    """CPU seconds (user + system, all threads) of a fresh process running ``code`` (after
    ``setup`` in another process with the same numba cache, not counted)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        if setup is not None:
            subprocess.run([sys.executable, "-c", setup], env=env, cwd=ROOT, check=True)
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode() if proc.stderr else ""
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"case failed (exit {proc.returncode}):\n{err[-3000:]}")
        return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated row names (substrings)")
    parser.add_argument("--label", default="", help="stored with the results")
    args = parser.parse_args()
    names = list(CASES) + list(PREBUILT)
    if args.only:
        keys = args.only.split(",")
        names = [n for n in names if any(k in n for k in keys)]
    times: dict[str, list[float]] = {n: [] for n in names}
    t0 = time.time()
    for _ in range(args.repeats):  # interleaved, so that load changes hit every row alike
        for name in names:
            if name in PREBUILT:
                times[name].append(run_case(CASES[PREBUILT[name]], setup=WARM_UP))
            else:
                times[name].append(run_case(CASES[name]))
    ref = (
        statistics.median(times["lightgbm (lambdarank)"])
        if "lightgbm (lambdarank)" in times
        else None
    )
    rows = []
    print(f"{'case':28s} {'median CPU s':>12s} {'min':>7s} {'max':>7s} {'x lightgbm':>10s}")
    for name in names:
        med = statistics.median(times[name])
        ratio = med / ref if ref else float("nan")
        rows.append(
            {"case": name, "cpu_s": times[name], "median_cpu_s": med, "ratio_to_lightgbm": ratio}
        )
        print(
            f"{name:28s} {med:12.2f} {min(times[name]):7.2f} {max(times[name]):7.2f} {ratio:10.2f}"
        )
    result = {
        "benchmark": "cold_start",
        "label": args.label,
        "what": "CPU s (user+sys) of a fresh process: imports + 5k-row data + first fit "
        "(2 rounds / 1 epoch), empty numba cache",
        "repeats": args.repeats,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "wall_s": time.time() - t0,
        "rows": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
