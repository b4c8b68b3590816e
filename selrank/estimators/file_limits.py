"""The bounds a model file is checked against before any library parses it.

Raise :data:`MAX_FILE_BYTES` to read a larger model (``selrank.estimators.file_limits.
MAX_FILE_BYTES = 4 << 30``); the structure bounds hold for any model LightGBM or XGBoost
trains.
"""

from __future__ import annotations

import os

__all__ = ["MAX_FEATURES", "MAX_FILE_BYTES", "MAX_LEAVES", "MAX_TREES", "read_capped"]

#: The most bytes a model file may hold once decompressed (a gzip bomb is refused at this size
#: instead of exhausting memory). 1 GiB: far above the models selrank trains.
MAX_FILE_BYTES = 1 << 30
#: Bounds of a model's structure (trees, leaves per tree, features).
MAX_TREES = 10_000_000
MAX_LEAVES = 1 << 24
MAX_FEATURES = 1 << 24


def read_capped(path: str | os.PathLike, where: str, limit: int | None = None) -> bytes:
    """The (decompressed) bytes of ``path``; ``ValueError`` beyond ``limit`` (:data:`MAX_FILE_BYTES`).

    gzip is recognised by its first bytes; at most ``limit + 1`` bytes are ever decompressed.
    """
    import gzip
    import zlib

    from .._files import open_read

    limit = MAX_FILE_BYTES if limit is None else int(limit)
    try:
        with open_read(path) as fh:
            data = fh.read(limit + 1)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{where} is damaged: its gzip stream is broken ({exc})") from None
    if len(data) > limit:
        raise ValueError(
            f"{where} holds more than {limit:,} bytes (decompressed); a model file is refused "
            "beyond that (a gzip bomb or not a model; raise "
            "selrank.estimators.file_limits.MAX_FILE_BYTES to read it anyway)"
        )
    return data
