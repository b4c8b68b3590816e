"""CONTRIBUTING's checklists followed literally: a new link and a new listwise head.

* "Add a link" / "A link whose primitive has no closed form": a softplus link (its primitive
  is a dilogarithm) subclasses ``Link``, defines ``h``, ``dh``, ``h_inv`` and its
  ``theorem1`` cases, and is registered in ``LINKS`` (here for the duration of a test). The
  tests that ``tests/test_links.py`` generates for every registered link then run on each of
  its ``examples``, and Theorem 1 holds for it with no edit in ``selrank.paper``.
* "Add a head": a listwise KL-divergence head subclasses ``RankingHead``, implements
  ``unit_values`` and is registered in ``HEADS``; the checks that ``tests/torch/
  test_baselines.py`` runs on every list head pass for it, and it trains.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from selrank import _array as A
from selrank._validation import finite_float, positive_float
from selrank.links import LINKS, Link, get_link

from . import test_links as generated_link_tests

# ---------------------------------------------------------------------------------------
# A link whose primitive has no closed form
# ---------------------------------------------------------------------------------------


class Softplus(Link):
    r"""Softplus link: a smooth ReLU, sensitivity rising from 0 to ``alpha``.

    .. math:: h(z) = \log(1 + e^{x}), \quad h'(z) = \alpha\,\sigma(x), \quad x = \alpha(z-\beta);

    :math:`H` is a dilogarithm (no closed form): the base class integrates ``h``.
    """

    name = "softplus"
    examples = [{}, {"alpha": 2.0, "beta": 0.5}, {"alpha": 0.5, "beta": -1.0}]
    theorem1 = {
        "softplus (high score)": {"params": {}, "w_u": 1.5, "d": 0.5},
        "softplus (low region)": {"params": {}, "w_u": -1.5, "d": 0.5},
    }

    def __init__(self, *, alpha: float = 1.0, beta: float = 0.0):
        self.alpha = positive_float(alpha, "alpha", "Softplus")
        self.beta = finite_float(beta, "beta", "Softplus")
        self._scale = self.alpha
        self._params = {"alpha": alpha, "beta": beta}

    def _x(self, z):
        xp = A.get_namespace(z)
        z = A.as_float_array(z, xp)
        return xp, self.alpha * (z - self.beta)

    def h(self, z):
        xp, x = self._x(z)
        return A.softplus(x, xp)

    def dh(self, z):
        xp, x = self._x(z)
        return self.alpha * A.sigmoid(x, xp)

    def h_inv(self, y):
        # x = log(e^y - 1) = y + log(1 - e^-y); y <= 0 is below the range: -inf
        xp = A.get_namespace(y)
        y = A.as_float_array(y, xp)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = y + xp.log(-xp.expm1(-y))
        return xp.where(y > 0, x, xp.full_like(y, -math.inf)) / self.alpha + self.beta


@pytest.fixture
def softplus_registered(monkeypatch):
    monkeypatch.setitem(LINKS, "softplus", Softplus)


def _generated_link_checks():
    """The tests of tests/test_links.py that take a registered link (one case per example)."""
    out = []
    for name, fn in sorted(vars(generated_link_tests).items()):
        if name.startswith("test_") and "link" in inspect.signature(fn).parameters:
            marks = getattr(fn, "pytestmark", [])
            extra = [m.args for m in marks if m.name == "parametrize" and m.args[0] != "link"]
            variants = [{}]
            for argname, values in extra:
                variants = [{**v, argname: value} for v in variants for value in values]
            out += [
                pytest.param(
                    fn,
                    v,
                    id="-".join([name, *(getattr(x, "__name__", str(x)) for x in v.values())]),
                )
                for v in variants
            ]
    return out


GENERATED = _generated_link_checks()


def test_the_generated_link_tests_are_found():
    names = {p.values[0].__name__ for p in GENERATED}
    assert {"test_primitive_derivative_is_h", "test_numpy_equals_torch_and_autograd"} <= names
    assert len(names) >= 10


@pytest.mark.parametrize("example", range(len(Softplus.examples)))
@pytest.mark.parametrize("check,kwargs", GENERATED)
def test_generated_link_tests_pass_for_softplus(softplus_registered, check, kwargs, example):
    link = get_link("softplus", **Softplus.examples[example])
    args = inspect.signature(check).parameters
    if "rng" in args:
        kwargs = {**kwargs, "rng": np.random.default_rng(20260521)}
    if "case" in args:
        pytest.skip("property-based test over fixed cases")
    check(link=link, **kwargs)


def test_softplus_closed_forms_and_quadrature_primitive():
    link = Softplus(alpha=2.0, beta=0.5)
    z = np.linspace(-4.0, 4.0, 17)
    x = 2.0 * (z - 0.5)
    np.testing.assert_allclose(link.h(z), np.log1p(np.exp(x)), rtol=1e-14)
    # H' = h by the quadrature primitive; and the exact H difference from a dilogarithm series
    scipy_special = pytest.importorskip("scipy.special")
    exact = -scipy_special.spence(1.0 + np.exp(x)) / 2.0  # H(z) = -Li2(-e^x) / alpha
    ref = -scipy_special.spence(1.0 + np.exp(2.0 * (0.0 - 0.5))) / 2.0
    np.testing.assert_allclose(link.H(z) - link.H(0.0), exact - ref, rtol=1e-10, atol=1e-12)
    assert Softplus.hooks == frozenset()  # no optional hook: every generic path


def test_softplus_theorem1_needs_no_edit_in_paper(softplus_registered):
    from selrank.paper.underspecification import check_theorem1, theorem1_catalogue

    cases, excluded = theorem1_catalogue()
    assert {"softplus (high score)", "softplus (low region)"} <= set(cases)
    assert "softplus" not in excluded
    for name in ("softplus (high score)", "softplus (low region)"):
        spec = dict(cases[name])
        link = get_link(spec.pop("link"), **spec.pop("params"))
        res = check_theorem1(link, n=20_000, seed=7, **spec)  # H by quadrature: slow
        assert res.bust > 0.0
        assert res.agree_limit and res.agree_blust and res.agree_fit, res.as_dict()


# ---------------------------------------------------------------------------------------
# A new listwise head
# ---------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")

from selrank.torch import HEADS, NeuralRanker, RankingHead, get_head  # noqa: E402


class ListKLLoss(RankingHead):
    r"""KL divergence from the labels' top-one distribution to the scores'.

    .. math:: L = \sum_i \mathrm{softmax}(y)_i\,[\log\mathrm{softmax}(y)_i - \log\mathrm{softmax}(\hat s)_i]

    ListNet (Cao et al., ICML 2007) minus the entropy of its target: 0 at ``ŝ = y``.
    """

    def __init__(self, *, temperature: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.temperature = positive_float(temperature, "temperature", "ListKLLoss")

    def unit_values(self, z, y, lists):
        log_target = lists.log_softmax(y / self.temperature)
        target = torch.exp(log_target)
        return lists.sum(target * (log_target - lists.log_softmax(z / self.temperature)))


@pytest.fixture
def list_kl_registered(monkeypatch):
    assert "list_kl" not in HEADS
    monkeypatch.setitem(HEADS, "list_kl", ListKLLoss)


def test_list_kl_head_against_a_plain_reference(list_kl_registered):
    head = get_head("list_kl", reduction="none")
    z = torch.tensor([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([[2.0, 0.0, 1.0], [1.0, 0.0, -1.0]], dtype=torch.float64)  # -1: padding
    out = head(z, y)
    for b, n in enumerate((3, 2)):
        p = torch.softmax(y[b, :n], 0)
        ref = (p * (torch.log(p) - torch.log_softmax(z[b, :n], 0))).sum()
        torch.testing.assert_close(out[b], ref)
    assert float(get_head("list_kl")(y.clamp_min(0.0), y)) == pytest.approx(0.0, abs=1e-12)


HEAD_CHECKS = [
    "test_registry_head_masked_equals_sliced",
    "test_registry_head_padding_edge_cases",
    "test_registry_head_extreme_scores",
    "test_registry_head_float32_matches_float64",
]


@pytest.mark.parametrize("check", HEAD_CHECKS)
def test_generated_head_tests_pass_for_list_kl(list_kl_registered, check):
    from .torch import test_baselines

    fn = getattr(test_baselines, check)
    rng = np.random.default_rng(20260521)
    if "scale" in inspect.signature(fn).parameters:
        for scale in (1e2, 1e4):
            fn("list_kl", scale, rng)
    else:
        fn("list_kl", rng)


def test_list_kl_head_trains(list_kl_registered):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.normal(size=(8, 10, 5)))
    y = torch.as_tensor((X[..., 0] > 0).double() + (X[..., 1] > 0.5).double())
    scorer = torch.nn.Linear(5, 1).double()
    head = get_head("list_kl")
    opt = torch.optim.SGD(scorer.parameters(), lr=0.5)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = head(scorer(X).squeeze(-1), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    # and through the estimator, by name
    Xf = X.reshape(-1, 5).numpy()
    ranker = NeuralRanker("list_kl", hidden_layers=(), epochs=2, random_state=0)
    ranker.fit(Xf, y.reshape(-1).numpy(), group=[10] * 8)
    assert np.isfinite(ranker.predict(Xf)).all()
