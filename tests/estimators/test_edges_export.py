"""Issue 30: exports scored in their runtimes on real LETOR features (many repeated values,
thresholds close to them), with NaN, infinities, float32 extremes and one row; and file names
that say which format they hold."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxmltools")
treelite = pytest.importorskip("treelite")

from selrank import SelectiveRanker, SelectiveRegressor  # noqa: E402
from selrank.datasets import load_letor  # noqa: E402
from selrank.estimators.export import export_model, float32_down  # noqa: E402


@pytest.fixture(scope="module")
def letor():
    """MQ2008 fold 1 (packaged): 46 features in [0, 1], most with few distinct values."""
    data = load_letor("mq2008", fold=1)
    X = np.asarray(data.train.X, dtype=np.float32)
    rng = np.random.default_rng(0)
    Xn = X.copy()
    Xn[rng.random(X.shape) < 0.05] = np.nan  # so that the trees learn where missing values go
    Xn[:, 3] = X[:, 3]  # one column never missing in training (LightGBM: NaN read as 0 there)
    models = {
        "lightgbm": SelectiveRanker(
            n_estimators=30, num_threads=1, random_state=0, verbose=False
        ).fit(X, data.train.y, group=data.train.group),
        "lightgbm-nan": SelectiveRanker(
            n_estimators=20, num_threads=1, random_state=0, verbose=False
        ).fit(Xn, data.train.y, group=data.train.group),
        "xgboost": SelectiveRanker(
            n_estimators=20, backend="xgboost", nthread=1, random_state=0
        ).fit(Xn, data.train.y, group=data.train.group),
    }
    return np.asarray(data.test.X, dtype=np.float32), models


def test_float32_down_keeps_every_float32_on_its_branch():
    rng = np.random.default_rng(1)
    t = np.concatenate(
        [rng.random(2000), rng.normal(size=2000) * 1e3, [0.1, 1e-35, -1e-35, 0.0, 1e300, -1e300]]
    )
    down = float32_down(t)
    assert np.all(down <= t)
    assert np.all(down.astype(np.float32).astype(np.float64) == down)  # exact in float32
    # x = the float32 next to each threshold on both sides and the threshold's own rounding
    with np.errstate(over="ignore"):
        t32 = t.astype(np.float32)
    for x in (t32, np.nextafter(t32, np.float32(np.inf)), np.nextafter(t32, np.float32(-np.inf))):
        np.testing.assert_array_equal(x.astype(np.float64) <= t, x <= down.astype(np.float32))
    # rounding to nearest (what the converter did) gets some of them wrong
    assert np.any((t32.astype(np.float64) <= t) != (t32 <= t32))


def test_lightgbm_onnx_matches_predict_on_letor_features(letor, tmp_path):
    """Was 3.7e-3 absolute on MQ2008: thresholds were rounded to the nearest float32."""
    Xt, models = letor
    model = models["lightgbm"]
    path = export_model(model, tmp_path / "m.onnx", "onnx")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(["score"], {"X": Xt})[0]
    want = model.decision_function(Xt)
    # same branches everywhere: only the float32 leaf sums differ
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _score(fmt: str, path, X: np.ndarray) -> np.ndarray:
    if fmt == "lightgbm":
        return lgb.Booster(model_file=str(path)).predict(X)
    if fmt.startswith("xgboost"):
        return xgb.Booster(model_file=str(path)).inplace_predict(X, predict_type="margin")
    if fmt == "onnx":
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return sess.run(["score"], {"X": X.astype(np.float32)})[0]
    tl = treelite.Model.deserialize(str(path))
    return treelite.gtil.predict(tl, X, pred_margin=True).reshape(-1)


def _probes(Xt: np.ndarray) -> dict[str, np.ndarray]:
    X = Xt[:120]
    out = {"plain": X, "one row": X[:1]}
    for value in (np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40, -0.0):
        a = X.copy()
        a[::2, ::2] = value
        out[repr(value)] = a
    a = X.copy()
    a[:, 3] = np.nan  # a column that never had a missing value in training
    out["nan in a column never missing"] = a
    return out


ROUTES = {
    "lightgbm": ("lightgbm", "onnx", "treelite"),
    "lightgbm-nan": ("lightgbm", "onnx", "treelite"),
    "xgboost": ("xgboost-json", "xgboost-ubj", "onnx", "treelite"),
}


@pytest.mark.parametrize("name", list(ROUTES))
def test_every_route_scores_nan_extremes_and_one_row_like_the_model(letor, tmp_path, name):
    Xt, models = letor
    model = models[name]
    for fmt in ROUTES[name]:
        path = export_model(model, tmp_path / f"m-{fmt}.{_suffix(fmt)}", fmt)
        for probe, X in _probes(Xt).items():
            for dtype in (np.float32, np.float64):
                Q = X.astype(dtype)
                want = model.decision_function(Q)
                got = np.asarray(_score(fmt, path, Q), dtype=np.float64).reshape(want.shape)
                # the libraries' own files exactly; treelite keeps LightGBM's doubles but
                # XGBoost's float32 leaves (summed in float32); ONNX is float32 throughout
                exact = fmt != "onnx" and not (fmt == "treelite" and name == "xgboost")
                np.testing.assert_allclose(
                    got,
                    want,
                    rtol=1e-9 if exact else 1e-5,
                    atol=1e-9 if exact else 1e-6,
                    err_msg=f"{name} {fmt} {probe} {dtype.__name__}",
                )


def _suffix(fmt: str) -> str:
    return {"lightgbm": "txt", "xgboost-json": "json", "xgboost-ubj": "ubj"}.get(fmt, fmt)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = 30 + X[:, 0]
    return X, {
        "lightgbm": SelectiveRegressor(n_estimators=3, num_threads=1).fit(X, y),
        "xgboost": SelectiveRegressor(n_estimators=3, backend="xgboost", nthread=1).fit(X, y),
    }


@pytest.mark.parametrize(
    ("backend", "name", "fmt"),
    [
        ("xgboost", "model.json", "xgboost-ubj"),
        ("xgboost", "model.json.gz", "xgboost-ubj"),
        ("xgboost", "model.ubj", "xgboost-json"),
        ("xgboost", "model.onnx", "xgboost-json"),
        ("lightgbm", "model.json", "lightgbm"),
        ("lightgbm", "model.ubj", "lightgbm"),
        ("lightgbm", "model.txt", "onnx"),
        ("lightgbm", "model.onnx", "treelite"),
        ("lightgbm", "model.pkl", "lightgbm"),
    ],
)
def test_a_suffix_naming_another_format_is_refused_before_writing(
    small, tmp_path, backend, name, fmt
):
    _, models = small
    with pytest.raises(ValueError, match="names another format"):
        export_model(models[backend], tmp_path / name, fmt)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("backend", "fmt", "name"),
    [
        ("lightgbm", "lightgbm", "model.txt.gz"),
        ("lightgbm", "lightgbm-json", "model.json.gz"),
        ("lightgbm", "onnx", "model.onnx.gz"),
        ("lightgbm", "treelite", "model.tl.gz"),
        ("xgboost", "xgboost-json", "model.json.gz"),
        ("xgboost", "xgboost-ubj", "model.ubj.gz"),
    ],
)
def test_a_gz_name_is_written_gzip_like_every_file_of_the_package(
    small, tmp_path, backend, fmt, name
):
    X, models = small
    model = models[backend]
    path = export_model(model, tmp_path / name, fmt)
    raw = gzip.decompress(open(path, "rb").read())  # gzip, as the package's rule says
    plain = tmp_path / name[: -len(".gz")]
    plain.write_bytes(raw)
    if fmt == "lightgbm-json":  # no loader: a dump to walk
        assert "tree_info" in json.loads(raw)
        return
    got = _score(fmt, plain, X)
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64).reshape(-1), model.decision_function(X), rtol=1e-5
    )
    # and the same name without .gz is the uncompressed file
    again = export_model(model, tmp_path / ("again-" + plain.name), fmt)
    assert open(again, "rb").read(2) != b"\x1f\x8b"


def test_the_served_regression_file_holds_its_intercept(small, tmp_path):
    X, models = small
    for backend, fmt, name in (
        ("lightgbm", "lightgbm", "m.txt"),
        ("xgboost", "xgboost-ubj", "m.ubj"),
    ):
        served = _score(fmt, export_model(models[backend], tmp_path / name, fmt), X)
        assert abs(float(np.mean(served)) - 30) < 1
