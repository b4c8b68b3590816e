"""The fast paths before and after a library change, side by side, and against the generic path.

Issue 19 moved every fast copy of a formula into ``selrank.fast`` (a registry looked up by the
losses and heads) — a change that must not cost speed. This script times the calls that go
through a fast path — the pairwise loss (all pairs and top-k, numba), the weighted pairwise
loss (numba), the listwise loss (fused NumPy), and the torch pointwise, listwise and pairwise
heads on CPU tensors (forward and backward) — in fresh subprocesses, one per tree and turn,
the trees taking turns (``--turns``, default 3) so that machine load hits them alike. Each
subprocess compiles first (not timed) and reports the median of ``--repeats`` calls per case;
the table gives the median over turns per tree and the ratio after / before. With
``selrank.fast`` in the tree, the same cases are also timed inside ``selrank.fast.off()`` (the
generic paths): the speed-up each fast path gives.

Run: ``python benchmarks/fast_paths_ab.py --before /path/to/old/tree --after /path/to/new/tree``
(a few minutes; one thread). Writes ``benchmarks/results/fast_paths_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = r"""
import contextlib, json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
REPEATS = int(sys.argv[1])
GENERIC = sys.argv[2] == "generic"
ROWS = int(sys.argv[3]) if len(sys.argv) > 3 else 24_000
try:
    from selrank import fast
    off = fast.off if GENERIC else contextlib.nullcontext
except ImportError:
    if GENERIC:
        print(json.dumps({})); sys.exit(0)
    off = contextlib.nullcontext
from selrank.datasets import make_mslr_like
from selrank.losses import Listwise, Pairwise, WeightedPairwise

rng = np.random.default_rng(0)
data = make_mslr_like(ROWS, n_features=4, mean_docs_per_query=120, seed=0)
y = 0.25 * np.asarray(data.y, dtype=np.float64)
group = np.asarray(data.group)
pred = y + rng.normal(scale=0.5, size=y.size)

def median(fn):
    fn()  # compile / first call
    ts = []
    for _ in range(REPEATS):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return float(np.median(ts))

out = {}
with off():
    b = Pairwise("sinh", cap=3.0).bind(y, group=group)
    out[f"pairwise all pairs (numba), {ROWS // 1000}k rows"] = median(lambda: b.grad_hess(pred))
    b = Pairwise("sinh", cap=3.0, pair_method="topk", num_pair_per_sample=32).bind(y, group=group)
    out[f"pairwise top-32 (numba), {ROWS // 1000}k rows"] = median(lambda: b.grad_hess(pred))
    b = WeightedPairwise().bind(y, group=group)
    out[f"weighted pairwise top-k (numba), {ROWS // 1000}k rows"] = median(lambda: b.grad_hess(pred))
    b = Listwise("exp", gamma=4.0).bind(y, group=group)
    out[f"listwise exp (fused NumPy), {ROWS // 1000}k rows"] = median(lambda: b.grad_hess(pred))
    out[f"bind Pairwise (dispatch decision), {ROWS // 1000}k rows"] = median(
        lambda: Pairwise("sinh", cap=3.0).bind(y, group=group)
    )
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    torch.set_num_threads(1)
    from selrank.torch import ListwiseLoss, PairwiseLoss, PointwiseLoss
    g = torch.Generator().manual_seed(0)
    z = torch.randn(64, 1000, generator=g)
    t = torch.rand(64, 1000, generator=g) * 3.0
    zp, tp = z[:, :100].contiguous(), torch.floor(t[:, :100])
    def step(head, s, target):
        x = s.clone().requires_grad_(True)
        head(x, target).backward()
    with off():
        heads = {
            "torch PointwiseLoss [64 x 1000] fwd+bwd": (PointwiseLoss(), z, t),
            "torch ListwiseLoss [64 x 1000] fwd+bwd": (ListwiseLoss(), z, t),
            "torch PairwiseLoss [64 x 100] fwd+bwd": (PairwiseLoss(), zp, tp),
        }
        for name, (head, s, target) in heads.items():
            out[name] = median(lambda: step(head, s, target))
print(json.dumps(out))
"""


def run(tree: str, repeats: int, mode: str, rows: int = 24_000) -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=tree,
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NUMBA_NUM_THREADS="1",
        # compiled code and bytecode stay out of the trees compared
        NUMBA_CACHE_DIR=str(Path(os.environ.get("TMPDIR", "/tmp")) / "fast_paths_ab" / mode),
        PYTHONDONTWRITEBYTECODE="1",
    )
    proc = subprocess.run(
        [sys.executable, "-c", CASES, str(repeats), mode, str(rows)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tree,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree} ({mode}) failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    import numpy as np

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", help="source tree of the old version (required)")
    p.add_argument("--after", default=str(ROOT), help="source tree of the new version")
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fast_paths_ab.json"))
    p.add_argument(
        "--smoke", action="store_true", help="(CI) this tree against itself, 2,400 rows, 1 turn"
    )
    args = p.parse_args(argv)
    rows_data = 24_000
    if args.smoke:
        from _smoke import smoke_out

        args.before = args.before or args.after  # an A/A run: the path is what is checked
        args.turns, args.repeats, rows_data = 1, 1, 2_400
        args.out = str(smoke_out("fast_paths_ab"))
    if args.before is None:
        p.error("--before is required (the source tree of the old version)")
    runs: dict[str, list[dict]] = {"before": [], "after": [], "generic": []}
    for turn in range(args.turns):
        order = ["before", "after"] if turn % 2 == 0 else ["after", "before"]
        for side in order:
            runs[side].append(run(getattr(args, side), args.repeats, "fast", rows_data))
        runs["generic"].append(run(args.after, args.repeats, "generic", rows_data))
    cases = list(runs["before"][0])
    rows = []
    for case in cases:
        med = {k: float(np.median([r[case] for r in v if case in r])) for k, v in runs.items()}
        rows.append(
            {
                "case": case,
                "before_s": med["before"],
                "after_s": med["after"],
                "after_over_before": med["after"] / med["before"],
                "generic_s": med.get("generic"),
                "generic_over_after": med["generic"] / med["after"] if med.get("generic") else None,
            }
        )
    head = f"{'case':48s} {'before ms':>10s} {'after ms':>10s} {'after/before':>12s} {'generic ms':>11s} {'generic/fast':>12s}"
    print(head)
    for r in rows:
        print(
            f"{r['case']:48s} {1e3 * r['before_s']:10.3f} {1e3 * r['after_s']:10.3f} "
            f"{r['after_over_before']:12.3f} {1e3 * (r['generic_s'] or float('nan')):11.3f} "
            f"{r['generic_over_after'] or float('nan'):12.2f}"
        )
    result = {
        "benchmark": "fast_paths_ab",
        "before": args.before,
        "after": args.after,
        "turns": args.turns,
        "repeats": args.repeats,
        "threads": 1,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "python": sys.version.split()[0],
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
