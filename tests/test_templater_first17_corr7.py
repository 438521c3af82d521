"""First contact with held-back set 17's 7 x 7 correlation bank (issue 28):
benchmarks/corpus_compute_unseen17/corr7x7_bank4 stages its 22 x 22 window in a flat shared
array read through a macro (``tile[(y) * WIN + (x)]``) and its four filters in a second shared
array filled by ``if (tid < NF * TAPS) taps[tid] = filt[tid];``. The apron family (outputs per
thread over a shared window, :mod:`workbench.templater.apron`) reads one 2-D tile, so it left
the kernel without a word; the expert's rows a thread (RY) and padding (PAD) were out of
reach and the lift had the block sizes only.

The block lift made the written ``BS`` (one constant for both block sizes, also read by the
flat thread index and, through ``WIN``, the tile's extent) two knobs, BLOCK_X and BLOCK_Y,
and left ``BS`` at 16 "so the gate decides": every block but 16 x 16 computed wrong outputs
(host: 32 x 8, 16 x 8, 32 x 16, 8 x 32 and 8 x 8 differ), and the H200 gate's repair kept
8 x 8 in the written space. :mod:`workbench.templater.macros` now holds each such knob at the
constant's value where the constant is read anywhere no transform rewrote it.

Pure: the refusal is now a note with the line, naming the hand-indexed tile and the other
shared array, for the folder and for a second spelling (constexpr sizes, a nest of loads, the
filters in a 2-D shared array, the tile read inline: the family's two-arrays refusal, which
now names both arrays and their lines); both lifts hold the block at 16 x 16 with the line.
A thread's own accumulator array (``float acc[NF]``, written after the barrier) no longer
makes the apron family refuse ("writes through `acc`, not a kernel argument"): an array of
values the work declares cannot alias the tile. A third spelling with the window as a 2-D
tile, the filters read from global memory and the block sizes spelled inline gains OUT_X,
OUT_Y, PAD (the expert's BX, RY, PAD) and computes as written at the expert's H200 pick
spelled in its knobs (64 x 2, 8 rows, padded) and the default (every all-ends corner under
WORKBENCH_FULL_MATRIX=1).
Host (g++): the e604c78 spelling's lift at the default and the last config of its space (its
every config has the 16 x 16 block) bit for bit against the kernel as written, and the 8 x 8
block the constraints exclude differs (the check can fail).

The folder itself now lifts (:mod:`workbench.templater.apron_flat`, :mod:`.apron_side`, the
expression macros of :class:`~workbench.templater.apron_loads.Deps`): the flat window
``tile[WIN * WIN]`` read at ``(ty + dy) * WIN + (tx + dx)`` is read as ``tile[WIN][WIN]``
(the load's ``tile[e]`` as ``[e / WIN][e % WIN]``), its extent ``WIN = (BS + 2 * R)`` is
22, and the filters' ``taps[NF * TAPS]`` beside it are a table every output reads alike,
filled as written for every flat index of the written 16 x 16 block at any block shape
(``tid < 196`` with 128 threads is still filled whole). The lift has OUT_X, OUT_Y, PAD (the
expert's RY, PAD beside BX, BY) and its shared memory counts the taps' 784 bytes. A second
spelling (the window through ``#define IDX(r, c)`` and a nest of loads strided by the block,
the filters by a loop strided by the block's threads, locals for the thread index) lifts the
same knobs, and so does it with the index a ``__device__`` helper (inlined as ``(int)(r * SPAN
+ c)``). Host (g++), bit for bit against the kernel as written: both at the default, the
expert's H200 pick in the lift's knobs (64 x 2, OUT_Y 8, PAD 1: 128 threads for 196 taps) and
a mix (8 x 4, 2 x 4 outputs, padded, LOAD_FLAT 1 where lifted), every all-ends corner under
WORKBENCH_FULL_MATRIX=1.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import held_back_unseen17
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.apron_flat import flat_windows
from workbench.templater.inline_calls import InlinedSource

FOLDER = held_back_unseen17.SET.root / "corr7x7_bank4"

#: The same correlation by another hand: constexpr sizes, the window loaded by two loops
#: strided by the block, the filters in a 2-D shared array, the taps read inline.
SPELLING = """constexpr int T = 16, HALO = 3, SW = T + 2 * HALO, NW = 4, K = 7;
extern "C" __global__ void corr7x7_bank4(float* __restrict__ out, const float* __restrict__ img,
                                         const float* __restrict__ filt, int H, int W) {
  __shared__ float win[SW * SW];
  __shared__ float wt[NW][K * K];
  for (int r = threadIdx.y; r < SW; r += T)
    for (int c = threadIdx.x; c < SW; c += T) {
      int gy = (int)blockIdx.y * T + r - HALO, gx = (int)blockIdx.x * T + c - HALO;
      float v = 0.0f;
      if (gy >= 0 && gy < H && gx >= 0 && gx < W) v = img[gy * W + gx];
      win[r * SW + c] = v;
    }
  for (int q = threadIdx.y * T + threadIdx.x; q < NW * K * K; q += T * T)
    wt[q / (K * K)][q % (K * K)] = filt[q];
  __syncthreads();
  int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
  if (x < W && y < H) {
    float s[NW] = {};
    for (int i = 0; i < K; i++)
      for (int j = 0; j < K; j++)
        for (int f = 0; f < NW; f++)
          s[f] += wt[f][i * K + j] * win[(threadIdx.y + i) * SW + threadIdx.x + j];
    for (int f = 0; f < NW; f++) out[(f * H + y) * W + x] = s[f];
  }
}
"""


#: Another hand: the flat window through an index macro, loaded by a nest of loops strided by
#: the block, the filters by a loop strided by the block's threads, the thread's indices in
#: locals.
SECOND = """#define TS 16
#define HALO 3
#define SPAN (TS + 2 * HALO)
#define NFILT 4
#define KW 7
#define IDX(r, c) ((r) * SPAN + (c))
extern "C" __global__ void corr7x7_bank4(float* __restrict__ out, const float* __restrict__ img,
                                         const float* __restrict__ filt, int H, int W) {
  __shared__ float patch[SPAN * SPAN];
  __shared__ float bank[NFILT * KW * KW];
  const int ly = threadIdx.y, lx = threadIdx.x;
  for (int r = ly; r < SPAN; r += TS)
    for (int c = lx; c < SPAN; c += TS) {
      const int gr = blockIdx.y * TS + r - HALO, gc = blockIdx.x * TS + c - HALO;
      const bool in = gr >= 0 && gr < H && gc >= 0 && gc < W;
      patch[IDX(r, c)] = in ? img[gr * W + gc] : 0.0f;
    }
  for (int k = ly * TS + lx; k < NFILT * KW * KW; k += TS * TS) bank[k] = filt[k];
  __syncthreads();
  const int row = blockIdx.y * TS + ly, col = blockIdx.x * TS + lx;
  if (row < H && col < W) {
    float sum[NFILT];
    for (int f = 0; f < NFILT; f++) sum[f] = 0.0f;
    for (int i = 0; i < KW; i++)
      for (int j = 0; j < KW; j++) {
        const float p = patch[IDX(ly + i, lx + j)];
        for (int f = 0; f < NFILT; f++) sum[f] += bank[(f * KW + i) * KW + j] * p;
      }
    for (int f = 0; f < NFILT; f++) out[((size_t)f * H + row) * W + col] = sum[f];
  }
}
"""
#: The second hand's index as a helper function (inlined as ``(int)(r * SPAN + c)``).
HELPER = SECOND.replace("#define IDX(r, c) ((r) * SPAN + (c))",
                        "__device__ __forceinline__ int idx(int r, int c) { return r * SPAN + c; }"
                        ).replace("IDX(", "idx(")
#: A mix: fewer threads than taps (32 for 196), two columns and four rows a thread, padded.
MIX = {"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 4, "PAD": 1}


#: The window a 2-D tile loaded by a flat loop, the four filters read from global memory, the
#: sums in a thread's own array: the apron family's form, the accumulators as the folder's.
TILED = """#define TX 16
#define TY 16
#define R 3
extern "C" __global__ void corr7x7_bank4(float* __restrict__ out, const float* __restrict__ img,
                                         const float* __restrict__ filt, int H, int W) {
  __shared__ float tile[TY + 2 * R][TX + 2 * R];
  for (int e = threadIdx.y * TX + threadIdx.x; e < (TY + 2 * R) * (TX + 2 * R);
       e += TX * TY) {
    const int py = e / (TX + 2 * R), px = e % (TX + 2 * R);
    const int gy = (int)(blockIdx.y * TY) + py - R, gx = (int)(blockIdx.x * TX) + px - R;
    tile[py][px] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? img[gy * W + gx] : 0.0f;
  }
  __syncthreads();
  const int y = blockIdx.y * TY + threadIdx.y, x = blockIdx.x * TX + threadIdx.x;
  if (y >= H || x >= W) return;
  float acc[4];
  for (int f = 0; f < 4; ++f) acc[f] = 0.0f;
  for (int dy = 0; dy <= 2 * R; ++dy)
    for (int dx = 0; dx <= 2 * R; ++dx) {
      float v = tile[threadIdx.y + dy][threadIdx.x + dx];
      for (int f = 0; f < 4; ++f) acc[f] += filt[(f * 7 + dy) * 7 + dx] * v;
    }
  for (int f = 0; f < 4; ++f) out[((size_t)f * H + y) * W + x] = acc[f];
}
"""
#: The expert's H200 pick (BX 64, BY 2, RY 8, PAD 1) in the lift's knobs.
EXPERT_PICK = {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_X": 1, "OUT_Y": 8, "PAD": 1}


def _apron_notes(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if n.startswith("OUT_XY: ")]




def test_the_folders_flat_window_and_shared_filters_lift_the_experts_knobs() -> None:
    result = offline_template(load_kernel_folder(FOLDER))
    assert {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD"} <= set(result.template.param_names), \
        result.notes
    assert result.lifted.grid == ("ceil_div(W, BLOCK_X * OUT_X)", "ceil_div(H, BLOCK_Y * OUT_Y)")
    # USE_SMEM (respell round 31: a flat load's value read at its position too)
    assert "USE_SMEM == 0 or 4 * (BLOCK_Y * OUT_Y + 6) * (BLOCK_X * OUT_X + 6 + PAD) + 784 " \
        "<= 49152" in result.lifted.constraints
    assert not {"BLOCK_X == 16", "BLOCK_Y == 16"} & set(result.lifted.constraints)
    src = result.lifted.source
    assert "__shared__ float tile[USE_SMEM ? BLOCK_Y * OUT_Y + 6 : 1][USE_SMEM ? BLOCK_X * " \
        "OUT_X + 6 + PAD : 1];" in src
    # the taps' fill as written, run for each of the written block's 256 flat indices
    assert ("for (int wb_s = (int)threadIdx.y * BLOCK_X + (int)threadIdx.x; wb_s < 256; "
            "wb_s += BLOCK_X * BLOCK_Y) { const int tid = wb_s; if (tid < NF * TAPS) "
            "taps[tid] = filt[tid]; }") in src


@pytest.mark.parametrize("which", ["second", "helper"])
def test_a_second_hands_flat_window_lifts_the_same_knobs(tmp_path: Path, which: str) -> None:
    result = offline_template(respelled(FOLDER, tmp_path, SECOND if which == "second"
                                        else HELPER))
    assert {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD"} <= set(result.template.param_names), \
        result.notes
    src = result.lifted.source
    assert "__shared__ float patch[BLOCK_Y * OUT_Y + 6][BLOCK_X * OUT_X + 6 + PAD];" in src
    assert ("for (int k = (int)threadIdx.y * BLOCK_X + (int)threadIdx.x; k < NFILT * KW * KW; "
            "k += BLOCK_X * BLOCK_Y) bank[k] = filt[k];") in src


def test_a_spelling_whose_load_branches_is_named_with_the_line(tmp_path: Path) -> None:
    kf = respelled(FOLDER, tmp_path, SPELLING)
    notes = _apron_notes(offline_template(kf).notes)
    assert notes == ["OUT_XY: not applied: the tile load's body is not declarations and one "
                     "store (line 11)"], notes


def _spelling(tmp_path: Path) -> KernelFolder:
    return respelled(FOLDER, tmp_path / "spelling", SPELLING)


def test_one_constant_for_both_block_sizes_holds_them_at_its_value(tmp_path: Path) -> None:
    held = ("T: not applied: its uses were lifted to different parameters (BLOCK_X, BLOCK_Y); "
            "left as written, so BLOCK_X, BLOCK_Y held at 16: `T` is also read where no "
            "transform lifted it (line 4) (line 1)")
    result = offline_template(_spelling(tmp_path))
    assert held in result.notes, result.notes
    assert {"BLOCK_X == 16", "BLOCK_Y == 16"} <= set(result.lifted.constraints)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("which", ["folder", "second", "helper"])
def test_the_apron_lift_computes_as_written(tmp_path: Path, which: str,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(FOLDER) if which == "folder" else \
        respelled(FOLDER, tmp_path / which, SECOND if which == "second" else HELPER)
    template = offline_template(kf).template
    default = dict(template.default_config())
    mix = {**default, **MIX, **({"LOAD_FLAT": 1} if "LOAD_FLAT" in default else {})}
    configs = [default, {**default, **EXPERT_PICK}, mix]
    if FULL_MATRIX:
        configs += end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert same_as_written(kf, template, configs, held_back_unseen17.SET.host_source,
                           tmp_path / "runs", host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_held_lift_computes_as_written_and_the_excluded_block_does_not(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _spelling(tmp_path)
    template = offline_template(kf).template
    space = template.space(dict(kf.env(kf.check_shape, "fp32")))
    valid = [c for c in (dict(zip(template.param_names, combo, strict=True)) for combo in
                         itertools.product(*(p.values() for p in template.params)))
             if space.rejection(c) is None]
    assert {(c["BLOCK_X"], c["BLOCK_Y"]) for c in valid} == {(16, 16)}
    configs = [dict(template.default_config()), valid[-1]]
    assert same_as_written(kf, template, configs, held_back_unseen17.SET.host_source,
                           tmp_path / "ok", host_flags) == 2
    excluded = {**template.default_config(), "BLOCK_X": 8, "BLOCK_Y": 8}
    with pytest.raises(AssertionError, match="out differs"):
        same_as_written(kf, template, [excluded], held_back_unseen17.SET.host_source,
                        tmp_path / "excluded", host_flags)


def test_a_threads_own_accumulator_array_leaves_the_apron_lift_standing(tmp_path: Path) -> None:
    result = offline_template(respelled(FOLDER, tmp_path, TILED))
    assert {"OUT_X", "OUT_Y", "PAD"} <= set(result.template.param_names), result.notes
    assert "ceil_div(H, BLOCK_Y * OUT_Y)" in result.lifted.grid


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_tiled_spelling_computes_as_written(tmp_path: Path,
                                                host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "tiled", TILED)
    template = offline_template(kf).template
    configs = [dict(template.default_config()), {**template.default_config(), **EXPERT_PICK}]
    if FULL_MATRIX:
        configs += end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert same_as_written(kf, template, configs, held_back_unseen17.SET.host_source,
                           tmp_path / "runs", host_flags) == len(configs)


@pytest.mark.parametrize(("fill", "reason"), [
    # a table per block: the lifted block covers other outputs, so it is no table
    ("if (tid < NF * TAPS) taps[tid] = filt[tid + blockIdx.x];",
     "`blockIdx.x` in a shared table's fill reads the thread or the block (each entry is "
     "filled by the same code at any block shape only through the flat thread index) "
     "(line 26)"),
    # the thread read by its coordinates: which entries a thread fills follows the block
    ("if (threadIdx.y == 0 && threadIdx.x < 14) for (int k = 0; k < 14; ++k) "
     "taps[threadIdx.x * 14 + k] = filt[threadIdx.x * 14 + k];",
     "`if (threadIdx.y == 0 && threadIdx.x < 14) for (int k = 0; k < 14; ++k) "
     "taps[threadIdx.x * 14 + k] = filt[threadIdx.x * 14 + k];` fills a shared table but "
     "reads the thread other than through one local holding its flat index (threadIdx.y * "
     "16 + threadIdx.x) (line 26)")])
def test_a_table_filled_other_than_by_the_flat_index_refuses_with_the_line(
        tmp_path: Path, fill: str, reason: str) -> None:
    source = FOLDER.joinpath("corr7x7_bank4.cu").read_text()
    written = "if (tid < NF * TAPS) taps[tid] = filt[tid];"
    assert written in source
    result = offline_template(respelled(FOLDER, tmp_path, source.replace(written, fill)))
    assert "OUT_X" not in result.template.param_names
    assert _apron_notes(result.notes) == [f"OUT_XY: not applied: {reason}"], result.notes


def test_a_row_or_column_with_a_subtraction_is_its_own_int_index() -> None:
    """``threadIdx.x - 1`` is unsigned: as its own index it would wrap to 2^32 - 1, where the
    flat sum's 32-bit arithmetic wrapped back; cast to int it is -1, the same element."""
    source = """#define S 18
extern "C" __global__ void k(float* out, const float* in) {
  __shared__ float t[S * S];
  t[threadIdx.y * S + threadIdx.x] = in[threadIdx.y * S + threadIdx.x];
  __syncthreads();
  out[threadIdx.y * 16 + threadIdx.x] = t[(threadIdx.y + 1) * S + threadIdx.x - 1 + 2];
}
"""
    text = flat_windows(InlinedSource(source, "k.cu"), "k").text
    assert "__shared__ float t[S][S];" in text
    assert "t[threadIdx.y][threadIdx.x] = in[" in text
    assert "t[(threadIdx.y + 1)][(int)(threadIdx.x - 1 + 2)]" in text
