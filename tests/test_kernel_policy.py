"""The kernel policy (selrank._numba): when the numba kernels run instead of the generic paths.

``"auto"`` switches from the generic path to the kernel at a call number fixed by the work per
call (never by the process: a numba cache, timings), at once above the pair cap; ``"eager"``
runs the kernel from the first call, ``"never"`` not at all; bad values are refused by name.
The paths agree to rounding, so a fit under any policy gives the same model to ~1e-9.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import selrank
from selrank import _numba as N
from selrank import fast as K  # the losses call the kernels through selrank.fast
from selrank.losses import Pairwise, WeightedPairwise

needs_numba = pytest.mark.skipif(not K.available(), reason="numba is not installed")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _restore_policy():
    previous = N.set_kernel_policy(None)
    try:
        yield
    finally:
        N.set_kernel_policy(previous)


def _data(rng, n_groups=6, size=8):
    sizes = np.full(n_groups, size)
    n = int(sizes.sum())
    return rng.integers(0, 4, size=n).astype(float), rng.normal(size=n), sizes


# -- the switch ------------------------------------------------------------------------------


def test_policy_values_and_precedence(monkeypatch):
    monkeypatch.setenv("SELRANK_KERNELS", " Never ")
    assert N.kernel_policy() == "never"  # the environment, read at each decision
    monkeypatch.delenv("SELRANK_KERNELS")
    assert N.kernel_policy() == "auto"  # the default
    assert N.set_kernel_policy("EAGER") is None  # previous: from the environment
    monkeypatch.setenv("SELRANK_KERNELS", "never")
    assert N.kernel_policy() == "eager"  # the call wins over the environment
    assert N.set_kernel_policy(None) == "eager"
    assert N.kernel_policy() == "never"
    assert selrank.set_kernel_policy is N.set_kernel_policy
    assert selrank.kernel_policy is N.kernel_policy


@pytest.mark.parametrize("bad", ["fast", "", 1, True, ["auto"]])
def test_bad_policy_is_refused(bad):
    with pytest.raises(ValueError, match=r"kernel policy must be one of 'auto', 'eager', 'never'"):
        N.set_kernel_policy(bad)
    assert N.kernel_policy() in N.POLICIES  # nothing changed


def test_bad_environment_value_is_refused_by_name(monkeypatch, rng):
    monkeypatch.setenv("SELRANK_KERNELS", "sometimes")
    with pytest.raises(ValueError, match=r"environment variable SELRANK_KERNELS .*'sometimes'"):
        N.use_kernel("pairwise", 0, 10)
    if K.available():  # a loss with a kernel asks at its first grad_hess
        y, z, sizes = _data(rng)
        with pytest.raises(ValueError, match="SELRANK_KERNELS"):
            Pairwise().bind(y, group=sizes).grad_hess(z)


def test_unknown_kernel_name():
    N.set_kernel_policy("auto")
    with pytest.raises(KeyError, match="no break-even work for kernel 'pairwse'"):
        N.use_kernel("pairwse", 3, 10)


@pytest.mark.parametrize("kernel", sorted(N.BREAK_EVEN))
@pytest.mark.parametrize("work", [1, 977, 123_457, 4_000_000])
def test_auto_switches_at_break_even(kernel, work):
    """The first kernel call is the first whose generic work before it reaches the break-even
    work: a pure function of (call, work), the same on every evaluation."""
    N.set_kernel_policy("auto")
    first = -(-N.BREAK_EVEN[kernel] // work)  # ceil: smallest t with t * work >= break-even
    assert not N.use_kernel(kernel, first - 1, work)
    assert N.use_kernel(kernel, first, work) and N.use_kernel(kernel, first + 1, work)
    assert not N.use_kernel(kernel, 0, work)
    assert [N.use_kernel(kernel, first - 1, work) for _ in range(3)] == [False] * 3


def test_auto_runs_big_pair_counts_on_the_kernel_at_once():
    N.set_kernel_policy("auto")
    cap = N.GENERIC_PAIR_CAP
    assert not N.use_kernel("pairwise", 0, cap)
    for kernel in ("pairwise", "pairwise_sampled", "weighted_pairwise"):
        assert N.use_kernel(kernel, 0, cap + 1)
    assert not N.use_kernel("exp_bregman", 0, cap + 1)  # items, not pairs: no memory rule


def test_eager_and_never():
    N.set_kernel_policy("eager")
    assert N.use_kernel("pairwise", 0, 1)
    N.set_kernel_policy("never")
    assert not N.use_kernel("pairwise", 10**9, N.GENERIC_PAIR_CAP * 10)


# -- the losses follow it --------------------------------------------------------------------


def _spy(monkeypatch, name):
    calls = []
    real = getattr(K, name)

    def spy(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(K, name, spy)
    return calls


def _gradients(loss, y, sizes, zs):
    bound = loss.bind(y, group=sizes)
    return bound, [bound.grad_hess(z) for z in zs]


@needs_numba
@pytest.mark.parametrize(
    "loss, entry, kernel",
    [
        (lambda: Pairwise(), "pairwise_grad_hess", "pairwise"),
        (lambda: Pairwise(pairs="distinct", link="exp"), "pairwise_grad_hess", "pairwise"),
        (
            lambda: Pairwise(pair_method="topk", num_pair_per_sample=3),
            "pairwise_sampled",
            "pairwise_sampled",
        ),
        (
            lambda: Pairwise(pair_method="mean", num_pair_per_sample=2, seed=4),
            "pairwise_sampled",
            "pairwise_sampled",
        ),
    ],
)
def test_pairwise_switches_at_the_computed_call(monkeypatch, rng, loss, entry, kernel):
    y, _, sizes = _data(rng)
    zs = [rng.normal(size=y.size) for _ in range(7)]
    work = loss().bind(y, group=sizes)._work
    monkeypatch.setitem(N.BREAK_EVEN, kernel, 3 * work)  # the kernel from call 3 on
    N.set_kernel_policy("auto")
    calls = _spy(monkeypatch, entry)
    bound, auto = _gradients(loss(), y, sizes, zs)
    assert len(calls) == 4  # calls 3, 4, 5, 6
    N.set_kernel_policy("never")
    _, never = _gradients(loss(), y, sizes, zs)
    N.set_kernel_policy("eager")
    _, eager = _gradients(loss(), y, sizes, zs)
    assert len(calls) == 4 + 7
    for t, ((ga, ha), (gn, hn), (ge, he)) in enumerate(zip(auto, never, eager)):
        same = (gn, hn) if t < 3 else (ge, he)  # auto is one path or the other, bit for bit
        np.testing.assert_array_equal(ga, same[0])
        np.testing.assert_array_equal(ha, same[1])
        np.testing.assert_allclose(gn, ge, rtol=1e-9, atol=1e-12)  # and they agree to rounding
        np.testing.assert_allclose(hn, he, rtol=1e-9, atol=1e-12)


@needs_numba
def test_weighted_pairwise_switches_at_the_computed_call(monkeypatch, rng):
    from selrank import fast as W

    y, _, sizes = _data(rng)
    zs = [rng.normal(size=y.size) for _ in range(5)]
    work = WeightedPairwise().bind(y, group=sizes)._work
    monkeypatch.setitem(N.BREAK_EVEN, "weighted_pairwise", 2 * work)
    calls = []
    real = W.weighted_pairwise
    monkeypatch.setattr(W, "weighted_pairwise", lambda *a: calls.append(1) or real(*a))
    N.set_kernel_policy("auto")
    _, auto = _gradients(WeightedPairwise(), y, sizes, zs)
    assert len(calls) == 3
    N.set_kernel_policy("eager")
    _, eager = _gradients(WeightedPairwise(), y, sizes, zs)
    for (ga, ha), (ge, he) in zip(auto, eager):
        np.testing.assert_allclose(ga, ge, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ha, he, rtol=1e-9, atol=1e-12)


@needs_numba
def test_memory_rule_skips_the_pair_arrays(monkeypatch, rng):
    """Above the pair cap "auto" runs the kernel from the first call and never builds the
    ~40 bytes per pair of the generic path; "never" builds them."""
    y, z, sizes = _data(rng)
    n_pairs = int(np.sum(sizes * (sizes - 1) // 2))
    monkeypatch.setattr(N, "GENERIC_PAIR_CAP", n_pairs - 1)
    N.set_kernel_policy("auto")
    bound = Pairwise().bind(y, group=sizes)
    bound.grad_hess(z)
    assert bound._pairs is None
    N.set_kernel_policy("never")
    bound = Pairwise().bind(y, group=sizes)
    bound.grad_hess(z)
    assert bound._pairs is not None and bound._pairs["a"].size == n_pairs


def test_small_fit_does_not_import_numba():
    """A short pairwise fit under "auto" stays on the generic path: numba is not imported
    (nor compiled); under "eager" it is."""
    code = (
        "import sys, numpy as np\n"
        "from selrank.losses import Pairwise\n"
        "rng = np.random.default_rng(0)\n"
        "y = rng.integers(0, 4, 400).astype(float)\n"
        "b = Pairwise().bind(y, group=[40] * 10)\n"
        "for _ in range(5): b.grad_hess(rng.normal(size=400))\n"
        "print('numba' in sys.modules)\n"
    )
    out = {}
    for policy in ("auto", "eager"):
        env = dict(os.environ, SELRANK_KERNELS=policy, PYTHONPATH=str(ROOT))
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        out[policy] = run.stdout.strip()
    assert out["auto"] == "False"
    assert out["eager"] == ("True" if K.available() else "False")


@needs_numba
def test_estimator_fit_is_the_same_model_under_every_policy(rng):
    """The public route: a SelectiveRanker pairwise fit under "auto" (generic on this small
    set) and "never" is the same model bit for bit, and "eager" (the kernel) agrees to
    rounding."""
    pytest.importorskip("lightgbm")
    from selrank.estimators import SelectiveRanker

    sizes = np.full(30, 12)
    X = rng.normal(size=(int(sizes.sum()), 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=X.shape[0]) + 1.5), 0, 4)
    preds = {}
    for policy in ("auto", "never", "eager"):
        N.set_kernel_policy(policy)
        model = SelectiveRanker(loss="pairwise", n_estimators=5, verbose=False)
        preds[policy] = model.fit(X, y, group=sizes).predict(X)
    np.testing.assert_array_equal(preds["auto"], preds["never"])
    np.testing.assert_allclose(preds["auto"], preds["eager"], rtol=1e-9, atol=1e-9)


# -- the torch heads' exp kernel -------------------------------------------------------------


@needs_numba
def test_torch_exp_kernel_follows_the_policy(monkeypatch):
    torch = pytest.importorskip("torch")
    from selrank.fast import _pointwise_torch as P
    from selrank.links import Exp

    z = torch.linspace(-1.0, 1.0, 50, dtype=torch.float64)
    y = torch.linspace(0.5, -0.5, 50, dtype=torch.float64)
    monkeypatch.setitem(N.BREAK_EVEN, "exp_bregman", 2 * (50 + N.EXP_BREGMAN_CALL))
    N.set_kernel_policy("auto")
    link = Exp()
    served = [P.exp_bregman_grad(link, z, y) is not None for _ in range(4)]
    assert served == [False, False, True, True]  # calls 0, 1 generic; the kernel from call 2
    assert P.exp_bregman_grad(Exp(), z, y) is None  # another link (head): its own count
    values, grad = P.exp_bregman_grad(link, z, y)
    v, g = link.bregman_grad(z, y)
    torch.testing.assert_close(grad, g, rtol=0, atol=0)
    torch.testing.assert_close(values, v, rtol=1e-15, atol=1e-15)
    N.set_kernel_policy("never")
    assert P.exp_bregman_grad(link, z, y) is None
    N.set_kernel_policy("eager")
    assert P.exp_bregman_grad(Exp(), z, y) is not None


@needs_numba
def test_torch_pairwise_head_follows_the_policy(monkeypatch):
    torch = pytest.importorskip("torch")
    from selrank.torch import PairwiseLoss
    from selrank.torch.heads import _selective

    calls = []
    real = _selective.pairwise_kernel_terms
    monkeypatch.setattr(_selective, "pairwise_kernel_terms", lambda *a: calls.append(1) or real(*a))
    z = torch.linspace(-1.0, 1.0, 24, dtype=torch.float64).reshape(3, 8)
    y = torch.arange(24, dtype=torch.float64).remainder(4).reshape(3, 8)
    monkeypatch.setitem(N.BREAK_EVEN, "pairwise_sampled", 2 * 3 * 28)  # 28 pairs per list
    N.set_kernel_policy("auto")
    head = PairwiseLoss()
    auto = [head(z, y) for _ in range(4)]
    assert len(calls) == 2  # forward passes 0, 1 on the torch path; the kernel from pass 2
    N.set_kernel_policy("eager")
    eager = PairwiseLoss()
    for a in auto:
        torch.testing.assert_close(a, eager(z, y), rtol=1e-12, atol=1e-12)


# -- a fit that announces its length ---------------------------------------------------------


def test_planned_calls_compile_at_once_when_the_plan_pays():
    N.set_kernel_policy("auto")
    limit = N.BREAK_EVEN["pairwise"]
    work = limit // 100
    assert work < N.GENERIC_PAIR_CAP  # (below the memory rule)
    assert not N.use_kernel("pairwise", 0, work)
    with N.planned_calls(100):  # 100 calls of 1 % of the break-even: the compile pays
        assert N.use_kernel("pairwise", 0, work)
        with N.planned_calls(None):  # an inner fit of unknown length: the ski-rental rule
            assert not N.use_kernel("pairwise", 0, work)
        assert N.use_kernel("pairwise", 0, work)  # the outer plan is back
    with N.planned_calls(99):  # a plan that does not pay changes nothing
        assert not N.use_kernel("pairwise", 0, work)
        assert N.use_kernel("pairwise", 100, work)
    assert not N.use_kernel("pairwise", 0, work)  # the plan ends with its block
    N.set_kernel_policy("never")
    with N.planned_calls(10**9):
        assert not N.use_kernel("pairwise", 0, work)


@pytest.mark.parametrize("bad", [-1, 2.5, "10", True])
def test_bad_plan_is_refused(bad):
    with pytest.raises((ValueError, TypeError), match="planned_calls takes a non-negative integer"):
        with N.planned_calls(bad):
            pass


def test_plan_is_per_thread():
    """Each thread sees its own fit's plan (a context variable), not another thread's."""
    import threading

    N.set_kernel_policy("auto")
    work = N.BREAK_EVEN["pairwise"] // 20
    seen = []
    with N.planned_calls(20):
        t = threading.Thread(target=lambda: seen.append(N.use_kernel("pairwise", 0, work)))
        t.start()
        t.join()
        assert N.use_kernel("pairwise", 0, work)
    assert seen == [False]


@needs_numba
def test_objective_train_announces_its_rounds(monkeypatch, rng):
    """LightGBMObjective.train plans its rounds: with the break-even between one round's and
    all rounds' work, every round runs the kernel (the same model as "eager", bit for bit);
    plain lightgbm.train with the same objective does not announce them and stays generic."""
    lgb = pytest.importorskip("lightgbm")
    from selrank.gbdt import LightGBMObjective

    sizes = np.full(30, 12)
    X = rng.normal(size=(int(sizes.sum()), 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=X.shape[0]) + 1.5), 0, 4)
    work = Pairwise().bind(y, group=sizes)._work
    rounds = 6
    monkeypatch.setitem(N.BREAK_EVEN, "pairwise", rounds * work)  # pays only over all rounds
    params = {"verbose": -1, "min_data_in_leaf": 5, "num_threads": 1}

    def fit(route):
        data = lgb.Dataset(X, y, group=sizes, free_raw_data=False)
        obj = LightGBMObjective(Pairwise())
        if route == "train":
            return obj.train(params, data, rounds).predict(X)
        obj.set_init_score(data)
        return lgb.train({**params, "objective": obj}, data, rounds).predict(X)

    calls = _spy(monkeypatch, "pairwise_grad_hess")
    N.set_kernel_policy("eager")
    eager = fit("train")
    n_eager = len(calls)  # every gradient call of the fit on the kernel
    assert n_eager >= rounds
    del calls[:]
    N.set_kernel_policy("auto")
    planned = fit("train")
    assert len(calls) == n_eager  # the kernel from the first round
    np.testing.assert_array_equal(planned, eager)
    del calls[:]
    import selrank.losses.pairwise as pairwise_module

    decisions = []
    real_use = pairwise_module.use_kernel
    monkeypatch.setattr(
        pairwise_module,
        "use_kernel",
        lambda kernel, call, work: decisions.append(call) or real_use(kernel, call, work),
    )
    fit("lgb.train")
    # no plan: the ski-rental rule alone (each binding counts its own calls; set_init_score
    # binds too): calls 0 .. rounds-1 run the generic path, only later ones the kernel
    assert sorted(set(range(rounds)) - set(decisions)) == []  # the boosting rounds were decided
    assert len(calls) == sum(call >= rounds for call in decisions)


@needs_numba
def test_plan_reaches_the_objectives_block_threads(monkeypatch, rng):
    """The GBDT objective evaluates query blocks in a thread pool; each block sees the fit's
    plan (issue 29: in the pool's threads the plan was lost, so a 50-round fit on 10^6 rows
    ran every round on the generic path)."""
    from selrank.gbdt import GBDTObjective

    sizes = np.full(40, 10)
    y = rng.integers(0, 4, size=int(sizes.sum())).astype(float)
    obj = GBDTObjective(WeightedPairwise(), block_rows=100, n_jobs=2, hessian="exact")
    b = obj.bind(y, group=sizes)
    assert len(b.blocks) == 4  # (blocks of 100 rows, two threads)
    work = b.blocks[0][2]._work
    monkeypatch.setitem(N.BREAK_EVEN, "weighted_pairwise", 10 * work)  # pays over 10 calls
    calls = _spy(monkeypatch, "weighted_pairwise")
    N.set_kernel_policy("auto")
    obj._exact(b, rng.normal(size=y.size))
    assert calls == []  # no plan: the first call of each block is generic
    with N.planned_calls(10):
        obj._exact(b, rng.normal(size=y.size))
    assert len(calls) == 4  # every block on the kernel


@needs_numba
def test_a_rounds_blocks_share_the_work_that_pays_for_a_compile(monkeypatch, rng):
    """One compile serves every block of a round, so the kernel decision weighs the round's
    work, not one block's (issue 29: at 10^6 rows and 20 rounds, 16 blocks each below the
    break-even kept the weighted pairwise loss on the generic path, at 2x lambdarank's memory)."""
    from selrank.gbdt import GBDTObjective

    sizes = np.full(40, 10)
    y = rng.integers(0, 4, size=int(sizes.sum())).astype(float)
    obj = GBDTObjective(WeightedPairwise(), block_rows=100, n_jobs=2, hessian="exact")
    b = obj.bind(y, group=sizes)
    assert len(b.blocks) == 4
    work = b.blocks[0][2]._work
    # the compile pays over 10 rounds of the whole data: 40 block-calls' work
    monkeypatch.setitem(N.BREAK_EVEN, "weighted_pairwise", 40 * work)
    calls = _spy(monkeypatch, "weighted_pairwise")
    N.set_kernel_policy("auto")
    with N.planned_calls(9):  # 9 rounds of the whole data do not pay
        obj._exact(b, rng.normal(size=y.size))
    assert calls == []
    with N.planned_calls(10):  # 10 rounds do, although 10 calls of one block would not
        assert not N.use_kernel("weighted_pairwise", 0, work)
        obj._exact(b, rng.normal(size=y.size))
    assert len(calls) == 4
    # without a plan (plain lightgbm.train): the ski-rental rule counts the rounds' work
    calls.clear()
    fresh = obj.bind(y, group=sizes)
    for _ in range(11):
        obj._exact(fresh, rng.normal(size=y.size))
    # the loss numbers its calls from 1: rounds 10 and 11 reach 40 block-calls' work
    assert len(calls) == 8
    with pytest.raises(ValueError, match="shared_calls takes a positive integer"):
        with N.shared_calls(0):
            pass
