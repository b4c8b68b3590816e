"""Every benchmark script runs at HEAD: ``python benchmarks/NAME.py --smoke`` (issue 27).

The scripts are found by glob, so a new benchmark is checked from the day it lands (and fails
here until it has a ``--smoke`` mode: CONTRIBUTING, "Benchmarks"). Each runs in its own process,
as a user runs it, with a timeout; it must exit 0, write its JSON to ``$SELRANK_SMOKE_DIR`` and
leave ``benchmarks/results/`` and ``docs/figures/`` byte for byte as they were. A script that
cannot run here (a missing optional dependency, no git history) is skipped with the reason.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
#: exit status of a smoke run that cannot run here (benchmarks/_smoke.py: SKIP)
SKIP = 77
#: seconds one smoke run may take (they take seconds; generous for a loaded CI machine)
TIMEOUT = 600
#: optional packages a script needs beyond the test dependencies; skipped without them
REQUIRES = {
    "dask_xgboost.py": ("dask", "distributed"),
    "dask_lightgbm.py": ("dask", "distributed"),
    "deployment.py": ("onnxruntime", "onnxmltools", "treelite", "tl2cgen", "torch", "pandas"),
    "mechanism.py": ("torch",),
    "torch_heads.py": ("torch",),
    "fast_paths_ab.py": ("torch",),
}
#: scripts owned elsewhere that may not have their smoke mode yet (reported as xfail)
PENDING: dict[str, str] = {}
WATCHED = (BENCHMARKS / "results", ROOT / "docs" / "figures")


def _snapshot() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in WATCHED
        if folder.is_dir()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_every_benchmark_is_collected() -> None:
    """The glob finds the scripts (a moved folder must not turn this file into a no-op)."""
    assert len(SCRIPTS) >= 20, SCRIPTS
    assert "noise.py" in SCRIPTS and "_smoke.py" not in SCRIPTS


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_smoke(script: str, tmp_path: Path) -> None:
    missing = [m for m in REQUIRES.get(script, ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{script} needs {', '.join(missing)}")
    source = (BENCHMARKS / script).read_text()
    if script in PENDING and '"--smoke"' not in source:
        pytest.xfail(f"{script} has no --smoke yet: {PENDING[script]}")
    env = dict(os.environ, SELRANK_SMOKE_DIR=str(tmp_path), MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("SELRANK_KERNELS", None)  # the library's default kernel policy, as a user runs it
    before = _snapshot()
    try:
        proc = subprocess.run(
            [sys.executable, str(BENCHMARKS / script), "--smoke"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script} --smoke ran past {TIMEOUT} s:\n{(exc.stderr or '')[-3000:]}")
    output = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    if proc.returncode == SKIP:
        pytest.skip(f"{script}: {proc.stdout.strip().splitlines()[-1]}")
    assert proc.returncode == 0, f"{script} --smoke exited {proc.returncode}\n{output}"
    written = sorted(tmp_path.glob("*.json"))
    assert written, f"{script} --smoke wrote no JSON to $SELRANK_SMOKE_DIR\n{output}"
    for path in written:
        json.loads(path.read_text())  # a whole JSON document, not a partial write
    after = _snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"{script} --smoke changed committed files: {changed}"
