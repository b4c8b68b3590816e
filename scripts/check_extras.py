"""Install the wheel into one fresh virtual environment per extra and run what the extra promises.

    python scripts/check_extras.py dist/selrank-*.whl [--extras core,eval,torch] [--keep DIR]

For each extra: ``python -m venv`` (no system site-packages), ``pip install WHEEL[extra]``
(the torch extra with ``torch==2.13.0`` pinned in the same command, which the CI machine's pip
configuration resolves to the CPU build), then a smoke script inside that environment that
uses the extra's features and checks that the heavy packages the extra must not bring are
absent. Prints one line per extra with the installed size of ``site-packages`` (MB, pip itself
included) and exits non-zero if any extra fails. .ci/run runs it after building the wheel;
docs/install.md quotes its sizes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

COMMON = """
import importlib.util, numpy as np
def absent(*names):
    there = [n for n in names if importlib.util.find_spec(n) is not None]
    assert not there, f"installed but not asked for: {there}"
rng = np.random.default_rng(0)
group = np.full(8, 10)
y = rng.integers(0, 3, 80).astype(float)
X = np.c_[y + rng.normal(0, 1, 80), rng.normal(size=(80, 3))]
"""

SMOKE = {
    # the core: links, scalings, losses, metric arrays (NumPy + array-api-compat)
    "core": """
absent("polars", "torch", "lightgbm", "xgboost", "sklearn", "numba", "scipy")
from selrank.losses import get_loss
from selrank.metrics import ndcg
g, h = get_loss("listwise", scaling="exp").grad_hess(np.zeros(80), y, group=group)
assert g.shape == (80,) and (h > 0).all()
assert 0 < ndcg(y, X[:, 0], group, k=5) <= 1
""",
    # evaluation only: metrics, TREC runs and qrels, paired comparisons (NumPy + polars)
    "eval": """
absent("torch", "lightgbm", "xgboost", "sklearn", "numba", "scipy")
import selrank.metrics as m
frame = m.evaluate(y, X[:, 0], group, metrics=["ndcg@10", "map", "mrr@10"])
assert frame.height == 3
table = m.paired_comparison({"a": X[:, 0], "b": X[:, 1]}, y, group=group, reference="b",
                            metrics=["ndcg@10"])
print(m.format_comparison(table).splitlines()[0])
qid = np.repeat(np.arange(8), 10).astype(str)
docno = np.array([f"d{i}" for i in range(80)])
m.write_qrels(m.labels_to_qrels(y, group, qid=qid, docno=docno), "x.qrels")
m.write_run(m.scores_to_run(X[:, 0], group, qid=qid, docno=docno, tag="a"), "x.run")
print(m.evaluate_run(m.read_qrels("x.qrels"), m.read_run("x.run"), metrics=["ndcg@10"]))
""",
    # the PyTorch heads and NeuralRanker (torch + scikit-learn), no GBDT library
    "torch": """
absent("lightgbm", "xgboost")
import torch
from selrank.estimators import NeuralRanker
from selrank.torch import ListwiseLoss
head = ListwiseLoss("exp")
s = torch.zeros(2, 5, requires_grad=True)
head(s, torch.tensor([[2.0, 0, 1, 0, 0], [1.0, 0, 0, -1, -1]])).backward()
ranker = NeuralRanker("listwise", epochs=3, random_state=0).fit(X.astype("float32"), y,
                                                                 group=group)
assert ranker.predict(X.astype("float32")).shape == (80,)
""",
    # LightGBM and XGBoost without NVIDIA's NCCL (xgboost-cpu), and LightGBM alone
    "gbdt-cpu": """
absent("torch", "nvidia")
from selrank import SelectiveRanker
for backend in ("lightgbm", "xgboost"):
    model = SelectiveRanker(n_estimators=3, backend=backend).fit(X, y, group=group)
    assert model.predict(X).shape == (80,)
""",
    "lightgbm": """
absent("torch", "xgboost", "nvidia")
from selrank import SelectiveRanker
assert SelectiveRanker(n_estimators=3).fit(X, y, group=group).predict(X).shape == (80,)
""",
    # the default GBDT extra (XGBoost's wheel brings NVIDIA's NCCL on Linux)
    "gbdt": """
absent("torch")
from selrank import SelectiveRanker
for backend in ("lightgbm", "xgboost"):
    model = SelectiveRanker(n_estimators=3, backend=backend).fit(X, y, group=group)
    assert model.predict(X).shape == (80,)
""",
}
PINS = {"torch": ["torch==2.13.0"]}


def _size_mb(venv: Path) -> float:
    site = next(venv.glob("lib/python3*/site-packages"))
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 2**20


def check(wheel: Path, extra: str, root: Path) -> tuple[bool, str]:
    venv = root / f"venv-{extra}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    target = str(wheel) if extra == "core" else f"{wheel}[{extra}]"
    start = time.perf_counter()
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", *PINS.get(extra, []), target],
        capture_output=True,
        text=True,
    )
    if pip.returncode:
        return False, f"pip install failed:\n{pip.stderr[-3000:]}"
    seconds = time.perf_counter() - start
    work = root / f"work-{extra}"
    work.mkdir()
    code = COMMON + textwrap.dedent(SMOKE[extra])
    run = subprocess.run([str(py), "-c", code], cwd=work, capture_output=True, text=True)
    if run.returncode:
        return False, f"smoke script failed:\n{run.stdout[-2000:]}{run.stderr[-3000:]}"
    return True, f"installed {_size_mb(venv):8.0f} MB in {seconds:5.0f} s; smoke script passed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--extras", default="core,eval,torch")
    parser.add_argument("--keep", type=Path, help="keep the environments in this folder")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="selrank-extras-"))
    root.mkdir(parents=True, exist_ok=True)
    failed = 0
    try:
        for extra in args.extras.split(","):
            ok, message = check(args.wheel.resolve(), extra, root)
            label = "selrank" if extra == "core" else f"selrank[{extra}]"
            print(f"{label:18s} {'ok  ' if ok else 'FAIL'} {message}", flush=True)
            failed += not ok
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
