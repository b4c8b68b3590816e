"""The fast-path registry: lookup by class, exact matching, paths_for, the once-per-class
warning for a class without a fast path, and off()."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from selrank import fast
from selrank.links import LINKS, CallableLink, Exp, Identity, Sigmoid, Sinh, SmeLU, get_link
from selrank.losses import Listwise, Pairwise, WeightedPairwise
from selrank.scalings import SCALINGS, ExpScaling


@pytest.fixture
def fresh_warnings(monkeypatch):
    """A registry that has warned about nothing yet (the warning is once per process)."""
    monkeypatch.setattr(fast, "_warned", set())


def test_registry_is_keyed_by_class_operation_backend():
    for (cls, operation, backend), entry in fast.FAST_PATHS.items():
        assert (entry.cls, entry.operation, entry.backend) == (cls, operation, backend)
        assert backend in ("numba", "numpy", "torch")
        assert entry.generic and entry.function.startswith("selrank.fast.")
    assert fast.lookup(Sinh(), "pairwise", "numba") is fast.FAST_PATHS[(Sinh, "pairwise", "numba")]


def test_every_entry_point_exists():
    for entry in fast.FAST_PATHS.values():
        if "torch" in entry.function:
            pytest.importorskip("torch")
        assert callable(entry.load())


def test_pairwise_kernels_match_exact_classes_only(fresh_warnings):
    class MySinh(Sinh):  # could change _f, _df, _F: the kernel would not be its maths
        pass

    assert fast.paths_for(MySinh()) == [("bregman_grad", "torch")]
    with pytest.warns(fast.FastPathWarning, match="no fast pairwise path .numba. for MySinh"):
        assert fast.lookup(MySinh(), "pairwise", "numba") is None


def test_subclass_entries_skip_classes_with_their_own_loss():
    assert ("bregman_grad", "torch") not in fast.paths_for(Identity())  # own closed form
    assert ("bregman_grad", "torch") in fast.paths_for(Sigmoid())
    assert fast.paths_for(CallableLink(lambda t: t**3 + t)) == []


def test_paths_for_every_registered_link_and_scaling_is_a_list():
    for cls in {*LINKS.values(), *SCALINGS.values()}:
        if isinstance(cls, type):
            assert isinstance(fast.paths_for(cls), list)
    assert fast.paths_for(ExpScaling) == [
        ("composite_softmax", "numpy"),
        ("composite_softmax", "torch"),
    ]
    assert fast.paths_for(Exp()) == [
        ("pairwise", "numba"),
        ("weighted_pairwise", "numba"),
        ("bregman_grad", "numba"),
        ("bregman_grad", "torch"),
    ]


def test_table_lists_every_entry():
    lines = fast.table().splitlines()
    assert len(lines) == 1 + len(fast.FAST_PATHS)
    assert lines[0].split()[:3] == ["class", "operation", "backend"]


def _bind(loss, n=8):
    y = np.arange(n, dtype=np.float64) % 3
    return loss.bind(y, group=[n // 2, n - n // 2])


@pytest.mark.skipif(not fast.available(), reason="numba is not installed")
def test_a_link_without_the_kernel_warns_once_per_class_and_operation(fresh_warnings):
    with pytest.warns(fast.FastPathWarning) as record:
        _bind(Pairwise(SmeLU()))
        _bind(Pairwise(SmeLU(c=2.0)))  # the same class: no second warning
        _bind(WeightedPairwise(SmeLU()))  # another operation: one more
    assert len(record) == 2
    msg = str(record[0].message)
    assert "SmeLU" in msg and "Identity, Exp, Sinh, Sigmoid" in msg and "generic path" in msg
    assert record[0].filename == __file__  # points at the caller, not inside selrank
    b = _bind(Pairwise(SmeLU()))
    assert b._kernel is None  # the generic path, still correct
    g, h = b.grad_hess(np.zeros(8))
    assert np.all(np.isfinite(g)) and np.all(h >= 0)


@pytest.mark.skipif(not fast.available(), reason="numba is not installed")
def test_default_links_and_scalings_do_not_warn(fresh_warnings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (cosh: a non-convex Q, said elsewhere)
        warnings.simplefilter("error", fast.FastPathWarning)
        for name in ("identity", "exp", "sinh", "sigmoid"):
            assert _bind(Pairwise(get_link(name)))._kernel is not None
        _bind(Pairwise())
        _bind(WeightedPairwise())
        for scaling in SCALINGS:
            if scaling not in ("poly",):  # (every scaling is served; poly needs params)
                Listwise(scaling).grad_hess(np.zeros(8), np.arange(8.0) % 3, group=[4, 4])


def test_off_switches_every_fast_path_off_without_warning(fresh_warnings):
    with warnings.catch_warnings():
        warnings.simplefilter("error", fast.FastPathWarning)
        with fast.off():
            for key in fast.FAST_PATHS:
                assert fast.lookup(key[0] if key[0] is not Exp else Exp(), key[1], key[2]) is None
            assert _bind(Pairwise())._kernel is None
    assert fast.lookup(Exp(), "pairwise", "numba") is not None


@pytest.mark.skipif(not fast.available(), reason="numba is not installed")
def test_warm_up_builds_the_pairwise_kernels():
    import selrank._numba as N
    from selrank.fast import _pairwise, _sampled

    fast.warm_up(torch=False)  # the documented public place (docs/reliability.md)
    assert not isinstance(_pairwise._kernel, N.LazyKernel)
    assert not isinstance(_sampled._sampled_kernel, N.LazyKernel)


def test_importing_the_room_imports_neither_numba_nor_torch():
    import subprocess
    import sys

    code = (
        "import sys, selrank.fast\n"
        "print('numba' in sys.modules, 'torch' in sys.modules, len(selrank.fast.FAST_PATHS))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[:2] == ["False", "False"]


@pytest.mark.skipif(not fast.available(), reason="numba is not installed")
def test_warm_up_compiles_each_pairwise_kernel_once_for_what_the_losses_pass():
    """Every disk-cached kernel of the pairwise modules (one per pair method and link family
    since issue 29) is compiled by ``warm_up``, and the losses' own calls add no
    specialisation: an image that ran ``warm_up`` holds what a fit loads. (In a fresh process
    each has exactly one; other tests may have added their own before this one.)"""
    import numpy as np

    import selrank._numba as N
    from selrank.losses import Pairwise, WeightedPairwise

    fast.warm_up(torch=False)
    modules = ("selrank.fast._pairwise", "selrank.fast._sampled", "selrank.fast._weighted_pairwise")
    kernels = [k for m in modules for k in N._kernels[m] if k.options.get("cache")]
    assert {k.name.rsplit(".", 1)[1] for k in kernels} >= {
        "_kernel_odd",
        "_kernel_ranked",
        "_kernel_mean",
        "_kernel_pairs",
    }

    def counts():
        return {k.name: len(k.dispatcher.signatures) for k in kernels}

    before = counts()
    assert min(before.values()) >= 1, before
    rng = np.random.default_rng(0)
    sizes = np.array([30, 50, 20])
    y = rng.integers(0, 5, sizes.sum()).astype(float)
    z = rng.normal(size=sizes.sum())
    previous = N.set_kernel_policy("eager")
    try:
        for loss in (
            Pairwise(),
            Pairwise(pair_method="topk", num_pair_per_sample=4),
            Pairwise("exp", pair_method="topk", num_pair_per_sample=4),
            Pairwise(pairs="distinct", pair_method="topk", num_pair_per_sample=4),
            Pairwise(pair_method="mean", num_pair_per_sample=3),
            Pairwise(pairs="distinct", pair_method="mean", num_pair_per_sample=3),
            WeightedPairwise(num_pair_per_sample=4),
            WeightedPairwise(pair_method="mean", num_pair_per_sample=3),
        ):
            loss.bind(y, group=sizes).grad_hess(z)
    finally:
        N.set_kernel_policy(previous)
    assert counts() == before
