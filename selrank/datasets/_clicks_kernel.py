"""Compiled click-log line parser (numba); imported only by :mod:`selrank.datasets.dwell`.

One call parses a buffer of whole ``SessionId<TAB>ItemId<TAB>Time`` lines into preallocated
arrays, checking every write against their size. Errors come back as codes with the line, the
byte offset of the offending field and its index; the caller turns them into messages naming
the file, line and column. Nothing here allocates memory in proportion to the input.
"""

from __future__ import annotations

import numba
import numpy as np

from ._svmlight_kernel import _parse_float, last_newline

__all__ = ["count_rows", "last_newline", "parse_clicks"]

OK = 0
ERR_FIELDS = 1  # not exactly three tab-separated fields
ERR_INT = 2  # SessionId or ItemId is not an integer (or does not fit into int64)
ERR_TIME = 3  # Time is not a number
ERR_TIME_FINITE = 4  # Time is NaN or infinite
NO_ROOM = 5  # more rows than the arrays hold

_NL, _CR, _SP, _TAB = 10, 13, 32, 9
_INT64_MAX = np.int64(9223372036854775807)


@numba.njit(cache=True, inline="always")
def _blank(c):
    return c == _SP or c == _TAB or c == _CR


@numba.njit(cache=True)
def _line_end(buf, p, n):
    while p < n and buf[p] != _NL:
        p += 1
    return p


@numba.njit(cache=True)
def count_rows(buf, start):
    """Number of data lines (lines with a byte other than space, tab or CR) from ``start``."""
    n = buf.shape[0]
    rows = 0
    blank = True  # the current line has no data byte yet
    for i in range(start, n):
        c = buf[i]
        if c == _NL:
            if not blank:
                rows += 1
            blank = True
        elif blank and not _blank(c):
            blank = False
    if not blank:
        rows += 1
    return rows


@numba.njit(cache=True)
def _parse_int(buf, a, b):
    """Signed decimal int64 in ``buf[a:b]`` (the whole range): ``(ok, value)``."""
    neg = False
    if a < b and (buf[a] == 43 or buf[a] == 45):  # + -
        neg = buf[a] == 45
        a += 1
    if a >= b:
        return False, np.int64(0)
    v = np.int64(0)
    for k in range(a, b):
        c = buf[k]
        if c < 48 or c > 57:
            return False, np.int64(0)
        d = np.int64(c - 48)
        if v > (_INT64_MAX - d) // 10:
            return False, np.int64(0)  # does not fit into int64
        v = v * 10 + d
    return True, (-v if neg else v)


@numba.njit(cache=True)
def parse_clicks(buf, start, first_line, session, item, time, line_of_row):
    """Parse the lines of ``buf[start:]`` into ``session``, ``item``, ``time`` (float64).

    Returns ``(status, rows, line, byte_offset, field)``: on error ``line`` is the 1-based
    line, ``byte_offset`` the start of the offending field in ``buf`` and ``field`` its index
    (0, 1, 2; for ``ERR_FIELDS`` the number of fields found, and the offset is the line's end
    or the start of a fourth field).
    """
    n = buf.shape[0]
    capacity = min(session.shape[0], item.shape[0], time.shape[0], line_of_row.shape[0])
    row = 0
    line = first_line
    p = start
    while p < n:
        if buf[p] == _NL:  # an empty line (the common blank line): skip it at once
            p += 1
            line += 1
            continue
        stop = _line_end(buf, p, n)
        end = stop
        while end > p and buf[end - 1] == _CR:
            end -= 1
        data = False
        for k in range(p, end):
            if not _blank(buf[k]):
                data = True
                break
        if not data:
            p = stop + 1
            line += 1
            continue
        if row >= capacity:
            return NO_ROOM, row, line, p, 0
        # the three fields, split on tabs and stripped of spaces
        tabs = 0
        extra = end  # where the line goes wrong: its end (too few fields) or a 4th field
        for k in range(p, end):
            if buf[k] == _TAB:
                tabs += 1
                if tabs == 3:
                    extra = k + 1
        if tabs != 2:
            return ERR_FIELDS, row, line, extra, tabs + 1
        a = p
        for f in range(3):
            b = a
            while b < end and buf[b] != _TAB:
                b += 1
            lo, hi = a, b
            while lo < hi and buf[lo] == _SP:
                lo += 1
            while hi > lo and buf[hi - 1] == _SP:
                hi -= 1
            if f < 2:
                ok, v = _parse_int(buf, lo, hi)
                if not ok:
                    return ERR_INT, row, line, a, f
                if f == 0:
                    session[row] = v
                else:
                    item[row] = v
            else:
                if lo == hi:
                    return ERR_TIME, row, line, a, f
                ok, t, q = _parse_float(buf, lo, hi)
                if not ok or q != hi:
                    return ERR_TIME, row, line, a, f
                if not np.isfinite(t):
                    return ERR_TIME_FINITE, row, line, a, f
                time[row] = t
            a = b + 1
        line_of_row[row] = line
        row += 1
        line += 1
        p = stop + 1
    return OK, row, line, 0, 0
