#!/usr/bin/env bash
# Issue 18 (2026-11-24), on the GPU machine (from the repository root there), one call:
#   PARTS="tests peers": the GPU tests named in $TESTS, then benchmarks/peers/peers.py with ours
#   picked by `workbench tune` (--tune $BUDGET evaluations, confirmation under every cache
#   condition) at each shape in $SHAPES of each kernel in $KERNELS, every implementation
#   timed by the harness, Triton's do_bench and in a CUDA graph.
# Carried: $D (default .device) with wheels/ (pycuda set) and peers/ (the peers' wheels). Results go to $OUT.
set -uo pipefail
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
  "${D:-.device}"/wheels/*.whl "${D:-.device}"/peers/*.whl || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda \
  PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 WORKBENCH_CACHE_DIR=/tmp/workbench-cubins \
  FLASHINFER_USE_CUDA_NORM=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv;
  nvcc --version | tail -2; date -u +%FT%TZ; git log --oneline -1 2>/dev/null; } | tee "$OUT/nvidia-smi.txt"
part() { case " ${PARTS:-tests peers} " in *" $1 "*) return 0;; esac; return 1; }
if part tests && [ -n "${TESTS:-}" ]; then
  python3 -m pytest -m gpu -p no:cacheprovider -q --timeout 300 $TESTS 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
fi
if part peers; then
  python3 benchmarks/peers/peers.py --methods --tune "${BUDGET:-64}" --spin-up 0.15 --dtypes bf16 \
    --kernels ${KERNELS:-silu_and_mul} --shapes ${SHAPES:-odd decode prefill large unseen} \
    --out "$OUT/${NAME:-peers_tune}.json" 2>&1 | tee "$OUT/${NAME:-peers_tune}.log"
fi
date -u +%FT%TZ | tee -a "$OUT/nvidia-smi.txt"
