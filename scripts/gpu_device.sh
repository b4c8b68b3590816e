#!/usr/bin/env bash
# Run benchmarks/gpu_xgboost.py on a bare device machine (docs/benchmarks.md, "GPU").
#
# Each call carries one folder .whl/cN made by `python scripts/gpu_parts.py split` (a part of
# XGBoost's CUDA wheel; the last folder also holds array-api-compat) and stashes it outside the
# repository; the call that completes the set assembles the wheel (size and SHA-256 checked),
# installs it into /tmp/selrank_site, checks nvidia-smi and runs the benchmark, writing JSON to
# $OUT. Extra arguments go to gpu_xgboost.py. Exit 3: parts still missing (make the next call).
set -uo pipefail
cd "$(dirname "$0")/.."
PARTS=/tmp/selrank_parts
WHEELS=/tmp/selrank_wheels
SITE=/tmp/selrank_site
OUT="${OUT:-/tmp/selrank_out}"
mkdir -p "$OUT"
python3 scripts/gpu_parts.py stash .whl --to "$PARTS"
ls -la "$PARTS"
python3 scripts/gpu_parts.py assemble "$PARTS" --to "$WHEELS" || exit 3
if [ ! -d "$SITE/xgboost" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$WHEELS"/*.whl || exit 4
fi
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
nvidia-smi || [ "${SELRANK_DRY_RUN:-0}" = 1 ] || exit 5
python3 -c "import xgboost, selrank; print('xgboost', xgboost.__version__, 'cuda build', xgboost.build_info().get('USE_CUDA'))" || exit 6
python3 benchmarks/gpu_xgboost.py --out "$OUT/gpu_xgboost.json" "$@" 2>&1 | tee "$OUT/gpu_xgboost.log"
