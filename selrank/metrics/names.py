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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .measures import MEASURES, TOOLS, Measure, _render, _strip

__all__ = ["MetricSpec", "parse_metric_name", "parse_metrics", "MEASURES", "SPELLINGS"]

_OPTIONAL, _REQUIRED, _NONE = "optional", "required", "none"
_SUFFIX = re.compile(r"[@_.]\{([a-z_]+)\}$")


def _grammar() -> dict[str, tuple[Measure, str]]:
    """Lower-cased spelling without its suffix -> (measure, suffix rule), from the records."""
    forms: dict[str, tuple[Measure, set[bool]]] = {}
    for measure in MEASURES.values():
        for tool in TOOLS:
            for spelling in measure.spellings.get(tool, ()):
                base = _strip(spelling).lower()
                _, seen = forms.setdefault(base, (measure, set()))
                seen.add(_SUFFIX.search(spelling) is not None)
    rule = {frozenset({True}): _REQUIRED, frozenset({False}): _NONE}
    return {b: (m, rule.get(frozenset(seen), _OPTIONAL)) for b, (m, seen) in forms.items()}


class _Spellings(Mapping):
    """measure -> its accepted spellings as documented (a live view of the records)."""

    def _table(self) -> dict[str, tuple[str, ...]]:
        out = {}
        for m in MEASURES.values():
            shown: list[str] = []
            for tool in TOOLS:
                for s in m.spellings.get(tool, ()):
                    text = _render(s, m)
                    if text not in shown:
                        shown.append(text)
            out[m.name] = tuple(shown)
        return out

    def __getitem__(self, measure: str) -> tuple[str, ...]:
        return self._table()[measure]

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return len(MEASURES)


# measure -> accepted spellings, as documented (``k`` stands for a cut-off)
SPELLINGS: Mapping[str, tuple[str, ...]] = _Spellings()


def _accepted() -> str:
    return "; ".join(", ".join(v) for v in SPELLINGS.values())


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
    params : tuple of (str, float)
        The measure's parameters (:attr:`Measure.params <selrank.metrics.measures.Measure>`),
        every one of them, defaults filled in: ``(("p", 0.8),)`` for ``RBP``.
    """

    name: str
    measure: str
    k: int | None
    gain: str | None = None
    params: tuple[tuple[str, float], ...] = ()

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the measure whatever its spelling (duplicates share it)."""
        return self.measure, self.k, self.gain, self.params

    def __repr__(self) -> str:
        extra = f", params={self.params!r}" if self.params else ""
        return (
            f"MetricSpec(name={self.name!r}, measure={self.measure!r}, k={self.k!r}, "
            f"gain={self.gain!r}{extra})"
        )


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
    if "," in re.sub(r"\([^()]*\)", "", text):
        listed = [p.strip() for p in text.split(",")]
        raise ValueError(
            f"metric {name!r} names several metrics: give one name here, or pass the list "
            f"{listed} (`metrics=` also splits a comma-separated string)"
        )
    low = text.lower()
    given: dict[str, str] = {}
    if "(" in text:
        m = re.fullmatch(r"([^()]*)\(([^()]*)\)([^()]*)", low)
        head = _grammar().get(m.group(1)) if m else None
        if m is None or head is None or not head[0].params:
            raise ValueError(
                f"metric {name!r}: parameters in parentheses (ir_measures' 'P(rel=2)@5') are not "
                "read; give the cut-off after '@' and the relevance level as an argument "
                "(`relevance_level=` / `relevance_threshold=`)"
            )
        low = m.group(1) + m.group(3)
        for item in filter(None, (x.strip() for x in re.split(r"[,;]", m.group(2)))):
            key, eq, value = item.partition("=")
            if not eq or not key.strip() or not value.strip():
                raise ValueError(f"metric {name!r}: parameters are written name=value")
            given[key.strip()] = value.strip()
    grammar = _grammar()
    base, sep, cut = low, None, None
    if base not in grammar:
        # 'ndcg@10', 'ndcg_cut_10', 'ndcg_cut.10': a known name, a separator and a suffix
        for known in sorted(grammar, key=len, reverse=True):
            if low.startswith(known) and len(low) > len(known) and low[len(known)] in "@_.":
                base, sep, cut = known, low[len(known)], low[len(known) + 1 :]
                break
    if base not in grammar:
        raise ValueError(f"unknown metric {name!r}; accepted names: {_accepted()}")
    measure, rule = grammar[base]
    hint = f" ({measure.hint})" if measure.hint else ""
    if sep is not None and sep not in measure.separators:
        raise ValueError(
            f"metric {name!r}: {base} takes its suffix after "
            f"{' or '.join(repr(c) for c in measure.separators)}, not {sep!r}{hint}"
        )
    what = "a cut-off" if measure.suffix == "k" else f"its `{measure.suffix}`"
    if cut is None and rule == _REQUIRED:
        example = "10" if measure.suffix == "k" else measure.param(measure.suffix).example
        raise ValueError(f"metric {name!r} needs {what}, e.g. '{base}_{example}'")
    if cut is not None and rule == _NONE:
        raise ValueError(f"metric {name!r}: {base} takes no cut-off{hint}")
    k = None
    if measure.suffix == "k":
        if cut is not None and not cut.isdigit():
            raise ValueError(f"metric {name!r}: the cut-off must be a positive integer{hint}")
        k = None if cut is None else int(cut)
        if k is not None and k <= 0:
            raise ValueError(f"metric {name!r}: the cut-off must be a positive integer")
    elif cut is not None:
        given[measure.suffix] = cut
    params: list[tuple[str, float]] = []
    known_params = {p.name for p in measure.params}
    for key in given:
        if key not in known_params:
            raise ValueError(
                f"metric {name!r}: {measure.name} has no parameter {key!r}; "
                f"its parameters: {sorted(known_params)}"
            )
    for p in measure.params:
        if p.name in given:
            try:
                value = float(given[p.name])
            except ValueError:
                raise ValueError(
                    f"metric {name!r}: `{p.name}` must be {p.expected}; got {given[p.name]!r}"
                ) from None
            params.append((p.name, p.check(value, name)))
        elif p.default is None:
            raise ValueError(f"metric {name!r} needs `{p.name}` ({p.expected})")
        else:
            params.append((p.name, float(p.default)))
    return MetricSpec(text, measure.name, k, measure.gains.get(base), tuple(params))


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
        parts = [p.strip() for p in re.split(r",(?![^()]*\))", item)]
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
