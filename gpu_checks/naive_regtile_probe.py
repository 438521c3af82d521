"""The register tile of a product written without shared memory (workbench/templater/
regtile_naive.py, issue 28) on the GPU: a naive ``C = alpha * A.B + beta * C`` (one output per
thread of a 16 x 16 block, each looping over K) as a kernel folder written here, its
offline lift timed at its default (the kernel as written), at register tiles of 2 x 2 to
8 x 8 over a few block shapes, next to the kernel as written, by the runner the stage-1
benchmark's tunes use (LocalRunner.measure; every config is also checked against the
baseline's output by the runner).

Settles whether thread coarsening with fused k loops pays on the H100 before anyone counts
on it (host checks show only that every config computes the same bits).

    python3 gpu_checks/naive_regtile_probe.py      # writes $OUT/naive_regtile_probe.json
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from probe_common import dry, dry_run, finish, lifted, timed

from workbench.core.kernel_folder import load_kernel_folder

SOURCE = r"""
extern "C" __global__ void gemm_naive(int M, int N, int K, float alpha,
                                      const float* __restrict__ A,
                                      const float* __restrict__ B, float beta,
                                      float* __restrict__ C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k)
    sum += A[row * K + k] * B[k * N + col];
  C[row * N + col] = alpha * sum + beta * C[row * N + col];
}
"""

TOML = """name = "gemm_naive"
description = "C = alpha * A.B + beta * C, fp32 row-major, one output per thread, no shared memory"
dtypes = ["fp32"]
check_shape = "small"

[shapes]
small = { M = 97, N = 76, K = 52 }
large = { M = 2048, N = 2048, K = 2048 }

[tolerances]
fp32 = { rtol = 1e-4, atol = 1e-4 }
""" + "".join(f"""
[[args]]
name = "{n}"
dtype = "i32"
role = "scalar"
value = "{n}"
""" for n in "MNK") + """
[[args]]
name = "alpha"
dtype = "f32"
role = "scalar"
value = "1.5"

[[args]]
name = "A"
dtype = "f32"
role = "in"
shape = ["M", "K"]

[[args]]
name = "B"
dtype = "f32"
role = "in"
shape = ["K", "N"]

[[args]]
name = "beta"
dtype = "f32"
role = "scalar"
value = "-0.5"

[[args]]
name = "C"
dtype = "f32"
role = "inout"
shape = ["M", "N"]

[baseline]
source = "baseline.cu"
entry = "gemm_naive"
grid = ["ceil_div(N, 16)", "ceil_div(M, 16)"]
block = ["16", "16"]
"""

SHAPE, DTYPE = "large", "fp32"
#: threads (x, y) and register tile (TM, TN): the default, then tiles that GEMM practice
#: uses for a coarsened product, over a few block shapes
CONFIGS = {
    "as_written": {},
    "16x16_t2x2": {"THREADS_X": 16, "THREADS_Y": 16, "TM": 2, "TN": 2},
    "16x16_t4x4": {"THREADS_X": 16, "THREADS_Y": 16, "TM": 4, "TN": 4},
    "32x8_t4x4": {"THREADS_X": 32, "THREADS_Y": 8, "TM": 4, "TN": 4},
    "16x16_t8x8": {"THREADS_X": 16, "THREADS_Y": 16, "TM": 8, "TN": 8},
    "32x8_t8x8": {"THREADS_X": 32, "THREADS_Y": 8, "TM": 8, "TN": 8},
    "16x8_t8x4": {"THREADS_X": 16, "THREADS_Y": 8, "TM": 8, "TN": 4},
}



def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder_dir = Path(tmp) / "gemm_naive"
        folder_dir.mkdir()
        (folder_dir / "baseline.cu").write_text(SOURCE)
        (folder_dir / "kernel.toml").write_text(TOML)
        lift = lifted(load_kernel_folder(folder_dir), SHAPE, DTYPE)
        if dry(sys.argv):
            return dry_run({"lift": (lift, CONFIGS)})
        doc: dict[str, Any] = {"kernel": "gemm_naive", "shape": SHAPE, "dtype": DTYPE,
                               "knobs": list(lift.template.param_names)}
        group, base_us = timed(lift, CONFIGS, base=True)
        doc.update(group)  # one template: its rows at the document's top level
    return finish(doc, {"lift": doc}, base_us, "naive_regtile_probe.json")


if __name__ == "__main__":
    raise SystemExit(main())
