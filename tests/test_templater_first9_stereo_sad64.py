"""stereo_sad64 at first contact (issue 28, held-back set 9): a window sum per candidate,
folded into a best match, lifts the register window (:mod:`workbench.templater.conv` with
:mod:`workbench.templater.conv_fold`).

As measured on the H100 the lift was the generic BLOCK_X, BLOCK_Y, ITEMS_X, ITEMS_Y,
BRANCHLESS, MIN_BLOCKS_PER_SM (0.99x) against the expert's 4.56x (16 x 8 threads, 8 pixels a
thread sharing their window's differences, shared tiles). The window family refused the
kernel three times over: the argmin after each disparity's taps (line 33: only
declarations were modelled around the taps), the cost declared in the disparity loop, and
the tap |left - right| reading two inputs. Now each thread takes OUT_Y x OUT_X pixels whose
differences it forms once per window row and column, and folds each pixel's cost into its
own best_cost, best_d after each disparity. Two other spellings (a running maximum through
fmaxf over scales of a zero-padded float window; a threshold count over a running total
declared before the loop; the folder's kernel with its body in the guard's block, the
state declared there) lift the same knobs, and so does a window over the product of two
inputs (test_templater_conv's refusal "one input is modelled" until now; no shared tile:
a tile holds one input's elements); folds that read memory, write the output, keep a state
the kernel also sets elsewhere or sit in a loop that is not a channel loop are refused with
the line. Every checked config prints,
bit for bit, what the kernel as written prints on the host.

Measured on the H100 (21:09Z) that lift tuned to 2.35x against the expert's 4.56x (sm_90
ptxas, the disparity loop: at the tune's pick, 32 x 2 threads of 2 x 4 pixels, 568
instructions and 91 global loads for 8 pixels; the expert at its pick, 16 x 8 threads of 8
pixels from its shared tiles, 325 instructions and 60 shared loads): every disparity
re-read the left window, OUT_X stopped at 4 (the expert takes 8), a bounds test per tap and
disparity kept predicates live, and the two images had no shared tiles ("a tile stages one
input's elements"). Now the reads the disparity does not change are kept in registers
across it (KEPT_READS, :mod:`workbench.templater.conv_fold_keep`), OUT_X reaches 8 where
the registers the thread keeps fit, a thread whose every output passes the check runs the
taps without the test, and each image read gets a shared tile with its own halo (right's
63 columns wider for the disparities, :mod:`workbench.templater.conv_fold_tiles`): at the
tune's pick 412 instructions and 48 global loads (293 and 48 shared loads tiled), at the
expert's pick 322 instructions and 60 shared loads. A sum of squared differences through a
clamped read-only helper, its state in a guard's block, and the folder's kernel with the
disparities counted down lift the same way (a window loop counted down is refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen9
import pytest
from helpers_templater import FULL_MATRIX, end_configs
from test_templater_const_via import assert_prints_as_written, write_folder

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.records import TemplaterResult

STEREO = held_back_unseen9.ROOT / "stereo_sad64"
WINDOW = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "MIN_BLOCKS_PER_SM"}

#: the best scale of a zero-padded 3 x 3 float window, a running maximum through fmaxf
MAX_SCALE = r"""
constexpr int SCALES = 6;
extern "C" __global__ void k(float* out, const float* img, const float* gain, int h, int w) {
  int col = blockIdx.x * 32 + threadIdx.x;
  int row = blockIdx.y * 4 + threadIdx.y;
  if (row >= h || col >= w) return;
  float best = -1e30f;
  for (int s = 0; s < SCALES; ++s) {
    float resp = 0.0f;
    for (int i = -1; i <= 1; ++i) {
      for (int j = -1; j <= 1; ++j) {
        int r = row + i, c = col + j;
        if (r >= 0 && r < h && c >= 0 && c < w)
          resp += gain[s * 9 + (i + 1) * 3 + (j + 1)] * img[r * w + c];
      }
    }
    best = fmaxf(best, resp);
  }
  out[row * w + col] = best;
}
"""
MAX_SCALE_FOLDER = (["ceil_div(w, 32)", "ceil_div(h, 4)"], ["32", "4"],
                    [("out", "f32", "out", ["h", "w"]), ("img", "f32", "in", ["h", "w"]),
                     ("gain", "f32", "in", [54]), ("h", "i32", "scalar", "h"),
                     ("w", "i32", "scalar", "w")], {"h": 13, "w": 70})

#: how many of 8 thresholds a clamped 3 x 5 window's running total passes (the total is
#: declared before the loop and kept across thresholds; the count is the state)
COUNT_PASSES = r"""
#define T 8
__device__ int clamp_hi(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }
extern "C" __global__ void k(int* hits, const float* a, const float* b, int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float total = 0.0f;
  int count = 0;
  for (int t = 0; t < T; t++) {
    for (int dy = 0; dy < 3; dy++) {
      for (int dx = 0; dx < 5; dx++) {
        total += fabsf(a[clamp_hi(y + dy - 1, h - 1) * w + clamp_hi(x + dx - 2, w - 1)] -
                       b[clamp_hi(y + dy - 1, h - 1) * w + clamp_hi(x + dx - 2 - t, w - 1)]);
      }
    }
    count += total > 4.0f * (float)t ? 1 : 0;
  }
  hits[y * w + x] = count;
}
"""
COUNT_FOLDER = (["ceil_div(w, 16)", "ceil_div(h, 8)"], ["16", "8"],
                [("hits", "i32", "out", ["h", "w"]), ("a", "f32", "in", ["h", "w"]),
                 ("b", "f32", "in", ["h", "w"]), ("h", "i32", "scalar", "h"),
                 ("w", "i32", "scalar", "w")], {"h": 11, "w": 37})


#: a zero-padded 3 x 3 window of the product of two inputs, no fold (test_templater_conv's
#: refusal "one input is modelled" before this change)
TWO_INPUTS = r"""
extern "C" __global__ void k(float* out, const float* a, const float* b, int h, int w) {
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.0f;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (y + i < h && x + j < w) acc += a[(y + i) * w + x + j] * b[(y + i) * w + x + j];
  out[y * w + x] = acc;
}
"""
TWO_INPUTS_FOLDER = (["ceil_div(w, 16)", "ceil_div(h, 16)"], ["16", "16"],
                     [("out", "f32", "out", ["h", "w"]), ("a", "f32", "in", ["h", "w"]),
                      ("b", "f32", "in", ["h", "w"]), ("h", "i32", "scalar", "h"),
                      ("w", "i32", "scalar", "w")], {"h": 21, "w": 35})


#: the folder's kernel with the rest of the body in the guard's block (`if (x < W && y <
#: H) { ... }`): the state is declared in that block
STEREO_SOURCE = (STEREO / "stereo_sad64.cu").read_text()
_RETURN = "  if (x >= W || y >= H) return;\n"
GUARD_BLOCK = (STEREO_SOURCE[:STEREO_SOURCE.index(_RETURN)] + "  if (x < W && y < H) {\n" +
               STEREO_SOURCE[STEREO_SOURCE.index(_RETURN) + len(_RETURN):
                             STEREO_SOURCE.rindex("}")] + "  }\n}\n").replace(
    "void stereo_sad64(", "void k(")
GUARD_BLOCK_FOLDER = (["ceil_div(W, 16)", "ceil_div(H, 16)"], ["16", "16"],
                      [("disp", "i32", "out", ["H", "W"]), ("left", "u8", "in", ["H", "W"]),
                       ("right", "u8", "in", ["H", "W"]), ("H", "i32", "scalar", "H"),
                       ("W", "i32", "scalar", "W")], {"H": 19, "W": 83})

#: block matching written otherwise: squared differences, the target shifted right, both
#: images read through a clamping read-only helper into locals, an unsigned cost, the body
#: in the guard's block
SSD_HELPER = r"""
#define NDISP 24
#define HALF 1
__device__ __forceinline__ int px(const unsigned char* img, int r, int c, int h, int w) {
  return img[min(max(r, 0), h - 1) * w + min(max(c, 0), w - 1)];
}
extern "C" __global__ void k(int* disp, const unsigned char* ref, const unsigned char* tgt,
                             int h, int w) {
  int col = blockIdx.x * 32 + threadIdx.x;
  int row = blockIdx.y * 4 + threadIdx.y;
  if (row < h && col < w) {
    unsigned best = 0xffffffffu;
    int arg = 0;
    for (int s = 0; s < NDISP; ++s) {
      unsigned ssd = 0u;
      for (int i = -HALF; i <= HALF; ++i) {
        for (int j = -HALF; j <= HALF; ++j) {
          const int a = px(ref, row + i, col + j, h, w);
          const int b = px(tgt, row + i, col + j + s, h, w);
          ssd += (unsigned)((a - b) * (a - b));
        }
      }
      if (ssd < best) {
        best = ssd;
        arg = s;
      }
    }
    disp[row * w + col] = arg;
  }
}
"""
SSD_FOLDER = (["ceil_div(w, 32)", "ceil_div(h, 4)"], ["32", "4"],
              [("disp", "i32", "out", ["h", "w"]), ("ref", "u8", "in", ["h", "w"]),
               ("tgt", "u8", "in", ["h", "w"]), ("h", "i32", "scalar", "h"),
               ("w", "i32", "scalar", "w")], {"h": 13, "w": 45})

#: the folder's kernel with the disparities counted down, the smallest winning a tie by <=
DESCENDING = STEREO_SOURCE.replace("void stereo_sad64(", "void k(").replace(
    "for (int d = 0; d < MAX_DISP; d++) {", "for (int d = MAX_DISP - 1; d >= 0; --d) {").replace(
    "if (cost < best_cost) {", "if (cost <= best_cost) {")

#: the folder's kernel with the window's columns outside its rows, the images indexed in
#: the tap (each output still sums its taps in the written order: columns, then rows)
_ROWS_FIRST = """    for (int dy = -RADIUS; dy <= RADIUS; dy++) {
      const int yy = clampi(y + dy, 0, H - 1);
      const unsigned char* lrow = left + yy * W;
      const unsigned char* rrow = right + yy * W;
      for (int dx = -RADIUS; dx <= RADIUS; dx++) {
        const int xl = clampi(x + dx, 0, W - 1);
        const int xr = clampi(x + dx - d, 0, W - 1);
        cost += abs((int)lrow[xl] - (int)rrow[xr]);"""
_COLUMNS_FIRST = """    for (int dx = -RADIUS; dx <= RADIUS; dx++) {
      const int xl = clampi(x + dx, 0, W - 1);
      const int xr = clampi(x + dx - d, 0, W - 1);
      for (int dy = -RADIUS; dy <= RADIUS; dy++) {
        const int yy = clampi(y + dy, 0, H - 1);
        cost += abs((int)left[yy * W + xl] - (int)right[yy * W + xr]);"""
COLUMNS_FIRST = STEREO_SOURCE.replace("void stereo_sad64(", "void k(").replace(
    _ROWS_FIRST, _COLUMNS_FIRST)

Folder = tuple[list[str], list[str], list[tuple[str, str, str, Any]], dict[str, int]]
#: name -> (source, (grid, block, arguments, check-shape sizes))
SPELLINGS: dict[str, tuple[str, Folder]] = {
    "max_scale": (MAX_SCALE, MAX_SCALE_FOLDER), "count_passes": (COUNT_PASSES, COUNT_FOLDER),
    "two_inputs": (TWO_INPUTS, TWO_INPUTS_FOLDER),
    "guard_block": (GUARD_BLOCK, GUARD_BLOCK_FOLDER),
    "ssd_helper": (SSD_HELPER, SSD_FOLDER),
    "descending": (DESCENDING, GUARD_BLOCK_FOLDER),
    "columns_first": (COLUMNS_FIRST, GUARD_BLOCK_FOLDER),
}


def _spelling(root: Path, name: str) -> tuple[KernelFolder, TemplaterResult]:
    source, (grid, block, args, sizes) = SPELLINGS[name]
    kf = write_folder(root / name, source, grid, block, args, sizes, [])
    return kf, offline_template(kf)


def _lift(root: Path, name: str) -> tuple[KernelFolder, TemplaterResult]:
    if name == "stereo_sad64":
        kf = load_kernel_folder(STEREO)
        return kf, offline_template(kf)
    return _spelling(root, name)


def _note(result: TemplaterResult, head: str) -> str:
    found = [n for n in result.notes if n.startswith(head)]
    assert found, (head, result.notes)
    return found[0]


def _values(result: TemplaterResult, knob: str) -> list[int]:
    return list(dict(next(p for p in result.lifted.params if p.name == knob).spec)["values"])


def test_stereo_lifts_the_window_with_the_argmin_folded_per_pixel() -> None:
    result = offline_template(load_kernel_folder(STEREO))
    assert {p.name for p in result.lifted.params} == WINDOW | {"USE_SMEM"}
    note = _note(result, "OUT_Y: applied")
    assert "the fold after each channel's taps (line 33) runs per output on its own " \
           "best_cost, best_d" in note
    assert "the tap value (of left, right)" in _note(result, "OUT_X: applied")
    # the left window is read once, not once per disparity; 8 pixels a thread where they fit
    assert "`lrow[xl]` (line 30) does not depend on d: loaded once per window input before " \
        "the loop over d" in _note(result, "KEPT_READS: applied")
    assert _values(result, "OUT_X") == [1, 2, 4, 8]
    live = "2 * (5 + OUT_Y - 1) * (5 + OUT_X - 1) + 3 * OUT_Y * OUT_X + 16"
    assert f"BLOCK_X * BLOCK_Y * ({live}) <= 65536" in result.lifted.constraints
    assert f"MIN_BLOCKS_PER_SM == 0 or {live} <= 65536 // ((BLOCK_X * BLOCK_Y) * " \
        "MIN_BLOCKS_PER_SM)" in result.lifted.constraints
    assert "MIN_BLOCKS_PER_SM <= 1 or (BLOCK_X * BLOCK_Y) * MIN_BLOCKS_PER_SM > 256" in \
        result.lifted.constraints
    env = load_kernel_folder(STEREO).env("large", "fp32")
    assert len(result.template.space(env)) == 1188
    # a tile per input read, each with its halo; right's 63 columns more for the disparities
    tiles = _note(result, "USE_SMEM: applied")
    assert "`lrow[xl]` (BLOCK_Y * OUT_Y + 4 x BLOCK_X * OUT_X + 4); `rrow[xr]` (BLOCK_Y * " \
        "OUT_Y + 4 x BLOCK_X * OUT_X + 4, 63 more columns for the loop over d)" in tiles
    assert "USE_SMEM == 0 or 1 * (BLOCK_Y * OUT_Y + 4) * (BLOCK_X * OUT_X + 4 + 0) + 1 * " \
        "(BLOCK_Y * OUT_Y + 4) * (BLOCK_X * OUT_X + 4 + 63) <= 49152" in \
        result.lifted.constraints
    body = result.lifted.source
    assert "int best_d[OUT_Y][OUT_X];" in body and "int wb_acc[OUT_Y][OUT_X];" in body
    assert "unsigned char wb_keep0[5 + OUT_Y - 1][5 + OUT_X - 1];" in body
    assert "abs((int)wb_keep0[wb_r][wb_c] - (int)rrow[xr])" in body and "lrow[xl] -" not in body
    # with USE_SMEM the kept reads are filled from left's tile, right is read from its own at
    # the disparity's column; the fill evaluates the reads at the tile's first disparity
    assert "(unsigned char)(wb_stage0[(int)threadIdx.y * OUT_Y + wb_r][(int)threadIdx.x * " \
        "OUT_X + wb_c])" in body
    assert "(int)wb_stage1[(int)threadIdx.y * OUT_Y + wb_r][(int)threadIdx.x * OUT_X + wb_c + " \
        "-1 * ((d) - ((0) + 63))]" in body
    assert "const int d = (0) + 63;" in body and "wb_first_c = wb_pc > 67 ? wb_pc - 67 : 0;" \
        in body
    # the copy without the test per tap runs where the thread's last output passes
    assert "if (!((x + OUT_X - 1) >= W || (y + OUT_Y - 1) >= H)) {" in body
    assert body.count("for (int d = 0; d < MAX_DISP; d++)") == 4  # (tiles, as read) x 2
    assert "if (wb_acc[wb_k][wb_q] < best_cost[wb_k][wb_q]) {" in body
    assert result.lifted.grid == ("ceil_div(W, BLOCK_X * OUT_X)", "ceil_div(H, BLOCK_Y * OUT_Y)") \
        or list(result.lifted.grid) == ["ceil_div(W, BLOCK_X * OUT_X)",
                                        "ceil_div(H, BLOCK_Y * OUT_Y)"]


@pytest.mark.parametrize("name", ["max_scale", "count_passes", "guard_block", "ssd_helper",
                                  "descending", "columns_first"])
def test_other_folds_lift_the_same_window(name: str, tmp_path: Path) -> None:
    _kf, result = _spelling(tmp_path, name)
    assert {p.name for p in result.lifted.params} >= WINDOW, result.notes
    state = {"max_scale": "best", "count_passes": "count", "guard_block": "best_cost",
             "ssd_helper": "arg, best", "descending": "best_cost",
             "columns_first": "best_cost"}[name]
    assert f"runs per output on its own {state}" in _note(result, "OUT_Y: applied")
    # the read the channel does not move is kept across the channels
    kept = {"max_scale": "`img[r * w + c]` (line 14) does not depend on s",
            # clamp_hi expanded at its calls: a's read (b's moves with t)
            "count_passes": "(x + dx - 2))))]` (line 13) does not depend on t",
            "guard_block": "`lrow[xl]` (line 30) does not depend on d",
            "ssd_helper": "`px(ref, row + i, col + j, h, w)` (line 18) does not depend on s",
            "descending": "`lrow[xl]` (line 30) does not depend on d",
            "columns_first": "`left[yy * W + xl]` (line 28) does not depend on d"}
    assert kept[name] in _note(result, "KEPT_READS: applied")
    assert _values(result, "OUT_X") == [1, 2, 4, 8]
    # a tile per read where no tap is added under a test (max_scale's zero padding is)
    if name == "max_scale":
        assert "a tile per read: the tap is added under `r >= 0 && r < h && c >= 0 && c < w`" \
            in _note(result, "USE_SMEM: not applied")
    else:
        assert "USE_SMEM" in {p.name for p in result.lifted.params}
    if name == "descending":  # right's tile starts at the largest disparity, 0 + 63
        assert "const int d = (0) + 63;" in result.lifted.source
    if name == "columns_first":  # the window's columns walked outside its rows, as written
        body = result.lifted.source
        body = body[body.index("for (int d = 0; d < MAX_DISP; d++)"):]
        assert body.index("for (int wb_c = 0; wb_c < 5 + OUT_X - 1; ++wb_c) {\n      const "
                          "int dx") < body.index("for (int wb_r = 0; wb_r < 5 + OUT_Y - 1; "
                                                 "++wb_r) {\n    const int dy")


#: reads KEPT_READS leaves per channel, in the folder's kernel: (edit, the finding)
KEPT_REFUSALS = [
    # the tap is added only for some disparities: a left read kept for every d would be
    # read where the kernel does not read it
    (("        cost += abs(", "        if (x + dx - d >= 0) cost += abs("),
     "the tap is added under `x + dx - d >= 0`, which depends on d"),
    # the left read on one side of a ?: whose test reads d: no read is taken on every tap
    (("cost += abs((int)lrow[xl] - (int)rrow[xr]);",
      "cost += d > 0 ? abs((int)lrow[xl] - (int)rrow[xr]) : 0;"),
     "no read of the tap is both the same for every d and read on every tap"),
    # the row pointer moves with the disparity: the left read depends on d (and a tile per
    # read refuses `d & 1`: it moves other than along the columns)
    (("const unsigned char* lrow = left + yy * W;",
      "const unsigned char* lrow = left + yy * W + (d & 1);"),
     "no read of the tap is both the same for every d and read on every tap"),
]


def test_a_kept_read_indexed_in_the_rows_from_the_columns_is_not_kept(tmp_path: Path) -> None:
    """Columns outside rows, left's index formed in the rows' loop from the column's xl: the
    fill walks rows outside columns, so the read stays per disparity (the tiles take it)."""
    grid, block, args, sizes = GUARD_BLOCK_FOLDER
    source = COLUMNS_FIRST.replace(
        "        cost += abs((int)left[yy * W + xl]",
        "        const int li = yy * W + xl;\n        cost += abs((int)left[li]")
    assert source != COLUMNS_FIRST
    kf = write_folder(tmp_path / "k", source, grid, block, args, sizes, [])
    result = offline_template(kf)
    assert {p.name for p in result.lifted.params} == WINDOW | {"USE_SMEM"}
    assert "`const int li = yy * W + xl;` (the window rows' loop) reads the column of a read " \
        "kept across the channels: the fill walks the rows outside the columns (line 28)" in \
        _note(result, "KEPT_READS: not applied")


def test_a_window_loop_counted_down_is_refused(tmp_path: Path) -> None:
    """Only the channel loop may count down: the window's rows are walked upwards."""
    grid, block, args, sizes = GUARD_BLOCK_FOLDER
    source = STEREO_SOURCE.replace("void stereo_sad64(", "void k(").replace(
        "for (int dy = -RADIUS; dy <= RADIUS; dy++) {",
        "for (int dy = RADIUS; dy >= -RADIUS; dy--) {")
    kf = write_folder(tmp_path / "k", source, grid, block, args, sizes, [])
    result = offline_template(kf)
    assert "OUT_Y" not in {p.name for p in result.lifted.params}
    assert "the window loop over dy counts down: the window's rows and columns are walked " \
        "upwards (a channel loop may count down) (line 23)" in _note(result, "OUT_Y: not applied")


@pytest.mark.parametrize(("edit", "reason"), KEPT_REFUSALS)
def test_reads_that_move_with_the_channel_are_not_kept(edit: tuple[str, str], reason: str,
                                                       tmp_path: Path) -> None:
    grid, block, args, sizes = GUARD_BLOCK_FOLDER
    source = STEREO_SOURCE.replace("void stereo_sad64(", "void k(")
    assert edit[0] in source
    kf = write_folder(tmp_path / "k", source.replace(edit[0], edit[1]), grid, block, args,
                      sizes, [])
    result = offline_template(kf)
    assert {p.name for p in result.lifted.params} == WINDOW
    assert reason in _note(result, "KEPT_READS: not applied")
    assert "wb_keep" not in result.lifted.source
    assert _values(result, "OUT_X") == [1, 2, 4]


def test_a_tap_of_two_inputs_lifts_the_window_without_a_tile(tmp_path: Path) -> None:
    _kf, result = _spelling(tmp_path, "two_inputs")
    assert {p.name for p in result.lifted.params} == WINDOW
    assert "the tap value (of a, b)" in _note(result, "OUT_Y: applied")
    assert "reads a, b: a tile stages one input's elements; a tile per read: the tap is " \
        "added under `y + i < h && x + j < w`: a tile stages the bare reads of each input " \
        "(line 9)" in _note(result, "USE_SMEM: not applied")


@pytest.mark.parametrize(("edit", "reason"), [
    # the fold reads memory: it would run once per output where it ran once per pixel
    (("best = fmaxf(best, resp);", "best = fmaxf(best, resp * gain[s]);"),
     "the fold `best = fmaxf(best, resp * gain[s]);` after the taps reads memory "
     "(`gain[s]`): a fold of the window sums into locals is modelled (line 17)"),
    # the fold writes the output: a second store
    (("best = fmaxf(best, resp);", "out[row * w + col] = resp;"),
     "the fold writes `out[row * w + col]`: it may write only locals declared before the "
     "loops (the state it keeps) (line 17)"),
    # the state is set from the point before the loop: one variable for the thread's outputs
    (("  float best = -1e30f;\n", "  float best = -1e30f;\n  if (row == 0) best = 0.0f;\n"),
     "the fold's best is used outside the fold and the store: each output keeps its own "
     "copy (line 8)"),
    # a fold after the column loop inside the row loop: not a channel loop
    (("      }\n    }\n    best", "      }\n      resp *= 0.5f;\n    }\n    best"),
     "`resp *= 0.5f;` in the loop over i is neither a declaration nor the inner window "
     "loop: a write there would move with the taps"),
])
def test_folds_outside_the_model_are_refused_with_the_line(
        edit: tuple[str, str], reason: str, tmp_path: Path) -> None:
    grid, block, args, sizes = MAX_SCALE_FOLDER
    assert edit[0] in MAX_SCALE
    kf = write_folder(tmp_path / "k", MAX_SCALE.replace(edit[0], edit[1]), grid, block, args,
                      sizes, [])
    result = offline_template(kf)
    assert "OUT_Y" not in {p.name for p in result.lifted.params}
    assert reason in _note(result, "OUT_Y: not applied")


def _configs(kf: KernelFolder, result: TemplaterResult,
             mixes: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The default, the first and last all-ends configs (every one under
    WORKBENCH_FULL_MATRIX=1) and the mixes over the default."""
    template = result.template
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    default = dict(template.default_config())
    picked = [default, *(ends if FULL_MATRIX else [ends[0], ends[-1]]),
              *({**default, **m} for m in mixes)]
    return [c for i, c in enumerate(picked) if c not in picked[:i]]


#: mixes the all-ends corners do not reach: a wide flat block of 4 pixels a row, a narrow
#: one of 2 x 2 pixels; each name's knobs only
MIXES: dict[str, list[dict[str, int]]] = {
    "stereo_sad64": [{"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 4, "OUT_Y": 1},
                     {"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 2,
                      "MIN_BLOCKS_PER_SM": 1},
                     # the expert's pick (16 x 8 threads, 8 pixels a row), the last tune's
                     # pick (its MIN 2 is MIN 1's twin at 64 threads: left out of the space),
                     # 8 rows of 2 and 2 rows of 8 pixels a thread, 2 blocks of 256 an SM
                     {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1},
                     {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1, "USE_SMEM": 1},
                     {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4,
                      "MIN_BLOCKS_PER_SM": 1},
                     {"BLOCK_X": 16, "BLOCK_Y": 16, "OUT_X": 1, "OUT_Y": 1,
                      "MIN_BLOCKS_PER_SM": 2, "USE_SMEM": 1},
                     {"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 8, "USE_SMEM": 1},
                     {"BLOCK_X": 16, "BLOCK_Y": 2, "OUT_X": 8, "OUT_Y": 2,
                      "MIN_BLOCKS_PER_SM": 1, "USE_SMEM": 1},
                     {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 1, "OUT_Y": 1, "USE_SMEM": 1},
                     # gpu_checks/memgap_probe.py's other stereo_sad64 configs
                     {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4,
                      "MIN_BLOCKS_PER_SM": 1, "USE_SMEM": 1},
                     {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 2, "USE_SMEM": 1},
                     {"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_X": 8, "OUT_Y": 2, "USE_SMEM": 1}],
    "max_scale": [{"BLOCK_X": 16, "BLOCK_Y": 2, "OUT_X": 4, "OUT_Y": 2}],
    "count_passes": [{"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_X": 2, "OUT_Y": 4},
                     {"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_X": 4, "OUT_Y": 2, "USE_SMEM": 1}],
    "two_inputs": [{"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 4, "OUT_Y": 4}],
    "guard_block": [{"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 2},
                    {"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1, "USE_SMEM": 1}],
    "columns_first": [{"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1, "USE_SMEM": 1},
                      {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 0},
                      {"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 4, "USE_SMEM": 1}],
    "descending": [{"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1, "USE_SMEM": 1},
                   {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 0}],
    "ssd_helper": [{"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 8, "OUT_Y": 1},
                   {"BLOCK_X": 16, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4},
                   {"BLOCK_X": 8, "BLOCK_Y": 4, "OUT_X": 4, "OUT_Y": 2, "USE_SMEM": 1},
                   {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 8, "OUT_Y": 1, "USE_SMEM": 1}],
}


@pytest.mark.timeout(600 if FULL_MATRIX else 300)
@pytest.mark.parametrize("name", ["stereo_sad64", "max_scale", "count_passes", "two_inputs",
                                  "guard_block", "ssd_helper", "descending",
                                  "columns_first"])
def test_every_checked_config_prints_what_the_kernel_as_written_prints(
        name: str, tmp_path: Path) -> None:
    kf, result = _lift(tmp_path, name)
    assert_prints_as_written(kf, result, _configs(kf, result, MIXES[name]), tmp_path / "run")
