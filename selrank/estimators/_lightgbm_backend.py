"""The LightGBM backend (the estimators' default; also the CLI's ``lambdarank`` baselines)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

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
    ) -> tuple[Any, int | None, dict]:
        """Train: ``(booster, rounds kept by early stopping or None, metric history)``.

        ``metric_fns`` score each of ``valids`` (the first stops early after
        ``early_stopping_rounds`` rounds without improvement; a LightGBM early-stopping
        callback among ``callbacks`` replaces that). ``objective``: a selrank objective
        trains (``objective.train``), else ``params["objective"]`` (a built-in one).
        """
        lgb = import_lightgbm()
        user_callbacks = list(callbacks)
        cbs: list = []
        feval = None
        history: dict = {}
        names_v = None
        if valids:
            fns = list(metric_fns)
            names_v = [f"valid_{k}" for k in range(len(valids))]
            index = {id(v): k for k, v in enumerate(valids)}

            def feval(preds, data):
                name, value, higher = fns[index[id(data)]](np.asarray(preds))
                return name, value, higher

            cbs.append(lgb.record_evaluation(history))
            if early_stopping_rounds and not stops_early(user_callbacks):
                cbs.append(
                    lgb.early_stopping(
                        early_stopping_rounds, first_metric_only=True, verbose=verbose
                    )
                )
        cbs.extend(user_callbacks)
        kwargs = {
            "valid_sets": valids or None,
            "valid_names": names_v,
            "feval": feval,
            "callbacks": cbs,
            "init_model": init_model,
        }
        if objective is not None:
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
    ) -> tuple[Any, int | None, dict]:
        verbose = is_verbose(est.verbose)
        p = self.base_params(
            lr, seed=as_seed(est.random_state), verbose=verbose, n_classes=n_classes
        )
        p.update(params)
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
            names=X.names,
            verbosity=p["verbosity"],
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
        )

    def init_booster(self, est: Any, init_model: Any) -> Any:
        """``init_model=`` as a booster whose raw scores include its intercept, or ``None``."""
        if init_model is None:
            return None
        lgb = import_lightgbm()
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
            fitted._check_fitted()
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


def _sizes(group):
    """Query sizes for LightGBM from sizes or a :class:`~selrank._groups.Groups` (or None)."""
    return getattr(group, "sizes", group)


def stops_early(callbacks) -> bool:
    """Whether the user's callbacks include LightGBM's early stopping (it replaces the built-in one)."""
    return any(type(cb).__name__ == "_EarlyStoppingCallback" for cb in callbacks)


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
