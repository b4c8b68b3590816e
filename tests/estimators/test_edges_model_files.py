"""Issue 30: hostile and damaged model files never kill, hang or exhaust the loading process.

Real saved files (LightGBM regressor, multi-class and categorical models, XGBoost, a
NeuralRanker) are mutated — forged ones with their checksum recomputed, so that the structure
checks and not the checksum must catch them — and each is loaded in a child interpreter with a
time-out: every load either works or raises the library's ``ValueError``.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
torch = pytest.importorskip("torch")

from selrank import SelectiveClassifier, SelectiveRegressor  # noqa: E402
from selrank.estimators import NeuralRanker, load  # noqa: E402
from selrank.estimators.neural_files import _checksum as neural_checksum  # noqa: E402
from selrank.estimators.persistence import check_lightgbm_model, document_checksum  # noqa: E402

CHILD = Path(__file__).with_name("_fuzz_child.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    import pandas as pd

    out = tmp_path_factory.mktemp("saved")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = 30 + X[:, 0]
    SelectiveRegressor(n_estimators=4, num_leaves=7, min_data_in_leaf=5).fit(X, y).save(
        out / "lgb_reg.json"
    )
    SelectiveClassifier(n_estimators=2, num_leaves=4).fit(
        X, np.digitize(X[:, 1], [-0.5, 0.5])
    ).save(out / "lgb_multi.json")
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["c"] = pd.Categorical(rng.integers(0, 6, 300))
    SelectiveRegressor(
        n_estimators=3, num_leaves=6, min_data_in_leaf=5, min_data_per_group=5, cat_smooth=1
    ).fit(frame, y + 3 * (frame["c"].cat.codes == 2)).save(out / "lgb_cat.json")
    SelectiveRegressor(n_estimators=3, backend="xgboost", max_depth=3).fit(X, y).save(
        out / "xgb_reg.json"
    )
    NeuralRanker("listwise", hidden_layers=(8,), epochs=1, random_state=0).fit(
        X.astype(np.float32), (X[:, 0] > 0).astype(int), group=[30] * 10
    ).save(out / "neural.pt")
    return out


def _forge(doc: dict, model: str) -> dict:
    doc = dict(doc, model=model)
    doc["checksum"] = document_checksum(doc)
    return doc


def _mutate_lightgbm(text: str, rng: np.random.Generator) -> str:
    """One change to a number (or line) of a LightGBM model's structure."""
    lines = text.split("\n")
    keys = (
        "num_leaves",
        "num_cat",
        "split_feature",
        "threshold",
        "decision_type",
        "left_child",
        "right_child",
        "leaf_value",
        "cat_boundaries",
        "cat_threshold",
        "tree_sizes",
        "max_feature_idx",
        "num_tree_per_iteration",
        "num_class",
        "is_linear",
        "shrinkage",
    )
    at = [i for i, line in enumerate(lines) if line.split("=")[0] in keys]
    i = int(rng.choice(at))
    key, _, value = lines[i].partition("=")
    values = value.split(" ")
    kind = rng.integers(0, 5)
    if kind == 0:  # delete the line
        del lines[i]
    elif kind == 1:  # drop one value
        values.pop(int(rng.integers(len(values))))
        lines[i] = f"{key}={' '.join(values)}"
    else:
        j = int(rng.integers(len(values)))
        values[j] = str(
            rng.choice(
                [
                    "-1",
                    "0",
                    "1",
                    "2",
                    "3",
                    "-3",
                    "7",
                    "99",
                    "2147483647",
                    "-2147483648",
                    "1e308",
                    "nan",
                    "inf",
                    "x",
                    "",
                ]
            )
        )
        lines[i] = f"{key}={' '.join(values)}"
    return "\n".join(lines)


def _files(saved: Path, out: Path, n: int) -> list[tuple[str, str]]:
    """(path, what was done) of the mutated files."""
    rng = np.random.default_rng(30)
    made = []
    for name in ("lgb_reg.json", "lgb_multi.json", "lgb_cat.json"):
        doc = json.loads((saved / name).read_text())
        for k in range(n):
            model = _mutate_lightgbm(doc["model"], rng)
            path = out / f"forged-{k}-{name}"
            path.write_text(json.dumps(_forge(doc, model)))
            made.append((str(path), f"{name}: forged model #{k}"))
        # a cycle, a shared child and a tree that points at itself
        for label, sub in (
            ("cycle", ("left_child=1", "left_child=0")),
            ("self", ("right_child=", "right_child=0 ")),
        ):
            model = doc["model"].replace(*sub, 1)
            path = out / f"{label}-{name}"
            path.write_text(json.dumps(_forge(doc, model)))
            made.append((str(path), f"{name}: {label}"))
        raw = (saved / name).read_bytes()
        for k in range(max(3, n // 4)):  # damaged bytes: the checksum's job
            b = bytearray(raw)
            pos = int(rng.integers(len(b)))
            b[pos] = int(rng.integers(256))
            path = out / f"flip-{k}-{name}"
            path.write_bytes(bytes(b[: int(rng.integers(len(b) // 2, len(b) + 1))]))
            made.append((str(path), f"{name}: damaged bytes at {pos}"))
    # XGBoost: forged UBJ bytes
    doc = json.loads((saved / "xgb_reg.json").read_text())
    ubj = base64.b64decode(doc["model"])
    for k in range(n):
        b = bytearray(ubj)
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(len(b)))] = int(rng.integers(256))
        path = out / f"forged-{k}-xgb.json"
        path.write_text(json.dumps(_forge(doc, base64.b64encode(bytes(b)).decode("ascii"))))
        made.append((str(path), f"xgb: forged UBJ #{k}"))
    # NeuralRanker: huge declared layers (checksum recomputed), damaged bytes
    nd = torch.load(saved / "neural.pt", weights_only=True)
    for hidden in ([10**9], [8, 10**6], [0], [-5]):
        forged = dict(nd)
        params = json.loads(forged["params"])
        params["hidden_layers"] = hidden
        forged["params"] = json.dumps(params)
        forged["checksum"] = neural_checksum(forged)
        path = out / f"neural-{hidden[-1]}.pt"
        torch.save(forged, path)
        made.append((str(path), f"neural: hidden_layers={hidden}"))
    raw = (saved / "neural.pt").read_bytes()
    for k in range(max(3, n // 4)):
        b = bytearray(raw)
        b[int(rng.integers(len(b)))] = int(rng.integers(256))
        path = out / f"neural-flip-{k}.pt"
        path.write_bytes(bytes(b))
        made.append((str(path), f"neural: damaged byte #{k}"))
    # a gzip bomb (the cap is lowered to 1 MB in the child) and a GBDT file for NeuralRanker
    bomb = out / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"{" + b" " * (3 << 20) + b"}"))
    made.append((str(bomb), "gzip bomb"))
    gbdt_as_neural = out / "gbdt-as-neural.pt"
    gbdt_as_neural.write_bytes((saved / "lgb_reg.json").read_bytes())
    made.append((str(gbdt_as_neural), "a GBDT file given to NeuralRanker.load"))
    return made


def _load_all(paths: list[str], timeout: float) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SELRANK_TEST_MAX_FILE_BYTES": str(1 << 20)}
    try:
        done = subprocess.run(
            [sys.executable, str(CHILD)],
            input="\n".join(paths),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
        lines, code = done.stdout.splitlines(), done.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        lines, code = out.splitlines(), "timeout"
    if code != 0:
        started = [ln for ln in lines if ln.startswith("START")]
        last = int(started[-1].split()[1]) if started else 0
        raise AssertionError(f"the loading process ended with {code} at file {last}")
    return lines


@pytest.mark.slow
def test_mutated_model_files_load_or_are_refused_never_crash(saved, tmp_path):
    made = _files(saved, tmp_path, n=25)
    try:
        lines = _load_all([p for p, _ in made], timeout=240)
    except AssertionError as exc:
        i = int(str(exc).rsplit(" ", 1)[1])
        raise AssertionError(f"{exc}: {made[i][1]} ({made[i][0]})") from None
    others = [ln for ln in lines if ln.startswith("OTHER")]
    assert not others, [(made[int(ln.split()[1])][1], ln) for ln in others]
    answers = [ln for ln in lines if not ln.startswith("START")]
    assert len(answers) == len(made)
    refused = sum(ln.startswith("REFUSED") for ln in answers)
    assert refused > len(made) // 2  # most mutations are caught (the rest load and predict)


def test_structure_errors_name_the_tree(saved):
    doc = json.loads((saved / "lgb_reg.json").read_text())
    check_lightgbm_model(doc["model"], "'m.json'", doc["n_features_in"])
    with pytest.raises(ValueError, match="tree_sizes"):
        check_lightgbm_model(doc["model"].replace("tree_sizes=", "tree_sizes=1", 1), "'m.json'")
    # (without tree_sizes, which LightGBM does not need, a change of length is allowed)
    text = re.sub(r"tree_sizes=[^\n]*\n", "", doc["model"])
    check_lightgbm_model(text, "'m.json'", doc["n_features_in"])
    cyc = re.sub(r"left_child=1 ", "left_child=0 ", text, count=1)
    with pytest.raises(ValueError, match="tree 0 .*(twice|outside)"):
        check_lightgbm_model(cyc, "'m.json'")
    far = re.sub(r"split_feature=(\d+)", "split_feature=4000", text, count=1)
    with pytest.raises(ValueError, match="feature outside 0..4"):
        check_lightgbm_model(far, "'m.json'")


def test_the_loaders_name_what_a_file_holds(saved):
    with pytest.raises(
        ValueError, match="holds a saved SelectiveRegressor .*selrank.estimators.load"
    ):
        NeuralRanker.load(saved / "lgb_reg.json")
    with pytest.raises(ValueError, match="zip archive .*NeuralRanker.save.*NeuralRanker.load"):
        load(saved / "neural.pt")
