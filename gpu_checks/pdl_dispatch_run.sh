#!/usr/bin/env bash
# Issue 18, second round on the GPU machine (run from the repository root there), in one call:
#   1. the GPU tier of programmatic dependent launch (tests/gpu/test_gpu_pdl.py);
#   2. dispatch --cross 4 on the 2026-11-24 sweep store, then --eval (leave-one-out);
#   3. silu_and_mul against its peers under three methods, named and unseen shapes, the
#      harness selecting and its 3 fastest with their PDL twins picked over the methods;
#   4. ncu metrics of ours and the peers at silu decode, warm (what a graph sees), and
#      (PARTS=ncu_large) at silu large, flushed.
# Carried folder $S (default .s18, git-ignored locally): wheels/ (pycuda set, tree-sitter), peers/ (the
# peers' wheels), sweep.sqlite (the 2026-11-24 sweep store) and silu_old/ (the silu folder
# the sweep was tuned with, so the store's provenance matches). Results go to $OUT.
set -uo pipefail
S="${S:-.s18}"
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$S"/wheels/*.whl "$S"/peers/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda \
  PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 WORKBENCH_CACHE_DIR=/tmp/workbench-cubins \
  FLASHINFER_USE_CUDA_NORM=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv;
  nvcc --version | tail -2; date -u +%FT%TZ; } | tee "$OUT/nvidia-smi.txt"
part() { case " ${PARTS:-tests dispatch peers ncu} " in *" $1 "*) return 0;; esac; return 1; }
if part tests; then
  python3 -m pytest -m gpu -p no:cacheprovider -q --timeout 300 tests/gpu/test_gpu_pdl.py 2>&1 | tail -5 | tee "$OUT/gpu-tests.log"
fi
if part dispatch; then
  cp "$S/sweep.sqlite" /tmp/sweep.sqlite
  python3 -m workbench.cli dispatch "$S/silu_old" --shape decode --dtype bf16 \
    --sweep tokens=1..4096:log2 --store /tmp/sweep.sqlite --cross 4 --out "$OUT/dispatch" \
    --eval 2>&1 | tee "$OUT/dispatch_cross_eval.log"
  cp /tmp/sweep.sqlite "$OUT/sweep_cross.sqlite"
fi
if part peers; then
  python3 benchmarks/peers/peers.py --methods --pick-methods --twins PDL=1 --twin-top 3 \
    --finalists 4 --spin-up 0.15 --dtypes bf16 --kernels silu_and_mul \
    --shapes odd decode prefill large unseen --out "$OUT/peers_silu_pdl.json" 2>&1 \
    | tee "$OUT/peers_silu_pdl.log"
fi
if part peers_default; then  # the laggards again, the template default's twin in the round too
  python3 benchmarks/peers/peers.py --methods --pick-methods --twins PDL=1 --twin-top 3 \
    --twin-default --finalists 4 --spin-up 0.15 --dtypes bf16 --kernels silu_and_mul \
    --shapes ${SHAPES:-odd u_odd u_mid} --out "$OUT/peers_silu_pdl_default.json" 2>&1 \
    | tee "$OUT/peers_silu_pdl_default.log"
fi
if part ncu; then
  M="dram__throughput.avg.pct_of_peak_sustained_elapsed sm__warps_active.avg.pct_of_peak_sustained_active l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum smsp__inst_executed.sum lts__t_sector_hit_rate.pct launch__grid_size launch__block_size launch__registers_per_thread"
  python3 benchmarks/peers/peers_ncu.py --kernel silu_and_mul --shapes decode --dtypes bf16 \
    --impls "workbench best" "sglang design (our baseline)" flashinfer liger --launches 10 \
    --cache none --metrics $M --peers-json "$OUT/peers_silu_pdl.json" \
    --out "$OUT/ncu_silu_warm.json" 2>&1 | tee "$OUT/ncu_silu_warm.log"
fi
if part ncu_large; then  # the DRAM-bound case, caches flushed like the harness
  M="dram__throughput.avg.pct_of_peak_sustained_elapsed dram__bytes_read.sum dram__bytes_write.sum sm__warps_active.avg.pct_of_peak_sustained_active l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum smsp__inst_executed.sum launch__grid_size launch__block_size"
  python3 benchmarks/peers/peers_ncu.py --kernel silu_and_mul --shapes large --dtypes bf16 \
    --impls "workbench best" liger --launches 10 --cache all --metrics $M \
    --peers-json "$OUT/peers_silu_pdl.json" --out "$OUT/ncu_silu_large.json" 2>&1 \
    | tee "$OUT/ncu_silu_large.log"
fi
