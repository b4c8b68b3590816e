"""Small helpers for concise text and HTML representations shown in notebooks.

Objects users look at in Jupyter (reports, results) implement ``__repr__`` as one short
line and ``_repr_html_`` as a small table built here. Nothing here imports more than the
standard library and NumPy.

Examples
--------
>>> print(html_table([("link", "Exp()"), ("grid", "401 points")], title="report"))
<table class="selrank-repr"...><th colspan="2"...>report</th>...<td ...>Exp()</td>...</table>
>>> format_value(0.123456789), format_value(np.arange(5.0))
('0.1235', 'array(5,) in [0, 4]')
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["format_value", "html_table"]

_STYLE = "border-collapse:collapse;font-size:90%"
_CELL = "padding:2px 8px;text-align:left;vertical-align:top"


def format_value(value: Any, *, digits: int = 4) -> str:
    """A short string for a table cell: numbers to ``digits`` significant digits, arrays as shape and range.

    Examples
    --------
    >>> format_value(3), format_value(2.0), format_value(None), format_value((-3.0, 0.0, 3.0))
    ('3', '2', '—', '(-3, 0, 3)')
    """
    if value is None:
        return "—"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):.{digits}g}"
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return f"array{value.shape} (empty)"
        if np.issubdtype(value.dtype, np.number):
            finite = value[np.isfinite(value)] if np.issubdtype(value.dtype, np.floating) else value
            if finite.size == 0:
                return f"array{value.shape} (no finite values)"
            lo, hi = float(finite.min()), float(finite.max())
            return f"array{value.shape} in [{lo:.{digits}g}, {hi:.{digits}g}]"
        return f"array{value.shape}"
    if (
        isinstance(value, tuple | list)
        and len(value) <= 8
        and all(isinstance(v, int | float | np.number) for v in value)
    ):
        inner = ", ".join(format_value(v, digits=digits) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    return str(value)


def html_table(
    rows: Iterable[Sequence[Any]],
    *,
    header: Sequence[str] | None = None,
    title: str | None = None,
    digits: int = 4,
) -> str:
    """An HTML table of ``rows`` (cells through :func:`format_value`, escaped).

    Parameters
    ----------
    rows : iterable of sequences
        One sequence of cells per row (``(name, value)`` pairs for a key–value table).
    header : sequence of str, optional
        Column names.
    title : str, optional
        A first row spanning all columns (the object's type and name).
    digits : int
        Significant digits of floats.

    Returns
    -------
    str
    """
    body = [[html.escape(format_value(c, digits=digits)) for c in row] for row in rows]
    width = max([len(r) for r in body] + [len(header or ()), 1])
    parts = [f'<table class="selrank-repr" style="{_STYLE}">']
    if title is not None:
        parts.append(f'<tr><th colspan="{width}" style="{_CELL}">{html.escape(title)}</th></tr>')
    if header is not None:
        parts.append(
            "<tr>"
            + "".join(f'<th style="{_CELL}">{html.escape(str(h))}</th>' for h in header)
            + "</tr>"
        )
    for row in body:
        parts.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in row) + "</tr>")
    parts.append("</table>")
    return "".join(parts)
