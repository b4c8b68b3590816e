"""The public learning-to-rank benchmarks from a user's download, with a binary cache.

The data sets cannot be redistributed: download them yourself (terms on each page) and point
:func:`load_benchmark` at the extracted folder. It checks the official layout, the feature
count, the labels and the official row and query counts, and converts each text file once to
a binary cache (NumPy ``.npy`` arrays) so that every later load reads arrays instead of
parsing text.

========================  ============================  ======  ==========  =========  ======
name                      layout (under the folder)     folds   rows        queries    feats
========================  ============================  ======  ==========  =========  ======
``"mslr-web10k"``         ``Fold1..5/{train,vali,test}``  5     1,200,192   10,000     136
``"mslr-web30k"``         ``Fold1..5/{train,vali,test}``  5     3,771,125   31,531     136
``"istella-s"``           ``sample/{train,vali,test}``    1     3,408,630   33,018     220
``"mq2007"``              ``Fold1..5/{train,vali,test}``  5     69,623      1,692      46
========================  ============================  ======  ==========  =========  ======

(each file ``.txt`` or ``.txt.gz``). Every fold of a five-fold set holds every query once
(three subsets for training, one for validation, one for test), so the three files of any
fold must add up to the official totals; a truncated or partly extracted file is caught that
way and by a last line without its newline.

:func:`read_svmlight_cached` is the cache on its own, for any SVMlight file.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._files import GZIP_MAGIC
from ._containers import RankingDataset, RankingSplit, float_dtype
from .letor import _check_fold, _pad, _user_files
from .lightgbm_files import is_lightgbm_ranking_file, read_lightgbm_ranking
from .svmlight import read_svmlight

__all__ = [
    "BENCHMARKS",
    "CACHE_DIR_ENV",
    "Benchmark",
    "benchmark_files",
    "cache_dir",
    "load_benchmark",
    "load_ranking_files",
    "load_ranking_folder",
    "ranking_folder_files",
    "ranking_folder_folds",
    "read_svmlight_cached",
]

CACHE_DIR_ENV = "SELRANK_CACHE_DIR"
_CACHE_VERSION = 2
_SPLITS = ("train", "vali", "test")


@dataclass(frozen=True)
class Benchmark:
    """What the official release of a benchmark holds (checked by :func:`load_benchmark`).

    Attributes
    ----------
    name : str
        The key in :data:`BENCHMARKS`.
    title : str
        The release's own name (also a folder name its archive may extract to).
    n_rows, n_queries : int
        Query-document pairs and queries of the whole release (every fold holds all of them).
    n_features : int
        Feature ids run from 1 to this.
    labels : tuple of int
        The relevance grades.
    n_folds : int
        5 (``Fold1`` ... ``Fold5``) or 1 (a single train / vali / test split).
    subdir : str or None
        Folder of a single-split release (``"sample"`` for Istella-S).
    docids : bool
        Whether the lines carry ``#docid = ...`` comments.
    url : str
        Where to download it.
    """

    name: str
    title: str
    n_rows: int
    n_queries: int
    n_features: int
    labels: tuple[int, ...]
    n_folds: int
    subdir: str | None
    docids: bool
    url: str


#: The benchmarks :func:`load_benchmark` knows, by name. Counts from the official releases:
#: MSLR (microsoft.com/en-us/research/project/mslr), Istella-S (its README: 33,018 queries,
#: 3,408,630 pairs, 220 features), LETOR 4.0 (Qin and Liu, arXiv:1306.2597, Table 1).
BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark(
            "mslr-web10k",
            "MSLR-WEB10K",
            1_200_192,
            10_000,
            136,
            (0, 1, 2, 3, 4),
            5,
            None,
            False,
            "https://www.microsoft.com/en-us/research/project/mslr/",
        ),
        Benchmark(
            "mslr-web30k",
            "MSLR-WEB30K",
            3_771_125,
            31_531,
            136,
            (0, 1, 2, 3, 4),
            5,
            None,
            False,
            "https://www.microsoft.com/en-us/research/project/mslr/",
        ),
        Benchmark(
            "istella-s",
            "istella-s-letor",
            3_408_630,
            33_018,
            220,
            (0, 1, 2, 3, 4),
            1,
            "sample",
            False,
            "https://istella.ai/datasets/letor-dataset/",
        ),
        Benchmark(
            "mq2007",
            "MQ2007",
            69_623,
            1_692,
            46,
            (0, 1, 2),
            5,
            None,
            True,
            "https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/",
        ),
    )
}


# ----------------------------------------------------------------------------------------------
# cache
# ----------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    """Default cache folder: ``$SELRANK_CACHE_DIR``, else ``$XDG_CACHE_HOME/selrank``, else
    ``~/.cache/selrank``.

    Examples
    --------
    >>> cache_dir().name in ("selrank",) or "SELRANK_CACHE_DIR" in __import__("os").environ
    True
    """
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "selrank"


def _resolve_cache(cache: Any) -> Path | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return cache_dir()
    if isinstance(cache, str | os.PathLike):
        return Path(cache).expanduser()
    raise TypeError(f"`cache` must be True, False, None or a folder; got {cache!r}")


_HEAD_TAIL = 1 << 20  # bytes of the source hashed at each end
_SAMPLES, _SAMPLE = 64, 4096  # and this many blocks of this size spread over the middle
_BLOCK_WORDS = 1 << 16  # 512 KiB: the checksum sums each block of 8-byte words
_ARRAYS = ("X", "y", "qid", "group", "docid")


def _source_fingerprint(path: Path) -> dict[str, Any]:
    """What identifies the content of ``path`` without reading it all: size, modification and
    change times (the change time moves on every write, even one that puts the old
    modification time back), inode, and a hash of its first and last megabyte and of 64
    blocks spread over the middle. A rewrite that keeps the size is seen by the times and by
    the hash; ``cache=False`` re-parses whatever happened."""
    st = path.stat()
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read(_HEAD_TAIL))
        size = st.st_size
        if size > 2 * _HEAD_TAIL:
            span = size - 2 * _HEAD_TAIL - _SAMPLE
            for k in range(_SAMPLES):
                fh.seek(_HEAD_TAIL + span * k // max(1, _SAMPLES - 1))
                h.update(fh.read(_SAMPLE))
        if size > _HEAD_TAIL:
            fh.seek(max(_HEAD_TAIL, size - _HEAD_TAIL))
            h.update(fh.read(_HEAD_TAIL))
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "sha256_sampled": h.hexdigest(),
    }


def _source_key(path: Path, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The entry's name (path and options) and the full key (with the content fingerprint)."""
    where = {"version": _CACHE_VERSION, "source": str(path.resolve()), **options}
    digest = hashlib.sha256(json.dumps(where, sort_keys=True).encode()).hexdigest()[:16]
    return digest, {**where, "content": _source_fingerprint(path)}


def _entries(root: Path) -> Path:
    return root / f"svmlight-v{_CACHE_VERSION}"


def _entry(root: Path, path: Path, digest: str, meta: dict[str, Any]) -> Path:
    """``<stem>-<path and options>-<content>``: an entry never changes once in place, a
    changed file gets a new one (and the old one is removed when the new one is written)."""
    stem = path.name.replace(".", "_")[:60]
    content = hashlib.sha256(json.dumps(meta["content"], sort_keys=True).encode()).hexdigest()
    return _entries(root) / f"{stem}-{digest}-{content[:16]}"


def _checksum(raw: np.ndarray) -> str:
    """A checksum of a file's bytes at memory speed: the wrapping sum of each 512 KiB block of
    8-byte words (so a damaged, zeroed or moved block changes it), hashed with the tail."""
    n = raw.size // 8
    words = raw[: n * 8].view(np.uint64)
    full = n // _BLOCK_WORDS * _BLOCK_WORDS
    sums = words[:full].reshape(-1, _BLOCK_WORDS).sum(axis=1, dtype=np.uint64)
    h = hashlib.blake2b(digest_size=16)
    h.update(np.int64(raw.size).tobytes())
    h.update(sums.tobytes())
    h.update(words[full:].tobytes())
    h.update(raw[n * 8 :].tobytes())
    return h.hexdigest()


def _save_array(folder: Path, name: str, arr: np.ndarray) -> dict[str, Any]:
    """Write ``arr`` as ``name.npy``; returns what the reader checks: header, size, checksum."""
    file = folder / f"{name}.npy"
    np.save(file, np.ascontiguousarray(arr), allow_pickle=False)
    raw = np.fromfile(file, dtype=np.uint8)
    return {
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "bytes": int(raw.size),
        "checksum": _checksum(raw),
    }


def _map_array(entry: Path, name: str, info: dict[str, Any]) -> np.ndarray:
    """``name.npy`` memory-mapped copy-on-write (writable; the file never changes), after its
    size, checksum and header are checked against the manifest: damage is never served."""
    file = entry / f"{name}.npy"
    if file.stat().st_size != info["bytes"]:
        raise ValueError(f"{file.name} holds {file.stat().st_size} bytes, not {info['bytes']}")
    raw = np.memmap(file, dtype=np.uint8, mode="c")
    if _checksum(raw) != info["checksum"]:
        raise ValueError(f"{file.name}: the checksum differs (the file is damaged)")
    header = io.BytesIO(raw[: min(raw.size, 65536)].tobytes())
    fmt = np.lib.format
    version = fmt.read_magic(header)
    read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read_header(header)
    if list(shape) != info["shape"] or dtype.str != info["dtype"] or fortran:
        raise ValueError(f"{file.name}: the header says {dtype.str} {shape}, not the manifest's")
    offset = header.tell()
    count = int(np.prod(shape))
    data = raw[offset : offset + count * dtype.itemsize]
    if data.size != count * dtype.itemsize:
        raise ValueError(f"{file.name} is shorter than its header says")
    return np.asarray(data).view(dtype).reshape(shape)


def _read_entry(entry: Path, meta: dict[str, Any]) -> RankingSplit | None:
    """The cached split, or None when absent; a damaged entry is reported and None returned
    (then it is rebuilt). Everything read is checked against the manifest (every byte of
    every array by its checksum), and what the parse proved (query order, shapes) is not
    proved again."""
    manifest = entry / "manifest.json"
    try:
        text = manifest.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None  # no entry (or one being replaced by another process: parse instead)
    except OSError as exc:
        _damaged(entry, exc)
        return None
    try:
        stored = json.loads(text)
        if stored.get("key") != meta:
            raise ValueError("the manifest is for another file or other options")
        arrays = stored["arrays"]
        got = {name: _map_array(entry, name, arrays[name]) for name in _ARRAYS if name in arrays}
        X, y, qid, group = got["X"], got["y"], got["qid"], got["group"]
        n, width = int(stored["n_rows"]), int(stored["n_features"])
        if X.shape != (n, width) or y.shape != (n,) or qid.shape != (n,):
            raise ValueError(f"array shapes {X.shape}, {y.shape}, {qid.shape} != ({n}, {width})")
        if int(group.sum()) != n or X.dtype != np.dtype(meta["dtype"]):
            raise ValueError("the group sizes or the dtype differ from the manifest")
    except FileNotFoundError:
        return None  # removed by another process while we read it
    except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
        _damaged(entry, exc)
        return None
    return RankingSplit(
        X=X,
        y=y,
        group=group,
        qid=qid,
        feature_names=tuple(f"f{j + 1}" for j in range(width)),
        docid=got.get("docid"),
    )


def _damaged(entry: Path, exc: BaseException) -> None:
    warnings.warn(
        f"ignoring a damaged cache entry {entry} ({type(exc).__name__}: {exc}); "
        "reading the text file again",
        RuntimeWarning,
        stacklevel=4,
    )
    return None


def _write_entry(entry: Path, meta: dict[str, Any], split: RankingSplit) -> None:
    """Write the arrays and their manifest into a temporary folder and rename it into place:
    another process sees no entry or a whole one, never half of one. A failure to write is a
    warning (the data were parsed; only the next load is slower), never an error."""
    from .._files import default_file_mode

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    except OSError as exc:
        warnings.warn(
            f"cannot write the cache under {entry.parent} ({exc}); the file will be parsed "
            f"again next time (pass cache= a writable folder, or set {CACHE_DIR_ENV})",
            RuntimeWarning,
            stacklevel=4,
        )
        return
    try:
        with contextlib.suppress(OSError):  # mkdtemp creates 0700: the user's umask instead
            os.chmod(tmp, default_file_mode(directory=True))
        arrays = {
            "X": split.X,
            "y": split.y,
            "qid": split.qid,
            "group": np.asarray(split.group, dtype=np.int64),
        }
        if split.docid is not None:
            arrays["docid"] = np.asarray(split.docid, dtype=str)
        doc = {
            "key": meta,
            "n_rows": split.n_rows,
            "n_features": split.n_features,
            "arrays": {name: _save_array(tmp, name, a) for name, a in arrays.items()},
        }
        (tmp / "manifest.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        if entry.exists():  # a damaged entry under the same key: replace it
            shutil.rmtree(entry, ignore_errors=True)
        try:
            os.replace(tmp, entry)
        except OSError:
            if not entry.exists():
                raise
            return  # another process wrote the same entry first: keep that one
        _remove_stale(entry)
    except OSError as exc:
        warnings.warn(
            f"cannot write the cache entry {entry} ({exc}); continuing without it",
            RuntimeWarning,
            stacklevel=4,
        )
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _remove_stale(entry: Path) -> None:
    """Remove the entries of earlier versions of the same file (same path and options)."""
    prefix = entry.name.rsplit("-", 1)[0] + "-"
    for other in entry.parent.glob(f"{glob.escape(prefix)}*"):
        if other != entry and not other.name.startswith("."):
            shutil.rmtree(other, ignore_errors=True)


def read_svmlight_cached(
    path: str | os.PathLike,
    *,
    cache: Any = True,
    n_features: int | None = None,
    dtype: Any = np.float32,
    docids: bool = False,
) -> RankingSplit:
    """:func:`~selrank.datasets.read_svmlight`, converted once to a binary cache.

    The first call parses the text and stores ``X``, ``y``, ``qid``, the group sizes (and the
    docids) as ``.npy`` files with a manifest; later calls read them **memory-mapped**
    (copy-on-write: writable arrays, the files never change) instead of parsing: 72x faster
    (median) on a 1.2M-row MSLR-shaped file in fresh processes on a busy machine, and about
    40x against an idle parse when the entry is in the page cache
    (``benchmarks/read_speed.py --cache``; docs/datasets.md).

    * **Keyed on content**: an entry belongs to the file's absolute path, the options, and the
      file's size, modification and change times, inode and a hash of its first and last
      megabyte and of 64 blocks in between; a file rewritten in place (even to the same size,
      even with its old modification time put back) gets a new entry, and the old one is
      removed.
    * **Verified**: every array file's size, header and checksum (of every byte) are checked
      against the manifest before it is used; a damaged entry is reported with a
      ``RuntimeWarning`` and rebuilt, never served.
    * **Never a reason to fail**: a cache folder that cannot be written gives a warning and the
      parsed data; entries are written to a temporary folder and renamed into place, so a
      concurrent reader sees a whole entry or none.

    Parameters
    ----------
    path : str or path-like
        SVMlight / LETOR file, plain or gzip.
    cache : True, False, None or path-like
        ``True``: the folder :func:`cache_dir`; a path: that folder; ``False`` / ``None``:
        no cache (plain :func:`~selrank.datasets.read_svmlight`).
    n_features : int, optional
        Width of ``X``, as in :func:`~selrank.datasets.read_svmlight`.
    dtype : float32 or float64
    docids : bool
        Keep the ``#docid = ...`` of each line as ``docid`` (LETOR 4.0 files have them).

    Returns
    -------
    RankingSplit

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "t.txt").write_text("2 qid:1 1:0.5 #docid = a\\n0 qid:1 2:4 #docid = b\\n")
    >>> first = read_svmlight_cached(d / "t.txt", cache=d / "cache", docids=True)
    >>> again = read_svmlight_cached(d / "t.txt", cache=d / "cache", docids=True)
    >>> again.X.tolist(), again.docid.tolist()
    ([[0.5, 0.0], [0.0, 4.0]], ['a', 'b'])
    """
    path = Path(path).expanduser()
    dt = float_dtype(dtype)
    root = _resolve_cache(cache)
    if path.is_file() and is_lightgbm_ranking_file(path):  # rank.train + rank.train.query
        return read_lightgbm_ranking(path, n_features=n_features, dtype=dt)
    if root is None or not path.is_file():
        split = read_svmlight(path, n_features=n_features, keep_comments=docids, dtype=dt)
        return _docid_only(split, docids)
    digest, meta = _source_key(
        path, {"dtype": dt.str, "n_features": n_features, "docids": bool(docids)}
    )
    entry = _entry(root, path, digest, meta)
    cached = _read_entry(entry, meta)
    if cached is not None:
        return cached
    split = _docid_only(
        read_svmlight(path, n_features=n_features, keep_comments=docids, dtype=dt), docids
    )
    _write_entry(entry, meta, split)
    return split


def _docid_only(split: RankingSplit, docids: bool) -> RankingSplit:
    if not docids:
        return split
    docid = split.docid if split.docid is not None else np.full(split.n_rows, "", dtype=str)
    return RankingSplit(split.X, split.y, split.group, split.qid, split.feature_names, docid)


# ----------------------------------------------------------------------------------------------
# loaders
# ----------------------------------------------------------------------------------------------
def _find(base: Path, stem: str) -> Path | None:
    for candidate in (base / f"{stem}.txt", base / f"{stem}.txt.gz"):
        if candidate.is_file():
            return candidate
    return None


def _present(folder: Path) -> str:
    if not folder.is_dir():
        return "nothing (no such folder)"
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return shown or "nothing (empty folder)"


def _benchmark_base(spec: Benchmark, root: Path, fold: int) -> Path:
    """The folder holding train / vali / test of ``fold``, trying the extracted layouts."""
    if not root.is_dir():
        raise FileNotFoundError(
            f"{spec.title}: the folder {root} does not exist; download the data set from "
            f"{spec.url} and give the folder it was extracted to"
        )
    inner = spec.subdir if spec.n_folds == 1 else f"Fold{fold}"
    candidates = [root / inner, root / spec.title / inner] if inner else []
    if spec.n_folds == 1:
        candidates.append(root)  # the user gave the `sample` folder itself
    for base in candidates:
        if base.is_dir() and _find(base, "train") is not None:
            return base
    expected = f"{root}/{inner}/train.txt" if inner else f"{root}/train.txt"
    raise FileNotFoundError(
        f"{spec.title}: no {inner or 'data'} under {root}: expected {expected} (or "
        f"{root}/{spec.title}/{inner}/train.txt; each file .txt or .txt.gz). The folder holds: "
        f"{_present(root)}"
    )


def _ends_mid_line(path: Path) -> bool:
    """Whether a plain text file's last byte is not a newline (cut while copying)."""
    with open(path, "rb") as fh:
        if fh.read(2) == GZIP_MAGIC:
            return False  # a cut gzip stream is reported by the reader itself
        fh.seek(0, os.SEEK_END)
        if fh.tell() == 0:
            return False
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) != b"\n"


def _verify(spec: Benchmark, fold: int, files: list[Path], splits: list[RankingSplit]) -> None:
    where = f"{spec.title} fold {fold}" if spec.n_folds > 1 else spec.title
    lo, hi = min(spec.labels), max(spec.labels)  # the grades are whole numbers lo..hi
    for f, s in zip(files, splits):
        bad = (s.y < lo) | (s.y > hi) | (s.y != np.floor(s.y))
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{f}: data row {r + 1} (query {int(s.qid[r])}) has label {s.y[r]:g}; "
                f"{spec.title} labels are {list(spec.labels)}: this is not the official file"
            )
    # one id per query (rows of a query are contiguous): a few thousand values to compare
    ids = [np.unique(s.qid[np.cumsum(s.group) - s.group]) for s in splits]
    for i in range(3):
        for j in range(i + 1, 3):
            both = np.intersect1d(ids[i], ids[j])
            if both.size:
                raise ValueError(
                    f"{where}: query {int(both[0])} is in both {files[i].name} and "
                    f"{files[j].name} ({both.size} shared queries); the official splits are "
                    "query-disjoint"
                )
    rows = sum(s.n_rows for s in splits)
    queries = sum(int(u.size) for u in ids)
    if rows == spec.n_rows and queries == spec.n_queries:
        return
    parts = ", ".join(
        f"{f.name}: {s.n_rows:,} rows / {s.n_queries:,} queries" for f, s in zip(files, splits)
    )
    cut = [f.name for f in files if _ends_mid_line(f)]
    hint = (
        f" {' and '.join(cut)} ends in the middle of a line: the file is truncated." if cut else ""
    )
    raise ValueError(
        f"{where} holds {rows:,} rows in {queries:,} queries ({parts}); the official "
        f"{spec.title} has {spec.n_rows:,} rows in {spec.n_queries:,} queries"
        f"{' in every fold' if spec.n_folds > 1 else ''}.{hint} A file is truncated, partly "
        f"extracted or not the official one: extract the download ({spec.url}) again, or pass "
        "verify=False (command line: --no-verify) to read the files as they are"
    )


def load_benchmark(
    name: str,
    path: str | os.PathLike,
    fold: int = 1,
    *,
    dtype: Any = np.float32,
    cache: Any = True,
    verify: bool = True,
) -> RankingDataset:
    """Load one fold of a public benchmark from the folder a user downloaded and extracted.

    Parameters
    ----------
    name : {"mslr-web10k", "mslr-web30k", "istella-s", "mq2007"}
        See :data:`BENCHMARKS` (case-insensitive; ``_`` works for ``-``).
    path : str or path-like
        The extracted folder: the one holding ``Fold1`` ... ``Fold5`` (MSLR, MQ2007) or
        ``sample`` (Istella-S), or its parent when the archive extracted into a folder of
        the release's name (``MSLR-WEB10K/Fold1``, ``MQ2007/Fold1``). Istella-S also takes
        the ``sample`` folder itself.
    fold : int
        1..5 for the five-fold sets; 1 for Istella-S (one split).
    dtype : float32 or float64
    cache : True, False, None or path-like
        Binary cache of each file, see :func:`read_svmlight_cached`.
    verify : bool
        Check the official counts: every file's labels are the release's grades, the three
        splits are query-disjoint, and together hold the release's rows and queries. The
        feature ids are always checked (an id above the release's count is an error naming
        the file and line).

    Returns
    -------
    RankingDataset
        ``train``, ``validation``, ``test`` with ``X`` of width ``n_features`` of the
        release (MQ2007 also has ``docid``).

    Raises
    ------
    FileNotFoundError
        The folder or one of the three files is missing (the message lists what the folder
        holds and where the data set is downloaded).
    ValueError
        A malformed line (file and line), or with ``verify`` counts that differ from the
        official ones (naming each file's counts and a file that ends mid-line).

    Examples
    --------
    >>> sorted(BENCHMARKS)
    ['istella-s', 'mq2007', 'mslr-web10k', 'mslr-web30k']
    >>> BENCHMARKS["mslr-web10k"].n_rows, BENCHMARKS["istella-s"].n_features
    (1200192, 220)
    """
    spec = _spec(name)
    fold = _check_fold(fold)
    files = benchmark_files(name, path, fold)
    splits = [
        read_svmlight_cached(
            f, cache=cache, n_features=spec.n_features, dtype=dtype, docids=spec.docids
        )
        for f in files
    ]
    if verify:
        _verify(spec, fold, files, splits)
    train, vali, test = splits
    return RankingDataset(spec.name, fold, train, vali, test, source=str(files[0].parent))


def _read_padded(files, cache: Any, n_features: int | None, dtype: Any) -> list:
    """Each file through the cache (None stays None), narrower splits padded to the widest."""
    splits = [
        None
        if f is None
        else read_svmlight_cached(f, cache=cache, n_features=n_features, dtype=dtype)
        for f in files
    ]
    width = max(s.n_features for s in splits if s is not None)
    return [None if s is None else _pad(s, width) for s in splits]


def load_ranking_folder(
    path: str | os.PathLike,
    fold: int = 1,
    *,
    dtype: Any = np.float32,
    cache: Any = True,
    n_features: int | None = None,
) -> RankingDataset:
    """One fold of any LETOR / MSLR-style folder, through the binary cache.

    The layouts of :func:`~selrank.datasets.load_letor` with ``path=``: ``Fold{k}/{train,
    vali,test}.txt``, Yahoo's ``set{k}.{train,valid,test}.txt``, or ``train.txt`` directly
    in the folder (fold 1); each file plain or ``.gz``. ``validation`` is ``None`` when the
    folder has no validation file. Splits narrower than the widest are padded with zero
    columns (``n_features=`` fixes the width). No official counts are checked: for the known
    benchmarks use :func:`load_benchmark`.
    """
    fold = _check_fold(fold)
    root = Path(path).expanduser()
    train, vali, test = _read_padded(_user_files(root, fold), cache, n_features, dtype)
    if train is None or test is None:  # pragma: no cover - _user_files requires both
        raise FileNotFoundError(f"{root}: fold {fold} lacks a train or test file")
    return RankingDataset(root.name, fold, train, vali, test, source=str(root))


def benchmark_files(name: str, path: str | os.PathLike, fold: int = 1) -> list[Path]:
    """The train / vali / test files :func:`load_benchmark` would read, without reading them.

    Raises the same ``FileNotFoundError`` as :func:`load_benchmark` for a missing folder or
    file, so a caller can check every fold before any work starts.
    """
    spec = _spec(name)
    fold = _check_fold(fold)
    if fold > spec.n_folds:
        raise ValueError(f"{spec.title} has {spec.n_folds} split(s), not fold {fold}")
    base = _benchmark_base(spec, Path(path).expanduser(), fold)
    files: list[Path] = []
    for stem in _SPLITS:
        f = _find(base, stem)
        if f is None:
            raise FileNotFoundError(
                f"{spec.title}: {base} lacks {stem}.txt (or {stem}.txt.gz); it holds: "
                f"{_present(base)}. Extract the whole download ({spec.url})"
            )
        files.append(f)
    return files


def ranking_folder_files(path: str | os.PathLike, fold: int = 1) -> list[Path | None]:
    """Train / validation / test files of ``fold`` in a LETOR-style folder (validation may be
    ``None``); the layouts of :func:`load_ranking_folder`. Raises ``FileNotFoundError``."""
    return list(_user_files(Path(path).expanduser(), _check_fold(fold)))


def ranking_folder_folds(path: str | os.PathLike) -> list[int]:
    """The folds 1..5 present in a LETOR-style folder (``Fold{k}`` folders or Yahoo's
    ``set{k}`` files; a folder holding ``train.txt`` directly is fold 1)."""
    found = []
    for fold in range(1, 6):
        try:
            ranking_folder_files(path, fold)
        except FileNotFoundError:
            continue
        found.append(fold)
    return found


def load_ranking_files(
    train: str | os.PathLike,
    validation: str | os.PathLike | None,
    test: str | os.PathLike,
    *,
    dtype: Any = np.float32,
    cache: Any = True,
    n_features: int | None = None,
) -> RankingDataset:
    """Three SVMlight files (plain or gzip) as one :class:`RankingDataset` (fold ``None``).

    Splits narrower than the widest are padded with zero columns (``n_features=`` fixes
    the width); each file goes through the binary cache (:func:`read_svmlight_cached`).
    """
    first = Path(train).expanduser()
    paths = [first, None if validation is None else Path(validation), Path(test)]
    for what, p in zip(("train", "validation", "test"), paths):
        if p is not None and not p.is_file():
            raise FileNotFoundError(f"the {what} file {p} does not exist")
    tr, va, te = _read_padded(paths, cache, n_features, dtype)
    if tr is None or te is None:  # pragma: no cover - both paths are required
        raise ValueError("load_ranking_files needs a train and a test file")
    return RankingDataset(first.stem, None, tr, va, te, source=str(first.parent))


def _spec(name: str) -> Benchmark:
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string; got {type(name).__name__}")
    key = name.lower().replace("_", "-")
    if key not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}")
    return BENCHMARKS[key]
