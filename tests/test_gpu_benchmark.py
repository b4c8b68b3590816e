"""The GPU run's preparation, checked without a GPU (issue 28).

``scripts/gpu_parts.py`` carries XGBoost's CUDA wheel to a device machine in parts (the device
tool sends at most 64 MiB a call) and puts it back together there; ``benchmarks/gpu_xgboost.py``
has a CPU dry run (``--smoke``) that runs every section with NumPy arrays standing for the
device, with only what a bare device machine has importable (no LightGBM, polars or pandas).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_parts  # noqa: E402


def _wheel(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "dl" / "pkg-1.0-py3-none-any.whl"
    path.parent.mkdir()
    path.write_bytes(os.urandom(size))
    return path


def test_split_stash_assemble_round_trip(tmp_path):
    wheel = _wheel(tmp_path, 10_000)
    extra = tmp_path / "dl" / "small-1.0-py3-none-any.whl"
    extra.write_bytes(b"small wheel")
    folders = gpu_parts.split(wheel, tmp_path / ".whl", 4_000, [extra])
    assert [f.name for f in folders] == ["c1", "c2", "c3"]
    assert all(p.stat().st_size <= 4_000 for f in folders for p in f.iterdir() if ".part" in p.name)
    assert (folders[-1] / extra.name).is_file()
    stash = tmp_path / "stash"
    # one call per folder: the set is incomplete until the last one arrives
    for k, folder in enumerate(folders, 1):
        carried = tmp_path / f"call{k}"
        (carried / folder.name).mkdir(parents=True)
        for p in folder.iterdir():
            (carried / folder.name / p.name).write_bytes(p.read_bytes())
        gpu_parts.stash(carried, stash)
        if k < len(folders):
            with pytest.raises(FileNotFoundError, match=f"{len(folders) - k} of 3 parts missing"):
                gpu_parts.assemble(stash, tmp_path / "out")
    out = gpu_parts.assemble(stash, tmp_path / "out")
    assert out.read_bytes() == wheel.read_bytes()
    assert (tmp_path / "out" / extra.name).read_bytes() == b"small wheel"


def test_assemble_refuses_a_damaged_part(tmp_path):
    wheel = _wheel(tmp_path, 9_000)
    folders = gpu_parts.split(wheel, tmp_path / ".whl", 5_000)
    part = next(p for p in folders[1].iterdir() if ".part" in p.name)
    data = bytearray(part.read_bytes())
    data[17] ^= 0xFF
    part.write_bytes(bytes(data))
    stash = tmp_path / "stash"
    gpu_parts.stash(tmp_path / ".whl", stash)
    with pytest.raises(ValueError, match="SHA-256"):
        gpu_parts.assemble(stash, tmp_path / "out")
    assert not (tmp_path / "out" / wheel.name).exists()
    manifest = json.loads((stash / gpu_parts.MANIFEST).read_text())
    assert manifest["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_assemble_without_any_part_says_so(tmp_path):
    assert gpu_parts.main(["assemble", str(tmp_path), "--to", str(tmp_path / "o")]) == 3
    with pytest.raises(FileNotFoundError, match="no part has been stashed"):
        gpu_parts.assemble(tmp_path, tmp_path / "o")
    with pytest.raises(ValueError, match="positive"):
        gpu_parts.split(_wheel(tmp_path, 10), tmp_path / ".whl", 0)


# A bare device machine has NumPy, SciPy, scikit-learn, numba, torch and CuPy, not these.
_BLOCK = "import sys\nfor m in ('lightgbm', 'polars', 'pandas', 'matplotlib', 'dask'): sys.modules[m] = None\n"


@pytest.mark.slow
def test_gpu_benchmark_dry_run(tmp_path):
    out = tmp_path / "gpu.json"
    code = _BLOCK + (
        "import runpy\n"
        f"sys.argv = ['gpu_xgboost.py', '--smoke', '--out', {str(out)!r}]\n"
        f"runpy.run_path({str(ROOT / 'benchmarks' / 'gpu_xgboost.py')!r}, run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    for section in ("environment", "correctness", "transfers", "estimator"):
        assert "error" not in doc[section], doc[section]
    assert doc["correctness"]["passed"] is True
    assert set(doc["correctness"]["losses"]) == {"pointwise", "listwise", "pairwise"}
    assert "skipped" in doc["transfers"]  # nothing crosses a bus on the dry run
    (speed,) = doc["speed"]
    methods = {r["method"] for r in speed["results"]}
    assert "XGBoost rank:ndcg" in methods and "selrank listwise (device loop)" in methods
    assert all(r["seconds_per_round"] > 0 for r in speed["results"])
    assert doc["estimator"]["cpu"]["finite"] is True
