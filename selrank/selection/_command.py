"""``selrank select``: the selection report from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._candidates import CANDIDATES, DEFAULT_CANDIDATES
from ._data import PACKAGED


def add_select_command(sub: Any) -> argparse.ArgumentParser:
    """Add ``select`` to the ``selrank`` command's subparsers; returns its parser."""
    p = sub.add_parser(
        "select",
        help="which objective for your data? train selrank's objectives and the built-ins "
        "alike, choose on validation, compare on test (the selection report)",
    )
    p.add_argument("--dataset", choices=list(PACKAGED), help="packaged data (default mq2008)")
    p.add_argument(
        "--data", metavar="DIR", help="a LETOR / MSLR folder (Fold1..Fold5 or train.txt ...)"
    )
    p.add_argument("--train", metavar="FILE", help="training file (with --valid and --test)")
    p.add_argument(
        "--valid", metavar="FILE", help="validation file (early stopping and the choice)"
    )
    p.add_argument("--test", metavar="FILE", help="test file (the comparison)")
    p.add_argument(
        "--fold", type=int, action="append", choices=[1, 2, 3, 4, 5],
        help="a fold to run (repeatable; default all)",
    )  # fmt: skip
    p.add_argument(
        "--candidates",
        help=f"comma-separated candidates (default: {','.join(DEFAULT_CANDIDATES)})",
    )
    p.add_argument(
        "--metric", default="ndcg@10", help="the choice metric: ndcg@K (default ndcg@10), map, err"
    )
    p.add_argument("--seeds", type=int, default=1, help="training seeds per candidate and fold")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-rounds", type=int, default=1000)
    p.add_argument("--patience", type=int, default=50, help="early-stopping rounds")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads per fit (default 1; 0: the library's default)",
    )
    p.add_argument(
        "--clicks", type=int, nargs="?", const=50, metavar="SESSIONS",
        help="also train on simulated click counts (position-based model) and show how each "
        "candidate's validation score moves",
    )  # fmt: skip
    p.add_argument(
        "--no-prefer-builtin", action="store_true",
        help="choose the best on validation even when a built-in is within its CI",
    )  # fmt: skip
    p.add_argument("--n-resamples", type=int, default=2000, help="bootstrap resamples of each CI")
    p.add_argument(
        "--jobs", type=int, default=1, help="fits side by side in processes (-1: one per CPU)"
    )
    p.add_argument(
        "--output-dir", metavar="DIR",
        help="keep every finished fit here; a run started again with the same folder resumes",
    )  # fmt: skip
    p.add_argument("--format", choices=["text", "markdown", "latex"], default="text")
    p.add_argument("--json", metavar="PATH", help="write the report as JSON")
    p.add_argument("--save-best", metavar="PATH", help="save the chosen model (first fold's)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run_select)
    return p


def _data(args: argparse.Namespace) -> tuple[Any, list[int] | None]:
    singles = {"--train": args.train, "--valid": args.valid, "--test": args.test}
    if any(v is not None for v in singles.values()):
        if args.data is not None or args.dataset is not None:
            raise ValueError("--train/--valid/--test name single files; drop --data and --dataset")
        missing = [k for k, v in singles.items() if v is None]
        if missing:
            raise ValueError(
                f"single files need --train, --valid and --test; missing {', '.join(missing)}"
            )
        if args.fold:
            raise ValueError(
                "--fold picks folds of a folder or packaged set; three files are one split"
            )
        for option, value in singles.items():
            if not Path(value).expanduser().is_file():
                raise ValueError(f"{option} {value}: no such file")
        from ..datasets import load_ranking_files

        paths = [Path(v).expanduser() for v in singles.values()]
        return load_ranking_files(*paths), None
    if args.data is not None:
        if args.dataset is not None:
            raise ValueError("give --dataset (packaged) or --data DIR (your folder), not both")
        root = Path(args.data).expanduser()
        if not root.is_dir():
            raise ValueError(f"--data {root}: no such folder")
        return str(root), args.fold
    return args.dataset or "mq2008", args.fold


def run_select(args: argparse.Namespace) -> int:
    """Run ``selrank select`` (parsed ``args``); returns the exit status."""
    from .._files import check_distinct_outputs, check_output_path
    from ._select import select

    outputs = {"--json": args.json, "--save-best": args.save_best}
    for option, value in outputs.items():
        if value is not None:
            check_output_path(value, option)
    check_distinct_outputs(outputs)
    if args.candidates is not None:
        names = [c.strip() for c in args.candidates.split(",") if c.strip()]
        unknown = [n for n in names if n not in CANDIDATES]
        if unknown or not names:
            raise ValueError(
                f"unknown candidate(s) {unknown or [args.candidates]}; choose from {', '.join(CANDIDATES)}"
            )
    data, folds = _data(args)
    report = select(
        data,
        folds=folds,
        candidates=args.candidates,
        metric=args.metric,
        n_seeds=args.seeds,
        seed=args.seed,
        n_rounds=args.max_rounds,
        early_stopping_rounds=args.patience,
        num_threads=args.threads or None,
        click_noise=args.clicks or False,
        prefer_builtin=not args.no_prefer_builtin,
        n_resamples=args.n_resamples,
        keep_models=args.save_best is not None,
        n_jobs=args.jobs,
        output_dir=args.output_dir,
        progress=not args.quiet,
    )
    if args.format == "markdown":
        print(report.to_markdown(), end="")
    elif args.format == "latex":
        print(report.to_latex(), end="")
    else:
        print(report)
    if args.json:
        report.to_json(args.json)
        print(f"report written to {args.json}", file=sys.stderr)
    if args.save_best:
        report.save_best(args.save_best)
        print(f"chosen model ({report.chosen}) saved to {args.save_best}", file=sys.stderr)
    return 0
