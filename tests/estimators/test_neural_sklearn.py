"""NeuralRanker is a scikit-learn estimator (issue 30): BaseEstimator's protocol, tags, clone,
scikit-learn's own parameter checks, and metadata routing of ``qid`` (set_fit_request)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
sklearn = pytest.importorskip("sklearn")

from sklearn.base import BaseEstimator, clone  # noqa: E402
from sklearn.utils import estimator_checks as checks  # noqa: E402

from selrank.estimators import ndcg_scorer  # noqa: E402
from selrank.estimators.neural import NeuralRanker  # noqa: E402

SMALL = {"hidden_layers": (4,), "epochs": 3, "random_state": 0, "early_stopping_rounds": None}


def test_is_a_scikit_learn_estimator_with_tags():
    from sklearn.utils import get_tags

    est = NeuralRanker(**SMALL)
    assert isinstance(est, BaseEstimator)
    tags = get_tags(est)
    assert tags.target_tags.required and tags.input_tags.sparse
    assert not tags.non_deterministic and get_tags(NeuralRanker()).non_deterministic


def test_clone_and_get_params_keep_every_parameter():
    est = NeuralRanker("pairwise", loss_params={"gamma": 2.0}, dropout=0.1, **SMALL)
    twin = clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    assert twin.get_params(deep=False) == est.get_params(deep=False)
    assert not hasattr(twin, "model_")


@pytest.mark.parametrize(
    "check",
    [
        checks.check_no_attributes_set_in_init,
        checks.check_get_params_invariance,
        checks.check_set_params,
        checks.check_parameters_default_constructible,
    ],
    ids=lambda c: c.__name__,
)
def test_scikit_learn_parameter_checks(check):
    check("NeuralRanker", NeuralRanker(**SMALL))


def test_set_fit_request_routes_qid_through_cross_validation():
    from sklearn.model_selection import GroupKFold, cross_val_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4)).astype(np.float32)
    y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    qid = np.repeat(np.arange(12), 20)
    with sklearn.config_context(enable_metadata_routing=True):
        est = NeuralRanker(**SMALL).set_fit_request(qid=True)
        assert est.get_metadata_routing().fit.requests["qid"] is True
        scores = cross_val_score(
            est,
            X,
            y,
            cv=GroupKFold(3),
            scoring=ndcg_scorer(k=5),
            params={"qid": qid, "groups": qid},
        )
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
