"""Deprecated import paths: the 0.2 aliases removed in 0.3, and the renamed classification
losses (``selrank.losses.baselines`` -> ``selrank.losses.classification``, alias until 0.4)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import selrank.losses
from selrank.losses import classification


def test_composite_sigmoid_only_in_links():
    import selrank.scalings
    from selrank.links import CompositeSigmoid

    assert CompositeSigmoid.__module__.startswith("selrank.links")
    with pytest.raises(AttributeError, match="no attribute 'CompositeSigmoid'"):
        selrank.scalings.CompositeSigmoid  # noqa: B018


def test_metrics_has_no_paper_names():
    import selrank.metrics

    for name in ("bust", "blust", "fit_linear", "SensitivityReport", "theorem1_table"):
        with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
            getattr(selrank.metrics, name)
    with pytest.raises(ModuleNotFoundError, match="selrank.metrics.underspecification"):
        importlib.import_module("selrank.metrics.underspecification")


def test_torch_has_no_neural_ranker():
    pytest.importorskip("torch")
    import selrank.torch

    for name in ("NeuralRanker", "MLPScorer"):
        assert name not in selrank.torch.__all__
        with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
            getattr(selrank.torch, name)
    with pytest.raises(ModuleNotFoundError, match="selrank.torch.ranker"):
        importlib.import_module("selrank.torch.ranker")


def _fresh_import(statement: str) -> subprocess.CompletedProcess[str]:
    """Run ``statement`` in a new interpreter (the alias warns once, on first import)."""
    code = f"import warnings; warnings.simplefilter('error', DeprecationWarning); {statement}"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "statement",
    [
        "import selrank.losses.baselines",
        "from selrank.losses.baselines import SoftmaxCrossEntropy",
        "from selrank.losses.baselines.pols import NCE",
        "from selrank.losses.baselines._base import loo_logsumexp",
    ],
)
def test_old_classification_path_warns_naming_the_new_one(statement):
    proc = _fresh_import(statement)
    assert proc.returncode != 0
    assert "DeprecationWarning" in proc.stderr
    assert "selrank.losses.classification" in proc.stderr
    assert "0.4" in proc.stderr


def test_old_classification_path_gives_the_same_objects():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("selrank.losses.baselines")
        old_pols = importlib.import_module("selrank.losses.baselines.pols")
        from selrank.losses.baselines._base import loo_logsumexp
        from selrank.losses.baselines.multilabel import NWaySoftmaxCrossEntropy
    assert old.BASELINES is classification.BASELINES is not None
    assert old.SoftmaxCrossEntropy is selrank.losses.SoftmaxCrossEntropy
    assert old_pols is classification.pols
    assert loo_logsumexp is classification._base.loo_logsumexp
    assert NWaySoftmaxCrossEntropy is selrank.losses.NWaySoftmaxCrossEntropy
    assert old.__all__ == classification.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        old.Nothing  # noqa: B018


def test_importing_the_losses_does_not_warn():
    proc = _fresh_import("import selrank.losses; from selrank.losses import BASELINES, NCE")
    assert proc.returncode == 0, proc.stderr
