"""The LightGBM backend (the estimators' default; also the CLI's ``lambdarank`` baselines)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from .. import _array as A
from .._threads import default_threads, user_threads
from ..gbdt import (
    LIGHTGBM_MIN_DATA_ALIASES,
    LightGBMObjective,
    booster_with_intercept,
    import_lightgbm,
    lightgbm_progress,
)
from ._backend import BackendEstimator
from ._gbdt_backend import GBDTBackend
from ._validation import Features, as_seed, is_verbose

logger = logging.getLogger("selrank")

#: ``f(scores) -> (name, value, higher_is_better)``: an early-stopping metric on one eval set.
MetricFn = Callable[[np.ndarray], tuple[str, float, bool]]

_CHILD_PARSE = r"""
import sys, numpy as np
import lightgbm as lgb
b = lgb.Booster(model_str=sys.stdin.buffer.read().decode("utf-8"))
out = b.predict(np.zeros((1, b.num_feature())), raw_score=True)
sys.stdout.write("finite" if np.all(np.isfinite(out)) else "nonfinite")
"""


class LightGBMBackend(GBDTBackend):
    """LightGBM: :func:`lightgbm.train` with a :class:`~selrank.gbdt.LightGBMObjective`.

    :meth:`base_params`, :meth:`datasets` and :meth:`boost` are the steps of its training
    that also serve LightGBM's built-in objectives (``selrank train``'s ``lambdarank`` and
    ``rank_xendcg`` baselines train through them, with the same early stopping).
    """

    name = "lightgbm"
    model_is_text = True
    export_formats: ClassVar[tuple[str, ...]] = ("lightgbm", "lightgbm-json", "onnx", "treelite")
    child_parse_script = _CHILD_PARSE

    def objective_class(self) -> type[LightGBMObjective]:
        return LightGBMObjective

    # -- the training steps --------------------------------------------------------------------
    @staticmethod
    def base_params(
        learning_rate: float,
        *,
        seed: int | None = None,
        verbose: bool = False,
        n_classes: int | None = None,
    ) -> dict[str, Any]:
        """LightGBM parameters every selrank training sets (no built-in metric: selrank's)."""
        p: dict[str, Any] = {
            "learning_rate": learning_rate,
            "verbosity": 1 if verbose else -1,
            "metric": "None",
        }
        if seed is not None:
            p["seed"] = seed
        if n_classes:
            p["num_class"] = int(n_classes)
        return p

    @staticmethod
    def datasets(
        X: Features,
        y: np.ndarray,
        *,
        group: Any = None,
        weight: np.ndarray | None = None,
        eval_sets: Sequence[tuple[Any, Any, Any, Any]] = (),
        names: list[str] | None = None,
        verbosity: int = -1,
        categorical_feature: Any = "auto",
    ) -> tuple[Any, list[Any]]:
        """``(train, valids)``: :class:`lightgbm.Dataset` objects, the eval sets binned like the
        training set; ``group`` (and the eval sets' groups) as query sizes or
        :class:`~selrank._groups.Groups`, ``eval_sets`` as ``(X, y, group, weight)``."""
        lgb = import_lightgbm()
        names = lightgbm_names(names)
        train = lgb.Dataset(
            X,
            label=y,
            group=_sizes(group),
            weight=weight,
            params={"verbosity": verbosity},
            free_raw_data=False,
            feature_name=names or "auto",
            categorical_feature=categorical_feature,
        )
        valids = [
            lgb.Dataset(
                Xe,
                label=ye,
                group=_sizes(ge),
                weight=we,
                reference=train,
                feature_name=names or "auto",
            )
            for Xe, ye, ge, we in eval_sets
        ]
        return train, valids

    @staticmethod
    def boost(
        params: dict[str, Any],
        train: Any,
        valids: list,
        n_rounds: int,
        *,
        metric_fns: Sequence[MetricFn] = (),
        early_stopping_rounds: int = 0,
        verbose: bool = False,
        callbacks: Sequence[Any] = (),
        objective: LightGBMObjective | None = None,
        init_model: Any = None,
        valid_names: Sequence[str] | None = None,
        extra_metrics: Sequence[Any] = (),
        init_scores: Sequence[Any] | None = None,
    ) -> tuple[Any, int | None, dict]:
        """Train: ``(booster, rounds kept by early stopping or None, metric history)``.

        ``metric_fns`` score each of ``valids`` (the first stops early after
        ``early_stopping_rounds`` rounds without improvement; a LightGBM early-stopping
        callback among ``callbacks`` replaces that). ``objective``: a selrank objective
        trains (``objective.train``), else ``params["objective"]`` (a built-in one).
        ``valid_names`` name the valids (default ``valid_k``); ``extra_metrics`` are further
        LightGBM ``feval`` functions (after the first, which early stopping keeps using);
        ``init_scores`` the start scores of the training set and each valid (a selrank
        objective then starts from them instead of its intercept).
        """
        lgb = import_lightgbm()
        user_callbacks = list(callbacks)
        cbs: list = []
        feval: Any = None
        history: dict = {}
        names_v = None
        if valids:
            fns = list(metric_fns)
            names_v = list(valid_names or [f"valid_{k}" for k in range(len(valids))])
            index = {id(v): k for k, v in enumerate(valids)}

            seen: dict[str, str] = {}

            def ours(preds, data):
                name, value, higher = fns[index[id(data)]](np.asarray(preds))
                seen["name"] = name
                return name, value, higher

            feval = [ours, *extra_metrics] if extra_metrics else ours
            cbs.append(lgb.record_evaluation(history))
            if early_stopping_rounds and not stops_early(user_callbacks):
                if any(params.get(k) not in (None, "None", "") for k in ("metric", "metrics")):
                    # LightGBM evaluates its built-in metrics first: stop on ours by name
                    cbs.append(
                        _StopOnMetric(
                            early_stopping_rounds, names_v[0], lambda: seen.get("name"), verbose
                        )
                    )
                else:
                    cbs.append(
                        lgb.early_stopping(
                            early_stopping_rounds, first_metric_only=True, verbose=verbose
                        )
                    )
        cbs.extend(user_callbacks)
        kwargs: dict[str, Any] = {
            "valid_sets": valids or None,
            "valid_names": names_v,
            "feval": feval,
            "callbacks": cbs,
            "init_model": init_model,
        }
        if objective is not None:
            if init_scores is not None:
                kwargs["init_scores"] = init_scores
            booster = objective.train(params, train, n_rounds, **kwargs)
        else:
            booster = lgb.train(params, train, num_boost_round=n_rounds, **kwargs)
        stops = early_stopping_rounds or stops_early(user_callbacks)
        best = (
            int(booster.best_iteration) if valids and stops and booster.best_iteration > 0 else None
        )
        return booster, best, history

    # -- the estimators' training --------------------------------------------------------------
    def train(
        self,
        est: Any,
        objective: Any,
        X: Features,
        y: np.ndarray,
        *,
        group: Any,
        sample_weight: np.ndarray | None,
        eval_sets: list[dict],
        n_classes: int | None,
        params: dict[str, Any],
        n_rounds: int,
        lr: float,
        esr: int,
        metric: str,
        user_callbacks: Sequence[Any] = (),
        init_model: Any = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, int | None, dict]:
        options = options or {}
        verbose = is_verbose(est.verbose)
        p = self.base_params(
            lr, seed=as_seed(est.random_state), verbose=verbose, n_classes=n_classes
        )
        p.update(params)
        if not user_threads(p):  # OpenMP's one per logical CPU wastes CPU on small data
            p["num_threads"] = default_threads(X.n_rows)
        metric_names = [m for m in options.get("eval_metric", []) if isinstance(m, str)]
        if metric_names:  # LightGBM's built-in metrics, recorded beside selrank's
            p["metric"] = metric_names
        if not any(params.get(k) is not None for k in LIGHTGBM_MIN_DATA_ALIASES) and X.n_rows < 40:
            # LightGBM's default min_data_in_leaf=20 allows no split below 40 rows
            p["min_data_in_leaf"] = max(1, X.n_rows // 10)
            logger.info(
                "%s: %d rows < 2 x min_data_in_leaf=20; training with min_data_in_leaf=%d",
                type(est).__name__,
                X.n_rows,
                p["min_data_in_leaf"],
            )
        train, valids = self.datasets(
            X.data,
            y,
            group=group,
            weight=sample_weight,
            eval_sets=[(ev["X"].data, ev["y"], ev["group"], ev["weight"]) for ev in eval_sets],
            names=options.get("feature_name", X.names),
            verbosity=p["verbosity"],
            categorical_feature=options.get("categorical_feature", "auto"),
        )
        callbacks: list = []
        if self.progress_enabled(est):
            callbacks.append(lightgbm_progress(n_rounds, type(est).__name__))
        callbacks.extend(user_callbacks)
        return self.boost(
            p,
            train,
            valids,
            n_rounds,
            metric_fns=[self.metric_fn(est, metric, ev) for ev in eval_sets],
            early_stopping_rounds=esr,
            verbose=verbose,
            callbacks=callbacks,
            objective=objective,
            init_model=init_model,
            valid_names=options.get("eval_names"),
            extra_metrics=[
                _feval(m) for m in options.get("eval_metric", []) if not isinstance(m, str)
            ],
            init_scores=options.get("init_scores"),
        )

    def check_options(
        self,
        options: dict[str, Any],
        X: Features,
        y: np.ndarray,
        eval_sets: list[dict],
        n_classes: int | None,
    ) -> dict[str, Any]:
        """LightGBM's ``fit`` options checked against the data (as ``LGBMModel.fit`` takes them)."""
        out: dict[str, Any] = {}
        n_eval = len(eval_sets)
        names = options.get("eval_names")
        if names is not None:
            names = [names] if isinstance(names, str) else list(names)
            if len(names) != n_eval or not all(isinstance(n, str) and n for n in names):
                raise ValueError(
                    f"`eval_names` must hold one non-empty name per eval_set item ({n_eval}); got {names!r}"
                )
            if len(set(names)) != len(names):
                raise ValueError(f"`eval_names` must be distinct; got {names!r}")
            out["eval_names"] = names
        metric = options.get("eval_metric")
        if metric is not None:
            metrics = list(metric) if isinstance(metric, list | tuple) else [metric]
            for m in metrics:
                if not (isinstance(m, str) or callable(m)):
                    raise TypeError(
                        "`eval_metric` must be a LightGBM metric name, a callable "
                        f"f(y_true, y_pred[, weight[, group]]) or a list of them; got {m!r}"
                    )
            if metrics and not n_eval:
                raise ValueError("`eval_metric` scores the eval sets: give `eval_set` too")
            out["eval_metric"] = metrics
        feature_name = options.get("feature_name")
        if feature_name is not None:
            fn = list(feature_name)
            if len(fn) != X.shape[1] or not all(isinstance(f, str) and f for f in fn):
                raise ValueError(
                    f"`feature_name` must hold one non-empty name per column of X ({X.shape[1]}); got {fn!r:.120}"
                )
            out["feature_name"] = fn
        categorical = options.get("categorical_feature")
        if categorical is not None:
            cats = list(categorical)
            names_now = out.get("feature_name") or X.names or []
            for c in cats:
                if isinstance(c, str):
                    if c not in names_now:
                        raise ValueError(
                            f"`categorical_feature` names {c!r}, which is not a feature name ({names_now[:8]!r}...)"
                        )
                elif (
                    isinstance(c, bool)
                    or not isinstance(c, int | np.integer)
                    or not 0 <= c < X.shape[1]
                ):
                    raise ValueError(
                        f"`categorical_feature` must hold column indices in [0, {X.shape[1]}) or names; got {c!r}"
                    )
            out["categorical_feature"] = cats
        init_score = options.get("init_score")
        eval_init = options.get("eval_init_score")
        if eval_init is not None and init_score is None:
            raise ValueError(
                "`eval_init_score` needs `init_score` (the training set's start scores)"
            )
        if init_score is not None:
            shape = (X.n_rows,) if not n_classes else (X.n_rows, n_classes)
            scores: list[np.ndarray | None] = [_start_scores(init_score, shape, "init_score")]
            evals = list(eval_init) if eval_init is not None else [None] * n_eval
            if len(evals) != n_eval:
                raise ValueError(
                    f"`eval_init_score` must hold one array (or None) per eval_set item ({n_eval}); got {len(evals)}"
                )
            for k, (ev, s) in enumerate(zip(eval_sets, evals)):
                n = ev["X"].n_rows
                shape_k = (n,) if not n_classes else (n, n_classes)
                scores.append(
                    None if s is None else _start_scores(s, shape_k, f"eval_init_score[{k}]")
                )
            out["init_scores"] = scores
        return out

    def init_booster(self, est: Any, init_model: Any) -> Any:
        """``init_model=`` as a booster whose raw scores include its intercept, or ``None``."""
        if init_model is None:
            return None
        lgb = import_lightgbm()
        if isinstance(init_model, str | os.PathLike):  # a LightGBM model file, as LightGBM reads it
            try:
                init_model = lgb.Booster(model_file=os.fspath(init_model))
            except Exception as exc:
                raise ValueError(
                    f"`init_model` path {os.fspath(init_model)!r} is not a LightGBM model file ({exc}); "
                    f"for a file written by {type(est).__name__}.save, pass {type(est).__name__}.load(path)"
                ) from None
        if isinstance(init_model, BackendEstimator):
            if (
                type(init_model) is not type(est)
                or getattr(init_model, "backend", None) != "lightgbm"
            ):
                raise TypeError(
                    f"`init_model` must be a fitted {type(est).__name__} with backend='lightgbm' or a "
                    f"lightgbm.Booster; got a {type(init_model).__name__} (backend={init_model.backend!r})"
                )
            fitted: Any = init_model  # a selrank estimator: its fitted attributes are set by fit
            fitted.check_fitted()
            n_iter = fitted.best_iteration_
            booster = fitted.booster_
            # a model that holds its intercept in its first trees (selrank >= 0.3) scores with it
            held = fitted.objective_.intercept_in_model(booster)
            if n_iter is not None and n_iter < booster.current_iteration():
                booster = lgb.Booster(model_str=booster.model_to_string(num_iteration=n_iter))
            return booster_with_intercept(booster, 0.0 if held else fitted.intercept_)
        if isinstance(init_model, lgb.Booster):
            # a plain booster: raw scores as they are (plus selrank's intercept where it is not
            # already inside the trees)
            held = bool(getattr(init_model, "_selrank_in_model", False))
            c = 0.0 if held else getattr(init_model, "_selrank_intercept", 0.0)
            return booster_with_intercept(init_model, c)
        raise TypeError(
            f"`init_model` must be a fitted {type(est).__name__} or a lightgbm.Booster; "
            f"got {type(init_model).__name__}"
        )

    # -- the estimator's file ------------------------------------------------------------------
    def check_model_field(self, model: str, where: str) -> None:
        if not model.startswith("tree\n") or "end of trees" not in model:
            raise ValueError(f"{where} is damaged: its LightGBM model text is cut or not a model")

    # -- export --------------------------------------------------------------------------------
    def export(self, booster: Any, path: str, format: str, n_rounds: int | None) -> None:
        if format == "lightgbm":
            text = booster.model_to_string(num_iteration=n_rounds)
            if booster.num_model_per_iteration() == 1:  # lleaves and converters need an objective
                text = _named_objective(text, "regression")  # raw score = prediction
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        elif format == "lightgbm-json":
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(booster.dump_model(num_iteration=n_rounds), fh)
        else:
            raise ValueError(f"format={format!r} is not a LightGBM file format")

    def to_treelite(self, booster: Any, n_rounds: int | None) -> Any:
        import treelite

        text = booster.model_to_string(num_iteration=n_rounds)
        return treelite.frontend.from_lightgbm(
            _lightgbm_with_objective(text, booster, "regression")
        )

    def to_onnx(self, booster: Any, n_rounds: int | None, inputs: Any, opset: int) -> Any:
        import onnxmltools

        text = booster.model_to_string(num_iteration=n_rounds)
        copy = _lightgbm_with_objective(text, booster, "regression")
        onx = onnxmltools.convert_lightgbm(
            copy, initial_types=inputs, target_opset=opset, zipmap=False
        )
        return onx, int(booster.num_model_per_iteration())


class _StopOnMetric:
    """LightGBM early stopping on one metric of one valid set, found by name (public API only:
    ``lightgbm.callback.EarlyStopException``); used when built-in metrics (``eval_metric``)
    come before selrank's in LightGBM's evaluation list."""

    def __init__(
        self, rounds: int, valid: str, metric: Callable[[], str | None], verbose: bool = False
    ) -> None:
        # instance attributes: lightgbm.train gives callbacks without an "order" in their
        # __dict__ a negative one (they would run before record_evaluation)
        self.order = 30
        self.before_iteration = False
        self.rounds = int(rounds)
        self.valid = valid
        self.metric = metric
        self.verbose = verbose
        self.best: float | None = None
        self.best_iteration = 0
        self.best_results: list = []

    def __call__(self, env: Any) -> None:
        lgb = import_lightgbm()
        name = self.metric()
        found = [r for r in env.evaluation_result_list if r[0] == self.valid and r[1] == name]
        if not found:
            return
        value, higher = float(found[0][2]), bool(found[0][3])
        if self.best is None or (value > self.best if higher else value < self.best):
            self.best, self.best_iteration = value, env.iteration
            self.best_results = list(env.evaluation_result_list)
        elif env.iteration - self.best_iteration >= self.rounds:
            if self.verbose:
                logger.info(
                    "early stopping: best %s %s = %g at round %d",
                    self.valid,
                    name,
                    self.best,
                    self.best_iteration + 1,
                )
            raise lgb.callback.EarlyStopException(self.best_iteration, self.best_results)
        if env.iteration == env.end_iteration - 1:
            raise lgb.callback.EarlyStopException(self.best_iteration, self.best_results)


def _start_scores(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """Start scores (``init_score``) as finite float64 of ``shape`` (class-major columns for
    multi-class, as LightGBM takes them)."""
    arr = np.asarray(A.to_numpy(value), dtype=np.float64)
    if arr.shape != shape and not (len(shape) == 2 and arr.shape == (shape[0] * shape[1],)):
        raise ValueError(f"`{name}` must have shape {shape}; got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` must be finite")
    return arr


def _feval(metric: Callable[..., Any]) -> Callable[[np.ndarray, Any], Any]:
    """A ``fit(eval_metric=f)`` callable as a LightGBM ``feval`` (``lightgbm.sklearn``'s
    convention: ``f(y_true, y_pred)``, ``f(y_true, y_pred, weight)`` or
    ``f(y_true, y_pred, weight, group)``)."""
    import inspect

    try:
        n_args = len(inspect.signature(metric).parameters)
    except (TypeError, ValueError):
        n_args = 2
    if n_args not in (2, 3, 4):
        raise TypeError(
            f"an `eval_metric` callable takes (y_true, y_pred[, weight[, group]]); {metric!r} takes {n_args} arguments"
        )

    def feval(preds: np.ndarray, data: Any) -> Any:
        args: list[Any] = [data.get_label(), preds]
        if n_args >= 3:
            args.append(data.get_weight())
        if n_args == 4:
            args.append(data.get_group())
        return metric(*args)

    return feval


def _sizes(group):
    """Query sizes for LightGBM from sizes or a :class:`~selrank._groups.Groups` (or None)."""
    return getattr(group, "sizes", group)


def stops_early(callbacks) -> bool:
    """Whether the user's callbacks include LightGBM's early stopping (it replaces the built-in one).

    Recognised by the type ``lightgbm.early_stopping`` returns (its class name is private)."""
    lgb = import_lightgbm()
    early = type(lgb.early_stopping(1))
    return any(isinstance(cb, early) for cb in callbacks)


def lightgbm_names(names: list[str] | None) -> list[str] | None:
    """Column names LightGBM accepts as feature names (it refuses JSON special characters)."""
    if not names or len(set(names)) != len(names):
        return None
    if any(any(ch in n for ch in '[]{}:,"') or not n for n in names):
        return None
    return names


def _lightgbm_with_objective(text: str, booster, objective: str):
    """A copy of the booster that names a built-in objective (converters refuse 'custom')."""
    lgb = import_lightgbm()
    if booster.num_model_per_iteration() > 1:
        objective = f"multiclass num_class:{booster.num_model_per_iteration()}"
    copy = lgb.Booster(model_str=_named_objective(text, objective))
    copy.params["objective"] = objective.split()[0]  # what onnxmltools reads
    return copy


def _named_objective(text: str, objective: str) -> str:
    """LightGBM model text with an ``objective=`` header line (custom objectives write none)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("objective="):
            lines[i] = f"objective={objective}"
            break
        if line.startswith("Tree="):
            at = next(j for j, x in enumerate(lines) if x.startswith("num_tree_per_iteration="))
            lines.insert(at + 1, f"objective={objective}")
            break
    return "\n".join(lines)
