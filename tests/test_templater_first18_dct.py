"""First contact with held-back set 18's 8 x 8 block DCT (issue 28):
benchmarks/corpus_compute_unseen18/dct8x8_blocks runs one 8 x 8 image block a CTA of 8 x 8
threads (three 8 x 8 ``__shared__`` arrays: a cosine table every CTA computes, the pixels,
the row transforms; two barriers; two 8-term dot products across the tile). Nothing was
lifted (the block lift: "the block size 8 appears nowhere in the kernel and blockDim.x is not
read"); the expert's knobs are image tiles a CTA across and down (TX, TY), rows a thread (RPT)
and shared-row padding (PAD). Spelled with a plain ``#define N 8``, the tied-tiles family
made N a tile knob (TILE 8, 16, 32): a 16 x 16 DCT is another transform, wrong wherever the
shape admits it.

:mod:`workbench.templater.tile_batch` (a CTA per fixed-size data tile) now lifts TX, TY, RPT,
PAD for the plain spelling and for a second hand's (an 8 x 8 Walsh-Hadamard transform over
flat ``t[S * S]`` tiles, ``constexpr`` sizes, ``blockDim`` read for the row stride and the loop
bounds, no table), a third's (the table flat and filled under the expert's ``if (tid < 64)``),
a fourth's (two tables: one filled by a loop in the first thread row, one after the first
barrier) and the folder itself (its ``jpeg::dct_block<8>`` opened and inlined by
:mod:`workbench.templater.inline_namespaces`). Each table is filled once a CTA, every thread
of the written CTA by the CTA's flat index, ahead of its phase's rows (filled by tile 0 inside
the rows, each of the RPT row copies carried a cosf; the H200 probe of 12:32Z had the lift at
the expert's pick 1.6x the expert's time). Host (g++): each at the default and a mix (TX 2,
TY 4, RPT 2, PAD 1: 56 columns over 16, the last CTA half past the image, its tiles skipped),
the folder at the expert's H200 pick (TX 4, TY 8, RPT 8, PAD 0) too, bit for bit against the
kernel as written; under WORKBENCH_FULL_MATRIX=1 each at the pick and every all-ends corner.
Without rows a thread (a local read across a barrier) the lift is one pass, the tiles past
the grid clamped: host at the mix.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen18
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

FOLDER = held_back_unseen18.SET.root / "dct8x8_blocks"

#: The folder's kernel with its body in the kernel and the block's edge a macro.
PLAIN = """#define N 8
extern "C" __global__ void dct8x8_blocks(float* out, const float* in, int H, int W) {
  __shared__ float ctab[N][N];
  __shared__ float pix[N][N];
  __shared__ float rows[N][N];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const size_t at = (size_t)(blockIdx.y * N + ty) * W + blockIdx.x * N + tx;
  ctab[ty][tx] = (ty == 0 ? 0.35355339f : 0.5f) * cosf((2 * tx + 1) * ty * 3.14159265f / (2 * N));
  pix[ty][tx] = in[at];
  __syncthreads();
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < N; ++k) s += pix[ty][k] * ctab[tx][k];
  rows[ty][tx] = s;
  __syncthreads();
  float t = 0.0f;
#pragma unroll
  for (int k = 0; k < N; ++k) t += ctab[ty][k] * rows[k][tx];
  out[at] = t;
}
"""

#: Another hand, another per-tile transform: an 8 x 8 Walsh-Hadamard (signs by the parity of
#: the index's bits) over flat tiles, constexpr sizes, blockDim read, no table; the last
#: phase reads ``at``, which reads ``gr`` and ``gc`` (recomputed there too).
SECOND = """constexpr int S = 8;
extern "C" __global__ void dct8x8_blocks(float* out, const float* in, int H, int W) {
  __shared__ float t[S * S];
  __shared__ float u[S * S];
  const int c = threadIdx.x, r = threadIdx.y;
  const int w = blockDim.x;
  int gr = blockIdx.y * blockDim.y + r;
  int gc = blockIdx.x * blockDim.x + c;
  const int at = gr * W + gc;
  t[r * w + c] = in[at] * 0.125f;
  __syncthreads();
  float across = 0.f;
  for (int k = 0; k < blockDim.x; k++) {
    int p = c & k;
    p ^= p >> 2;
    p ^= p >> 1;
    across += (p & 1) ? -t[r * w + k] : t[r * w + k];
  }
  u[r * w + c] = across;
  __syncthreads();
  float down = 0.f;
  for (int k = 0; k < blockDim.y; k++) {
    int p = r & k;
    p ^= p >> 2;
    p ^= p >> 1;
    down += (p & 1) ? -u[k * w + c] : u[k * w + c];
  }
  out[at] = down;
}
"""

#: A third hand: the table flat, filled as the expert fills it (a guard on the flat thread
#: index, the entry's indices in locals the guard's block declares), the tiles 2-D.
THIRD = """#define B 8
extern "C" __global__ void dct8x8_blocks(float* out, const float* in, int H, int W) {
  __shared__ float cosv[B * B];
  __shared__ float px[B][B];
  __shared__ float tmp[B][B];
  const int tid = threadIdx.y * B + threadIdx.x;
  if (tid < B * B) {
    const int u = tid / B, k = tid % B;
    cosv[u * B + k] = (u == 0 ? 0.35355339f : 0.5f) * cosf((2 * k + 1) * u * 3.14159265f / 16);
  }
  const int gx = blockIdx.x * B + threadIdx.x, gy = blockIdx.y * B + threadIdx.y;
  px[threadIdx.y][threadIdx.x] = in[(size_t)gy * W + gx];
  __syncthreads();
  float s = 0.0f;
  for (int k = 0; k < B; ++k) s += px[threadIdx.y][k] * cosv[threadIdx.x * B + k];
  tmp[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  float t = 0.0f;
  for (int k = 0; k < B; ++k) t += cosv[threadIdx.y * B + k] * tmp[k][threadIdx.x];
  out[(size_t)gy * W + gx] = t;
}
"""

#: A fourth hand: two tables, the cosines ``cosT[x][u]`` filled by the first thread row, a
#: loop of eight a thread, and the scales ``amp`` filled after the first barrier (read after
#: the second) by the first eight flat indices; flat pixel tiles, a long index.
FOURTH = """#define BS 8
extern "C" __global__ void dct8x8_blocks(float* out, const float* in, int H, int W) {
  __shared__ float cosT[BS][BS];  // cosT[x][u]: the cosine, the scale apart
  __shared__ float amp[BS];
  __shared__ float blk[BS * BS];
  __shared__ float mid[BS * BS];
  const int x = threadIdx.x, y = threadIdx.y;
  const int lin = y * BS + x;
  if (y == 0) {
    for (int u = 0; u < BS; u++) cosT[x][u] = cosf((2 * x + 1) * u * 3.14159265f / 16);
  }
  const long g = (long)(blockIdx.y * BS + y) * W + (blockIdx.x * BS + x);
  blk[lin] = in[g];
  __syncthreads();
  if (lin < BS) amp[lin] = lin == 0 ? 0.35355339f : 0.5f;
  float acc = 0.f;
  for (int k = 0; k < BS; k++) acc += blk[y * BS + k] * cosT[k][x];
  mid[lin] = acc;
  __syncthreads();
  float res = 0.f;
  for (int k = 0; k < BS; k++) res += cosT[k][y] * mid[k * BS + x];
  out[g] = amp[y] * amp[x] * res;
}
"""

#: The expert's H200 pick (PAD 0, RPT 8, TX 4, TY 8), spelled in the lift's knobs alike.
EXPERT_PICK = {"TX": 4, "TY": 8, "RPT": 8, "PAD": 0}
#: Two tiles across (56 columns over 16: the last CTA's second tile clamped), four down over
#: 16 threads of two rows each, padded.
MIX = {"TX": 2, "TY": 4, "RPT": 2, "PAD": 1}
KNOBS = {"TX", "TY", "RPT", "PAD"}

#: A table's fill as lifted: every thread of the written 8 x 8 CTA, by the CTA's flat index.
FILL = ("for (int wb_e = threadIdx.y * (8 * TX) + threadIdx.x; wb_e < 64; "
        "wb_e += 8 * TX * (8 * TY / RPT)) {")



def _folder(which: str, root: Path) -> KernelFolder:
    if which == "folder":
        return load_kernel_folder(FOLDER)
    return respelled(FOLDER, root / which, {"plain": PLAIN, "second": SECOND, "third": THIRD,
                                             "fourth": FOURTH}[which])


def test_the_folders_template_function_lifts_the_experts_knobs(tmp_path: Path) -> None:
    result = offline_template(_folder("folder", tmp_path))
    assert set(result.template.param_names) >= KNOBS, result.notes
    assert result.lifted.block == ("8 * TX", "8 * TY / RPT")
    src = result.lifted.source
    assert "__shared__ float ctab[N][N];" in src and "jpeg::" not in src
    assert "__shared__ float rows[8 * TY][8 * TX + PAD];" in src


def test_the_plain_spelling_lifts_the_experts_knobs_and_keeps_the_tile(tmp_path: Path) -> None:
    result = offline_template(_folder("plain", tmp_path))
    assert set(result.template.param_names) >= KNOBS, result.notes
    assert "TILE" not in result.template.param_names
    assert result.lifted.grid == ("ceil_div(ceil_div(W, 8), TX)", "ceil_div(ceil_div(H, 8), TY)")
    assert result.lifted.block == ("8 * TX", "8 * TY / RPT")
    src = result.lifted.source
    assert "__shared__ float ctab[N][N];" in src  # the table: one a CTA
    assert "__shared__ float pix[8 * TY][8 * TX + PAD];" in src
    assert FILL in src and "wb_tx == 0" not in src  # once a CTA, outside the rows
    assert src.index(FILL) < src.index("#pragma unroll\n    for (int wb_j")
    assert "rows[wb_ty * 8 + (k)][wb_tx * 8 + (tx)]" in src
    assert "#define N 8" in src


def test_a_second_hands_flat_tiles_lift_the_same_knobs(tmp_path: Path) -> None:
    result = offline_template(_folder("second", tmp_path))
    assert set(result.template.param_names) >= KNOBS, result.notes
    src = result.lifted.source
    assert "__shared__ float t[(64 + PAD) * TX * TY];" in src
    assert "for (int k = 0; k < 8; k++)" in src  # blockDim.x: the tile's edge


def test_a_table_filled_under_a_guard_stays_one_a_cta(tmp_path: Path) -> None:
    result = offline_template(_folder("third", tmp_path))
    assert set(result.template.param_names) >= KNOBS, result.notes
    src = result.lifted.source
    assert "__shared__ float cosv[B * B];" in src
    assert f"{FILL}\n    const unsigned wb_ex = wb_e % 8, wb_ey = wb_e / 8;\n" \
        "    const int tid = wb_ey * B + wb_ex;\n    if (tid < B * B) {" in src
    assert "__shared__ float tmp[8 * TY][8 * TX + PAD];" in src


def test_tables_are_filled_once_a_cta_at_the_head_of_their_phase(tmp_path: Path) -> None:
    result = offline_template(_folder("fourth", tmp_path))
    assert set(result.template.param_names) >= KNOBS, result.notes
    assert "tables cosT, amp one a CTA, filled once by its threads" in result.notes[0]
    src = result.lifted.source
    cos_fill = src.index(FILL)
    amp_fill = src.index(FILL, cos_fill + 1)
    barriers = [i for i in range(len(src)) if src.startswith("__syncthreads();", i)]
    assert cos_fill < barriers[0] < amp_fill < barriers[1]  # each fill in its own phase
    assert src.index("    if (y == 0) {\n    for (int u = 0; u < BS; u++) cosT[x][u]") > cos_fill
    assert ("const int lin = y * BS + x;\n    if (lin < BS) amp[lin] = "
            "lin == 0 ? 0.35355339f : 0.5f;\n  }\n  if (wb_whole) {") in src
    assert src.count("cosf(") == 1  # neither in the rows nor in the edge CTAs' copy


@pytest.mark.parametrize(("change", "spelled", "want"), [
    ("  out[at] = t;\n", "  out[at] += t;\n",
     "`out` is read and written: a CTA's clamped duplicate of the last tile would read what it "
     "stored (line 19)"),
    ("  out[at] = t;\n", "  *(out + at) = t;\n",
     "`out + at` reads the argument `out` other than through a subscript (what it writes is "
     "not followed) (line 19)"),
    ("  out[at] = t;\n", "  out[at] = t;\n  hits[0] = 1;\n",
     "`hits[0]` writes `hits`, no argument, local or shared array of the kernel (a clamped "
     "duplicate tile would write it again) (line 21)"),
    # a return after the last barrier: the thread would skip its CTA's later tiles
    ("  out[at] = t;\n", "  if (at < 0) return;\n  out[at] = t;\n",
     "a `return` that is no whole tile's exit before the first barrier (`if (test) { ..; "
     "return; }` at the top level, its test reading no thread's place): a thread that leaves "
     "would skip the tiles its CTA runs after this one, and their barriers (line 19)"),
    ("  __syncthreads();\n  float t", "  if (H > 0) __syncthreads();\n  float t",
     "a barrier inside a statement (each must be a top-level statement for the tiles of a CTA "
     "to meet it alike) (line 15)"),
])
def test_what_the_virtual_ctas_cannot_be_refuses_with_the_line(tmp_path: Path, change: str,
                                                               spelled: str, want: str) -> None:
    assert change in PLAIN
    source = ("__device__ int hits[1];\n" if "hits" in spelled else "") + \
        PLAIN.replace(change, spelled)
    try:
        result = offline_template(respelled(FOLDER, tmp_path, source))
        assert "TX" not in result.template.param_names
        all_notes = list(result.notes)
    except TemplateError as nothing:  # no other family lifts it either
        all_notes = list(nothing.details["findings"])
    notes = [n for n in all_notes if n.startswith("TX: not applied")]
    assert notes == [f"TX: not applied: {want}"], all_notes


#: ``s`` read after the second barrier: no rows a thread, one pass (tiles past the grid clamped).
ACROSS = PLAIN.replace("  float t = 0.0f;\n", "  float t = s - s;\n")
#: The sums an array no row register holds (session 32: a scalar one is, ``s[RPT]``).
ACROSS_ARRAY = ACROSS.replace("  float s = 0.0f;\n", "  float s[2] = {0.0f, 0.0f};\n").replace(
    "s += pix[ty][k]", "s[k & 1] += pix[ty][k]").replace(
    "rows[ty][tx] = s;", "rows[ty][tx] = s[0] + s[1];").replace("s - s;", "s[0] - s[1];")


def test_a_local_living_across_a_barrier_is_a_register_a_row(tmp_path: Path) -> None:
    result = offline_template(respelled(FOLDER, tmp_path, ACROSS))
    assert {"TX", "TY", "PAD", "RPT"} <= set(result.template.param_names), result.notes
    assert "float s[RPT];" in result.template.source


def test_an_array_living_across_a_barrier_keeps_rows_a_thread_out(tmp_path: Path) -> None:
    result = offline_template(respelled(FOLDER, tmp_path, ACROSS_ARRAY))
    assert {"TX", "TY", "PAD"} <= set(result.template.param_names), result.notes
    assert "RPT" not in result.template.param_names
    assert ("RPT: not applied: `s` lives across a barrier and is not a scalar declared alone: "
            "rows a thread would need one a row (line 11)") in result.notes, result.notes


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("which", ["folder", "plain", "second", "third", "fourth"])
def test_the_tile_batch_lift_computes_as_written(tmp_path: Path, which: str,
                                                 host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(which, tmp_path)
    template = offline_template(kf).template
    default = dict(template.default_config())
    # the folder at the expert's pick too (the kernel the GPU tunes); the others' by default
    # a mix only, their pick and every all-ends config under WORKBENCH_FULL_MATRIX=1
    configs = [default, {**default, **MIX}]
    if which == "folder" or FULL_MATRIX:
        configs.append({**default, **EXPERT_PICK})
    if FULL_MATRIX:
        configs += end_configs(template, kf.env(kf.check_shape, "fp32"))
    assert same_as_written(kf, template, configs, held_back_unseen18.SET.host_source,
                           tmp_path / "runs", host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_one_pass_lift_clamps_the_tiles_past_the_grid(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(FOLDER, tmp_path / "across", ACROSS_ARRAY)
    template = offline_template(kf).template
    src = template.render(dict(template.default_config()), "fp32").source
    assert "const unsigned wb_by = TY == 1 || wb_byv < wb_gy ? wb_byv : wb_gy - 1;" in src
    mix = {**template.default_config(), "TX": 2, "TY": 4, "PAD": 1}  # 56 x 40 over 16 x 32
    assert same_as_written(kf, template, [mix], held_back_unseen18.SET.host_source,
                           tmp_path / "runs", host_flags) == 1
