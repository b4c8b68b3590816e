"""The XGBoost backend: :meth:`selrank.gbdt.XGBoostObjective.train` with selrank's early stopping."""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._threads import default_threads, user_threads
from ..gbdt import XGBoostObjective, import_xgboost, xgboost_progress
from ._gbdt_backend import GBDTBackend
from ._validation import Features, as_seed, is_verbose

_CHILD_PARSE = r"""
import base64, sys, numpy as np
import xgboost as xgb
b = xgb.Booster()
b.load_model(bytearray(base64.b64decode(sys.stdin.buffer.read())))
out = b.predict(xgb.DMatrix(np.zeros((1, b.num_features()))), output_margin=True)
sys.stdout.write("finite" if np.all(np.isfinite(out)) else "nonfinite")
"""


class XGBoostBackend(GBDTBackend):
    """XGBoost: ``hist`` trees grown from a :class:`~selrank.gbdt.XGBoostObjective`."""

    name = "xgboost"
    model_is_text = False
    export_formats: ClassVar[tuple[str, ...]] = ("xgboost-json", "xgboost-ubj", "onnx", "treelite")
    child_parse_script = _CHILD_PARSE

    def objective_class(self) -> type[XGBoostObjective]:
        return XGBoostObjective

    def train_params(self, est: Any) -> dict[str, Any]:
        params = super().train_params(est)
        params.setdefault("min_child_weight", 1e-3)
        return params

    def objective_options(self, params: dict[str, Any]) -> dict[str, Any]:
        # the Hessian floor keeps leaves above the min_child_weight XGBoost trains with
        return {"min_leaf_hessian": float(params.get("min_child_weight", 1e-3))}

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
        xgb = import_xgboost()
        p: dict[str, Any] = {
            "eta": lr,
            "verbosity": 1 if is_verbose(est.verbose) else 0,
            "tree_method": "hist",
            "disable_default_eval_metric": 1,
        }
        if est.random_state is not None:
            p["seed"] = as_seed(est.random_state)
        if n_classes:
            p["num_class"] = int(n_classes)
        p.update(params)
        if not user_threads(p):  # OpenMP's one per logical CPU wastes CPU on small data
            p["nthread"] = default_threads(X.n_rows)
        device = str(p.get("device", "cpu"))
        data = None
        if device.startswith("cuda") and isinstance(X.data, np.ndarray | type(None)) is not False:
            try:
                import cupy

                data = cupy.asarray(X.data)
            except ImportError:
                warnings.warn(
                    "device='cuda' without CuPy: trees are built on the GPU but gradients are computed on "
                    "the host (pip install cupy for the device-resident loop)",
                    UserWarning,
                    stacklevel=4,
                )
        group_loss = objective.structure == "group"
        names = xgboost_names(X.names)

        def dmatrix(Xm, ym, groups, weight):
            d = xgb.DMatrix(Xm, label=ym, feature_names=names, enable_categorical=True)
            if groups is not None and group_loss:
                d.set_group(groups.sizes)
                if (
                    weight is not None
                ):  # XGBoost ranking weights are per query: the mean of its rows
                    d.set_weight(groups.mean_per_group(weight))
            elif weight is not None:
                d.set_weight(weight)
            return d

        dtrain = dmatrix(X.data, y, group, sample_weight)
        evals = [
            (dmatrix(ev["X"].data, ev["y"], ev["group"], ev["weight"]), f"valid_{k}")
            for k, ev in enumerate(eval_sets)
        ]
        custom_metric = None
        history: dict = {}
        if evals:
            fns = [self.metric_fn(est, metric, ev) for ev in eval_sets]
            index = {id(d): k for k, (d, _) in enumerate(evals)}

            def custom_metric(preds, d):
                name, value, _ = fns[index[id(d)]](np.asarray(preds))
                return name, value

        callbacks = []
        if self.progress_enabled(est):
            callbacks.append(xgboost_progress(n_rounds, type(est).__name__))
        callbacks.extend(user_callbacks)
        higher = metric == "ndcg"
        booster = objective.train(
            p,
            dtrain,
            n_rounds,
            data=data,
            evals=evals,
            custom_metric=custom_metric,
            early_stopping_rounds=esr or None,
            maximize=higher if esr else None,
            evals_result=history,
            callbacks=callbacks or None,
        )
        best = getattr(booster, "best_iteration", None) if evals and esr else None
        if best is not None and int(best) + 1 < objective.n_rounds(booster):
            # keep the best rounds only (LightGBM's booster is cut the same way), so that plain
            # XGBoost, which predicts every tree of a saved model, scores what predict scores
            booster = booster[: int(best) + 1]
        return booster, (None if best is None else int(best) + 1), history

    # -- the estimator's file ------------------------------------------------------------------
    def check_model_field(self, model: str, where: str) -> None:
        try:
            base64.b64decode(model, validate=True)
        except ValueError:
            raise ValueError(f"{where} is damaged: its XGBoost model is not base64") from None

    # -- export --------------------------------------------------------------------------------
    def export(self, booster: Any, path: str, format: str, n_rounds: int | None) -> None:
        if format not in ("xgboost-json", "xgboost-ubj"):
            raise ValueError(f"format={format!r} is not an XGBoost file format")
        b = booster if n_rounds is None else booster[:n_rounds]
        raw = b.save_raw("json" if format == "xgboost-json" else "ubj")
        with open(path, "wb") as fh:
            fh.write(bytes(raw))

    def to_treelite(self, booster: Any, n_rounds: int | None) -> Any:
        import treelite

        b = booster if n_rounds is None else booster[:n_rounds]
        return treelite.frontend.from_xgboost_json(bytes(b.save_raw("json")).decode("utf-8"))

    def to_onnx(self, booster: Any, n_rounds: int | None, inputs: Any, opset: int) -> Any:
        import onnxmltools

        b = booster if n_rounds is None else booster[:n_rounds]
        config = json.loads(booster.save_config())
        k = max(1, int(config["learner"]["learner_model_param"].get("num_class", "0")))
        if k > 1:
            raise NotImplementedError(
                "ONNX export of multi-class XGBoost models is not supported (onnxmltools converts an "
                "XGBoost Booster with one output); export format='xgboost-json' instead"
            )
        return onnxmltools.convert_xgboost(b, initial_types=inputs, target_opset=opset), k


def xgboost_names(names: list[str] | None) -> list[str] | None:
    """Column names XGBoost accepts as feature names (no ``[``, ``]`` or ``<``)."""
    if not names or len(set(names)) != len(names):
        return None
    if any(any(ch in n for ch in "[]<") or not n for n in names):
        return None
    return names
