"""Set 23's first contact, ncc_patch8 (issue 28): propose wrote nothing. The tile load read
the image through a row pointer (``const float *src = img + (size_t)gy * W; .. src[gx]``),
the window through another (``const float *wrow = &win[threadIdx.y + dy][threadIdx.x]; ..
wrow[dx]``) and the template through a third (``trow = tpl + dy * PATCH``), so the apron
family found no single assignment in the tile load; and its 8 x 8 template's ``PATCH`` (8,
the block's height) read as a block size used where the analysis did not know its meaning.

A pointer local set once and only indexed is now read as the array it points into
(:mod:`workbench.templater.pointer_locals`, the index sums kept exact by
:mod:`workbench.templater.index_kinds`), and that lift is taken where it lifts strictly more
knobs than the kernel as written (families that read ``P = X + OFF`` themselves, the
counting loop's VEC, keep their spelling); a number equal to a block size in the work after
the barrier is only that number (the work's own check already ties it to the output point).
ncc_patch8 lifts the apron family: block shape, OUT_X x OUT_Y outputs a thread with a
register window (ROW_REUSE), PAD, USE_SMEM, INTERIOR. nv12_to_rgba's luma and chroma row
pointers read as ``luma[py * pitch + px]`` and ``chroma[(py >> 1) * pitch + (px & ~1u) +
1]``, but nothing lifts more, so its lift is the kernel as written's, with a note.

Host (g++): ncc_patch8 bit for bit against the kernels as written at the
default, hand-picked mixes and the all-ends configs' first and last; two other kernels
respelled with row pointers (set 22's ssim7_tile, set 21's sobel_magdir_tile: a row's
element, a row of the tile, negative offsets, stores through a pointer) lift what their
folders' own spellings lift, bit for bit too. Near misses (a pointer passed to a call,
compared, a value reading memory, an unsigned sum that may wrap) stay as written, with a
note naming the line.
"""

from __future__ import annotations

from pathlib import Path

import held_back_unseen21
import held_back_unseen22
import held_back_unseen23
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, host_configs, needs_gxx
from test_corpus_unseen3 import host_flags  # noqa: F401

from workbench.core.cuda_source import parse_cuda
from workbench.core.kernel_folder import load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.analysis import text, walk
from workbench.templater.index_kinds import Kinds, sum_terms
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.pointer_locals import pointer_locals

NCC = held_back_unseen23.SET.root / "ncc_patch8"
NV12 = held_back_unseen23.SET.root / "nv12_to_rgba"
SSIM = held_back_unseen22.SET.root / "ssim7_tile"
SOBEL = held_back_unseen21.SET.root / "sobel_magdir_tile"
APRON = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD"}

#: ssim7_tile with both images' rows read through row pointers in the load and the window
#: read through a pointer to the thread's first element (ta) and a row of the tile (tb).
SSIM_POINTERS = SSIM.joinpath("baseline.cu").read_text().replace(
    """            ta[ty][tx] = a[gy * w + gx];
            tb[ty][tx] = b[gy * w + gx];""",
    """            const float *arow = a + gy * w;
            const float *brow = b + gy * w;
            ta[ty][tx] = arow[gx];
            tb[ty][tx] = brow[gx];""").replace(
    """        for (int dx = 0; dx <= 2 * RADIUS; dx++) {
            const float va = ta[threadIdx.y + dy][threadIdx.x + dx];
            const float vb = tb[threadIdx.y + dy][threadIdx.x + dx];""",
    """        const float *pa = &ta[threadIdx.y + dy][threadIdx.x];
        const float *rb = tb[threadIdx.y + dy];
        for (int dx = 0; dx <= 2 * RADIUS; dx++) {
            const float va = pa[dx];
            const float vb = rb[threadIdx.x + dx];""")

#: sobel_magdir_tile with the tile's rows above and below as pointers at the centre column
#: (read at -1 and +1: a signed column), the middle row as a row of the tile, the image row
#: of the load as a pointer, and both outputs stored through row pointers.
SOBEL_POINTERS = SOBEL.joinpath("baseline.cu").read_text().replace(
    "            tile[ty][tx] = img[gy * w + gx];",
    "            const float *src = img + gy * w;\n            tile[ty][tx] = src[gx];").replace(
    """    float gx = (tile[cy - 1][cx + 1] + 2.0f * tile[cy][cx + 1] + tile[cy + 1][cx + 1])
             - (tile[cy - 1][cx - 1] + 2.0f * tile[cy][cx - 1] + tile[cy + 1][cx - 1]);
    float gy = (tile[cy + 1][cx - 1] + 2.0f * tile[cy + 1][cx] + tile[cy + 1][cx + 1])
             - (tile[cy - 1][cx - 1] + 2.0f * tile[cy - 1][cx] + tile[cy - 1][cx + 1]);

    mag[y * w + x] = sqrtf(gx * gx + gy * gy);
    dir[y * w + x] = atan2f(gy, gx);""",
    """    const float *up = &tile[cy - 1][cx];
    const float *mid = tile[cy];
    const float *dn = &tile[cy + 1][cx];
    float gx = (up[1] + 2.0f * mid[cx + 1] + dn[1])
             - (up[-1] + 2.0f * mid[cx - 1] + dn[-1]);
    float gy = (dn[-1] + 2.0f * *dn + dn[1])
             - (up[-1] + 2.0f * *up + up[1]);
    float *mrow = mag + y * w;
    float *drow = dir + y * w;
    mrow[x] = sqrtf(gx * gx + gy * gy);
    drow[x] = atan2f(gy, gx);""")


def _knobs(folder: Path) -> set[str]:
    return {p.name for p in offline_template(load_kernel_folder(folder)).lifted.params}


def _respelled_pass(source: str, entry: str = "k") -> InlinedSource:
    return pointer_locals(InlinedSource(source, "k.cu"), entry)


def test_ncc_lifts_block_shape_outputs_per_thread_and_a_register_window() -> None:
    result = offline_template(load_kernel_folder(NCC))
    lifted = result.lifted
    assert APRON | {"USE_SMEM", "INTERIOR"} <= {p.name for p in lifted.params}, lifted.notes
    assert any(n.startswith("ROW_REUSE: applied:") and "(OUT_Y + 7) x 8 register window" in n
               for n in lifted.notes), lifted.notes
    # the row pointers are read as their arrays; every line keeps its number
    assert "img[(size_t)gy * W + gx]" in lifted.source
    # (the template read through TABLE_VIA's macro: tests/test_templater_s32_ncc_table.py)
    assert "wb_tpl_via[dy * PATCH + dx]" in lifted.source
    assert not any(f.transform == "POINTER_LOCAL" for f in lifted.findings)


def test_nv12_reads_its_planes_through_their_arrays_and_gains_nothing() -> None:
    """``ys``, ``uv`` read as ``luma[py * pitch + px]``, ``chroma[(py >> 1) * pitch + (px &
    ~1u) + 1]``: the OUT_Y refusal of the pointers goes, but no family lifts more, so the
    kernel as written is lifted (its knobs), with the note."""
    text = pointer_locals(InlinedSource(NV12.joinpath("baseline.cu").read_text(), "b.cu"),
                          "nv12_to_rgba").text
    assert "luma[py * pitch + px]" in text
    assert "chroma[(py >> 1) * pitch + (px & ~1u) + 1]" in text
    lifted = offline_template(load_kernel_folder(NV12)).lifted
    assert "POINTER_LOCAL: not applied: read as the arrays they point into, the pointers lift " \
        "nothing more: the kernel as written is lifted" in lifted.notes
    assert {"BLOCK_X", "BLOCK_Y", "ITEMS_X", "ITEMS_Y"} <= {p.name for p in lifted.params}


@pytest.mark.parametrize(("folder", "source"), [(SSIM, SSIM_POINTERS), (SOBEL, SOBEL_POINTERS)],
                         ids=["ssim7_tile", "sobel_magdir_tile"])
def test_row_pointer_spellings_lift_what_the_folders_lift(tmp_path: Path, folder: Path,
                                                          source: str) -> None:
    kf = respelled(folder, tmp_path, source)
    lifted = offline_template(kf).lifted
    assert {p.name for p in lifted.params} == _knobs(folder), lifted.notes
    assert any(n.startswith("ROW_REUSE: applied:") for n in lifted.notes), lifted.notes
    assert " *" not in "".join(line for line in lifted.source.splitlines()
                               if "const float *" in line and "=" in line)


def test_lines_keep_their_numbers_and_chains_read_in_rounds() -> None:
    source = """extern "C" __global__ void k(float* out, const float* x, int n) {
  const float* row = x + blockIdx.x * n;
  const float* p = row + threadIdx.x;
  out[blockIdx.x] = *p + p[1];
}
"""
    got = _respelled_pass(source).text
    assert got.count("\n") == source.count("\n")
    assert "out[blockIdx.x] = x[blockIdx.x * n + threadIdx.x] + x[blockIdx.x * n + " \
        "(threadIdx.x + 1)];" in got


@pytest.mark.parametrize(("body", "line", "why"), [
    ("  const float* p = x + i * n;\n  out[i] = f(p, n);\n", 3, "is passed to a call"),
    ("  const float* p = x + i * n;\n  const float* e = x + n;\n  out[i] = p < e ? p[0] : 0.0f;\n",
     3, "is compared"),
    ("  const float* p = x + (int)out[i];\n  out[i] = p[1];\n", 3, "its value reads `out[i]`"),
    ("  const float* p = &t[threadIdx.x];\n  for (int d = -1; d <= 1; ++d) out[i] += p[d];\n",
     3, "in a type that may wrap"),
    ("  const float* p = x + i;\n  int j = i;\n  j = 2;\n  out[i] = p[j] + x[i];\n", 0, ""),
])
def test_a_pointer_that_escapes_or_may_wrap_stays_as_written(body: str, line: int,
                                                             why: str) -> None:
    source = ("__device__ float f(const float* p, int n) { return p[n]; }\n"
              "extern \"C\" __global__ void k(float* out, const float* x, int n) {\n"
              "  __shared__ float t[64];\n  const int i = threadIdx.x;\n") + body + "}\n"
    got = _respelled_pass(source)
    notes = [str(f) for f in got.findings if f.transform == "POINTER_LOCAL"]
    if not why:  # p = x + i read as x[i + j]: i is never written after, j is a plain int
        assert "x[i + j]" in got.text and not notes
        return
    assert "const float* p" in got.text, got.text
    assert any(why in n and n.endswith(f"(line {line + 2})") for n in notes), notes


def test_a_walk_is_left_to_the_walk_passes_without_a_note() -> None:
    source = """extern "C" __global__ void k(float* out, const float* x, int n) {
  const float* p = x + threadIdx.x;
  float s = 0.0f;
  for (int k = 0; k < 4; ++k) { s += p[0]; p += n; }
  out[threadIdx.x] = s;
}
"""
    got = _respelled_pass(source)
    assert got.text == source and not got.findings


@pytest.mark.parametrize(("terms", "exact"), [
    ("(size_t)gy * W + gx", True),  # as wide as a pointer: wraps as the address does
    ("gy * W + gx", True),  # both signed
    ("threadIdx.x + dx", True),  # unsigned, dx counts up from 0
    ("threadIdx.x + dn", False),  # unsigned plus a value that may be negative
    ("threadIdx.x - 1", False),
    ("(py >> 1) * pitch + (px & ~1u) + 1", True),
])
def test_index_sums_are_exact_only_where_the_types_say_so(terms: str, exact: bool) -> None:
    source = f"""extern "C" __global__ void k(int W, int pitch) {{
  const int gy = blockIdx.y, gx = threadIdx.x, dn = gx - 3;
  unsigned py = blockIdx.y, px = threadIdx.x;
  for (int dx = 0; dx < 8; ++dx) {{ int wb = {terms}; }}
}}
"""
    cuda = parse_cuda(source, "k.cu")
    body = cuda.body(cuda.kernel("k"))
    types = {"W": "int", "pitch": "int", "gy": "int", "gx": "int", "dn": "int", "py": "unsigned",
             "px": "unsigned", "dx": "int"}
    kinds = Kinds(body, types, {})
    value = next(n.child_by_field_name("value") for n in walk(body)
                 if n.type == "init_declarator" and text(n.child_by_field_name("declarator"))
                 == "wb")
    assert value is not None
    assert kinds.sum_exact(sum_terms(value)) is exact


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("folder", "mixes"), [
    (NCC, [{"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_Y": 4, "PAD": 1},
           {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 8, "USE_SMEM": 0},
           {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 2, "OUT_Y": 2, "INTERIOR": 1}]),
], ids=["ncc_patch8"])
def test_the_lifts_compute_as_written(tmp_path: Path, folder: Path, mixes: list[dict[str, int]],
                                      host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = load_kernel_folder(folder)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), mixes)
    if not FULL_MATRIX:
        configs = configs[:5]
    assert same_as_written(kf, template, configs, held_back_unseen23.SET.host_source,
                           tmp_path, host_flags) >= 3


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(("folder", "source", "corpus", "mix"), [
    (SSIM, SSIM_POINTERS, held_back_unseen22, {"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_Y": 4}),
    (SOBEL, SOBEL_POINTERS, held_back_unseen21, {"BLOCK_X": 8, "BLOCK_Y": 8, "OUT_X": 2,
                                                 "OUT_Y": 4}),
], ids=["ssim7_tile", "sobel_magdir_tile"])
def test_row_pointer_spellings_compute_as_written(
        tmp_path: Path, folder: Path, source: str, corpus: object, mix: dict[str, int],
        host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = respelled(folder, tmp_path / "folders", source)
    template = offline_template(kf).template
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"), [mix])
    if not FULL_MATRIX:
        configs = configs[:3]
    assert same_as_written(kf, template, configs, corpus.SET.host_source,  # type: ignore[attr-defined]
                           tmp_path, host_flags) >= 3


def test_a_lift_through_the_arrays_notes_each_refused_pointer_once() -> None:
    """Where the arrays' lift is taken (the warp slots read through ``q``), a pointer
    refused beside it is noted once, with its line."""
    from test_templater_block_slots import REPRO, _lift
    lifted = _lift(REPRO.replace(
        "    for (int w = 0; w < 8; ++w) s += slot[w];",
        "    const float* q = slot;\n    for (int w = 0; w < 8; ++w) s += q[w];").replace(
        "    out[blockIdx.x] = s;",
        "    const float* z = x + 1;\n    out[blockIdx.x] = s + (x == z ? 1.0f : 0.0f);"))
    assert "BLOCK_THREADS" in [p.name for p in lifted.params], lifted.notes
    assert [n for n in lifted.notes if n.startswith("POINTER_LOCAL")] == [
        "POINTER_LOCAL: not applied: `const float* z = x + 1;`: `z` is compared (`x == z`, line "
        "15): it escapes, so it is not read as `x[..]` (line 14)"]


#: tests/test_templater_stencil_first_contact.py's per-channel 3 x 3 valid filter as a folder:
#: its ``plane`` pointer, set after the bounds check, read as ``x[(size_t)ch * H * W + ..]``
#: lets the window stage (USE_SMEM) be loaded before the check.
NCHW_TOML = """name = "k"
description = "3x3 valid per-channel filter"
dtypes = ["fp32"]
check_shape = "small"
[shapes]
small = { C = 3, H = 37, W = 45 }
large = { C = 3, H = 37, W = 45 }
[tolerances]
fp32 = { rtol = 1e-4, atol = 5e-5 }
[[args]]
name = "y"
dtype = "f32"
role = "out"
shape = ["C", "H - 2", "W - 2"]
[[args]]
name = "x"
dtype = "f32"
role = "in"
shape = ["C", "H", "W"]
[[args]]
name = "wts"
dtype = "f32"
role = "in"
shape = ["C", "9"]
[[args]]
name = "H"
dtype = "i32"
role = "scalar"
value = "H"
[[args]]
name = "W"
dtype = "i32"
role = "scalar"
value = "W"
[baseline]
source = "baseline.cu"
entry = "k"
grid = ["ceil_div(W - 2, 16)", "ceil_div(H - 2, 16)", "C"]
block = ["16", "16"]
"""
NCHW_REFERENCE = """import numpy as np
def reference(inputs, shape, dtype):
    C, H, W = shape["C"], shape["H"], shape["W"]
    x = np.asarray(inputs["x"], np.float64).reshape(C, H, W); w = np.asarray(inputs["wts"], np.float64).reshape(C, 3, 3)
    y = np.zeros((C, H - 2, W - 2))
    for i in range(3):
        for j in range(3):
            y += w[:, i, j][:, None, None] * x[:, i:i + H - 2, j:j + W - 2]
    return {"y": y.astype(np.float32)}
"""


@needs_gxx
@pytest.mark.timeout(1200)
def test_a_plane_pointer_read_as_its_array_stages_the_window_as_written(
        tmp_path: Path, host_flags: tuple[str, ...]) -> None:  # noqa: F811
    from test_templater_stencil_first_contact import NCHW_VALID
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "kernel.toml").write_text(NCHW_TOML)
    (folder / "reference.py").write_text(NCHW_REFERENCE)
    for name in ("baseline.cu", "k.cu"):
        (folder / name).write_text(NCHW_VALID)
    kf = load_kernel_folder(folder)
    template = offline_template(kf).template
    assert "USE_SMEM" in template.param_names
    configs = host_configs(template, kf.env(kf.check_shape, "fp32"),
                           [{"USE_SMEM": 1, "OUT_Y": 4, "BLOCK_X": 16, "BLOCK_Y": 4},
                            {"USE_SMEM": 1, "OUT_X": 2, "OUT_Y": 2}])
    assert same_as_written(kf, template, configs, held_back_unseen23.SET.host_source,
                           tmp_path / "runs", host_flags) >= 4
