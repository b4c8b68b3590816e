"""The one rule for the files selrank writes and reads, and the checks of output paths.

* **Writing**: a name ending in ``.gz`` is written gzip-compressed (reproducibly: no
  timestamp in the header), any other name as it is. This holds for every writer of the
  package: ``save()`` of the estimators, :func:`~selrank.metrics.write_run` /
  :func:`~selrank.metrics.write_qrels`, :func:`~selrank.datasets.write_svmlight` and the
  command line's ``--json`` / ``--save`` / ``--out``.
* **Reading**: gzip is recognised by its first two bytes (``1f 8b``), whatever the name, so a
  file written under a ``.gz`` name reads back, and so does a file someone compressed
  without renaming it.
* **Output paths** are checked before any work starts (:func:`check_output_path`): the
  folder must exist and be writable, and the path must not be a directory.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "GZIP_MAGIC",
    "check_distinct_outputs",
    "check_output_path",
    "is_gzip_file",
    "open_read",
    "open_write",
    "writes_gzip",
]

GZIP_MAGIC = b"\x1f\x8b"


def writes_gzip(path: str | os.PathLike) -> bool:
    """Whether a file written at ``path`` is gzip-compressed: its name ends in ``.gz``.

    Examples
    --------
    >>> writes_gzip("model.json.gz"), writes_gzip("run.txt"), writes_gzip("a.GZ")
    (True, False, True)
    """
    return os.fspath(path).lower().endswith(".gz")


def is_gzip_file(path: str | os.PathLike) -> bool:
    """Whether the file at ``path`` starts with the gzip magic bytes."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


@contextlib.contextmanager
def open_write(
    path: str | os.PathLike, *, text: bool = False, atomic: bool = True
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing, gzip when the name ends in ``.gz``.

    With ``atomic=True`` (the default) the data goes to a temporary file in the same folder
    that replaces ``path`` only when the block ends without an error, so a failed or
    interrupted write never leaves a truncated file under the final name (nor destroys the
    previous one).

    Parameters
    ----------
    path : str or path-like
    text : bool
        A text stream (UTF-8, ``\\n`` line ends) instead of a binary one.
    atomic : bool

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "notes.txt.gz"
    >>> with open_write(f, text=True) as fh:
    ...     _ = fh.write("hello\\n")
    >>> f.read_bytes()[:2] == GZIP_MAGIC
    True
    >>> with open_read(f, text=True) as fh:
    ...     fh.read()
    'hello\\n'
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a directory; give a file name inside it")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"cannot write {target}: the folder {target.parent} does not exist")
    if atomic:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        raw: IO[bytes] = os.fdopen(fd, "wb")
    else:
        tmp = ""
        raw = open(target, "wb")  # closed below
    try:
        with raw:
            if writes_gzip(target):
                with gzip.GzipFile("", "wb", compresslevel=6, fileobj=raw, mtime=0) as gz:
                    yield from _stream(gz, text)
            else:
                yield from _stream(raw, text)
        if atomic:
            os.replace(tmp, target)
    except BaseException:
        if atomic:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def _stream(fh: Any, text: bool) -> Iterator[IO[Any]]:
    if not text:
        yield fh
        return
    wrapper = io.TextIOWrapper(fh, "utf-8", newline="\n")
    yield wrapper
    wrapper.flush()
    wrapper.detach()  # the binary stream is closed by its owner


def open_read(path: str | os.PathLike, *, text: bool = False) -> IO[Any]:
    """Open ``path`` for reading; gzip is recognised by its magic bytes, whatever the name."""
    raw: Any = gzip.open(path, "rb") if is_gzip_file(path) else open(path, "rb")
    return io.TextIOWrapper(raw, "utf-8") if text else raw


def check_output_path(path: str | os.PathLike, what: str = "output") -> Path:
    """Refuse, before any work, a path that cannot be written; returns it as a ``Path``.

    Raises ``ValueError`` saying what is wrong: the path is a directory, its folder does not
    exist (or is not a folder), the folder or an existing file is not writable.

    Examples
    --------
    >>> import tempfile
    >>> check_output_path(tempfile.mkdtemp(), "--json")
    Traceback (most recent call last):
    ...
    ValueError: --json ...: is a directory; give a file name inside it
    """
    p = Path(os.fspath(path)).expanduser()
    if not os.fspath(path):
        raise ValueError(f"{what}: the path is empty")
    if p.is_dir():
        raise ValueError(f"{what} {p}: is a directory; give a file name inside it")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise ValueError(f"{what} {p}: the folder {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise ValueError(f"{what} {p}: {parent} is not a folder")
    if p.exists() and not os.access(p, os.W_OK):
        raise ValueError(f"{what} {p}: the file exists and is not writable")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {p}: the folder {parent} is not writable")
    return p


def check_distinct_outputs(paths: dict[str, str | os.PathLike | None]) -> None:
    """Refuse two outputs that name the same file (one would silently replace the other).

    ``paths`` maps an option name (e.g. ``"--save"``) to its path or ``None``.

    Examples
    --------
    >>> check_distinct_outputs({"--save": "m.json", "--json": "./m.json"})
    Traceback (most recent call last):
    ...
    ValueError: --save and --json name the same file m.json; one would overwrite the other
    """
    seen: dict[Path, str] = {}
    for option, value in paths.items():
        if value is None:
            continue
        key = Path(os.fspath(value)).expanduser().resolve()
        if key in seen:
            raise ValueError(
                f"{seen[key]} and {option} name the same file {Path(os.fspath(value)).name}; one "
                "would overwrite "
                "the other"
            )
        seen[key] = option
