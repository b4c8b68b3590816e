"""One record per measure: the single source of the metric-name grammar, :func:`evaluate`,
:func:`evaluate_run`, the comparisons, the command line and the table of ``docs/metrics.md``.

A :class:`Measure` holds everything selrank knows about a measure: its kernel (one value per
query of a :class:`~selrank.metrics._kernels.Ranking`), its parameters and their checks, how
it reads a cut-off, its spellings in selrank, ranx, trec_eval and ir_measures, what it needs
from the judgments, how a query without relevant documents counts, and its line of the docs.
:data:`MEASURES` is the registry; :func:`register` adds a measure (CONTRIBUTING.md, "Add a
measure": one record and one test).

Spellings are written with placeholders: ``{k}`` for a rank cut-off (``ndcg@{k}``,
``ndcg_cut_{k}``, ``ndcg_cut.{k}``), ``{name}`` for a parameter given in the place of the
cut-off (``iprec_at_recall_{recall}``), and ``Name({p})`` for ir_measures' parameters in
parentheses (``RBP(p={p})``). A spelling shown only with a placeholder needs it; one shown
with and without takes it optionally; one shown only bare takes none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _kernels as _r

__all__ = ["Measure", "Param", "MEASURES", "METRICS", "TOOLS", "register", "measures_table"]

TOOLS = ("selrank", "ranx", "trec_eval", "ir_measures")


@dataclass(frozen=True)
class Param:
    """A numeric parameter of a measure (RBP's persistence ``p``), with its check.

    Attributes
    ----------
    name : str
    default : float or None
        ``None``: the parameter must be given (``iprec_at_recall``'s recall level).
    low, high : float
        The accepted range.
    open_low, open_high : bool
        Whether ``low`` / ``high`` themselves are excluded.
    example : str
        A value the docs show in its spellings (``RBP(p=0.8)``); the default by default.
    """

    name: str
    default: float | None
    low: float
    high: float
    open_low: bool = False
    open_high: bool = False
    example: str = ""

    def __post_init__(self) -> None:
        if not self.example:
            if self.default is None:
                raise ValueError(f"parameter {self.name!r}: give a default or an example")
            object.__setattr__(self, "example", f"{self.default:g}")

    @property
    def expected(self) -> str:
        left = "(" if self.open_low else "["
        right = ")" if self.open_high else "]"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"

    def check(self, value: float, metric: str) -> float:
        """``value`` as a float, or a ``ValueError`` naming the metric and the range."""
        ok = math.isfinite(value) and (
            (value > self.low if self.open_low else value >= self.low)
            and (value < self.high if self.open_high else value <= self.high)
        )
        if not ok:
            raise ValueError(
                f"metric {metric!r}: `{self.name}` must be {self.expected}; got {value!r}"
            )
        return float(value)


@dataclass(frozen=True)
class Measure:
    """Everything selrank knows about one measure.

    Attributes
    ----------
    name : str
        selrank's canonical name, the key of :data:`MEASURES` (``"ndcg"``).
    description : str
        One line for the docs table and error messages.
    kernel : callable
        ``kernel(rk, k, *, judgments, gain, relevance_threshold, capped, max_grade, **params)``
        -> one value per query of the ranking ``rk`` (see :mod:`selrank.metrics.ranking`).
        ``judgments`` (:class:`~selrank.metrics.ranking.Judgments`) gives what the rows do
        not: the relevant judged documents ``R``, the judged non-relevant ones, the ideal
        DCG and which rows are judged; for arrays they come from the rows themselves.
    spellings : mapping of tool -> tuple of str
        How selrank, ranx, trec_eval and ir_measures write it (:data:`TOOLS`), with the
        placeholders of the module docstring. The grammar reads them.
    params : tuple of Param
        Parameters (in parentheses, ``RBP(p=0.9)``, or in the place of the cut-off).
    suffix : str
        What follows ``@``/``_``/``.``: ``"k"`` (a rank cut-off, a positive int) or the name of
        a parameter (``"recall"`` for ``iprec_at_recall_0.10``).
    separators : str
        The characters that may introduce the suffix (default ``"@_."``).
    gains : mapping of str -> str
        A spelling that fixes the gain (ranx's ``ndcg_burges``: ``"exponential"``); keys are
        the lower-cased spellings without their suffix.
    normalised : bool
        0/0 on a query without relevant documents, so ``no_relevant="one"`` applies.
    empty : {"relevant", "grade"}
        What makes a query "without relevant documents" for it: none relevant (``rel`` above
        the threshold / at least the level), or none with a positive grade (DCG, ERR).
    zero_when_empty : bool
        Its value is 0 on such a query under ``no_relevant="zero"`` (False for measures that
        do not depend on relevance, such as ``judged`` and ``num_ret``).
    labels : {"any", "nonnegative", "nonnegative_exponential"}
        What it needs of the labels of arrays (``"nonnegative_exponential"``: with the
        exponential gain only).
    needs_unjudged : bool
        It is about unjudged documents, so it needs qrels and a run (``Judged@k``);
        :func:`~selrank.metrics.evaluate` of arrays refuses it.
    average_ties : bool
        Exact in expectation over tied orderings (``ties="average"``); False: it needs one
        order of the rows and refuses ``ties="average"``.
    aggregate : {"mean", "sum", "geometric"}
        How the summary's ``mean`` column combines the queries: trec_eval sums its counts
        (``num_ret``) and takes a geometric mean for ``gm_map`` (values floored at 1e-5).
    function : str or None
        The public function of :mod:`selrank.metrics` that computes it on arrays, if any
        (these make up :data:`~selrank.metrics.METRICS`).
    checked : str
        What it is checked against (the docs table).
    hint : str
        Added to grammar errors about it (a spelling of another tool that means something
        else here, for instance).
    """

    name: str
    description: str
    kernel: Callable[..., Any]
    spellings: Mapping[str, tuple[str, ...]]
    params: tuple[Param, ...] = ()
    suffix: str = "k"
    separators: str = "@_."
    gains: Mapping[str, str] = field(default_factory=dict)
    normalised: bool = False
    empty: str = "relevant"
    zero_when_empty: bool = True
    labels: str = "any"
    needs_unjudged: bool = False
    average_ties: bool = True
    aggregate: str = "mean"
    function: str | None = None
    checked: str = ""
    hint: str = ""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_\-]*", self.name):
            raise ValueError(f"a measure's name is lower-case [a-z0-9_-]; got {self.name!r}")
        unknown = set(self.spellings) - set(TOOLS)
        if unknown:
            raise ValueError(f"measure {self.name!r}: spellings of unknown tools {unknown}")
        if self.name not in {s.lower() for s in self.all_spellings()}:
            raise ValueError(f"measure {self.name!r}: its own name must be one of its spellings")
        for choice, allowed in (
            ("empty", ("relevant", "grade")),
            ("labels", ("any", "nonnegative", "nonnegative_exponential")),
            ("aggregate", ("mean", "sum", "geometric")),
        ):
            if getattr(self, choice) not in allowed:
                raise ValueError(f"measure {self.name!r}: `{choice}` must be one of {allowed}")
        names = {p.name for p in self.params}
        if self.suffix != "k" and self.suffix not in names:
            raise ValueError(f"measure {self.name!r}: suffix {self.suffix!r} is not a parameter")

    def all_spellings(self) -> list[str]:
        """Every spelling, all tools, without repeats, with placeholders removed."""
        out: list[str] = []
        for tool in TOOLS:
            for s in self.spellings.get(tool, ()):
                bare = _strip(s)
                if bare not in out:
                    out.append(bare)
        return out

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


def _strip(spelling: str) -> str:
    """A spelling without its parameters and suffix: ``RBP(p={p})@{k}`` -> ``RBP``."""
    return re.sub(r"\(.*\)", "", re.sub(r"[@_.]\{[a-z_]+\}$", "", spelling))


def _render(spelling: str, measure: Measure) -> str:
    """A spelling as documented: ``{k}`` shown as ``k``, a parameter as its example."""
    examples = {p.name: p.example for p in measure.params}
    return re.sub(
        r"\{([a-z_]+)\}", lambda m: "k" if m.group(1) == "k" else examples[m.group(1)], spelling
    )


MEASURES: dict[str, Measure] = {}


def register(measure: Measure, *, replace: bool = False) -> Measure:
    """Add a measure to :data:`MEASURES` (the grammar, ``evaluate``, ``evaluate_run``, the
    comparisons, the CLI and the docs table all read it from there).

    Refuses a name already registered (unless ``replace``) and a spelling that another
    measure already uses, naming both.
    """
    if not isinstance(measure, Measure):
        raise TypeError(f"register takes a Measure; got {type(measure).__name__}")
    if measure.name in MEASURES and not replace:
        raise ValueError(f"a measure named {measure.name!r} is already registered")
    taken = {
        s.lower(): other.name
        for other in MEASURES.values()
        if other.name != measure.name
        for s in other.all_spellings()
    }
    for s in measure.all_spellings():
        if s.lower() in taken:
            raise ValueError(
                f"measure {measure.name!r}: the spelling {s!r} already names {taken[s.lower()]!r}"
            )
    MEASURES[measure.name] = measure
    return measure


def measures_table() -> str:
    """The Markdown table of every registered measure (``docs/metrics.md`` holds it; a test
    checks that the page and the records agree)."""

    def cell(m: Measure, tool: str) -> str:
        spellings = m.spellings.get(tool, ())
        if not spellings:
            return "—"
        return ", ".join(f"`{_render(s, m)}`" for s in spellings)

    lines = [
        "| measure | what it is | selrank | ranx | trec_eval | ir_measures | arrays |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in MEASURES.values():
        arrays = "runs only" if m.needs_unjudged else (f"`{m.function}`" if m.function else "yes")
        if not m.average_ties and not m.needs_unjudged:
            arrays += " (one order of ties)"
        cells = [cell(m, t) for t in TOOLS]
        lines.append(f"| {m.name} | {m.description} | " + " | ".join(cells) + f" | {arrays} |")
    return "\n".join(lines)


class _WithFunction(Mapping):
    """The measures that have a public array function (``selrank.metrics.METRICS``): a live
    view of :data:`MEASURES`."""

    def _items(self) -> dict[str, Measure]:
        return {n: m for n, m in MEASURES.items() if m.function is not None}

    def __getitem__(self, name: str) -> Measure:
        return self._items()[name]

    def __iter__(self):
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"METRICS({sorted(self._items())})"


METRICS: Mapping[str, Measure] = _WithFunction()


# --------------------------------------------------------------------------------------
# The measures
# --------------------------------------------------------------------------------------

_P = Param("p", 0.8, 0.0, 1.0, open_low=True, open_high=True)
_RECALL = Param("recall", None, 0.0, 1.0, example="0.10")

for _m in (
    Measure(
        "ndcg", "normalised discounted cumulative gain (linear gain on runs)", _r._k_ndcg,
        {"selrank": ("ndcg", "ndcg@{k}"), "ranx": ("ndcg", "ndcg@{k}", "ndcg_burges", "ndcg_burges@{k}"),
         "trec_eval": ("ndcg", "ndcg_cut_{k}", "ndcg_cut.{k}"), "ir_measures": ("nDCG", "nDCG@{k}")},
        gains={"ndcg_burges": "exponential"}, normalised=True, empty="grade",
        labels="nonnegative", function="ndcg", checked="pytrec_eval, ranx, LightGBM, XGBoost",
    ),
    Measure(
        "dcg", "discounted cumulative gain", _r._k_dcg,
        {"selrank": ("dcg", "dcg@{k}"), "ranx": ("dcg", "dcg@{k}", "dcg_burges", "dcg_burges@{k}")},
        gains={"dcg_burges": "exponential"}, empty="grade", labels="nonnegative_exponential",
        function="dcg", checked="plain-Python reference",
    ),
    Measure(
        "map", "average precision (its mean is MAP)", _r._k_average_precision,
        {"selrank": ("map", "map@{k}"), "ranx": ("map", "map@{k}"),
         "trec_eval": ("map", "map_cut_{k}", "map_cut.{k}"), "ir_measures": ("AP", "AP@{k}")},
        normalised=True, function="average_precision", checked="pytrec_eval, LightGBM, XGBoost",
    ),
    Measure(
        "gm_map", "average precision; the summary is trec_eval's geometric mean", _r._k_average_precision,
        {"selrank": ("gm_map",), "trec_eval": ("gm_map",)},
        normalised=True, aggregate="geometric", checked="pytrec_eval",
    ),
    Measure(
        "mrr", "reciprocal rank of the first relevant document (its mean is MRR)",
        _r._k_reciprocal_rank,
        {"selrank": ("mrr", "mrr@{k}"), "ranx": ("mrr", "mrr@{k}"), "trec_eval": ("recip_rank",),
         "ir_measures": ("RR", "RR@{k}")},
        normalised=True, function="reciprocal_rank", checked="pytrec_eval",
    ),
    Measure(
        "err", "expected reciprocal rank", _r._k_err,
        {"selrank": ("err", "err@{k}"), "ir_measures": ("ERR@{k}",)},
        empty="grade", labels="nonnegative", function="err", checked="gdeval (via ir_measures)",
    ),
    Measure(
        "precision", "precision at k", _r._k_precision,
        {"selrank": ("precision", "precision@{k}"), "ranx": ("precision@{k}",),
         "trec_eval": ("P_{k}", "P.{k}", "set_P"), "ir_measures": ("P", "P@{k}", "SetP")},
        function="precision_at_k", checked="pytrec_eval",
    ),
    Measure(
        "recall", "recall at k", _r._k_recall,
        {"selrank": ("recall", "recall@{k}"), "ranx": ("recall@{k}",),
         "trec_eval": ("recall_{k}", "recall.{k}", "set_recall"), "ir_measures": ("R", "R@{k}", "SetR")},
        normalised=True, function="recall_at_k", checked="pytrec_eval",
    ),
    Measure(
        "f1", "F1 of precision@k and recall@k, 2·hits/(k + R)", _r._k_f1,
        {"selrank": ("f1", "f1@{k}"), "ranx": ("f1", "f1@{k}"), "trec_eval": ("set_F",),
         "ir_measures": ("SetF",)},
        checked="pytrec_eval (set_F), ranx",
    ),
    Measure(
        "rprec", "R-precision: precision at R, the number of relevant documents", _r._k_rprec,
        {"selrank": ("rprec", "r_precision"), "ranx": ("r-precision",), "trec_eval": ("Rprec",),
         "ir_measures": ("Rprec",)},
        normalised=True, function="r_precision", checked="pytrec_eval",
    ),
    Measure(
        "bpref", "binary preference (Buckley & Voorhees 2004)", _r._k_bpref,
        {"selrank": ("bpref",), "trec_eval": ("bpref",), "ir_measures": ("Bpref",)},
        normalised=True, function="bpref", checked="pytrec_eval",
    ),
    Measure(
        "success", "1 if a relevant document is in the top k, else 0", _r._k_success,
        {"selrank": ("success", "success@{k}"), "ranx": ("hit_rate", "hit_rate@{k}"),
         "trec_eval": ("success_{k}", "success.{k}"), "ir_measures": ("Success@{k}",)},
        function="success_at_k", checked="pytrec_eval",
    ),
    Measure(
        "hits", "relevant documents in the top k (a count)", _r._k_hits,
        {"selrank": ("hits", "hits@{k}"), "ranx": ("hits", "hits@{k}")},
        checked="ranx",
    ),
    Measure(
        "num_rel_ret", "relevant documents retrieved (trec_eval sums it over queries)", _r._k_hits,
        {"selrank": ("num_rel_ret",), "trec_eval": ("num_rel_ret",), "ir_measures": ("NumRelRet",)},
        aggregate="sum", checked="pytrec_eval",
    ),
    Measure(
        "num_ret", "documents retrieved (trec_eval sums it over queries)", _r._k_num_ret,
        {"selrank": ("num_ret",), "trec_eval": ("num_ret",), "ir_measures": ("NumRet",)},
        zero_when_empty=False, aggregate="sum", checked="pytrec_eval",
    ),
    Measure(
        "num_rel", "relevant judged documents, retrieved or not (trec_eval sums it)", _r._k_num_rel,
        {"selrank": ("num_rel",), "trec_eval": ("num_rel",), "ir_measures": ("NumRel",)},
        aggregate="sum", checked="pytrec_eval",
    ),
    Measure(
        "iprec_at_recall", "interpolated precision at a recall level", _r._k_iprec,
        {"selrank": ("iprec_at_recall_{recall}",), "trec_eval": ("iprec_at_recall_{recall}",),
         "ir_measures": ("IPrec@{recall}",)},
        params=(_RECALL,), suffix="recall", average_ties=False, checked="pytrec_eval",
    ),
    Measure(
        "rbp", "rank-biased precision, persistence p (graded, as ranx)", _r._k_rbp,
        {"selrank": ("rbp", "rbp@{k}", "rbp(p={p})", "rbp(p={p})@{k}"),
         "ir_measures": ("RBP", "RBP(p={p})", "RBP(p={p})@{k}")},
        params=(_P,), separators="@", checked="ranx",
        hint="ranx's rbp.95 is RBP(p=0.95) here",
    ),
    Measure(
        "judged", "fraction of the top k that is judged (runs and qrels only)", _r._k_judged,
        {"selrank": ("judged", "judged@{k}"), "ir_measures": ("Judged", "Judged@{k}")},
        zero_when_empty=False, needs_unjudged=True, checked="ir_measures",
    ),
):  # fmt: skip
    register(_m)
del _m
