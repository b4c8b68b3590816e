"""The numba disk cache of the kernels (selrank._numba): keyed on every kernel module a kernel's
code comes from, and read from a location that cannot be written (issues 30, 31)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from selrank import _numba as N
from selrank import fast as K

needs_numba = pytest.mark.skipif(not K.available(), reason="numba is not installed")
ROOT = Path(__file__).resolve().parents[1]

# One weighted pairwise call on the kernel; prints the kernel's cache hits and misses. Running
# as root (which ignores file modes), the child refuses writes under READ_ONLY itself, as the
# file system does for any other user of a read-only folder.
CHILD = textwrap.dedent(
    """
    import builtins, json, os, sys, tempfile
    ro = os.environ.get("READ_ONLY")
    if ro and os.geteuid() == 0:
        real_open, real_tmp = builtins.open, tempfile.TemporaryFile

        def guarded_open(file, mode="r", *a, **k):
            if any(c in mode for c in "wax+") and os.path.abspath(str(file)).startswith(ro):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, mode, *a, **k)

        def guarded_tmp(*a, dir=None, **k):
            if dir is not None and os.path.abspath(str(dir)).startswith(ro):
                raise PermissionError(13, "Permission denied", str(dir))
            return real_tmp(*a, dir=dir, **k)

        builtins.open, tempfile.TemporaryFile = guarded_open, guarded_tmp
    import numpy as np
    from selrank import _numba, set_kernel_policy
    from selrank.losses import WeightedPairwise
    set_kernel_policy("eager")
    bound = WeightedPairwise().bind(np.array([2.0, 0, 1, 1, 0, 3, 0, 0]), group=[3, 5])
    bound.grad_hess(np.linspace(0.0, 1.0, 8))
    from selrank.fast import _weighted_pairwise as W
    stats = W._kernel_odd.stats
    print(json.dumps({"hits": sum(stats.cache_hits.values()),
                      "misses": sum(stats.cache_misses.values())}))
    """
)


def _child(cache: Path, read_only: bool = False) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    env.pop("SELRANK_KERNELS", None)
    if read_only:
        env["READ_ONLY"] = str(cache)
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _read_only(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@needs_numba
@pytest.mark.slow
def test_warm_read_only_cache_is_used(tmp_path):
    """An image build fills the cache, then the folder becomes read-only: later processes load
    the kernel from it (no compile, no error); a cold read-only folder is passed over (numba's next
    location, or a compile), without an error."""
    warm = tmp_path / "warm"
    warm.mkdir()
    assert _child(warm) == {"hits": 0, "misses": 1}
    _read_only(warm)
    try:
        assert _child(warm, read_only=True) == {"hits": 1, "misses": 0}
        cold = tmp_path / "cold"
        cold.mkdir()
        _read_only(cold)
        _child(cold, read_only=True)  # (compiled, or loaded from another location): no error
        assert list(cold.rglob("*.nb[ic]")) == []  # nothing written
    finally:
        for p in [warm, *warm.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_files_stamp_follows_each_files_contents(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    before = N._files_stamp((str(a), str(b)))
    assert N._files_stamp((str(a), str(b))) == before
    b.write_text("y = 3\n")  # an edit to the other module alone
    assert N._files_stamp((str(a), str(b))) != before


@needs_numba
def test_cache_key_covers_the_imported_kernel_modules():
    """The weighted kernel inlines selrank.fast._links' link and calls selrank.fast._sampled's
    ranking: an edit to either makes its cached code stale (numba's own key saw only the
    kernel's file, issue 31)."""
    K.weighted_pairwise(
        np.zeros(3), np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]),
        np.array([0, 3]), None, np.ones(1), K.kernel_link(__import__("selrank").links.Sinh()),
        False, 0.0, "topk", 2, 0, True,
    )  # fmt: skip
    deps = N._depends["selrank.fast._weighted_pairwise"]
    assert {"selrank.fast._links", "selrank.fast._sampled"} <= deps
    from selrank.fast import _weighted_pairwise as W

    cache = W._kernel_odd._cache
    if "selrank.fast._weighted_pairwise._kernel_odd" not in N._uncached:
        files = tuple(sorted(str(sys.modules[m].__file__) for m in deps))
        assert cache._cache_file._source_stamp[1] == N._files_stamp(files)


def test_bad_environment_policy_is_refused_at_import():
    """A typo in SELRANK_KERNELS stops ``import selrank.losses`` (every fit imports it) with the variable's name, as
    set_kernel_policy refuses it (it was ignored until a kernel decision read it, issue 30)."""
    env = dict(os.environ, SELRANK_KERNELS="eagre", PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", "import selrank.losses"], env=env, capture_output=True, text=True
    )
    assert out.returncode != 0
    assert "SELRANK_KERNELS" in out.stderr and "'eagre'" in out.stderr
    env["SELRANK_KERNELS"] = " Eager "
    ok = subprocess.run(
        [sys.executable, "-c", "import selrank.losses"], env=env, capture_output=True
    )
    assert ok.returncode == 0
