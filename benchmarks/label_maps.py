"""Monotone relabelling with the default ranker (issue 18): does the fit survive the label range?

Protocol
--------
* Data: packaged MQ2008, fold 1 (``selrank.datasets.load_letor("mq2008", 1)``); grades 0-2.
* Label maps (monotone, applied to the training and validation labels only):
  ``identity`` (0, 1, 2), ``clicks31`` (0, 5, 31: ``round(2**(2.5 g)) - 1``, a click-count
  style range 0-31), ``x10`` (0, 10, 20), ``x50`` (0, 50, 100), ``x0.1`` (0, 0.1, 0.2).
* Model: ``SelectiveRanker(random_state=0, num_threads=1)`` with every other parameter at
  its default, trained on the train split with the validation split as ``eval_set`` (early
  stopping on validation NDCG@10, the library default).
* Score: NDCG@10 of the *test* split against the original grades (gain 2**g - 1), and the
  standard deviation of the test predictions (a collapsed fit has almost none); the per-query
  paired difference to the identity map with a bootstrap CI
  (:func:`selrank.metrics.paired_comparison`).

Run: ``python benchmarks/label_maps.py [--tag before|after]``; writes
``benchmarks/results/label_maps[_tag].json`` (``--smoke``: seconds, to a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from selrank import SelectiveRanker
from selrank.datasets import load_letor
from selrank.metrics import ndcg, paired_comparison

MAPS = {
    "identity": lambda g: g,
    "clicks31": lambda g: np.round(2.0 ** (2.5 * g)) - 1.0,
    "x10": lambda g: 10.0 * g,
    "x50": lambda g: 50.0 * g,
    "x0.1": lambda g: 0.1 * g,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="")
    ap.add_argument("--fold", type=int, default=1)
    ap.add_argument("--smoke", action="store_true", help="(CI) 3 rounds a fit")
    args = ap.parse_args()
    rounds = {"n_estimators": 3} if args.smoke else {}
    data = load_letor("mq2008", args.fold)
    tr, va, te = data.train, data.validation, data.test
    rows, per_query = [], {}
    for name, f in MAPS.items():
        t0 = time.perf_counter()
        est = SelectiveRanker(random_state=0, num_threads=1, **rounds)
        try:
            est.fit(
                tr.X, f(tr.y), group=tr.group,
                eval_set=[(va.X, f(va.y))], eval_group=[va.group],
            )  # fmt: skip
        except ValueError as exc:
            rows.append({"map": name, "result": f"refused: {str(exc)[:120]}"})
            print(f"{name:9s} refused: {str(exc)[:100]}")
            continue
        s = est.predict(te.X)
        q = ndcg(te.y, s, te.group, k=10, reduction="none")
        per_query[name] = s
        row = {
            "map": name,
            "labels": sorted(set(f(np.array([0.0, 1.0, 2.0])).tolist())),
            "label_scale": float(getattr(est, "label_scale_", est.label_scale))
            if not isinstance(est.label_scale, str) or hasattr(est, "label_scale_")
            else est.label_scale,
            "ndcg@10": float(np.mean(q)),
            "pred_std": float(np.std(s)),
            "rounds": int(est.n_estimators_),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        rows.append(row)
        print(
            f"{name:9s} ndcg@10={row['ndcg@10']:.4f} pred_std={row['pred_std']:.4f} "
            f"rounds={row['rounds']} scale={row['label_scale']} ({row['seconds']} s)"
        )
    comparison = []
    if "identity" in per_query and len(per_query) > 1:
        table = paired_comparison(per_query, te.y, te.group, reference="identity", seed=0)
        comparison = table.to_dicts() if hasattr(table, "to_dicts") else table
        print(table)
    name = f"label_maps{'_' + args.tag if args.tag else ''}"
    if args.smoke:
        from _smoke import smoke_out

        path = smoke_out(name)
    else:
        path = pathlib.Path(__file__).parent / "results" / f"{name}.json"
        path.parent.mkdir(exist_ok=True)
    path.write_text(
        json.dumps(
            {"fold": args.fold, "rows": rows, "paired_vs_identity": comparison},
            indent=1,
            default=str,
        )
    )


if __name__ == "__main__":
    main()
