"""Dwell time on the YOOCHOOSE sample: capped SmeLU (pointwise and within-session) against the usual objectives.

Run from the repository root::

    python benchmarks/dwell.py [--out benchmarks/results/dwell.json] [--quick | --smoke]

Protocol. It was written after exploratory fits had already been scored on the test period,
so that period is not untouched; within the protocol every choice is made on validation:

* Data: ``load_dwell("yoochoose-100k")``. The training period is split in time with
  :func:`selrank.dwell.time_holdout`: sessions that start in its last 15 % are the
  validation part (early stopping, every choice of a knob); the model is fitted on the rest.
  The test period is used once, for the final table.
* Engaged band: :func:`selrank.dwell.suggest_band` (default ``method="mixture"``) on the
  fitting part's log1p dwell. The same band defines the in-band metrics for every method.
* Methods, all LightGBM with the same tree parameters (``TREE``), early stopping after 100
  rounds without improvement of each method's own loss on the validation part:
  squared error on seconds and on log1p seconds, Huber on log1p seconds, LightGBM's
  Poisson, Gamma and Tweedie objectives on seconds (Gamma needs labels > 0: the few 0 s
  dwells, two clicks in the same millisecond, become 0.001 s, the log's resolution),
  :class:`selrank.SelectiveRegressor` with the pointwise capped SmeLU link on log1p seconds
  (``smelu_pointwise``), and the capped SmeLU plus a within-session part
  (:func:`selrank.dwell.fit_dwell_model` with ``session=`` and ``within_session_weight=λ``:
  a :class:`selrank.losses.Combined` loss fitted with ``group=session``; ``smelu_session``,
  ``smelu_session_rank``).
* Knobs, chosen on the validation part only: Huber's delta and Tweedie's variance power by
  validation in-band MAE (the headline metric, so the baselines get their best shot at it);
  the SmeLU's training band (the evaluation band scaled by ``SMELU_WIDTHS`` about its
  centre) times the weight of the training rows whose dwell is outside it
  (``SMELU_OUTSIDE_WEIGHTS``, ``fit_dwell_model(outside_weight=...)``): ``smelu_pointwise``
  by validation in-band MAE among the candidates whose validation overall MAE is within
  ``GOAL_BUDGET`` (1 %) of squared error on log1p seconds (the issue-12 goal's side
  condition; the earlier protocol asked for "no worse", had no x0.5 and weighted every row
  1), ``smelu_pointwise_rmse`` the same with RMSE in both places (Huber's delta likewise by
  in-band RMSE for ``huber_log_rmse``); if no candidate meets the budget, the evaluation
  band itself. The rules and the grid were fixed from validation numbers before this
  version was run on the test period.
* Within-session candidates (added after the pointwise runs; families, grids and the two
  rules below were fixed from validation numbers alone, before any of these models was
  scored on the test period, and not changed afterwards): pointwise band width x1 or x1.5 of the evaluation band, times a within-session
  family (``WITHIN_SESSION``: ListNet softmax over the session with gamma 1 or 2, a
  selective listwise softmax with the SmeLU scaling on the band, a pairwise capped SmeLU on
  log-dwell differences), times four weights λ per family. Two rules pick two rows:
  ``smelu_session`` (the goal): among the candidates whose validation NDCG *and* Kendall tau
  beat every baseline's, the lowest validation overall MAE (if none, the highest tau);
  ``smelu_session_rank`` (ranking first): the highest validation tau among the candidates
  whose validation overall MAE is within ``RANK_BUDGET`` (1 %) of squared error on log1p
  seconds. The sensitivity run searches only the families of the two headline choices.
* Metrics (:func:`selrank.metrics.dwell.dwell_report`), on log1p seconds unless marked
  ``_s`` (seconds): predictions of models trained on seconds enter as
  ``log1p(max(prediction, 0))``. Within-session ranking: NDCG (linear gain on log1p seconds)
  and Kendall's tau over sessions with >= 2 clicks and >= 2 distinct dwells.
* Uncertainty: per-row paired error differences, method − squared error on log1p seconds
  (every method) and SmeLU − Huber (the SmeLU rows), in band and overall, MAE and RMSE,
  with 95 % intervals from a bootstrap that resamples test *sessions* (a session's clicks
  are dependent; 2000 resamples, the same for every pair), and the overall error relative
  to squared error with its interval (:func:`paired_bootstrap`); paired sign-flip tests
  over sessions for the ranking metrics.
* The issue-12 goal ("the capped SmeLU has the lowest in-band error of {SmeLU, squared
  error on log1p s, Huber} at an overall error within 1 % of squared error"), per SmeLU
  row, on test: MAE is the headline metric (as in the earlier protocol), RMSE beside it.

Writes ``benchmarks/results/dwell.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from selrank._groups import as_groups
from selrank.datasets import load_dwell
from selrank.dwell import (
    DwellBand,
    fit_dwell_model,
    outside_band_weights,
    suggest_band,
    time_holdout,
)
from selrank.losses import Listwise, Pairwise
from selrank.metrics import paired_permutation_test
from selrank.metrics.dwell import band_error, dwell_report, overall_error, session_ranking

#: Tree parameters shared by every method (LightGBM names).
TREE = {
    "num_leaves": 31,
    "min_data_in_leaf": 50,
    "lambda_l2": 0.0,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "num_threads": 1,  # 2 OpenMP threads on a shared 2-core machine ran up to 20x slower
    "deterministic": True,
    "force_row_wise": True,
}
LEARNING_RATE = 0.05
MAX_ROUNDS = 3000
EARLY_STOPPING = 100
SEED = 0
HOLDOUT = 0.15
HUBER_DELTAS = (0.5, 1.0, 2.0)
TWEEDIE_POWERS = (1.2, 1.5, 1.8)
SMELU_WIDTHS = (0.5, 0.75, 1.0, 1.25, 1.5)  # training band half width / evaluation band half width
SESSION_WIDTHS = (1.0, 1.5)  # pointwise band of the within-session candidates / evaluation band
#: Within-session families: name -> (loss for a training band, weights λ). The λ grids differ
#: because the families' gradients have different scales (a pairwise part sums over pairs).
WITHIN_SESSION = {
    "listnet_g1": (lambda b: Listwise("constant", gamma=1.0), (0.05, 0.1, 0.2, 0.4)),
    "listnet_g2": (lambda b: Listwise("constant", gamma=2.0), (0.1, 0.2, 0.4, 0.8)),
    # scalings use x = alpha (z + beta): beta = -centre puts the SmeLU on the band
    "listwise_smelu_g0.3": (
        lambda b: Listwise("smelu", c=b.c, beta=-b.beta, gamma=0.3),
        (0.1, 0.2, 0.4, 0.8),
    ),
    "pairwise_smelu_c1": (
        lambda b: Pairwise("smelu", c=1.0, pairs="distinct"),
        (0.01, 0.02, 0.04, 0.08),
    ),
}
RANK_BUDGET = 0.01  # smelu_session_rank: validation overall MAE at most 1 % above se_log's
GOAL_BUDGET = 0.01  # the issue-12 goal: overall error within 1 % of squared error on log1p seconds
SMELU_OUTSIDE_WEIGHTS = (
    1.0,
    0.5,
    0.0,
)  # weight of the training rows whose dwell is outside the training band
#: The goal's competitors of the SmeLU, per error metric: Huber's delta is chosen on validation
#: by the in-band error of that metric (``huber_log`` by MAE, ``huber_log_rmse`` by RMSE).
GOAL_SET = {"mae": ("se_log", "huber_log"), "rmse": ("se_log", "huber_log_rmse")}
SMELU_ROWS = ("smelu_pointwise", "smelu_pointwise_rmse", "smelu_session", "smelu_session_rank")
BOOTSTRAP = 2000
PERMUTATIONS = 10_000  # sign flips of the ranking tests (paired_permutation_test's default)
GAMMA_MIN_SECONDS = 1e-3


# --------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------
def fit_native(objective: str, X, target, Xv, target_v, **extra):
    """LightGBM with a built-in objective; early stopping on its own default metric."""
    import lightgbm as lgb

    params = {
        "objective": objective,
        "learning_rate": LEARNING_RATE,
        "seed": SEED,
        "verbosity": -1,
        **TREE,
        **extra,
    }
    train = lgb.Dataset(X, target)
    valid = lgb.Dataset(Xv, target_v, reference=train)
    booster = lgb.train(
        params,
        train,
        MAX_ROUNDS,
        valid_sets=[valid],
        callbacks=[lgb.early_stopping(EARLY_STOPPING, verbose=False)],
    )
    it = booster.best_iteration or booster.current_iteration()
    return (lambda Z: booster.predict(Z, num_iteration=it)), it


def fit_smelu(band: DwellBand, X, y, Xv, yv, outside_weight: float = 1.0, **extra):
    """The pointwise capped SmeLU on ``band``; rows outside it weighted ``outside_weight`` (and in early stopping)."""
    model = fit_dwell_model(
        X,
        y,
        band=band,
        outside_weight=outside_weight,
        eval_set=[(Xv, yv)],
        learning_rate=LEARNING_RATE,
        n_estimators=MAX_ROUNDS,
        early_stopping_rounds=EARLY_STOPPING,
        random_state=SEED,
        **TREE,
        **extra,
    )
    return model.predict, model.best_iteration_ or model.n_estimators_


def fit_session(band: DwellBand, family: str, lam: float, d):
    """Capped SmeLU on ``band`` plus ``lam`` times a within-session part, through the documented helper."""
    within = WITHIN_SESSION[family][0](band)
    model = fit_dwell_model(
        d.X,
        d.y,
        band=band,
        session=d.session_fit,
        within_session_weight=lam,
        within_session_loss=within,
        eval_set=[(d.Xv, d.yv)],
        eval_session=[d.session_val],
        learning_rate=LEARNING_RATE,
        n_estimators=MAX_ROUNDS,
        early_stopping_rounds=EARLY_STOPPING,
        random_state=SEED,
        **TREE,
    )
    return model.predict, model.best_iteration_ or model.n_estimators_


def scaled(band: DwellBand, factor: float) -> DwellBand:
    return DwellBand(
        band.beta - factor * band.c,
        band.beta + factor * band.c,
        method=f"{band.method} x{factor:g}",
    )


def within_budget_rule(
    rows: list[dict], reference: float, *, budget: float, fallback, metric: str = "mae"
) -> dict:
    """The SmeLU's choice: lowest ``band_<metric>`` among ``rows`` whose ``<metric>`` is within ``budget`` of ``reference``.

    ``rows`` are validation rows, ``reference`` the validation overall error of squared
    error on log1p seconds; if no row is within the budget, the row whose ``knob`` is
    ``fallback`` (the evaluation band itself).
    """
    ok = [r for r in rows if r[metric] <= (1.0 + budget) * reference]
    if ok:
        return min(ok, key=lambda r: r[f"band_{metric}"])
    return next(r for r in rows if r["knob"] == fallback)


# --------------------------------------------------------------------------------------
# uncertainty
# --------------------------------------------------------------------------------------
def paired_bootstrap(
    y, preds: dict, pairs, band, session, *, n: int, seed: int = 0, budget: float = 0.01
) -> dict:
    """Session-clustered paired bootstrap of error differences, method − baseline (log1p s).

    For every ``(method, baseline)`` in ``pairs``: the per-row paired differences of absolute
    and squared errors, summed per session; sessions (not rows: a session's clicks are
    dependent) are resampled with replacement, ``n`` times, the same resamples for every pair.
    Returns, for the rows in ``band`` (by observed dwell) and for all rows, MAE and RMSE: the
    difference on the full test set (``diff``), its 95 % percentile interval (``ci``), the
    relative difference of the overall errors (``rel``, ``rel_ci``: method / baseline − 1) and
    the share of resamples in which the overall error is within ``budget`` of the baseline's
    (``p_within_budget``).
    """
    groups = as_groups(None, y.size, qid=session)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(
        groups.n_groups, np.full(groups.n_groups, 1.0 / groups.n_groups), size=n
    ).astype(float)
    counts = np.vstack([np.ones(groups.n_groups), counts])  # row 0: the test set itself
    inband = ((y >= band[0]) & (y <= band[1])).astype(float)

    def sums(v):
        return groups.sum(groups.to_grouped(v))

    n_of = {"band": counts @ sums(inband), "all": counts @ sums(np.ones_like(y))}
    w_of = {"band": inband, "all": 1.0}
    err = {m: p - y for m, p in preds.items()}
    out: dict = {}
    for method, baseline in pairs:
        e, b = err[method], err[baseline]
        row = {}
        for region in ("band", "all"):
            w, denom = w_of[region], n_of[region]
            mae_m, mae_b = (
                counts @ sums(w * np.abs(e)) / denom,
                counts @ sums(w * np.abs(b)) / denom,
            )
            rmse_m, rmse_b = (
                np.sqrt(counts @ sums(w * e * e) / denom),
                np.sqrt(counts @ sums(w * b * b) / denom),
            )
            for metric, (m_, b_) in (("mae", (mae_m, mae_b)), ("rmse", (rmse_m, rmse_b))):
                d, rel = m_ - b_, m_ / b_ - 1.0
                entry = {
                    "diff": float(d[0]),
                    "ci": [float(v) for v in np.quantile(d[1:], [0.025, 0.975])],
                }
                if region == "all":
                    entry.update(
                        rel=float(rel[0]),
                        rel_ci=[float(v) for v in np.quantile(rel[1:], [0.025, 0.975])],
                        p_within_budget=float(np.mean(rel[1:] <= budget)),
                    )
                row[f"{region}_{metric}"] = entry
        out.setdefault(method, {})[baseline] = row
    return out


# --------------------------------------------------------------------------------------
# the protocol for one evaluation band
# --------------------------------------------------------------------------------------
class Data:
    def __init__(self):
        ds = load_dwell("yoochoose-100k")
        tr, self.te = ds.train, ds.test
        self.held = time_holdout(tr.session, tr.time, fraction=HOLDOUT)
        fit = ~self.held
        self.X, self.y, self.sec = tr.X[fit], tr.y[fit], tr.seconds[fit]
        self.Xv, self.yv, self.secv = tr.X[self.held], tr.y[self.held], tr.seconds[self.held]
        self.session_fit, self.session_val = tr.session[fit], tr.session[self.held]


LOG_OF = {"log": lambda p: p, "seconds": lambda p: np.log1p(np.maximum(p, 0.0))}


def protocol(
    d: Data,
    band: DwellBand,
    *,
    quick: bool,
    cache: dict,
    investigate: bool,
    families: tuple[str, ...] | None = None,
) -> dict:
    """Fit every method, choose knobs on validation, evaluate on test; ``cache`` reuses band-free fits."""
    te = d.te
    print(
        f"\n=== evaluation band ({band.method}): log1p s [{band.lo:.3f}, {band.hi:.3f}] = "
        f"[{band.seconds[0]:.1f} s, {band.seconds[1]:.1f} s]; inside: fit {band.shares(d.y)['inside']:.3f}, "
        f"test {band.shares(te.y)['inside']:.3f}"
    )
    validation: list[dict] = []
    chosen: dict[str, dict] = {}
    test_preds: dict[str, np.ndarray] = {}
    candidates_test: dict[str, dict[str, np.ndarray]] = {}

    def run(name, knob, fitter, space, band_free):
        key = (name, knob)
        if band_free and key in cache:
            pv, pt, it, secs = cache[key]
        else:
            t0 = time.perf_counter()
            predict, it = fitter()
            secs = time.perf_counter() - t0
            pv, pt = LOG_OF[space](predict(d.Xv)), LOG_OF[space](predict(te.X))
            if band_free:
                cache[key] = (pv, pt, it, secs)
        row = {
            "method": name,
            "knob": knob,
            "best_iteration": int(it),
            "fit_s": round(secs, 2),
            "band_mae": band_error(d.yv, pv, band),
            "band_rmse": band_error(d.yv, pv, band, metric="rmse"),
            "mae": overall_error(d.yv, pv),
            "rmse": overall_error(d.yv, pv, metric="rmse"),
            "ndcg": session_ranking(d.yv, pv, d.session_val),
            "kendall_tau": session_ranking(d.yv, pv, d.session_val, metric="kendall"),
        }
        validation.append(row)
        print(
            f"  [validation] {name:10s} {str(knob):>34s}  it={it:5d}  band_mae={row['band_mae']:.4f}  "
            f"mae={row['mae']:.4f}  rmse={row['rmse']:.4f}  ndcg={row['ndcg']:.4f}  tau={row['kendall_tau']:+.4f}  "
            f"({secs:.1f} s)",
            flush=True,
        )
        candidates_test.setdefault(name, {})[str(knob)] = pt
        return row

    def pick(name, candidates, space, rule, band_free=True, rows=None):
        rows = (
            rows
            if rows is not None
            else [run(name, knob, f, space, band_free) for knob, f in candidates]
        )
        row = rule(rows)
        chosen[name] = {"knob": row["knob"], "validation": row}
        test_preds[name] = candidates_test[row["method"]][str(row["knob"])]

    def by_band_mae(rows):
        return min(rows, key=lambda r: r["band_mae"])

    X, y, sec, Xv, yv, secv = d.X, d.y, d.sec, d.Xv, d.yv, d.secv
    gamma_y, gamma_v = np.maximum(sec, GAMMA_MIN_SECONDS), np.maximum(secv, GAMMA_MIN_SECONDS)
    pick(
        "se_seconds",
        [(None, lambda: fit_native("regression", X, sec, Xv, secv))],
        "seconds",
        by_band_mae,
    )
    pick("se_log", [(None, lambda: fit_native("regression", X, y, Xv, yv))], "log", by_band_mae)
    pick(
        "huber_log",
        [
            (f"delta={v}", lambda v=v: fit_native("huber", X, y, Xv, yv, alpha=v))
            for v in (HUBER_DELTAS[1:2] if quick else HUBER_DELTAS)
        ],
        "log",
        by_band_mae,
    )
    pick(
        "poisson", [(None, lambda: fit_native("poisson", X, sec, Xv, secv))], "seconds", by_band_mae
    )
    pick(
        "gamma",
        [(None, lambda: fit_native("gamma", X, gamma_y, Xv, gamma_v))],
        "seconds",
        by_band_mae,
    )
    pick(
        "tweedie",
        [
            (
                f"power={v}",
                lambda v=v: fit_native("tweedie", X, sec, Xv, secv, tweedie_variance_power=v),
            )
            for v in (TWEEDIE_POWERS[1:2] if quick else TWEEDIE_POWERS)
        ],
        "seconds",
        by_band_mae,
    )
    pick(
        "huber_log_rmse",
        None,
        "log",
        lambda rows: min(rows, key=lambda r: r["band_rmse"]),
        rows=[r for r in validation if r["method"] == "huber_log"],
    )
    baselines = list(chosen)
    se_log_val_mae = chosen["se_log"]["validation"]["mae"]
    se_log_val_rmse = chosen["se_log"]["validation"]["rmse"]

    # ---- pointwise capped SmeLU ----------------------------------------------------------------
    widths = (1.0,) if quick else SMELU_WIDTHS
    omegas = (1.0, 0.0) if quick else SMELU_OUTSIDE_WEIGHTS
    smelu_knobs = {
        (f"width x{f:g}" if om == 1.0 else f"width x{f:g} outside={om:g}"): (scaled(band, f), om)
        for f in widths
        for om in omegas
    }
    smelu_bands = {k: b for k, (b, _) in smelu_knobs.items()}
    pick(
        "smelu_pointwise",
        [
            (k, lambda b=b, om=om: fit_smelu(b, X, y, Xv, yv, outside_weight=om))
            for k, (b, om) in smelu_knobs.items()
        ],
        "log",
        lambda rows: within_budget_rule(
            rows, se_log_val_mae, budget=GOAL_BUDGET, fallback="width x1"
        ),
        band_free=False,
    )
    smelu_rows = [r for r in validation if r["method"] == "smelu_pointwise"]
    pick(
        "smelu_pointwise_rmse",
        None,
        "log",
        lambda rows: within_budget_rule(
            rows, se_log_val_rmse, budget=GOAL_BUDGET, fallback="width x1", metric="rmse"
        ),
        rows=smelu_rows,
    )
    for name, metric, ref in (
        ("smelu_pointwise", "mae", se_log_val_mae),
        ("smelu_pointwise_rmse", "rmse", se_log_val_rmse),
    ):
        b, om = smelu_knobs[chosen[name]["knob"]]
        chosen[name].update(
            train_band=[b.lo, b.hi],
            outside_weight=om,
            constraint_met_on_validation=chosen[name]["validation"][metric]
            <= (1.0 + GOAL_BUDGET) * ref,
        )
    smelu_band, smelu_omega = smelu_knobs[chosen["smelu_pointwise"]["knob"]]

    # ---- capped SmeLU + within-session part ------------------------------------------------------
    best_ndcg = max(chosen[m]["validation"]["ndcg"] for m in baselines)
    best_tau = max(chosen[m]["validation"]["kendall_tau"] for m in baselines)
    families = families or tuple(WITHIN_SESSION)
    session_knobs = {}
    for f in (1.0,) if quick else SESSION_WIDTHS:
        for fam in families:
            for lam in WITHIN_SESSION[fam][1][1:2] if quick else WITHIN_SESSION[fam][1]:
                session_knobs[f"width x{f:g} {fam} lambda={lam:g}"] = (scaled(band, f), fam, lam)
    session_rows = [
        run(
            "smelu_session",
            k,
            lambda b=b, fam=fam, lam=lam: fit_session(b, fam, lam, d),
            "log",
            False,
        )
        for k, (b, fam, lam) in session_knobs.items()
    ]

    def goal_rule(rows):
        ok = [r for r in rows if r["ndcg"] > best_ndcg and r["kendall_tau"] > best_tau]
        return min(ok, key=lambda r: r["mae"]) if ok else max(rows, key=lambda r: r["kendall_tau"])

    def rank_rule(rows):
        ok = [r for r in rows if r["mae"] <= (1.0 + RANK_BUDGET) * se_log_val_mae]
        if not ok:  # nothing within the budget: the cheapest candidate
            return min(rows, key=lambda r: r["mae"])
        return max(ok, key=lambda r: r["kendall_tau"])

    pick("smelu_session", None, "log", goal_rule, rows=session_rows)
    pick("smelu_session_rank", None, "log", rank_rule, rows=session_rows)
    for name in ("smelu_session", "smelu_session_rank"):
        b, fam, lam = session_knobs[chosen[name]["knob"]]
        r = chosen[name]["validation"]
        chosen[name].update(
            train_band=[b.lo, b.hi],
            family=fam,
            within_session_weight=lam,
            ranking_beats_every_baseline_on_validation=bool(
                r["ndcg"] > best_ndcg and r["kendall_tau"] > best_tau
            ),
            mae_no_worse_than_se_log_on_validation=bool(r["mae"] <= se_log_val_mae),
        )

    # ---- test ---------------------------------------------------------------------------
    report = dwell_report(te.y, test_preds, band=band, session=te.session)
    pairs = [(m, "se_log") for m in test_preds if m != "se_log"] + [
        (m, h) for m in SMELU_ROWS for h in ("huber_log", "huber_log_rmse")
    ]
    paired = paired_bootstrap(
        te.y, test_preds, pairs, band, te.session, n=BOOTSTRAP, budget=GOAL_BUDGET
    )
    boot = {
        m: {k: v["ci"] for k, v in paired[m]["se_log"].items()} for m in test_preds if m != "se_log"
    }
    per_session = {
        m: {
            k: session_ranking(te.y, p, te.session, metric=k, reduction="none")
            for k in ("ndcg", "kendall")
        }
        for m, p in test_preds.items()
    }
    keep = ~np.isnan(per_session["se_log"]["ndcg"])
    rank_tests = {}
    for s_name in SMELU_ROWS:
        ps = per_session[s_name]
        rank_tests[s_name] = {
            m: {
                k: {
                    "diff": float(np.mean(ps[k][keep] - per_session[m][k][keep])),
                    "p_value": paired_permutation_test(
                        ps[k][keep], per_session[m][k][keep], n_resamples=PERMUTATIONS, seed=0
                    ),
                }
                for k in ("ndcg", "kendall")
            }
            for m in test_preds
            if m != s_name
        }
    rows = report.to_dicts()
    by = {r["model"]: r for r in rows}
    others = [by[m] for m in baselines]
    goals = {}
    for s_name in SMELU_ROWS:
        sm = by[s_name]
        goals[s_name] = {
            "lowest_band_mae": all(sm["band_mae"] < r["band_mae"] for r in others),
            "lowest_band_rmse": all(sm["band_rmse"] < r["band_rmse"] for r in others),
            "best_session_ndcg": all(sm["ndcg"] > r["ndcg"] for r in others),
            "best_session_kendall_tau": all(sm["kendall_tau"] > r["kendall_tau"] for r in others),
            "overall_mae_no_worse_than_se_log": sm["mae"] <= by["se_log"]["mae"],
            "overall_rmse_no_worse_than_se_log": sm["rmse"] <= by["se_log"]["rmse"],
        }
    # the issue-12 goal: lowest in-band error of {SmeLU, se_log, huber_log} at an overall
    # error within GOAL_BUDGET of se_log's; MAE is the headline metric (fixed before this
    # run, as in the earlier protocol), RMSE is reported beside it
    goal_issue12 = {}
    for s_name in SMELU_ROWS:
        sm, row = by[s_name], {}
        for metric in ("mae", "rmse"):
            vs = {b: paired[s_name][b] for b in GOAL_SET[metric]}
            lowest = all(sm[f"band_{metric}"] < by[b][f"band_{metric}"] for b in GOAL_SET[metric])
            within = sm[metric] <= (1.0 + GOAL_BUDGET) * by["se_log"][metric]
            row[metric] = {
                "lowest_band_error": lowest,
                "lowest_band_error_significant": all(
                    v[f"band_{metric}"]["ci"][1] < 0 for v in vs.values()
                ),
                "band_diff_vs": {b: v[f"band_{metric}"] for b, v in vs.items()},
                "overall_within_budget": within,
                "overall_rel_vs_se_log": vs["se_log"][f"all_{metric}"]["rel"],
                "overall_rel_ci_vs_se_log": vs["se_log"][f"all_{metric}"]["rel_ci"],
                "met": bool(lowest and within),
            }
        goal_issue12[s_name] = row

    # every SmeLU candidate, on test: for the record only (the choices above used validation)
    def sweep(name, bands_of):
        out = {}
        for k, p in candidates_test[name].items():
            out[k] = {
                "train_band": list(bands_of(k)),
                "band_mae": band_error(te.y, p, band),
                "band_rmse": band_error(te.y, p, band, metric="rmse"),
                "mae": overall_error(te.y, p),
                "rmse": overall_error(te.y, p, metric="rmse"),
                "ndcg": session_ranking(te.y, p, te.session),
                "kendall_tau": session_ranking(te.y, p, te.session, metric="kendall"),
            }
        return out

    sweep_pointwise = sweep("smelu_pointwise", lambda k: smelu_bands[k])
    sweep_session = sweep("smelu_session", lambda k: session_knobs[k][0])

    cols = [
        "band_mae",
        "band_rmse",
        "band_mae_s",
        "mae",
        "rmse",
        "mae_s",
        "ndcg",
        "kendall_tau",
        "ece",
        "ece_s",
    ]
    print(
        f"\ntest: {te.n_rows} rows, {rows[0]['band_n']} in band, {rows[0]['n_sessions']} informative sessions"
    )
    for name in SMELU_ROWS:
        print(f"  {name}: {chosen[name]['knob']}")
    print(f"{'method':19s} " + " ".join(f"{c:>11s}" for c in cols))
    for r in rows:
        print(f"{r['model']:19s} " + " ".join(f"{r[c]:11.4f}" for c in cols))
    for name in SMELU_ROWS:
        for b in ("se_log", "huber_log", "huber_log_rmse"):
            print(
                f"{name} - {b} (test, 95% session-bootstrap CI): "
                + "  ".join(
                    f"{k} {v['diff']:+.4f} [{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}]"
                    for k, v in paired[name][b].items()
                )
            )
        for metric in ("mae", "rmse"):
            g = goal_issue12[name][metric]
            print(
                f"  goal ({metric}): lowest band error {g['lowest_band_error']}, overall {g['overall_rel_vs_se_log']:+.2%} "
                f"[{g['overall_rel_ci_vs_se_log'][0]:+.2%}, {g['overall_rel_ci_vs_se_log'][1]:+.2%}] vs se_log -> "
                f"{'MET' if g['met'] else 'not met'}"
            )
    for s_name in SMELU_ROWS:
        for m, t in rank_tests[s_name].items():
            print(
                f"  {s_name} vs {m:19s} ndcg {t['ndcg']['diff']:+.4f} (p={t['ndcg']['p_value']:.3f})  "
                f"tau {t['kendall']['diff']:+.4f} (p={t['kendall']['p_value']:.3f})"
            )
    print("SmeLU candidates on test (not used for the choice):")
    for k, v in {**sweep_pointwise, **sweep_session}.items():
        print(
            f"  {k:40s} band_mae={v['band_mae']:.4f} band_rmse={v['band_rmse']:.4f} mae={v['mae']:.4f} "
            f"rmse={v['rmse']:.4f} ndcg={v['ndcg']:.4f} tau={v['kendall_tau']:+.4f}"
        )
    print("goals:", json.dumps(goals, indent=1))

    out = {
        "band": {
            "method": band.method,
            "log1p_seconds": [band.lo, band.hi],
            "seconds": list(band.seconds),
            "beta": band.beta,
            "c": band.c,
            "shares_fit": band.shares(d.y),
            "shares_test": band.shares(te.y),
        },
        "test_rows_in_band": int(rows[0]["band_n"]),
        "validation": validation,
        "validation_best_baseline_ranking": {"ndcg": best_ndcg, "kendall_tau": best_tau},
        "chosen": chosen,
        "test": rows,
        "bootstrap_vs_se_log_95ci": boot,
        "paired_differences": paired,
        "goal_issue12": goal_issue12,
        "ranking_tests": rank_tests,
        "smelu_band_sweep_on_test_not_used_for_choice": sweep_pointwise,
        "smelu_session_sweep_on_test_not_used_for_choice": sweep_session,
        "goals": goals,
    }
    if investigate:
        out["investigation"] = investigation(
            d,
            smelu_band,
            smelu_omega,
            chosen,
            test_preds["smelu_pointwise"],
            band,
            band_free_diagnostics=band.method == "mixture",
        )
    return out


def investigation(
    d: Data,
    smelu_band: DwellBand,
    omega: float,
    chosen: dict,
    p_sm: np.ndarray,
    band: DwellBand,
    *,
    band_free_diagnostics: bool,
) -> dict:
    """Why the SmeLU behaves as it does: Hessian policy, the winsorised-target equivalence, features."""
    import lightgbm as lgb

    te = d.te
    out = {}
    it = chosen["smelu_pointwise"]["validation"]["best_iteration"]
    native = lgb.train(
        {
            "objective": "regression",
            "learning_rate": LEARNING_RATE,
            "seed": SEED,
            "verbosity": -1,
            **TREE,
        },
        lgb.Dataset(
            d.X,
            np.clip(d.y, smelu_band.lo, smelu_band.hi),
            weight=outside_band_weights(d.y, smelu_band, omega),
        ),
        it,
    )
    p_clip = native.predict(te.X)
    out["se_on_winsorised_log"] = {
        "what": "LightGBM squared error on log1p seconds clipped to the SmeLU training band (rows outside it "
        "weighted as the SmeLU's), same rounds",
        "max_abs_diff_to_smelu": float(np.max(np.abs(p_clip - p_sm))),
        "mean_abs_diff_to_smelu": float(np.mean(np.abs(p_clip - p_sm))),
    }
    out["smelu_predictions_outside_train_band"] = float(
        np.mean((p_sm < smelu_band.lo) | (p_sm > smelu_band.hi))
    )
    for label, extra in (
        ("hessian_floor=1.0", {"hessian_floor": 1.0}),
        ("hessian=exact", {"hessian": "exact"}),
    ):
        predict, itx = fit_smelu(smelu_band, d.X, d.y, d.Xv, d.yv, outside_weight=omega, **extra)
        p = predict(te.X)
        out[f"smelu {label}"] = {
            "best_iteration": int(itx),
            "max_abs_diff_to_smelu": float(np.max(np.abs(p - p_sm))),
            "band_mae": band_error(te.y, p, band),
            "mae": overall_error(te.y, p),
        }
    # which side of the band does the work: clip only bounces, or only idle users (outside weight 1)
    lo_all, hi_all = float(min(d.y.min(), d.yv.min())), float(max(d.y.max(), d.yv.max()))
    for label, b in (
        ("clip below only", DwellBand(smelu_band.lo, hi_all + 1e-6)),
        ("clip above only", DwellBand(lo_all - 1e-6, smelu_band.hi)),
    ):
        predict, itx = fit_smelu(b, d.X, d.y, d.Xv, d.yv)
        p = predict(te.X)
        out[f"smelu {label}"] = {
            "train_band": [b.lo, b.hi],
            "best_iteration": int(itx),
            "band_mae": band_error(te.y, p, band),
            "band_rmse": band_error(te.y, p, band, metric="rmse"),
            "mae": overall_error(te.y, p),
            "rmse": overall_error(te.y, p, metric="rmse"),
            "kendall_tau": session_ranking(te.y, p, te.session, metric="kendall"),
        }
    if not band_free_diagnostics:
        print("investigation:", json.dumps(out, indent=1))
        return out
    # within-session direction of each feature: why every pointwise model ranks a session poorly
    out["feature_kendall_tau_within_session"] = {
        name: session_ranking(
            te.y, np.nan_to_num(te.X[:, j], nan=-1.0), te.session, metric="kendall"
        )
        for j, name in enumerate(te.feature_names)
    }
    out["feature_spearman_pooled"] = {}
    for j, name in enumerate(te.feature_names):
        x = te.X[:, j]
        ok = np.isfinite(x)
        rx, ry = np.argsort(np.argsort(x[ok])), np.argsort(np.argsort(te.y[ok]))
        out["feature_spearman_pooled"][name] = float(np.corrcoef(rx, ry)[0, 1])

    # diagnostic, not a competitor: squared error on the session-centred target (y minus the
    # session's mean dwell) learns only within-session differences; does the data hold any?
    def centred(session, yy):
        g = as_groups(None, yy.size, qid=session)
        return yy - g.from_grouped(g.broadcast(g.mean_per_group(g.to_grouped(yy))))

    tr_sess = d.session_fit, d.session_val
    predict, itx = fit_native(
        "regression", d.X, centred(tr_sess[0], d.y), d.Xv, centred(tr_sess[1], d.yv)
    )
    p = predict(te.X)
    out["se_on_session_centred_log (diagnostic)"] = {
        "best_iteration": int(itx),
        "ndcg": session_ranking(te.y, p, te.session),
        "kendall_tau": session_ranking(te.y, p, te.session, metric="kendall"),
    }
    print("investigation:", json.dumps(out, indent=1))
    return out


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/dwell.json")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="one knob value per method, no sensitivity run (smoke run)",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="(CI) --quick with 5 rounds, 50 resamples and sign flips",
    )
    args = ap.parse_args()
    if args.smoke:
        from _smoke import smoke_out

        global MAX_ROUNDS, EARLY_STOPPING, BOOTSTRAP, PERMUTATIONS
        MAX_ROUNDS, EARLY_STOPPING, BOOTSTRAP, PERMUTATIONS = 5, 2, 50, 50
        args.quick, args.out = True, str(smoke_out("dwell"))
    t_start = time.perf_counter()
    d = Data()
    print(
        f"fit rows {d.X.shape[0]}, validation rows {d.Xv.shape[0]} (sessions starting in the last {HOLDOUT:.0%}), "
        f"test rows {d.te.n_rows}"
    )
    cache: dict = {}
    headline = protocol(
        d, suggest_band(d.y), quick=args.quick, cache=cache, investigate=not args.quick
    )
    sensitivity = None
    if not args.quick:
        # added after the headline results: the same protocol with the 10-90 % quantile band
        # (the within-session search is narrowed to the families chosen in the headline run)
        families = tuple(
            dict.fromkeys(
                headline["chosen"][m]["family"] for m in ("smelu_session", "smelu_session_rank")
            )
        )
        sensitivity = protocol(
            d,
            suggest_band(d.y, method="quantile", lower=0.1, upper=0.9),
            quick=False,
            cache=cache,
            investigate=True,
            families=families,
        )
    out = {
        "protocol": __doc__,
        "quick": args.quick,
        "data": {
            "fit_rows": int(d.X.shape[0]),
            "validation_rows": int(d.Xv.shape[0]),
            "test_rows": int(d.te.n_rows),
        },
        "params": {
            "tree": TREE,
            "learning_rate": LEARNING_RATE,
            "max_rounds": MAX_ROUNDS,
            "early_stopping_rounds": EARLY_STOPPING,
            "seed": SEED,
            "holdout_fraction": HOLDOUT,
            "huber_deltas": HUBER_DELTAS,
            "tweedie_powers": TWEEDIE_POWERS,
            "smelu_widths": SMELU_WIDTHS,
            "smelu_outside_weights": SMELU_OUTSIDE_WEIGHTS,
            "goal_budget": GOAL_BUDGET,
            "session_widths": SESSION_WIDTHS,
            "within_session": {
                k: {"loss": repr(f(DwellBand(0.0, 1.0))), "weights": lams}
                for k, (f, lams) in WITHIN_SESSION.items()
            },
            "rank_budget": RANK_BUDGET,
            "bootstrap_resamples": BOOTSTRAP,
            "permutations": PERMUTATIONS,
        },
        "headline_mixture_band": headline,
        "sensitivity_quantile_band_0.1_0.9": sensitivity,
        "total_seconds": round(time.perf_counter() - t_start, 1),
        "selrank": str(Path(__import__("selrank").__file__).resolve().parent),
        "machine": {
            "python": platform.python_version(),
            "processor": platform.machine(),
            "cpu_count": os.cpu_count(),
            "numpy": np.__version__,
            "lightgbm": __import__("lightgbm").__version__,
        },
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"\nwrote {path} ({out['total_seconds']} s)")


if __name__ == "__main__":
    main()
