#!/usr/bin/env bash
# GPU-machine benchmark runs, one call each (see benchmarks/README.md):
#   gpu_checks/run_benchmarks.sh record KERNEL[,KERNEL]   re-record sweeps, then repeatability
#   gpu_checks/run_benchmarks.sh compare                  Kernel Tuner throughput, repeatability, peers
#   gpu_checks/run_benchmarks.sh small                    peers at odd/decode (read flush), agent CLI
#   gpu_checks/run_benchmarks.sh ab [SHAPES...]           between-process spread, new vs old timing
#   gpu_checks/run_benchmarks.sh tune "ARGS; ARGS"        live workbench tune runs
#   gpu_checks/run_benchmarks.sh repeat                   repeatability target + between-process spread
#   gpu_checks/run_benchmarks.sh levels                   duration levels vs evaluations / allocations
#   gpu_checks/run_benchmarks.sh cupti [SHAPES...]        CUPTI clock: gpu test, then the spread of
#                                                         CUPTI durations vs event pairs (ab)
#   gpu_checks/run_benchmarks.sh confirm [KERNEL,...]     the recordings' finalists measured again
#                                                         (written into them), then repeatability
#   gpu_checks/run_benchmarks.sh kt                       Kernel Tuner throughput only
#   gpu_checks/run_benchmarks.sh peers [peers.py args]    tuned vs peers only (gpu_checks/stage_peers.sh)
#   gpu_checks/run_benchmarks.sh knob KERNEL KNOB V1 V2   a new knob on the finalists (knob_ab.py)
# Needs staged wheels in .device/wheels (../shared/device/stage.sh wheels app kt [peers]).
set -uo pipefail
what="${1:?record|compare}"; shift || true
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/wheels/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda \
  PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 WORKBENCH_CACHE_DIR=/tmp/workbench-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
case "$what" in
  record)  # GPU_TESTS=1: the gpu-marked tests first, and no sweep if one fails
    kernels="${1:?kernels}"
    if [ "${GPU_TESTS:-0}" = 1 ]; then
      python3 -m pytest -m gpu -q -rA tests/gpu 2>&1 | tail -30 | tee "$OUT/gpu_tests.log"
      tail -n 1 "$OUT/gpu_tests.log" | grep -q "failed\|error" && { echo "gpu tests failed: no sweep"; exit 1; }
    fi
    python3 gpu_checks/record_sweeps.py --out "$OUT" --kernels "$kernels" --budget-s 420 2>&1 \
      | tee "$OUT/record_$kernels.log" | tail -40
    for k in ${kernels//,/ }; do
      [ -f "$OUT/$k.json" ] && cp "$OUT/$k.json" "sample_kernels/$k/recordings/h100_sxm-$(date -u +%F).json"
    done
    python3 benchmarks/timing/repeatability.py --out "$OUT/repeatability_$kernels.json" \
      --kernels ${kernels//,/ } --shapes odd decode large 2>&1 | tail -40
    ;;
  confirm)  # GPU_TESTS=1: the gpu-marked tests first, and nothing else if one fails
    if [ "${GPU_TESTS:-0}" = 1 ]; then
      python3 -m pytest -m gpu -q -rA tests/gpu 2>&1 | tail -30 | tee "$OUT/gpu_tests.log"
      tail -n 1 "$OUT/gpu_tests.log" | grep -q "failed\|error" && { echo "gpu tests failed"; exit 1; }
    fi
    kernels="${1:-silu_and_mul,fused_add_rmsnorm,merge_attn_states_lse}"
    python3 gpu_checks/record_sweeps.py --confirm --out "$OUT" --kernels "$kernels" 2>&1 \
      | tee "$OUT/confirm.log" | tail -20
    python3 benchmarks/timing/repeatability.py --out "$OUT/repeatability.json" \
      --kernels ${kernels//,/ } --shapes odd decode large 2>&1 | tee "$OUT/repeatability.log" | tail -50
    ;;
  kt)  # a fresh cubin cache: both tuners compile every config from scratch
    WORKBENCH_CACHE_DIR="$(mktemp -d)" python3 benchmarks/search/kernel_tuner_compare.py \
      --out "$OUT/kernel_tuner_compare.json" 2>&1 | grep -v "does not match" | tee "$OUT/kt.log" | tail -20
    ;;
  compare)
    # a fresh cubin cache: both tuners compile every config from scratch
    WORKBENCH_CACHE_DIR="$(mktemp -d)" python3 benchmarks/search/kernel_tuner_compare.py \
      --out "$OUT/kernel_tuner_compare.json" 2>&1 | grep -v "does not match" | tail -12
    python3 benchmarks/timing/repeatability.py --out "$OUT/repeatability.json" 2>&1 | tail -3
    python3 benchmarks/peers/peers.py --out "$OUT/peers.json" "$@" 2>&1 | tee "$OUT/peers.log" | tail -60
    ;;
  small)  # the small shapes again, flushing by reads; plus the agent CLI offline end to end
    python3 benchmarks/peers/peers.py --out "$OUT/peers_small.json" --shapes odd decode "$@" 2>&1 \
      | tee "$OUT/peers_small.log" | tail -60
    [ "${AGENT_CLI:-1}" = 1 ] && python3 -m workbench.cli agent sample_kernels/silu_and_mul \
      --iterations 2 --auto-approve --shape decode --budget 48 --store "$OUT/agent_cli.sqlite" 2>&1 \
      | tail -12 | tee "$OUT/agent_cli.log"
    ;;
  ab)  # the same top configs in 3 fresh workers per timing method
    shapes=("$@"); [ ${#shapes[@]} -eq 0 ] && shapes=(odd decode)
    python3 benchmarks/timing/repeatability.py --mode processes --out "$OUT/repeatability_processes.json" \
      --shapes "${shapes[@]}" --methods ${AB_METHODS:-tail6 read-gated-place8} ${AB_ARGS:-} 2>&1 \
      | tee "$OUT/repeatability_processes.log" | tail -12
    ;;
  cupti)  # the CUPTI kernel clock: where libcupti is, its gpu test, between-process spread
    python3 -c "from workbench.engine import cupti; print(cupti.library_candidates()); \
print(cupti.load_library()[1:])" 2>&1 | tee "$OUT/cupti_probe.log"
    python3 -m pytest -m gpu -q ${GPU_TESTS_K:+-k "$GPU_TESTS_K"} tests/gpu 2>&1 | tail -15 | tee "$OUT/gpu_tests.log"
    shapes=("$@"); [ ${#shapes[@]} -eq 0 ] && shapes=(odd decode)
    python3 benchmarks/timing/repeatability.py --mode processes --out "$OUT/repeatability_processes.json" \
      --shapes "${shapes[@]}" --methods ${AB_METHODS:-cupti} ${AB_ARGS:-} 2>&1 \
      | tee "$OUT/repeatability_processes.log" | tail -30
    ;;
  levels)  # duration levels: between evaluations or between buffer allocations?
    python3 benchmarks/timing/duration_levels.py --out "$OUT/duration_levels.json" "$@" \
      2>&1 | tee "$OUT/duration_levels.log" | tail -20
    ;;
  repeat)  # the repeatability target (recording mode), then the between-process spread
    python3 benchmarks/timing/repeatability.py --out "$OUT/repeatability.json" --shapes odd decode large \
      2>&1 | tee "$OUT/repeatability.log" | tail -50
    python3 benchmarks/timing/repeatability.py --mode processes --out "$OUT/repeatability_processes.json" \
      --shapes odd decode large --methods ${AB_METHODS:-tail6 cupti} ${AB_ARGS:-} 2>&1 \
      | tee "$OUT/repeatability_processes.log" | tail -12
    ;;
  levels-pred)  # the target config right after each of N other configs, twice
    python3 benchmarks/timing/duration_levels.py --predecessors "${LEVEL_PRED:-10}" \
      --out "$OUT/duration_levels_predecessors.json" "$@" 2>&1 | tee "$OUT/duration_levels_pred.log" | tail -50
    ;;
  levels-alt)  # two configs in turn
    python3 benchmarks/timing/duration_levels.py --alternate \
      --out "$OUT/duration_levels_alt.json" "$@" 2>&1 | tee "$OUT/duration_levels_alt.log" | tail -8
    ;;
  tune)  # workbench tune, live: each argument group separated by ';' is one run
    IFS=';' read -ra runs <<< "$*"
    for r in "${runs[@]}"; do
      # shellcheck disable=SC2086
      python3 -m workbench.cli tune $r 2>&1 | tail -30
    done 2>&1 | tee "$OUT/tune.log"
    ;;
  knob)  # KERNEL KNOB VALUES... : a new knob's values on the recording's finalists
    kernel="$1"; knob="$2"; shift 2
    python3 benchmarks/timing/knob_ab.py "$kernel" --knob "$knob" --values "$@" ${KNOB_ARGS:-} \
      --out "$OUT/knob_ab_${kernel}_${knob}.json" 2>&1 | tee "$OUT/knob_ab.log" | tail -40
    ;;
  ncu)  # event medians vs Nsight Compute durations in fresh processes
    python3 benchmarks/timing/ncu_repeatability.py --out "$OUT/ncu_repeatability.json" "$@" 2>&1 \
      | tee "$OUT/ncu_repeatability.log" | tail -20
    ;;
  peers-ncu)  # kernel durations of ours and peers under Nsight Compute
    python3 benchmarks/peers/peers_ncu.py --out "$OUT/peers_ncu.json" "$@" 2>&1 \
      | tee "$OUT/peers_ncu.log" | tail -20
    ;;
  peers)  # stage with gpu_checks/stage_peers.sh; a peer that cannot import is refused up front
    python3 benchmarks/peers/peers.py --preflight \
      || { echo "a peer cannot import: stage with gpu_checks/stage_peers.sh"; exit 1; }
    python3 benchmarks/peers/peers.py --out "$OUT/peers.json" "$@" 2>&1 | tee "$OUT/peers.log" | tail -80
    ;;
esac
