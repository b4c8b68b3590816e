"""The selection report: per-candidate table, the choice and its rule, the test comparisons."""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class CandidateResult:
    """What one candidate scored.

    Attributes
    ----------
    name, description : str
    builtin : bool
    family : str
    valid, test : dict of str to ndarray of shape (n_seeds, n_units)
        Per-query (regression: per-row) values of every metric, each fold's units pooled.
    rounds : list of int
        Trees kept after early stopping, per fold and seed.
    cpu_seconds : float
        CPU seconds of all its fits (every thread counted).
    model_bytes : float
        Mean size of its model as its library writes it.
    latency_ms : float
        Median wall milliseconds to score one test query (first fold's model).
    curves : list of list of float
        Validation early-stopping metric per round, one list per fold (first seed).
    models : list
        The fitted models, one per fold (first seed), where kept.
    """

    name: str
    description: str
    builtin: bool
    family: str
    valid: dict[str, np.ndarray]
    test: dict[str, np.ndarray]
    rounds: list[int]
    cpu_seconds: float
    model_bytes: float
    latency_ms: float
    curves: list[list[float]] = field(default_factory=list)
    models: list[Any] = field(default_factory=list, repr=False)

    def mean(self, split: str, metric: str) -> float:
        """Mean of ``metric`` over the units (and seeds) of ``split`` (``"valid"``/``"test"``)."""
        values = (self.valid if split == "valid" else self.test)[metric]
        return float(np.nanmean(values)) if np.any(~np.isnan(values)) else float("nan")


@dataclass
class Comparison:
    """A paired comparison ``candidate - baseline`` over units (and seeds).

    Attributes
    ----------
    candidate, baseline : str
    delta, low, high : float
        Mean paired difference and its 95% bootstrap CI.
    p, p_holm : float
        Paired test p-value, and Holm-adjusted over the comparisons of the report.
    n : int
        Units compared.
    verdict : str
        ``better``, ``worse`` or ``parity``.
    """

    candidate: str
    baseline: str
    delta: float
    low: float
    high: float
    p: float
    p_holm: float
    n: int
    verdict: str

    def text(self, label: str, unit: str, corrected: bool = True) -> str:
        """One line: ``a vs b: Δlabel = +0.001 [-0.004, +0.006], p = 0.7 (Holm; n units) → parity``."""
        p = _p(self.p_holm if corrected else self.p)
        holm = "paired test, Holm" if corrected else "paired test"
        return (
            f"{self.candidate} vs {self.baseline}: Δ{label} = {signed(self.delta)} "
            f"[{signed(self.low)}, {signed(self.high)}], p = {p} ({holm}; {self.n} {unit}) → {self.verdict}"
        )


def signed(x: float) -> str:
    """``+0.0012`` / ``−0.0012`` (a true minus sign), ``nan``."""
    return "nan" if math.isnan(x) else f"{x:+.4f}".replace("-", "−")


def _p(p: float) -> str:
    if math.isnan(p):
        return "nan"
    if p < 1e-4:
        return "< 1e-4"
    return f"{p:.2g}"


def _fmt(x: float, digits: int = 4) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


@dataclass
class SelectionReport:
    """Which objective to ship: every candidate's validation and test scores, the choice made on
    validation only with its rule, and the test comparisons against the best built-in.

    Print it (``str``), or write it with :meth:`to_markdown`, :meth:`to_latex`,
    :meth:`to_json`; in a notebook it shows as HTML with the per-query differences and the
    validation curves. :meth:`save_best` and :meth:`export_best` write the chosen model.

    Attributes
    ----------
    dataset, task, protocol : str
    n_folds, n_valid, n_test : int
        Folds run; validation and test units (queries, or rows for regression), pooled.
    unit : str
    metric, metric_label : str
        The choice metric (e.g. ``"ndcg@10"``, ``"NDCG@10"``).
    metrics : list of str
        Every metric the report shows; ``metric_labels`` their printed names.
    metric_labels : dict
    higher_is_better : bool
    rule : str
        The choice rule, as the report writes it.
    chosen : str
        The candidate to ship.
    best_builtin : str or None
        The best built-in on validation.
    choice_reason : str
    validation_comparison : Comparison or None
        The best candidate against the best built-in on validation (when the rule needed it).
    comparisons : list of Comparison
        On test: each non-built-in family's best (by validation) against the best built-in;
        the chosen candidate's (or the best non-built-in's) first.
    results : dict of str to CandidateResult
    notes : list of str
    settings : dict
    click_valid : dict or None
        With ``click_noise``: per candidate, the choice metric on the true validation labels
        of the models trained (and early-stopped) on simulated clicks, ``[n_seeds, n_units]``.
    wall_seconds, cpu_seconds : float
    """

    dataset: str
    task: str
    protocol: str
    n_folds: int
    n_valid: int
    n_test: int
    unit: str
    metric: str
    metric_label: str
    metrics: list[str]
    metric_labels: dict[str, str]
    higher_is_better: bool
    rule: str
    chosen: str
    best_builtin: str | None
    choice_reason: str
    validation_comparison: Comparison | None
    comparisons: list[Comparison]
    results: dict[str, CandidateResult]
    notes: list[str]
    settings: dict[str, Any]
    click_valid: dict[str, np.ndarray] | None = None
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0

    # -- the sentence ------------------------------------------------------------------------
    @property
    def headline(self) -> Comparison | None:
        """The test comparison the recommendation quotes (the first of :attr:`comparisons`)."""
        return self.comparisons[0] if self.comparisons else None

    @property
    def recommendation(self) -> str:
        """The recommendation as one sentence with its reason."""
        chosen = self.results[self.chosen]
        s = f"Ship {self.chosen} ({chosen.description}): {self.choice_reason}"
        h = self.headline
        if h is not None:
            label = self.metric_label
            if h.candidate == self.chosen:
                what = {
                    "better": "and the test confirms it",
                    "worse": "but on test it is worse",
                    "parity": "though on test the two are at parity",
                }[h.verdict]
                s += (
                    f"; {what} (Δ{label} = {signed(h.delta)} [{signed(h.low)}, {signed(h.high)}], "
                    f"p = {_p(h.p_holm)} over {h.n} test {self.unit})"
                )
            else:
                rel = {"better": "better than", "worse": "worse than", "parity": "at parity with"}
                s += (
                    f"; on test the best other objective, {h.candidate}, is {rel[h.verdict]} it "
                    f"(Δ{label} = {signed(h.delta)} [{signed(h.low)}, {signed(h.high)}], "
                    f"p = {_p(h.p_holm)} over {h.n} test {self.unit})"
                )
        return s + "."

    # -- tables --------------------------------------------------------------------------------
    def _columns(self) -> list[tuple[str, str, str]]:
        """``(header, split, metric)`` of the metric columns."""
        cols = [(f"valid {self.metric_label}", "valid", self.metric)]
        cols += [(self.metric_labels[m], "test", m) for m in self.metrics]
        return cols

    def rows(self) -> list[dict[str, Any]]:
        """One dict per candidate, in the order of the choice metric on validation."""
        sign = 1.0 if self.higher_is_better else -1.0
        order = sorted(
            self.results.values(),
            key=lambda r: -sign * np.nan_to_num(r.mean("valid", self.metric), nan=-np.inf * sign),
        )
        out = []
        for r in order:
            row: dict[str, Any] = {"candidate": r.name, "builtin": r.builtin}
            for m in self.metrics:
                row[f"valid {m}"] = r.mean("valid", m)
                row[f"test {m}"] = r.mean("test", m)
            row["rounds"] = float(np.mean(r.rounds)) if r.rounds else float("nan")
            row["cpu_seconds"] = r.cpu_seconds
            row["model_kb"] = r.model_bytes / 1024.0
            row["predict_ms"] = r.latency_ms
            if self.click_valid is not None and r.name in self.click_valid:
                c = self.click_valid[r.name]
                row["valid_clicks"] = float(np.nanmean(c))
                row["valid_clicks_change"] = row["valid_clicks"] - row[f"valid {self.metric}"]
            out.append(row)
        return out

    def _table(self) -> tuple[list[str], list[list[str]]]:
        header = [
            "candidate",
            *[c[0] for c in self._columns()],
            "rounds",
            "CPU s",
            "KB",
            "ms/q",
        ]
        clicks = self.click_valid is not None
        if clicks:
            header += [f"valid {self.metric_label} (clicks)", "change"]
        body = []
        for row in self.rows():
            name = row["candidate"] + (" *" if row["candidate"] == self.chosen else "")
            cells = [name]
            cells += [_fmt(row[f"{split} {m}"]) for _, split, m in self._columns()]
            cells += [
                f"{row['rounds']:.0f}",
                f"{row['cpu_seconds']:.1f}",
                f"{row['model_kb']:.0f}",
                _fmt(row["predict_ms"], 2),
            ]
            if clicks:
                cells += [
                    _fmt(row.get("valid_clicks", float("nan"))),
                    signed(row.get("valid_clicks_change", float("nan"))),
                ]
            body.append(cells)
        return header, body

    def _legend(self) -> list[str]:
        seeds = self.settings.get("n_seeds", 1)
        conv = (
            "; NDCG gain 2^rel - 1, ties in input order, a query without relevant documents scores 1"
            if self.task == "ranking"
            else ""
        )
        one = "query" if self.task == "ranking" else "row"
        return [
            f"(* chosen. valid {self.metric_label}: the validation score the choice reads; the other "
            f"metric columns: test. Means over the pooled {self.unit}"
            + (f" and {seeds} seeds" if seeds > 1 else "")
            + f"{conv}.)",
            "(rounds: mean trees after early stopping; CPU s: all fits of the candidate, every "
            f"thread; KB: model size; ms/q: median time to score one test {one}, one thread.)",
        ] + (
            [
                f"(clicks: valid {self.metric_label} on the true labels of the models trained "
                "and early-stopped on simulated clicks (position-based model); change: clicks "
                "minus clean; rounds and CPU s count the clean fits.)"
            ]
            if self.click_valid is not None
            else []
        )

    def __str__(self) -> str:
        header, body = self._table()
        widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
        lines = [
            f"{self.dataset}: {self.protocol}",
            f"{len(self.results)} candidates, {self.n_valid} validation / {self.n_test} test {self.unit}; "
            f"same trees ({self.settings['num_leaves']} leaves, learning rate {self.settings['learning_rate']}), "
            f"early stopping on {self.settings['early_stopping_metric']} (patience {self.settings['early_stopping_rounds']})",
            "",
        ]
        fmt = lambda cells: "  ".join(  # noqa: E731
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        lines.append(fmt(header))
        lines.append("-" * len(lines[-1]))
        lines += [fmt(r) for r in body]
        lines += self._legend()
        lines += ["", f"rule: {self.rule}."]
        if self.validation_comparison is not None:
            lines.append(
                "validation: "
                + self.validation_comparison.text(self.metric_label, self.unit, corrected=False)
            )
        if self.comparisons:
            lines.append(f"test ({self.metric_label}, Holm over {len(self.comparisons)}):")
            lines += ["  " + c.text(self.metric_label, self.unit) for c in self.comparisons]
        lines += ["", self.recommendation]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"SelectionReport(dataset={self.dataset!r}, chosen={self.chosen!r}, candidates={list(self.results)})"

    def to_markdown(self) -> str:
        """The report as Markdown: the table, the rule, the comparisons and the sentence."""
        header, body = self._table()
        out = [f"**{self.dataset}** — {self.protocol}", ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        out += ["| " + " | ".join(r) + " |" for r in body]
        out += ["", *self._legend(), "", f"Rule: {self.rule}.", ""]
        if self.validation_comparison is not None:
            out.append(
                "- validation: "
                + self.validation_comparison.text(self.metric_label, self.unit, corrected=False)
            )
        out += ["- test: " + c.text(self.metric_label, self.unit) for c in self.comparisons]
        out += ["", f"**Recommendation.** {self.recommendation}"]
        out += [f"- note: {n}" for n in self.notes]
        return "\n".join(out) + "\n"

    def to_latex(self) -> str:
        """The table as a LaTeX ``tabular`` (booktabs), the rule and sentence as a caption."""

        def esc(s: str) -> str:
            for a, b in (
                ("\\", r"\textbackslash{}"),
                ("&", r"\&"),
                ("%", r"\%"),
                ("_", r"\_"),
                ("#", r"\#"),
                ("−", "-"),
                ("Δ", r"$\Delta$"),
                ("→", r"$\to$"),
            ):
                s = s.replace(a, b)
            return s

        header, body = self._table()
        spec = "l" + "r" * (len(header) - 1)
        out = [r"\begin{table}", r"\centering", rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
        out.append(" & ".join(esc(h) for h in header) + r" \\")
        out.append(r"\midrule")
        out += [" & ".join(esc(c) for c in r) + r" \\" for r in body]
        out += [r"\bottomrule", r"\end{tabular}"]
        out.append(
            rf"\caption{{{esc(self.dataset)}: {esc(self.recommendation)} Rule: {esc(self.rule)}.}}"
        )
        out.append(r"\end{table}")
        return "\n".join(out) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """Everything but the models and per-unit arrays, as plain JSON-able values."""

        def clean(x: Any) -> Any:
            if isinstance(x, float) and math.isnan(x):
                return None
            if isinstance(x, dict):
                return {str(k): clean(v) for k, v in x.items()}
            if isinstance(x, list | tuple):
                return [clean(v) for v in x]
            if isinstance(x, np.generic):
                return clean(x.item())
            return x

        cmp = lambda c: None if c is None else dict(vars(c))  # noqa: E731
        return clean(
            {
                "dataset": self.dataset,
                "task": self.task,
                "protocol": self.protocol,
                "folds": self.n_folds,
                f"validation_{self.unit}": self.n_valid,
                f"test_{self.unit}": self.n_test,
                "metric": self.metric,
                "rule": self.rule,
                "chosen": self.chosen,
                "best_builtin": self.best_builtin,
                "recommendation": self.recommendation,
                "validation_comparison": cmp(self.validation_comparison),
                "test_comparisons": [cmp(c) for c in self.comparisons],
                "candidates": [
                    {
                        **row,
                        "description": self.results[row["candidate"]].description,
                        "rounds_per_fold": self.results[row["candidate"]].rounds,
                    }
                    for row in self.rows()
                ],  # fmt: skip
                "notes": self.notes,
                "settings": self.settings,
                "wall_seconds": round(self.wall_seconds, 2),
                "cpu_seconds": round(self.cpu_seconds, 2),
            }
        )

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The report as JSON text (:meth:`to_dict`); written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text

    # -- notebooks -----------------------------------------------------------------------------
    def figure(self) -> Any:
        """A matplotlib figure: per-query test differences of the headline comparison (sorted)
        and every candidate's mean validation curve over the folds."""
        # a Figure of its own (no pyplot): the notebook's backend and state are left alone
        from matplotlib.figure import Figure

        fig = Figure(figsize=(10, 3.4))
        ax1, ax2 = fig.subplots(1, 2)
        h = self.headline
        if h is not None:
            a = np.nanmean(self.results[h.candidate].test[self.metric], axis=0)
            b = np.nanmean(self.results[h.baseline].test[self.metric], axis=0)
            d = np.sort((a - b)[~np.isnan(a - b)])
            ax1.bar(np.arange(d.size), d, width=1.0, color=np.where(d >= 0, "tab:blue", "tab:red"))
            ax1.axhline(h.delta, color="k", lw=1, label=f"mean {h.delta:+.4f}")
            ax1.set_title(f"test: {h.candidate} − {h.baseline}", fontsize=9)
            ax1.set_xlabel(f"{self.unit} (sorted)")
            ax1.set_ylabel(f"Δ{self.metric_label}")
            ax1.legend(fontsize=8)
        for r in self.results.values():
            if not r.curves or not any(r.curves):
                continue
            n = max(len(c) for c in r.curves)
            padded = np.array([c + [c[-1]] * (n - len(c)) for c in r.curves if c])
            ax2.plot(
                np.arange(1, n + 1),
                padded.mean(axis=0),
                lw=1.8 if r.name == self.chosen else 0.9,
                label=r.name,
            )
        ax2.set_title("validation curves (mean over folds)", fontsize=9)
        ax2.set_xlabel("round")
        ax2.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        return fig

    def _repr_html_(self) -> str:
        header, body = self._table()
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body
        )
        table = (
            "<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header)
            + f"</tr></thead><tbody>{rows}</tbody></table>"
        )  # fmt: skip
        img = ""
        try:
            fig = self.figure()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=90)
            img = f'<img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}"/>'
        except ImportError:  # matplotlib is optional
            img = "<p>(pip install matplotlib for the plots)</p>"
        comps = "".join(
            f"<li>{html.escape(c.text(self.metric_label, self.unit))}</li>"
            for c in self.comparisons
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<div><p><b>{html.escape(self.dataset)}</b>: {html.escape(self.protocol)}</p>{table}"
            f"<p>Rule: {html.escape(self.rule)}.</p><ul>{comps}</ul>"
            f"<p><b>{html.escape(self.recommendation)}</b></p>{img}<ul>{notes}</ul></div>"
        )

    # -- the chosen model ----------------------------------------------------------------------
    def best_model(self, fold: int = 0) -> Any:
        """The chosen candidate's fitted model of fold ``fold`` (index into the folds run)."""
        models = self.results[self.chosen].models
        if not models:
            raise ValueError("the report kept no models (select(..., keep_models=True) keeps them)")
        return models[fold]

    def save_best(self, path: str | os.PathLike, *, fold: int = 0) -> str:
        """Write the chosen model: a selrank estimator's file (``.save``), LightGBM model text or
        an XGBoost JSON model for a built-in. Returns the path."""
        model = self.best_model(fold)
        path = os.fspath(path)
        rounds = self.results[self.chosen].rounds[fold * self.settings.get("n_seeds", 1)]
        if hasattr(model, "save") and hasattr(model, "booster_"):
            model.save(path)
        elif type(model).__module__.startswith("lightgbm"):
            model.save_model(path, num_iteration=rounds)
        elif type(model).__module__.startswith("xgboost"):
            model.save_model(path)
        else:
            raise TypeError(f"cannot save a {type(model).__name__} (a custom candidate's model)")
        return path

    def export_best(self, path: str | os.PathLike, format: str, *, fold: int = 0) -> str:
        """Export the chosen model for a runtime without selrank
        (:func:`selrank.estimators.export.export_model` for a selrank model; a built-in's model
        is already its library's own: ``"lightgbm"`` or ``"xgboost-json"``)."""
        from ..estimators.export import export_model

        model = self.best_model(fold)
        if hasattr(model, "booster_"):
            return export_model(model, path, format)
        lib = type(model).__module__.split(".")[0]
        if (lib, format) in (("lightgbm", "lightgbm"), ("xgboost", "xgboost-json")):
            return self.save_best(path, fold=fold)
        raise ValueError(
            f"the chosen built-in ({lib}) exports as {'lightgbm' if lib == 'lightgbm' else 'xgboost-json'}; got format={format!r}"
        )
