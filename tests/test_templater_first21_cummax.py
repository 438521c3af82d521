"""First contact with held-back set 21's running row maximum (issue 28):
benchmarks/corpus_compute_unseen21/cummax_rows_cg gives each row a warp (a tiled partition
of 32, eight a block) that walks the row in chunks of 32 columns, ``c = base + lane``, an
up-shuffle max-scan of the chunk and a carry from its last lane. The warp family models the
lane only as a lane loop's start or in ``lane == 0``; it refused the lane in ``base + lane``
and with it everything, so the lift had BRANCHLESS alone (1.00x against the expert's 1.49x
on the H200). A lane read any other way cannot follow LANES, but where the lanes combine
(a shuffle) each item keeps its warp, whose lanes read the same ``threadIdx.x % 32`` in a
block of any warps: the warps per block are lifted as for a vote (WARPS_PER_BLOCK, then
ROWS, LDG, AHEAD where legal). Lanes that never exchange are left to the other families.

Host (g++): the folder and a second hand's spelling (plain shuffles, the lane ``& 31u``, the
warps a block a namespace ``constexpr`` on the right, the row's work under ``if (r < rows)``,
a ``while`` over the chunks, the shuffle offsets up to 16 under a ternary) at the default
and a mix, bit for bit against the kernel as written (the all-ends configs too under
WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import held_back_unseen21
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen21.SET.root / "cummax_rows_cg"
#: Sixteen warps a block of four rows each, through __ldg, two blocks an SM at least (37
#: rows: one block, its tenth warp's last three rows and six warps past the end; 100
#: columns: three full chunks and a partial one).
MIX = {"WARPS_PER_BLOCK": 16, "ROWS": 4, "LDG": 1, "MIN_BLOCKS_PER_SM": 2}

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="needs g++ for the host simulation")

#: The same kernel by another hand: plain shuffles, the lane ``& 31u``, the warps a block a
#: namespace ``constexpr`` on the right of the product, the row's work under ``if``, a
#: ``while`` over the chunks, the column written out in the load and the store.
SECOND = """#include <cfloat>

namespace {
constexpr int kWarps = 8;
}

extern "C" __global__ void cummax_rows_cg(float* __restrict__ out, const float* __restrict__ in,
                                          int rows, int cols) {
  const unsigned lane = threadIdx.x & 31u;
  const int r = threadIdx.x / 32 + kWarps * blockIdx.x;
  if (r < rows) {
    const float* x = in + (size_t)r * cols;
    float running = -FLT_MAX;
    int c0 = 0;
    while (c0 < cols) {
      float v = -FLT_MAX;
      if (c0 + (int)lane < cols) v = x[c0 + lane];
#pragma unroll
      for (int off = 1; off <= 16; off *= 2) {
        const float o = __shfl_up_sync(0xffffffffu, v, off);
        v = lane >= off ? fmaxf(o, v) : v;
      }
      v = fmaxf(running, v);
      if (c0 + (int)lane < cols) out[(size_t)r * cols + c0 + lane] = v;
      running = __shfl_sync(0xffffffffu, v, 31);
      c0 += 32;
    }
  }
}
"""


#: Host forms of the plain shuffles the lift writes for the tile's (the set's prelude has the
#: tile's members and the unseen3 prelude the xor and down shuffles only): a lane reading
#: below lane 0 of its group of ``width`` gets its own value, CUDA's rule.
SHUFFLES = r"""
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const unsigned lane = wb_lane();
  return wb_exchange(v, lane - delta, lane % unsigned(width) < delta);
}
template <class T> static T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const unsigned lane = wb_lane();
  return wb_exchange(v, lane - lane % unsigned(width) + unsigned(src) % unsigned(width), false);
}
"""


def _host(source: str) -> str:
    return held_back_unseen21.SET.host_source(SHUFFLES + source)


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="cummax_rows_cg", grid=["ceil_div(rows, 8)"],
                         block=["256"], scalars={"rows": "rows", "cols": "cols"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_keeps_a_warp_a_row_and_lifts_the_warps() -> None:
    lifted = offline_template(load_kernel_folder(FOLDER)).lifted
    names = [p.name for p in lifted.params]
    assert {"WARPS_PER_BLOCK", "ROWS", "LDG"} <= set(names) and "LANES" not in names, \
        lifted.notes
    assert lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * ROWS)",)
    assert lifted.block == ("32 * WARPS_PER_BLOCK",)
    assert "LANES: not applied: the lane is used in `base + lane` (only lane loops and " \
        "lane == 0 are modelled) (line 27)" in lifted.notes
    assert "const int row = wb_item * ROWS + wb_r;" in lifted.source


def test_the_second_spelling_lifts_the_same_warps() -> None:
    names, notes, source = _lift(SECOND)
    assert {"WARPS_PER_BLOCK", "ROWS"} <= set(names) and "LANES" not in names, notes
    assert "constexpr int kWarps = WARPS_PER_BLOCK;" in source


def test_lanes_that_never_exchange_are_left_to_the_other_families() -> None:
    """No shuffle: the warp's lanes do not combine, the warp family lifts nothing."""
    source = SECOND.replace(
        "const float o = __shfl_up_sync(0xffffffffu, v, off);", "const float o = v * off;"
    ).replace("running = __shfl_sync(0xffffffffu, v, 31);", "running = v;")
    names, notes, _text = _lift(source)
    assert "WARPS_PER_BLOCK" not in names and "ROWS" not in names, notes


def test_a_block_barrier_still_refuses_the_warps() -> None:
    source = SECOND.replace("c0 += 32;", "c0 += 32;\n      __syncthreads();")
    names, notes, _text = _lift(source)
    assert "WARPS_PER_BLOCK" not in names, notes
    assert any(n.startswith("LANES: not applied: the warps cooperate through __syncthreads")
               for n in notes), notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [{k: v for k, v in MIX.items()
                                            if k in template.param_names}])
    if not FULL_MATRIX:  # the default and the mix (the all-ends corners: slow)
        configs = configs[:2]
    return same_as_written(kf, template, configs, _host, tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 2


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_second_spelling_computes_as_written(tmp_path: Path,
                                                 host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SECOND)
    assert _same_outputs(kf, tmp_path, host_flags) >= 2
