"""PyTorch heads: forward+backward cost per head, and MQ2008 5-fold NDCG@10 of NeuralRanker.

Run from the repository root::

    python benchmarks/torch_heads.py [--part timing|mq2008|all] [--out benchmarks/results/torch_heads.json]
                                     [--quick | --smoke] [--threads 1] [--clock wall|cpu]

Timing protocol (``--part timing``)
-----------------------------------
* Shapes ``[1024 × 128]``, ``[64 × 1000]`` and ``[256 × 1000]`` (``[batch × list]``), float32, on the CPU (or
  ``--device cuda``). Scores ``N(0, 1)``, graded labels ``0..4``, list lengths uniform in
  ``[L/2, L]`` (the rest is padding, marked by a boolean mask), one seed for every head.
* Every head is timed on the same tensors for one forward *and* backward pass
  (``loss.backward()``), its graph rebuilt each time, in interleaved rounds (so machine
  load hits all heads alike; each target head runs right after its reference) after one
  warm-up round: each head runs about 1.5 s worth of rounds (at least 5, at most 40). The
  median is reported; the minimum (the least disturbed run on a shared machine) is in the
  JSON too, and a target counts as met only if both the median and the minimum ratio meet it.
  ``--clock cpu`` times each pass by the thread's CPU time instead of the wall clock (one
  thread on the CPU: on a loaded machine the time other processes take is left out, though
  not their effect on the caches); ``environment.clock`` in the JSON says which.
* References, written plainly in torch in this file and timed in the same run:
  a ``log_softmax`` ListNet, a broadcast RankNet and the exp link's matching loss written
  elementwise (all with the mask).
* Peak memory: each (head, shape) runs once in a fresh subprocess, after a warm-up pass on a
  ``[2 × 8]`` batch (so that loading the numba kernels is not counted); the peak resident set
  (``VmHWM``, reset just before the pass) minus the resident set before it, with glibc's
  mmap threshold fixed so freed tensors return their pages. On CUDA,
  ``torch.cuda.max_memory_allocated`` minus the allocation before the pass.
* Targets (issues 13 and 29): listwise selective head ≤ 1.3× the ListNet reference at
  ``[1024 × 128]`` and ``[256 × 1000]`` (issue 13 asked ≤ 2×); pairwise selective head ≥ 3×
  faster than the RankNet reference (≤ 1/3 of its time) at ``[64 × 1000]`` and ``[256 ×
  1000]`` with its kernel, and never slower than it (≤ 1×, every shape) under the kernel
  policy ``"never"`` (``SELRANK_KERNELS=never``: the torch path; the policy is in the JSON);
  pointwise head ≤ 1.2× the elementwise reference. ``pairwise[topk]`` / ``pairwise[mean]`` are the head with pair
  sampling (k = 32, m = 1), ``pairwise[tensor path]`` the broadcast pair-tensor evaluation
  the fused kernel replaced (``grad="autograd"``). ``--only`` and ``--memory`` restrict the
  timed and memory-probed entries (the B×L×L baselines take seconds and GBs at 1,000
  items); a run with ``--only`` keeps the other entries' results and targets in the JSON
  from the previous run (``entries_of_this_run`` says which are new). The script times the
  checkout it lives in (its root goes first on ``sys.path``). ``listwise[exp, cap=None]`` and
  ``pairwise[sinh, cap=None]`` (the same heads with uncapped scaling / link) show how much
  of the cost is the core's capped-function evaluation; ``listwise[autograd]`` the gain of
  the closed-form backward.

Heads vs batch size and list length (``--part timing``, not with ``--only`` or ``--no-scaling``)
------------------------------------------------------------------------------------------------
* The listwise, pairwise and pointwise heads against their references (ListNet, RankNet,
  elementwise) at batch sizes 16, 64, 256, 1024 with ``L = 128`` and list lengths 10, 100,
  1,000, 5,000 with ``B = 64`` (same batches and protocol as above, interleaved rounds per
  shape, about 1 s per entry, 3 to 20 rounds). The broadcast RankNet reference is left
  out where it would hold more than ``7e7`` pair slots (``64 × 5000``: ~6 GB per tensor),
  so the pairwise ratio is not measured there. In ``timing.scaling`` of the JSON.

MQ2008 protocol (``--part mq2008``)
-----------------------------------
* ``selrank.datasets.load_letor("mq2008", fold=k)``, k = 1..5: train on the training split,
  early-stop on NDCG@10 of the validation split (10 epochs without improvement, at most
  100, best weights restored), report the test split once.
* ``NeuralRanker`` with every parameter at its default (MLP 64-32, ReLU, Adam 1e-3, 32
  queries per step, standardised features), ``random_state=k``, one thread; only the head
  changes. Heads: the selective ``listwise`` (exp composite softmax), ``pairwise`` (capped
  sinh) and ``pointwise`` (exp link), the torch baselines (softmax CE, ListNet, ListMLE,
  RankNet, LambdaLoss with NDCG-Loss2 weights, ApproxNDCG) and the core's pointwise baseline
  ``reweighted_square`` (the core's other baselines are multi-class label losses with no
  ranking reading).
* NDCG@10 with exponential gain, tied scores averaged, queries without a relevant document
  counted as 0 (trec_eval / LETOR script; as ``benchmarks/letor.py``); the JSON also holds
  the "count as 1" (LightGBM) and "leave out" conventions. Mean ± std over the 5 folds.

Writes ``benchmarks/results/torch_heads.json`` and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # time the checkout this file is in, not an installed copy
    sys.path.insert(0, str(ROOT))
SHAPES = ((1024, 128), (64, 1000), (256, 1000))
#: The clock of every timed pass (``--clock``): wall time, or the thread's CPU time.
CLOCK = [time.perf_counter]


# ---------------------------------------------------------------------------------------
# plain torch references
# ---------------------------------------------------------------------------------------


def listnet_reference(s, y, mask):
    """ListNet with ``log_softmax``: -Σ softmax(y) · log_softmax(s) per list, mean over lists."""
    low = torch.tensor(float("-inf"), dtype=s.dtype)
    target = torch.softmax(torch.where(mask, y, low), dim=-1)
    logp = torch.log_softmax(torch.where(mask, s, low), dim=-1)
    return -torch.where(mask, target * logp, torch.zeros((), dtype=s.dtype)).sum(-1).mean()


def pointwise_reference(s, y, mask):
    """The exp link's matching loss elementwise, plainly: e^s - e^y - (s - y) e^y, mean over items."""
    ey = torch.exp(y)
    loss = torch.exp(s) - ey - (s - y) * ey
    return torch.where(mask, loss, torch.zeros((), dtype=s.dtype)).sum() / mask.sum().clamp_min(1)


def ranknet_reference(s, y, mask):
    """RankNet: log(1 + e^-(s_a - s_b)) over the pairs with y_a > y_b, mean over pairs."""
    pairs = (y[:, :, None] > y[:, None, :]) & mask[:, :, None] & mask[:, None, :]
    pair_loss = F.softplus(-(s[:, :, None] - s[:, None, :]))
    return torch.where(
        pairs, pair_loss, torch.zeros((), dtype=s.dtype)
    ).sum() / pairs.sum().clamp_min(1)


def entries():
    """``name -> (kind, factory)``; a factory returns ``fn(scores, labels, mask) -> loss``."""
    from selrank.torch import ListwiseLoss, PairwiseLoss, get_head

    def head(name, **params):
        def make():
            h = get_head(name, **params)
            return lambda s, y, m: h(s, y, mask=m)

        return make

    def nocap():
        h = ListwiseLoss("exp", cap=None)
        return lambda s, y, m: h(s, y, mask=m)

    def nocap_pairwise():
        h = PairwiseLoss("sinh", cap=None)
        return lambda s, y, m: h(s, y, mask=m)

    def autograd_listwise():
        h = ListwiseLoss("exp", grad="autograd")
        return lambda s, y, m: h(s, y, mask=m)

    def tensor_pairwise():
        h = PairwiseLoss(grad="autograd")
        return lambda s, y, m: h(s, y, mask=m)

    # each target pair is timed back to back (reference, then head) to share machine load
    return {
        "listnet_reference": ("reference", lambda: listnet_reference),
        "listwise": ("selective", head("listwise")),
        "ranknet_reference": ("reference", lambda: ranknet_reference),
        "pairwise": ("selective", head("pairwise")),
        "pairwise[topk]": ("selective", head("pairwise", pair_method="topk")),
        "pairwise[mean]": ("selective", head("pairwise", pair_method="mean")),
        "pairwise[tensor path]": ("selective", tensor_pairwise),
        "pointwise_reference": ("reference", lambda: pointwise_reference),
        "pointwise": ("selective", head("pointwise")),
        "listwise[autograd]": ("selective", autograd_listwise),
        "listwise[exp, cap=None]": ("selective", nocap),
        "pairwise[sinh, cap=None]": ("selective", nocap_pairwise),
        "softmax_ce": ("baseline", head("list_softmax_cross_entropy")),
        "listnet": ("baseline", head("listnet")),
        "listmle": ("baseline", head("listmle")),
        "ranknet": ("baseline", head("ranknet")),
        "lambdaloss": ("baseline", head("lambdaloss")),
        "approxndcg": ("baseline", head("approxndcg")),
    }


def make_batch(B: int, L: int, device: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(B, L, generator=g)
    y = torch.randint(0, 5, (B, L), generator=g).float()
    lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
    mask = torch.arange(L)[None, :] < lengths[:, None]
    y = torch.where(mask, y, torch.tensor(-1.0))
    return s.to(device), y.to(device), mask.to(device)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_shape(
    B: int, L: int, device: str, budget_s: float, min_rounds: int, max_rounds: int, only=None
) -> dict[str, list[float]]:
    """Interleaved rounds; each entry runs ``clip(budget_s / its time, min_rounds, max_rounds)`` rounds."""
    s, y, mask = make_batch(B, L, device)
    fns = {
        name: factory() for name, (_, factory) in entries().items() if only is None or name in only
    }

    def once(fn):
        x = s.clone().requires_grad_(True)
        _sync(device)
        t0 = CLOCK[0]()
        fn(x, y, mask).backward()
        _sync(device)
        return CLOCK[0]() - t0

    warm = {name: once(fn) for name, fn in fns.items()}  # warm-up round, not reported
    rounds = {
        name: int(min(max(min_rounds, budget_s // max(t, 1e-9)), max_rounds))
        for name, t in warm.items()
    }
    times: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(max(rounds.values())):
        for name, fn in fns.items():
            if r < rounds[name]:
                times[name].append(once(fn))
    return times


def _status(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def memory_probe(name: str, B: int, L: int, device: str) -> int:
    """Peak extra memory (bytes) of one forward+backward of ``name`` (run in a fresh process)."""
    fn = entries()[name][1]()
    ws, wy, wm = make_batch(2, 8, device, seed=1)
    fn(
        ws.clone().requires_grad_(True), wy, wm
    ).backward()  # warm-up: numba loading/compiling is not the pass
    s, y, mask = make_batch(B, L, device)
    x = s.clone().requires_grad_(True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        fn(x, y, mask).backward()
        torch.cuda.synchronize()
        return int(torch.cuda.max_memory_allocated() - base)
    base = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak resident set
    fn(x, y, mask).backward()
    return int(_status("VmHWM") - base)


def peak_memory(name: str, B: int, L: int, device: str, threads: int) -> int | None:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS=str(threads))
    cmd = [
        sys.executable,
        __file__,
        "--memory-probe",
        name,
        str(B),
        str(L),
        "--device",
        device,
        "--threads",
        str(threads),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        print(
            f"  memory probe of {name} at {B}x{L} failed: {out.stderr.strip()[-300:]}", flush=True
        )
        return None
    return int(out.stdout.strip().splitlines()[-1])


TARGETS = (
    ("listwise", "listnet_reference", 1.3, ((1024, 128), (256, 1000))),
    ("pairwise", "ranknet_reference", 1 / 3, ((64, 1000), (256, 1000))),
    ("pointwise", "pointwise_reference", 1.2, SHAPES),
)
#: Under the kernel policy "never" the pairwise head runs its torch path: never slower than
#: the broadcast RankNet (issue 29).
TARGETS_NEVER = tuple(
    ("pairwise", ref, 1.0, SHAPES) if head == "pairwise" else (head, ref, bound, shapes)
    for head, ref, bound, shapes in TARGETS
)


#: The "heads vs batch size and list length" table: batch sizes at L = 128, list lengths
#: at B = 64 (``[64 × 128]`` is in both sweeps).
SCALING_SHAPES = (
    (16, 128),
    (64, 128),
    (256, 128),
    (1024, 128),
    (64, 10),
    (64, 100),
    (64, 1000),
    (64, 5000),
)
SCALING_PAIRS = (
    ("listwise", "listnet_reference"),
    ("pairwise", "ranknet_reference"),
    ("pointwise", "pointwise_reference"),
)
#: The broadcast RankNet reference builds [B, L, L] tensors: left out above this many pair
#: slots (64 × 5000² would need ~6 GB per tensor); its ratio is then not measured.
RANKNET_MAX_SLOTS = 7e7


def run_scaling(device: str, quick: bool) -> dict:
    """Each head of ``SCALING_PAIRS`` against its reference at every ``SCALING_SHAPES`` shape
    (interleaved rounds per shape, as ``time_shape``: ~1 s per entry, 3 to 20 rounds)."""
    rows = []
    for B, L in SCALING_SHAPES:
        t0 = time.time()
        only = {name for pair in SCALING_PAIRS for name in pair}
        if B * L * L > RANKNET_MAX_SLOTS:
            only.discard("ranknet_reference")
        times = time_shape(
            B,
            L,
            device,
            budget_s=0.2 if quick else 1.0,
            min_rounds=3,
            max_rounds=5 if quick else 20,
            only=only,
        )
        print(
            f"[{B} x {L}] scaling table: {len(times)} entries in {time.time() - t0:.0f} s",
            flush=True,
        )
        for head, ref in SCALING_PAIRS:
            h = times[head]
            r = times.get(ref)
            row = {
                "shape": [B, L],
                "head": head,
                "reference": ref,
                "head_median_ms": 1e3 * statistics.median(h),
                "head_min_ms": 1e3 * min(h),
                "rounds": len(h),
                "reference_median_ms": None if r is None else 1e3 * statistics.median(r),
                "reference_min_ms": None if r is None else 1e3 * min(r),
            }
            row["ratio_median"] = (
                None if r is None else row["head_median_ms"] / row["reference_median_ms"]
            )
            row["ratio_min"] = None if r is None else row["head_min_ms"] / row["reference_min_ms"]
            rows.append(row)
    return {"shapes": [list(s) for s in SCALING_SHAPES], "rows": rows}


def print_scaling(scaling: dict) -> None:
    print(
        "\nheads vs batch size and list length — forward+backward median ms, "
        "ratio head / reference (median, min)"
    )
    head = f"{'B x L':>11s}"
    for h, ref in SCALING_PAIRS:
        head += f" | {h:>9s} {ref.split('_')[0] + ' ref':>13s} {'ratio':>13s}"
    print(head)
    by = {(tuple(r["shape"]), r["head"]): r for r in scaling["rows"]}
    for B, L in (tuple(s) for s in scaling["shapes"]):
        line = f"{B:5d}x{L:<5d}"
        for h, _ in SCALING_PAIRS:
            r = by[(B, L), h]
            ref = "n/a" if r["reference_median_ms"] is None else f"{r['reference_median_ms']:.2f}"
            ratio = (
                "n/a"
                if r["ratio_median"] is None
                else f"{r['ratio_median']:.2f}x, {r['ratio_min']:.2f}x"
            )
            line += f" | {r['head_median_ms']:9.2f} {ref:>13s} {ratio:>13s}"
        print(line)


def run_timing(device: str, threads: int, quick: bool, only=None, memory=None) -> dict:
    kinds = {name: kind for name, (kind, _) in entries().items()}
    results = []
    for B, L in SHAPES:
        t0 = time.time()
        times = time_shape(
            B,
            L,
            device,
            budget_s=0.2 if quick else 1.5,
            min_rounds=3 if quick else 5,
            max_rounds=5 if quick else 40,
            only=only,
        )
        print(f"[{B} x {L}] timed {len(times)} entries in {time.time() - t0:.0f} s", flush=True)
        for name, ts in times.items():
            probe = not quick and (memory is None or name in memory)
            peak = peak_memory(name, B, L, device, threads) if probe else None
            results.append(
                {
                    "shape": [B, L],
                    "entry": name,
                    "kind": kinds[name],
                    "rounds": len(ts),
                    "median_ms": 1e3 * statistics.median(ts),
                    "min_ms": 1e3 * min(ts),
                    "max_ms": 1e3 * max(ts),
                    "peak_mib": None if peak is None else peak / 2**20,
                }
            )
    by = {(tuple(r["shape"]), r["entry"]): r for r in results}
    for r in results:
        shape = tuple(r["shape"])
        for ref in ("listnet_reference", "ranknet_reference", "pointwise_reference"):
            if (shape, ref) not in by:
                continue
            r[f"time_vs_{ref}"] = r["median_ms"] / by[shape, ref]["median_ms"]
            r[f"min_time_vs_{ref}"] = r["min_ms"] / by[shape, ref]["min_ms"]
            if r["peak_mib"] is not None and by[shape, ref]["peak_mib"]:
                r[f"memory_vs_{ref}"] = r["peak_mib"] / by[shape, ref]["peak_mib"]
    targets = []
    from selrank import kernel_policy

    targets_now = TARGETS_NEVER if kernel_policy() == "never" else TARGETS
    for head, ref, bound, shapes in targets_now:
        for B, L in shapes:
            if ((B, L), head) not in by or ((B, L), ref) not in by:
                continue
            h = by[(B, L), head]
            med, low = h[f"time_vs_{ref}"], h[f"min_time_vs_{ref}"]
            targets.append(
                {
                    "shape": [B, L],
                    "target": f"{head} <= {bound:.3g}x {ref} (time)",
                    "ratio_median": med,
                    "ratio_min": low,
                    "met": med <= bound and low <= bound,
                    "met_by_one_statistic_only": (med <= bound) != (low <= bound),
                }
            )
    return {"results": results, "targets": targets}


# ---------------------------------------------------------------------------------------
# MQ2008
# ---------------------------------------------------------------------------------------

MQ_HEADS = (
    "listwise",
    "pairwise",
    "pointwise",
    "softmax_ce",
    "listnet",
    "listmle",
    "ranknet",
    "lambdaloss",
    "approxndcg",
    "reweighted_square",
)
CONVENTIONS = ("zero", "one", "exclude")
SMOKE_NEURAL: dict = {}  # --smoke only: fewer epochs than NeuralRanker's defaults


def run_mq2008(device: str, quick: bool) -> dict:
    from selrank.datasets import load_letor
    from selrank.estimators import NeuralRanker
    from selrank.metrics import ndcg

    folds = (1,) if quick else (1, 2, 3, 4, 5)
    per_head: dict[str, dict] = {
        h: {c: [] for c in CONVENTIONS} | {"epochs": [], "seconds": []} for h in MQ_HEADS
    }
    for k in folds:
        d = load_letor("mq2008", fold=k)
        for name in MQ_HEADS:
            t0 = time.time()
            r = NeuralRanker(name, device=device, random_state=k, **SMOKE_NEURAL)
            r.fit(
                d.train.X,
                d.train.y,
                group=d.train.group,
                eval_set=[(d.validation.X, d.validation.y)],
                eval_group=[d.validation.group],
            )
            pred = r.predict(d.test.X)
            for c in CONVENTIONS:
                per_head[name][c].append(
                    float(ndcg(d.test.y, pred, d.test.group, k=10, no_relevant=c))
                )
            per_head[name]["epochs"].append(int(r.n_epochs_))
            per_head[name]["seconds"].append(time.time() - t0)
            print(
                f"fold {k} {name:18s} NDCG@10 {per_head[name]['zero'][-1]:.4f} "
                f"({r.n_epochs_} epochs, {time.time() - t0:.1f} s)",
                flush=True,
            )
    summary = {}
    for name, res in per_head.items():
        summary[name] = {
            "folds": res,
            **{f"ndcg@10_{c}_mean": float(np.mean(res[c])) for c in CONVENTIONS},
            **{
                f"ndcg@10_{c}_std": float(np.std(res[c], ddof=1)) if len(res[c]) > 1 else 0.0
                for c in CONVENTIONS
            },
        }
    return {"folds": list(folds), "heads": summary}


# ---------------------------------------------------------------------------------------


def _kernel_policy() -> str:
    from selrank import kernel_policy

    return kernel_policy()


def environment(device: str, threads: int) -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(
                line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": device,
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "kernel_policy": _kernel_policy(),
        "load_average_start": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def print_timing(timing: dict) -> None:
    print(
        "\nforward+backward, median ms (peak MiB) — ratio to the ListNet / RankNet / pointwise reference"
    )

    def ratio(r, ref, fmt):
        return format(r[f"time_vs_{ref}"], fmt) + "x" if f"time_vs_{ref}" in r else "       -"

    for r in timing["results"]:
        peak = "    n/a" if r["peak_mib"] is None else f"{r['peak_mib']:7.1f}"
        print(
            f"{r['shape'][0]:5d}x{r['shape'][1]:<5d} {r['entry']:24s} {r['median_ms']:10.2f} ms {peak} MiB"
            f"  {ratio(r, 'listnet_reference', '7.2f')}  {ratio(r, 'ranknet_reference', '7.3f')}"
            f"  {ratio(r, 'pointwise_reference', '7.2f')}"
        )
    for t in timing["targets"]:
        verdict = (
            "met" if t["met"] else ("inconclusive" if t["met_by_one_statistic_only"] else "NOT met")
        )
        print(
            f"target {t['target']} at {t['shape']}: {t['ratio_median']:.2f}x (median), "
            f"{t['ratio_min']:.2f}x (min) -> {verdict}"
        )


def print_mq(mq: dict) -> None:
    print(f"\nMQ2008 NDCG@10 (no-relevant queries = 0), mean ± std over folds {mq['folds']}")
    for name, s in mq["heads"].items():
        print(
            f"{name:18s} {s['ndcg@10_zero_mean']:.4f} ± {s['ndcg@10_zero_std']:.4f}   "
            f"(as LightGBM: {s['ndcg@10_one_mean']:.4f})"
        )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", choices=("timing", "mq2008", "all"), default="all")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "torch_heads.json"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time each pass by the wall clock (default) or by the CPU time of the thread "
        "(time.thread_time: on a loaded machine, without the time other processes take; "
        "with --threads 1 on the CPU only)",
    )
    p.add_argument(
        "--quick", action="store_true", help="fewer rounds, no memory probes, MQ2008 fold 1 only"
    )
    p.add_argument("--only", help="comma-separated entries to time (default: all)")
    p.add_argument(
        "--no-scaling",
        action="store_true",
        help="skip the heads vs batch size and list length table (a run with --only skips it)",
    )
    p.add_argument(
        "--memory", help="comma-separated entries whose peak memory is probed (default: all timed)"
    )
    p.add_argument("--memory-probe", nargs=3, metavar=("ENTRY", "B", "L"), help=argparse.SUPPRESS)
    p.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) --quick on one [8 x 16] batch, MQ2008 fold 1 with 1 epoch a head",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.clock == "cpu":
        if args.threads != 1 or args.device != "cpu":
            p.error("--clock cpu times one CPU thread: it needs --threads 1 and --device cpu")
        CLOCK[0] = time.thread_time
    if args.smoke:
        from _smoke import smoke_out

        global SHAPES, SCALING_SHAPES, SMOKE_NEURAL
        SHAPES = SCALING_SHAPES = ((8, 16),)
        SMOKE_NEURAL = {"epochs": 1}
        args.quick, args.only, args.part, args.out = (
            True,
            None,
            "all",
            str(smoke_out("torch_heads")),
        )
        Path(args.out).unlink(missing_ok=True)  # no partial-run merge with an earlier smoke run
    if args.memory_probe:
        name, B, L = args.memory_probe
        print(memory_probe(name, int(B), int(L), args.device))
        return
    out_path = Path(args.out)
    result = json.loads(out_path.read_text()) if out_path.exists() else {}
    result["environment"] = environment(args.device, args.threads)
    result["environment"]["clock"] = args.clock
    if args.part in ("timing", "all"):
        only = None if not args.only else set(args.only.split(","))
        memory = None if not args.memory else set(args.memory.split(","))
        timing = run_timing(args.device, args.threads, args.quick, only, memory)
        print_timing(timing)
        previous = result.get("timing")
        if only and previous:
            # a partial run keeps the other entries' results and targets from the previous run
            # (their ratios are to that run's references)
            timing["results"] = [r for r in previous["results"] if r["entry"] not in only] + timing[
                "results"
            ]
            measured = {t["target"].split()[0] for t in timing["targets"]}
            timing["targets"] = [
                t for t in previous["targets"] if t["target"].split()[0] not in measured
            ] + timing["targets"]
            timing["entries_of_this_run"] = sorted(only)
        if only or args.no_scaling:
            if previous and "scaling" in previous:
                timing["scaling"] = previous["scaling"]  # kept from the previous run
        else:
            timing["scaling"] = run_scaling(args.device, args.quick)
            print_scaling(timing["scaling"])
        result["timing"] = timing
    if args.part in ("mq2008", "all"):
        result["mq2008"] = run_mq2008(args.device, args.quick)
        print_mq(result["mq2008"])
    result["environment"]["load_average_end"] = os.getloadavg()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {out_path}")


if __name__ == "__main__":
    main()
