"""Run model files through their own runtimes in a child interpreter that cannot import selrank."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

# a child interpreter that must not see selrank: -I drops PYTHONPATH, the user site and the cwd;
# an editable install (a .pth path entry or an import hook) is removed from the path too
_PLAIN = r"""
import os, sys
sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or ".", "selrank", "__init__.py"))]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]


class _NoSelrank:  # a wheel install leaves selrank/_packaged_data in site-packages: block it too
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "selrank" or name.startswith("selrank."):
            raise ImportError("selrank is hidden from this process")


sys.meta_path.insert(0, _NoSelrank())
import json, numpy as np
jobs, X = json.loads(sys.stdin.read()), None
out = {}
for name, (kind, path, X) in jobs.items():
    X = np.asarray(X)
    if kind == "lightgbm":
        import lightgbm as lgb
        pred = lgb.Booster(model_file=path).predict(X, raw_score=True)
    elif kind == "xgboost":
        import xgboost as xgb
        pred = xgb.Booster(model_file=path).predict(xgb.DMatrix(X), output_margin=True)
    elif kind == "onnx":
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        pred = sess.run(["score"], {"X": X.astype(np.float32)})[0]
    elif kind == "treelite":
        import treelite
        pred = treelite.gtil.predict(treelite.Model.deserialize(path), X, pred_margin=True)
        pred = pred.reshape(X.shape[0], -1)
    else:
        raise SystemExit("unknown runtime " + kind)
    out[name] = np.asarray(pred, dtype=np.float64).tolist()
assert not any(m == "selrank" or m.startswith("selrank.") for m in sys.modules)
print(json.dumps(out))
"""


def plain_predictions(jobs: dict) -> dict:
    """``{name: (kind, path, X)}`` -> ``{name: scores}`` from a process without selrank."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", _PLAIN],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=os.path.dirname(sys.executable),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {k: np.asarray(v) for k, v in json.loads(done.stdout).items()}
