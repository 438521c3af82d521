#!/usr/bin/env bash
# Issue 18 on the GPU machine, one call per part (run from the repository root there):
#   gpu_checks/shapes_run.sh conditions   # gpu tests of the conditions, the recordings'
#                                         # finalists under every cache condition, a live tune
#   gpu_checks/shapes_run.sh peers        # peers under three methods, named + unseen shapes
#   gpu_checks/shapes_run.sh sweep        # tune --sweep with --widen, dispatch --eval --live
# Needs the peers wheel set staged (gpu_checks/stage_peers.sh). Results go to $OUT.
set -uo pipefail
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "${WHEELS:-.device/wheels}"/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda \
  PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 WORKBENCH_CACHE_DIR=/tmp/workbench-cubins \
  FLASHINFER_USE_CUDA_NORM=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/nvidia-smi.txt"
case "${1:-conditions}" in
  conditions)
    python3 -m pytest -m gpu -p no:cacheprovider -q --timeout 300 tests/gpu/test_gpu_conditions.py 2>&1 | tail -5 | tee "$OUT/gpu-tests.log"
    python3 gpu_checks/confirm_conditions.py --out "$OUT/conditions.json" 2>&1 | tee "$OUT/conditions.log"
    python3 -m workbench.cli tune sample_kernels/silu_and_mul --shape decode --dtype bf16 \
      --strategy guided --budget 120 --store "$OUT/tune.sqlite" 2>&1 | tee "$OUT/tune_silu_decode.log"
    ;;
  sweep)  # dispatch table: silu_and_mul at d=11008, tokens 1..4096, tuned shape by shape
    python3 -m workbench.cli tune sample_kernels/silu_and_mul --shape decode --dtype bf16 \
      --sweep tokens=1..4096:log2 --strategy guided --budget 32 --widen 2 --widen-budget 12 \
      --confirm 0 --store "$OUT/sweep.sqlite" 2>&1 | tee "$OUT/sweep_tune.log"
    python3 -m workbench.cli dispatch sample_kernels/silu_and_mul --shape decode --dtype bf16 \
      --sweep tokens=1..4096:log2 --store "$OUT/sweep.sqlite" --out "$OUT/dispatch" --eval \
      --live 2>&1 | tee "$OUT/dispatch_eval.log"
    ;;
  peers)
    python3 benchmarks/peers/peers.py --preflight || exit 1
    python3 benchmarks/peers/peers.py --methods --spin-up 0.15 --dtypes bf16 \
      --shapes odd decode prefill large unseen --out "$OUT/peers_methods.json" 2>&1 | tee "$OUT/peers.log"
    ;;
esac
