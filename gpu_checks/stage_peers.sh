#!/usr/bin/env bash
# Stage the wheels a peers run needs, and only those (the working tree, .device included,
# must stay under the device tool's 64 MiB): pycuda's set, the peer kernels, pydantic
# and the packages SGLang's JIT kernels import that the GPU machine lacks
# (pybase64; IPython and its dependencies: sglang.utils imports IPython.display). Moves any
# other staged wheels to .device/parked/ (restore them with: mv .device/parked/* .device/wheels/).
#   gpu_checks/stage_peers.sh            # from the project root; then:
#   device run, carry [".device"]: bash gpu_checks/run_benchmarks.sh peers
set -euo pipefail
root="$(git rev-parse --show-toplevel)"
shared="$root/../shared/device"
mkdir -p "$root/.device/wheels" "$root/.device/parked"
find "$root/.device/wheels" -name '*.whl' -exec mv {} "$root/.device/parked/" \;
cp "$shared/wheels/"*.whl "$shared/peers/"*.whl "$root/.device/wheels/"
for w in pydantic pydantic_core annotated_types typing_inspection typing_extensions; do
  cp "$shared/app/$w"-[0-9]*.whl "$root/.device/wheels/"
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 \
  -d "$root/.device/wheels" pybase64==1.5.1
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$root/.device/wheels" ipython==9.18.1
echo "staged $(ls "$root/.device/wheels" | wc -l) wheels ($(du -sh "$root/.device/wheels" | cut -f1))"
