"""docs/metrics.md, from "Metric names: one grammar" to the end, runs as printed and prints
what the page shows (the metric names, run comparison and ``selrank evaluate`` sections)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```", flags=re.M | re.S)


def test_run_comparison_sections_run_as_printed(tmp_path, monkeypatch):
    pytest.importorskip("polars")
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Metric names: one grammar") :]
    fences = list(FENCE.finditer(section))
    namespace: dict = {}
    monkeypatch.chdir(tmp_path)
    n_checked = 0
    for i, fence in enumerate(fences):
        if fence.group("lang") != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(fence.group("body"), f"metrics.md block {i}", "exec"), namespace)
        printed = out.getvalue()
        after = section[fence.end() :]
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        if (
            nxt is not None
            and nxt.group("lang") == ""
            and not after[: nxt.start() - fence.end()].strip()
        ):
            assert printed.strip("\n") == nxt.group("body").strip("\n")
            n_checked += 1
        elif "to_markdown" in fence.group("body"):
            table = after[: after.index("```")].strip()
            assert table and table in printed  # the Markdown table shown under the block
            latex = next(f for f in fences[i + 1 :] if f.group("lang") == "latex")
            assert latex.group("body").strip() in printed
            n_checked += 1
    assert n_checked == 4
