"""Two versions of ``selrank/losses/_kernels.py`` timed side by side in one process.

Used for the issue-13 cleanup (the per-pair term folded into one inlined helper): the version
of the file at a git revision (``--before``, default ``HEAD``) and the one in the working tree
are loaded as two modules, compiled, checked to give the same gradients, Hessians and loss values
(to 1e-12 relative), and called in turns (order alternating) on the same deep lists: queries
of exactly ``--docs`` documents (default 1,000 and 4,000; 200,000 rows as in
``benchmarks/deep_lists.py``), targets ``0.25 * label`` from ``make_mslr_like``, predictions
``N(0, sd)``. Cases cover every loop the helper replaced: all pairs through
``pairwise_grad_hess`` (the GBDT path; sd 2 leaves the caps, so the general loop runs), top-k
through ``pairwise_sampled`` with a non-odd link and ``pairs="distinct"`` (the ranked general
loop), mean pairs (the sampled loop), and all pairs with loss values (the torch head); plus
top-k with the default odd link (the fast loop, not changed: a control). One thread.

Run: ``python benchmarks/kernel_ab.py`` (a few minutes). Writes ``benchmarks/results/kernel_ab.json``.

Retired with issue 19: the kernels now live in several modules of ``selrank/fast/``
(``_links.py``, ``_pairwise.py``, ``_sampled.py``), which this one-file loader cannot load
side by side. Compare versions with ``benchmarks/objective_speed.py`` run alternately under
``PYTHONPATH=<old tree>`` and ``PYTHONPATH=<new tree>``. ``--before`` still works for
revisions up to the move (both sides read from git: ``--after REV``), and ``--after fast``
times an old one-file version (``--before REV``) against the kernels of ``selrank.fast``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
KERNELS = "selrank/losses/_kernels.py"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"selrank.losses.{name}", path)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "selrank.losses"
    sys.modules[spec.name] = mod  # (selrank._numba builds a module's kernels through sys.modules)
    spec.loader.exec_module(mod)
    return mod


def cases(mod, y, pred_narrow, pred_wide, offsets):
    from selrank.links import get_link
    from selrank.losses import Pairwise

    sinh = Pairwise().link
    expl = get_link("exp", alpha=0.5, beta=-1.0)
    p_sinh = mod.kernel_link(sinh)
    p_exp = mod.kernel_link(expl)
    tg = mod.pairwise_target_grad(y, offsets, None, False, p_sinh)
    key = mod.draw_key(0, 1)
    return {
        "all pairs, GBDT path (sinh cap 3, sd 2)": lambda: mod.pairwise_grad_hess(
            pred_wide, y, offsets, None, False, p_sinh, tg
        ),
        "all pairs, GBDT path (sinh cap 3, sd 0.5)": lambda: mod.pairwise_grad_hess(
            pred_narrow, y, offsets, None, False, p_sinh, tg
        ),
        "topk k=32, exp link beta=-1, distinct (ranked general loop)": lambda: mod.pairwise_sampled(
            pred_wide, y, offsets, None, True, p_exp, "topk", 32
        ),
        "mean m=1 (sinh, sd 2)": lambda: mod.pairwise_sampled(
            pred_wide, y, offsets, None, False, p_sinh, "mean", 1, key
        ),
        "all pairs with loss values (exp link, torch head path)": lambda: mod.pairwise_sampled(
            pred_wide, y, offsets, None, False, p_exp, "all", 0, 0, None, mod.kernel_fcaps(expl)
        ),
        "topk k=32, sinh (fast loop, unchanged: control)": lambda: mod.pairwise_sampled(
            pred_wide, y, offsets, None, False, p_sinh, "topk", 32
        ),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="HEAD", help="git revision of the old kernel file")
    parser.add_argument(
        "--after",
        default=None,
        help="git revision of the new kernel file (default: the tree), or 'fast': the kernels "
        "of the installed selrank.fast package (the same entry points)",
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--docs", default="1000,4000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "kernel_ab.json"))
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) the last one-file version against selrank.fast, 2,000 rows, 1 repeat",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        from _smoke import SKIP, smoke_out

        # the retired script's remaining use: an old one-file version against selrank.fast
        last = subprocess.run(
            ["git", "log", "-1", "--format=%H", "--", KERNELS],
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout.strip()
        if not last:
            print(f"skipped: no git history with {KERNELS} (a shallow clone?)")
            raise SystemExit(SKIP)
        args.before, args.after = f"{last}~1", "fast"
        args.rows, args.docs, args.repeats = 2_000, "100", 1
        only = ("all pairs, GBDT path (sinh cap 3, sd 2)",)  # one case: compiling is the cost
        args.out = str(smoke_out("kernel_ab"))
    else:
        only = None

    from selrank.datasets import make_mslr_like

    old_src = subprocess.run(
        ["git", "show", f"{args.before}:{KERNELS}"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    tmp = Path(tempfile.mkdtemp())
    (tmp / "_kernels_before.py").write_text(old_src)
    # both copies are loaded from a temporary folder: numba's cache files (cache=True) then go
    # there, not beside the package's own module, whose cache a foreign module name would spoil
    if args.after == "fast":  # the split kernels of selrank/fast against an old one-file version
        import selrank.fast as fast_mod

        (tmp / "_kernels_before.py").write_text(old_src)
        mods = {"before": load(tmp / "_kernels_before.py", "_kernels_before"), "after": fast_mod}
    elif args.after is None and not (ROOT / KERNELS).exists():
        raise SystemExit(
            f"{KERNELS} moved to selrank/fast/ (several modules): give --after REV of a revision "
            "before the move, or use benchmarks/objective_speed.py (see the docstring)"
        )
    else:
        after_src = (
            (ROOT / KERNELS).read_text()
            if args.after is None
            else subprocess.run(
                ["git", "show", f"{args.after}:{KERNELS}"],
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout
        )
        (tmp / "_kernels_after.py").write_text(after_src)
        mods = {k: load(tmp / f"_kernels_{k}.py", f"_kernels_{k}") for k in ("before", "after")}
    results = []
    for docs in (int(d) for d in args.docs.split(",")):
        data = make_mslr_like(args.rows, n_features=4, mean_docs_per_query=docs, seed=0)
        n_q = args.rows // docs
        y = 0.25 * np.asarray(data.y[: n_q * docs], dtype=np.float64)
        offsets = np.arange(n_q + 1, dtype=np.int64) * docs
        rng = np.random.default_rng(0)
        narrow = rng.normal(scale=0.5, size=y.size)
        wide = rng.normal(scale=2.0, size=y.size)
        fns = {k: cases(m, y, narrow, wide, offsets) for k, m in mods.items()}
        for name in only or fns["before"]:
            a, b = fns["before"][name](), fns["after"][name]()
            err = max(
                float(np.max(np.abs(u - v)) / max(1.0, float(np.max(np.abs(u)))))
                for u, v in zip(a, b, strict=True)
            )
            if not err <= 1e-12:
                raise AssertionError(f"{name}: before and after differ by {err:.3g}")
            times = {"before": [], "after": []}
            for r in range(args.repeats):
                for k in ("before", "after") if r % 2 == 0 else ("after", "before"):
                    t0 = time.perf_counter()
                    fns[k][name]()
                    times[k].append(time.perf_counter() - t0)
            tb, ta = np.array(times["before"]), np.array(times["after"])
            row = {
                "docs_per_query": docs,
                "case": name,
                "before_seconds": float(np.median(tb)),
                "after_seconds": float(np.median(ta)),
                "ratio_after_over_before": float(np.median(ta) / np.median(tb)),
                "paired_ratio_median": float(np.median(ta / tb)),
                "paired_ratio_range": [float(np.min(ta / tb)), float(np.max(ta / tb))],
                "max_rel_diff": err,
            }
            results.append(row)
            print(
                f"{docs:>5} docs/query | {name:58s} | before {row['before_seconds']:.4f}s "
                f"after {row['after_seconds']:.4f}s | after/before {row['ratio_after_over_before']:.3f} "
                f"(paired {row['paired_ratio_median']:.3f}, range {row['paired_ratio_range'][0]:.2f}-"
                f"{row['paired_ratio_range'][1]:.2f})",
                flush=True,
            )
    doc = {
        "benchmark": "kernel_ab",
        "before": args.before,
        "rows": args.rows,
        "repeats": args.repeats,
        "results": results,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "note": "shared 2-core machine with other jobs running",
        },
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out}")
    return doc


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
