"""The README's code runs as written (every ```python block, in order, in one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_code():
    assert len(_blocks()) >= 4


@pytest.mark.slow
def test_readme_code_runs():
    namespace: dict = {}
    for i, block in enumerate(_blocks()):
        try:
            exec(compile(block, f"README.md block {i}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message names the failing block
            raise AssertionError(f"README python block {i} failed: {exc!r}\n{block}") from exc
    assert namespace["scores"] is not None
