"""Writes tests/estimators/data/v1_*.json: estimator files in format 1, made with selrank 0.1.0
(commit 9176fa0, before the intercept went into the model), and the predictions it made.

Run with that version first on the path: ``PYTHONPATH=<checkout of 9176fa0> python
tests/estimators/data/make_v1_files.py tests/estimators/data``.
"""

from __future__ import annotations

import json
import sys


def main(out: str) -> None:
    import numpy as np

    import selrank
    from selrank import SelectiveClassifier, SelectiveRegressor

    print(selrank.__file__, selrank.__version__)
    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(120, 3)), 3)
    y = np.round(np.exp(1 + X[:, 0]) + rng.random(120), 3)
    expected = {"X": X.tolist()}
    for backend in ("lightgbm", "xgboost"):
        kw = {"min_data_in_leaf": 5, "num_leaves": 4} if backend == "lightgbm" else {"max_depth": 2}
        m = SelectiveRegressor(link="exp", n_estimators=6, backend=backend, **kw).fit(X, y)
        m.save(f"{out}/v1_regressor_{backend}.json")
        expected[f"v1_regressor_{backend}"] = m.predict(X).tolist()
        labels = np.digitize(X[:, 1], [-0.5, 0.5])
        c = SelectiveClassifier(n_estimators=4, backend=backend, **kw).fit(X, labels)
        c.save(f"{out}/v1_classifier_{backend}.json")
        expected[f"v1_classifier_{backend}"] = c.predict_proba(X).tolist()
    with open(f"{out}/v1_expected.json", "w") as fh:
        json.dump(expected, fh)


if __name__ == "__main__":
    main(sys.argv[1])
