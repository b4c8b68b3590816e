"""Prose claims of docs/*.md and README.md about behaviour, pinned against the code.

Each test names the page and the sentence it checks (abridged). The claims were audited for
issue 23 ("Docs that say what the code does"); a test fails when the code and the sentence
part ways, so one of the two must change with the other.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _ranking_data(n_queries: int, size: int, *, top: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.normal(size=(n, 3))
    y = np.clip(np.round(X[:, 0] + rng.normal(scale=0.5, size=n) + 1), 0, top).astype(float)
    return X, y, [size] * n_queries


# ----------------------------------------------------------------------------------------------
# docs/estimators.md
# ----------------------------------------------------------------------------------------------


def test_estimators_label_scale_defaults():
    """docs/estimators.md, parameter table: "`label_scale` | ranker "auto", others 1.0"."""
    import inspect

    from selrank import SelectiveClassifier, SelectiveRanker, SelectiveRegressor

    def default(cls):
        return inspect.signature(cls).parameters["label_scale"].default

    assert default(SelectiveRanker) == "auto"
    assert default(SelectiveRegressor) == 1.0
    assert default(SelectiveClassifier) == 1.0
    row = next(
        line for line in _page("docs/estimators.md").splitlines() if "| `label_scale` |" in line
    )
    assert '`"auto"`, others 1.0' in row


def test_estimators_auto_label_scale_maps_grades_0_to_4_onto_0_to_half():
    """docs/estimators.md, "Ranker.": "with the default label_scale="auto", 0.5 / max|y|:
    graded labels 0–4 become 0–0.5", and the table's "kept in `label_scale_`"."""
    pytest.importorskip("lightgbm")
    from selrank import SelectiveRanker

    X, y, group = _ranking_data(6, 10, top=4)
    y[0] = 4.0
    model = SelectiveRanker(n_estimators=2, num_threads=1).fit(X, y, group=group)
    assert model.label_scale_ == pytest.approx(0.5 / 4)
    # LETOR grades 0-2: the 0.25 the defaults were chosen with
    model = SelectiveRanker(n_estimators=2, num_threads=1).fit(X, np.minimum(y, 2), group=group)
    assert model.label_scale_ == pytest.approx(0.25)
    assert "graded labels 0–4 become 0–0.5" in _page("docs/estimators.md")


def test_estimators_fixed_label_scale_that_saturates_is_refused_auto_is_not():
    """docs/estimators.md, validation: "with the listwise default and a fixed
    label_scale=0.25, labels ×50 give ... a constant model; fit refuses and names the
    label_scale that fixes it (the default label_scale="auto" rescales the labels first, so it
    trains the same model as on the unscaled labels)"."""
    pytest.importorskip("lightgbm")
    from selrank import SelectiveRanker

    X, y, group = _ranking_data(8, 12, top=2)
    with pytest.raises(ValueError, match="label_scale="):
        SelectiveRanker(label_scale=0.25, n_estimators=2, num_threads=1).fit(X, y * 50, group=group)
    a = SelectiveRanker(n_estimators=3, num_threads=1).fit(X, y, group=group)
    b = SelectiveRanker(n_estimators=3, num_threads=1).fit(X, y * 50, group=group)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(("size", "method"), [(199, "all"), (200, "topk")])
def test_estimators_pairwise_uses_topk_pairs_on_long_lists(size, method):
    """docs/estimators.md, "Ranker.": "loss="pairwise" given by name without a pair_method uses
    all pairs, or the top-k pairs (pair_method="topk", k = 32) when the training queries hold
    200 or more documents on average"."""
    pytest.importorskip("lightgbm")
    from selrank import SelectiveRanker

    X, y, group = _ranking_data(2, size, top=2)
    model = SelectiveRanker(loss="pairwise", n_estimators=1, num_threads=1)
    model.fit(X, y, group=group)
    assert model.loss_.pair_method == method
    if method == "topk":
        assert model.loss_.num_pair_per_sample == 32
    assert "200 or more documents on average" in _page("docs/estimators.md")


# ----------------------------------------------------------------------------------------------
# docs/metrics.md
# ----------------------------------------------------------------------------------------------


def test_metrics_scores_to_run_takes_sizes_under_group_and_ids_under_qid():
    """docs/metrics.md, "In memory": "scores_to_run and labels_to_qrels take flat arrays with
    `group` (query sizes ...; a per-row array under `group` is refused with a message pointing
    to `qid=`) or a per-row `qid` (alone it defines and names the queries; with `group` it only
    names them and must be constant within each)"."""
    from selrank.metrics import labels_to_qrels, scores_to_run

    ids = np.array([5, 5, 5, 6, 6])
    for make, score in (
        (scores_to_run, np.array([0.3, 0.1, 0.2, 0.5, 0.4])),
        (labels_to_qrels, np.array([1, 0, 2, 0, 1])),
    ):
        by_ids = make(score, qid=ids).to_dict()
        assert set(by_ids) == {"5", "6"}
        assert make(score, [3, 2], qid=ids).to_dict() == by_ids
        assert set(make(score, [3, 2]).to_dict()) == {"0", "1"}  # named by index
        with pytest.raises(ValueError, match="qid="):
            make(score, ids)  # per-row ids under group: never read as ids
        with pytest.raises(ValueError, match="constant within each query"):
            make(score, [2, 3], qid=ids)
    text = " ".join(_page("docs/metrics.md").split())
    assert "a per-row array under `group` is refused with a message pointing to `qid=`" in text


def test_metrics_evaluate_frame_names_lower_cased_and_run_names_as_given():
    """docs/metrics.md: "The frame shows the names lower-cased" (evaluate) and "On runs the
    frame keeps each name as given" (evaluate_run)."""
    pytest.importorskip("polars")
    from selrank.metrics import evaluate, evaluate_run

    y = np.array([1.0, 0, 2, 0, 1])
    s = np.array([0.3, 0.1, 0.2, 0.5, 0.4])
    assert evaluate(y, s, [3, 2], metrics=["P@2", "nDCG@3"])["metric"].to_list() == [
        "p@2",
        "ndcg@3",
    ]
    qrels = {"q1": {"a": 1, "b": 0}}
    run = {"q1": {"a": 0.2, "b": 0.9}}
    assert evaluate_run(qrels, run, metrics=["P@1", "nDCG@2"])["metric"].to_list() == [
        "P@1",
        "nDCG@2",
    ]


# ----------------------------------------------------------------------------------------------
# docs/index.md, README.md, docs/cli.md: the subcommands
# ----------------------------------------------------------------------------------------------


def _subcommands() -> set[str]:
    import argparse

    from selrank.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


@pytest.mark.parametrize("page", ["docs/index.md", "README.md"])
def test_command_line_lists_every_subcommand(page):
    """docs/index.md, Guide: "[Command line](cli.md) — `selrank train | predict | evaluate |
    sensitivity | losses | datasets | demo`"; README.md, "Command line: `selrank train | ...`"."""
    listed = re.findall(r"`selrank ((?:[a-z]+ \| )+[a-z]+)`", _page(page))
    assert listed, f"{page} lists no subcommands"
    for entry in listed:
        assert set(entry.split(" | ")) == _subcommands(), (page, entry)


# ----------------------------------------------------------------------------------------------
# docs/architecture.md
# ----------------------------------------------------------------------------------------------


def test_architecture_table_names_every_module_of_the_layer_contract():
    """docs/architecture.md: the table of the layers "(`pyproject.toml`'s
    [tool.importlinter] states this)" names every module the contract lists."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    config = tomllib.loads(_page("pyproject.toml"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    modules = {m.strip() for layer in contract["layers"] for m in layer.split("|")} - {"__main__"}
    page = _page("docs/architecture.md")
    missing = sorted(m for m in modules if f"`selrank.{m}`" not in page)
    assert not missing, f"docs/architecture.md does not name {missing}"


# ----------------------------------------------------------------------------------------------
# docs/reliability.md and docs/datasets.md: the compiled kernels
# ----------------------------------------------------------------------------------------------


def test_reliability_names_every_compiled_kernel_module():
    """docs/reliability.md, "numba: imported late": "selrank's compiled kernels (...) need the
    optional `fast` extra" lists every module compiled through selrank._numba."""
    kernels = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "selrank").rglob("*.py")
        if p.name != "_numba.py" and re.search(r"from \.+_numba import", p.read_text("utf-8"))
    )
    assert kernels
    page = _page("docs/reliability.md")
    missing = [k for k in kernels if k not in page and Path(k).name not in page]
    assert not missing, f"docs/reliability.md does not name the kernels {missing}"


def test_datasets_parser_without_numba_names_the_extra(tmp_path):
    """docs/datasets.md: "for the compiled SVMlight parser (`read_svmlight`, ...) and the
    click-log reader (`read_session_clicks`), numba ...; a missing one raises an error naming
    the extra" — and the packaged data load without numba."""
    pytest.importorskip("polars")
    svm = tmp_path / "t.txt"
    svm.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    clicks = tmp_path / "c.txt"
    clicks.write_text("SessionId\tItemId\tTime\n1\t2\t1396860670\n1\t3\t1396860690\n")
    code = f"""
import sys
sys.modules["numba"] = None  # numba not installed
from selrank.datasets import load_letor, read_session_clicks, read_svmlight
assert load_letor("mq2008", fold=1).train.X.shape[1] == 46
for read, path in ((read_svmlight, {str(svm)!r}), (read_session_clicks, {str(clicks)!r})):
    try:
        read(path)
    except Exception as exc:
        assert "pip install 'selrank[" in str(exc), exc
    else:
        raise AssertionError("read without numba")
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]


# ----------------------------------------------------------------------------------------------
# docs/bad_inputs.md: continued training
# ----------------------------------------------------------------------------------------------


def test_bad_inputs_init_model_that_holds_its_intercept_continues_as_it_scores():
    """docs/bad_inputs.md, `init_model=`: "a model that holds its intercept inside its first
    tree (every model this version trains) is continued as it is ... 10 + 10 rounds predict as
    20 rounds from scratch"."""
    pytest.importorskip("lightgbm")
    from selrank import SelectiveRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = 5.0 + X[:, 0] + rng.normal(scale=0.1, size=300)  # intercept far from 0
    kw = {"num_threads": 1, "learning_rate": 0.1}
    first = SelectiveRegressor(n_estimators=10, **kw).fit(X, y)
    assert first.objective_.intercept_in_model(first.booster_)
    more = SelectiveRegressor(n_estimators=10, **kw).fit(X, y, init_model=first)
    whole = SelectiveRegressor(n_estimators=20, **kw).fit(X, y)
    np.testing.assert_allclose(more.predict(X), whole.predict(X), rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# docs/core.md
# ----------------------------------------------------------------------------------------------


def test_core_group_is_always_sizes_ids_under_group_are_refused():
    """docs/core.md, conventions: "`group=` is always read as sizes (`[1] * n_rows` is `n_rows`
    one-row queries), and per-row ids under `group=` ... are refused with a message that points
    to `qid=`"."""
    from selrank.losses import Listwise

    y = np.array([2.0, 0.0, 1.0, 0.0, 1.0])
    loss = Listwise("exp")
    one_row = loss.loss(np.zeros(5), y, group=[1] * 5, reduction="none")
    assert one_row.shape == (5,)  # five queries of one row each
    np.testing.assert_allclose(
        one_row, loss.loss(np.zeros(5), y, qid=np.arange(5), reduction="none")
    )
    for ids in ([7, 7, 7, 9, 9], [2, 1, 1, 0, 1]):
        with pytest.raises(ValueError, match="qid="):
            loss.loss(np.zeros(5), y, group=ids)
    text = " ".join(_page("docs/core.md").split())
    assert "`group=` is always read as sizes" in text


# ----------------------------------------------------------------------------------------------
# docs/install.md: which extra brings what
# ----------------------------------------------------------------------------------------------


def _requirement_name(req: str) -> str:
    return re.split(r"[\[<>=!~ ;]", req, maxsplit=1)[0].strip().lower()


def test_install_table_says_what_each_extra_brings():
    """docs/install.md, the table "install | for | brings": every extra of pyproject.toml that a
    user installs has a row, and its "brings" column names exactly the packages the extra
    itself adds (`selrank[...]` references to other extras left aside)."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads(_page("pyproject.toml"))["project"]
    extras = project["optional-dependencies"]
    rows = {}
    for line in _page("docs/install.md").splitlines():
        m = re.match(r'\| `pip install "?selrank(?:\[([\w-]+)\])?"?` \|.*\| ([^|]*) \|$', line)
        if m:
            rows[m.group(1) or ""] = m.group(2)
    for name in set(extras) - {"notebooks", "docs", "dev"}:
        assert name in rows, f"docs/install.md has no row for selrank[{name}]"
    for name, brings in rows.items():
        reqs = project["dependencies"] if name == "" else extras[name]
        expected = {_requirement_name(r) for r in reqs if not r.startswith("selrank[")}
        listed = {p.strip().lower() for p in brings.replace("+", "").split(",") if p.strip()}
        assert listed == expected, (name, listed, expected)


# ----------------------------------------------------------------------------------------------
# docs/dwell.md
# ----------------------------------------------------------------------------------------------


def test_dwell_regressor_with_a_loss_object_needs_no_link_none():
    """docs/dwell.md, §7: "SelectiveRegressor(loss=Combined([...]), ...).fit(X, y, qid=session)
    — a loss object carries its own link, so SelectiveRegressor's default link="identity" is
    not applied to it (any other link= ... beside a loss object is refused)"."""
    pytest.importorskip("lightgbm")
    from selrank import SelectiveRegressor
    from selrank.losses import Combined, Listwise, Pointwise

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = X[:, 0] + 3.0
    session = np.repeat(np.arange(20), 3)
    loss = Combined([Pointwise("exp"), Listwise("constant", gamma=1.0)], weights=[1.0, 0.1])
    model = SelectiveRegressor(loss=loss, n_estimators=2, num_threads=1).fit(X, y, qid=session)
    assert model.loss_ is loss  # its own exp link, not the default identity
    with pytest.raises(ValueError, match="must be set on it"):
        SelectiveRegressor(loss=loss, link="sinh", n_estimators=2).fit(X, y, qid=session)
    assert "`link=None` is needed" not in _page("docs/dwell.md")


# ----------------------------------------------------------------------------------------------
# docs/metrics.md: the metric-name table
# ----------------------------------------------------------------------------------------------


def _name_table() -> list[tuple[str, list[str]]]:
    """(measure, its spellings) per row of the generated table of docs/metrics.md."""
    text = _page("docs/metrics.md")
    section = text.split("## Metric names: one grammar", 1)[1]
    section = section.split("<!-- measures:begin -->", 1)[1].split("<!-- measures:end -->", 1)[0]
    rows = []
    for line in section.strip().splitlines():
        if line.startswith("| measure") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        # measure | what it is | selrank | ranx | trec_eval | ir_measures | arrays
        names = [t for cell in cells[2:6] for t in re.findall(r"`([^`]+)`", cell)]
        rows.append((cells[0], names))
    return rows


def test_metrics_every_spelling_of_the_name_table_names_its_measure():
    """docs/metrics.md, "Metric names: one grammar": "selrank/ranx, trec_eval and ir_measures
    spellings name the same measure" — every spelling of a row of the table parses to that
    row's measure; "trec_eval's P.5,10 ... is P.5 and P.10"; "A cut-off is refused where the
    measure has none (Rprec@5, recip_rank@5, bpref@10) and required by ndcg_cut and map_cut"."""
    from selrank.metrics import MEASURES, parse_metrics

    rows = _name_table()
    assert [label for label, _ in rows] == list(MEASURES), rows
    for label, names in rows:
        for name in names:
            spelled = re.sub(r"(?<=[@_.])k$", "5", name)
            (spec,) = parse_metrics(spelled)
            assert spec.measure == label, (label, name)
    assert [(s.measure, s.k) for s in parse_metrics("P.5,10")] == [
        ("precision", 5),
        ("precision", 10),
    ]
    for bad in ("Rprec@5", "recip_rank@5", "bpref@10", "ndcg_cut", "map_cut"):
        with pytest.raises(ValueError):
            parse_metrics(bad)
