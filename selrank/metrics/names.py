"""One grammar for metric names, shared by :func:`~selrank.metrics.evaluate`,
:func:`~selrank.metrics.evaluate_run`, the comparisons and the command line.

Names are case-insensitive and may be spelled as selrank/ranx (``ndcg@10``, ``map@100``,
``mrr``, ``precision@5``, ``hit_rate@10``, ``r-precision``), trec_eval (``ndcg_cut_10``,
``ndcg_cut.10``, ``P_5``, ``map``, ``recip_rank``, ``Rprec``, ``bpref``, ``success_10``,
``set_P``) or ir_measures (``nDCG@10``, ``P@5``, ``AP``, ``RR``, ``R@100``, ``Judged@10``,
``ERR@20``, ``Success@10``, ``Bpref``, ``Rprec``). A list may be one comma-separated string
(``"ndcg@10,map"``); trec_eval's ``P.5,10`` (two cut-offs of one measure) works too.

:func:`parse_metrics` turns names into :class:`MetricSpec` values; :data:`MEASURES` lists
the measures and :data:`SPELLINGS` the accepted spellings of each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MetricSpec", "parse_metric_name", "parse_metrics", "MEASURES", "SPELLINGS"]

# measure -> short description (the keys are selrank's canonical names)
MEASURES: dict[str, str] = {
    "ndcg": "normalised discounted cumulative gain",
    "dcg": "discounted cumulative gain",
    "map": "average precision (its mean is MAP)",
    "mrr": "reciprocal rank of the first relevant document (its mean is MRR)",
    "err": "expected reciprocal rank",
    "precision": "precision at k",
    "recall": "recall at k",
    "rprec": "R-precision: precision at R, the number of relevant documents",
    "bpref": "binary preference (Buckley & Voorhees 2004)",
    "success": "1 if a relevant document is in the top k, else 0",
    "judged": "fraction of the top k that is judged (runs and qrels only)",
}

_OPTIONAL, _REQUIRED, _NONE = "optional", "required", "none"

# lower-cased spelling -> (measure, cut-off rule, gain forced by the name)
_SPELLING: dict[str, tuple[str, str, str | None]] = {
    "ndcg": ("ndcg", _OPTIONAL, None),
    "ndcg_cut": ("ndcg", _REQUIRED, None),
    "ndcg_burges": ("ndcg", _OPTIONAL, "exponential"),  # ranx: gain 2^rel - 1
    "dcg": ("dcg", _OPTIONAL, None),
    "dcg_burges": ("dcg", _OPTIONAL, "exponential"),
    "map": ("map", _OPTIONAL, None),
    "ap": ("map", _OPTIONAL, None),
    "map_cut": ("map", _REQUIRED, None),
    "mrr": ("mrr", _OPTIONAL, None),
    "rr": ("mrr", _OPTIONAL, None),
    "recip_rank": ("mrr", _NONE, None),
    "err": ("err", _OPTIONAL, None),
    "precision": ("precision", _OPTIONAL, None),
    "p": ("precision", _OPTIONAL, None),
    "set_p": ("precision", _NONE, None),
    "recall": ("recall", _OPTIONAL, None),
    "r": ("recall", _OPTIONAL, None),
    "set_recall": ("recall", _NONE, None),
    "rprec": ("rprec", _NONE, None),
    "r-precision": ("rprec", _NONE, None),
    "r_precision": ("rprec", _NONE, None),
    "bpref": ("bpref", _NONE, None),
    "success": ("success", _OPTIONAL, None),
    "hit_rate": ("success", _OPTIONAL, None),  # ranx
    "judged": ("judged", _OPTIONAL, None),
}

# measure -> accepted spellings, as documented (``k`` stands for a cut-off)
SPELLINGS: dict[str, tuple[str, ...]] = {
    "ndcg": (
        "ndcg",
        "ndcg@k",
        "ndcg_cut_k",
        "ndcg_cut.k",
        "nDCG@k",
        "ndcg_burges@k (gain 2^rel-1)",
    ),
    "dcg": ("dcg", "dcg@k", "dcg_burges@k (gain 2^rel-1)"),
    "map": ("map", "map@k", "map_cut_k", "map_cut.k", "AP", "AP@k"),
    "mrr": ("mrr", "mrr@k", "recip_rank", "RR", "RR@k"),
    "err": ("err@k", "ERR@k", "err"),
    "precision": ("precision@k", "P@k", "P_k", "P.k", "precision", "set_P"),
    "recall": ("recall@k", "R@k", "recall_k", "recall.k", "recall", "set_recall"),
    "rprec": ("Rprec", "r-precision", "r_precision"),
    "bpref": ("bpref", "Bpref"),
    "success": ("success@k", "success_k", "success.k", "Success@k", "hit_rate@k"),
    "judged": ("judged@k", "Judged@k", "judged"),
}

_ACCEPTED = "; ".join(", ".join(v) for v in SPELLINGS.values())


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name.

    Attributes
    ----------
    name : str
        The name as given (surrounding spaces removed); tables show it.
    measure : str
        The measure, one of :data:`MEASURES` (``"ndcg"``, ``"map"``, ``"rprec"``, ...).
    k : int or None
        The cut-off; ``None`` for the whole ranking.
    gain : str or None
        A gain the name itself fixes (ranx's ``ndcg_burges``: ``"exponential"``), else None.
    """

    name: str
    measure: str
    k: int | None
    gain: str | None = None

    @property
    def key(self) -> tuple[str, int | None, str | None]:
        """What identifies the measure whatever its spelling (duplicates share it)."""
        return self.measure, self.k, self.gain


def parse_metric_name(name: Any) -> MetricSpec:
    """Parse one metric name in selrank/ranx, trec_eval or ir_measures spelling.

    Examples
    --------
    >>> parse_metric_name("ndcg_cut_10")
    MetricSpec(name='ndcg_cut_10', measure='ndcg', k=10, gain=None)
    >>> parse_metric_name("Success@5").measure, parse_metric_name("hit_rate@5").k
    ('success', 5)
    >>> parse_metric_name("Rprec")
    MetricSpec(name='Rprec', measure='rprec', k=None, gain=None)
    """
    if not isinstance(name, str):
        raise TypeError(f"metric names must be strings like 'ndcg@10'; got {name!r}")
    text = name.strip()
    if "," in text:
        listed = [p.strip() for p in text.split(",")]
        raise ValueError(
            f"metric {name!r} names several metrics: give one name here, or pass the list "
            f"{listed} (`metrics=` also splits a comma-separated string)"
        )
    if "(" in text:
        raise ValueError(
            f"metric {name!r}: parameters in parentheses (ir_measures' 'P(rel=2)@5') are not "
            "read; give the cut-off after '@' and the relevance level as an argument "
            "(`relevance_level=` / `relevance_threshold=`)"
        )
    low = text.lower()
    base, cut = low, None
    if base not in _SPELLING:
        # 'ndcg@10', 'ndcg_cut_10', 'ndcg_cut.10': a known name, a separator and a cut-off
        m = re.fullmatch(r"(.+)[@_.]([^@_.]*)", low)
        if m is not None:
            base, cut = m.group(1), m.group(2)
    if base not in _SPELLING:
        raise ValueError(f"unknown metric {name!r}; accepted names: {_ACCEPTED}")
    measure, rule, gain = _SPELLING[base]
    if cut is not None and not cut.isdigit():
        raise ValueError(f"metric {name!r}: the cut-off must be a positive integer")
    k = None if cut is None else int(cut)
    if k is None and rule == _REQUIRED:
        raise ValueError(f"metric {name!r} needs a cut-off, e.g. '{base}_10'")
    if k is not None and rule == _NONE:
        raise ValueError(f"metric {name!r}: {base} takes no cut-off")
    if k is not None and k <= 0:
        raise ValueError(f"metric {name!r}: the cut-off must be a positive integer")
    return MetricSpec(text, measure, k, gain)


def _pieces(metrics: Any) -> list[Any]:
    """Names from a string (comma-separated; ``"P.5,10"`` is ``P.5`` and ``P.10``) or a list."""
    if isinstance(metrics, str):
        metrics = [metrics]
    elif not isinstance(metrics, Sequence):
        raise TypeError(
            "`metrics` must be a name, a comma-separated string of names or a list of names; "
            f"got {type(metrics).__name__}"
        )
    out: list[Any] = []
    for item in metrics:
        if not isinstance(item, str):
            out.append(item)  # refused with a clear message by parse_metric_name
            continue
        parts = [p.strip() for p in item.split(",")]
        if len(parts) > 1 and not all(parts):
            raise ValueError(f"`metrics` {item!r} has an empty name between commas")
        prev: str | None = None
        for p in parts:
            if p.isdigit() and prev is not None:
                # trec_eval's 'P.5,10': a bare number is another cut-off of the measure before
                m = re.fullmatch(r"(.*?[@_.])\d+", prev)
                if m is None:
                    raise ValueError(
                        f"`metrics` {item!r}: {p!r} is a bare cut-off after {prev!r}, which has none"
                    )
                p = m.group(1) + p
            out.append(p)
            prev = p
    return out


def parse_metrics(metrics: Any) -> list[MetricSpec]:
    """Parse a list of metric names (or one comma-separated string) into specs.

    Refuses an empty list and two spellings of the same measure (``"P@5"`` and
    ``"precision@5"``), naming both.

    Examples
    --------
    >>> [s.name for s in parse_metrics("ndcg@10, map,P.5,10")]
    ['ndcg@10', 'map', 'P.5', 'P.10']
    >>> [(s.measure, s.k) for s in parse_metrics(["nDCG@10", "recip_rank", "bpref"])]
    [('ndcg', 10), ('mrr', None), ('bpref', None)]
    """
    specs: list[MetricSpec] = []
    seen: dict[tuple, str] = {}
    for item in _pieces(metrics):
        spec = parse_metric_name(item)
        if spec.key in seen:
            raise ValueError(
                f"`metrics` names the same measure twice: {seen[spec.key]!r} and {spec.name!r} "
                "(duplicates are refused)"
            )
        seen[spec.key] = spec.name
        specs.append(spec)
    if not specs:
        raise ValueError("`metrics` is empty: give at least one name such as 'ndcg@10'")
    return specs
