"""Command line: ``selrank train | sensitivity | datasets | demo``.

``selrank train`` is the library's main job on packaged data: it trains a gradient-boosted
ranker with a selective matching loss on a LETOR fold (early stopping on the validation
split), trains LightGBM's built-in ``lambdarank`` with the same tree parameters beside it,
and prints NDCG@1/3/5/10 on the test split (LightGBM's conventions: exponential gain, a query
without relevant documents scores 1).

Examples
--------
.. code-block:: console

    $ selrank train --dataset mq2008 --fold 1
    $ selrank train --dataset ohsumed --loss pairwise --backend xgboost --save model.json
    $ selrank sensitivity exp --param alpha=1.5 --figure exp.png
    $ selrank datasets
    $ selrank demo
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import numpy as np

__all__ = ["main"]

NDCG_AT = (1, 3, 5, 10)


def _parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() == "none":
        return None
    return text


def _parse_params(items: Sequence[str] | None, what: str) -> dict:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise SystemExit(f"selrank: {what} must look like name=value; got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = _parse_value(value.strip())
    return out


def _ndcg_row(y, scores, group) -> dict[str, float]:
    from .metrics import ndcg

    return {f"ndcg@{k}": float(ndcg(y, scores, group, k=k, gain="exponential", ties="stable", no_relevant="one")) for k in NDCG_AT}


def _train(args) -> int:
    import lightgbm as lgb

    from .datasets import load_letor
    from .estimators import SelectiveRanker

    data = load_letor(args.dataset, fold=args.fold)
    tr, va, te = data.train, data.validation, data.test
    loss_params = _parse_params(args.param, "--param")
    backend_params = _parse_params(args.backend_param, "--backend-param")
    kwargs = {"loss": args.loss, "backend": args.backend, **backend_params}
    if args.scaling:
        kwargs["scaling"] = args.scaling
    if args.link:
        kwargs["link"] = args.link
    if loss_params:
        kwargs["loss_params"] = loss_params
    if args.seed is not None:
        kwargs["random_state"] = args.seed
    print(f"{args.dataset} fold {args.fold}: train {tr.X.shape[0]} rows / {tr.group.size} queries, "
          f"validation {va.X.shape[0]} / {va.group.size}, test {te.X.shape[0]} / {te.group.size}")
    rows = []
    t0 = time.perf_counter()
    model = SelectiveRanker(**kwargs).fit(tr.X, tr.y, group=tr.group, eval_set=[(va.X, va.y)], eval_group=[va.group])
    seconds = time.perf_counter() - t0
    label = f"selrank {args.loss} ({args.backend})"
    rows.append({"method": label, **_ndcg_row(te.y, model.predict(te.X), te.group), "seconds": seconds})
    if args.save:
        model.save(args.save)
    if not args.no_baseline:
        t0 = time.perf_counter()
        params = {"objective": "lambdarank", "learning_rate": 0.05, "metric": "ndcg", "eval_at": [10],
                  "verbosity": -1, "seed": args.seed if args.seed is not None else 0}
        dtrain = lgb.Dataset(tr.X, tr.y, group=tr.group)
        dvalid = lgb.Dataset(va.X, va.y, group=va.group, reference=dtrain)
        base = lgb.train(params, dtrain, num_boost_round=1000, valid_sets=[dvalid],
                         callbacks=[lgb.early_stopping(50, verbose=False)])
        scores = base.predict(te.X, num_iteration=base.best_iteration)
        rows.append({"method": "LightGBM lambdarank", **_ndcg_row(te.y, scores, te.group),
                     "seconds": time.perf_counter() - t0})
    header = f"{'method':32s}" + "".join(f"{'NDCG@' + str(k):>9s}" for k in NDCG_AT) + f"{'seconds':>9s}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['method']:32s}" + "".join(f"{r[f'ndcg@{k}']:9.4f}" for k in NDCG_AT) + f"{r['seconds']:9.1f}")
    print("(test split; exponential gain 2^rel - 1, a query without relevant documents scores 1)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"dataset": args.dataset, "fold": args.fold, "rows": rows}, fh, indent=2)
    return 0


def _sensitivity(args) -> int:
    from .links import LINKS, get_link
    from .paper.underspecification import sensitivity_report
    from .scalings import SCALINGS, get_scaling

    params = _parse_params(args.param, "--param")
    if args.name in LINKS:
        obj = get_link(args.name, **params)
    elif args.name in SCALINGS:
        obj = get_scaling(args.name, **params)
    else:
        raise SystemExit(f"selrank: unknown link or scaling {args.name!r}; links: {sorted(LINKS)}; scalings: {sorted(SCALINGS)}")
    rep = sensitivity_report(obj, gamma=args.gamma)
    idx = np.linspace(0, rep.z.size - 1, args.rows).round().astype(int)
    cols = ["z", "h", "dh", "bust"] + [f"loss(s={s:g})" for s in rep.observed]
    table = rep.as_dict()
    print(f"sensitivity of {rep.name or rep.link!r}")
    print("".join(f"{c:>13s}" for c in cols))
    for i in idx:
        print("".join(f"{float(table[c][i]):13.5g}" for c in cols))
    if args.figure:
        fig = rep.figure()
        fig.savefig(args.figure, dpi=120)
        print(f"figure written to {args.figure}")
    return 0


def _datasets(args) -> int:
    from .datasets import DWELL_DATASETS, LETOR_DATASETS, data_dirs

    print("packaged data directories searched:", ", ".join(str(d) for d in data_dirs()))
    print("LETOR:", ", ".join(sorted(LETOR_DATASETS)), "  (load_letor(name, fold=1..5))")
    print("dwell:", ", ".join(sorted(DWELL_DATASETS)), "  (load_dwell(name))")
    return 0


def _demo(args) -> int:
    from .links import get_link
    from .losses import Listwise, Pointwise

    z = np.array([-3.0, 0.0, 3.0])
    print("Links: h(z) and sensitivity h'(z) at z = -3, 0, 3")
    for name, params in (("identity", {}), ("exp", {}), ("sigmoid", {}), ("sinh", {"cap": 3.0}), ("smelu", {"c": 1.0})):
        link = get_link(name, **params)
        print(f"  {name:9s} h = {np.array2string(link.h(z), precision=3):28s} h' = {np.array2string(link.dh(z), precision=3)}")
    print("\nThe same error costs more where the link is steep (exp link, error of 0.5):")
    loss = Pointwise("exp")
    for s in (-3.0, 0.0, 3.0):
        print(f"  observed {s:+.0f}: loss {float(loss.loss(np.array([s + 0.5]), np.array([s]))):.4f}")
    print("\nListwise composite softmax (scaling exp) on one query, labels [2, 0, 1]:")
    g, h = Listwise("exp").grad_hess(np.zeros(3), np.array([2.0, 0.0, 1.0]), group=[3])
    print(f"  gradient {np.array2string(g, precision=3)}  hessian {np.array2string(h, precision=3)}")
    print("\nTrain a ranker on packaged data: selrank train --dataset mq2008 --fold 1")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="selrank", description="Selective matching losses for ranking and dwell time.")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a selective ranker on a packaged LETOR fold and compare with lambdarank")
    t.add_argument("--dataset", default="mq2008", choices=["mq2008", "ohsumed"])
    t.add_argument("--fold", type=int, default=1, choices=[1, 2, 3, 4, 5])
    t.add_argument("--loss", default="listwise", help="listwise (default), pairwise, pointwise")
    t.add_argument("--scaling", help="scaling of a listwise loss (e.g. exp, constant, smelu)")
    t.add_argument("--link", help="link of a pointwise/pairwise loss (e.g. exp, sinh, sigmoid)")
    t.add_argument("--param", action="append", metavar="NAME=VALUE", help="loss/link/scaling parameter, repeatable")
    t.add_argument("--backend", default="lightgbm", choices=["lightgbm", "xgboost"])
    t.add_argument("--backend-param", action="append", metavar="NAME=VALUE", help="backend parameter, repeatable")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--save", metavar="PATH", help="save the fitted selrank model")
    t.add_argument("--json", metavar="PATH", help="write the results table as JSON")
    t.add_argument("--no-baseline", action="store_true", help="skip the LightGBM lambdarank baseline")
    t.set_defaults(func=_train)

    s = sub.add_parser("sensitivity", help="h, h', loss curves and BUST of a link or scaling")
    s.add_argument("name", help="a link or scaling name")
    s.add_argument("--param", action="append", metavar="NAME=VALUE")
    s.add_argument("--gamma", type=float, default=1.0, help="regulariser for a scaling's composite sigmoid")
    s.add_argument("--rows", type=int, default=11, help="rows of the printed table")
    s.add_argument("--figure", metavar="PATH", help="save the sensitivity figure (needs matplotlib)")
    s.set_defaults(func=_sensitivity)

    d = sub.add_parser("datasets", help="list the packaged datasets")
    d.set_defaults(func=_datasets)

    m = sub.add_parser("demo", help="a short demonstration of links and losses")
    m.set_defaults(func=_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``selrank`` command (and ``python -m selrank``)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"selrank: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
