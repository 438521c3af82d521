"""Vector width on the write loops of warp-per-item kernels (a warp per row writing a row).

A same-index element-wise loop ``out[c] = f(in[c])`` whose written pointer is not
``__restrict__`` is vectorized behind a run-time test per item: the vector path runs only where
the written and read ranges of the row are the same elements (exact in-place) or disjoint, the
loop as written otherwise. Nothing is assumed about the pointers and no ``__restrict__`` is
added. A written pointer read at another index is refused. Pure tests, plus nvcc (skipped
without it).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers_templater import lifted_template
from test_templater_flat import ROOT, compiles, params

from workbench.core.kernel_folder import load_kernel_folder
from workbench.engine.compiler import Compiler
from workbench.templater import LiftedSource, lift_kernel
from workbench.templater.offline import offline_template

SHAPE = {"rows": "rows", "cols": "cols"}

# int8 quantization written with a shift and an & lane, full-row indices (no row pointers)
QUANT_SHIFTS = """
#include <cstdint>
extern "C" __global__ void k(signed char* q, const float* x, int rows, int cols) {
  int lane = threadIdx.x & 31;
  int row = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (row >= rows) return;
  float m = 0.0f;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, fabsf(x[(long long)row * cols + c]));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  const float inv = m > 0.0f ? 127.0f / m : 0.0f;
  for (int c = lane; c < cols; c += 32)
    q[(long long)row * cols + c] = (signed char)__float2int_rn(x[(long long)row * cols + c] * inv);
}
"""

# float -> half with a per-row scale (a reduction of squares), local warp index
TO_HALF = """
#include <cuda_fp16.h>
#define ROWS_PER_BLOCK 4
extern "C" __global__ void k(__half* out, const float* in, int rows, int cols) {
  int warp = threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * ROWS_PER_BLOCK + warp;
  if (row >= rows) return;
  const float* src = in + (long long)row * cols;
  __half* dst = out + (long long)row * cols;
  float ss = 0.0f;
  for (int c = lane; c < cols; c += 32) ss += src[c] * src[c];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float s = rsqrtf(ss / cols + 1e-6f);
  for (int c = lane; c < cols; c += 32) dst[c] = __float2half(src[c] * s);
}
"""

# in place: the written pointer is the read one (exact alias, no test needed)
IN_PLACE = """
extern "C" __global__ void k(float* x, int rows, int cols) {
  int row = blockIdx.x * 2 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float* xr = x + (long long)row * cols;
  float m = 0.0f;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, fabsf(xr[c]));
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float s = m > 0.0f ? 1.0f / m : 0.0f;
  for (int c = lane; c < cols; c += 32) xr[c] *= s;
}
"""

CASES = {"quant_shifts": (QUANT_SHIFTS, ["ceil_div(rows, 8)"], ["256"]),
         "to_half": (TO_HALF, ["ceil_div(rows, 4)"], ["128"]),
         "in_place": (IN_PLACE, ["ceil_div(rows, 2)"], ["64"])}
CORNERS: tuple[dict[str, Any], ...] = (
    {"LANES": 4, "VEC": 4, "WARPS_PER_BLOCK": 32, "ITEMS_PER_THREAD": 4},
    {"LANES": 8, "VEC": 2, "WARPS_PER_BLOCK": 1, "ITEMS_PER_THREAD": 2},
    {"LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 1})


def lift(source: str, grid: list[str], block: list[str]) -> LiftedSource:
    return lift_kernel(source, entry="k", grid=grid, block=block, scalars=SHAPE)


def applied(lifted: LiftedSource, transform: str) -> list[str]:
    return [f.reason for f in lifted.findings if f.transform == transform and f.applied]


def refused(lifted: LiftedSource, transform: str) -> list[str]:
    return [f.reason for f in lifted.findings if f.transform == transform and not f.applied]


def write_loop_vectorized(lifted: LiftedSource, written: str) -> None:
    """The vector store of ``written`` is in the source: the write loop was vectorized."""
    assert "*reinterpret_cast<WbVec<" in lifted.source
    assert f">*>(&{written}[" in lifted.source, lifted.source


@pytest.mark.parametrize("name", sorted(CASES))
def test_write_loops_of_warp_kernels_get_vectors(name: str, compiler: Compiler) -> None:
    source, grid, block = CASES[name]
    lifted = lift(source, grid, block)
    knobs = params(lifted)
    assert {"LANES", "VEC", "ITEMS_PER_THREAD"} <= set(knobs), lifted.notes
    assert not refused(lifted, "VEC"), lifted.notes
    assert len([r for r in applied(lifted, "VEC") if "vectorized" in r]) == 2  # both loops
    assert "cols % VEC == 0" in lifted.constraints
    assert "__restrict__" not in lifted.source  # never added
    written = {"quant_shifts": "q", "to_half": "dst", "in_place": "xr"}[name]
    write_loop_vectorized(lifted, written)
    template = lifted_template(lifted)
    assert {"VEC": 4, "LANES": 4} in [{k: c[k] for k in ("VEC", "LANES")}
                                      for c in template.space({"rows": 64, "cols": 1024})]
    warps = "ROWS_PER_BLOCK" if "ROWS_PER_BLOCK" in knobs else "WARPS_PER_BLOCK"
    compiles(compiler, template, *({warps if k == "WARPS_PER_BLOCK" else k: v
                                     for k, v in c.items()} for c in CORNERS))


def test_a_not_restrict_output_runs_vectors_only_where_ranges_are_apart() -> None:
    lifted = lift(QUANT_SHIFTS, ["ceil_div(rows, 8)"], ["256"])
    src = lifted.source
    assert "bool wb_apart;" in src and "if (wb_apart) for (" in src
    # the scalar path is the loop as written, with the lanes applied
    assert "} else for (int c = lane; c < cols; c += LANES)\n    q[(long long)row * cols + c]" \
        in src, src
    assert "sizeof(signed char) == sizeof(float)" in src  # exact alias needs equal elements
    guard = [r for r in applied(lifted, "VEC") if "run time" in r]
    assert guard and "`q` may alias x" in guard[0]


def test_an_exact_in_place_loop_needs_no_test() -> None:
    lifted = lift(IN_PLACE, ["ceil_div(rows, 2)"], ["64"])
    assert "wb_apart" not in lifted.source
    assert "*reinterpret_cast<WbVec<float, VEC>*>(&xr[c]) = wb_xr[wb_i];" in lifted.source


def test_two_outputs_are_each_tested_against_the_input() -> None:
    two = QUANT_SHIFTS.replace("signed char* q, const float* x", "signed char* q, float* y, "
                               "const float* x").replace(
        "q[(long long)row * cols + c] = (signed char)__float2int_rn(x[(long long)row * cols + c] "
        "* inv);", "{ q[(long long)row * cols + c] = (signed char)__float2int_rn(x[(long long)row "
        "* cols + c] * inv); y[(long long)row * cols + c] = 1.0f; }")
    lifted = lift(two, ["ceil_div(rows, 8)"], ["256"])
    assert not refused(lifted, "VEC"), lifted.notes
    src = lifted.source
    cond = src[src.index("wb_apart = "):].split(";\n")[0]
    assert "wb_at_q == wb_at_x" in cond
    assert "wb_at_x == wb_at_y" in cond and "wb_at_q == wb_at_y" in cond  # two written ranges must not overlap either


def test_a_written_pointer_read_at_another_offset_is_tested_at_that_offset() -> None:
    """q's row is written while x's NEXT row is read: each range of the run-time test starts
    at its own access (every access is ``offset + c``), so q over x's next row (the same
    elements at each c) or apart takes the vector path and a partial overlap the loop as
    written (tests/test_templater_memgap_blockvec.py runs such layouts on the host)."""
    old = "__float2int_rn(x[(long long)row * cols + c]"
    assert old in QUANT_SHIFTS
    lifted = lift(QUANT_SHIFTS.replace(old, "__float2int_rn(x[(long long)(row + 1) * cols + c]"),
                  ["ceil_div(rows, 8)"], ["256"])
    assert any("`q` may alias x (not __restrict__)" in r for r in applied(lifted, "VEC")), \
        lifted.notes
    src = lifted.source
    ranges = src[src.index("bool wb_apart;"):src.index("if (wb_apart)")]
    assert "&x[(long long)(row + 1) * cols + c]" in ranges, ranges
    assert "&q[(long long)row * cols + c]" in ranges, ranges
    write_loop_vectorized(lifted, "q")


def test_an_in_place_loop_reading_a_neighbour_is_refused() -> None:
    shifted = IN_PLACE.replace("xr[c] *= s;", "xr[c] = xr[c + 1] * s;")
    lifted = lift(shifted, ["ceil_div(rows, 2)"], ["64"])
    assert any("`xr` is written and accessed at more than one offset" in r
               for r in refused(lifted, "VEC")), lifted.notes
    assert "*reinterpret_cast<WbVec<float, VEC>*>(&xr[" not in lifted.source  # no store


def test_warp_row_folder_knobs(compiler: Compiler) -> None:
    result = offline_template(load_kernel_folder(ROOT / "corpus_compute" / "warp_row"))
    knobs = {p.name for p in result.lifted.params}
    assert knobs == {"WARPS_PER_BLOCK", "LANES", "VEC", "ITEMS_PER_THREAD", "REG_ROW",
                     "MIN_BLOCKS_PER_SM"}
    assert "`q` may alias x" in result.diff or any("`q` may alias x" in n
                                                     for n in result.notes)
    assert "if (wb_apart)" in result.diff
    write_loop_vectorized(result.lifted, "qr")
    compiles(compiler, result.template, {"VEC": 4, "LANES": 32, "WARPS_PER_BLOCK": 1},
             {"VEC": 2, "LANES": 16, "ITEMS_PER_THREAD": 4},
             {"VEC": 4, "LANES": 32, "REG_ROW": 1024})  # int8 vector stores from registers
