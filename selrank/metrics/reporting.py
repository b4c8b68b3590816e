"""Evaluate one TREC run or compare several, as text ready to print: :func:`trec_report`,
the entry point of ``selrank evaluate``."""

from __future__ import annotations

from typing import Any

from .comparison import _single_run, compare
from .report import _latex_escape
from .trec import _as_run, evaluate_run

__all__ = ["trec_report"]


_FORMATS = ("text", "markdown", "latex")


def _summary_text(frame, fmt: str, digits: int) -> str:
    """One run's summary (evaluate_run's frame) as trec_eval lines, Markdown or LaTeX."""
    rows = [(r["metric"], r["mean"], r["n_queries"]) for r in frame.iter_rows(named=True)]
    value = lambda x: "--" if x is None else f"{x:.{digits}f}"  # noqa: E731
    if fmt == "text":  # trec_eval's layout: "%-22s\t%s\t%6.4f" (measure, "all", value)
        return "\n".join(f"{m:<22}\tall\t{value(v)}" for m, v, _ in rows)
    if fmt == "markdown":
        lines = ["| metric | mean | queries |", "|---|---|---|"]
        return "\n".join(lines + [f"| {m} | {value(v)} | {n} |" for m, v, n in rows])
    body = [rf"{_latex_escape(m)} & {value(v)} & {n} \\" for m, v, n in rows]
    return "\n".join(
        [r"\begin{tabular}{lrr}", r"\toprule", r"metric & mean & queries \\", r"\midrule",
         *body, r"\bottomrule", r"\end{tabular}"]
    )  # fmt: skip


def trec_report(
    qrels: Any,
    runs: Any,
    *,
    metrics: Any = "ndcg@10",
    fmt: str = "text",
    reference: str | None = None,
    per_query: bool = False,
    digits: int = 4,
    test: str = "t",
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    relevance_level: int = 1,
    queries: str = "qrels",
    ties: str | None = None,
    gain: str | None = None,
    no_relevant: str | None = None,
    max_grade: int | None = None,
) -> str:
    """Evaluate one TREC run, or compare several, as text ready to print (the CLI's entry point).

    One run: :func:`~selrank.metrics.evaluate_run`'s means as trec_eval's ``measure all
    value`` lines (its layout: the name padded to 22 characters, tabs; ``fmt="text"``), a
    Markdown or a LaTeX table; with
    ``per_query=True`` one ``measure qid value`` line per query and measure (text only).
    Several runs: :func:`~selrank.metrics.compare`'s :class:`ComparisonReport` against
    ``reference`` (the first run by default), as ``str``, ``.to_markdown()`` or
    ``.to_latex()``.

    Parameters
    ----------
    qrels : Qrels, mapping or path
    runs : run, path, or a sequence or mapping of them
        One run (or a one-element sequence) is evaluated; two or more are compared.
    metrics : str or sequence of str
        Any spelling of :mod:`selrank.metrics.names`, e.g. ``"ndcg_cut_10,map,P@5"``.
    fmt : {"text", "markdown", "latex"}
    reference : str, optional
        The run the others are compared with (a run's name: its tag, or the key).
    per_query : bool
        One run only: the value of every query.
    digits : int
        Decimals shown.
    test, confidence, n_resamples, seed
        As in :func:`~selrank.metrics.paired_comparison` (several runs).
    relevance_level, queries, ties, gain, no_relevant, max_grade
        As in :func:`~selrank.metrics.evaluate_run` (``None``: its default).

    Returns
    -------
    str

    Examples
    --------
    >>> qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
    >>> run = {"q1": {"a": 0.2, "b": 0.9}, "q2": {"c": 1.0}}
    >>> print(trec_report(qrels, run, metrics="P_1,recip_rank"))
    P_1                   \tall\t0.5000
    recip_rank            \tall\t0.7500
    """
    if fmt not in _FORMATS:
        raise ValueError(f"`fmt` must be one of {list(_FORMATS)}; got {fmt!r}")
    if isinstance(runs, str | bytes) or hasattr(runs, "__fspath__") or _single_run(runs):
        runs = [runs]
    if isinstance(runs, dict) and len(runs) == 1:
        runs = list(runs.values())
    options: dict[str, Any] = {
        "relevance_level": relevance_level, "queries": queries,
        "ties": "trec_eval" if ties is None else ties, "gain": "linear" if gain is None else gain,
        "no_relevant": "zero" if no_relevant is None else no_relevant, "max_grade": max_grade,
    }  # fmt: skip
    if len(runs) == 1:
        if reference is not None:
            raise ValueError("`reference` needs two or more runs to compare")
        run = _as_run(runs[0])
        frame = evaluate_run(qrels, run, metrics=metrics, per_query=per_query, **options)
        if not per_query:
            return _summary_text(frame, fmt, digits)
        if fmt != "text":
            raise ValueError("per_query=True writes trec_eval's text lines; use fmt='text'")
        names = frame.columns[3:]
        return "\n".join(
            f"{m:<22}\t{r['query']}\t" + ("--" if r[m] is None else f"{r[m]:.{digits}f}")
            for r in frame.iter_rows(named=True)
            for m in names
        )
    if per_query:
        raise ValueError("per_query=True evaluates one run; compare several without it")
    report = compare(
        runs, qrels, metrics=metrics, baseline=reference, test=test, confidence=confidence,
        n_resamples=n_resamples, seed=seed, relevance_level=relevance_level, queries=queries,
        ties=ties, gain=gain, no_relevant=no_relevant, max_grade=max_grade,
    )  # fmt: skip
    if fmt == "markdown":
        return report.to_markdown(digits=digits)
    if fmt == "latex":
        return report.to_latex(digits=digits)
    return str(report)
