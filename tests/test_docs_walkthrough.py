"""docs/gradient_walkthrough.md runs as written (every ```python block, in order, one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "gradient_walkthrough.md"


def test_walkthrough_runs():
    pytest.importorskip("lightgbm")
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 5
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{PAGE.name} block {i}", "exec"), namespace)
    assert namespace["scores"].shape == (6,)
