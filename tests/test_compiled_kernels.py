"""The numba kernels: imported lazily, working without a writable cache, bounds checked.

The cache tests run in subprocesses: numba reads its cache configuration once per process.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from selrank.fast import _links as K
from selrank.fast import _pairwise, _sampled

ROOT = Path(__file__).resolve().parents[1]
needs_numba = pytest.mark.skipif(not K.available(), reason="numba is not installed")

# a kernel of each module runs, and the results match the generic (numba-free) paths
USE_KERNELS = """
import numpy as np
import selrank._numba as N
from selrank.losses import Pairwise
rng = np.random.default_rng(0)
y = rng.integers(0, 4, 60).astype(float)
z = rng.normal(size=60)
loss = Pairwise("sinh", cap=3.0)
g, h = loss.bind(y, group=[20, 25, 15]).grad_hess(z)
assert loss.bind(y, group=[20, 25, 15])._kernel is not None, "kernel path not taken"
g2, h2 = Pairwise("sinh", cap=3.0).grad_hess(z, y, group=[20, 25, 15])
assert np.allclose(g, g2) and np.allclose(h, h2)
top = Pairwise("sinh", cap=3.0, pair_method="topk", num_pair_per_sample=3)  # selrank.fast._sampled
gt, ht = top.grad_hess(z, y, group=[20, 25, 15])
assert np.isfinite(gt).all() and np.isfinite(ht).all()
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    from selrank.links import Exp
    from selrank.fast._pointwise_torch import exp_bregman_grad
    zt = torch.linspace(-1, 1, 50, dtype=torch.float64)
    out = exp_bregman_grad(Exp(), zt, torch.zeros(50, dtype=torch.float64))
    assert out is not None and torch.isfinite(out[0]).all()
from selrank.losses import WeightedPairwise
gw, hw = WeightedPairwise("sinh").grad_hess(z, y, group=[20, 25, 15])
assert np.isfinite(gw).all() and np.isfinite(hw).all()
import os, tempfile
from selrank.datasets import read_session_clicks, read_svmlight
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "t.txt"), "w") as f:
    f.write("1 qid:1 1:0.5 2:1\\n0 qid:1 1:0.25\\n")
split = read_svmlight(os.path.join(folder, "t.txt"))
assert split.X.shape == (2, 2) and split.X[0, 1] == 1.0
with open(os.path.join(folder, "c.tsv"), "w") as f:
    f.write("SessionId\\tItemId\\tTime\\n1\\t7\\t1400000000\\n1\\t8\\t1400000030\\n")
assert read_session_clicks(os.path.join(folder, "c.tsv")).height == 2
print("CACHING", sorted(N.caching().items()))
"""


def _run(code: str, env: dict | None = None, cwd: Path = ROOT) -> str:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_import_does_not_import_numba():
    out = _run(
        "import importlib.util, sys, selrank.losses, selrank.gbdt, selrank.metrics\n"
        "if importlib.util.find_spec('torch'):\n"
        "    import selrank.torch\n"
        "print('numba' in sys.modules)\n"
        "from selrank.fast import _pairwise\n"
        "print('numba' in sys.modules)\n"
    )
    assert out.split() == ["False", "False"]


@pytest.mark.slow
@needs_numba
def test_no_cache_location_falls_back_to_no_cache():
    """numba finds no cache locator (what an arbitrary user id with a read-only home and
    install sees): the kernels compile without a cache instead of failing at import or use."""
    code = (
        "from numba.core import caching\n"
        "impl = getattr(caching, 'CacheImpl', None) or caching._CacheImpl\n"
        "impl._locator_classes = []\n"  # numba: 'cannot cache ...: no locator available'
        "import selrank.losses\n" + USE_KERNELS
    )
    out = _run(code)
    line = next(x for x in out.splitlines() if x.startswith("CACHING"))
    assert "_sampled_kernel', False" in line or "_kernel', False" in line, line
    assert "True" not in line, line


@pytest.mark.slow
@needs_numba
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can write read-only folders"
)
def test_read_only_home_and_install(tmp_path):
    """The real container case: HOME read-only, NUMBA_CACHE_DIR unwritable, package read-only."""
    pkg = tmp_path / "site"
    shutil.copytree(ROOT / "selrank", pkg / "selrank", ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "home"
    home.mkdir()
    unwritable = tmp_path / "cache"
    unwritable.mkdir()
    for path in [*pkg.rglob("*"), pkg, home, unwritable]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "NUMBA_CACHE_DIR": str(unwritable / "numba"),
        "PYTHONPATH": str(pkg),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    try:
        out = _run("import selrank.losses\n" + USE_KERNELS, env=env, cwd=tmp_path)
    finally:
        for path in [pkg, *pkg.rglob("*"), home, unwritable]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert "CACHING" in out


@pytest.mark.slow
@needs_numba
def test_writable_cache_is_used(tmp_path):
    out = _run(USE_KERNELS, env={"NUMBA_CACHE_DIR": str(tmp_path)})
    line = next(x for x in out.splitlines() if x.startswith("CACHING"))
    assert "False" not in line, line
    assert any(tmp_path.rglob("*.nbi")), "no numba index file written"


# -- bounds: a kernel never writes outside the arrays it is given ---------------------------


def _params():
    from selrank.links import Sinh

    return K.kernel_link(Sinh(cap=3.0))


@needs_numba
@pytest.mark.parametrize(
    "offsets",
    [[0, 5, 12], [0, 7, 3, 10], [-1, 10], [0, 10, 11]],
    ids=["past-end", "decreasing", "negative", "one-past"],
)
def test_kernels_refuse_offsets_out_of_bounds(offsets):
    pred, y = np.zeros(10), np.arange(10.0)
    off = np.array(offsets, dtype=np.int64)
    grad, hess = np.zeros(10), np.zeros(10)
    scratch = [np.empty(12) for _ in range(4)]
    with pytest.raises(IndexError, match="out of bounds"):
        _pairwise._kernel(pred, y, off, np.zeros(0), False, _params(), 0, grad, hess, *scratch)
    with pytest.raises(IndexError, match="out of bounds"):
        _sampled._sampled_kernel(
            pred, y, off, np.zeros(0), False, _params(), (0.0, 0.0), 0, 0, np.uint64(0),
            *[np.zeros(0, dtype=np.int64)] * 3, np.zeros(0), grad, hess, *scratch,
        )  # fmt: skip


@needs_numba
def test_kernels_refuse_short_buffers():
    pred, y = np.zeros(10), np.arange(10.0)
    off = np.array([0, 10], dtype=np.int64)
    grad, hess = np.zeros(10), np.zeros(10)
    short = [np.empty(4) for _ in range(4)]  # a query of 10 rows needs 10
    with pytest.raises(IndexError, match="out of bounds"):
        _pairwise._kernel(pred, y, off, np.zeros(0), False, _params(), 0, grad, hess, *short)
    with pytest.raises(IndexError, match="different lengths"):
        _pairwise._kernel(pred[:9], y, off, np.zeros(0), False, _params(), 0, grad, hess, *short)
    with pytest.raises(IndexError, match="query weight"):
        _pairwise._kernel(pred, y, off, np.ones(3), False, _params(), 0, grad, hess, *short)
    full = [np.empty(10) for _ in range(4)]
    runs = [np.zeros(10, dtype=np.int64), np.full(10, -3, dtype=np.int64), np.zeros(10, np.int64)]
    with pytest.raises(IndexError, match="target runs"):
        _sampled._sampled_kernel(
            pred, y, off, np.zeros(0), True, _params(), (0.0, 0.0), 2, 2, np.uint64(1),
            *runs, np.zeros(0), grad, hess, *full,
        )  # fmt: skip
    with pytest.raises(IndexError, match="loss value per query"):
        _sampled._sampled_kernel(
            pred, y, off, np.zeros(0), False, _params(), (0.0, 0.0), 0, 0, np.uint64(0),
            *[np.zeros(0, dtype=np.int64)] * 3, np.zeros(3), grad, hess, *full,
        )  # fmt: skip


@needs_numba
def test_pointwise_kernel_refuses_mismatched_lengths():
    from selrank.fast import _pointwise_torch as P

    a = np.zeros(5)
    with pytest.raises(IndexError, match="different lengths"):
        P._kernel(a, np.zeros(4), np.zeros(5), np.zeros(5), 1e-3, 2.0, 6.0, -np.inf, np.inf)


@needs_numba
def test_pairwise_sorts_match_a_stable_argsort():
    """The written-out sorts of the top-k pairs: a stable descending order, NaN last."""
    rng = np.random.default_rng(1)
    for n in [1, 2, 63, 64, 65, 300, 1025]:
        for rep in range(6):
            x = rng.integers(0, max(2, n // 4), n).astype(float) if rep % 2 else rng.normal(size=n)
            ref = np.argsort(-x, kind="stable")
            np.testing.assert_array_equal(_sampled._rank_order(x), ref)
            for kk in sorted({1, 2, max(1, n // 10), max(1, n - 1)}):
                order = _sampled._topk_order(x, kk)
                np.testing.assert_array_equal(order[:kk], ref[:kk])
                np.testing.assert_array_equal(np.sort(order), np.arange(n))
    x = rng.normal(size=200)
    x[[3, 50]] = np.nan
    order = _sampled._rank_order(x)
    assert set(order[-2:]) == {3, 50}
    np.testing.assert_array_equal(order[:-2], np.argsort(-x, kind="stable")[:-2])


def test_a_kernel_without_numba_is_an_import_error_naming_the_extra(tmp_path):
    """docs/install.md: without numba, a reader that needs a compiled kernel raises an
    ImportError naming the extra (not a RuntimeError from inside the lazy wrapper)."""
    data = tmp_path / "t.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.25\n")
    out = _run(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numba' or name.startswith('numba.'):\n"
        "            raise ImportError('numba blocked by the test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from selrank.datasets import read_svmlight\n"
        "try:\n"
        f"    read_svmlight({str(data)!r})\n"
        "except ImportError as exc:\n"
        "    print('ImportError', exc)\n"
    )
    assert out.startswith("ImportError") and "selrank[fast]" in out, out
