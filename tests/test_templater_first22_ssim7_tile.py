"""First contact with held-back set 22's SSIM (issue 28):
benchmarks/corpus_compute_unseen22/ssim7_tile stages two images in two shared tiles of one
geometry (``ta[TILE_H][TILE_W]``, ``tb[TILE_H][TILE_W]``, a three-pixel apron, both stored
by one nest) and each thread reads both at its 7 x 7 window. The apron lift modelled one
tile, so it refused ("2 shared arrays read at the thread's point ... one 2-D apron tile is
modelled") and only the block was lifted (templater/expert 0.57 on the H200). Now
:mod:`.apron` takes several tiles of one geometry (the same compile-time extents, each
stored once by the same load nest or by sibling nests of one shape, each read at the
thread's point): they are sized, padded, loaded and read alike, so OUT_X / OUT_Y (the
expert's RY), PAD and LOAD_FLAT apply to all of them, and ROW_REUSE gives each tile its own
register window of the same rows and columns. A load nest's outer loop may declare locals
before its inner loop (``const int gy = clamp(..)``): LOAD_FLAT re-declares them.

The expert's SEP (horizontal then vertical window sums) is ROW_SUMS (:mod:`.apron_rowsums`):
where the tap nest is unit-weight sums of terms of the values at one window position, each
window row's sums are made once a column and each of the thread's rows adds its seven. The
additions are made in another order: for whole-number pixels (the folder's inputs) every
partial sum is an integer below 2^24, exact in float, so the bits are the same, which the
host check asserts (other inputs are the folder's tolerances' business, the gate's check).

Host (g++): the folder and three other hands (sibling nests, one per tile, under constexpr
sizes and ``blockDim`` strides with the work under ``if``; C89 macros with one flat load
loop storing both tiles and a ``__shared__`` declaration of both, whose taps assign
function-scope locals and count with function-scope counters, dead after the taps; taps
centred on the point with the column loop outside), bit for bit against the kernel as written at the default, the expert's H200 pick
in the lift's knobs, a mix and eight rows a thread; under WORKBENCH_FULL_MATRIX=1 every mix
and every all-ends config each. Near misses refused with the line: tiles of different
extents, a tile left out of the load, a tile loaded from the other; a tap term weighted by
the row counter or reading a local of the output or a sum, a C89 tap local or counter read
after the taps (no ROW_SUMS, the rest stands).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen22
import pytest
from held_back_harness import respelled, same_as_written
from helpers_templater import FULL_MATRIX, end_configs
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template

FOLDER = held_back_unseen22.SET.root / "ssim7_tile"
KNOBS = {"BLOCK_X", "BLOCK_Y", "OUT_X", "OUT_Y", "PAD", "ROW_SUMS"}
#: The expert's H200 pick (BX 32, BY 8, RY 4, SEP 1) in the lift's knobs (its rows
#: consecutive, read through the register windows, the row sums once a column)
EXPERT_PICK = {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_Y": 4, "ROW_SUMS": 1}
#: 8 x 16 threads of two columns and two rows a thread (45 columns over three blocks, the
#: last partly; 37 rows over two, the second partly), padded, four blocks an SM, row sums
MIX = {"BLOCK_X": 8, "BLOCK_Y": 16, "OUT_X": 2, "OUT_Y": 2, "PAD": 1, "MIN_BLOCKS_PER_SM": 4,
       "ROW_SUMS": 1}
#: 64 x 1 threads of eight rows a thread (the register windows: 14 x 7 a tile, the 49 taps
#: as written), one column block partly; 37 rows over five blocks
TALL = {"BLOCK_X": 64, "BLOCK_Y": 1, "OUT_Y": 8}

#: Another hand: constexpr sizes, one load nest per tile (sibling nests of one shape, the
#: x loop outside in the second), loops strided by blockDim, the work under an `if`.
SECOND = """constexpr int BW = 16, BH = 16, R = 3;

extern "C" __global__ void ssim7_tile(float* ssim, const float* a, const float* b, int w, int h)
{
    __shared__ float sa_t[BH + 2 * R][BW + 2 * R];
    __shared__ float sb_t[BH + 2 * R][BW + 2 * R];
    for (int r = threadIdx.y; r < BH + 2 * R; r += blockDim.y)
        for (int c = threadIdx.x; c < BW + 2 * R; c += blockDim.x) {
            const int gy = max(0, min(h - 1, (int)(blockIdx.y * BH) + r - R));
            const int gx = max(0, min(w - 1, (int)(blockIdx.x * BW) + c - R));
            sa_t[r][c] = a[gy * w + gx];
        }
    for (int c = threadIdx.x; c < BW + 2 * R; c += blockDim.x)
        for (int r = threadIdx.y; r < BH + 2 * R; r += blockDim.y) {
            const int gy = max(0, min(h - 1, (int)(blockIdx.y * BH) + r - R));
            const int gx = max(0, min(w - 1, (int)(blockIdx.x * BW) + c - R));
            sb_t[r][c] = b[gy * w + gx];
        }
    __syncthreads();
    const int col = blockIdx.x * BW + threadIdx.x;
    const int row = blockIdx.y * BH + threadIdx.y;
    if (col < w && row < h) {
        float s1 = 0.0f, s2 = 0.0f, s11 = 0.0f, s22 = 0.0f, s12 = 0.0f;
        for (int i = 0; i < 2 * R + 1; ++i) {
            for (int j = 0; j < 2 * R + 1; ++j) {
                const float p = sa_t[threadIdx.y + i][threadIdx.x + j];
                const float q = sb_t[threadIdx.y + i][threadIdx.x + j];
                s1 += p;
                s2 += q;
                s11 += p * p;
                s22 += q * q;
                s12 += p * q;
            }
        }
        const float inv = 1.0f / 49.0f;
        const float ma = s1 * inv, mb = s2 * inv;
        const float va = s11 * inv - ma * ma, vb = s22 * inv - mb * mb;
        const float cab = s12 * inv - ma * mb;
        ssim[row * w + col] = ((2.0f * ma * mb + 6.5025f) * (2.0f * cab + 58.5225f)) /
                              ((ma * ma + mb * mb + 6.5025f) * (va + vb + 58.5225f));
    }
}
"""

#: A third hand: C89 declarations and macros, one flat loop over the tile's elements storing
#: both tiles, both declared by one `__shared__` declaration.
THIRD = """#define BX 16
#define BY 16
#define HALO 3
#define TW (BX + 2 * HALO)
#define TH (BY + 2 * HALO)
#define CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))

extern "C" __global__ void ssim7_tile(float *ssim, const float *a, const float *b, int w, int h)
{
    __shared__ float ta[TH][TW], tb[TH][TW];
    int e, x, y, i, j, ty, tx, gy, gx;
    float sa, sb, saa, sbb, sab, va, vb, inv, ma, mb, cab;

    for (e = threadIdx.y * BX + threadIdx.x; e < TH * TW; e += BX * BY) {
        int r = e / TW;
        int c = e % TW;
        int py = CLAMP((int)blockIdx.y * BY + r - HALO, 0, h - 1);
        int px = CLAMP((int)blockIdx.x * BX + c - HALO, 0, w - 1);
        ta[r][c] = a[py * w + px];
        tb[r][c] = b[py * w + px];
    }
    __syncthreads();
    x = blockIdx.x * BX + threadIdx.x;
    y = blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= h)
        return;
    sa = 0.0f; sb = 0.0f; saa = 0.0f; sbb = 0.0f; sab = 0.0f;
    for (i = 0; i < 7; i++) {
        for (j = 0; j < 7; j++) {
            va = ta[threadIdx.y + i][threadIdx.x + j];
            vb = tb[threadIdx.y + i][threadIdx.x + j];
            sa += va; sb += vb; saa += va * va; sbb += vb * vb; sab += va * vb;
        }
    }
    inv = 1.0f / 49.0f;
    ma = sa * inv;
    mb = sb * inv;
    va = saa * inv - ma * ma;
    vb = sbb * inv - mb * mb;
    cab = sab * inv - ma * mb;
    ssim[y * w + x] = ((2.0f * ma * mb + 6.5025f) * (2.0f * cab + 58.5225f)) /
                      ((ma * ma + mb * mb + 6.5025f) * (va + vb + 58.5225f));
}
"""

#: A fourth hand: taps centred on the point (counters -R..R, the tile read at R + i), the
#: column loop outside, both values declared by one declaration.
FOURTH = SECOND.replace(
    """        for (int i = 0; i < 2 * R + 1; ++i) {
            for (int j = 0; j < 2 * R + 1; ++j) {
                const float p = sa_t[threadIdx.y + i][threadIdx.x + j];
                const float q = sb_t[threadIdx.y + i][threadIdx.x + j];""",
    """        for (int j = -R; j <= R; j++) {
            for (int i = -R; i <= R; i++) {
                const float p = sa_t[threadIdx.y + R + i][threadIdx.x + R + j],
                            q = sb_t[R + i + threadIdx.y][R + j + threadIdx.x];""")

SPELLINGS = {"second": SECOND, "third": THIRD, "fourth": FOURTH}


def _kernel(spelling: str, root: Path) -> KernelFolder:
    return load_kernel_folder(FOLDER) if spelling == "folder" else \
        respelled(FOLDER, root, SPELLINGS[spelling])


def _configs(kf: KernelFolder, spelling: str) -> list[dict[str, Any]]:
    """The default and the mixes a spelling (the folder at the expert's pick and TALL, the
    other hands at MIX and the expert's pick); under WORKBENCH_FULL_MATRIX=1 every mix and
    every all-ends config."""
    template = offline_template(kf).template
    default = dict(template.default_config())
    names = set(template.param_names)
    mixes = [EXPERT_PICK, MIX, TALL] if FULL_MATRIX else \
        [EXPERT_PICK, TALL] if spelling == "folder" else [MIX, EXPERT_PICK]
    extra = [{"LOAD_FLAT": 1}] if "LOAD_FLAT" in names else []
    picked = [default, *({**default, **m} for m in mixes),
              *({**default, **MIX, **m} for m in extra)]
    picked = [{k: v for k, v in c.items() if k in names} for c in picked]
    if FULL_MATRIX:
        picked += end_configs(template, kf.env(kf.check_shape, "fp32"))
    return picked


@pytest.mark.parametrize("spelling", ["folder", "second", "third", "fourth"])
def test_two_tiles_of_one_geometry_lift_together(spelling: str, tmp_path: Path) -> None:
    kf = _kernel(spelling, tmp_path)
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert knobs >= KNOBS, result.notes
    assert any(n.startswith("OUT_XY: applied: apron tiles") for n in result.notes), \
        result.notes
    assert any(n.startswith("ROW_REUSE: applied") and "each of the 2 tiles" in n
               for n in result.notes), result.notes
    space = result.template.space(kf.env(kf.check_shape, "fp32"))
    for config in (EXPERT_PICK, MIX, TALL):
        full = {**dict(result.template.default_config()), **config}
        full = {k: v for k, v in full.items() if k in knobs}
        assert space.rejection(full) is None, (config, space.rejection(full))
    # both tiles in shared memory: 2 x 4 bytes a position
    assert any(c.text.startswith("8 * (") for c in result.template.constraints), \
        [c.text for c in result.template.constraints]


def test_the_folder_gets_load_flat(tmp_path: Path) -> None:
    """The folder's outer loop declares its clamped row before the inner loop; LOAD_FLAT's
    one loop declares it again for each element."""
    result = offline_template(load_kernel_folder(FOLDER))
    assert "LOAD_FLAT" in {p.name for p in result.lifted.params}, result.notes
    source = result.template.source
    start = source.index("#if LOAD_FLAT")
    flat = source[start:source.index("#else", start)]
    assert "const int gy = " in flat and "tb[ty][tx] = " in flat


@pytest.mark.parametrize("spelling", ["folder", "second", "third", "fourth"])
def test_host_bit_for_bit(spelling: str, tmp_path: Path,
                          host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _kernel(spelling, tmp_path / "src")
    template = offline_template(kf).template
    configs = _configs(kf, spelling)
    ran = same_as_written(kf, template, configs, held_back_unseen22.host_source, tmp_path,
                          host_flags)
    assert ran == len(configs)


@pytest.mark.parametrize(("change", "why", "line", "reason"), [
    # the second tile two rows taller: not the first's geometry
    ("__shared__ float sb_t[BH + 2 * R][BW + 2 * R];",
     "__shared__ float sb_t[BH + 2 * R + 2][BW + 2 * R];", 6, "differ in extents"),
    # the second tile's nest stops a column short: the tile is not loaded whole
    ("for (int c = threadIdx.x; c < BW + 2 * R; c += blockDim.x)\n        for (int r",
     "for (int c = threadIdx.x; c < BW + 2 * R - 1; c += blockDim.x)\n        for (int r", 5,
     "do not cover one compile-time extent"),
    # the second tile stored from the first: a tile's value must not read a tile
    ("sb_t[r][c] = b[gy * w + gx];", "sb_t[r][c] = sa_t[r][c] + b[gy * w + gx];", 17,
     "reads the thread index or a tile"),
    # the second nest stores the first tile again; the second is read uninitialised
    ("sb_t[r][c] = b[gy * w + gx];", "sa_t[r][c] = a[gy * w + gx];", 19,
     "the tile sb_t is not stored by a load nest"),
])
def test_near_misses_are_refused(change: str, why: str, line: int, reason: str,
                                 tmp_path: Path) -> None:
    assert change in SECOND
    kf = respelled(FOLDER, tmp_path, SECOND.replace(change, why))
    try:  # the block sizes are constexpr: nothing else lifts once the tiles are refused
        notes = list(offline_template(kf).notes)
    except TemplateError as exc:
        notes = list(exc.details["findings"])
    assert not any(n.startswith(("OUT_XY: applied", "PAD")) for n in notes), notes
    note = next(n for n in notes if n.startswith("OUT_XY: not applied"))
    assert note.endswith(f"(line {line})"), note
    assert reason in note, note


@pytest.mark.parametrize(("change", "why", "line", "reason"), [
    # a weight by the row counter: the row sums would differ from row to row
    ("s1 += p;", "s1 += p * (float)(i + 1);", 28, "`i` in a tap term"),
    # a term reading a local of the output (not known before the column's rows)
    ("s1 += p;", "s1 += p * (float)col;", 28, "`col` in a tap term"),
    # a sum read by a term
    ("s2 += q;", "s2 += q + s1;", 29, "`s1` in a tap term"),
])
def test_row_sums_near_misses(change: str, why: str, line: int, reason: str,
                              tmp_path: Path) -> None:
    """ROW_SUMS refused with the line; the tiles' knobs stand."""
    assert change in SECOND
    kf = respelled(FOLDER, tmp_path, SECOND.replace(change, why))
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert knobs >= KNOBS - {"ROW_SUMS"} and "ROW_SUMS" not in knobs, result.notes
    note = next(n for n in result.notes if n.startswith("ROW_SUMS: not applied"))
    assert note.endswith(f"(line {line})") and reason in note, note


@pytest.mark.parametrize(("change", "why", "line", "name"), [
    # the taps' last value read after them: ROW_SUMS 1 skips the taps
    ("va = saa * inv - ma * ma;", "va = saa * inv - ma * ma + 0.0f * va;", 30, "va"),
    # the row counter's final value read after the taps
    ("inv = 1.0f / 49.0f;", "inv = 1.0f / (float)(i * i);", 28, "i"),
    # the column counter read before the taps (its value from the last output's taps)
    ("sa = 0.0f; sb", "sa = (float)j * 0.0f; sb", 29, "j"),
])
def test_row_sums_c89_locals_read_after_the_taps(change: str, why: str, line: int, name: str,
                                                 tmp_path: Path) -> None:
    """A function-scope local or counter the taps set may not be read where ROW_SUMS 1 would
    leave it unset: refused with the line, the rest stands."""
    assert change in THIRD
    kf = respelled(FOLDER, tmp_path, THIRD.replace(change, why))
    result = offline_template(kf)
    knobs = {p.name for p in result.lifted.params}
    assert knobs >= KNOBS - {"ROW_SUMS"} and "ROW_SUMS" not in knobs, result.notes
    note = next(n for n in result.notes if n.startswith("ROW_SUMS: not applied"))
    assert note.endswith(f"(line {line})") and f"assigns {name}," in note, note
