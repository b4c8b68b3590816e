"""One comparison entry point: paired_report; paired_comparison and compare are its aliases."""

from __future__ import annotations

import numpy as np
import pytest

from selrank.metrics import ComparisonReport, compare, paired_comparison, paired_report

pl = pytest.importorskip("polars")


def test_paired_comparison_is_the_frame_of_paired_report(rng):
    y = rng.integers(0, 3, 600).astype(float)
    systems = {"noise": rng.normal(size=600), "model": y + rng.normal(0, 1.0, 600)}
    kwargs = {"metrics": ["ndcg@5", "map"], "n_resamples": 500}
    report = paired_report(systems, y, [20] * 30, **kwargs)
    assert isinstance(report, ComparisonReport)
    assert report.table.equals(paired_comparison(systems, y, [20] * 30, **kwargs))
    assert report.systems == ["noise", "model"] and report.metrics == ["ndcg@5", "map"]


def test_compare_of_runs_is_paired_report_with_its_defaults(rng):
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(6)} for i in range(25)}
    runs = {
        name: {q: {f"d{j}": float(rng.normal()) for j in range(6)} for q in qrels}
        for name in ("a", "b", "c")
    }
    got = compare(qrels, runs=runs, metrics="ndcg@3,P@2", n_resamples=500)
    want = paired_report(
        qrels, runs=runs, metrics="ndcg@3,P@2", n_resamples=500, test="permutation"
    )
    assert got.table.equals(want.table)
    frame = paired_comparison(qrels, runs=runs, metrics="ndcg@3,P@2", n_resamples=500)
    assert frame.equals(
        paired_report(qrels, runs=runs, metrics="ndcg@3,P@2", n_resamples=500).table
    )
    assert np.isfinite(frame["diff"].to_numpy()).all()
