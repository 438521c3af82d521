#!/usr/bin/env bash
# Issue 16 on the GPU machine (run from the repository root there): integer and fp8 output
# comparisons, and the space-wide correctness gate on a kernel folder made by
# `workbench init`. Logs go to $OUT (or ./out).
set -uo pipefail
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
if [ -d .device/wheels ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .device/wheels/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="/tmp/site:$PWD"
fi
export CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1
export WORKBENCH_CACHE_DIR="${WORKBENCH_CACHE_DIR:-/tmp/workbench-cubins}"
{ date -u +%Y-%m-%dT%H:%MZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; } | tee "$OUT/device.txt"
python3 -m pytest -m gpu -p no:cacheprovider -s -v tests/gpu/test_gpu_stage1.py 2>&1 | tee "$OUT/gpu-stage1.log"
exit "${PIPESTATUS[0]}"
