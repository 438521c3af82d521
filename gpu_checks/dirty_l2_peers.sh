#!/usr/bin/env bash
# Issue 18 (2026-11-26), on the GPU machine (repository root there), one call: where
# do_bench's time goes (benchmarks/peers/dirty_l2.py: kernel durations and launch gaps by CUPTI
# under three flushes), then Nsight Compute counters of single calls that start with an L2
# full of dirty lines (application replay, no cache control, clocks left alone).
# Carried: .device (gpu_checks/stage_peers.sh). Results go to $OUT.
set -uo pipefail
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
  .device/wheels/*.whl || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda \
  PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 WORKBENCH_CACHE_DIR=/tmp/workbench-cubins \
  FLASHINFER_USE_CUDA_NORM=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv;
  nvcc --version | tail -2; date -u +%FT%TZ; } | tee "$OUT/nvidia-smi.txt"
part() { case " ${PARTS:-profile ncu tune} " in *" $1 "*) return 0;; esac; return 1; }
if part tests && [ -n "${TESTS:-}" ]; then
  python3 -m pytest -m gpu -p no:cacheprovider -q --timeout 300 $TESTS 2>&1 | tail -15 \
    | tee "$OUT/gpu-tests.log"
fi
if part profile; then
  alt=(); for f in ${ALT_FLAGS:-}; do alt+=("--alt-flags=$f"); done
  python3 benchmarks/peers/dirty_l2.py --out "$OUT/${NAME:-dirty_l2}.json" ${ROWS:+--rows $ROWS} ${EXTRA:+--extra $EXTRA} ${SKIP:+--skip-peers $SKIP} "${alt[@]}" 2>&1 \
    | grep -v Warning | tee "$OUT/${NAME:-dirty_l2}.log"
fi
if part ncu; then
  M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__inst_executed.sum
  for t in ${TARGETS:-fused_add_rmsnorm:h_odd:ours fused_add_rmsnorm:h_odd:liger fused_add_rmsnorm:h_odd:flashinfer silu_and_mul:u_mid:ours silu_and_mul:u_mid:liger}; do
    echo "== $t" | tee -a "$OUT/ncu_dirty.log"
    timeout 150 ncu --replay-mode application --cache-control none --clock-control none \
      --nvtx --nvtx-include "target/" --launch-count 1 --metrics "$M" --csv \
      python3 benchmarks/peers/dirty_l2.py --ncu-target "$t" 2>&1 | grep -E '^"|==PROF==|rror' \
      | tee -a "$OUT/ncu_dirty.log"
  done
fi
if part ncu_detail; then  # kernel replay, caches flushed: where a kernel's time goes
  for t in ${TARGETS:-silu_and_mul:u_mid:ours silu_and_mul:u_mid:liger}; do
    echo "== ${t//+/ }" | tee -a "$OUT/ncu_detail.log"
    timeout 200 ncu --cache-control all --clock-control none --nvtx --nvtx-include "target/" \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis --section InstructionStats \
      --csv --page details python3 benchmarks/peers/dirty_l2.py --ncu-target "${t//+/ }" \
      ${EXTRA:+--extra $EXTRA} 2>&1 | grep -E '^"|rror' | tee -a "$OUT/ncu_detail.log"
  done
fi
if part sass; then
  python3 gpu_checks/sass_silu_full_tile.py 2>&1 | grep -v -E "Warning|fn\(\)" | tail -5
fi
if part tune; then  # the kernel-level losses of dirty_l2.py, tuned with a larger budget
  for ks in ${TUNE_ROWS:-silu_and_mul:u_mid,h_mid fused_add_rmsnorm:u_short_rows,h_mid}; do
    k="${ks%%:*}"; shapes="${ks#*:}"
    python3 benchmarks/peers/peers.py --methods --tune "${BUDGET:-200}" --spin-up 0.15 --dtypes bf16 \
      --kernels "$k" --shapes ${shapes//,/ } --out "$OUT/peers_tune${BUDGET:-200}_$k.json" 2>&1 \
      | grep -v -E "Warning|fn\(\)" | tee "$OUT/peers_tune${BUDGET:-200}_$k.log"
  done
fi
date -u +%FT%TZ | tee -a "$OUT/nvidia-smi.txt"
