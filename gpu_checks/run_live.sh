#!/usr/bin/env bash
# Live checks on the GPU machine, one call (run_live.sh [all|tests|notebook|tests+notebook]): gpu-marked tests, `workbench tune` live, the
# agent (transcript LLM and offline) and the quickstart notebook with the live runner.
# Needs .device/wheels (stage.sh wheels app) and .device/ui (notebook wheels).
set -uo pipefail
OUT="${OUT:-$PWD/out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/wheels/*.whl .device/ui/*.whl 2>/dev/null \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" CUDA_ROOT=/usr/local/cuda CUDA_HOME=/usr/local/cuda \
  PATH="/tmp/site/bin:/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1 WORKBENCH_CACHE_DIR=/tmp/workbench-cubins
wb() { python3 -m workbench.cli "$@"; }
what="${1:-all}"
[ "$what" = notebook ] || {
  echo "== pytest -m gpu"; python3 -m pytest -m gpu -p no:cacheprovider -q --timeout 300 2>&1 | tail -25
  [ "$what" = all ] || exit 0
  echo "== workbench tune (live, tpe, budget 120)"
  wb tune sample_kernels/silu_and_mul --shape decode --strategy tpe --budget 120 --store "$OUT/tune.sqlite"
  echo "== workbench tune (live, exhaustive)"
  wb tune sample_kernels/fused_add_rmsnorm --shape odd --dtype fp16 --store "$OUT/tune.sqlite"
  echo "== workbench tune without a GPU hint path is covered on CPU"
} 2>&1 | tee "$OUT/live.log"
[ "$what" = all ] && {
  echo "== agent"; python3 gpu_checks/agent_live.py --out "$OUT"
} 2>&1 | tail -80 | tee "$OUT/agent.log"
[ "$what" = tests ] || {
  echo "== quickstart notebook, live runner"
  cd notebooks && python3 - <<'PY'
import time, nbformat, nbclient
nb = nbformat.read("01-quickstart.ipynb", 4)
t0 = time.perf_counter()
nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
print(f"executed in {time.perf_counter() - t0:.1f} s")
for cell in nb.cells:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            print(out["text"].rstrip())
        elif out.get("output_type") == "error":
            print("ERROR", out["ename"], out["evalue"])
PY
} 2>&1 | tail -40 | tee "$OUT/quickstart.log"
