"""Build the packaged data under ``datasets/`` from the original files in ``../shared/data``.

    python scripts/package_data.py [--source ../shared/data] [--out datasets]

Steps, each of which stops the script on a mismatch:

1. verify every original file against ``SHA256SUMS``;
2. parse the LETOR subsets S1..S5 of MQ2008 and OHSUMED (float64, exact) and check rows,
   queries, features and labels against the counts documented for the collections, and that
   the subsets are query-disjoint;
3. parse the YOOCHOOSE 100k click logs and check their sizes;
4. write one zstd-compressed Parquet file per collection, read it back and check it equals what
   was parsed;
5. write a dataset card (``README.md``) per collection with source, terms, measured counts and
   the SHA256 of the original and Parquet files, and the index ``datasets/README.md``.

Re-running it on the same inputs reproduces the same tables (the Parquet bytes may differ
across polars versions; the cards record the hashes of the files actually written).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import polars as pl

from selrank.datasets import read_session_clicks, read_svmlight

REPO = Path(__file__).resolve().parent.parent
MAX_BYTES = 5_000_000  # the repository refuses larger files

# the redistribution terms, written into each card (DATA_LICENSES.md at the root says the same)
LETOR_TERMS = (
    "Not covered by selrank's Apache-2.0 licence. LETOR is distributed by Microsoft Research "
    "for research on learning to rank; its download page asks users to accept Microsoft's "
    "online licence agreement, whose terms bind every use of these files (including this "
    "copy). Use them for research, cite the source, and check the agreement before any other "
    "use or redistribution (see `DATA_LICENSES.md` at the root of the repository)."
)
YOOCHOOSE_TERMS = (
    "Not covered by selrank's Apache-2.0 licence. \"YOOCHOOSE e-commerce data set by YOOCHOOSE"
    " GmbH is licensed under a Creative Commons Attribution-NonCommercial-NoDerivatives 4.0 "
    'International License" (CC BY-NC-ND 4.0, https://creativecommons.org/licenses/by-nc-'
    "nd/4.0/; the rules page of the RecSys Challenge 2015). Non-commercial use only, with "
    "attribution; this folder is a sample of the click file converted to Parquet without "
    "changing any record (see `DATA_LICENSES.md` at the root of the repository)."
)

LETOR = {
    "mq2008": {
        "folder": "letor/MQ2008",
        "title": "MQ2008 (LETOR 4.0)",
        "rows": 15_211,
        "queries": 784,
        "features": 46,
        "labels": {0: 12_279, 1: 2_001, 2: 931},
        "source": (
            "LETOR 4.0, Microsoft Research Asia: the Million Query track of TREC 2008 (MQ2008), "
            "files `S1.txt` … `S5.txt` (the five query-disjoint subsets of the supervised "
            "ranking setting), copied byte for byte from a public repository."
        ),
        "terms": (
            LETOR_TERMS + " Cite: Tao Qin and "
            'Tie-Yan Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597, 2013.'
        ),
        "note": "Many queries have no relevant document (all labels 0).",
    },
    "ohsumed": {
        "folder": "letor/OHSUMED",
        "title": "OHSUMED (LETOR 3.0)",
        "rows": 16_140,
        "queries": 106,
        "features": 45,
        "labels": {0: 11_303, 1: 2_585, 2: 2_252},
        "source": (
            'LETOR 3.0, OHSUMED medical abstracts, "Feature-min" (query-level min-normalised '
            "features): the five test sets `S1.txt` … `S5.txt`, which partition the collection, "
            "copied byte for byte from a public repository."
        ),
        "terms": (
            LETOR_TERMS + " Cite: Tao Qin, Tie-Yan "
            'Liu, Jun Xu and Hang Li, "LETOR: A benchmark collection for research on learning '
            'to rank for information retrieval", Information Retrieval 13(4), 2010.'
        ),
        "note": "The folds use the same rotation as MQ2008.",
    },
}

DWELL = {
    "folder": "dwell/yoochoose-100k",
    "train": ("yoochoose-clicks-100k_train_full.txt", 70_278),
    "test": ("yoochoose-clicks-100k_test.txt", 13_568),
}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_checksums(source: Path) -> dict[str, str]:
    sums = source / "SHA256SUMS"
    if not sums.is_file():
        sys.exit(f"{sums} is missing: cannot verify the original files")
    expected: dict[str, str] = {}
    for k, line in enumerate(sums.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            sys.exit(f"{sums}, line {k}: expected '<sha256>  <path>'; got {line!r}")
        expected[parts[1].lstrip("*")] = parts[0]
    for rel, digest in expected.items():
        got = sha256(source / rel)
        if got != digest:
            sys.exit(
                f"checksum mismatch for {source / rel}: SHA256SUMS says {digest}, file has {got}"
            )
    print(f"verified {len(expected)} files against {sums}")
    return expected


def check(cond: bool, what: str) -> None:
    if not cond:
        sys.exit(f"check failed: {what}")


def write_parquet(frame: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path, compression="zstd", compression_level=22, statistics=False)
    check(
        path.stat().st_size < MAX_BYTES,
        f"{path} is {path.stat().st_size} bytes (limit {MAX_BYTES})",
    )
    check(pl.read_parquet(path).equals(frame), f"{path} reads back differently")


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def package_letor(name: str, spec: dict, source: Path, out: Path, sums: dict[str, str]) -> list:
    frames = []
    for k in range(1, 6):
        f = source / spec["folder"] / f"S{k}.txt"
        s = read_svmlight(f, keep_comments=True, dtype=np.float64)
        check(s.n_features == spec["features"], f"{f}: {s.n_features} features")
        check(s.docid is not None and bool(np.all(s.docid != "")), f"{f}: every row names a docid")
        labels = s.y.astype(np.int8)
        check(bool(np.all(labels == s.y)), f"{f}: integer labels")
        frames.append(
            pl.DataFrame(
                {
                    "subset": np.full(s.n_rows, k, dtype=np.int8),
                    "qid": s.qid,
                    "label": labels,
                    "docid": s.docid,
                    "comment": s.comment,
                }
            ).hstack(pl.from_numpy(s.X, schema=list(s.feature_names)))
        )
    frame = pl.concat(frames)
    per_subset = (
        frame.group_by("subset")
        .agg(
            pl.len().alias("rows"),
            pl.col("qid").n_unique().alias("queries"),
            *[(pl.col("label") == v).sum().alias(f"label {v}") for v in spec["labels"]],
        )
        .sort("subset")
    )
    check(frame.height == spec["rows"], f"{name}: {frame.height} rows, expected {spec['rows']}")
    n_queries = frame["qid"].n_unique()
    check(n_queries == spec["queries"], f"{name}: {n_queries} queries, expected {spec['queries']}")
    check(int(per_subset["queries"].sum()) == n_queries, f"{name}: subsets share queries")
    counts = dict(frame["label"].value_counts().iter_rows())
    check(counts == spec["labels"], f"{name}: label counts {counts}, expected {spec['labels']}")

    parquet = out / name / f"{name}.parquet"
    write_parquet(frame, parquet)
    no_relevant = (
        frame.group_by("qid").agg(pl.col("label").max()).filter(pl.col("label") == 0).height
    )
    sizes = frame.group_by("qid").len()["len"]

    originals = [
        [f"`{spec['folder']}/S{k}.txt`", f"`{sums[spec['folder'] + f'/S{k}.txt']}`"]
        for k in range(1, 6)
    ]
    card = f"""# {spec["title"]}

Packaged for selrank by `scripts/package_data.py` (do not edit by hand).

## Source

{spec["source"]}

## Terms

{spec["terms"]}

## Contents

`{name}.parquet` (zstd): one row per query–document pair, in the order of the original files
(S1 first). Columns: `subset` (1–5: the file `S<k>.txt` the row comes from), `qid`, `label`
(relevance 0/1/2), `docid` and `comment` (the text after `#` in the source line), and
`f1` … `f{spec["features"]}` (feature id `k` of the source, float64, exactly the source's decimal
values). {spec["note"]}

Load a fold with `selrank.datasets.load_letor("{name}", fold=k)`; train / validation / test
follow the official rotation (fold 1: S1, S2, S3 / S4 / S5; fold k shifts every subset by k − 1).

## Counts (measured from the data)

{frame.height:,} rows, {n_queries:,} queries, {spec["features"]} features; labels
{", ".join(f"{v}: {counts[v]:,}" for v in sorted(counts))}. Documents per query: min
{sizes.min()}, median {sizes.median():g}, max {sizes.max()}. Queries without any relevant
document: {no_relevant}.

{table(per_subset.columns, [list(r) for r in per_subset.iter_rows()])}

## Checksums (SHA256)

Original files (verified against `SHA256SUMS` before packaging):

{table(["file", "sha256"], originals)}

Packaged file: `{name}.parquet` `{sha256(parquet)}` ({parquet.stat().st_size:,} bytes).
"""
    (out / name / "README.md").write_text(card)
    print(
        f"{name}: {frame.height} rows, {n_queries} queries -> {parquet} ({parquet.stat().st_size} bytes)"
    )
    return [
        name,
        spec["title"],
        f"{frame.height:,}",
        f"{n_queries:,}",
        spec["features"],
        f"`{name}/{name}.parquet`",
    ]


def package_dwell(source: Path, out: Path, sums: dict[str, str]) -> list:
    folder = source / DWELL["folder"]
    parts = []
    for split in ("train", "test"):
        file, expected = DWELL[split]
        clicks = read_session_clicks(folder / file)
        check(clicks.height == expected, f"{file}: {clicks.height} clicks, expected {expected}")
        parts.append(clicks.select(pl.lit(split).alias("split"), "session", "item", "time_ms"))
    frame = pl.concat(parts)
    name = "yoochoose-100k"
    parquet = out / name / "clicks.parquet"
    write_parquet(frame, parquet)

    from selrank.datasets import dwell_dataset

    ds = dwell_dataset(parts[0], parts[1], name=name)
    stats = []
    for split, part, dw in (("train", parts[0], ds.train), ("test", parts[1], ds.test)):
        t = part["time_ms"]
        q = np.quantile(dw.seconds, [0.1, 0.5, 0.9, 0.99])
        stats.append(
            [
                split,
                f"{part.height:,}",
                f"{part['session'].n_unique():,}",
                f"{part['item'].n_unique():,}",
                f"{dw.n_rows:,}",
                f"{int(np.sum(dw.seconds == 0))}",
                " / ".join(f"{v:.1f}" for v in q),
                f"{dw.seconds.max():.0f}",
                f"{np.datetime64(int(t.min()), 'ms')} – {np.datetime64(int(t.max()), 'ms')}",
            ]
        )
    check(ds.train.time.max() < ds.test.time.min(), "test clicks come after the training period")
    check(
        all(int(p.group_by("session").len()["len"].min()) >= 2 for p in parts),
        "every session has at least two clicks",
    )
    originals = [
        [f"`{DWELL['folder']}/{DWELL[s][0]}`", f"`{sums[DWELL['folder'] + '/' + DWELL[s][0]]}`"]
        for s in ("train", "test")
    ]
    card = f"""# YOOCHOOSE clicks, 100k sample (RecSys Challenge 2015)

Packaged for selrank by `scripts/package_data.py` (do not edit by hand).

## Source

A sample of the RecSys Challenge 2015 (YOOCHOOSE) click log, 1–8 April 2014, in the
tab-separated `SessionId ItemId Time` form used by session-based recommendation research
(e.g. Bogina & Kuflik, "Incorporating dwell time in session-based recommendations with recurrent
neural networks", 2017): `yoochoose-clicks-100k_train_full.txt` (training period) and
`yoochoose-clicks-100k_test.txt` (later sessions), copied byte for byte from a public repository.

## Terms

{YOOCHOOSE_TERMS} Cite: D. Ben-Shimon et al.,
"RecSys Challenge 2015 and the YOOCHOOSE Dataset", RecSys 2015.

## Contents

`clicks.parquet` (zstd): every click of both files, in file order. Columns: `split`
(`train` / `test`: the file it comes from), `session`, `item`, `time_ms` (Unix time in
milliseconds; the source has millisecond resolution, so this is exact).

`selrank.datasets.load_dwell("{name}")` turns it into per-click dwell rows: dwell = time to the
next click of the session (the last click of a session has none and gives no row), target
`log1p(seconds)`, features from the past only (see `selrank.datasets.dwell_dataset`).

## Counts (measured from the data)

{
        table(
            [
                "split",
                "clicks",
                "sessions",
                "items",
                "dwell rows",
                "0 s dwells",
                "dwell p10 / p50 / p90 / p99 (s)",
                "max dwell (s)",
                "time range (UTC)",
            ],
            stats,
        )
    }

Every test click comes after every training click; every session has at least two clicks.

## Checksums (SHA256)

Original files (verified against `SHA256SUMS` before packaging):

{table(["file", "sha256"], originals)}

Packaged file: `clicks.parquet` `{sha256(parquet)}` ({parquet.stat().st_size:,} bytes).
"""
    (out / name / "README.md").write_text(card)
    print(f"{name}: {frame.height} clicks -> {parquet} ({parquet.stat().st_size} bytes)")
    return [
        name,
        "YOOCHOOSE clicks 100k (dwell time)",
        f"{frame.height:,} clicks",
        f"{ds.train.n_rows + ds.test.n_rows:,} dwell rows",
        8,
        f"`{name}/clicks.parquet`",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=REPO / "datasets")
    args = parser.parse_args(argv)
    sums = verify_checksums(args.source)
    rows = [package_letor(n, spec, args.source, args.out, sums) for n, spec in LETOR.items()]
    rows.append(package_dwell(args.source, args.out, sums))
    index = f"""# Packaged data

Real datasets shipped with selrank as zstd-compressed Parquet, built from the original files by
`scripts/package_data.py` (which verifies their SHA256 checksums first). Each folder has a
dataset card (`README.md`: source, terms, counts measured from the data, checksums). A wheel
carries this folder as `selrank/_packaged_data/`; `SELRANK_DATA_DIR` points selrank elsewhere.

{table(["name", "collection", "rows", "queries / dwell rows", "features", "file"], rows)}

Load with `selrank.datasets.load_letor("mq2008", fold=1)`,
`selrank.datasets.load_letor("ohsumed", fold=1)` and
`selrank.datasets.load_dwell("yoochoose-100k")`.
"""
    (args.out / "README.md").write_text(index)


if __name__ == "__main__":
    main()
