"""Candidates of a selection run: selrank objectives and the libraries' built-in ones, trained
with the same trees, learning rate, early stopping and features."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from ._data import Part


@dataclass(frozen=True)
class TrainSettings:
    """What every candidate of a run shares.

    Attributes
    ----------
    n_rounds : int
        Most boosting rounds.
    learning_rate : float
    early_stopping_rounds : int
        Patience of early stopping on the validation part (NDCG@``k`` for ranking, RMSE for
        regression), the same rule for every candidate.
    k : int
        Cut-off of the early-stopping NDCG.
    num_leaves : int
        Leaves per tree (XGBoost: ``grow_policy="lossguide"``, ``max_leaves``).
    tree_params : dict
        Further LightGBM parameters of every LightGBM candidate (selrank and built-in).
    num_threads : int or None
        Threads per fit (``None``: the library's default).
    seed : int
    band : tuple of float or None
        The band of a regression run (the capped SmeLU candidates are sensitive on it).
    shared : dict or None
        Binned datasets the LightGBM built-ins of one run share per split (``select`` gives one
        dict per run; ``None``: each fit bins its own).
    """

    n_rounds: int = 1000
    learning_rate: float = 0.05
    early_stopping_rounds: int = 50
    k: int = 10
    num_leaves: int = 31
    tree_params: Mapping[str, Any] = field(default_factory=dict)
    num_threads: int | None = None
    seed: int = 0
    band: tuple[float, float] | None = None
    shared: dict[Any, Any] | None = field(default=None, compare=False, repr=False)


@dataclass
class FitResult:
    """A fitted candidate: its scorer, rounds kept, validation curve and model.

    Attributes
    ----------
    predict : callable
        ``predict(X) -> scores`` (score space: higher ranks first; regression: the prediction).
    rounds : int
        Trees kept after early stopping.
    curve : list of float
        The early-stopping metric on the validation part after each round.
    model : object
        The fitted model (a selrank estimator, a ``lightgbm.Booster``, an ``xgboost.Booster``
        or what a custom candidate returns), for saving and export.
    model_bytes : int
        Size of the model as the library writes it (0 when unknown).
    predict_one : callable or None
        The scorer a server would call for one query (one thread); ``None``: ``predict``.
    """

    predict: Callable[[np.ndarray], np.ndarray]
    rounds: int = 0
    curve: list[float] = field(default_factory=list)
    model: Any = None
    model_bytes: int = 0
    predict_one: Callable[[np.ndarray], np.ndarray] | None = None


#: ``fit(train, valid, settings) -> FitResult`` (or a plain ``predict(X)`` callable).
FitFn = Callable[[Part, Part, TrainSettings], Any]


@dataclass(frozen=True)
class Candidate:
    """A named objective a selection run trains.

    Attributes
    ----------
    name : str
    fit : callable
        ``fit(train, valid, settings)`` returning a :class:`FitResult` or a ``predict(X)``
        callable (a custom candidate).
    builtin : bool
        A library's own objective (the reference a selrank objective must beat).
    family : str
        ``"listwise"``, ``"pairwise"``, ... : the test comparisons take each family's best.
    description : str
    check : callable or None
        ``check(labels) -> None`` raises ``ValueError`` for labels the objective cannot take.
    adapt : callable or None
        ``adapt(labels) -> (candidate, note)`` for labels that need other settings
        (``lambdarank`` with labels >= 31 gets a ``label_gain``).
    """

    name: str
    fit: FitFn
    builtin: bool = False
    family: str = "custom"
    description: str = ""
    check: Callable[[np.ndarray], None] | None = None
    adapt: Callable[[np.ndarray], tuple[Candidate, str | None]] | None = None


def _first_curve(history: Mapping[str, Any]) -> list[float]:
    for per_metric in history.values():
        for values in per_metric.values():
            return [float(v) for v in values]
    return []


def _selrank_fit(kind: str, loss: str, **est_params: Any) -> FitFn:
    def fit(train: Part, valid: Part, s: TrainSettings) -> FitResult:
        from ..estimators import SelectiveRanker, SelectiveRegressor

        common: dict[str, Any] = {
            "n_estimators": s.n_rounds,
            "learning_rate": s.learning_rate,
            "early_stopping_rounds": s.early_stopping_rounds,
            "random_state": s.seed,
            "num_leaves": s.num_leaves,
            **dict(s.tree_params),
        }
        if s.num_threads is not None:
            common["num_threads"] = s.num_threads
        params = dict(est_params)
        if kind == "ranker":
            model: Any = SelectiveRanker(loss, eval_at=s.k, **params, **common)
            model.fit(
                train.X,
                train.y,
                group=train.group,
                eval_set=[(valid.X, valid.y)],
                eval_group=[valid.group],
            )
        else:
            if params.get("link") == "band":
                from ..dwell import dwell_link

                if s.band is None:
                    raise ValueError("the capped SmeLU candidate needs a band")
                params["link"] = dwell_link(s.band)
            model = SelectiveRegressor(**params, **common)
            model.fit(train.X, train.y, eval_set=[(valid.X, valid.y)])
        rounds = int(model.n_estimators_)
        booster = model.booster_
        text = booster.model_to_string(num_iteration=rounds)

        def predict_one(X: np.ndarray) -> np.ndarray:
            # the booster holds its intercept (docs/deployment.md): its raw score is a ranker's
            # predict (a regressor's before its link's inverse)
            return np.asarray(booster.predict(X, num_iteration=rounds, num_threads=1))

        return FitResult(
            model.predict,
            rounds,
            _first_curve(model.evals_result_),
            model,
            len(text.encode()),
            predict_one,
        )

    return fit


def _lightgbm_fit(objective: str, **extra: Any) -> FitFn:
    """A LightGBM built-in objective through the estimators' LightGBM backend (the steps
    ``selrank train`` trains its baselines with): the same datasets, parameters and early
    stopping as the selrank candidates."""

    def fit(train: Part, valid: Part, s: TrainSettings) -> FitResult:
        from ..estimators.backends import LightGBMBackend, ndcg_metric

        lgbm = LightGBMBackend()
        params = {
            "objective": objective,
            **lgbm.base_params(s.learning_rate, seed=s.seed),
            "num_leaves": s.num_leaves,
            **dict(s.tree_params),
            **extra,
        }
        if s.num_threads is not None:
            params["num_threads"] = s.num_threads
        ranking = objective in ("lambdarank", "rank_xendcg")
        # The built-ins of a run share one binned Dataset per split (LightGBM bins once; the
        # objective is not a Dataset parameter). The entry holds the parts themselves, so that
        # an id is never reused while it is cached (click labels make new parts per fit).
        key = (id(train), id(valid), ranking, s.seed, repr(sorted(s.tree_params.items())))
        entry = None if s.shared is None else s.shared.get(key)
        if entry is not None and entry[0] is train and entry[1] is valid:
            dtrain, valids = entry[2], entry[3]
        else:
            dtrain, valids = lgbm.datasets(
                cast(Any, train.X),  # a dense array (LightGBM takes it as it is)
                train.y,
                group=train.group if ranking else None,
                eval_sets=[(valid.X, valid.y, valid.group if ranking else None, None)],
            )
            if s.shared is not None:
                s.shared[key] = (train, valid, dtrain, valids)
        metric = ndcg_metric(valid.y, valid.group, s.k) if ranking else _rmse_metric(valid.y)
        booster, best, history = lgbm.boost(
            params,
            dtrain,
            valids,
            s.n_rounds,
            metric_fns=[metric],
            early_stopping_rounds=s.early_stopping_rounds,
        )
        kept = int(best if best is not None else booster.current_iteration())

        def predict(X: np.ndarray) -> np.ndarray:
            return np.asarray(booster.predict(X, num_iteration=kept), dtype=np.float64)

        def predict_one(X: np.ndarray) -> np.ndarray:
            return np.asarray(booster.predict(X, num_iteration=kept, num_threads=1))

        size = len(booster.model_to_string(num_iteration=kept).encode())
        return FitResult(predict, kept, _first_curve(history), booster, size, predict_one)

    return fit


def _rmse_metric(y: np.ndarray) -> Callable[[np.ndarray], tuple[str, float, bool]]:
    def fn(scores: np.ndarray) -> tuple[str, float, bool]:
        return "rmse", float(np.sqrt(np.mean((np.asarray(scores) - y) ** 2))), False

    return fn


def _xgboost_fit(objective: str) -> FitFn:
    """An XGBoost built-in objective: ``hist`` trees grown leaf-wise to the same number of
    leaves, the same learning rate and early stopping on the same metric."""

    def fit(train: Part, valid: Part, s: TrainSettings) -> FitResult:
        from ..estimators.backends import ndcg_metric
        from ..gbdt import import_xgboost

        xgb = import_xgboost()
        ranking = objective.startswith("rank:")
        params: dict[str, Any] = {
            "objective": objective,
            "eta": s.learning_rate,
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_leaves": s.num_leaves,
            "max_depth": 0,
            "min_child_weight": 1e-3,  # LightGBM's min_sum_hessian_in_leaf
            "verbosity": 0,
            "disable_default_eval_metric": 1,
            "seed": s.seed,
        }
        if s.num_threads is not None:
            params["nthread"] = s.num_threads
        dtrain = xgb.DMatrix(train.X, label=train.y)
        dvalid = xgb.DMatrix(valid.X, label=valid.y)
        if ranking:
            dtrain.set_group(train.group)
            dvalid.set_group(valid.group)
        fn = ndcg_metric(valid.y, valid.group, s.k) if ranking else _rmse_metric(valid.y)

        def custom_metric(preds: np.ndarray, d: Any) -> tuple[str, float]:
            name, value, _ = fn(np.asarray(preds))
            return name, value

        history: dict = {}
        booster = xgb.train(
            params,
            dtrain,
            s.n_rounds,
            evals=[(dvalid, "valid_0")],
            custom_metric=custom_metric,
            early_stopping_rounds=s.early_stopping_rounds or None,
            maximize=ranking,
            evals_result=history,
            verbose_eval=False,
        )
        best = getattr(booster, "best_iteration", None)
        kept = booster.num_boosted_rounds() if best is None else int(best) + 1
        booster = booster[:kept]

        def predict(X: np.ndarray) -> np.ndarray:
            return np.asarray(booster.predict(xgb.DMatrix(X)), dtype=np.float64)

        one = booster.copy()
        one.set_param({"nthread": 1})

        def predict_one(X: np.ndarray) -> np.ndarray:
            return np.asarray(one.inplace_predict(X), dtype=np.float64)

        size = len(bytes(booster.save_raw("json")))
        return FitResult(predict, kept, _first_curve(history), booster, size, predict_one)

    return fit


# -- label checks --------------------------------------------------------------------------------
def _nonnegative(name: str) -> Callable[[np.ndarray], None]:
    def check(y: np.ndarray) -> None:
        if np.any(y < 0):
            raise ValueError(f"{name} needs labels >= 0; the data hold {float(y.min())!r}")

    return check


def _integer_grades(name: str, limit: int | None) -> Callable[[np.ndarray], None]:
    def check(y: np.ndarray) -> None:
        _nonnegative(name)(y)
        if np.any(y != np.round(y)):
            bad = y[np.flatnonzero(y != np.round(y))[0]]
            raise ValueError(f"{name} needs integer grades; the labels hold {float(bad)!r}")
        if limit is not None and y.max() >= limit:
            raise ValueError(
                f"{name} takes grades below {limit} (2^grade - 1 gains); the labels reach "
                f"{float(y.max())!r}"
            )

    return check


def _lambdarank_adapt(y: np.ndarray) -> tuple[Candidate, str | None]:
    """``lambdarank`` for integer grades >= 31: a ``label_gain`` of ``2^g - 1`` up to the top."""
    top = int(y.max())
    gain = ",".join(str(float(2.0**g - 1.0)) for g in range(top + 1))
    cand = replace(
        CANDIDATES["lambdarank"],
        fit=_lightgbm_fit("lambdarank", label_gain=gain),
        check=_integer_grades("LightGBM lambdarank", None),
        adapt=None,
    )
    return (
        cand,
        f"LightGBM lambdarank: labels reach {top}; trained with label_gain 2^g - 1 for g = 0..{top}",
    )


# -- the registry --------------------------------------------------------------------------------
def _ranking(name: str, loss: str, family: str, description: str, **params: Any) -> Candidate:
    return Candidate(
        name,
        _selrank_fit("ranker", loss, **params),
        False,
        family,
        description,
        _nonnegative(f"selrank {name}"),
    )


#: The ranking candidates by name (``select(candidates=[...])``, ``--candidates``).
CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        _ranking("listwise", "listwise", "listwise", "selrank listwise, exp scaling (default)"),
        _ranking(
            "listwise-constant",
            "listwise",
            "listwise",
            "selrank listwise, constant scaling (its non-selective twin)",
            scaling="constant",
        ),
        _ranking(
            "pairwise", "pairwise", "pairwise", "selrank pairwise, capped sinh link (default)"
        ),
        _ranking(
            "pairwise-sigmoid",
            "pairwise",
            "pairwise",
            "selrank pairwise, sigmoid link (its logistic twin, RankNet-like)",
            link="sigmoid",
        ),
        _ranking(
            "weighted_pairwise",
            "weighted_pairwise",
            "weighted_pairwise",
            "selrank ΔNDCG-weighted pairwise, capped sinh link",
        ),
        _ranking(
            "weighted_pairwise-sigmoid",
            "weighted_pairwise",
            "weighted_pairwise",
            "selrank ΔNDCG-weighted pairwise, sigmoid link, order targets (its lambdarank twin)",
            link="sigmoid",
            target="order",
        ),
        Candidate(
            "lambdarank",
            _lightgbm_fit("lambdarank"),
            True,
            "built-in",
            "LightGBM lambdarank",
            _integer_grades("LightGBM lambdarank", 31),
            _lambdarank_adapt,
        ),
        Candidate(
            "rank_xendcg",
            _lightgbm_fit("rank_xendcg"),
            True,
            "built-in",
            "LightGBM rank_xendcg",
            _nonnegative("LightGBM rank_xendcg"),
        ),
        Candidate(
            "rank:ndcg",
            _xgboost_fit("rank:ndcg"),
            True,
            "built-in",
            "XGBoost rank:ndcg",
            _integer_grades("XGBoost rank:ndcg", 32),
        ),
        Candidate(
            "rank:pairwise",
            _xgboost_fit("rank:pairwise"),
            True,
            "built-in",
            "XGBoost rank:pairwise",
            _nonnegative("XGBoost rank:pairwise"),
        ),
    )
}

#: The regression / dwell-time candidates by name (``task="regression"``).
REGRESSION_CANDIDATES: dict[str, Candidate] = {
    c.name: c
    for c in (
        Candidate(
            "squared_error",
            _selrank_fit("regressor", "pointwise", link="identity"),
            False,
            "identity",
            "selrank pointwise, identity link (squared error)",
        ),
        Candidate(
            "smelu",
            _selrank_fit("regressor", "pointwise", link="band"),
            False,
            "smelu",
            "selrank pointwise, capped SmeLU link on the band (dwell_link)",
        ),
        Candidate(
            "sigmoid",
            _selrank_fit("regressor", "pointwise", link="sigmoid"),
            False,
            "sigmoid",
            "selrank pointwise, sigmoid link",
        ),
        Candidate("l2", _lightgbm_fit("regression"), True, "built-in", "LightGBM regression (L2)"),
        Candidate("huber", _lightgbm_fit("huber"), True, "built-in", "LightGBM huber"),
        Candidate(
            "reg:squarederror",
            _xgboost_fit("reg:squarederror"),
            True,
            "built-in",
            "XGBoost reg:squarederror",
        ),
        Candidate(
            "reg:pseudohubererror",
            _xgboost_fit("reg:pseudohubererror"),
            True,
            "built-in",
            "XGBoost reg:pseudohubererror",
        ),
    )
}

#: The candidates a ranking run trains when none are named.
DEFAULT_CANDIDATES = tuple(CANDIDATES)
#: The candidates a regression run trains when none are named.
DEFAULT_REGRESSION_CANDIDATES = tuple(REGRESSION_CANDIDATES)


def register_candidate(
    name: str,
    fit: FitFn,
    *,
    builtin: bool = False,
    family: str = "custom",
    description: str = "",
    task: str = "ranking",
) -> Candidate:
    """Register a candidate under ``name`` so that runs (and ``--candidates``) can name it.

    ``fit(train, valid, settings)`` returns a :class:`FitResult` or a ``predict(X)`` callable;
    ``train`` and ``valid`` are :class:`~selrank.selection.Part` objects (``X, y, group``).
    """
    registry = CANDIDATES if task == "ranking" else REGRESSION_CANDIDATES
    if not isinstance(name, str) or not name:
        raise ValueError(f"a candidate needs a non-empty name; got {name!r}")
    cand = Candidate(name, fit, builtin, family, description or name)
    registry[name] = cand
    return cand


def as_fit_result(out: Any, name: str) -> FitResult:
    """A custom candidate's return value as a :class:`FitResult`."""
    if isinstance(out, FitResult):
        return out
    if callable(out):
        return FitResult(out)
    if hasattr(out, "predict"):
        return FitResult(out.predict, int(getattr(out, "n_estimators_", 0) or 0), model=out)
    raise TypeError(
        f"candidate {name!r} returned {type(out).__name__}; expected a FitResult, a predict(X) "
        "callable or a model with .predict"
    )


def timed_predict_ms(predict: Callable[[np.ndarray], np.ndarray], part: Part, n: int = 30) -> float:
    """Median wall milliseconds of ``predict`` on one query's rows, over up to ``n`` queries."""
    offsets = np.concatenate([[0], np.cumsum(part.group)])
    times = []
    for q in range(min(n, part.n_queries)):
        rows = part.X[offsets[q] : offsets[q + 1]]
        t0 = time.perf_counter()
        predict(rows)
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3) if times else float("nan")
