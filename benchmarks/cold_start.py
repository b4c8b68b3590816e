"""Cold start: CPU seconds of a fresh process's first fit, per loss family, beside LightGBM.

Every row is a new Python process (interpreter start, imports, data, one fit) with an empty
numba cache directory (``NUMBA_CACHE_DIR`` set to a fresh temporary folder), so compiled
kernels are never reused between rows: what a new container, CI job or serverless start pays.
The CPU time is the child's user + system time (all its threads), read from ``wait4``.

OpenMP threads (LightGBM's, in every row) spin while they wait for work, and that spinning is
CPU time that grows with the machine's load: on the shared 2-core machine a 2-round LightGBM
fit measured 0.13 to 2.1 CPU s from one run to the next. The rows therefore run with
``OMP_WAIT_POLICY=PASSIVE`` by default (``--omp-wait default`` for the libraries' own
setting, as issue 22's first numbers were taken), which leaves the work and removes the spin.

Rows (``SELRANK_KERNELS`` names the kernel policy of :mod:`selrank._numba`; without a
suffix the row runs the default, ``auto``):

* ``import selrank.losses``: the import alone (numba is imported only when a kernel runs);
* ``lightgbm (lambdarank)``: plain ``lightgbm.LGBMRanker`` — the reference;
* one row per GBDT loss family through its estimator (``SelectiveRanker`` for the group and
  row losses, ``SelectiveClassifier`` for the multi-class ones), LightGBM backend; the ones
  with numba kernels also under ``eager`` (the kernel from the first call, as before the
  policy);
* the torch heads that run numba kernels on the CPU (pairwise, pointwise exp link), under
  ``auto`` and ``eager``, and a torch head without kernels (``softmax_ce``), the fair
  reference for the torch rows; one epoch of ``NeuralRanker``;
* ``eager`` rows where the cache was filled beforehand by the kernels' ``warm_up()`` in
  another process (what an image build step or a CI cache gives; not counted);
* ``long:`` rows: 100 rounds on 50,000 rows (1,000 queries of 50), so that nobody reads the
  2-round number as the whole story (``--no-long`` leaves them out).

``--compile`` measures something narrower instead: the CPU seconds (``time.process_time``, in
the child) of a loss binding's first ``grad_hess`` call under the ``eager`` policy, with numba
imported before the clock starts and an empty numba cache — the compile of the kernels that
call uses, one row per kernel / pair method / link family (:data:`COMPILE_CASES`; 2,000 rows,
20 queries of 100, so the call's own work is milliseconds: the second call is printed beside
it). ``--versions before=/tmp/old,after=.`` runs each row against several copies of the
package (``PYTHONPATH``), interleaved, for before/after comparisons; it writes
``benchmarks/results/cold_start_compile.json`` unless ``--out`` says otherwise.

The short rows use the same synthetic data everywhere: 5,000 rows (100 queries of 50
documents, 20 features, graded labels 0-4), 2 boosting rounds, as in issue 22's measurement.
Rows run interleaved (round robin over the repeats), so that load changes hit every row
alike; the table gives the median and the spread. Prints a table and writes
``benchmarks/results/cold_start.json``.

    python benchmarks/cold_start.py [--repeats 3] [--only pairwise,lightgbm] [--no-long]
    python benchmarks/cold_start.py --compile [--versions before=/tmp/old,after=.] [--only topk]
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
COMPILE_OUT = ROOT / "benchmarks" / "results" / "cold_start_compile.json"

DATA = """
import numpy as np
rng = np.random.default_rng(0)
n_q, n_d, n_f = {n_q}, 50, 20
X = rng.normal(size=(n_q * n_d, n_f))
y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n_q * n_d) + 1.5), 0, 4)
group = np.full(n_q, n_d)
"""

SHORT = DATA.format(n_q=100)
LONG = DATA.format(n_q=1000)

GBDT = """
from selrank.estimators import SelectiveRanker
SelectiveRanker(loss={loss!r}, n_estimators={rounds}, verbose=False).fit(X, y, group=group)
"""

CLASSIFIER = """
from selrank.estimators import SelectiveClassifier
SelectiveClassifier(loss={loss!r}, n_estimators=2, verbose=False).fit(X, y.astype(int))
"""

TORCH = """
from selrank.estimators import NeuralRanker
NeuralRanker(loss={loss!r}, epochs=1, random_state=0).fit(X.astype("float32"), y, group=group)
"""

LIGHTGBM = """
import lightgbm as lgb
lgb.LGBMRanker(n_estimators={rounds}, verbose=-1).fit(X, y, group=group)
"""

COMBINED = """
from selrank.estimators import SelectiveRanker
from selrank.losses import Combined
SelectiveRanker(loss=Combined(["pointwise", "pairwise"]), n_estimators=2).fit(X, y, group=group)
"""

# name: (code, kernel policy or None for the default)
CASES: dict[str, tuple[str, str | None]] = {
    "import selrank.losses": ("import selrank.losses", None),
    "lightgbm (lambdarank)": (SHORT + LIGHTGBM.format(rounds=2), None),
    "pointwise": (SHORT + GBDT.format(loss="pointwise", rounds=2), None),
    "pairwise": (SHORT + GBDT.format(loss="pairwise", rounds=2), None),
    "pairwise, eager": (SHORT + GBDT.format(loss="pairwise", rounds=2), "eager"),
    "weighted_pairwise": (SHORT + GBDT.format(loss="weighted_pairwise", rounds=2), None),
    "listwise": (SHORT + GBDT.format(loss="listwise", rounds=2), None),
    "combined": (SHORT + COMBINED, None),
    "combined, eager": (SHORT + COMBINED, "eager"),
    "decomposed": (SHORT + CLASSIFIER.format(loss="decomposed"), None),
    "composite_softmax": (SHORT + CLASSIFIER.format(loss="composite_softmax"), None),
    # (the row keeps the head's old name, "softmax_ce", as in the recorded results)
    "torch head: softmax_ce": (SHORT + TORCH.format(loss="list_softmax_cross_entropy"), None),
    "torch head: pairwise": (SHORT + TORCH.format(loss="pairwise"), None),
    "torch head: pairwise, eager": (SHORT + TORCH.format(loss="pairwise"), "eager"),
    "torch head: pointwise": (SHORT + TORCH.format(loss="pointwise"), None),
    "torch head: pointwise, eager": (SHORT + TORCH.format(loss="pointwise"), "eager"),
}

LONG_CASES: dict[str, tuple[str, str | None]] = {
    "long: lightgbm (lambdarank)": (LONG + LIGHTGBM.format(rounds=100), None),
    "long: pairwise": (LONG + GBDT.format(loss="pairwise", rounds=100), None),
    "long: pairwise, eager": (LONG + GBDT.format(loss="pairwise", rounds=100), "eager"),
    "long: weighted_pairwise": (LONG + GBDT.format(loss="weighted_pairwise", rounds=100), None),
    "long: weighted_pairwise, eager": (
        LONG + GBDT.format(loss="weighted_pairwise", rounds=100),
        "eager",
    ),
}

WARM_UP = """
from selrank.fast import warm_up
warm_up()  # the pairwise kernels and, with torch, the pointwise head's
"""
# the same first fits where the numba cache was filled beforehand (an image build step)
PREBUILT = {
    "pairwise, eager, cache from warm_up": "pairwise, eager",
    "combined, eager, cache from warm_up": "combined, eager",
    "torch head: pairwise, eager, warm_up": "torch head: pairwise, eager",
    "torch head: pointwise, eager, warm_up": "torch head: pointwise, eager",
    "long: weighted_pairwise, cache from warm_up": "long: weighted_pairwise",
}


# --compile: the first call of one binding, numba imported before the clock (module docstring)
COMPILE_SETUP = """
import time
import numba  # noqa: F401  (numba's own import is not the compile)
import numpy as np
from selrank._numba import set_kernel_policy
set_kernel_policy("eager")
rng = np.random.default_rng(0)
n = 2000
sizes = np.full(20, 100)
y = rng.integers(0, 5, n).astype(float)
p = rng.normal(size=n)
"""
COMPILE_RUN = """
b = loss.bind(y, group=sizes)
t = time.process_time(); b.grad_hess(p); first = time.process_time() - t
t = time.process_time(); b.grad_hess(p); second = time.process_time() - t
print("COMPILE", first, second)
"""
_PW = "from selrank.losses import Pairwise\nloss = Pairwise({})"
_WPW = "from selrank.losses import WeightedPairwise\nloss = WeightedPairwise({})"
COMPILE_CASES: dict[str, str] = {
    # the sampled-pairs kernel (selrank.fast._sampled): Pairwise's "topk" / "mean"
    "sampled topk, sinh (default link)": _PW.format("pair_method='topk', num_pair_per_sample=32"),
    "sampled mean, sinh (default link)": _PW.format("pair_method='mean', num_pair_per_sample=4"),
    "sampled topk, exp": _PW.format("'exp', pair_method='topk', num_pair_per_sample=32"),
    "sampled mean, exp": _PW.format("'exp', pair_method='mean', num_pair_per_sample=4"),
    "sampled topk, sinh, distinct": _PW.format(
        "pairs='distinct', pair_method='topk', num_pair_per_sample=32"
    ),
    # the all-pairs kernel (selrank.fast._pairwise) and the weighted ones, for comparison
    "all pairs, sinh (default link)": _PW.format(""),
    "all pairs, exp": _PW.format("'exp'"),
    "weighted topk, sinh (default link)": _WPW.format("num_pair_per_sample=30"),
    "weighted topk, sigmoid, target order": _WPW.format(
        "'sigmoid', target='order', num_pair_per_sample=30"
    ),
    "weighted mean, sinh": _WPW.format("pair_method='mean', num_pair_per_sample=4"),
}


def run_compile(code: str, path: str) -> tuple[float, float]:
    """(first call, second call) CPU s of ``COMPILE_SETUP + code + COMPILE_RUN`` in a fresh
    process with the package at ``path`` and an empty numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=path)
        env.pop("SELRANK_KERNELS", None)
        out = subprocess.run(
            [sys.executable, "-c", COMPILE_SETUP + code + COMPILE_RUN],
            env=env,
            cwd=tempfile.gettempdir(),  # not ROOT: the package comes from ``path`` only
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"compile case failed:\n{out.stderr[-3000:]}")
        line = next(x for x in out.stdout.splitlines() if x.startswith("COMPILE"))
        first, second = (float(v) for v in line.split()[1:])
        return first, second


def compile_main(args: argparse.Namespace) -> None:
    """``--compile``: first-call CPU s per kernel row and package version, interleaved."""
    versions = dict(
        (v.split("=", 1) if "=" in v else (v, v)) for v in args.versions.split(",") if v
    ) or {"here": str(ROOT)}
    versions = {k: str(Path(v).resolve()) for k, v in versions.items()}
    names = list(COMPILE_CASES)
    if args.smoke:
        from _smoke import smoke_out

        names, args.repeats = ["all pairs, sinh (default link)"], 1  # the cheapest compile
        args.out = str(smoke_out("cold_start_compile"))
    elif args.only:
        keys = args.only.split(",")
        names = [n for n in names if any(k in n for k in keys)]
    first: dict[tuple[str, str], list[float]] = {(n, v): [] for n in names for v in versions}
    second: dict[tuple[str, str], list[float]] = {k: [] for k in first}
    t0 = time.time()
    loads = [os.getloadavg()]
    for _ in range(args.repeats):  # interleaved: rows and versions round robin
        for name in names:
            for version, path in versions.items():
                a, b = run_compile(COMPILE_CASES[name], path)
                first[name, version].append(a)
                second[name, version].append(b)
        loads.append(os.getloadavg())
    rows = []
    print(f"{'kernel row':40s} {'version':>8s} {'first call CPU s':>17s} {'min':>6s} {'max':>6s}")
    for name in names:
        for version in versions:
            t = first[name, version]
            rows.append(
                {
                    "case": name,
                    "version": version,
                    "code": COMPILE_CASES[name],
                    "first_call_cpu_s": t,
                    "median_first_call_cpu_s": statistics.median(t),
                    "second_call_cpu_s": second[name, version],
                }
            )
            print(
                f"{name:40s} {version:>8s} {statistics.median(t):17.2f} {min(t):6.2f} {max(t):6.2f}"
            )
    result = {
        "benchmark": "cold_start --compile",
        "label": args.label,
        "what": "CPU s (time.process_time in the child) of a binding's first grad_hess under "
        "the eager policy, numba imported before the clock, empty numba cache; 2,000 rows, "
        "20 queries of 100",
        "versions": versions,
        "repeats": args.repeats,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_per_round": loads,
        "wall_s": time.time() - t0,
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


def run_case(code: str, policy: str | None, omp_wait: str, setup: str | None = None) -> float:
    """CPU seconds (user + system, all threads) of a fresh process running ``code`` under the
    kernel ``policy`` (after ``setup`` in another process with the same numba cache, not
    counted)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        env.pop("SELRANK_KERNELS", None)
        if policy is not None:
            env["SELRANK_KERNELS"] = policy
        if omp_wait != "default":
            env["OMP_WAIT_POLICY"] = omp_wait.upper()
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


def _reference(name: str) -> str | None:
    """The row a row is compared with: LightGBM (short or long), and for torch heads also
    the torch head without kernels."""
    return "long: lightgbm (lambdarank)" if name.startswith("long:") else "lightgbm (lambdarank)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated row names (substrings)")
    parser.add_argument("--label", default="", help="stored with the results")
    parser.add_argument("--no-long", action="store_true", help="leave out the long: rows")
    parser.add_argument(
        "--omp-wait",
        choices=["passive", "active", "default"],
        default="passive",
        help="OMP_WAIT_POLICY of the rows (default: passive; see the module docstring)",
    )
    parser.add_argument("--out", default=None, help="the JSON file to write")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="first-call compile CPU s per kernel row instead of whole first fits",
    )
    parser.add_argument(
        "--versions",
        default="",
        help="with --compile: NAME=PATH,... copies of the package to compare (default: this one)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) two short rows (lightgbm, pairwise), once; with --compile one row (all pairs)",
    )
    args = parser.parse_args()
    if args.compile:
        args.out = args.out or str(COMPILE_OUT)
        compile_main(args)
        return
    args.out = args.out or str(OUT)
    cases = {**CASES, **({} if args.no_long or args.smoke else LONG_CASES)}
    names = list(cases) + list(PREBUILT)
    if args.smoke:
        from _smoke import smoke_out

        names, args.repeats = ["lightgbm (lambdarank)", "pairwise"], 1
        args.out = str(smoke_out("cold_start"))
    elif args.only:
        keys = args.only.split(",")
        names = [n for n in names if any(k in n for k in keys)]
    times: dict[str, list[float]] = {n: [] for n in names}
    t0 = time.time()
    for _ in range(args.repeats):  # interleaved, so that load changes hit every row alike
        for name in names:
            if name in PREBUILT:
                code, policy = cases[PREBUILT[name]]
                times[name].append(run_case(code, policy, args.omp_wait, setup=WARM_UP))
            else:
                code, policy = cases[name]
                times[name].append(run_case(code, policy, args.omp_wait))
    med = {n: statistics.median(t) for n, t in times.items()}
    torch_ref = med.get("torch head: softmax_ce")
    rows = []
    print(
        f"{'case':40s} {'median CPU s':>12s} {'min':>7s} {'max':>7s} {'x lightgbm':>10s} "
        f"{'x softmax_ce':>12s}"
    )
    for name in names:
        ref = med.get(_reference(name) or "")
        ratio = med[name] / ref if ref else float("nan")
        row = {
            "case": name,
            "policy": (cases.get(name) or cases[PREBUILT[name]])[1] or "auto",
            "cpu_s": times[name],
            "median_cpu_s": med[name],
            "ratio_to_lightgbm": ratio,
        }
        t_ratio = float("nan")
        if name.startswith("torch head") and torch_ref:
            t_ratio = med[name] / torch_ref
            row["ratio_to_torch_softmax_ce"] = t_ratio
        rows.append(row)
        print(
            f"{name:40s} {med[name]:12.2f} {min(times[name]):7.2f} {max(times[name]):7.2f} "
            f"{ratio:10.2f} {t_ratio:12.2f}"
        )
    result = {
        "benchmark": "cold_start",
        "label": args.label,
        "what": "CPU s (user+sys) of a fresh process: imports + data + first fit, empty numba "
        "cache; short rows: 5k rows, 2 rounds / 1 epoch; long: rows: 50k rows, 100 rounds",
        "omp_wait_policy": args.omp_wait,
        "repeats": args.repeats,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "wall_s": time.time() - t0,
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
