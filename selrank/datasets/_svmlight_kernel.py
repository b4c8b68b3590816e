"""Compiled SVMlight line parser (numba); imported only by :mod:`selrank.datasets.svmlight`.

One call parses a buffer of whole lines straight into preallocated dense arrays, so a file is
read in fixed-size chunks with no per-token Python objects: memory stays at the size of the
output plus one chunk. Errors are returned as codes with the offending line and byte offset;
the caller turns them into messages naming the file and line.
"""

from __future__ import annotations

import numba
import numpy as np

# status codes returned by `parse_chunk`
OK = 0
ERR_LABEL = 1  # label is not a number
ERR_NO_QID = 2  # second token is not qid:<int>
ERR_QID = 3  # qid value is not an integer
ERR_TOKEN = 4  # token is not <id>:<value>
ERR_FEATURE_ID = 5  # feature id is not a positive integer
ERR_VALUE = 6  # feature value is not a number
ERR_DUPLICATE = 7  # feature id repeated within a line
ERR_RANGE = 8  # feature id above the fixed number of features
NEED_WIDTH = 9  # feature id above the current width: caller widens and parses the chunk again
NO_ROOM = 10  # more data lines than the output has rows (the file grew after it was counted)

_NL, _CR, _SP, _TAB, _HASH, _COLON = 10, 13, 32, 9, 35, 58
_POW10 = np.array([10.0**k for k in range(23)])  # exactly representable powers of ten


@numba.njit(cache=True, inline="always")
def _is_sep(c):
    return c == _SP or c == _TAB


@numba.njit(cache=True, inline="always")
def _token_ends(buf, p, end):
    if p >= end:
        return True
    c = buf[p]
    return c == _SP or c == _TAB or c == _HASH or c == _NL or c == _CR


@numba.njit(cache=True, inline="always")
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@numba.njit(cache=True)
def _match_word(buf, p, end, word):
    """Length of ``word`` if the bytes at ``p`` spell it (case-insensitive), else 0."""
    n = len(word)
    if p + n > end:
        return 0
    for k in range(n):
        if _lower(buf[p + k]) != word[k]:
            return 0
    return n


@numba.njit(cache=True)
def _slow_float(buf, start, stop):
    # Exact fallback for the rare token with more than 15 significant digits or a large
    # exponent: Python's correctly rounded float() (the fast path below is exact otherwise).
    with numba.objmode(v="float64"):
        v = float(bytes(buf[start:stop]))
    return v


_NAN = np.array([110, 97, 110], dtype=np.uint8)  # "nan"
_INF = np.array([105, 110, 102], dtype=np.uint8)  # "inf"
_INFINITY = np.array([105, 110, 102, 105, 110, 105, 116, 121], dtype=np.uint8)  # "infinity"


@numba.njit(cache=True)
def _parse_float(buf, p, end):
    """Parse a decimal float starting at ``p``; returns ``(ok, value, next_position)``.

    The token must end at whitespace, ``#`` or the end of the line. Exact (correctly rounded)
    for every input: mantissas of up to 15 digits with decimal exponents up to 22 in magnitude
    take Clinger's fast path, anything else goes through Python's ``float``.
    """
    start = p
    neg = False
    if p < end and (buf[p] == 43 or buf[p] == 45):  # + -
        neg = buf[p] == 45
        p += 1
    k = _match_word(buf, p, end, _INFINITY)
    if k == 0:
        k = _match_word(buf, p, end, _INF)
    if k > 0 and _token_ends(buf, p + k, end):
        return True, (-np.inf if neg else np.inf), p + k
    k = _match_word(buf, p, end, _NAN)
    if k > 0 and _token_ends(buf, p + k, end):
        return True, np.nan, p + k
    mant = np.int64(0)
    n_sig = 0  # significant digits kept in `mant`
    n_digits = 0
    exp10 = 0
    dropped = False  # a non-zero digit did not fit into `mant`
    while p < end and 48 <= buf[p] <= 57:
        d = buf[p] - 48
        n_digits += 1
        if n_sig < 18:
            if mant > 0 or d > 0:
                n_sig += 1
            mant = mant * 10 + d
        else:
            exp10 += 1
            dropped = dropped or d != 0
        p += 1
    if p < end and buf[p] == 46:  # .
        p += 1
        while p < end and 48 <= buf[p] <= 57:
            d = buf[p] - 48
            n_digits += 1
            if n_sig < 18:
                if mant > 0 or d > 0:
                    n_sig += 1
                mant = mant * 10 + d
                exp10 -= 1
            else:
                dropped = dropped or d != 0
            p += 1
    if n_digits == 0:
        return False, 0.0, p
    if p < end and (buf[p] == 101 or buf[p] == 69):  # e E
        p += 1
        eneg = False
        if p < end and (buf[p] == 43 or buf[p] == 45):
            eneg = buf[p] == 45
            p += 1
        e = 0
        n_e = 0
        while p < end and 48 <= buf[p] <= 57:
            if e < 100000:
                e = e * 10 + (buf[p] - 48)
            n_e += 1
            p += 1
        if n_e == 0:
            return False, 0.0, p
        exp10 += -e if eneg else e
    if not _token_ends(buf, p, end):
        return False, 0.0, p
    if mant == 0:
        v = 0.0
    elif n_sig <= 15 and not dropped and -22 <= exp10 <= 22:
        v = float(mant)  # exact: mant < 2**53
        if exp10 >= 0:
            v = v * _POW10[exp10]
        else:
            v = v / _POW10[-exp10]
    else:
        v = _slow_float(buf, start, p)
        return True, v, p
    return True, (-v if neg else v), p


@numba.njit(cache=True)
def _parse_uint(buf, p, end):
    """Parse an unsigned decimal integer of at most 18 digits: ``(ok, value, next)``."""
    v = np.int64(0)
    n = 0
    while p < end and 48 <= buf[p] <= 57:
        if n < 18:
            v = v * 10 + (buf[p] - 48)
        n += 1
        p += 1
    return n > 0 and n <= 18, v, p


@numba.njit(cache=True)
def count_lines(buf):
    """Number of newline bytes in ``buf``."""
    n = 0
    for c in buf:
        if c == _NL:
            n += 1
    return n


@numba.njit(cache=True)
def count_rows(buf):
    """``(data lines, newlines)`` of ``buf``: the lines :func:`parse_chunk` turns into rows.

    A line is a data line unless it is blank (spaces, tabs, an ``\\r`` before its newline) or
    its first non-blank byte is ``#``; the last line may lack its newline. The output is sized
    from this count, so blank lines cost no memory. One pass, a state per byte (at a line's
    start or not): as fast on a file of newlines as on data.
    """
    n = buf.shape[0]
    rows = 0
    lines = 0
    start = True  # no byte of the current line decided yet
    for i in range(n):
        c = buf[i]
        if start:
            if c == _SP or c == _TAB or (c == _CR and (i + 1 == n or buf[i + 1] == _NL)):
                continue
            start = False
            if c != _NL and c != _HASH:
                rows += 1
        if c == _NL:
            lines += 1
            start = True
    return rows, lines


@numba.njit(cache=True)
def parse_chunk(
    buf,
    first_line,
    row0,
    X,
    y,
    qid,
    line_of_row,
    seen,
    fixed_width,
    comment_start,
    comment_stop,
    keep_comments,
):
    """Parse every line of ``buf`` (whole lines only) into rows ``row0, row0 + 1, ...``.

    One pass over the bytes: a line ends at ``\\n`` (an ``\\r`` before it is ignored).
    Returns ``(status, rows_written, line, byte_offset, value)``: on error, ``line`` is the
    1-based line number, ``byte_offset`` the position of the offending token in ``buf`` and
    ``value`` the feature id involved (for duplicate / range / width errors).

    Every write is bounds-checked: a data line beyond the last row of ``X`` (a file that grew
    after its rows were counted) returns ``NO_ROOM`` instead of writing past the arrays.
    """
    n = buf.shape[0]
    width = min(X.shape[1], seen.shape[0])
    capacity = min(X.shape[0], y.shape[0], qid.shape[0], line_of_row.shape[0])
    if keep_comments:
        capacity = min(capacity, comment_start.shape[0], comment_stop.shape[0])
    row = row0
    line = first_line
    p = 0
    while p < n:
        while p < n and _is_sep(buf[p]):
            p += 1
        if p < n and buf[p] == _CR and (p + 1 == n or buf[p + 1] == _NL):
            p += 1
        if p >= n or buf[p] == _NL or buf[p] == _HASH:  # blank or comment-only line: no row
            while p < n and buf[p] != _NL:
                p += 1
            p += 1
            line += 1
            continue
        if row >= capacity:
            return NO_ROOM, row - row0, line, p, 0
        ok, v, p = _parse_float(buf, p, n)
        if not ok:
            return ERR_LABEL, row - row0, line, p, 0
        y[row] = v
        while p < n and _is_sep(buf[p]):
            p += 1
        if not (
            p + 4 <= n
            and buf[p] == 113
            and buf[p + 1] == 105
            and buf[p + 2] == 100
            and buf[p + 3] == _COLON
        ):  # "qid:"
            return ERR_NO_QID, row - row0, line, p, 0
        q0 = p
        p += 4
        qneg = p < n and buf[p] == 45
        if qneg:
            p += 1
        ok, q, p = _parse_uint(buf, p, n)
        if not ok or not _token_ends(buf, p, n):
            return ERR_QID, row - row0, line, q0, 0
        qid[row] = -q if qneg else q
        while True:
            while p < n and _is_sep(buf[p]):
                p += 1
            if p >= n or buf[p] == _NL or buf[p] == _HASH or buf[p] == _CR:
                break
            t0 = p
            while not _token_ends(buf, p, n) and buf[p] != _COLON:
                p += 1
            if p >= n or buf[p] != _COLON:
                return ERR_TOKEN, row - row0, line, t0, 0
            ok, fid, q = _parse_uint(buf, t0, p)
            if not ok or q != p or fid < 1:
                return ERR_FEATURE_ID, row - row0, line, t0, 0
            p += 1
            ok, v, p = _parse_float(buf, p, n)
            if not ok:
                return ERR_VALUE, row - row0, line, t0, fid
            col = fid - 1
            if col >= width:
                if fixed_width:
                    return ERR_RANGE, row - row0, line, t0, fid
                return NEED_WIDTH, row - row0, line, t0, fid
            if seen[col] == row:
                return ERR_DUPLICATE, row - row0, line, t0, fid
            seen[col] = row
            X[row, col] = v
        if p < n and buf[p] == _CR and not (p + 1 == n or buf[p + 1] == _NL):
            return ERR_TOKEN, row - row0, line, p, 0  # a stray carriage return mid-line
        has_comment = p < n and buf[p] == _HASH
        c0 = p + 1
        while p < n and buf[p] != _NL:
            p += 1
        if keep_comments and has_comment:
            comment_start[row] = c0
            comment_stop[row] = p - 1 if p > c0 and buf[p - 1] == _CR else p
        line_of_row[row] = line
        row += 1
        line += 1
        p += 1
    return OK, row - row0, line, 0, 0


@numba.njit(cache=True)
def last_newline(buf, lo, hi):
    """Index of the last newline in ``buf[lo:hi]``, or -1."""
    for i in range(hi - 1, lo - 1, -1):
        if buf[i] == _NL:
            return i
    return -1


@numba.njit(cache=True)
def max_feature_id(buf):
    """Largest ``<id>`` among the ``<id>:<value>`` tokens of ``buf`` (comments skipped).

    A cheap pre-scan used to size the output before parsing; malformed tokens are ignored
    here and reported by :func:`parse_chunk`. Returns ``(id, byte_offset)`` of the first
    token holding that id (offset -1 when there is none), so a caller can name its line.
    """
    n = buf.shape[0]
    best = np.int64(0)
    where = -1
    p = 0
    while p < n:
        c = buf[p]
        if c == _HASH:  # skip to the end of the line
            while p < n and buf[p] != _NL:
                p += 1
            continue
        if 48 <= c <= 57 and (p == 0 or _is_sep(buf[p - 1]) or buf[p - 1] == _NL):
            t0 = p
            v = np.int64(0)
            k = 0
            while p < n and 48 <= buf[p] <= 57:
                if k < 18:
                    v = v * 10 + (buf[p] - 48)
                k += 1
                p += 1
            if p < n and buf[p] == _COLON and k <= 18 and v > best:
                best = v
                where = t0
            continue
        p += 1
    return best, where


@numba.njit(cache=True)
def gather_comments(buf, start, stop, out):
    """Copy ``buf[start[i]:stop[i]]`` (whitespace-stripped) into row ``i`` of ``out``."""
    width = out.shape[1]
    for i in range(min(start.shape[0], stop.shape[0], out.shape[0])):
        a = max(start[i], 0)
        b = min(stop[i], buf.shape[0])
        while a < b and _is_sep(buf[a]):
            a += 1
        while b > a and _is_sep(buf[b - 1]):
            b -= 1
        m = min(b - a, width)
        for k in range(m):
            out[i, k] = buf[a + k]


@numba.njit(cache=True)
def comment_length(buf, start, stop):
    """Longest whitespace-stripped comment among the rows."""
    best = 0
    for i in range(min(start.shape[0], stop.shape[0])):
        a = max(start[i], 0)
        b = min(stop[i], buf.shape[0])
        while a < b and _is_sep(buf[a]):
            a += 1
        while b > a and _is_sep(buf[b - 1]):
            b -= 1
        best = max(best, b - a)
    return best
