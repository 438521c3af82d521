"""CONST_VIA composed with the generic families (workbench/templater/const_via.py runs
after them; issue 28): the shared copy sizes its strided loop by blockDim at run time, so a
block size, an items loop or a grid cap that another transform lifted keeps it whole.

Spellings: an elementwise gain per lane (``gain[i & 31]``, 1-D block of 256: BLOCK_THREADS
and ITEMS_PER_THREAD lift too; a second table read at a constant index stays in constant
memory) and a grid-stride Horner loop over a lane-rotated table (``gain[(i + r) & 31]``:
BLOCK_THREADS and GRID_BLOCKS). Each runs on the host at its last all-ends corner (the copy,
the largest block and items) and a mixed config, bit for bit against the kernel as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers_templater import end_configs
from test_templater_const_via import _knobs, assert_prints_as_written, write_folder

from workbench.templater import offline_template

GAIN = """
__constant__ float gain[32];
__constant__ float bias[4];

extern "C" __global__ void k(float* y, const float* x, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) {
    float v = x[i] * gain[i & 31] + bias[0];
    y[i] = v > 0.0f ? v : 0.01f * v;
  }
}
"""

HORNER = """
__constant__ float gain[32];

extern "C" __global__ void k(float* y, const float* x, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float v = x[i];
    float a = 0.0f;
    for (int r = 0; r < 4; ++r) a = a * v + gain[(i + r) & 31];
    y[i] = a;
  }
}
"""

_FLAT = [("y", "f32", "out", ["n"]), ("x", "f32", "in", ["n"]), ("n", "i32", "scalar", "n")]
#: name -> (source, grid, block, the knobs other families lift beside CONST_VIA, a mixed
#: config)
CASES: dict[str, tuple[str, list[str], list[str], set[str], dict[str, Any]]] = {
    "gain": (GAIN, ["ceil_div(n, 256)"], ["256"], {"BLOCK_THREADS", "ITEMS_PER_THREAD"},
             {"CONST_VIA": 1, "BLOCK_THREADS": 96, "ITEMS_PER_THREAD": 2}),
    "horner": (HORNER, ["min(ceil_div(n, 128), 1024)"], ["128"],
               {"BLOCK_THREADS", "GRID_BLOCKS"},
               {"CONST_VIA": 1, "BLOCK_THREADS": 160, "GRID_BLOCKS": 128}),
}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_copy_composes_with_the_generic_families(
        name: str, tmp_path: Path) -> None:
    source, grid, block, others, mixed = CASES[name]
    kf = write_folder(tmp_path / name, source, grid, block, _FLAT, {"n": 1000}, [])
    result = offline_template(kf)
    knobs = _knobs(result)
    assert others | {"CONST_VIA"} <= set(knobs), result.notes
    if name == "gain":  # bias[0]: one address a warp
        assert any("bias is read at a warp-uniform index" in n for n in result.notes)
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert ends[-1]["CONST_VIA"] == 1
    configs = [ends[-1], {**template.default_config(), **mixed}]
    assert_prints_as_written(kf, result, configs, tmp_path)
