"""scikit-learn's estimator checks pass for the three estimators (issue 11: 38 of 59 failed for
the regressor and 39 of 62 for the classifier); the checks that cannot apply are declared by
the estimators with a reason (``_expected_failed_checks``)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("lightgbm")

from sklearn.utils.estimator_checks import check_estimator

from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor

# cheap and deterministic on the checks' tiny data sets (not the estimators' defaults)
PARAMS = {"n_estimators": 10, "learning_rate": 0.3, "num_threads": 1}


@pytest.mark.parametrize("cls", [SelectiveRegressor, SelectiveClassifier, SelectiveRanker])
def test_check_estimator(cls):
    est = cls(**PARAMS)
    expected = est._expected_failed_checks()
    assert all(isinstance(r, str) and r for r in expected.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checks' own data trigger LightGBM / selrank warnings
        results = check_estimator(est, on_fail=None, expected_failed_checks=expected)
    failed = [
        (r["check_name"], str(r["exception"])[:300]) for r in results if r["status"] == "failed"
    ]
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in results) >= 40
