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


def test_readme_main_job_is_the_selection_report():
    """The quick start runs `selrank select --dataset mq2008` and prints its report as the
    command prints it: the rule the code writes, every default candidate once, a recommendation."""
    from selrank.selection import DEFAULT_CANDIDATES
    from selrank.selection._select import choice_rule

    text = README.read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    bash = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
    assert bash and bash[0].strip().endswith(".venv/bin/selrank select --dataset mq2008")
    shown = re.findall(r"```text\n(.*?)```", quick, flags=re.S)[0]
    assert f"rule: {choice_rule('NDCG@10', True, True)}." in shown
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    table = lines[start : next(i for i in range(start, len(lines)) if lines[i].startswith("("))]
    rows = [line.split()[0] for line in table]
    assert len(rows) == len(DEFAULT_CANDIDATES) and sum(" *" in line for line in table) == 1
    for name in DEFAULT_CANDIDATES:
        assert rows.count(name) == 1, name
    assert "\nShip " in shown and "test (NDCG@10, Holm over" in shown
