"""First contact with held-back set 20's first hits a row (issue 28):
benchmarks/corpus_compute_unseen20/row_firsthits_warp runs a warp a row and votes on each
32-column chunk with ``__ballot_sync`` and ``__popc``. The warp family refused the whole
kernel ("the warps cooperate through __ballot_sync"): a vote combines the 32 lanes of one
warp, never a lane of another, so nothing was lifted (first contact 0.48 of the expert).
workbench/templater/warp.py now lifts the warps per block alone where a warp's lanes combine
(the items stay a warp each: no LANES), the grid dividing by them; a block barrier or shared
memory still refuses. workbench/templater/warp_ahead.py loads the chunks of such a warp's
loops AHEAD before their bodies: the body may vote, store through a pointer of another
element type than the reads' and read under a guard (``j < cols && rp[j] > t``, ``c < cols
? x[..] : 0``), the declarations the guard and the index read copied before the load;
``LDG`` reads a pointer-to-const input of such a loop through ``__ldg`` (warp_ldg.py's rule:
the pointee is not written while the kernel runs), in the loads ahead too;
workbench/templater/warp_row_items.py gives such a warp ROWS consecutive rows.
Pure: the folder's lift and a second spelling (a file-scope ``constexpr`` warps a block, the
lane from a helper, the work under ``if (row < rows)``, a ternary guarded read, restrict
pointers) lift WARPS_PER_BLOCK, ROWS, AHEAD and LDG with the warp-local note, and so does a
third (the global warp index, the block's warps never named); a store of the reads' element
type refuses AHEAD with its reason; a return on the data refuses ROWS; a block barrier still
refuses the warps. Host (g++): the folder, the second and third spellings and a fourth (a
(32, 8) block, the warp its y index) at the default, the expert's pick spelled in the lift's
knobs and a mix (one warp of four rows, two chunks ahead), bit for bit against the kernel as
written (the all-ends corners too under WORKBENCH_FULL_MATRIX=1).
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen20
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.semantic import lift_kernel

FOLDER = held_back_unseen20.SET.root / "row_firsthits_warp"
#: The expert's H200 pick (WARPS 2, ROWS 1, UNROLL 8, its loads through __ldg) spelled in
#: the lift's knobs.
EXPERT_PICK = {"WARPS_PER_BLOCK": 2, "ROWS": 1, "AHEAD": 8, "LDG": 1}
#: One warp a block walking four rows, two chunks ahead (37 rows: ten blocks, the last warp's
#: last three rows past the end; 100 columns: two rounds, the second partial).
MIX = {"WARPS_PER_BLOCK": 1, "ROWS": 4, "AHEAD": 2, "LDG": 0}


#: The same kernel by another hand: a file-scope ``constexpr`` for the warps a block (on the
#: right of the product), the lane from a helper, the row's work under ``if (row < rows)``,
#: the element read under a ternary, the vote's prefix through a named mask, restrict
#: pointers and literals inline.
SPELLING = """namespace {
constexpr int kWarps = 8;
constexpr int kKeep = 16;
}

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x % 32; }

extern "C" __global__ void row_firsthits_warp(int* __restrict__ hits, int* __restrict__ count,
                                              const float* __restrict__ x, int rows,
                                              int cols) {
  int row = threadIdx.x / 32 + blockIdx.x * kWarps;
  unsigned lane = lane_id();
  if (row < rows) {
    int seen = 0;
    for (int c0 = 0; c0 < cols; c0 += 32) {
      int c = c0 + (int)lane;
      float v = (c < cols) ? x[(size_t)row * cols + c] : 0.0f;
      bool above = c < cols && v > 0.95f;
      unsigned ballot = __ballot_sync(0xffffffffu, above);
      unsigned earlier = ballot & ((1u << lane) - 1u);
      int rank = seen + __popc(earlier);
      if (above && rank < kKeep) hits[row * kKeep + rank] = c;
      seen += __popc(ballot);
    }
    if ((int)lane < kKeep && (int)lane >= seen) hits[row * kKeep + lane] = -1;
    if (lane == 0) count[row] = seen;
  }
}
"""


#: A third hand: the global warp index ``(blockIdx.x * blockDim.x + threadIdx.x) / 32`` (the
#: block's warps never named), the read in place under ``&&``, literals for the 16 slots.
GLOBAL_WARP = """extern "C" __global__ void row_firsthits_warp(int* hits, int* count, const float* x,
                                              int rows, int cols) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  unsigned lane = threadIdx.x % 32;
  if (row >= rows) return;
  int seen = 0;
  for (int c0 = 0; c0 < cols; c0 += 32) {
    int c = c0 + (int)lane;
    bool above = c < cols && x[(size_t)row * cols + c] > 0.95f;
    unsigned ballot = __ballot_sync(0xffffffffu, above);
    int rank = seen + __popc(ballot & ((1u << lane) - 1u));
    if (above && rank < 16) hits[row * 16 + rank] = c;
    seen += __popc(ballot);
  }
  if ((int)lane < 16 && (int)lane >= seen) hits[row * 16 + lane] = -1;
  if (lane == 0) count[row] = seen;
}
"""


#: A fourth: a (32, 8) block, the warp its y index, the lane threadIdx.x, ``blockDim.y`` the
#: rows a block.
TWO_D = GLOBAL_WARP.replace(
    "  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;\n"
    "  unsigned lane = threadIdx.x % 32;\n",
    "  int row = blockIdx.x * blockDim.y + threadIdx.y;\n  unsigned lane = threadIdx.x;\n")


def _two_d_folder(root: Path) -> KernelFolder:
    """The folder with TWO_D as its kernel, launched as (32, 8) blocks."""
    respelled(FOLDER, root, TWO_D)
    toml = root / FOLDER.name / "kernel.toml"
    toml.write_text(toml.read_text().replace('block = ["256"]', 'block = ["32", "8"]'))
    return load_kernel_folder(toml.parent)


def _lift(source: str) -> tuple[list[str], tuple[str, ...], str]:
    lifted = lift_kernel(source, entry="row_firsthits_warp", grid=["ceil_div(rows, 8)"],
                         block=["256"], scalars={"rows": "rows", "cols": "cols"})
    return [p.name for p in lifted.params], lifted.notes, lifted.source


def test_the_folder_lift_has_warps_and_chunks_ahead() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    lifted = result.lifted
    names = [p.name for p in lifted.params]
    assert {"WARPS_PER_BLOCK", "ROWS", "AHEAD", "LDG"} <= set(names) and \
        "LANES" not in names, lifted.notes
    assert lifted.grid == ("ceil_div(rows, WARPS_PER_BLOCK * ROWS)",)
    assert "const int row = wb_item * ROWS + wb_r;" in lifted.source
    assert lifted.block == ("32 * WARPS_PER_BLOCK",)
    assert any(n.startswith("LANES: not applied: `__ballot_sync(FULL_MASK, hit)` combines the "
                            "32 lanes of one warp (warp-local") for n in lifted.notes)
    assert "wb_ahead0[wb_u] = (j < cols) ? WB_RO(rp[j]) : float();" in lifted.source
    assert "const bool hit = j < cols && WB_RO(rp[j]) > THRESHOLD;" in lifted.source  # AHEAD 1


def test_the_spelling_lifts_the_same_knobs() -> None:
    names, notes, source = _lift(SPELLING)
    assert {"WARPS_PER_BLOCK", "ROWS", "AHEAD", "LDG"} <= set(names) and "LANES" not in names, notes
    assert "constexpr int kWarps = WARPS_PER_BLOCK;" in source, source
    assert "? WB_RO(x[(size_t)row * cols + c]) : float();" in source, source


def test_the_global_warp_index_lifts_the_same_knobs() -> None:
    names, notes, source = _lift(GLOBAL_WARP)
    assert {"WARPS_PER_BLOCK", "ROWS", "AHEAD", "LDG"} <= set(names) and "LANES" not in names, notes
    assert "(blockIdx.x * blockDim.x + threadIdx.x) / 32" in source  # 32 * W threads a block


def test_a_store_of_the_read_type_keeps_the_loads_in_order() -> None:
    """A store through a float pointer may change what a later step reads: no AHEAD."""
    source = SPELLING.replace("const float* __restrict__ x", "float* x").replace(
        "if (above && rank < kKeep) hits[row * kKeep + rank] = c;",
        "if (above && rank < kKeep) x[row * kKeep + rank] = 0.0f;")
    names, notes, _text = _lift(source)
    assert "WARPS_PER_BLOCK" in names and not {"AHEAD", "LDG"} & set(names), notes
    assert any(n.startswith("AHEAD: not applied: `x[(size_t)row * cols + c]` reads float, "
                            "which a store of the loop may write") for n in notes), notes


def test_a_return_on_the_data_keeps_a_row_a_warp() -> None:
    """Leaving when a row has no hit would skip the warp's later rows: no ROWS."""
    source = GLOBAL_WARP.replace("  if ((int)lane < 16", "  if (seen == 0) return;\n"
                                 "  if ((int)lane < 16")
    names, notes, _text = _lift(source)
    assert "WARPS_PER_BLOCK" in names and "ROWS" not in names, notes
    assert any(n.startswith("ROWS: not applied: `if (seen == 0) return;` leaves the kernel "
                            "under a test other than `row >= N`") for n in notes), notes


def test_a_block_barrier_still_refuses_the_warps() -> None:
    source = SPELLING.replace("seen += __popc(ballot);", "seen += __popc(ballot);\n"
                              "      __syncthreads();")
    names, notes, _text = _lift(source)
    assert "WARPS_PER_BLOCK" not in names
    assert any(n.startswith("LANES: not applied: the warps cooperate through __syncthreads")
               for n in notes), notes


def _same_outputs(kf: KernelFolder, tmp_path: Path, flags: tuple[str, ...]) -> int:
    template = offline_template(kf).template
    assert {"WARPS_PER_BLOCK", "AHEAD"} <= set(template.param_names)
    env = kf.env(kf.check_shape, "fp32")
    configs = host_configs(template, env, [EXPERT_PICK, MIX])
    if not FULL_MATRIX:  # the default, the expert's pick, the mix (the all-ends corners: slow)
        configs = configs[:3]
    return same_as_written(kf, template, configs, held_back_unseen20.SET.host_source,
                           tmp_path, flags)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_folder_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    assert _same_outputs(load_kernel_folder(FOLDER), tmp_path, host_flags) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_two_d_block_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _two_d_folder(tmp_path / "folders")
    assert offline_template(kf).lifted.block == ("32", "WARPS_PER_BLOCK")
    assert _same_outputs(kf, tmp_path, host_flags) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("source", [SPELLING, GLOBAL_WARP], ids=["constexpr", "global_warp"])
def test_the_spellings_compute_as_written(tmp_path: Path, host_flags: tuple[str, ...],  # noqa: F811
                                          source: str) -> None:
    kf = respelled(FOLDER, tmp_path / "folders", source)
    assert _same_outputs(kf, tmp_path, host_flags) >= 3
