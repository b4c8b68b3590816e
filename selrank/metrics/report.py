"""A comparison table for papers: systems by metrics, with paired differences, CIs and verdicts.

:class:`ComparisonReport` wraps the frame of :func:`~selrank.metrics.paired_comparison`
(what :func:`~selrank.metrics.compare` returns for TREC runs) and writes it as plain text
(``str``), Markdown (:meth:`~ComparisonReport.to_markdown`) or LaTeX
(:meth:`~ComparisonReport.to_latex`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

__all__ = ["ComparisonReport"]

_TESTS = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
          "permutation": "paired permutation test"}  # fmt: skip
_UP, _DOWN = "\u25b2", "\u25bc"  # ▲ ▼


def _num(x: float, digits: int, signed: bool = False, minus: str = "\u2212") -> str:
    text = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    return text.replace("-", minus)


def _latex_escape(text: str) -> str:
    out = text.replace("\\", r"\textbackslash{}")
    for ch in "&%$#_{}":
        out = out.replace(ch, "\\" + ch)
    return out.replace("~", r"\textasciitilde{}").replace("^", r"\textasciicircum{}")


@dataclass(frozen=True)
class _Cell:
    mean: float | None
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str | None = None  # of "this row's system vs the anchor"


@dataclass(frozen=True, repr=False)
class ComparisonReport:
    """Systems × metrics: each system's mean, its paired difference to one anchor system
    with a bootstrap CI, and the verdict (▲ better, ▼ worse, nothing for parity).

    Build it from a :func:`~selrank.metrics.paired_comparison` frame (arrays or runs), or
    get it from :func:`~selrank.metrics.compare` with TREC runs. Every non-anchor row reads
    "this system against the anchor": the reference of ``paired_comparison(reference=...)``,
    or the candidate of ``candidate=...`` (then the differences are shown as
    system − candidate).

    Parameters
    ----------
    table : polars.DataFrame
        The frame of :func:`~selrank.metrics.paired_comparison`.
    confidence : float
        The level the frame was computed at (for the legend).

    Attributes
    ----------
    table : polars.DataFrame
        The paired rows, as given: ``diff``, ``ci_low``, ``ci_high``, ``p_value``,
        ``p_holm``, ``verdict``, ... (see :func:`~selrank.metrics.paired_comparison`).
    anchor : str
        The system every other one is compared with.
    systems, metrics : list of str

    Examples
    --------
    >>> from selrank.metrics import compare
    >>> qrels = {f"q{i}": {"a": 1, "b": 0, "c": 2} for i in range(30)}
    >>> good = {f"q{i}": {"a": 2.0, "b": 1.0, "c": 3.0} for i in range(30)}
    >>> bad = {f"q{i}": {"a": 1.0, "b": 3.0, "c": 2.0} for i in range(30)}
    >>> report = compare(qrels, runs={"bad": bad, "good": good}, metrics="ndcg@2,P@1")
    >>> print(report.to_markdown(ci=False))
    | system | ndcg@2 | P@1 |
    |---|---|---|
    | bad | 0.4796 | 0.0000 |
    | good | **1.0000**▲ | **1.0000**▲ |
    <BLANKLINE>
    Mean over 30 queries. ▲/▼: better/worse than bad: the 95% bootstrap CI of the mean per-query difference excludes 0 and the paired permutation test, Holm-adjusted over the systems compared on each metric, has p < 0.05.
    """

    table: Any
    confidence: float = 0.95

    def __post_init__(self) -> None:
        required = {"metric", "system", "reference", "mean", "reference_mean", "diff",
                    "ci_low", "ci_high", "verdict", "n_queries", "test"}  # fmt: skip
        columns = set(getattr(self.table, "columns", []))
        if not required <= columns:
            raise TypeError(
                "ComparisonReport takes the frame of paired_comparison; missing columns "
                f"{sorted(required - columns)}"
            )
        if self.table.height == 0:
            raise ValueError("the comparison table is empty")

    # -- structure -------------------------------------------------------------------------

    @property
    def anchor(self) -> str:
        refs = set(self.table["reference"].to_list())
        if len(refs) == 1:
            return refs.pop()
        return self.table["system"][0]  # candidate mode: one system against several

    @property
    def metrics(self) -> list[str]:
        return list(dict.fromkeys(self.table["metric"].to_list()))

    @property
    def systems(self) -> list[str]:
        anchor = self.anchor
        others = [
            s
            for row in self.table.iter_rows(named=True)
            for s in (row["system"], row["reference"])
            if s != anchor
        ]
        return [anchor, *dict.fromkeys(others)]

    def _cells(self) -> dict[tuple[str, str], _Cell]:
        anchor, cells = self.anchor, {}
        flip = {"better": "worse", "worse": "better", "parity": "parity", None: None}
        for r in self.table.iter_rows(named=True):
            m = r["metric"]
            if r["reference"] == anchor:  # the row's system against the anchor
                cells[(r["system"], m)] = _Cell(
                    r["mean"], r["diff"], r["ci_low"], r["ci_high"], r["verdict"]
                )
                cells[(anchor, m)] = _Cell(r["reference_mean"])
            else:  # candidate mode: anchor - other; shown as other - anchor
                neg = lambda x: None if x is None else -x  # noqa: E731
                cells[(r["reference"], m)] = _Cell(
                    r["reference_mean"], neg(r["diff"]), neg(r["ci_high"]), neg(r["ci_low"]),
                    flip[r["verdict"]],
                )  # fmt: skip
                cells[(anchor, m)] = _Cell(r["mean"])
        return cells

    def means(self) -> pl.DataFrame:
        """Each system's mean per metric: a polars frame, one row per system."""
        import polars as pl

        cells = self._cells()
        data: dict[str, list[Any]] = {"system": self.systems}
        for m in self.metrics:
            data[m] = [cells.get((s, m), _Cell(None)).mean for s in self.systems]
        return pl.DataFrame(data)

    def _legend(self, up: str, down: str, ci: bool, latex: bool = False) -> str:
        counts = dict(zip(self.table["metric"].to_list(), self.table["n_queries"].to_list()))
        if len(set(counts.values())) == 1:
            queries = f"Mean over {next(iter(counts.values()))} queries."
        else:
            queries = (
                "Mean over " + ", ".join(f"{n} queries ({m})" for m, n in counts.items()) + "."
            )
        level = f"{100 * self.confidence:g}%"
        alpha = f"{1 - self.confidence:.3g}"
        test = _TESTS.get(self.table["test"][0], self.table["test"][0])
        anchor = self.anchor
        if latex:
            anchor, level, queries = (
                _latex_escape(anchor),
                level.replace("%", r"\%"),
                _latex_escape(queries),
            )
        p_text = f"$p < {alpha}$" if latex else f"p < {alpha}"
        text = f"{queries} "
        if ci:
            text += (
                f"In parentheses: the mean per-query difference to {anchor} and its "
                f"{level} bootstrap CI. "
            )
        return text + (
            f"{up}/{down}: better/worse than {anchor}: the {level} bootstrap CI of the mean "
            f"per-query difference excludes 0 and the {test}, Holm-adjusted over the systems "
            f"compared on each metric, has {p_text}."
        )

    def _grid(self, *, digits, ci, bold_best, style) -> list[list[str]]:
        cells = self._cells()
        latex = style == "latex"
        best = {}
        for m in self.metrics:
            values = [
                c.mean for s in self.systems if (c := cells.get((s, m))) and c.mean is not None
            ]
            best[m] = max(values) if values else None
        head = ["system", *self.metrics]
        rows = [[_latex_escape(h) for h in head] if latex else head]
        for s in self.systems:
            row = [_latex_escape(s) if latex else s]
            for m in self.metrics:
                c = cells.get((s, m))
                if c is None or c.mean is None:
                    row.append("--" if latex else "—")
                    continue
                text = _num(c.mean, digits)
                if bold_best and style != "text" and c.mean == best[m]:
                    text = rf"\textbf{{{text}}}" if latex else f"**{text}**"
                marker = ""
                if c.verdict in ("better", "worse"):
                    up = c.verdict == "better"
                    if latex:
                        marker = r"^{\blacktriangle}" if up else r"^{\blacktriangledown}"
                    else:
                        marker = _UP if up else _DOWN
                if ci and c.diff is not None and c.low is not None and c.high is not None:
                    sign = "-" if latex else "\u2212"
                    delta = (
                        f"{_num(c.diff, digits, True, sign)} "
                        f"[{_num(c.low, digits, True, sign)}, {_num(c.high, digits, True, sign)}]"
                    )
                    text += f" $({delta}){marker}$" if latex else f" ({delta}){marker}"
                elif marker:
                    text += f"${marker}$" if latex else marker
                row.append(text)
            rows.append(row)
        return rows

    # -- output ----------------------------------------------------------------------------

    def to_markdown(self, *, digits: int = 4, ci: bool = True, bold_best: bool = True) -> str:
        """A Markdown table (GitHub style) and its legend.

        Parameters
        ----------
        digits : int
            Decimals of the means and differences.
        ci : bool
            Show each difference to the anchor with its CI after the mean.
        bold_best : bool
            Bold the best mean of each metric.
        """
        rows = self._grid(digits=digits, ci=ci, bold_best=bold_best, style="markdown")
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(lines) + "\n\n" + self._legend(_UP, _DOWN, ci)

    def to_latex(
        self,
        *,
        digits: int = 4,
        ci: bool = True,
        bold_best: bool = True,
        caption: str | None = None,
        label: str | None = None,
    ) -> str:
        r"""A LaTeX ``table`` (``booktabs`` rules; ``amssymb`` for ▲/▼) with the legend as caption.

        Parameters
        ----------
        digits, ci, bold_best
            As in :meth:`to_markdown`.
        caption : str, optional
            Text put before the legend in the caption.
        label : str, optional
            ``\label`` of the table.
        """
        rows = self._grid(digits=digits, ci=ci, bold_best=bold_best, style="latex")
        legend = self._legend(r"$\blacktriangle$", r"$\blacktriangledown$", ci, latex=True)
        lines = [
            r"\begin{table}[t]",
            r"\centering",
            r"\begin{tabular}{l" + "r" * (len(rows[0]) - 1) + "}",
            r"\toprule",
            " & ".join(rows[0]) + r" \\",
            r"\midrule",
            *(" & ".join(r) + r" \\" for r in rows[1:]),
            r"\bottomrule",
            r"\end{tabular}",
            r"\caption{" + (f"{caption} " if caption else "") + legend + "}",
        ]
        if label:
            lines.append(r"\label{" + label + "}")
        lines.append(r"\end{table}")
        return "\n".join(lines)

    def __str__(self) -> str:
        rows = self._grid(digits=4, ci=True, bold_best=False, style="text")
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        return "\n".join(lines) + "\n" + self._legend(_UP, _DOWN, True)

    def __repr__(self) -> str:
        return (
            f"ComparisonReport(anchor={self.anchor!r}, systems={self.systems}, "
            f"metrics={self.metrics})"
        )

    def _repr_markdown_(self) -> str:  # notebooks
        return self.to_markdown()
