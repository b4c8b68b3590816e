"""The one rule for the files selrank writes and reads, and the checks of output paths.

* **Writing**: a name ending in ``.gz`` is written gzip-compressed (reproducibly: no
  timestamp in the header), any other name as it is. This holds for every writer of the
  package: ``save()`` of the estimators, :func:`~selrank.metrics.write_run` /
  :func:`~selrank.metrics.write_qrels`, :func:`~selrank.datasets.write_svmlight` and the
  command line's ``--json`` / ``--save`` / ``--out``.
* **Reading**: gzip is recognised by its first two bytes (``1f 8b``), whatever the name, so a
  file written under a ``.gz`` name reads back, and so does a file someone compressed
  without renaming it.
* **Permissions**: a new file gets the mode every other tool gives it, ``0o666`` less the
  user's umask (``-rw-r--r--`` under the usual ``022``); the temporary file of an atomic write
  (``mkstemp`` creates it ``0600``) is given that mode before it takes the final name (or the
  mode of the file it replaces, as a shell's ``>`` keeps it), so an atomic write never
  narrows who can read the result (:func:`default_file_mode`).
* **Output paths** are checked before any work starts (:func:`check_output_path`): the
  folder must exist and be writable, and the path must not be a directory.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

__all__ = [
    "GZIP_MAGIC",
    "check_distinct_outputs",
    "check_outputs_not_inputs",
    "check_output_path",
    "default_file_mode",
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


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_file_mode(*, directory: bool = False) -> int:
    """The mode ``open()`` (``0o666``) or ``mkdir`` (``0o777``) gives a new file or folder under
    the current umask: what every other tool creates, e.g. ``0o644`` under umask ``022``.

    Examples
    --------
    >>> import os
    >>> old = os.umask(0o027)
    >>> oct(default_file_mode()), oct(default_file_mode(directory=True))
    ('0o640', '0o750')
    >>> _ = os.umask(old)
    """
    return (0o777 if directory else 0o666) & ~current_umask()


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
        # mkstemp creates 0600: give the file the mode open() would give it (0o666 less the
        # umask), or, when it replaces a file, that file's mode (as `>` in a shell keeps it)
        with contextlib.suppress(OSError, AttributeError):  # no fchmod / modes (Windows)
            mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else default_file_mode()
            os.fchmod(fd, mode)
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


def check_distinct_outputs(paths: Mapping[str, str | os.PathLike | None]) -> None:
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


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)  # hard links too
    except OSError:  # pragma: no cover - a file removed meanwhile
        return False


def check_outputs_not_inputs(
    outputs: Mapping[str, str | os.PathLike | None],
    inputs: Mapping[str, Any],
) -> None:
    """Refuse an output that names one of the inputs (writing it would destroy the input).

    ``outputs`` maps an option to its path or ``None``; ``inputs`` maps an option (or a
    description) to a path, a list of paths, or ``None``. ``"-"`` (standard input or
    output) is never a file. Paths are compared resolved (symbolic links followed) and by
    device and inode (hard links).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
    >>> _ = f.write_text("q1 Q0 d1 1 1.0 x\\n")
    >>> check_outputs_not_inputs({"--json": str(f)}, {"--run": [str(f)]})
    Traceback (most recent call last):
    ...
    ValueError: --json ...run.txt is the input file of --run; writing it would destroy the input: choose another name
    """
    for option, value in outputs.items():
        if value is None or os.fspath(value) == "-":
            continue
        out = Path(os.fspath(value)).expanduser()
        for source, given in inputs.items():
            items = given if isinstance(given, list | tuple) else [given]
            for item in items:
                if item is None or os.fspath(item) == "-":
                    continue
                if _same_file(out, Path(os.fspath(item)).expanduser()):
                    raise ValueError(
                        f"{option} {value} is the input file of {source}; writing it would "
                        "destroy the input: choose another name"
                    )
