"""The ``--smoke`` convention every benchmark script follows (CONTRIBUTING, "Benchmarks").

``python benchmarks/NAME.py --smoke`` runs the script's whole path in seconds on tiny data, so
CI (``tests/test_benchmarks_smoke.py``) notices a benchmark that no longer runs at HEAD. A smoke
run writes its JSON to :func:`smoke_out` (``$SELRANK_SMOKE_DIR``, else a folder in the system's
temporary directory), never to ``benchmarks/results/``; its numbers mean nothing.

Not a benchmark itself (the leading underscore keeps it out of the smoke test's glob); scripts
import it only inside their ``--smoke`` branch, so loading a script as a module needs no path set.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: exit status of a smoke run that cannot run here (a missing GPU, git history, ...): the smoke
#: test reports it as skipped with the reason the script printed (automake's convention)
SKIP = 77

SMOKE_HELP = (
    "seconds on tiny data, only to check that the script runs; the JSON goes to "
    "$SELRANK_SMOKE_DIR (default: a temporary folder), never to benchmarks/results"
)


def smoke_out(name: str) -> Path:
    """The path a ``--smoke`` run of benchmark ``name`` writes its JSON to (folder created)."""
    folder = Path(
        os.environ.get("SELRANK_SMOKE_DIR") or Path(tempfile.gettempdir()) / "selrank-smoke"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.json"
