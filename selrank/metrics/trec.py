"""TREC runs and qrels: read, write, build from model scores, and evaluate like trec_eval.

File formats (whitespace-separated, one judgment or retrieved document per line; blank lines
and lines starting with ``#`` are skipped, as trec_eval does; a UTF-8 byte-order mark at the
start is dropped; plain text or gzip, recognised by its magic bytes whatever the file name):

qrels
    ``qid iter docno rel`` -- ``iter`` is ignored, ``rel`` is an integer; negative values
    (e.g. ``-2`` for spam) are judged non-relevant with gain 0, as in trec_eval.
run
    ``qid Q0 docno rank score tag`` -- ``Q0`` and ``rank`` are ignored for evaluation:
    trec_eval ranks by ``score``. ``tag`` names the system.

In memory both are read-only mappings ``qid -> {docno: value}`` (:class:`Qrels`,
:class:`Run`), the layout of pytrec_eval and ranx; ``.to_dict()`` gives plain dicts for
those libraries.

:func:`evaluate_run` reproduces trec_eval (checked against pytrec_eval on thousands of
random queries, ``tests/metrics/test_trec.py``) through the engine that evaluates arrays
(:mod:`selrank.metrics._engine`); see its docstring for the conventions.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._array import Array
from .._files import open_write
from .._groups import Groups, as_groups
from . import _engine
from ._kernels import rank_groups, segment_sum
from .names import MetricSpec, parse_metrics
from .ranking import (
    GAINS,
    NO_RELEVANT,
    Judgments,
    _as_vector,
    _check_choice,
    _ideal_dcg,
    _require_polars,
)

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "Qrels",
    "Run",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
    "labels_to_qrels",
    "scores_to_run",
    "evaluate_run",
]

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark (Windows editors write it)
_QRELS_LAYOUT = "'qid iter docno rel'"
_RUN_LAYOUT = "'qid Q0 docno rank score tag'"


# --------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------


_WHITESPACE = re.compile(r"[ \t\n\r\x0b\x0c]")  # what separates fields (C's isspace)


def _check_id(value: Any, what: str) -> str:
    """An id or tag must be a non-empty string without whitespace, to survive a TREC file."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str; got {type(value).__name__} {value!r}")
    if not value or _WHITESPACE.search(value):
        raise ValueError(f"{what} must be non-empty and contain no whitespace; got {value!r}")
    return value


def _check_qid(value: Any) -> str:
    _check_id(value, "a query id")
    if value.startswith("#"):
        raise ValueError(f"a query id must not start with '#' (a comment line); got {value!r}")
    return value


def _check_docnos(qid: str, docs: Mapping) -> None:
    """Check all document ids of a query at once; name the first bad one."""
    try:
        joined = "".join(docs)  # ids without whitespace join into a string without any
    except TypeError:
        joined = None
    if joined is None or "" in docs or _WHITESPACE.search(joined):
        for d in docs:
            _check_id(d, f"a document id of query {qid!r}")


def _check_rel(value: Any, qid: str, docno: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer | float | np.floating):
        raise TypeError(
            f"relevance of document {docno!r} for query {qid!r} must be an int; "
            f"got {type(value).__name__} {value!r}"
        )
    if isinstance(value, float | np.floating) and not (
        math.isfinite(value) and float(value).is_integer()
    ):
        raise ValueError(
            f"relevance of document {docno!r} for query {qid!r} must be an integer; "
            f"got {float(value)!r}"
        )
    return int(value)


def _check_score(value: Any, qid: str, docno: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | np.integer | float | np.floating):
        raise TypeError(
            f"score of document {docno!r} for query {qid!r} must be a real number; "
            f"got {type(value).__name__} {value!r}"
        )
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"score of document {docno!r} for query {qid!r} is NaN")
    return value


def _freeze(data: dict[str, dict[str, Any]]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({q: MappingProxyType(d) for q, d in data.items()})


class _TrecMapping(Mapping):
    """Read-only ``qid -> {docno: value}`` mapping shared by :class:`Qrels` and :class:`Run`."""

    data: Mapping[str, Mapping[str, Any]]

    def __getitem__(self, qid: str) -> Mapping[str, Any]:
        return self.data[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """A plain nested-dict copy (what pytrec_eval, ranx and ir_measures take)."""
        return {q: dict(d) for q, d in self.data.items()}

    @property
    def n_queries(self) -> int:
        return len(self.data)


@dataclass(frozen=True, eq=False, repr=False)
class Qrels(_TrecMapping):
    """Relevance judgments: a read-only mapping ``qid -> {docno: rel}`` with integer ``rel``.

    Build from a nested mapping (validated: string ids without whitespace, integer
    relevance, at least one judgment per query), with :func:`read_qrels` or with
    :func:`labels_to_qrels`. ``rel >= 1`` is relevant for binary measures (trec_eval's
    default relevance level); negative values are judged non-relevant.

    Attributes
    ----------
    data : mapping of str -> mapping of str -> int
    n_queries, n_judged, n_relevant : int
        Queries, judgments, and judgments with ``rel >= 1``.

    Examples
    --------
    >>> qrels = Qrels({"q1": {"d1": 2, "d2": 0}, "q2": {"d7": 1}})
    >>> qrels
    Qrels(n_queries=2, n_judged=3, n_relevant=2)
    >>> qrels["q1"]["d1"], sorted(qrels)
    (2, ['q1', 'q2'])
    """

    data: Mapping[str, Mapping[str, int]]
    n_judged: int = field(init=False)
    n_relevant: int = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.data, Mapping):
            raise TypeError(
                f"Qrels takes a mapping qid -> {{docno: rel}}; got {type(self.data).__name__}"
            )
        checked: dict[str, dict[str, int]] = {}
        for qid, docs in self.data.items():
            _check_qid(qid)
            if not isinstance(docs, Mapping):
                raise TypeError(
                    f"judgments of query {qid!r} must be a mapping docno -> rel; "
                    f"got {type(docs).__name__}"
                )
            if not docs:
                raise ValueError(f"query {qid!r} has no judgments; a qrels query needs >= 1")
            _check_docnos(qid, docs)
            if set(map(type, docs.values())) <= {int}:  # the common case, checked in bulk
                checked[qid] = dict(docs)
            else:
                checked[qid] = {d: _check_rel(r, qid, d) for d, r in docs.items()}
        self._set(checked)

    def _set(self, data: dict[str, dict[str, int]]) -> None:
        object.__setattr__(self, "data", _freeze(data))
        object.__setattr__(self, "n_judged", sum(len(d) for d in data.values()))
        rels = chain.from_iterable(d.values() for d in data.values())
        n_rel = sum(map((1).__le__, rels))  # rel >= 1, counted in C (the values are ints)
        object.__setattr__(self, "n_relevant", n_rel)

    @classmethod
    def _trusted(cls, data: dict[str, dict[str, int]]) -> Qrels:
        """Wrap data a reader has already checked, without checking it again."""
        self = object.__new__(cls)
        self._set(data)
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Qrels):
            return NotImplemented
        return self.data == other.data

    def __reduce__(self):  # read-only views do not pickle; their contents do
        return self._trusted, (self.to_dict(),)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Qrels(n_queries={self.n_queries}, n_judged={self.n_judged}, "
            f"n_relevant={self.n_relevant})"
        )


@dataclass(frozen=True, eq=False, repr=False)
class Run(_TrecMapping):
    """Retrieved documents: a read-only mapping ``qid -> {docno: score}``, and a ``tag``.

    Build from a nested mapping (validated: string ids without whitespace, real non-NaN
    scores), with :func:`read_run` or with :func:`scores_to_run`. Only the scores order the
    documents (the rank column of a run file is not kept, as trec_eval ignores it). A query
    mapped to no document is the same as an absent query.

    Attributes
    ----------
    data : mapping of str -> mapping of str -> float
    tag : str
        The system's name, the last column of a run file.
    n_queries, n_docs : int

    Examples
    --------
    >>> run = Run({"q1": {"d1": 1.5, "d3": 0.2}, "q2": {"d7": -1.0}}, tag="bm25")
    >>> run
    Run(tag='bm25', n_queries=2, n_docs=3)
    >>> dict(run["q1"])
    {'d1': 1.5, 'd3': 0.2}
    """

    data: Mapping[str, Mapping[str, float]]
    tag: str = "selrank"
    n_docs: int = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.data, Mapping):
            raise TypeError(
                f"Run takes a mapping qid -> {{docno: score}}; got {type(self.data).__name__}"
            )
        _check_id(self.tag, "the run tag")
        checked: dict[str, dict[str, float]] = {}
        for qid, docs in self.data.items():
            _check_qid(qid)
            if not isinstance(docs, Mapping):
                raise TypeError(
                    f"scores of query {qid!r} must be a mapping docno -> score; "
                    f"got {type(docs).__name__}"
                )
            _check_docnos(qid, docs)
            values = list(docs.values())
            if set(map(type, values)) <= {float, int}:  # the common case, checked in bulk
                scores = np.array(values, dtype=np.float64)
                if not np.isnan(scores).any():
                    checked[qid] = dict(zip(docs, scores.tolist()))
                    continue
            checked[qid] = {d: _check_score(s, qid, d) for d, s in docs.items()}
        self._set(checked, self.tag)

    def _set(self, data: dict[str, dict[str, float]], tag: str) -> None:
        object.__setattr__(self, "data", _freeze(data))
        object.__setattr__(self, "tag", tag)
        object.__setattr__(self, "n_docs", sum(len(d) for d in data.values()))

    @classmethod
    def _trusted(cls, data: dict[str, dict[str, float]], tag: str) -> Run:
        """Wrap data a reader has already checked, without checking it again."""
        self = object.__new__(cls)
        self._set(data, tag)
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        return self.tag == other.tag and self.data == other.data

    def __reduce__(self):  # read-only views do not pickle; their contents do
        return self._trusted, (self.to_dict(), self.tag)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Run(tag={self.tag!r}, n_queries={self.n_queries}, n_docs={self.n_docs})"


def _ranx(x: Any, kind: str) -> bool:
    """Whether ``x`` is a ranx ``Qrels`` / ``Run`` (duck-typed: ranx is not a dependency)."""
    cls = type(x)
    return (
        cls.__name__ == kind
        and cls.__module__.split(".")[0] == "ranx"
        and callable(getattr(x, "to_dict", None))
    )


def _as_qrels(qrels: Any) -> Qrels:
    """Qrels from a :class:`Qrels`, a ranx ``Qrels``, a nested mapping or a qrels file's path."""
    if isinstance(qrels, str | os.PathLike):
        return read_qrels(qrels)
    if _ranx(qrels, "Qrels"):
        return Qrels(qrels.to_dict())
    return qrels if isinstance(qrels, Qrels) else Qrels(qrels)


def _as_run(run: Any) -> Run:
    """A run from a :class:`Run`, a ranx ``Run`` (its ``name`` is the tag), a nested mapping or
    a run file's path."""
    if isinstance(run, str | os.PathLike):
        return read_run(run)
    if _ranx(run, "Run"):
        name = getattr(run, "name", None)
        tag = name if isinstance(name, str) and name and not _WHITESPACE.search(name) else "ranx"
        docs = {q: d for q, d in run.to_dict().items() if d}  # ranx keeps empty queries
        return Run(docs, tag=tag)
    return run if isinstance(run, Run) else Run(run)


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


_BLOCK = 1 << 22  # bytes read at a time: much faster than line-by-line reads of gzip data


def _shown(raw: bytes) -> str:
    line = raw.decode("utf-8", "replace").rstrip("\r")
    return repr(line if len(line) <= 120 else line[:117] + "...")


def _fail(path: Path, lineno: int, raw: bytes, why: str) -> ValueError:
    return ValueError(f"{path}, line {lineno}: {why}; the line reads {_shown(raw)}")


_MAX_LINE = _BLOCK  # longest line accepted: a TREC line holds a few short fields


class _LongLine(Exception):
    """A line longer than ``_MAX_LINE`` (raised by :func:`_raw_lines` with its line number)."""


_NON_EMPTY = re.compile(rb"[^\n]+")


def _raw_lines(fh) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of the non-empty lines of a binary stream, without ``\\n``.

    Linear time and bounded memory whatever the line lengths: the pieces of an unfinished
    line are kept in a list and joined once, and a line longer than ``_MAX_LINE`` raises
    :class:`_LongLine` instead of growing without bound. Runs of empty lines are skipped
    and counted in C (``re.finditer``, ``bytes.count``), so a file of newlines reads at the
    speed of its decompression rather than at one Python step per line.
    """
    pending: list[bytes] = []  # pieces of the unfinished line
    size = 0
    lineno = 1  # number of the line that starts with `pending` (or the next block)
    while block := fh.read(_BLOCK):
        cut = block.find(b"\n")
        if cut < 0:
            pending.append(block)
            size += len(block)
            if size > _MAX_LINE:
                raise _LongLine(lineno)
            continue
        first = block[:cut]
        if pending:
            pending.append(first)
            first = b"".join(pending)
            if len(first) > _MAX_LINE:
                raise _LongLine(lineno)
        if first:
            yield lineno, first
        lineno += 1
        last = block.rfind(b"\n")
        pos = cut + 1  # start of line `lineno`
        for m in _NON_EMPTY.finditer(block, pos, last):
            lineno += block.count(b"\n", pos, m.start())
            pos = m.start()
            yield lineno, m.group()
        lineno += block.count(b"\n", pos, last + 1)
        tail = block[last + 1 :]
        pending, size = [tail], len(tail)
    if size:
        yield lineno, b"".join(pending)


def _lines(path: Path, layout: str) -> Iterator[tuple[int, bytes, list[bytes]]]:
    """``(line number, line, fields)`` of the data lines of a plain or gzip text file.

    Fields are split on ASCII whitespace, as trec_eval splits them (C's ``isspace``); blank
    lines and lines whose first field starts with ``#`` are skipped.
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist (expected a file of {layout} lines)")
    with open(path, "rb") as fh:
        compressed = fh.read(2) == _GZIP_MAGIC
    lineno = 0
    try:
        with gzip.open(path, "rb") if compressed else open(path, "rb") as fh:
            for lineno, raw in _raw_lines(fh):
                if lineno == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]  # a UTF-8 byte-order mark is not part of the qid
                fields = raw.split()
                if fields and not fields[0].startswith(b"#"):
                    yield lineno, raw, fields
    except _LongLine as exc:
        raise ValueError(
            f"{path}, line {exc.args[0]}: the line is longer than {_MAX_LINE >> 20} MiB (no "
            f"line break within it); expected short {layout} lines: is this a TREC file?"
        ) from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(
            f"{path}: the gzip data is truncated or corrupt after line {lineno} ({exc})"
        ) from None


def _first_line(path: Path, layout: str, qid: bytes, docno: bytes) -> int:
    """Line of the first ``qid ... docno ...`` entry (only used to report a duplicate)."""
    for lineno, _, fields in _lines(path, layout):
        if fields[0] == qid and fields[2] == docno:
            return lineno
    return -1  # pragma: no cover - the duplicate was read from this file


# Numbers as trec_eval reads them: C's atol (the relevance) and atof (the score) take the longest
# numeric prefix of a field. A field is accepted only where that prefix is the whole field, so
# every value read here is the value trec_eval reads; anything else ('1_0', which Python's int()
# reads as 10 and trec_eval as 1; '2e1', which atol reads as 2; '1.5'; 'high') is refused.
_REL = re.compile(rb"([+-]?[0-9]+)(?:\.0*)?")
_RANK = re.compile(rb"[+-]?[0-9]+")
_SCORE = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity)", re.I
)
_ATOL = re.compile(rb"[+-]?[0-9]+")
_ATOF = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|infinity|inf|nan)", re.I
)


def _trec_eval_reads(text: bytes, integer: bool) -> str:
    """What trec_eval's atol / atof make of ``text`` (the longest numeric prefix), for messages."""
    m = (_ATOL if integer else _ATOF).match(text)
    if m is None:
        return "0"
    return str(int(m.group())) if integer else repr(float(m.group()))


def _utf8(field: bytes) -> str:
    return field.decode("utf-8", "replace")


# The fast path of the readers: a whole block of lines split at once (``bytes.split``, NumPy for
# the per-line field counts, one join for the UTF-8 decoding, C-level ``map`` for the numbers)
# instead of one Python step per line. It accepts exactly what the line-by-line reader accepts
# and returns the same mapping; on anything it does not handle (a comment line, a malformed
# line, a duplicate, text that is not UTF-8, damaged gzip) it returns None and the line-by-line
# reader reads the file again, to return the result or to name the bad line.

_FAST_BLOCK = 1 << 18  # bytes split at once: small enough for the tokens to stay in cache
_ISSPACE = np.zeros(256, dtype=bool)
_ISSPACE[list(b" \t\n\r\x0b\x0c")] = True  # C's isspace, what bytes.split() splits on
_DIGITS = b"0123456789"
_NUMBER_CHARS = b"0123456789.eE+-"  # of a score that float() reads as _SCORE does


class _Unhandled(Exception):
    """Raised inside the fast path: leave the file to the line-by-line reader."""


def _blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes (decompressed) in blocks of whole lines, without a leading BOM."""
    with open(path, "rb") as fh:
        compressed = fh.read(2) == _GZIP_MAGIC
    carry = b""
    first = True
    try:
        with gzip.open(path, "rb") if compressed else open(path, "rb") as fh:
            while block := fh.read(_FAST_BLOCK):
                if first and block.startswith(_BOM):
                    block = block[len(_BOM) :]
                first = False
                cut = block.rfind(b"\n")
                if cut < 0:
                    if len(carry) + len(block) > _MAX_LINE:
                        raise _Unhandled
                    carry += block
                    continue
                yield carry + block[: cut + 1]
                carry = block[cut + 1 :]
    except (OSError, EOFError, zlib.error):
        raise _Unhandled from None
    if carry:
        yield carry


def _split_block(data: bytes, n_fields: int) -> list[bytes]:
    """The fields of the data lines of ``data`` (whole lines), when every non-blank line has
    ``n_fields`` fields, none is a comment and none is longer than ``_MAX_LINE``."""
    tokens = data.split()
    if not tokens:
        return tokens
    if len(tokens) % n_fields:
        raise _Unhandled
    arr = np.frombuffer(data, dtype=np.uint8)
    if not _single_spaced(data, arr, len(tokens), n_fields):
        _check_fields(arr, len(tokens), n_fields)
    return tokens


def _single_spaced(data: bytes, arr: np.ndarray, n_tokens: int, n_fields: int) -> bool:
    """Whether ``data`` is lines of ``n_fields`` fields separated by one space each, each line
    ended by a newline (the usual layout, checked in a few passes); False when it is not."""
    if data[-1:] != b"\n" or any(c in data for c in (b"\t", b"\r", b"\x0b", b"\x0c")):
        return False
    seps = np.flatnonzero((arr == 32) | (arr == 10))  # the only whitespace left
    if seps.size != n_tokens or seps[0] == 0 or np.any(np.diff(seps) == 1):
        return False  # a blank line, a leading, trailing or double space
    by_line = arr[seps].reshape(-1, n_fields)
    if np.any(by_line[:, -1] != 10) or np.any(by_line[:, :-1] != 32):
        return False  # some line has another number of fields
    ends = seps[n_fields - 1 :: n_fields]
    if np.diff(ends).max(initial=0) > _MAX_LINE or ends[0] > _MAX_LINE:
        raise _Unhandled
    if arr[0] == ord("#") or np.any(arr[ends[:-1] + 1] == ord("#")):
        raise _Unhandled  # a comment line
    return True


def _check_fields(arr: np.ndarray, n_tokens: int, n_fields: int) -> None:
    """Any layout (any ASCII whitespace, blank lines): every non-blank line of ``arr`` has
    ``n_fields`` fields, none is a comment and none is longer than ``_MAX_LINE``."""
    space = _ISSPACE[arr]
    starts = np.flatnonzero(space[:-1] > space[1:]) + 1  # a field after whitespace
    if not space[0]:
        starts = np.concatenate(([0], starts))
    if starts.size != n_tokens:  # pragma: no cover - the same split twice
        raise _Unhandled
    newlines = np.flatnonzero(arr == 10)
    # fields before each newline: the count of each line is the difference
    before = np.searchsorted(starts, newlines)
    counts = np.diff(np.concatenate(([0], before, [starts.size])))
    if np.any((counts != 0) & (counts != n_fields)):
        raise _Unhandled
    bounds = np.concatenate(([-1], newlines, [arr.size]))
    if np.diff(bounds).max() > _MAX_LINE:
        raise _Unhandled
    if np.any(arr[starts[::n_fields]] == ord("#")):  # a comment line
        raise _Unhandled


def _decode_all(fields: list[bytes]) -> list[str]:
    """UTF-8 decoding of many fields at once (fields hold no newline)."""
    try:
        return b"\n".join(fields).decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise _Unhandled from None


def _check_all(fields: list[bytes], chars: bytes, pattern: re.Pattern) -> None:
    """Every field made only of ``chars`` (checked at once), or else matching ``pattern``."""
    if b"".join(fields).translate(None, chars) and not all(map(pattern.fullmatch, fields)):
        raise _Unhandled


def _fast_read(path: Path, n_fields: int, value) -> tuple[dict[str, dict[str, Any]], list[bytes]]:
    """``(qid -> {docno: value}, the first line's fields)`` read by blocks; raises _Unhandled.

    ``value(tokens)`` checks and converts the value fields of a block (a list of numbers)."""
    from itertools import groupby

    data: dict[str, dict[str, Any]] = {}
    first: list[bytes] | None = None
    for block in _blocks(path):
        tokens = _split_block(block, n_fields)
        if not tokens:
            continue
        if first is None:
            first = tokens[:n_fields]
        docs = _decode_all(tokens[2::n_fields])
        values = value(tokens)
        qids = tokens[0::n_fields]
        a = 0
        for qid, lines in groupby(qids):  # the lines of a query usually come together
            b = a + len(list(lines))
            try:
                name = qid.decode("utf-8")
            except UnicodeDecodeError:
                raise _Unhandled from None
            fresh = dict(zip(docs[a:b], values[a:b]))
            if len(fresh) != b - a:  # a duplicate: the line-by-line reader names it
                raise _Unhandled
            known = data.get(name)
            if known is None:
                data[name] = fresh
            else:
                size = len(known)
                known.update(fresh)
                if len(known) != size + len(fresh):
                    raise _Unhandled
            a = b
    if first is None:
        raise _Unhandled
    return data, first


def _qrels_values(tokens: list[bytes]) -> list[int]:
    rels = tokens[3::4]
    if b"".join(rels).translate(None, _DIGITS + b"+-"):
        matches = list(map(_REL.fullmatch, rels))
        if not all(matches):
            raise _Unhandled
        return [int(m.group(1)) for m in matches if m is not None]
    try:
        return list(map(int, rels))  # digits and signs: int() reads what _REL reads, or fails
    except ValueError:
        raise _Unhandled from None


def _run_values(tokens: list[bytes]) -> list[float]:
    _check_all(tokens[3::6], _DIGITS, _RANK)
    scores = tokens[4::6]
    _check_all(scores, _NUMBER_CHARS, _SCORE)
    try:
        # of these characters, float() reads exactly the numbers _SCORE accepts (no NaN)
        return list(map(float, scores))
    except ValueError:
        raise _Unhandled from None


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read a TREC qrels file (``qid iter docno rel``), plain or gzip-compressed.

    Parameters
    ----------
    path : str or path-like
        Plain text or gzip (recognised by its magic bytes, whatever the name). Blank lines
        and lines starting with ``#`` are skipped.

    Returns
    -------
    Qrels
        ``qid -> {docno: rel}`` in file order.

    Raises
    ------
    ValueError
        Naming the file and line: a line without exactly 4 fields, a relevance that is not an
        integer (``1.0`` is accepted; ``1.5``, ``1_0`` and ``high``, which trec_eval
        reads as 1, 1 and 0, are not), a document judged twice
        for the same query (trec_eval refuses those too), a file with no judgment, text that
        is not UTF-8, or truncated or corrupt gzip data.
    FileNotFoundError
        When ``path`` does not exist.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.qrels"
    >>> _ = f.write_text("q1 0 d1 2\\nq1 0 d2 0\\nq2 0 d7 1\\n")
    >>> qrels = read_qrels(f)
    >>> qrels
    Qrels(n_queries=2, n_judged=3, n_relevant=2)
    >>> qrels.to_dict()
    {'q1': {'d1': 2, 'd2': 0}, 'q2': {'d7': 1}}
    """
    path = Path(path)
    if path.is_file():
        try:
            return Qrels._trusted(_fast_read(path, 4, _qrels_values)[0])
        except _Unhandled:
            pass  # read again line by line: the result, or the message naming the bad line
    data: dict[str, dict[str, int]] = {}
    last_qid, docs = None, {}
    for lineno, raw, fields in _lines(path, _QRELS_LAYOUT):
        if len(fields) != 4:
            why = f"expected 4 fields {_QRELS_LAYOUT}, got {len(fields)}"
            raise _fail(path, lineno, raw, why)
        qid, _, docno, rel_text = fields
        try:
            if qid != last_qid:  # lines of a query usually come together: decode once
                docs = data.setdefault(qid.decode("utf-8"), {})
                last_qid = qid
            doc = docno.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(path, lineno, raw, f"not valid UTF-8 text ({exc.reason})") from None
        m = _REL.fullmatch(rel_text)
        if m is None:
            why = (
                f"the relevance (4th field) must be an integer, got {_utf8(rel_text)!r} "
                f"(trec_eval would read it as {_trec_eval_reads(rel_text, True)})"
            )
            raise _fail(path, lineno, raw, why)
        rel = int(m.group(1))
        if doc in docs:
            first = _first_line(path, _QRELS_LAYOUT, qid, docno)
            raise ValueError(
                f"{path}, line {lineno}: document {doc!r} is judged twice for query "
                f"{_utf8(qid)!r} (first on line {first}); trec_eval refuses duplicate judgments"
            )
        docs[doc] = rel
    if not data:
        raise ValueError(f"{path} holds no judgments (expected lines {_QRELS_LAYOUT})")
    return Qrels._trusted(data)


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run file (``qid Q0 docno rank score tag``), plain or gzip-compressed.

    Parameters
    ----------
    path : str or path-like
        Plain text or gzip (recognised by its magic bytes, whatever the name). Blank lines
        and lines starting with ``#`` are skipped.

    Returns
    -------
    Run
        ``qid -> {docno: score}`` in file order; ``tag`` is the tag of the first line.
        ``Q0`` and the rank are checked for shape only and not kept: trec_eval ranks by
        score.

    Raises
    ------
    ValueError
        Naming the file and line: a line without exactly 6 fields (trec_eval would ignore
        fields after the tag; here they are refused, as they usually mean a shifted
        column), a rank that is not an integer, a score that is not a number or is NaN, a
        document retrieved twice for the same query (trec_eval refuses it), a file with no
        result, text that is not UTF-8, or truncated or corrupt gzip data.
    FileNotFoundError
        When ``path`` does not exist.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.run"
    >>> _ = f.write_text("q1 Q0 d1 1 1.5 bm25\\nq1 Q0 d3 2 0.2 bm25\\nq2 Q0 d7 1 -1 bm25\\n")
    >>> run = read_run(f)
    >>> run
    Run(tag='bm25', n_queries=2, n_docs=3)
    >>> run.to_dict()
    {'q1': {'d1': 1.5, 'd3': 0.2}, 'q2': {'d7': -1.0}}
    """
    path = Path(path)
    if path.is_file():
        try:
            fast, first_fields = _fast_read(path, 6, _run_values)
            return Run._trusted(fast, first_fields[5].decode("utf-8"))
        except (_Unhandled, UnicodeDecodeError):
            pass  # read again line by line: the result, or the message naming the bad line
    data: dict[str, dict[str, float]] = {}
    tag = None
    last_qid, docs = None, {}
    for lineno, raw, fields in _lines(path, _RUN_LAYOUT):
        if len(fields) != 6:
            raise _fail(path, lineno, raw, f"expected 6 fields {_RUN_LAYOUT}, got {len(fields)}")
        qid, _, docno, rank_text, score_text, tag_text = fields
        try:
            if qid != last_qid:  # lines of a query usually come together: decode once
                docs = data.setdefault(qid.decode("utf-8"), {})
                last_qid = qid
            doc = docno.decode("utf-8")
            if tag is None:
                tag = tag_text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(path, lineno, raw, f"not valid UTF-8 text ({exc.reason})") from None
        if _RANK.fullmatch(rank_text) is None:
            why = f"the rank (4th field) must be an integer, got {_utf8(rank_text)!r}"
            raise _fail(path, lineno, raw, why)
        if _SCORE.fullmatch(score_text) is None:
            why = (
                f"the score (5th field) must be a number, got {_utf8(score_text)!r} "
                f"(trec_eval would read it as {_trec_eval_reads(score_text, False)})"
            )
            raise _fail(path, lineno, raw, why)
        score = float(score_text)
        if doc in docs:
            first = _first_line(path, _RUN_LAYOUT, qid, docno)
            raise ValueError(
                f"{path}, line {lineno}: document {doc!r} is retrieved twice for query "
                f"{_utf8(qid)!r} (first on line {first}); trec_eval refuses duplicate documents "
                "in a run"
            )
        docs[doc] = score
    if tag is None:
        raise ValueError(f"{path} holds no results (expected lines {_RUN_LAYOUT})")
    return Run._trusted(data, tag)


# --------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------


def _write_text(path: Path, chunks: Iterator[str]) -> None:
    """Write text chunks as UTF-8; gzip (reproducible: no timestamp) when ``path`` ends in .gz
    (the package's one rule, :mod:`selrank._files`); the file appears once complete."""
    with open_write(path) as fh:
        for chunk in chunks:
            fh.write(chunk.encode("utf-8"))


def _trec_order(docs: Mapping[str, float]) -> list[str]:
    """Documents by decreasing score, ties by decreasing docno (trec_eval's order)."""
    return sorted(sorted(docs, reverse=True), key=docs.__getitem__, reverse=True)


def write_qrels(qrels: Qrels | Mapping, path: str | os.PathLike) -> None:
    """Write qrels as ``qid 0 docno rel`` lines; gzip-compressed when ``path`` ends in ``.gz``.

    Parameters
    ----------
    qrels : Qrels or mapping qid -> {docno: rel}
    path : str or path-like

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.qrels"
    >>> write_qrels({"q1": {"d1": 2, "d2": 0}}, f)
    >>> print(f.read_text(), end="")
    q1 0 d1 2
    q1 0 d2 0
    >>> read_qrels(f) == Qrels({"q1": {"d1": 2, "d2": 0}})
    True
    """
    qrels = _as_qrels(qrels)
    chunks = (
        "".join(f"{qid} 0 {docno} {rel}\n" for docno, rel in docs.items())
        for qid, docs in qrels.items()
    )
    _write_text(Path(path), chunks)


def write_run(run: Run | Mapping, path: str | os.PathLike, *, tag: str | None = None) -> None:
    """Write a run as ``qid Q0 docno rank score tag`` lines (gzip when ``path`` ends in ``.gz``).

    Documents of a query are written from rank 1 down, in trec_eval's order (decreasing
    score, ties by decreasing docno). Scores are written with the shortest text that reads
    back as the same float64 (``repr``), so :func:`read_run` returns an equal run.

    Parameters
    ----------
    run : Run or mapping qid -> {docno: score}
    path : str or path-like
    tag : str, optional
        The last column; ``run.tag`` by default.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "tiny.run"
    >>> write_run({"q1": {"d1": 0.25, "d2": 3.0, "d3": 0.25}}, f, tag="mine")
    >>> print(f.read_text(), end="")
    q1 Q0 d2 1 3.0 mine
    q1 Q0 d3 2 0.25 mine
    q1 Q0 d1 3 0.25 mine
    """
    run = _as_run(run)
    tag = run.tag if tag is None else _check_id(tag, "`tag`")
    chunks = (
        "".join(
            f"{qid} Q0 {docno} {rank} {docs[docno]!r} {tag}\n"
            for rank, docno in enumerate(_trec_order(docs), start=1)
        )
        for qid, docs in run.items()
    )
    _write_text(Path(path), chunks)


# --------------------------------------------------------------------------------------
# From arrays (LETOR data, model scores)
# --------------------------------------------------------------------------------------


def _id_strings(values: Any, n: int, name: str, *, query: bool = False) -> list[str]:
    """One id string per row from strings or integers (``7`` and ``7.0`` both give ``'7'``)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"`{name}` must have one entry per row ({n}); got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        return [str(v) for v in arr.tolist()]
    if arr.dtype.kind == "f":
        if not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
            raise ValueError(f"`{name}` must be strings or integers; got non-integer numbers")
        return [str(int(v)) for v in arr.tolist()]
    out = [v if isinstance(v, str) else str(v) for v in arr.tolist()]
    for row, v in enumerate(out):
        if not v or _WHITESPACE.search(v) or (query and v.startswith("#")):
            raise ValueError(
                f"`{name}` entries must be non-empty, contain no whitespace"
                f"{' and not start with #' if query else ''}; entry {row} is {v!r}"
            )
    return out


def _by_query(n: int, group: Any, qid: Any, docno: Any):
    """``(query name, docnos, row indices)`` per query, in query order.

    ``group`` are query sizes (as everywhere in selrank); ``qid`` per-row query ids. With
    both, ``qid`` only names the queries of ``group`` and must be constant within each.
    """
    per_row = None if qid is None else _id_strings(qid, n, "qid", query=True)
    if group is not None or per_row is None:
        groups = as_groups(group, n)
    else:
        # per-row ids (strings or numbers) -> integer codes in order of first appearance
        codes: dict[str, int] = {}
        coded = np.fromiter((codes.setdefault(q, len(codes)) for q in per_row), np.int64, n)
        groups = as_groups(None, n, qid=coded)
    rows = groups.to_grouped(np.arange(n))
    offsets = groups.offsets
    if per_row is not None:
        names = []
        for g in range(groups.n_groups):
            seen = {per_row[i] for i in rows[offsets[g] : offsets[g + 1]].tolist()}
            if len(seen) != 1:
                raise ValueError(
                    f"`qid` must be constant within each query of `group`; query {g} mixes "
                    f"{sorted(seen)[:3]}"
                )
            names.append(seen.pop())
        if len(set(names)) != len(names):
            raise ValueError("`qid` gives the same id to two queries of `group`")
    else:
        names = [str(g) for g in range(groups.n_groups)]
    docs = [str(i) for i in range(n)] if docno is None else _id_strings(docno, n, "docno")
    for g, name in enumerate(names):
        idx = rows[offsets[g] : offsets[g + 1]]
        yield name, [docs[i] for i in idx.tolist()], idx


def _unique_docs(name: str, docnos: list[str], idx: np.ndarray) -> None:
    if len(set(docnos)) != len(docnos):
        seen: dict[str, int] = {}
        for d, row in zip(docnos, idx.tolist()):
            if d in seen:
                raise ValueError(
                    f"`docno` {d!r} appears twice in query {name!r} (rows {seen[d]} and {row}); "
                    "document ids must be unique within a query"
                )
            seen[d] = row


def scores_to_run(
    y_score: Array,
    group: Array | None = None,
    *,
    qid: Array | None = None,
    docno: Array | None = None,
    tag: str = "selrank",
) -> Run:
    """Model scores as a :class:`Run`, ready for :func:`write_run` or :func:`evaluate_run`.

    Parameters
    ----------
    y_score : array-like, shape (n_rows,)
        Scores (NumPy array, torch tensor, polars/pandas Series); NaN is refused.
    group : array-like or None
        Query sizes, as in the ranking metrics (per-row ids go in ``qid``); ``None`` with
        ``qid=None`` makes all rows one query.
    qid : array-like, shape (n_rows,), optional
        Query id of each row (strings or integers, e.g. a LETOR split's ``qid``); names the
        queries. Alone it also defines them; with ``group`` it must be constant within each
        group. Without it, queries are named by their index.
    docno : array-like, shape (n_rows,), optional
        Document id of each row (e.g. a LETOR split's ``docid``); by default the row's
        index (``'0'``, ``'1'``, ...), which :func:`labels_to_qrels` uses too.
    tag : str

    Returns
    -------
    Run

    Examples
    --------
    >>> run = scores_to_run([0.3, 0.9, 0.1], group=[2, 1], qid=[7, 7, 9])
    >>> run.to_dict()
    {'7': {'0': 0.3, '1': 0.9}, '9': {'2': 0.1}}
    """
    score = _as_vector(y_score, "y_score").astype(np.float64)
    if np.isnan(score).any():
        raise ValueError(f"`y_score` has NaN values, first at row {int(np.isnan(score).argmax())}")
    tag = _check_id(tag, "`tag`")
    data: dict[str, dict[str, float]] = {}
    for name, docnos, idx in _by_query(score.size, group, qid, docno):
        _unique_docs(name, docnos, idx)
        data[name] = dict(zip(docnos, score[idx].tolist()))
    return Run._trusted(data, tag)


def labels_to_qrels(
    y_true: Array,
    group: Array | None = None,
    *,
    qid: Array | None = None,
    docno: Array | None = None,
) -> Qrels:
    """Integer relevance labels as :class:`Qrels` (every row is a judged document).

    Parameters
    ----------
    y_true : array-like, shape (n_rows,)
        Whole-number labels (LETOR grades); other values are refused, since TREC
        relevance is an integer.
    group, qid, docno
        As in :func:`scores_to_run` (use the same values for both, so that documents match).

    Returns
    -------
    Qrels

    Examples
    --------
    >>> labels_to_qrels([2, 0, 1], group=[2, 1]).to_dict()
    {'0': {'0': 2, '1': 0}, '1': {'2': 1}}
    """
    label = _as_vector(y_true, "y_true")
    if label.dtype.kind == "f":
        bad = ~(np.isfinite(label) & (label == np.round(label)))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"`y_true` must hold whole numbers (TREC relevance is an integer); "
                f"row {row} has {label[row].item()!r}"
            )
    label = label.astype(np.int64)
    data: dict[str, dict[str, int]] = {}
    for name, docnos, idx in _by_query(label.size, group, qid, docno):
        _unique_docs(name, docnos, idx)
        data[name] = dict(zip(docnos, label[idx].tolist()))
    return Qrels._trusted(data)


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------

TREC_TIES = ("trec_eval", "average", "pessimistic", "optimistic")
QUERIES = ("qrels", "both")


def _parse_trec_metrics(metrics: Any) -> list[MetricSpec]:
    """The specs of ``metrics``; each keeps its name as given."""
    return parse_metrics(metrics)


@dataclass
class _Evaluation:
    qids: list[str]
    n_docs: np.ndarray  # retrieved documents per query
    n_relevant: np.ndarray  # judged documents with rel >= relevance_level per query
    values: dict[str, np.ndarray]  # per metric, policy applied (NaN = excluded)
    no_rel: dict[str, np.ndarray]


def _evaluate(
    qrels: Qrels, run: Run, specs, *, relevance_level, ties, gain, queries, policy, max_grade=None
):
    """A run as arrays (its retrieved documents, ranked) plus the judged counts of each query,
    through the one engine (:mod:`selrank.metrics._engine`)."""
    if queries == "qrels":
        qids = sorted(qrels)
    else:
        qids = sorted(q for q in qrels if run.get(q))
    if not qids:
        raise ValueError(
            "no query to evaluate: the run retrieves nothing for any query of the qrels "
            "(queries='both')"
        )
    n_q = len(qids)
    # Judged documents: negative judgments count as non-relevant with gain 0 (trec_eval).
    judged = [qrels[q] for q in qids]
    j_sizes = np.fromiter((len(d) for d in judged), np.int64, n_q)
    j_raw = np.fromiter((r for d in judged for r in d.values()), np.float64, int(j_sizes.sum()))
    j_label = np.maximum(j_raw, 0.0)
    j_groups = Groups.from_sizes(j_sizes)
    starts = j_groups.offsets[:-1]
    n_relevant = segment_sum((j_label >= relevance_level).astype(np.int64), starts)
    # bpref's judged non-relevant: 0 <= rel < level (negative judgments count as unjudged)
    n_nonrel = segment_sum(((j_raw >= 0) & (j_raw < relevance_level)).astype(np.int64), starts)
    top_grade = np.maximum.reduceat(j_label, starts)
    # Retrieved documents, gathered query by query in C (chain, map); unjudged get label 0.
    where = [i for i, q in enumerate(qids) if run.get(q)]
    ran = [run[qids[i]] for i in where]
    rels = [judged[i] for i in where]
    sizes = [len(d) for d in ran]
    n_rows = sum(sizes)
    names = list(chain.from_iterable(ran))
    score_arr = np.fromiter(chain.from_iterable(d.values() for d in ran), np.float64, n_rows)
    raw_arr = np.fromiter(  # NaN: not judged
        chain.from_iterable(map(r.get, d, repeat(math.nan)) for r, d in zip(rels, ran)),
        np.float64, n_rows,
    )  # fmt: skip
    in_pool = ~np.isnan(raw_arr)
    raw_arr[~in_pool] = 0.0
    n_docs = np.zeros(n_q, dtype=np.int64)
    n_docs[where] = sizes
    _warn_no_overlap(qrels, run, qids, int(in_pool.sum()))
    if max_grade is None:
        max_grade = float(j_label.max())
    elif j_label.max() > max_grade:
        raise ValueError(
            f"`max_grade` is {max_grade!r} but the qrels have grades up to {j_label.max():g}"
        )
    rk, judgments = None, None
    if sizes:
        if ties == "trec_eval":
            with np.errstate(over="ignore"):  # trec_eval reads scores as C floats, too
                score_arr = score_arr.astype(np.float32)
        groups = Groups.from_sizes(sizes)
        how = "stable" if ties == "trec_eval" else ties
        rk = rank_groups(np.maximum(raw_arr, 0.0), score_arr, groups, how)
        # Tied scores are ranked by decreasing docno (trec_eval's order): put the tied
        # documents of each query in that order, so that the stable sorts keep it.
        perm, ranked = _docno_tie_order(score_arr, groups, names, rk.order)
        if perm is not None and ranked and how == "stable":
            # a few ties: `perm` is already the ranking (one row per tie block in "stable")
            rk = dataclasses.replace(rk, order=perm, label=np.maximum(raw_arr, 0.0)[perm])
        elif perm is not None:
            raw_arr, score_arr, in_pool = raw_arr[perm], score_arr[perm], in_pool[perm]
            rk = rank_groups(np.maximum(raw_arr, 0.0), score_arr, groups, how)
        pool = in_pool[rk.order]
        idx = np.asarray(where)
        rk_judged = rank_groups(j_label, j_label, j_groups, "stable")  # for the ideal DCG
        judgments = Judgments(
            n_relevant=n_relevant[idx].astype(np.float64),
            n_nonrelevant=n_nonrel[idx].astype(np.float64),
            ideal_dcg=lambda k, g: _ideal_dcg(rk_judged, k, g)[idx],
            in_pool=pool,
            judged=pool & (raw_arr[rk.order] >= 0),  # bpref: negative judgments are skipped
        )
    # Labels are integers, so the kernels' `label > level - 1` is trec_eval's `rel >= level`.
    options = {"gain": gain, "relevance_threshold": relevance_level - 1.0, "capped": False,
               "max_grade": max_grade}  # fmt: skip
    values, masks = _engine.per_query(
        rk, specs, judgments=judgments, options=options, policy=policy,
        n_relevant=n_relevant, top_grade=top_grade, where=np.asarray(where, dtype=np.int64),
    )  # fmt: skip
    names = [s.name for s in specs]
    return _Evaluation(qids, n_docs, n_relevant, dict(zip(names, values)), dict(zip(names, masks)))


_MANY_TIES = 0.25  # fraction of tied rows above which whole queries are sorted by docno


def _docno_tie_order(
    score: np.ndarray, groups: Groups, names: list[str], order: np.ndarray | None
) -> tuple[np.ndarray | None, bool]:
    """``(perm, ranked)``: a reordering of the rows of each query in which rows of equal score
    come in decreasing docno order (None when no two rows of a query tie: any order then ranks
    the same), and whether ``perm`` is ranked (by decreasing score, then decreasing docno).

    ``order`` lists the rows by query and by decreasing score (a ranking). Only the tied rows
    are compared as strings, in place in ``order`` (ranked); when they are many, each query's
    documents are sorted by docno instead, as trec_eval sorts them (not ranked)."""
    assert order is not None  # rank_groups always gives the order
    n = score.size
    row_group = groups.row_group  # grouped order: the query of position i in `order` too
    s = score[order]
    tie = (s[1:] == s[:-1]) & (row_group[1:] == row_group[:-1])
    if not tie.any():
        return None, False
    order = order.copy()
    tied = np.zeros(n, dtype=bool)
    tied[1:] = tie
    tied[:-1] |= tie
    at = np.flatnonzero(tied)
    if at.size > _MANY_TIES * n:  # mostly ties: sort every query's documents by docno
        offsets = groups.offsets.tolist()
        perm: list[int] = []
        for a, b in zip(offsets[:-1], offsets[1:]):
            perm.extend(sorted(range(a, b), key=names.__getitem__, reverse=True))
        return np.asarray(perm, dtype=np.int64), False
    block = np.cumsum(~np.concatenate(([False], tie)))[at]  # tie block of each tied row
    rows = order[at]
    keys = list(zip((-block).tolist(), [names[i] for i in rows.tolist()]))
    # decreasing (-block, docno): blocks in increasing order, docnos decreasing within each
    inside = sorted(range(at.size), key=keys.__getitem__, reverse=True)
    order[at] = rows[inside]
    return order, True


def _kind(x: Any) -> str | None:
    """``"qrels"``, ``"run"`` or None (unknown) for one argument of :func:`evaluate_run`."""
    if isinstance(x, Qrels) or _ranx(x, "Qrels"):
        return "qrels"
    if isinstance(x, Run) or _ranx(x, "Run"):
        return "run"
    if isinstance(x, str | os.PathLike):
        try:  # the first data line: 4 fields is qrels, 6 a run
            path = Path(x)
            first = next(_lines(path, "TREC"), None) if path.is_file() else None
        except ValueError:
            return None
        if first is not None:
            return {4: "qrels", 6: "run"}.get(len(first[2]))
        return None
    if isinstance(x, Mapping):
        for docs in x.values():
            if isinstance(docs, Mapping) and docs:
                values = list(docs.values())[:50]
                if any(isinstance(v, float) and not float(v).is_integer() for v in values):
                    return "run"  # fractional values: scores, not relevance grades
                return None
    return None


def _check_order(qrels: Any, run: Any) -> None:
    """Refuse ``evaluate_run(run, qrels)``, naming the swap (integral scores would otherwise
    read as plausible relevance grades)."""
    first, second = _kind(qrels), _kind(run)
    if first == "run" and second in ("qrels", None) or second == "qrels" and first in ("run", None):
        raise TypeError(
            "evaluate_run(qrels, run): the arguments are swapped -- the first looks like a run "
            f"({type(qrels).__name__}) and the second like qrels ({type(run).__name__}); "
            "call evaluate_run(qrels, run)"
        )


def _warn_no_overlap(qrels: Qrels, run: Run, qids: list[str], n_judged_retrieved: int) -> None:
    """trec_eval is silent when a run and its qrels share nothing; a table of zeros is not."""
    import warnings

    shared = sum(1 for q in qrels if run.get(q))
    if shared == 0:
        n_run = sum(1 for q in run if run[q])
        example = next((q for q in run if run[q]), None)
        warnings.warn(
            f"the run ({run.tag!r}) shares no query with the qrels: {n_run} queries in "
            f"the run (e.g. {example!r}), {qrels.n_queries} in the qrels (e.g. "
            f"{next(iter(qrels))!r}); every query scores 0. Are these the qrels of this run?",
            UserWarning,
            stacklevel=4,
        )
    elif n_judged_retrieved == 0:
        n_ret = sum(len(run[q]) for q in qids if run.get(q))
        warnings.warn(
            f"the run ({run.tag!r}) shares no document with the qrels: {n_ret} documents "
            f"retrieved for the {shared} queries both hold, none of them judged; every "
            "document counts as non-relevant. Are the document ids the same?",
            UserWarning,
            stacklevel=4,
        )


def _run_options(relevance_level, ties, gain, queries, no_relevant, max_grade) -> dict[str, Any]:
    """Check :func:`evaluate_run`'s options; the keyword arguments of :func:`_evaluate`."""
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int | np.integer):
        raise TypeError(f"`relevance_level` must be an int >= 1; got {relevance_level!r}")
    if relevance_level < 1:
        raise ValueError(f"`relevance_level` must be an int >= 1; got {relevance_level!r}")
    _check_choice(ties, "ties", TREC_TIES)
    _check_choice(gain, "gain", GAINS)
    _check_choice(queries, "queries", QUERIES)
    _check_choice(no_relevant, "no_relevant", NO_RELEVANT)
    if max_grade is not None and (
        isinstance(max_grade, bool)
        or not isinstance(max_grade, int | float | np.number)
        or not (math.isfinite(float(max_grade)) and max_grade >= 0)
    ):
        raise ValueError(f"`max_grade` must be a number >= 0 or None; got {max_grade!r}")
    return {
        "relevance_level": int(relevance_level), "ties": ties, "gain": gain,
        "queries": queries, "policy": no_relevant,
        "max_grade": None if max_grade is None else float(max_grade),
    }  # fmt: skip


def evaluate_run(
    qrels: Qrels | Mapping,
    run: Run | Mapping,
    *,
    metrics: str | Sequence[str] = ("ndcg@10",),
    relevance_level: int = 1,
    ties: str = "trec_eval",
    gain: str = "linear",
    queries: str = "qrels",
    no_relevant: str = "zero",
    max_grade: int | None = None,
    per_query: bool = False,
) -> pl.DataFrame:
    """Evaluate a TREC run against qrels, as trec_eval does, into a tidy polars frame.

    Conventions (trec_eval's, checked against pytrec_eval to 1e-9 on thousands of random
    queries with ties, unjudged documents, judged documents the run missed, and queries
    missing on either side):

    * Documents are ranked by decreasing score; tied scores by decreasing ``docno``
      (trec_eval's ``strcmp``; Python's string order is the same for UTF-8 ids). trec_eval
      stores scores as C ``float``, so scores equal after rounding to float32 tie too.
    * A retrieved document missing from the qrels is non-relevant (label 0); negative
      relevance is non-relevant with gain 0.
    * NDCG's ideal DCG is built from *all* judged documents of the query, retrieved or not;
      MAP and recall divide by *all* judged relevant documents ``R``. The run goes through
      the one engine (:mod:`selrank.metrics._engine`) as the arrays of its retrieved
      documents plus the qrels' per-query counts (``Judgments``: ``R``, the judged
      non-relevant documents, the ideal DCG of all judged documents, which rows are
      judged); the kernels of the measures' records (:mod:`selrank.metrics.measures`) read
      those counts instead of counting rows. (Appending the missed documents as extra rows
      ranked last would not do: they would count in DCG, AP and recall below the end of the
      run.)
    * Every query of the qrels is evaluated; one without any retrieved document scores 0
      (trec_eval ``-c``). Queries only in the run are ignored. ``queries="both"`` averages
      over the queries present in both, trec_eval's default without ``-c`` (what
      pytrec_eval returns).
    * A query without relevant documents scores 0 (``no_relevant="zero"``).
    * Gains are linear (the relevance value); P@k divides by ``k``, AP@k by ``R``.
    * ``Rprec`` counts the relevant documents among the first ``R`` retrieved, over ``R``.
      ``bpref`` follows trec_eval's ``m_bpref.c``: unjudged documents and negative
      judgments are skipped, ``N`` counts the judged documents with ``0 <= rel < level``.
      ``success@k`` is 1 when a relevant document is in the top ``k``.
    * ``judged@k`` (ir_measures' ``Judged@k``) is the fraction of the top ``min(k, n_ret)``
      retrieved documents that the qrels judge (any value, negative too).
    * ERR@k uses ``R_i = (2^rel - 1) / 2^max_grade`` (gdeval's, with ``max_grade=4``).

    * A run that shares no query, or no document, with the qrels scores 0 everywhere, as in
      trec_eval, and a ``UserWarning`` names the counts.

    Parameters
    ----------
    qrels : Qrels, ranx ``Qrels``, mapping qid -> {docno: rel}, or path of a qrels file
    run : Run, ranx ``Run``, mapping qid -> {docno: score}, or path of a run file
        Given in the other order (a ``Run`` first, a run file first, fractional values
        first), the call is refused with a ``TypeError`` that names the swap.
    metrics : str or sequence of str
        Case-insensitive names in selrank/ranx, trec_eval or ir_measures style, one list or
        one comma-separated string (:func:`~selrank.metrics.names.parse_metrics`):
        ``ndcg``, ``ndcg@k`` = ``ndcg_cut_k`` = ``nDCG@k``; ``map``, ``map@k`` =
        ``map_cut_k`` = ``AP@k``; ``mrr`` = ``recip_rank`` = ``RR``, ``mrr@k`` = ``RR@k``;
        ``precision@k`` = ``P@k`` = ``P_k``; ``recall@k`` = ``R@k`` = ``recall_k``;
        ``precision`` / ``set_P`` and ``recall`` / ``set_recall`` over the whole run;
        ``Rprec``; ``bpref``; ``success@k`` = ``success_k`` = ``Success@k`` =
        ``hit_rate@k``; ``judged@k`` = ``Judged@k``; ``err@k`` = ``ERR@k``.
        trec_eval's dotted form (``ndcg_cut.10``, ``P.5,10``) works too.
    relevance_level : int
        ``rel >= relevance_level`` is relevant for MAP, MRR, precision and recall
        (trec_eval ``-l``); NDCG uses the graded values.
    ties : {"trec_eval", "average", "pessimistic", "optimistic"}
        ``"trec_eval"`` as above; the others are those of :func:`~selrank.metrics.ndcg`
        on the float64 scores (``"average"``: expectation over the orders of tied scores).
    gain : {"linear", "exponential"}
        NDCG's gain: ``rel`` (trec_eval) or ``2^rel - 1``.
    queries : {"qrels", "both"}
        Which queries are averaged over, see above.
    no_relevant : {"zero", "one", "exclude"}
        Value of NDCG, MAP, MRR and recall on a query without relevant judged documents
        (``"one"`` leaves precision at 0; ``"exclude"`` drops such queries from every
        metric), as in :func:`~selrank.metrics.evaluate`.
    max_grade : int or None
        ERR's highest grade; ``None`` takes the largest relevance in the qrels. gdeval (and
        ir_measures' ``ERR@k``) use 4.
    per_query : bool
        One row per query instead of the summary.

    Returns
    -------
    polars.DataFrame
        The frame of :func:`~selrank.metrics.evaluate`: one row per metric with
        ``metric`` (the name as given), ``mean``, ``std``, ``n_queries``,
        ``n_no_relevant``, ``n_excluded``. With ``per_query=True``: ``query`` (the qid,
        sorted as trec_eval sorts them), ``n_docs`` (retrieved), ``n_relevant`` (judged
        relevant) and one column per metric.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d9": 1}}
    >>> run = {"q1": {"d1": 0.5, "d2": 0.9, "d4": 0.1}, "q3": {"d5": 1.0}}
    >>> evaluate_run(qrels, run, metrics=["P@2", "map", "recip_rank"]).select(
    ...     "metric", "mean", "n_queries").rows()
    [('P@2', 0.25, 2), ('map', 0.125, 2), ('recip_rank', 0.25, 2)]
    >>> evaluate_run(qrels, run, metrics=["nDCG@3", "R@3"], per_query=True).rows()
    [('q1', 3, 2, 0.4796..., 0.5), ('q2', 0, 1, 0.0, 0.0)]
    """
    specs = _parse_trec_metrics(metrics)
    options = _run_options(relevance_level, ties, gain, queries, no_relevant, max_grade)
    pl = _require_polars()
    _check_order(qrels, run)
    ev = _evaluate(_as_qrels(qrels), _as_run(run), specs, **options)
    names = [s.name for s in specs]
    if per_query:
        frame = pl.DataFrame(
            {"query": ev.qids, "n_docs": ev.n_docs, "n_relevant": ev.n_relevant},
            schema={"query": pl.String, "n_docs": pl.Int64, "n_relevant": pl.Int64},
        )
        return frame.with_columns(
            [pl.Series(name, ev.values[name], nan_to_null=True) for name in names]
        )
    return _engine.summary(names, specs, ev.values, ev.no_rel)
