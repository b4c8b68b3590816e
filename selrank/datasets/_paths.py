"""Where the packaged data lives.

An installed wheel carries the repository's top-level ``datasets/`` folder as
``selrank/_packaged_data/``; an editable checkout has no such folder and reads
``<repository>/datasets`` instead. The environment variable ``SELRANK_DATA_DIR`` overrides both
(a folder laid out like ``datasets/``: ``mq2008/mq2008.parquet``, ...).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_DIR_ENV", "data_dirs", "packaged_file"]

DATA_DIR_ENV = "SELRANK_DATA_DIR"

_PACKAGE = Path(__file__).resolve().parent.parent  # .../selrank


def data_dirs() -> list[Path]:
    """The folders searched for packaged data, in order.

    ``$SELRANK_DATA_DIR`` alone when it is set; otherwise the wheel's
    ``selrank/_packaged_data`` and the checkout's ``datasets/``.

    Examples
    --------
    >>> all(isinstance(p, Path) for p in data_dirs())
    True
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return [Path(env).expanduser()]
    return [_PACKAGE / "_packaged_data", _PACKAGE.parent / "datasets"]


def packaged_file(relative: str) -> Path:
    """Path of a packaged data file, e.g. ``"mq2008/mq2008.parquet"``.

    Raises
    ------
    FileNotFoundError
        Saying every place it looked and how to make the file available.
    """
    tried = [d / relative for d in data_dirs()]
    for p in tried:
        if p.is_file():
            return p
    looked = ", ".join(str(p) for p in tried)
    raise FileNotFoundError(
        f"packaged data file {relative!r} not found; looked in: {looked}. Install selrank from "
        f"a wheel (which carries the data), run from a checkout that has datasets/, or set "
        f"{DATA_DIR_ENV} to a folder holding {relative} (scripts/package_data.py builds it "
        f"from the original files)."
    )
