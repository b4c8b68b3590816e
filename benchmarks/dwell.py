"""Dwell time on the YOOCHOOSE sample: capped SmeLU against the usual regression objectives.

Run from the repository root::

    python benchmarks/dwell.py [--out benchmarks/results/dwell.json] [--quick]

Protocol (fixed before looking at test results):

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
  dwells, two clicks in the same millisecond, become 0.001 s, the log's resolution), and
  :class:`selrank.SelectiveRegressor` with the capped SmeLU link on log1p seconds.
* Knobs, chosen on the validation part only: Huber's delta and Tweedie's variance power by
  validation in-band MAE (the headline metric, so the baselines get their best shot at it);
  the SmeLU's training band (the evaluation band widened or narrowed about its centre) by
  validation in-band MAE among the bands whose validation overall MAE is no worse than
  squared error on log1p seconds (the goal's side condition); if no band meets it, the
  evaluation band itself.
* Metrics (:func:`selrank.metrics.dwell.dwell_report`), on log1p seconds unless marked
  ``_s`` (seconds): predictions of models trained on seconds enter as
  ``log1p(max(prediction, 0))``. Within-session ranking: NDCG (linear gain on log1p seconds)
  and Kendall's tau over sessions with >= 2 clicks and >= 2 distinct dwells.
* Uncertainty: differences to squared error on log1p seconds with 95 % intervals from a
  paired bootstrap over test sessions (2000 resamples) for the errors, and paired sign-flip
  tests over sessions for the ranking metrics.

Writes ``benchmarks/results/dwell.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

from selrank import SelectiveRegressor
from selrank._groups import as_groups
from selrank.datasets import load_dwell
from selrank.dwell import DwellBand, dwell_link, suggest_band, time_holdout
from selrank.metrics.dwell import band_error, dwell_report, overall_error, session_ranking
from selrank.metrics.ranking import paired_permutation_test

#: Tree parameters shared by every method (LightGBM names).
TREE = {
    "num_leaves": 31,
    "min_data_in_leaf": 50,
    "lambda_l2": 0.0,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "num_threads": 2,
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
SMELU_WIDTHS = (0.75, 1.0, 1.25, 1.5)  # training band half width / evaluation band half width
BOOTSTRAP = 2000
GAMMA_MIN_SECONDS = 1e-3


# --------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------
def fit_native(objective: str, X, target, Xv, target_v, **extra):
    """LightGBM with a built-in objective; early stopping on its own default metric."""
    import lightgbm as lgb

    params = {"objective": objective, "learning_rate": LEARNING_RATE, "seed": SEED, "verbosity": -1, **TREE, **extra}
    train = lgb.Dataset(X, target)
    valid = lgb.Dataset(Xv, target_v, reference=train)
    booster = lgb.train(params, train, MAX_ROUNDS, valid_sets=[valid],
                        callbacks=[lgb.early_stopping(EARLY_STOPPING, verbose=False)])
    it = booster.best_iteration or booster.current_iteration()
    return (lambda Z: booster.predict(Z, num_iteration=it)), it


def fit_smelu(band: DwellBand, X, y, Xv, yv, **extra):
    model = SelectiveRegressor(link=dwell_link(band), learning_rate=LEARNING_RATE, n_estimators=MAX_ROUNDS,
                               early_stopping_rounds=EARLY_STOPPING, random_state=SEED, **TREE, **extra)
    model.fit(X, y, eval_set=[(Xv, yv)])
    return model.predict, model.best_iteration_ or model.n_estimators_


def scaled(band: DwellBand, factor: float) -> DwellBand:
    return DwellBand(band.beta - factor * band.c, band.beta + factor * band.c, method=f"{band.method} x{factor:g}")


# --------------------------------------------------------------------------------------
# uncertainty
# --------------------------------------------------------------------------------------
def session_bootstrap(y, preds: dict, baseline: str, band, session, *, n: int, seed: int = 0) -> dict:
    """95 % intervals of (method − baseline) for band MAE/RMSE and overall MAE/RMSE (log1p s).

    Sessions are resampled with replacement; per-session sums make every resample one
    matrix product.
    """
    groups = as_groups(session, y.size)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(groups.n_groups, np.full(groups.n_groups, 1.0 / groups.n_groups), size=n).astype(float)
    inband = ((y >= band[0]) & (y <= band[1])).astype(float)

    def sums(v):
        return groups.sum(groups.to_grouped(v))

    n_all, n_band = counts @ sums(np.ones_like(y)), counts @ sums(inband)
    base = preds[baseline] - y
    out = {}
    for name, p in preds.items():
        if name == baseline:
            continue
        e = p - y
        row = {}
        for region, w, denom in (("band", inband, n_band), ("all", 1.0, n_all)):
            mae = counts @ sums(w * (np.abs(e) - np.abs(base))) / denom
            rmse = np.sqrt(counts @ sums(w * e * e) / denom) - np.sqrt(counts @ sums(w * base * base) / denom)
            for metric, d in (("mae", mae), ("rmse", rmse)):
                lo, hi = np.quantile(d, [0.025, 0.975])
                row[f"{region}_{metric}"] = [float(lo), float(hi)]
        out[name] = row
    return out


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/dwell.json")
    ap.add_argument("--quick", action="store_true", help="one knob value per method (smoke run; not for reporting)")
    args = ap.parse_args()
    t_start = time.perf_counter()

    data = load_dwell("yoochoose-100k")
    tr, te = data.train, data.test
    held = time_holdout(tr.session, tr.time, fraction=HOLDOUT)
    fit = ~held
    X, y, sec = tr.X[fit], tr.y[fit], tr.seconds[fit]
    Xv, yv, secv = tr.X[held], tr.y[held], tr.seconds[held]
    band = suggest_band(y)
    print(f"fit rows {fit.sum()}, validation rows {held.sum()} (last {HOLDOUT:.0%} of sessions by start), "
          f"test rows {te.n_rows}")
    print(f"engaged band ({band.method}): log1p s [{band.lo:.3f}, {band.hi:.3f}] = "
          f"[{band.seconds[0]:.1f} s, {band.seconds[1]:.1f} s]; shares fit {band.shares(y)}, test {band.shares(te.y)}")

    def val_scores(pred_log):
        return {"band_mae": band_error(yv, pred_log, band), "mae": overall_error(yv, pred_log),
                "rmse": overall_error(yv, pred_log, metric="rmse")}

    log_of = {"log": lambda p: p, "seconds": lambda p: np.log1p(np.maximum(p, 0.0))}
    validation: list[dict] = []
    chosen: dict[str, dict] = {}
    test_preds: dict[str, np.ndarray] = {}
    timings: dict[str, float] = {}

    def run(name, knob, fitter, space):
        t0 = time.perf_counter()
        predict, it = fitter()
        secs = time.perf_counter() - t0
        pv = log_of[space](predict(Xv))
        row = {"method": name, "knob": knob, "best_iteration": int(it), "fit_s": round(secs, 2), **val_scores(pv)}
        validation.append(row)
        print(f"  [validation] {name:12s} {str(knob):>28s}  it={it:5d}  band_mae={row['band_mae']:.4f}  "
              f"mae={row['mae']:.4f}  rmse={row['rmse']:.4f}  ({secs:.1f} s)", flush=True)
        return predict, row

    def pick(name, candidates, space, rule):
        results = [(knob, *run(name, knob, f, space)) for knob, f in candidates]
        knob, predict, row = rule(results)
        chosen[name] = {"knob": knob, "validation": row}
        test_preds[name] = log_of[space](predict(te.X))
        timings[name] = row["fit_s"]

    by_band_mae = lambda rs: min(rs, key=lambda r: r[2]["band_mae"])  # noqa: E731
    gamma_y, gamma_v = np.maximum(sec, GAMMA_MIN_SECONDS), np.maximum(secv, GAMMA_MIN_SECONDS)
    quick = args.quick
    pick("se_seconds", [(None, lambda: fit_native("regression", X, sec, Xv, secv))], "seconds", by_band_mae)
    pick("se_log", [(None, lambda: fit_native("regression", X, y, Xv, yv))], "log", by_band_mae)
    pick("huber_log", [(f"delta={d}", lambda d=d: fit_native("huber", X, y, Xv, yv, alpha=d))
                       for d in (HUBER_DELTAS[1:2] if quick else HUBER_DELTAS)], "log", by_band_mae)
    pick("poisson", [(None, lambda: fit_native("poisson", X, sec, Xv, secv))], "seconds", by_band_mae)
    pick("gamma", [(None, lambda: fit_native("gamma", X, gamma_y, Xv, gamma_v))], "seconds", by_band_mae)
    pick("tweedie", [(f"power={p}", lambda p=p: fit_native("tweedie", X, sec, Xv, secv, tweedie_variance_power=p))
                     for p in (TWEEDIE_POWERS[1:2] if quick else TWEEDIE_POWERS)], "seconds", by_band_mae)

    se_log_val_mae = chosen["se_log"]["validation"]["mae"]

    def smelu_rule(rs):
        ok = [r for r in rs if r[2]["mae"] <= se_log_val_mae]
        if ok:
            return min(ok, key=lambda r: r[2]["band_mae"])
        return next(r for r in rs if r[0] == "width x1")  # the evaluation band itself

    widths = (1.0,) if quick else SMELU_WIDTHS
    smelu_bands = {f"width x{f:g}": scaled(band, f) for f in widths}
    pick("smelu_log", [(k, lambda b=b: fit_smelu(b, X, y, Xv, yv)) for k, b in smelu_bands.items()], "log", smelu_rule)
    smelu_band = smelu_bands[chosen["smelu_log"]["knob"]]
    chosen["smelu_log"]["train_band"] = [smelu_band.lo, smelu_band.hi]
    chosen["smelu_log"]["constraint_met_on_validation"] = chosen["smelu_log"]["validation"]["mae"] <= se_log_val_mae

    # ---- test ---------------------------------------------------------------------------
    report = dwell_report(te.y, test_preds, band=band, session=te.session)
    methods = list(test_preds)
    boot = session_bootstrap(te.y, test_preds, "se_log", band, te.session, n=BOOTSTRAP)
    per_session = {m: {k: session_ranking(te.y, p, te.session, metric=k, reduction="none") for k in ("ndcg", "kendall")}
                   for m, p in test_preds.items()}
    keep = ~np.isnan(per_session["se_log"]["ndcg"])
    rank_tests = {}
    for m in methods:
        if m == "smelu_log":
            continue
        rank_tests[m] = {k: {"diff_smelu_minus": float(np.mean(per_session["smelu_log"][k][keep] - per_session[m][k][keep])),
                             "p_value": paired_permutation_test(per_session["smelu_log"][k][keep], per_session[m][k][keep],
                                                                n_resamples=10_000, seed=0)}
                         for k in ("ndcg", "kendall")}

    rows = report.to_dicts()
    by = {r["model"]: r for r in rows}
    sm = by["smelu_log"]
    others = [by[m] for m in methods if m != "smelu_log"]
    goals = {
        "lowest_band_mae": all(sm["band_mae"] < r["band_mae"] for r in others),
        "lowest_band_rmse": all(sm["band_rmse"] < r["band_rmse"] for r in others),
        "best_session_ndcg": all(sm["ndcg"] > r["ndcg"] for r in others),
        "best_session_kendall_tau": all(sm["kendall_tau"] > r["kendall_tau"] for r in others),
        "overall_mae_no_worse_than_se_log": sm["mae"] <= by["se_log"]["mae"],
        "overall_rmse_no_worse_than_se_log": sm["rmse"] <= by["se_log"]["rmse"],
    }

    # ---- investigation: why the SmeLU behaves as it does ------------------------------------
    investigation = {}
    if not quick:
        import lightgbm as lgb

        yc = np.clip(y, smelu_band.lo, smelu_band.hi)
        it = chosen["smelu_log"]["validation"]["best_iteration"]
        native = lgb.train({"objective": "regression", "learning_rate": LEARNING_RATE, "seed": SEED, "verbosity": -1,
                            **TREE}, lgb.Dataset(X, yc), it)
        p_clip = native.predict(te.X)
        p_sm = test_preds["smelu_log"]
        investigation["se_on_winsorised_log"] = {
            "what": "LightGBM squared error on log1p seconds clipped to the SmeLU training band, same rounds",
            "max_abs_diff_to_smelu": float(np.max(np.abs(p_clip - p_sm))),
            "mean_abs_diff_to_smelu": float(np.mean(np.abs(p_clip - p_sm))),
            "band_mae": band_error(te.y, p_clip, band), "mae": overall_error(te.y, p_clip),
        }
        investigation["smelu_predictions_outside_train_band"] = float(
            np.mean((p_sm < smelu_band.lo) | (p_sm > smelu_band.hi)))
        for label, extra in (("hessian_floor=1.0", {"hessian_floor": 1.0}), ("hessian=exact", {"hessian": "exact"})):
            predict, itx = fit_smelu(smelu_band, X, y, Xv, yv, **extra)
            p = predict(te.X)
            investigation[f"smelu {label}"] = {"best_iteration": int(itx), "max_abs_diff_to_smelu": float(np.max(np.abs(p - p_sm))),
                                               "band_mae": band_error(te.y, p, band), "mae": overall_error(te.y, p)}
        # the sweep of SmeLU bands on test, for the record only (the choice above used validation)
        sweep = {}
        for k, b in smelu_bands.items():
            if k == chosen["smelu_log"]["knob"]:
                p = p_sm
            else:
                predict, _ = fit_smelu(b, X, y, Xv, yv)
                p = predict(te.X)
            sweep[k] = {"band": [b.lo, b.hi], "band_mae": band_error(te.y, p, band), "mae": overall_error(te.y, p),
                        "rmse": overall_error(te.y, p, metric="rmse"),
                        "ndcg": session_ranking(te.y, p, te.session),
                        "kendall_tau": session_ranking(te.y, p, te.session, metric="kendall")}
        investigation["smelu_band_sweep_on_test_not_used_for_choice"] = sweep
        # within-session direction of the features (why every pointwise model ranks poorly)
        investigation["feature_kendall_tau_within_session"] = {
            name: session_ranking(te.y, np.nan_to_num(te.X[:, j], nan=-1.0), te.session, metric="kendall")
            for j, name in enumerate(te.feature_names)}

    # ---- print ------------------------------------------------------------------------------
    cols = ["band_mae", "band_rmse", "band_mae_s", "mae", "rmse", "mae_s", "ndcg", "kendall_tau", "ece", "ece_s"]
    print(f"\ntest: {te.n_rows} rows, {rows[0]['band_n']} in band, {rows[0]['n_sessions']} informative sessions")
    print(f"{'method':12s} " + " ".join(f"{c:>11s}" for c in cols))
    for r in rows:
        print(f"{r['model']:12s} " + " ".join(f"{r[c]:11.4f}" for c in cols))
    print("\nsmelu_log - se_log, 95% session-bootstrap intervals:", boot["smelu_log"])
    print("ranking tests (smelu minus other, sign-flip p):")
    for m, t in rank_tests.items():
        print(f"  vs {m:11s} ndcg {t['ndcg']['diff_smelu_minus']:+.4f} (p={t['ndcg']['p_value']:.3f})  "
              f"tau {t['kendall']['diff_smelu_minus']:+.4f} (p={t['kendall']['p_value']:.3f})")
    print("goals:", goals)

    out = {
        "protocol": __doc__,
        "quick": quick,
        "data": {"fit_rows": int(fit.sum()), "validation_rows": int(held.sum()), "test_rows": int(te.n_rows),
                 "test_rows_in_band": int(rows[0]["band_n"]), "test_informative_sessions": int(rows[0]["n_sessions"])},
        "band": {"method": band.method, "log1p_seconds": [band.lo, band.hi], "seconds": list(band.seconds),
                 "beta": band.beta, "c": band.c, "shares_fit": band.shares(y), "shares_test": band.shares(te.y)},
        "params": {"tree": TREE, "learning_rate": LEARNING_RATE, "max_rounds": MAX_ROUNDS,
                   "early_stopping_rounds": EARLY_STOPPING, "seed": SEED, "holdout_fraction": HOLDOUT},
        "validation": validation,
        "chosen": chosen,
        "test": rows,
        "bootstrap_vs_se_log_95ci": boot,
        "ranking_tests_smelu_vs": rank_tests,
        "goals": goals,
        "investigation": investigation,
        "fit_seconds": timings,
        "total_seconds": round(time.perf_counter() - t_start, 1),
        "machine": {"python": platform.python_version(), "processor": platform.machine(),
                    "numpy": np.__version__, "lightgbm": __import__("lightgbm").__version__},
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=lambda o: None if isinstance(o, float) and math.isnan(o) else str(o)))
    print(f"\nwrote {path} ({out['total_seconds']} s)")


if __name__ == "__main__":
    main()
