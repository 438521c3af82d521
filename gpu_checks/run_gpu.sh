#!/usr/bin/env bash
# Everything the GPU machine checks, in one call (run from the repository root there):
#   gpu_checks/run_gpu.sh [tests|sweep|all|stage1] [record_sweeps.py options...]
# (stage1: issue 16's GPU tests only: integer/fp8 compares and the space-wide gate)
# Installs the staged wheels (.device/wheels, see shared/device/README.md), runs the gpu-marked
# tests and/or the recording sweep; logs and recordings go to $OUT (or ./out).
set -uo pipefail
what="${1:-all}"; shift || true
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
if [ -d .device/wheels ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .device/wheels/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="/tmp/site:$PWD"
fi
export CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1
export WORKBENCH_CACHE_DIR="${WORKBENCH_CACHE_DIR:-/tmp/workbench-cubins}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee "$OUT/nvidia-smi.txt"
status=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  python3 -m pytest -m gpu -p no:cacheprovider -s -q tests/gpu tests/test_validation.py tests/test_templater.py 2>&1 | tee "$OUT/gpu-tests.log"
  status=${PIPESTATUS[0]}
fi
if [ "$what" = stage1 ]; then
  python3 -m pytest -m gpu -p no:cacheprovider -s -v tests/gpu/test_gpu_stage1.py 2>&1 | tee "$OUT/gpu-stage1.log"
  status=${PIPESTATUS[0]}
fi
if [ "$what" = sweep ] || [ "$what" = all ]; then
  python3 gpu_checks/record_sweeps.py --out "$OUT" "$@" 2>&1 | tee "$OUT/sweep.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
exit $status
