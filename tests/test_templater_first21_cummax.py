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
Where those warps scan their rows (run on symbols: every column stored holds the prefix of
its row, :mod:`.scan_match` with the lane as the column), the chunk loop is regenerated
(:mod:`.warp_scan`): ITEMS_PER_THREAD consecutive columns a lane scanned in registers, VEC of
them loaded and stored as one aligned vector where aligned (the expert's VEC 4 is
ITEMS_PER_THREAD 4, VEC 4), and LDG (the loads through __ldg, as the expert's restrict
input's are).

Host (g++): the folder, a second hand's spelling (plain shuffles, the lane ``& 31u``, the
warps a block a namespace ``constexpr`` on the right, the row's work under ``if (r < rows)``,
a ``while`` over the chunks, the shuffle offsets up to 16 under a ternary: the scan found
inside the ``if`` without ``else``, the ``while`` read as its ``for`` now that a store's
index naming ``cols`` no longer counts as a write of the bound) and a third (the exclusive running maximum, the
element indexed in place, a macro for the rows a block, ``warpSize`` steps; also at 99
columns, rows off the vectors' alignment) at the default, the expert's pick and a mix, bit
for bit against the kernel as written (the all-ends configs too under
WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen21
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen21.SET.root / "cummax_rows_cg"
#: Sixteen warps a block of four rows each, eight columns a lane as float2s through __ldg,
#: two blocks an SM at least (37 rows: one block, its tenth warp's last three rows and six
#: warps past the end; 100 columns: a chunk of 256, partly).
MIX = {"WARPS_PER_BLOCK": 16, "ROWS": 4, "ITEMS_PER_THREAD": 8, "VEC": 2, "LDG": 1,
       "MIN_BLOCKS_PER_SM": 2}
#: The expert's H200 pick (WARPS 8, ROWS 1, VEC 4: four consecutive columns a lane as a
#: float4) spelled in the lift's knobs.
EXPERT_PICK = {"WARPS_PER_BLOCK": 8, "ROWS": 1, "ITEMS_PER_THREAD": 4, "VEC": 4}


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


#: A third hand: the exclusive running maximum (a different kernel: lifted and run against
#: its own written form), the warp ``>> 5`` and the lane ``& 31`` as locals, the rows a block
#: a macro on the left, the element indexed in place, ``warpSize`` steps, ``-FLT_MAX``.
THIRD = """#include <cfloat>

#define ROWS_PER_BLOCK 8

// out[r][c] = max(in[r][0..c - 1]) (-FLT_MAX at c = 0): an exclusive running maximum, a
// warp a row, the element indexed in place.
extern "C" __global__ void cummax_rows_cg(float* out, const float* in, int rows, int cols) {
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int row = ROWS_PER_BLOCK * blockIdx.x + warp;
  if (row >= rows) return;
  float best = -FLT_MAX;
  for (int c0 = 0; c0 < cols; c0 += warpSize) {
    const int c = lane + c0;
    const float x = (c < cols) ? in[(size_t)row * cols + c] : -FLT_MAX;
    float m = x;
    for (int off = 1; off < warpSize; off *= 2) {
      const float o = __shfl_up_sync(0xffffffffu, m, off);
      m = (lane >= off) ? fmaxf(o, m) : m;
    }
    const float before = __shfl_up_sync(0xffffffffu, m, 1);
    const float excl = fmaxf(best, lane == 0 ? -FLT_MAX : before);
    if (c < cols) out[(size_t)row * cols + c] = excl;
    best = fmaxf(best, __shfl_sync(0xffffffffu, m, 31));
  }
}
"""
#: THIRD's knobs at the expert's pick and the mix (its warps a block: ROWS_PER_BLOCK).
THIRD_PICK = {"ROWS_PER_BLOCK": 8, "ITEMS_PER_THREAD": 4, "VEC": 4}
THIRD_MIX = {"ROWS_PER_BLOCK": 2, "ROWS": 2, "ITEMS_PER_THREAD": 2, "VEC": 2, "LDG": 1}


#: Host forms of the plain shuffles the lift writes for the tile's (the set's prelude has the
#: tile's members and the unseen3 prelude the xor and down shuffles only): a lane reading
#: below lane 0 of its group of ``width`` gets its own value, CUDA's rule; and warpSize.
SHUFFLES = r"""
constexpr int warpSize = 32;
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
    assert {"WARPS_PER_BLOCK", "ROWS", "ITEMS_PER_THREAD", "VEC", "LDG"} <= set(names) and \
        "LANES" not in names, \
        lifted.notes
    assert lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * ROWS)",)
    assert lifted.block == ("32 * WARPS_PER_BLOCK",)
    assert "LANES: not applied: the lane is used in `base + lane` (only lane loops and " \
        "lane == 0 are modelled) (line 27)" in lifted.notes
    assert "const int row = wb_item * ROWS + wb_r;" in lifted.source


def test_the_second_spelling_lifts_the_same_knobs() -> None:
    """Its scan inside ``if (r < rows) { .. }``, a counted ``while`` (read as its ``for``: the
    store's index naming ``cols`` is no write of the bound)."""
    names, notes, source = _lift(SECOND)
    assert {"WARPS_PER_BLOCK", "ROWS", "ITEMS_PER_THREAD", "VEC"} <= set(names) and \
        "LANES" not in names, notes
    assert "constexpr int kWarps = WARPS_PER_BLOCK;" in source
    assert "WB_LOAD_VEC<VEC>(&x[(0) + wb_first] + wb_k, wb_v + wb_k);" in source, source


def test_work_after_the_scan_keeps_the_chunks_as_written() -> None:
    """A statement after the chunk loop: the loop is not its block's last work, so it stays
    as written (the warps still lift). (The carry read there is no scan: the runs on symbols
    find it combined with a value that is not the identity.)"""
    names, notes, _text = _lift(SECOND.replace("      c0 += 32;\n    }\n  }\n",
                                               "      c0 += 32;\n    }\n"
                                               "    const int done = cols;\n  }\n"))
    assert "WARPS_PER_BLOCK" in names and "ITEMS_PER_THREAD" not in names, notes
    assert any(n.startswith("WARP_SCAN: not applied: the warp's scan is no chunk loop ending "
                            "its block") for n in notes), notes


def test_the_third_hand_scans_exclusively_in_chunks() -> None:
    names, notes, source = _lift(THIRD)
    assert {"ROWS_PER_BLOCK", "ROWS", "ITEMS_PER_THREAD", "VEC"} <= set(names), notes
    assert any(n.startswith("WARP_SCAN: applied: an exclusive `fmaxf` scan of the warp's row "
                            "(identity (float)(-FLT_MAX), cols elements)") for n in notes), notes
    assert "WB_LOAD_VEC<VEC>(&in[(size_t)row * cols + (wb_first + (0))] + wb_k, wb_v + wb_k);" \
        in source


def test_a_carry_from_the_wrong_lane_is_no_scan() -> None:
    """The carry taken from lane 0 (the chunk's first column, not its last): no prefix, no
    WARP_SCAN (the warps a block still lift)."""
    names, notes, _text = _lift(THIRD.replace("__shfl_sync(0xffffffffu, m, 31)",
                                              "__shfl_sync(0xffffffffu, m, 0)"))
    assert "ROWS_PER_BLOCK" in names and "ITEMS_PER_THREAD" not in names, notes
    assert any(n.startswith("WARP_SCAN: not applied: column 32 of a row of 69 is stored as "
                            "the elements 0..0, not a prefix scan") for n in notes), notes


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


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...],
                  mixes: tuple[dict[str, int], ...] = (EXPERT_PICK, MIX)) -> int:
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [{k: v for k, v in mix.items()
                                            if k in template.param_names} for mix in mixes])
    if not FULL_MATRIX:  # the default, the expert's pick and the mix (the all-ends: slow)
        configs = configs[:3]
    return same_as_written(kf, template, configs, _host, tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_third_hand_computes_as_written(tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", THIRD)
    assert _same_outputs(kf, tmp_path, host_flags, (THIRD_PICK, THIRD_MIX)) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
def test_rows_that_are_not_aligned_take_the_columns_one_at_a_time(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """99 columns: every other row starts off a float2 and three in four off a float4, so
    VEC's run-time test sends those lanes down the scalar path (bit for bit either way)."""
    kf = respelled(FOLDER, tmp_path / "folders", THIRD)
    toml = tmp_path / "folders" / FOLDER.name / "kernel.toml"
    toml.write_text(toml.read_text().replace("small = { rows = 37, cols = 100 }",
                                              "small = { rows = 37, cols = 99 }"))
    kf = load_kernel_folder(toml.parent)
    assert kf.env(kf.check_shape, "fp32")["cols"] == 99
    assert _same_outputs(kf, tmp_path, host_flags, (THIRD_PICK, THIRD_MIX)) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_second_spelling_computes_as_written(tmp_path: Path,
                                                 host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "folders", SECOND)
    assert _same_outputs(kf, tmp_path, host_flags) >= 2
